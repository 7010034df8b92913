"""The display rules: short, escaped, and said one way, whatever untrusted text holds."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeagent_lite.display import (
    ELLIPSIS,
    error_text,
    json_kind,
    printable,
    quote,
    shorten,
    shorten_counted,
)
from codeagent_lite.model_adapter import ValidationLayer


def test_shorten_keeps_short_text_and_cuts_long_text_to_the_limit() -> None:
    assert shorten("abc", 3) == "abc"
    assert shorten("abcdef", 4) == "abc" + ELLIPSIS
    assert len(shorten("x" * 1000, 10)) == 10


def test_shorten_counted_says_how_much_is_missing() -> None:
    assert shorten_counted("abcdef", 6) == "abcdef"
    assert shorten_counted("abcdef", 2) == f"ab{ELLIPSIS} [4 more characters]"


@pytest.mark.parametrize("function", [shorten, shorten_counted])
def test_a_limit_below_one_is_a_usage_error(function: object) -> None:
    with pytest.raises(ValueError, match="limit must be at least 1, found 0"):
        function("abc", 0)  # type: ignore[operator]


def test_quote_is_capped_after_escaping() -> None:
    # Each ESC becomes four characters under repr: capping before repr would overshoot.
    text = "\x1b" * 50
    quoted = quote(text)
    assert len(quoted) <= 24
    assert quoted.startswith("'\\x1b") and quoted.endswith(ELLIPSIS)
    assert "\x1b" not in quoted


def test_quote_keeps_a_short_text_whole() -> None:
    assert quote("README.md") == "'README.md'"


@given(st.text(), st.integers(min_value=4, max_value=80))
def test_quote_never_exceeds_its_limit_nor_leaks_a_control_character(text: str, limit: int) -> None:
    quoted = quote(text, limit)
    assert len(quoted) <= limit
    assert printable(quoted) == quoted


def test_printable_escapes_terminal_sequences_but_keeps_layout() -> None:
    assert printable("a\x1b[2Jb\n\tc") == "a\\x1b[2Jb\n\tc"
    assert printable("\u202e") == "\\u202e"
    assert printable("\ud800") == "\\ud800"
    assert printable("中文 ✔") == "中文 ✔"


@given(st.text())
def test_printable_output_holds_no_control_character_but_newline_and_tab(text: str) -> None:
    shown = printable(text)
    assert all(char in "\n\t" or char.isprintable() or unicodedata.category(char) == "Zs" for char in shown)


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (1, "the number 1"),
        (1.5, "the number 1.5"),
        ("x", "the string 'x'"),
        ([], "an array"),
        ({}, "an object"),
    ],
)
def test_json_kind_names_values_as_json(value: object, kind: str) -> None:
    assert json_kind(value) == kind


def test_json_kind_shortens_huge_numbers() -> None:
    kind = json_kind(10**4000)
    assert kind.startswith("the number 1000") and kind.endswith(ELLIPSIS)
    assert len(kind) <= len("the number ") + 24


def test_layer_label() -> None:
    assert ValidationLayer.FIELDS.label == "layer 4 (fields and types)"


def test_error_text_never_raises() -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert error_text(ValueError("shown")) == "shown"
    assert error_text(Unprintable()) == "(the error's message cannot be shown)"


def test_the_smallest_limits_still_work() -> None:
    assert shorten("abc", 1) == "…"
    assert shorten("a", 1) == "a"
    assert shorten_counted("abc", 1) == "a… [2 more characters]"


def test_printable_keeps_wide_spaces_and_escapes_each_range_its_own_way() -> None:
    assert printable("标题\u3000正文\u00a0end") == "标题\u3000正文\u00a0end"
    assert printable("\x1b\u200e\U000e0001") == "\\x1b\\u200e\\U000e0001"


def test_json_kind_names_a_value_json_cannot_hold_by_its_type() -> None:
    assert json_kind({1, 2}) == "set"
    assert json_kind(b"x") == "bytes"


def test_quote_keeps_as_much_as_fits_exactly() -> None:
    assert quote("ab", 4) == "'ab'"  # exactly the limit: nothing is cut
    assert quote("abcdef", 6) == "'abc'…"
    assert quote("abcdefgh", 7) == "'abcd'…"
    with pytest.raises(ValueError) as caught:
        quote("x", 3)
    assert str(caught.value) == "limit must be at least 4, found 3"


@given(st.text(alphabet=st.sampled_from("ab'\"\\\x01\n路🙂"), max_size=60), st.integers(min_value=4, max_value=70))
def test_a_cut_quote_keeps_the_longest_prefix_that_fits(text: str, limit: int) -> None:
    quoted = quote(text, limit)
    if not quoted.endswith("…"):
        assert quoted == repr(text)
        return
    kept = next(n for n in range(len(text), -1, -1) if quoted == repr(text[:n]) + "…")
    assert len(repr(text[: kept + 1])) + 1 > limit  # one character more would not fit
