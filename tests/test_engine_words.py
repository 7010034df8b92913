"""The local engine's state in words, made from its data, in both languages.

``local_engine`` describes a status as data (a state, a phase, notes with a code and parameters); every
line the command line and notebook 06 show is made from that data through the catalog. These tests produce
every note the builder (``scripts/engine_build.py``) and ``engine_status`` can write through their own code, and
check that each has words in both languages that keep its parameters (commands, paths, exit codes) as they are.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from engine_build_script import engine_build

from codeagent_lite.providers.local_engine import (
    ENGINE_MODULES,
    BuildProgress,
    EngineState,
    EngineStatus,
    Note,
    NoteCode,
    Phase,
    engine_status,
)
from codeagent_lite.workbook.engine_words import (
    engine_advice,
    engine_report_line,
    engine_summary,
    note_text,
    progress_text,
)

CHINESE = re.compile(r"[\u4e00-\u9fff]")
FOLDER = Path("/tmp/cal-engine")
MISSING = ("llama_cpp",)
NO_COMPILER = Note.of(NoteCode.NO_COMPILER, compiler="C/C++")
APT = Note.of(NoteCode.COMPILER_PACKAGES, command="sudo apt-get install build-essential")

STATUSES = {
    "ready": EngineStatus(EngineState.READY, (), FOLDER),
    "ready, the class's server": EngineStatus(EngineState.READY, MISSING, FOLDER, shared_url="http://10.0.0.5:8765/v1"),
    "building, no progress yet": EngineStatus(EngineState.BUILDING, MISSING, FOLDER),
    "building, configuring": EngineStatus(
        EngineState.BUILDING, MISSING, FOLDER, progress=BuildProgress(23.0, Phase.CONFIGURING, None, None, 400.0)
    ),
    "building, compiling": EngineStatus(
        EngineState.BUILDING, MISSING, FOLDER, progress=BuildProgress(100.0, Phase.COMPILING, 30, 120, 180.0)
    ),
    "building, installing": EngineStatus(
        EngineState.BUILDING, MISSING, FOLDER, progress=BuildProgress(400.0, Phase.INSTALLING, 120, 120, 5.0)
    ),
    "failed, no compiler": EngineStatus(EngineState.FAILED, MISSING, FOLDER, reason=NO_COMPILER, hint=APT),
    "failed, interrupted": EngineStatus(EngineState.FAILED, MISSING, FOLDER, reason=Note.of(NoteCode.INTERRUPTED)),
    "not installed": EngineStatus(EngineState.NOT_INSTALLED, MISSING, FOLDER),
}


@pytest.fixture
def engine_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's modules cannot be imported in this process, whatever is installed."""
    for name in ENGINE_MODULES:
        monkeypatch.setitem(sys.modules, name, None)


def test_every_engine_state_is_covered() -> None:
    assert {status.state for status in STATUSES.values()} == set(EngineState)


@pytest.mark.parametrize("name", STATUSES)
def test_every_state_has_english_and_chinese_words(name: str) -> None:
    status = STATUSES[name]
    english, chinese = engine_summary(status, "en"), engine_summary(status, "zh")
    assert english.startswith("local engine: ") and not CHINESE.search(english), english
    assert CHINESE.search(chinese) and chinese != english, chinese
    assert not re.search(r"\b(building|ready|impossible|failed|not installed|compiling)\b", chinese), chinese
    advice = engine_advice(status, "zh")
    assert advice == "" if status.ready else CHINESE.search(advice), advice


def test_the_progress_keeps_the_numbers_in_both_languages() -> None:
    status = STATUSES["building, compiling"]
    assert engine_summary(status, "en") == (
        "local engine: building in the background, compiling (30/120 steps), 1 min 40 s so far, about 3 min 00 s left"
    )
    assert engine_summary(status, "zh") == (
        "本地引擎：正在后台构建，正在编译（第 30/120 步），已用 1 分 40 秒，大约还要 3 分 00 秒"
    )


def test_the_failure_keeps_the_command_and_the_log() -> None:
    status = STATUSES["failed, no compiler"]
    advice = engine_advice(status, "zh")
    assert advice.splitlines()[0] == "安装 gcc 和 g++：sudo apt-get install build-essential"
    assert "make local" in advice and str(FOLDER / "build.log") in advice
    assert engine_summary(status, "zh").endswith("没有能用的 C/C++ 编译器，而编译 llama.cpp 需要它")
    assert engine_report_line(status, "en") == "\n".join(
        [
            "local engine: impossible on this machine for now: no working C/C++ compiler, which compiling "
            "llama.cpp needs",
            "Install gcc and g++: sudo apt-get install build-essential",
            "Then retry with `make local` (builds in the foreground and shows progress) or start `make lab` again "
            "(builds in the background); without make: python scripts/local_engine.py build.",
            f"The build log is {FOLDER / 'build.log'}.",
        ]
    )


