"""python -m codeagent_lite check: argument, --file, stdin; exit 0/1/2; the ladder is printed."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeagent_lite.cli import EXIT_REJECTED, EXIT_USAGE, EXIT_VALID, main

VALID = '{"type":"final_answer","content":"42"}'
FENCED = "```json\n" + VALID + "\n```"
ROOT = Path(__file__).resolve().parent.parent


def run_main(argv: list[str], stdin_text: str = "") -> tuple[int, str]:
    out = io.StringIO()
    code = main(argv, stdin=io.StringIO(stdin_text), stdout=out)
    return code, out.getvalue()


def test_exit_codes_are_conventional() -> None:
    assert (EXIT_VALID, EXIT_REJECTED, EXIT_USAGE) == (0, 1, 2)


def test_valid_text_as_an_argument() -> None:
    code, output = run_main(["check", VALID])
    assert code == 0
    assert output.count("passed") == 4
    assert "=> FinalAnswer(content='42')" in output


def test_rejected_text_as_an_argument_shows_the_ladder() -> None:
    code, output = run_main(["check", '{"type":"final_answer","content":42}'])
    assert code == 1
    assert "✔ layer 3" in output
    assert "✘ layer 4" in output and "content must be a string" in output
    assert "=> rejected at layer 4" in output


@pytest.mark.parametrize("argv", [["check", "-"], ["check"]])
def test_reads_stdin(argv: list[str]) -> None:
    code, output = run_main(argv, stdin_text=FENCED)
    assert code == 1
    assert "✘ layer 1" in output and "code fence" in output
    assert output.count("not reached") == 3
    code, _ = run_main(argv, stdin_text=VALID + "\n")
    assert code == 0


def test_reads_a_file_keeping_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "reply.txt"
    path.write_text('{"type":"final_answer",\r\n"content":"文件"}', encoding="utf-8", newline="")
    code, output = run_main(["check", "--file", str(path)])
    assert code == 0
    assert "FinalAnswer(content='文件')" in output
    path.write_text('{"type":"final_answer","content":"a\rb"}', encoding="utf-8", newline="")
    code, output = run_main(["check", "-f", str(path)])
    assert code == 1
    assert "U+000D" in output  # the raw \r reached the parser unchanged


@pytest.mark.parametrize(
    "argv",
    [[], ["frobnicate"], ["check", "a", "b"], ["check", "--file"], ["check", VALID, "--file", "x.txt"]],
)
def test_bad_usage_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, output = run_main(argv)
    assert code == 2
    assert output == ""
    assert "usage:" in capsys.readouterr().err


def test_unreadable_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run_main(["check", "--file", str(tmp_path / "missing.txt")])
    assert code == 2
    assert "cannot read the model text" in capsys.readouterr().err
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes(b'{"type":"final_answer","content":"caf\xe9"}')
    code, _ = run_main(["check", "--file", str(latin1)])
    assert code == 2


def _run_module(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codeagent_lite", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def test_the_module_runs_as_a_command() -> None:
    valid = _run_module("check", "-", stdin=VALID)
    assert valid.returncode == 0, valid.stderr
    assert "=> FinalAnswer(content='42')" in valid.stdout
    rejected = _run_module("check", "[" * 100_000)
    assert rejected.returncode == 1, rejected.stderr
    assert "nesting is deeper than 100 levels" in rejected.stdout
    usage = _run_module()
    assert usage.returncode == 2


@pytest.mark.parametrize("encoding", ["latin-1", "ascii", "cp1252"])
def test_a_console_that_cannot_show_the_marks_gets_escapes_not_a_crash(encoding: str) -> None:
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    result = subprocess.run(
        [sys.executable, "-m", "codeagent_lite", "check", '{"type":"final_answer","content":"中文"}'],
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(encoding, "replace")
    output = result.stdout.decode(encoding)
    assert "\\u2714 layer 1" in output
    assert "FinalAnswer(content='\\u4e2d\\u6587')" in output


# --------------------------------------------------------------------------- the command line's own words


@pytest.mark.parametrize(
    ("environment", "usage", "options", "required"),
    [
        ({"CAL_LANG": "en"}, "usage: python -m codeagent_lite", "show this help message and exit", "are required"),
        ({"CAL_LANG": "zh"}, "用法：python -m codeagent_lite", "显示这段帮助并退出", "缺少必需的参数"),
        ({"LC_ALL": "zh_CN.UTF-8"}, "用法：python -m codeagent_lite", "显示这段帮助并退出", "缺少必需的参数"),
    ],
)
def test_argparses_words_follow_the_learners_language(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    environment: dict[str, str],
    usage: str,
    options: str,
    required: str,
) -> None:
    import argparse
    import gettext

    for name in ("CAL_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert main(["--help"]) == EXIT_VALID
    shown = capsys.readouterr().out
    assert shown.startswith(usage) and options in shown
    assert main(["run"]) == EXIT_USAGE
    error = capsys.readouterr().err
    assert error.startswith(usage) and required in error
    assert argparse._ is gettext.gettext  # type: ignore[attr-defined]  # put back: the process's argparse is its own


def test_the_command_lines_messages_speak_chinese(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CAL_LANG", "zh")
    assert main(["run", "task", "--provider", "scripted", "--max-steps", "zero"]) == EXIT_USAGE
    assert "参数 --max-steps：" in capsys.readouterr().err  # argparse's frame around the workbook's own message
