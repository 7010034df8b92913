"""Your own copy of the chapter's three files: you write them, ``verify`` judges them.

Fill in the bodies that raise ``NotImplementedError``, one file per notebook:

* ``json_text_messages.py``  notebook 02 (二、消息转换), verify step 1
* ``json_text_adapter.py``   notebook 03 (三、Adapter 调度), verify step 2
* ``json_action_parser.py``  notebook 04 (四、行动解析), verify steps 3 and 4

From a notebook of either edition (its folder is ``notebooks/en`` or ``notebooks/zh``)::

    from codeagent_lite.workbook.verify import verify
    verify("../my_json_text", step=1)

From a terminal at the repository's root::

    python -m codeagent_lite verify notebooks/my_json_text --step 1

Like the series' own files, these import the Kernel from the previous chapter
(``codeagent_lite.kernel_types``, ``codeagent_lite.model_adapter``) and each other with
relative imports. verify loads each file on its own, so this ``__init__`` is never run by it.
"""
