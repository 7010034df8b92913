"""The workbook room: everything that exists for the notebooks (the teacher's grading lives in classroom/).

* the notebooks' widgets and tables: ``environment_check`` (00), ``encoder_playground`` (02), ``parser_playground``
  and ``learner_playground`` (04), ``exercise_checks`` (05), ``real_model_lab``, ``engine_panel`` and ``recorded/``
  (06), ``build_assignment`` (07); ``widget_view``: how each widget shows itself where none can render;
* the words: ``language`` (which one the learner reads), ``words`` (the one gettext catalog), ``cells`` (what the
  notebooks' shared code cells print), ``ladder``, ``error_words``, ``transcript_view``, ``engine_words`` and
  ``provider_words`` (the chapter's ladder and refusals, an agent run's, the local engine's and the providers' data
  as sentences), ``lab_language``
  (JupyterLab's own menus);
* the build-it-yourself checks of notebooks 01-04 and ``python -m codeagent_lite verify``: ``contract``,
  ``verify``, ``verify_child``, ``verify_probe``, ``verify_standins``, ``verify_progress``, ``learner_ladder``,
  ``learner_dir`` (the learner's own folder); where learner code runs, for verify and the grader: ``sandbox``,
  ``sandbox_io``, ``sandbox_cgroup``, ``wire`` (values and errors as data across its channel).

This room may import anything in the package and the Jupyter stack, never classroom/; the chapter, ``agent`` and
``providers`` never import it (the command line does, for its words and ``verify``), so the chapter works without
Jupyter. This ``__init__`` imports none of its modules: ``exercise_checks`` must not pull in ipywidgets.
"""
