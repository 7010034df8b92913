"""The CLI when its output cannot be written: exit status 2 and one line, for every subcommand.

``> /dev/full`` is the real thing (a disk that is full on every write); the in-process
property test then fails the output stream after any number of characters, with any
errno, and only the exit status and that one line may come out.
"""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent_lite.cli import EXIT_USAGE, main

REPO = Path(__file__).resolve().parents[1]
VALID = '{"type":"final_answer","content":"42"}'


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "notes.txt").write_text("buy milk\n", encoding="utf-8")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([VALID]), encoding="utf-8")
    learner = tmp_path / "learner"
    learner.mkdir(exist_ok=True)
    chapter_file = REPO / "codeagent_lite" / "json_text_messages.py"
    (learner / "json_text_messages.py").write_text(chapter_file.read_text(encoding="utf-8"), encoding="utf-8")
    return {
        "check-valid": ["check", VALID],
        "check-rejected": ["check", "not json"],
        "run": ["run", "--provider", "scripted", "--script", str(script), "--workspace", str(workspace), "Go"],
        "verify": ["verify", str(learner), "--step", "1", "--time-limit", "2"],
        "help": ["--help"],
        "run-help": ["run", "--help"],
    }


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("name", ["check-valid", "check-rejected", "run", "verify", "help", "run-help"])
def test_a_full_disk_exits_2_with_one_line(tmp_path: Path, name: str) -> None:
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "codeagent_lite", *_commands(tmp_path)[name]],
            stdout=full,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            cwd=REPO,
            timeout=120,
            check=False,
        )
    stderr = result.stderr.decode("utf-8", "backslashreplace")
    assert result.returncode == EXIT_USAGE, stderr
    assert stderr.splitlines() == ["error: cannot write the output: No space left on device (errno 28)"], stderr


class FailingStream(io.StringIO):
    """An output stream that fails with ``error`` once more than ``room`` characters were written."""

    def __init__(self, room: int, error: OSError) -> None:
        super().__init__()
        self.room = room
        self.error = error

    def write(self, text: str) -> int:
        if self.tell() + len(text) > self.room:
            raise self.error
        return super().write(text)


_ERRORS = st.sampled_from([errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EBADF]).map(
    lambda code: OSError(code, os.strerror(code))
)


def _check(text: str, out: io.StringIO) -> tuple[int, str]:
    err = io.StringIO()
    old_err, sys.stderr = sys.stderr, err
    try:
        return main(["check", text], stdout=out), err.getvalue()
    finally:
        sys.stderr = old_err


@settings(max_examples=60, deadline=None)
@given(room=st.integers(0, 1200), error=_ERRORS, text=st.sampled_from([VALID, "nope", '{"type": 1}', "[]"]))
def test_any_write_error_anywhere_is_one_line_and_exit_2(room: int, error: OSError, text: str) -> None:
    whole = io.StringIO()
    expected_code, _ = _check(text, whole)
    code, err = _check(text, FailingStream(room, error))
    if len(whole.getvalue()) > room:
        assert code == EXIT_USAGE
        assert err.splitlines() == [f"error: cannot write the output: {error.strerror} (errno {error.errno})"]
    else:
        assert (code, err) == (expected_code, "")


def test_a_reader_that_left_is_still_quiet() -> None:
    assert _check(VALID, FailingStream(0, BrokenPipeError(errno.EPIPE, "Broken pipe"))) == (EXIT_USAGE, "")


def test_another_os_error_is_not_called_a_write_error(tmp_path: Path) -> None:
    """A command's own OSError (here: an unreadable --file) keeps its own message."""
    out, err = io.StringIO(), io.StringIO()
    old_err, sys.stderr = sys.stderr, err
    try:
        code = main(["check", "--file", str(tmp_path / "missing.txt")], stdout=out)
    finally:
        sys.stderr = old_err
    assert code == EXIT_USAGE
    assert "cannot write the output" not in err.getvalue()
