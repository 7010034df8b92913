"""The words of verify's report (``verify``) and of the step titles, in English and Chinese.

A sibling of ``verify`` so that module keeps only its logic. What a check is given and
expects (``contract.Check.given``/``expected``) and what the learner's code returned stay as
the contract wrote them: they are Python values and the series' English phrases.
"""

from __future__ import annotations

from .contract import STEPS
from .language import Messages, edition_language

__all__ = ["MESSAGES", "protection", "step_title"]

_STEP_TITLES_ZH = {
    1: "消息编码 · 二、消息转换（json_text_messages.py）",
    2: "Adapter 的调度流程 · 三、Adapter 调度（json_text_adapter.py）",
    3: "博客的四层检查 · 四、行动解析（json_action_parser.py）",
    4: "严格 JSON 与非空字符串：博客之外的规则（json_action_parser.py）",
}
"""Beside ``contract.STEPS`` (the English titles): a step added there without one here fails at import."""

MESSAGES = Messages(
    {
        # ------------------------------------------------------------------ the step titles
        **{f"step_{step}": {"en": title, "zh": _STEP_TITLES_ZH[step]} for step, title in STEPS.items()},
        # ------------------------------------------------------------------ one check's sentence
        "not_run": {"en": "not run: {reason}", "zh": "没有运行：{reason}"},
        "did_not_load": {"en": "{file}.py did not load", "zh": "{file}.py 没能加载"},
        "sentence": {
            "en": "given {given}, expected {expected}, got {got}.",
            "zh": "输入 {given}，期望 {expected}，实际得到 {got}。",
        },
        # ------------------------------------------------------------------ the report
        "heading": {"en": "verify {label}: steps {first}-{last}", "zh": "verify {label}：第 {first}-{last} 步"},
        "step": {"en": "step {step} · {title}", "zh": "第 {step} 步 · {title}"},
        "note": {"en": "note: {note}", "zh": "附注：{note}"},
        "ours": {"en": "[ours]", "zh": "[工作簿规则]"},
        "workbook_rule": {"en": "(a rule of this workbook: {rule})", "zh": "（本工作簿自己的规则：{rule}）"},
        "workbook_rule_html": {"en": "a rule of this workbook: {rule}", "zh": "本工作簿自己的规则：{rule}"},
        "checks_pass": {"en": "{passed} of {total} checks pass", "zh": "{total} 项检查通过了 {passed} 项"},
        "then": {"en": "; {summary}", "zh": "；{summary}"},
        "overview_line": {
            "en": "{mark} step {step} · {title}: {passed} of {total} checks pass",
            "zh": "{mark} 第 {step} 步 · {title}：{total} 项检查通过了 {passed} 项",
        },
        "every_check_passes": {"en": "every check passes", "zh": "每一项检查都通过了"},
        "start_with": {"en": "start with {id} ({file}.py)", "zh": "先看 {id}（{file}.py）"},
        # ------------------------------------------------------------------ yours beside ours
        "beside": {
            "en": "{label} beside the reference: step {step} · {title}",
            "zh": "{label} 与参考实现对照：第 {step} 步 · {title}",
        },
        "row_ours": {"en": "    ours : {text}", "zh": "    参考：{text}"},
        "row_yours": {"en": "    yours: {text}", "zh": "    你的：{text}"},
        "row_cost": {"en": "    cost : {text}", "zh": "    代价：{text}"},
        "differ": {"en": "{differ} of {total} differ", "zh": "{total} 个里有 {differ} 个不同"},
        "all_same": {"en": "all {total} the same", "zh": "全部 {total} 个都相同"},
        "column_reply": {"en": "reply", "zh": "回复"},
        "column_ours": {"en": "ours (reference)", "zh": "参考实现（ours）"},
        "column_yours": {"en": "yours", "zh": "你的（yours）"},
        "column_cost": {"en": "what the difference costs", "zh": "这个差异的代价"},
        "same": {"en": "same", "zh": "相同"},
        "beside_html": {"en": "{label} beside the reference", "zh": "{label} 与参考实现对照"},
        # ------------------------------------------------------------------ what went wrong around a check
        "exit_status": {"en": "the process ended with exit status {code}", "zh": "进程已经结束，退出状态 {code}"},
        "no_answer": {"en": "no answer", "zh": "没有应答"},
        "could_not_start": {
            "en": "verify could not start its checking process ({reason})",
            "zh": "verify 没能启动它的检查进程（{reason}）",
        },
        "died": {
            "en": "{died} (os._exit, a crash, or the process was killed) while running this",
            "zh": "运行这项检查时{died}（os._exit、崩溃，或者进程被杀掉了）",
        },
        "timed_out": {
            "en": "no answer within {limit} s (an endless loop, or input() waiting?); it was stopped",
            "zh": "{limit} 秒内没有应答（死循环？还是 input() 在等输入？），已经把它停下",
        },
        "stopped_answering": {"en": "the checking process stopped answering", "zh": "检查进程不再应答"},
        "verify_stopped": {"en": "verify stopped: {reason}", "zh": "verify 停下了：{reason}"},
        "could_not_load": {"en": "{file}.py could not be loaded: {what}", "zh": "{file}.py 没能加载：{what}"},
        "file_refused": {
            "en": "{file}.py was not read: {why}; verify reads only your own regular files",
            "zh": "{file}.py 没有读取：{why}；verify 只读取你自己的普通文件",
        },
        "symlink": {"en": "it is a symbolic link", "zh": "它是一个符号链接"},
        "not_regular": {"en": "it is not a regular file", "zh": "它不是普通文件"},
        "too_large": {"en": "it is larger than {limit} MB", "zh": "它超过了 {limit} MB"},
        "missing": {"en": "{file}.py is missing from {label}", "zh": "{label} 里没有 {file}.py"},
        "printed": {
            "en": "{file}.py printed {printed} (verify ignores printed text)",
            "zh": "{file}.py 打印了 {printed}（verify 不理会打印出来的内容）",
        },
        "it_raised": {"en": "it raised {described}", "zh": "它抛出了 {described}"},
        "imports_reference": {
            "en": "your {file}.py imports the reference one ({name}): verify judges your own code, "
            "and the reference chapter is not there to import",
            "zh": "你的 {file}.py 导入了参考实现（{name}）：verify 评判的是你自己的代码，这里没有参考章节可以导入",
        },
        "bad_answer": {
            "en": "the checking process answered with data of the wrong shape (was verify's channel tampered with?)",
            "zh": "检查进程返回的数据格式不对（是不是有代码篡改了 verify 的通道？）",
        },
        "malformed": {
            "en": "the checking process sent malformed data for {id}",
            "zh": "检查进程为 {id} 发回的数据格式不对",
        },
        "bad_channel": {
            "en": "the checking process broke its channel ({detail}); it was stopped",
            "zh": "检查进程弄坏了它的通道（{detail}），已经把它停下",
        },
        "step_stopped": {
            "en": "this step stopped at {id}: {what}",
            "zh": "这一步在 {id} 处停下了：{what}",
        },
        "same_cause": {"en": "the same for {ids}", "zh": "{ids} 也是同样的原因"},
        "id_separator": {"en": ", ", "zh": "、"},
        "progress": {
            "en": "verify: step {step} of {total} · {title} …",
            "zh": "verify：第 {step} 步（共 {total} 步）· {title} …",
        },
        "seeded": {
            "en": "the checks' inputs were drawn from seed {seed}; the cases printed above are the public ones",
            "zh": "这次检查的输入由种子 {seed} 随机生成；上面列出的是公开的用例",
        },
        "seed": {"en": "seed must be an integer, found {found}", "zh": "seed 必须是整数，实际是 {found}"},
        "protections": {
            "en": "your code runs without bubblewrap here; what protects it: {list}",
            "zh": "这台机器上你的代码不在 bubblewrap 里运行；保护措施只有：{list}",
        },
        # ------------------------------------------------------------------ an exception of the learner's code
        "place": {"en": " in {file} line {line}", "zh": "，位于 {file} 第 {line} 行"},
        "syntax_error": {
            "en": "a syntax error in {file} line {line}: {message}",
            "zh": "{file} 第 {line} 行有语法错误：{message}",
        },
        "not_written": {
            "en": "nothing yet: it is not written (NotImplementedError{place})",
            "zh": "还没有实现：这里的代码还没写（NotImplementedError{place}）",
        },
        "system_exit": {
            "en": "SystemExit({code}) raised{place}: library code must never end the program",
            "zh": "SystemExit({code}){place}：库代码绝不能结束整个程序",
        },
        "recursion": {
            "en": "RecursionError{place}: the code recursed too deep",
            "zh": "RecursionError{place}：代码递归太深",
        },
        "own_error": {
            "en": "an InvalidModelOutputError of its own (from {module}), not the Kernel's: "
            "import it from codeagent_lite.model_adapter",
            "zh": "一个自己定义的 InvalidModelOutputError（来自 {module}），不是 Kernel 的那个："
            "请从 codeagent_lite.model_adapter 导入它",
        },
        # ------------------------------------------------------------------ verify used wrongly
        "holds_none": {"en": "{label} holds none of {files}", "zh": "{label} 里一个也没有：{files}"},
        "step_range": {
            "en": "step must be one of {steps}, found {step}",
            "zh": "step 必须是 {steps} 之一，实际是 {step}",
        },
        "time_limit": {
            "en": "time_limit must be more than 0 and at most {limit} seconds, found {found}",
            "zh": "time_limit 必须大于 0、不超过 {limit} 秒，实际是 {found}",
        },
        "not_a_folder": {
            "en": "{label} is not a folder (run from the folder that holds it, or give its path)",
            "zh": "{label} 不是文件夹（请在包含它的文件夹里运行，或者给出它的路径）",
        },
    }
)


