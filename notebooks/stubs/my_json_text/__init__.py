"""你自己的这一章三个文件：你来写，``verify`` 来判。 · Your own copy of the chapter's three files.

把抛出 ``NotImplementedError`` 的函数体写完，一个笔记本写一个文件：

* ``json_text_messages.py``  笔记本 02（二、消息转换），verify 第 1 步
* ``json_text_adapter.py``   笔记本 03（三、Adapter 调度），verify 第 2 步
* ``json_action_parser.py``  笔记本 04（四、行动解析），verify 第 3、4 步

这个文件夹（``notebooks/my_json_text/``）是第一次用到时从 ``notebooks/stubs/my_json_text/`` 复制出来的，归你所有：
git 不跟踪它，更新工作簿不会碰它。在任一版本的笔记本里（所在文件夹是 ``notebooks/zh`` 或 ``notebooks/en``）::

    from codeagent_lite.workbook.learner_dir import learner_dir
    from codeagent_lite.workbook.verify import verify
    verify(learner_dir(), step=1)

在终端里，从仓库根目录运行::

    python -m codeagent_lite verify notebooks/my_json_text --step 1

和系列自己的文件一样，它们从上一章导入 Kernel（``codeagent_lite.kernel_types``、``codeagent_lite.model_adapter``），
彼此之间用相对导入。verify 逐个加载每个文件，所以从不运行这个 ``__init__``。

Fill in the bodies that raise ``NotImplementedError``, one file per notebook (02: step 1, 03: step 2, 04: steps 3
and 4). This folder was copied from ``notebooks/stubs/my_json_text/`` on first use and is yours: git ignores it, so
updating the workbook never touches it. From a notebook, run the cells above; from a terminal at the repository's
root, ``python -m codeagent_lite verify notebooks/my_json_text --step 1``. Like the series' own files, these import
the Kernel from the previous chapter and each other with relative imports; verify loads each file on its own, so
this ``__init__`` is never run by it.
"""
