"""The workbook room: what exists for the notebooks, the command line's words and the classroom.

Each module is named after what a notebook or command calls it. It may import anything in the package and the
Jupyter stack; the chapter never imports it. This ``__init__`` imports none of its modules, so that
``import codeagent_lite.workbook.exercise_checks`` does not pull in ipywidgets.
"""
