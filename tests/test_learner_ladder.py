"""The parser playground's ladder for a learner's parser, beside the reference's (notebook 04)."""

from __future__ import annotations

import shutil
from pathlib import Path

from codeagent_lite.workbook.learner_ladder import learner_ladders
from codeagent_lite.workbook.parser_playground import PRESETS

ROOT = Path(__file__).resolve().parent.parent
BLOG_STAGE = ROOT / "solutions" / "blog_json_text"
STUBS = ROOT / "notebooks" / "stubs" / "my_json_text"


def test_the_blog_parser_ladder_differs_where_json_loads_is_lax() -> None:
    names = ["duplicate key", "top-level array", "blank call_id"]
    pairs = {pair.name: pair for pair in learner_ladders(BLOG_STAGE, {name: PRESETS[name] for name in names}).pairs}
    duplicate = pairs["duplicate key"]
    assert not duplicate.same
    assert duplicate.ours[0] == "✘ failed" and duplicate.yours is not None and duplicate.yours[0] == "✔ passed"
    assert duplicate.ours_verdict == "✘ rejected at layer 1 (JSON syntax)"
    assert "tool_name='delete_file'" in duplicate.your_verdict
    assert pairs["top-level array"].same
    blank = pairs["blank call_id"]
    assert blank.yours is None and blank.your_verdict.startswith("it raised ValueError: call_id must not be blank")


def test_an_unwritten_parser_says_so_and_the_report_reads_as_text_and_html() -> None:
    ladders = learner_ladders(STUBS, ["{}"])
    (pair,) = ladders.pairs
    assert pair.name == "reply 1" and pair.yours is None
    assert "not written" in pair.your_verdict
    text = str(ladders)
    assert text.splitlines()[0].split() == ["ours", str(STUBS.name)]
    assert "≠ reply 1" in text and "  ≠ => ours: ✘ rejected at layer 3 (action type)" in text
    assert "<table>" in ladders._repr_html_()
    assert repr(ladders) == "LadderPairs('my_json_text': 1 of 1 differ)"


def test_a_folder_and_reply_names_with_escape_codes_print_escaped(tmp_path: Path) -> None:
    folder = tmp_path / "mine\x1b[31m"
    shutil.copytree(ROOT / "solutions" / "my_json_text", folder)
    text = str(learner_ladders(folder, {"name\x1b[5m": "{}"}, time_limit=10))
    assert "\x1b" not in text and "mine\\x1b[31m" in text and "name\\x1b[5m" in text, text


def test_one_reply_given_alone_is_one_reply() -> None:
    (pair,) = learner_ladders(BLOG_STAGE, '{"type": "final_answer", "content": "42"}').pairs
    assert pair.name == "reply 1" and pair.same
