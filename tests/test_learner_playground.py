"""The live playground puts the learner's parser beside the reference's, and follows the text box."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from codeagent_lite.workbook import learner_playground
from codeagent_lite.workbook.learner_ladder import LadderPairs
from codeagent_lite.workbook.learner_playground import LearnerPlayground
from codeagent_lite.workbook.parser_playground import PRESETS

ROOT = Path(__file__).resolve().parent.parent
BLOG_STAGE = ROOT / "solutions" / "blog_json_text"
FINISHED = ROOT / "solutions" / "my_json_text"


def test_the_blog_parser_differs_from_ours_on_a_duplicate_key() -> None:
    playground = LearnerPlayground(BLOG_STAGE, "duplicate key", time_limit=10)
    (pair,) = playground.pairs.pairs
    assert not pair.same, "json.loads keeps the last duplicate key, ours refuses the reply at layer 1"
    assert "≠" in playground.comparison.value
    assert playground.comparison in playground.widget.children


def test_typing_updates_both_ladders() -> None:
    playground = LearnerPlayground(BLOG_STAGE, "duplicate key", time_limit=10)
    playground.pause_seconds = 0  # at once, whether or not an event loop runs here (a browser test leaves one)
    playground.text.value = PRESETS["top-level array"]
    (pair,) = playground.pairs.pairs
    assert pair.same, "both parsers refuse an array at layer 2"
    assert pair.text == PRESETS["top-level array"]
    assert "≠" not in playground.comparison.value


def test_a_finished_parser_agrees_with_ours() -> None:
    playground = LearnerPlayground(FINISHED, "duplicate key", time_limit=10)
    assert all(pair.same for pair in playground.pairs.pairs)


def test_it_does_not_wear_the_first_playgrounds_classes() -> None:
    """Notebook 04 shows both playgrounds; the browser test finds the first one by its CSS classes."""
    playground = LearnerPlayground(FINISHED, "duplicate key", time_limit=10)
    parts = (playground.widget, playground.preset, playground.text, playground.ladder, playground.comparison)
    classes = {name for part in parts for name in part._dom_classes}
    assert not {name for name in classes if name.startswith("cal-playground")} - {"cal-playground-learner"}
    assert "cal-learner-input" in playground.text._dom_classes


def test_your_ladder_follows_typing_once_it_pauses_not_per_keystroke(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each keystroke ran your parser in a child at once: a parser that loops held the kernel 5 s a character."""
    playground = LearnerPlayground(FINISHED, "duplicate key", time_limit=10)
    asked: list[list[str]] = []
    judged = learner_playground.learner_ladders

    def counted(directory: Path, texts: dict[str, str], **options: float) -> LadderPairs:
        asked.append(list(texts.values()))
        return judged(directory, texts, **options)

    monkeypatch.setattr(learner_playground, "learner_ladders", counted)

    async def type_ten_characters() -> None:
        for typed in range(1, 11):
            playground.text.value = "{" * typed
        await asyncio.sleep(playground.pause_seconds + 0.5)

    # In a thread of its own: its event loop is the one the playground's timer uses, whatever runs in this thread.
    typist = threading.Thread(target=asyncio.run, args=(type_ten_characters(),))
    typist.start()
    typist.join(timeout=30)
    assert asked == [["{" * 10]]
    assert playground.pairs.pairs[0].text == "{" * 10