def _every_note() -> list[Note]:
    """Every note the builder and engine_status can write, produced by their own code."""
    notes: list[Note] = []
    for signs, _cause, _hint in engine_build._FAILURE_SIGNS:
        notes.extend(
            engine_build.classify_failure(signs[0], 1, {"CC": True, "CXX": True}, engine_build.Platform("linux"))
        )
    for compilers in ({"CC": False, "CXX": True}, {"CC": True, "CXX": False}, {"CC": False, "CXX": False}):
        notes.extend(
            engine_build.classify_failure("", 1, compilers, engine_build.Platform("linux", frozenset({"debian"})))
        )
    notes.extend(
        engine_build.classify_failure("something else", 3, {"CC": True, "CXX": True}, engine_build.Platform("linux"))
    )
    platforms = [
        engine_build.Platform("linux", conda=True),
        engine_build.Platform("darwin"),
        engine_build.Platform("win32"),
        *(
            engine_build.Platform("linux", frozenset({name}))
            for name in ("debian", "fedora", "arch", "opensuse", "alpine")
        ),
        engine_build.Platform("linux"),
    ]
    notes.extend(engine_build.compiler_install_hint(platform) for platform in platforms)
    return notes


def _notes_of_engine_status(tmp_path: Path, state: dict[str, object]) -> list[Note]:
    folder = tmp_path / "engine"
    folder.mkdir(exist_ok=True)
    (folder / "state.json").write_text(json.dumps(state), encoding="utf-8")
    status = engine_status(folder)
    return [note for note in (status.reason, status.hint) if note is not None]


@pytest.mark.parametrize("note", _every_note(), ids=lambda note: f"{note.code}-{dict(note.fields)}")
def test_every_note_the_builder_writes_has_words_in_both_languages(note: Note) -> None:
    english, chinese = note_text(note, "en"), note_text(note, "zh")
    assert english and not CHINESE.search(english), english
    assert CHINESE.search(chinese), f"no Chinese for {note}"
    for value in dict(note.fields).values():
        assert value in english and value in chinese


@pytest.mark.parametrize("code", NoteCode)
def test_every_code_has_words_in_both_languages(code: NoteCode) -> None:
    """Also the notes only engine_status and the smoke test write (covered end to end in test_local_engine)."""
    fields = {name: "x" for name in re.findall(r"\{(\w+)\}", note_text(Note(code), "en"))}
    english, chinese = note_text(Note.of(code, **fields), "en"), note_text(Note.of(code, **fields), "zh")
    assert english and not CHINESE.search(english) and CHINESE.search(chinese), code


@pytest.mark.parametrize("phase", Phase)
def test_every_phase_has_words_in_both_languages(phase: Phase) -> None:
    english, chinese = (
        progress_text(BuildProgress(5.0, phase, None, None, None), language) for language in ("en", "zh")
    )
    assert english and not CHINESE.search(english) and CHINESE.search(chinese), phase


@pytest.mark.usefixtures("engine_missing")
def test_a_state_file_round_trips_its_notes(tmp_path: Path) -> None:
    reason, hint = engine_build.classify_failure(
        "", 2, {"CC": False, "CXX": True}, engine_build.Platform("linux", frozenset({"fedora"}))
    )
    notes = _notes_of_engine_status(
        tmp_path, {"started": 1.0, "returncode": 2, "reason": reason.as_json(), "hint": hint.as_json()}
    )
    assert notes == [reason, hint]
    assert note_text(notes[0], "en") == "no working C compiler, which compiling llama.cpp needs"


@pytest.mark.usefixtures("engine_missing")
def test_an_older_state_file_that_held_sentences_reads_as_a_failed_build(tmp_path: Path) -> None:
    notes = _notes_of_engine_status(tmp_path, {"started": 1.0, "returncode": 3, "reason": "free text", "hint": 7})
    assert notes == [Note.of(NoteCode.BUILD_FAILED, returncode=3), Note.of(NoteCode.READ_LOG)]


def test_the_smoke_tests_detail_is_shown_as_it_came() -> None:
    note = Note.of(NoteCode.SMOKE_FAILED, failure="the local engine died with SIGILL (Illegal instruction)")
    assert note_text(note, "zh") == (
        "引擎装好了，但只生成一个 Token 的冒烟测试没有通过：the local engine died with SIGILL (Illegal instruction)"
    )


SECRET_URL = "http://alice:s3cr3t-PASS@127.0.0.1:9/v1?token=sk-abcdef123456\x1b[31m"


def test_the_shared_servers_address_is_said_without_credentials_or_control_characters() -> None:
    said = engine_summary(EngineStatus(EngineState.READY, (), FOLDER, shared_url=SECRET_URL))
    assert "s3cr3t-PASS" not in said and "sk-abcdef123456" not in said and "\x1b" not in said, said
    assert "http://***@127.0.0.1:9/v1?token=***" in said


def test_words_read_from_the_builders_files_are_said_escaped() -> None:
    from codeagent_lite.workbook.engine_panel import engine_report

    failed = EngineStatus(EngineState.FAILED, MISSING, FOLDER, log_tail=("\x1b[2J\x1b]0;owned\x07 error",))
    assert "\x1b" not in engine_report(failed) and "\\x1b[2J" in engine_report(failed)
    for note in _every_note():
        fields = tuple((name, "\x1b[31m" + value) for name, value in note.fields)
        assert "\x1b" not in note_text(Note(note.code, fields))
