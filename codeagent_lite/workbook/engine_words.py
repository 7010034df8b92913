"""The local engine's state lines in the edition's language, for notebook 06's panel.

``providers/local_engine.py`` writes its state lines ("building…", "ready", the cause of a
failed build, the install hint) in English, and keeps them: the command line and
``scripts/local_engine.py`` print them, and providers may not import the workbook. A Chinese
learner meets the same lines at the top of notebook 06, so this module says them again in
either language, from the same facts (the state, the build's progress, the cause).

Causes and hints come from ``state.json`` as English sentences. The ones the builder can
write are known (``local_engine.classify_failure`` and ``compiler_install_hint``), so each has
its Chinese twin below; a sentence this module does not know is shown as it is, untranslated
rather than lost. ``tests/test_engine_words.py`` runs every cause and hint the builder can
produce through here, so a new English sentence without a twin fails a test.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable

from ..providers.local_engine import (
    PORTABLE_CMAKE_ARGS,
    RETRY_HINT,
    SMOKE_HINT,
    BuildProgress,
    EngineState,
    EngineStatus,
)
from ..providers.local_server import SIGNAL_ADVICE
from .language import Language, Messages, edition_language

__all__ = ["MESSAGES", "engine_advice", "engine_summary", "translate_cause"]

MESSAGES = Messages(
    {
        "ready": {
            "en": "local engine: ready (llama-cpp-python and the Gemma weights are installed)",
            "zh": "本地引擎：已就绪（llama-cpp-python 和 Gemma 权重都已安装）",
        },
        "ready_shared": {
            "en": "local engine: ready (the class's shared model server at {url})",
            "zh": "本地引擎：已就绪（全班共用的模型服务，地址 {url}）",
        },
        "building": {
            "en": "local engine: building in the background, {progress}",
            "zh": "本地引擎：正在后台构建，{progress}",
        },
        "started": {"en": "started", "zh": "刚刚开始"},
        "failed": {
            "en": "local engine: impossible on this machine for now: {reason}",
            "zh": "本地引擎：这台机器暂时用不了：{reason}",
        },
        "not_installed": {
            "en": "local engine: not installed (no build has been started in this environment)",
            "zh": "本地引擎：没有安装（这个环境里还没有开始过构建）",
        },
        "advice_building": {
            "en": "The build log is {log}. When it finishes, run the cells again: "
            "the packages land in this environment, so no restart is needed.",
            "zh": "构建日志在 {log}。构建结束后，再运行一次这些代码格：软件包装进的就是这个环境，所以不用重启。",
        },
        "advice_retry": {"en": "Then {retry}.", "zh": "然后{retry}。"},
        "retry": {
            "en": RETRY_HINT,
            "zh": "用 `make local` 重试（在前台构建并显示进度），或者重新启动 `make lab`（在后台构建）；"
            "不用 make 的话：python scripts/local_engine.py build",
        },
        "advice_log": {"en": "The build log is {log}.", "zh": "构建日志在 {log}。"},
        "advice_not_installed": {
            "en": "Get it with `make local` in the repository root (compiles llama.cpp, about 7 minutes on "
            "2 cores; needs a C/C++ compiler), or: pip install 'codeagent-lite[local]' with CMAKE_ARGS={cmake}.",
            "zh": "在仓库根目录运行 `make local` 安装它（要编译 llama.cpp，两个核大约 7 分钟，需要 C/C++ 编译器），"
            "或者设置 CMAKE_ARGS={cmake} 后运行：pip install 'codeagent-lite[local]'。",
        },
        "phase_for": {"en": "{phase} for {elapsed}", "zh": "{phase}，已用 {elapsed}"},
        "phase_steps": {
            "en": "{phase} ({done}/{total} steps), {elapsed} so far",
            "zh": "{phase}（第 {done}/{total} 步），已用 {elapsed}",
        },
        "left": {"en": ", about {remaining} left", "zh": "，大约还要 {remaining}"},
        "seconds": {"en": "{seconds} s", "zh": "{seconds} 秒"},
        "minutes": {"en": "{minutes} min {seconds} s", "zh": "{minutes} 分 {seconds} 秒"},
        "phase_configuring": {"en": "downloading and configuring", "zh": "正在下载和配置"},
        "phase_compiling": {"en": "compiling", "zh": "正在编译"},
        "phase_installing": {"en": "installing", "zh": "正在安装"},
    }
)

_PHASE_KEYS = {
    "downloading and configuring": "phase_configuring",
    "compiling": "phase_compiling",
    "installing": "phase_installing",
}
"""``BuildProgress.phase`` (local_engine's words) to the key of its message."""

# Every cause and hint the builder writes, with its Chinese twin (commands stay as they are).
_TWINS: tuple[tuple[str, str], ...] = (
    (
        "the last build stopped before it finished (it was interrupted or killed)",
        "上一次构建没有完成就停下了（被中断或被杀掉）",
    ),
    (
        "pip could not download the packages (no network, or no access to PyPI)",
        "pip 下载不了这些软件包（没有网络，或者访问不了 PyPI）",
    ),
    (
        "Check the network connection or proxy settings (pip's own settings, e.g. PIP_INDEX_URL)",
        "检查网络连接或代理设置（也包括 pip 自己的设置，例如 PIP_INDEX_URL）",
    ),
    ("the disk filled up during the build", "构建过程中磁盘满了"),
    ("Free about 1 GB of disk space", "腾出大约 1 GB 的磁盘空间"),
    ("the compiler ran out of memory", "编译器的内存不够用了"),
    (
        "Close other programs, or build on one core: CMAKE_BUILD_PARALLEL_LEVEL=1 make local",
        "关掉其他程序，或者只用一个核构建：CMAKE_BUILD_PARALLEL_LEVEL=1 make local",
    ),
    ("Read the end of the build log for the cause", "原因请看构建日志的末尾"),
    ("Read the end of the build log below for the cause.", "原因请看下面构建日志的末尾。"),
    (
        "Pick the kernel of the environment the build installed into, or build in this one.",
        "请选用构建时安装进去的那个环境的内核，或者在当前环境里再构建一次。",
    ),
    (
        "Install a compiler into this conda environment: conda install -c conda-forge compilers",
        "在这个 conda 环境里装一个编译器：conda install -c conda-forge compilers",
    ),
    (
        "Install Apple's command line tools (clang): xcode-select --install",
        "安装 Apple 的命令行工具（clang）：xcode-select --install",
    ),
    (
        "Install Visual Studio Build Tools with the 'Desktop development with C++' workload "
        "(winget install Microsoft.VisualStudio.2022.BuildTools), then use a Developer PowerShell",
        "安装 Visual Studio Build Tools，并勾选“使用 C++ 的桌面开发”（Desktop development with C++）"
        "工作负载（winget install Microsoft.VisualStudio.2022.BuildTools），然后在 Developer PowerShell 里操作",
    ),
    (
        "Install a C and C++ compiler (gcc and g++, or clang) with your system's package manager",
        "用系统的包管理器安装 C 和 C++ 编译器（gcc 和 g++，或者 clang）",
    ),
    (
        SMOKE_HINT,
        f"`make local` 会重新安装 llama-cpp-python，用 CMAKE_ARGS={PORTABLE_CMAKE_ARGS} 为这台机器编译"
        "（绝不会用别的编译参数构建出来的 wheel）",
    ),
)
_FIXED_ZH = dict(_TWINS)

_SIGNALS_ZH = {
    "SIGILL": "非法指令",
    "SIGSEGV": "段错误",
    "SIGBUS": "总线错误",
    "SIGABRT": "程序中止",
    "SIGKILL": "被强制杀掉",
    "SIGTERM": "被要求退出",
}
_SIGNAL_ADVICE_ZH = {
    signal.SIGILL: "它是为另一种 CPU 编译的；`make local` 会重新构建它",
    signal.SIGSEGV: "llama.cpp 内部崩溃了；`make local` 会重新构建它，引擎日志里有更多信息",
    signal.SIGBUS: "llama.cpp 内部崩溃了；`make local` 会重新构建它，引擎日志里有更多信息",
    signal.SIGABRT: "llama.cpp 在一项检查失败后停下了；引擎日志里写着是哪一项",
    signal.SIGKILL: "最常见的原因是系统内存不够了（模型大约需要 0.6 GB）；关掉其他程序，再运行一次这个代码格",
}
_ADVICE_ZH = {SIGNAL_ADVICE[number]: text for number, text in _SIGNAL_ADVICE_ZH.items()}
"""local_server's advice after each signal (English) to its Chinese twin."""


def _engine_exit(text: str) -> str:
    """How the engine ended (``local_server.describe_engine_exit`` and the start-up failures), in Chinese."""
    match = re.fullmatch(r"the local engine died with (\w+) \(([^)]*)\)(?:: (.*?))?(, before it was ready)?", text)
    if match is not None:
        name, description, advice, early = match.groups()
        line = f"本地引擎因 {name}（{_SIGNALS_ZH.get(name, description)}）而终止"
        if early:
            line += "，当时还没有准备好"
        if advice:
            line += "：" + _ADVICE_ZH.get(advice, advice)
        return line
    match = re.fullmatch(r"the local engine exited with code (-?\d+)(, before it was ready)?", text)
    if match is not None:
        return f"本地引擎退出了，退出码 {match.group(1)}" + ("，当时还没有准备好" if match.group(2) else "")
    match = re.fullmatch(r"the local engine was not ready within (\S+) s", text)
    if match is not None:
        return f"本地引擎在 {match.group(1)} 秒内没有准备好"
    match = re.fullmatch(r"the one-token request failed: (.*)", text)
    if match is not None:
        return f"那一个 Token 的请求失败了：{match.group(1)}"
    return text


_COMPILER_NAMES_ZH = {"C": "C", "C++": "C++", "C and C++": "C 和 C++", "C/C++": "C/C++"}


def _no_compiler(match: re.Match[str]) -> str:
    names = _COMPILER_NAMES_ZH.get(match.group(1), match.group(1))
    return f"没有能用的 {names} 编译器，而编译 llama.cpp 需要它"


_PATTERNS_ZH: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"no working (.+) compiler, which compiling llama\.cpp needs"), _no_compiler),
    (re.compile(r"the build failed with exit code (-?\d+)"), lambda m: f"构建失败，退出码 {m.group(1)}"),
    (
        re.compile(r"the last build succeeded, but this Python \((.*)\) cannot import (.*)"),
        lambda m: f"上一次构建成功了，但当前的 Python（{m.group(1)}）导入不了 {m.group(2)}",
    ),
    (re.compile(r"Install gcc and g\+\+: (.+)"), lambda m: f"安装 gcc 和 g++：{m.group(1)}"),
    (
        re.compile(r"the engine installed, but its one-token smoke test failed: (.*)"),
        lambda m: f"引擎装好了，但只生成一个 Token 的冒烟测试没有通过：{_engine_exit(m.group(1))}",
    ),
)