_PROTECTIONS_ZH = {
    "a fresh interpreter without site-packages": "全新的解释器，不带 site-packages",
    "an empty environment": "清空的环境变量",
    "a session of its own": "独立的会话",
    "bubblewrap: only the interpreter and /usr visible, read-only": "bubblewrap：只能看到解释器和 /usr，而且只读",
    "no network": "没有网络",
    "its own pid namespace, killed as a whole": "独立的 pid 命名空间，结束时整体杀掉",
    "an unprivileged uid of its own": "独立的无特权 uid",
    "no bubblewrap: files and network of this user stay reachable": "没有 bubblewrap：这个用户的文件和网络仍然可以访问",
    "limits on memory, processes, open files and file size": "内存、进程数、打开文件数和文件大小都有上限",
    "run as root: no process limit binds": "以 root 身份运行：进程数上限不起作用",
    "at most 64 MiB written in its working directory and in /tmp, its own files read-only": (
        "工作目录和 /tmp 各自最多写入 64 MiB，它自己的文件只读"
    ),
    "no cap on the disk it fills, only on one file's size": "不限制它总共写多少磁盘，只限制单个文件的大小",
    "memory capped per process (address space), not for the run as a whole: no memory cgroup": (
        "内存按进程（地址空间）设上限，而不是整个运行一起算：没有用内存 cgroup"
    ),
}
"""``sandbox.protections()``'s phrases in Chinese; a phrase missing here is shown as it is."""


def protection(phrase: str) -> str:
    """One of ``sandbox.protections()`` in the edition's language."""
    return _PROTECTIONS_ZH.get(phrase, phrase) if edition_language() == "zh" else phrase


def step_title(step: int) -> str:
    """Step ``step``'s title in the edition's language (``contract.STEPS`` holds the English ones)."""
    return MESSAGES.say(f"step_{step}")
