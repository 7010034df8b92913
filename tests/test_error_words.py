"""A refusal's expected and found in the learner's language, made from its code and params (workbook/error_words.py).

The zh ladder's "=>" line said 期望 all of it，实际 the end of the text: the chapter's English inside a Chinese
sentence. The English edition must stay the chapter's words exactly; the Chinese one says each fact in Chinese,
or shows it as it came where the fact is the reply's own text.
"""

from __future__ import annotations

import re

import pytest

from codeagent_lite import InvalidModelOutputError, ValidationLayer, diagnose
from codeagent_lite.diagnosis import format_ladder as chapter_ladder
from codeagent_lite.workbook.error_words import expected_and_found
from codeagent_lite.workbook.ladder import format_ladder

ANSWER = '{"type": "final_answer", "content": "42"}'
EVERY_REFUSAL = {
    "code_fence": f"```json\n{ANSWER}\n```",
    "cut_off": '{"type": "final_answer"',
    "two_values": ANSWER + " " + ANSWER,
    "prose_around": "Sure! " + ANSWER,
    "single_quotes": "{'type': 'final_answer'}",
    "trailing_comma": '{"type": "final_answer", "content": "42",}',
    "control_character": '{"type": "final_answer", "content": "a\x01b"}',
    "not_json": '{"type" "final_answer"}',
    "too_deep": "[" * 101 + "]" * 101,
    "duplicate_key": '{"type": "final_answer", "type": "final_answer", "content": "42"}',
    "number_too_long": "[" + "9" * 4400 + "]",
    "not_finite": "[NaN]",
    "empty": "  ",
    "bom": "\ufeff" + ANSWER,
    "lone_surrogate": '"\\ud800"',
    "not_an_object": "[1]",
    "unknown_type": '{"type": "tool_result"}',
    "missing_field": '{"type": "final_answer"}',
    "extra_field": '{"type": "final_answer", "content": "42", "extra": 1}',
    "wrong_type": '{"type": "final_answer", "content": 42}',
    "blank": '{"type": "final_answer", "content": "  "}',
}
CHINESE = re.compile(r"[\u4e00-\u9fff]")


def refusal(text: str) -> InvalidModelOutputError:
    error = diagnose(text).error
    assert error is not None, text
    return error


@pytest.mark.parametrize("code", EVERY_REFUSAL)
def test_each_text_meets_its_code(code: str) -> None:
    assert refusal(EVERY_REFUSAL[code]).code == code


@pytest.mark.parametrize("code", EVERY_REFUSAL)
def test_the_english_words_are_the_chapters_own(code: str) -> None:
    error = refusal(EVERY_REFUSAL[code])
    assert expected_and_found(error, "en") == (error.expected, error.found)
    assert format_ladder(diagnose(EVERY_REFUSAL[code]), "en") == chapter_ladder(diagnose(EVERY_REFUSAL[code]))


def _is_the_replys_own(fact: str) -> bool:
    """A quote of the reply, a code point, a type name or a repr: data, the same in either language."""
    return fact[:1] in ("'", '"') or fact.startswith("U+") or fact in ("bytes", "null")


@pytest.mark.parametrize("code", EVERY_REFUSAL)
def test_the_chinese_words_say_each_fact_in_chinese_or_as_the_reply_has_it(code: str) -> None:
    error = refusal(EVERY_REFUSAL[code])
    for english, chinese in zip(expected_and_found(error, "en"), expected_and_found(error, "zh"), strict=True):
        assert CHINESE.search(chinese) or (chinese == english and _is_the_replys_own(english)), (code, chinese)


def test_the_chinese_words_are_made_from_the_params() -> None:
    assert expected_and_found(refusal(EVERY_REFUSAL["cut_off"]), "zh") == ("完整的回复", "文本结尾")
    missing = refusal('{"type": "tool_call", "call_id": "c", "tool_name": "t"}')
    assert expected_and_found(missing, "zh") == ("恰好这些字段：type, call_id, tool_name, arguments", "缺少 arguments")
    many = refusal('{"type": "final_answer", ' + ", ".join(f'"k{n}": 1' for n in range(7)) + "}")
    assert expected_and_found(many, "zh")[1] == "缺少 content；多出 'k0', 'k1', 'k2', 'k3', 'k4' 等另外 2 个"
    assert expected_and_found(refusal(EVERY_REFUSAL["number_too_long"]), "zh") == ("至多 4300 位", "4400 位数字")
    assert expected_and_found(refusal(EVERY_REFUSAL["not_json"]), "zh")[0] == "冒号 ':'"


def test_an_error_of_a_code_not_in_the_table_keeps_its_own_words() -> None:
    error = InvalidModelOutputError("mine", layer=ValidationLayer.FIELDS, code="my_own", expected="x", found="y")
    assert expected_and_found(error, "zh") == ("x", "y")
    bare = InvalidModelOutputError("mine", layer=ValidationLayer.FIELDS, code="wrong_type")  # no params, no facts
    assert expected_and_found(bare, "zh") == ("None", "None")


def test_the_zh_ladders_verdict_line_is_chinese() -> None:
    line = format_ladder(diagnose(EVERY_REFUSAL["cut_off"]), "zh").splitlines()[-1]
    assert line == "=> 在第 1 层被拒绝：期望 完整的回复，实际 文本结尾"