def translate_cause(text: str, language: Language | None = None) -> str:
    """A cause or hint written by the builder, in ``language``; unknown sentences stay English."""
    if (language or edition_language()) == "en" or not text:
        return text
    if text in _FIXED_ZH:
        return _FIXED_ZH[text]
    for pattern, twin in _PATTERNS_ZH:
        match = pattern.fullmatch(text)
        if match is not None:
            return twin(match)
    return text


def _duration(seconds: float, language: Language) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 90:
        return MESSAGES.say("seconds", language=language, seconds=f"{seconds:.0f}")
    minutes, rest = divmod(round(seconds), 60)
    return MESSAGES.say("minutes", language=language, minutes=minutes, seconds=f"{rest:02d}")


def _progress(progress: BuildProgress, language: Language) -> str:
    key = _PHASE_KEYS.get(progress.phase)
    phase = progress.phase if key is None else MESSAGES.say(key, language=language)
    elapsed = _duration(progress.elapsed_seconds, language)
    if progress.done_steps is not None and progress.total_steps is not None:
        text = MESSAGES.say(
            "phase_steps",
            language=language,
            phase=phase,
            done=progress.done_steps,
            total=progress.total_steps,
            elapsed=elapsed,
        )
    else:
        text = MESSAGES.say("phase_for", language=language, phase=phase, elapsed=elapsed)
    if progress.remaining_seconds is not None:
        text += MESSAGES.say("left", language=language, remaining=_duration(progress.remaining_seconds, language))
    return text


