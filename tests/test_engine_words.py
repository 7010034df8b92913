"""The local engine's state lines in both languages (notebook 06's panel).

English must stay exactly what ``local_engine`` says (the command line prints that), Chinese
must exist for every state, and every cause and hint the builder can write must have a
Chinese twin: the tests below produce each one through ``local_engine`` itself.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from codeagent_lite.providers import local_engine
from codeagent_lite.providers.local_engine import (
    SMOKE_FAILED,
    SMOKE_HINT,
    BuildProgress,
    EngineState,
    EngineStatus,
    Platform,
    classify_failure,
    compiler_install_hint,
)
from codeagent_lite.providers.local_server import SIGNAL_ADVICE, describe_engine_exit
from codeagent_lite.workbook.engine_words import engine_advice, engine_summary, translate_cause

CHINESE = re.compile(r"[\u4e00-\u9fff]")
FOLDER = Path("/tmp/cal-engine")
MISSING = ("llama_cpp",)

STATUSES = {
    "ready": EngineStatus(EngineState.READY, (), FOLDER),
    "ready, the class's server": EngineStatus(EngineState.READY, MISSING, FOLDER, shared_url="http://10.0.0.5:8765/v1"),
    "building, no progress yet": EngineStatus(EngineState.BUILDING, MISSING, FOLDER),
    "building, configuring": EngineStatus(
        EngineState.BUILDING,
        MISSING,
        FOLDER,
        progress=BuildProgress(23.0, "downloading and configuring", None, None, 400.0),
    ),
    "building, compiling": EngineStatus(
        EngineState.BUILDING, MISSING, FOLDER, progress=BuildProgress(100.0, "compiling", 30, 120, 180.0)
    ),
    "building, installing": EngineStatus(
        EngineState.BUILDING, MISSING, FOLDER, progress=BuildProgress(400.0, "installing", 120, 120, 5.0)
    ),
    "failed, no compiler": EngineStatus(
        EngineState.FAILED,
        MISSING,
        FOLDER,
        reason="no working C and C++ compiler, which compiling llama.cpp needs",
        hint="Install gcc and g++: sudo apt-get install build-essential",
    ),
    "failed, interrupted": EngineStatus(
        EngineState.FAILED,
        MISSING,
        FOLDER,
        reason="the last build stopped before it finished (it was interrupted or killed)",
    ),
    "not installed": EngineStatus(EngineState.NOT_INSTALLED, MISSING, FOLDER),
}


def test_every_engine_state_is_covered() -> None:
    assert {status.state for status in STATUSES.values()} == set(EngineState)


@pytest.mark.parametrize("name", STATUSES)
def test_the_english_lines_are_the_engines_own(name: str) -> None:
    status = STATUSES[name]
    assert engine_summary(status, "en") == status.summary()
    assert engine_advice(status, "en") == status.how_to_get_it()


@pytest.mark.parametrize("name", STATUSES)
def test_every_state_line_has_a_chinese_twin(name: str) -> None:
    status = STATUSES[name]
    summary = engine_summary(status, "zh")
    assert CHINESE.search(summary) and summary != status.summary(), summary
    advice = engine_advice(status, "zh")
    assert advice == "" if status.ready else CHINESE.search(advice), advice
    assert not re.search(r"\b(building|ready|impossible|failed|not installed|compiling)\b", summary), summary


def test_the_chinese_progress_keeps_the_numbers() -> None:
    assert engine_summary(STATUSES["building, compiling"], "zh") == (
        "本地引擎：正在后台构建，正在编译（第 30/120 步），已用 1 分 40 秒，大约还要 3 分 00 秒"
    )


def test_the_chinese_failure_keeps_the_command_and_the_log() -> None:
    advice = engine_advice(STATUSES["failed, no compiler"], "zh")
    assert advice.splitlines()[0] == "安装 gcc 和 g++：sudo apt-get install build-essential"
    assert "make local" in advice and str(FOLDER / "build.log") in advice
    assert engine_summary(STATUSES["failed, no compiler"], "zh").endswith(
        "没有能用的 C 和 C++ 编译器，而编译 llama.cpp 需要它"
    )


def _every_cause_and_hint() -> list[str]:
    """What the builder can write into state.json, produced by local_engine itself."""
    texts: list[str] = []
    for signs, _cause, _hint in local_engine._FAILURE_SIGNS:
        texts.extend(classify_failure(signs[0], 1, {"CC": True, "CXX": True}, Platform("linux")))
    for compilers in ({"CC": False, "CXX": True}, {"CC": True, "CXX": False}, {"CC": False, "CXX": False}):
        texts.extend(classify_failure("", 1, compilers, Platform("linux", frozenset({"debian"}))))
    texts.extend(classify_failure("CMAKE_C_COMPILER not set", 1, {"CC": True, "CXX": True}, Platform("linux")))
    texts.extend(classify_failure("something else", 3, {"CC": True, "CXX": True}, Platform("linux")))
    platforms = [
        Platform("linux", conda=True),
        Platform("darwin"),
        Platform("win32"),
        *(Platform("linux", frozenset({name})) for name in ("debian", "fedora", "arch", "opensuse", "alpine")),
        Platform("linux"),
    ]
    texts.extend(compiler_install_hint(platform) for platform in platforms)
    # The causes engine_status writes itself, for a build that did not end in a failure it classified.
    texts.append("the last build stopped before it finished (it was interrupted or killed)")
    texts.append("the last build succeeded, but this Python (/venv/bin/python) cannot import llama_cpp")
    texts.append("Pick the kernel of the environment the build installed into, or build in this one.")
    texts.append("Read the end of the build log below for the cause.")
    # A build whose smoke test saw the engine die: every signal local_server gives advice for, and the rest.
    ends = [describe_engine_exit(-number) for number in SIGNAL_ADVICE]
    ends += [describe_engine_exit(2), describe_engine_exit(-signal.SIGILL) + ", before it was ready"]
    ends += ["the local engine was not ready within 120 s", "the one-token request failed: URLError: refused"]
    texts.extend(SMOKE_FAILED.format(failure=end) for end in ends)
    texts.append(SMOKE_HINT)
    return texts


@pytest.mark.parametrize("text", _every_cause_and_hint())
def test_every_cause_and_hint_the_builder_writes_has_a_chinese_twin(text: str) -> None:
    twin = translate_cause(text, "zh")
    assert CHINESE.search(twin), f"no Chinese twin for {text!r}"
    assert translate_cause(text, "en") == text


def test_the_engines_own_fallback_sentences_are_translated() -> None:
    source = Path(local_engine.__file__).read_text(encoding="utf-8")
    for sentence in ("the last build stopped before it finished", "Pick the kernel of the environment"):
        assert sentence in source, "local_engine changed its words: update engine_words and this test"


def test_the_smoke_tests_signal_keeps_its_name_and_gets_its_advice_in_chinese() -> None:
    text = SMOKE_FAILED.format(failure=describe_engine_exit(-signal.SIGILL))
    assert translate_cause(text, "zh") == (
        "引擎装好了，但只生成一个 Token 的冒烟测试没有通过：本地引擎因 SIGILL（非法指令）而终止："
        "它是为另一种 CPU 编译的；`make local` 会重新构建它"
    )


def test_an_unknown_sentence_is_shown_as_it_is() -> None:
    assert translate_cause("a cause nobody wrote down", "zh") == "a cause nobody wrote down"
