"""The workbook room: everything that exists for the notebooks (the teacher's grading lives in classroom/).

Each module is named after what a notebook calls it:

* ``environment_check``: the "is this machine ready?" table of notebook 00;
* ``encoder_playground``: the history-to-messages widget of notebook 02;
* ``parser_playground``: the raw-text-to-ladder widget of notebook 04;
* ``exercise_checks``: the self-checks of the exercise book, notebook 05;
* ``real_model_lab``: the helpers and widget of notebook 06 (a real model);
* ``language``: which language the learner reads (edition folder, ``CAL_LANG``, locale); ``words``: the
  one gettext catalog of the workbook's words (``codeagent_lite/locale``, ``make catalog``); ``ladder``: the
  parser's layers and ladder named in the edition's language; ``cells``: the labels the notebooks' shared code
  cells print;
* ``contract``, ``verify``, ``verify_child``, ``verify_probe``: the
  build-it-yourself checks of notebooks 01-04 and ``python -m codeagent_lite verify``; ``sandbox``
  (+ ``sandbox_io``): where learner code runs, for verify and the grader; ``learner_ladder``: a learner's parser
  beside the reference's ladder;
  ``learner_playground``: the same, live, as notebook 04's second playground; ``learner_dir``: the learner's
  own folder, made from the stubs on first use (notebooks 01-04);
* ``engine_panel`` and ``recorded/``: notebook 06's engine state and the outputs recorded from a real run;
* ``widget_view``: how every widget here shows itself where no widget can render.
* ``lab_language``: JupyterLab's own display language for the edition (``make lab EDITION=...``).

What this room may import: anything in the package (the chapter, ``agent``, ``providers``) and the Jupyter stack,
never classroom/. The chapter, ``agent`` and ``providers`` never import it (the command line does, for its words
and ``verify``), so the chapter works on a machine without Jupyter. This ``__init__`` imports none of its modules:
``import codeagent_lite.workbook.exercise_checks`` must not pull in ipywidgets.
"""
