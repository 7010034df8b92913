"""The README's offline demo must keep working exactly as written there."""

from __future__ import annotations

import io
import shlex
from pathlib import Path

import pytest

from codeagent_lite.cli import main

ROOT = Path(__file__).resolve().parent.parent
DEMO = "run --provider scripted --script examples/replies.jsonl --workspace examples/demo_workspace"


def test_readme_shows_the_scripted_demo_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"python -m codeagent_lite {DEMO}" in readme


def test_scripted_demo_recovers_from_a_fenced_reply_and_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    status = main([*shlex.split(DEMO), "What is in notes.md?"], stdout=out)
    text = out.getvalue()
    assert status == 0, text
    assert "rejected at layer 1 (JSON syntax)" in text
    assert "code fence" in text
    assert "The answer to the workshop question is 42." in text
    assert "final answer: notes.md says the answer is 42." in text
    assert "(1 rejected)" in text