def engine_summary(status: EngineStatus, language: Language | None = None) -> str:
    """``EngineStatus.summary()`` in the edition's language: one line, the state and any progress."""
    chosen = language or edition_language()
    if status.state is EngineState.READY and status.shared_url:
        return MESSAGES.say("ready_shared", language=chosen, url=status.shared_url)
    if status.state is EngineState.READY:
        return MESSAGES.say("ready", language=chosen)
    if status.state is EngineState.BUILDING:
        progress = status.progress
        text = MESSAGES.say("started", language=chosen) if progress is None else _progress(progress, chosen)
        return MESSAGES.say("building", language=chosen, progress=text)
    if status.state is EngineState.FAILED:
        return MESSAGES.say("failed", language=chosen, reason=translate_cause(status.reason, chosen))
    return MESSAGES.say("not_installed", language=chosen)


def engine_advice(status: EngineStatus, language: Language | None = None) -> str:
    """``EngineStatus.how_to_get_it()`` in the edition's language; empty when the engine is ready."""
    chosen = language or edition_language()
    if status.state is EngineState.READY:
        return ""
    log = str(status.log_path)
    if status.state is EngineState.BUILDING:
        return MESSAGES.say("advice_building", language=chosen, log=log)
    if status.state is EngineState.FAILED:
        lines = [
            translate_cause(status.hint, chosen),
            MESSAGES.say("advice_retry", language=chosen, retry=MESSAGES.say("retry", language=chosen)),
            MESSAGES.say("advice_log", language=chosen, log=log),
        ]
        return "\n".join(line for line in lines if line)
    return MESSAGES.say("advice_not_installed", language=chosen, cmake=PORTABLE_CMAKE_ARGS)
