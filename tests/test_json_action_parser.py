"""The four-layer parser: a table of every kind of rejection, and the accepted shapes."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from codeagent_lite.action_schema import action_json_schema
from codeagent_lite.json_action_parser import (
    CONTRACTS,
    check_action_type,
    check_fields,
    check_json_syntax,
    check_top_level_object,
    parse_json_action,
)
from codeagent_lite.kernel_types import FinalAnswer, ToolCall
from codeagent_lite.model_adapter import InvalidModelOutputError, ValidationLayer
from codeagent_lite.strict_json import HINTS

SYNTAX = "model output must be valid JSON"
ANSWER = '{"type":"final_answer","content":"x"}'
CALL = '{"type":"tool_call","call_id":"c1","tool_name":"read_file","arguments":{"path":"a"}}'


def rejection(text: Any) -> InvalidModelOutputError:
    with pytest.raises(InvalidModelOutputError) as caught:
        parse_json_action(text)
    return caught.value


# ----------------------------------------------------------------------------- layer 1
# (case id, text, code, (line, column) where json's own error places it, or None for a refused key or value)
LAYER_1_CASES: list[tuple[str, str, str, tuple[int, int] | None]] = [
    ("empty", "", "empty", None),
    ("only whitespace", " \n\t\r ", "empty", None),
    ("only a carriage return", "\r", "empty", None),
    ("code fence", '```json\n{"type":"final_answer","content":"x"}\n```', "code_fence", (1, 1)),
    ("indented tilde fence", '  ~~~\n{"a":1}\n~~~', "code_fence", (1, 3)),
    ("a fence after an ideographic space", '\u3000```\n{"a":1}\n```', "prose_around", (1, 1)),  # not JSON's space
    ("fence after", ANSWER + "\n```", "prose_around", (2, 1)),
    ("prose before", 'Sure! Here it is: {"type":"final_answer","content":"x"}', "prose_around", (1, 1)),
    ("prose after", ANSWER + "\nHope this helps!", "prose_around", (2, 1)),
    ("comment after", ANSWER + " // done", "prose_around", (1, 39)),
    ("a dash line after", ANSWER + " -- done", "prose_around", (1, 39)),
    ("a number in prose after", ANSWER + " 3 apples", "prose_around", (1, 39)),
    ("an unclosed string after", ANSWER + ' "hi', "prose_around", (1, 39)),
    ("prose only", "I cannot help with that.", "not_json", (1, 1)),
    ("two values", ANSWER + "\n" + ANSWER, "two_values", (2, 1)),
    ("two values same line", "{} {}", "two_values", (1, 4)),
    ("two values, the second an array", ANSWER + "\n[1, 2]", "two_values", (2, 1)),
    ("three values", "1 2 3", "two_values", (1, 3)),
    ("single quotes", "{'type': 'final_answer', 'content': 'x'}", "single_quotes", (1, 2)),
    ("single-quoted value", "{\"type\": 'final_answer'}", "single_quotes", (1, 10)),
    ("trailing comma object", '{"type":"final_answer","content":"x",}', "trailing_comma", (1, 38)),
    ("trailing comma array", '{"a":[1,2,\r\n]}', "trailing_comma", (2, 1)),
    ("cut off in a string", '{"type":"final_answer","content":"The answer is', "cut_off", (1, 34)),
    ("cut off after a value", '{"type":"final_answer","content":"x"', "cut_off", (1, 37)),
    ("cut off in a key", '{"ty', "cut_off", (1, 2)),
    ("cut off after a colon", '{"a":\r\n', "cut_off", (2, 1)),
    ("cut off, brackets in the string", '{"content":"' + "[" * 300, "cut_off", (1, 12)),
    *[
        (f"cut off in {word!r}", '{"a":' + word, "cut_off", (1, 6))
        for word in ("t", "tr", "tru", "f", "fa", "fal", "fals", "n", "nu", "nul", "-")
    ],
    ("raw newline in string", '{"type":"final_answer","content":"a\nb"}', "control_character", (1, 36)),
    ("raw carriage return in string", '{"a":"x\ry"}', "control_character", (1, 8)),
    ("missing colon", '{"a" 1}', "not_json", (1, 6)),
    ("bracket closed by a brace", "[}", "not_json", (1, 2)),
    ("no value after a comma", "[1,x]", "not_json", (1, 4)),
    ("python literal", '{"a": True}', "not_json", (1, 7)),
    ("byte-order mark", '\ufeff{"type":"final_answer","content":"x"}', "bom", (1, 1)),
    ("NaN", '{"a":NaN}', "not_finite", None),
    ("-Infinity", '{"a":[1,-Infinity]}', "not_finite", None),
    ("1e400", '{"a":1e400}', "not_finite", None),
    ("-1E400", '{"b":[0, -1E400]}', "not_finite", None),
    ("duplicate top-level key", '{"type":"final_answer","type":"tool_call"}', "duplicate_key", None),
    ("duplicate key via escape", '{"a":1,"\\u0061":2}', "duplicate_key", None),
    ("duplicate key deep inside", '{"arguments":{"x":[{"p":1,"p":2}]}}', "duplicate_key", None),
    ("integer too long", '{"a":' + "9" * 5000 + "}", "number_too_long", None),
    ("negative integer too long", "[-" + "1" * 4301 + "]", "number_too_long", None),
    ("nesting 100000 deep", "[" * 100_000, "too_deep", None),
    ("nesting 101 deep, closed", "[" * 101 + "]" * 101, "too_deep", None),
    (
        "nesting 101 deep in a long reply",
        '{"pad":"' + "x" * 5000 + '","a":' + "[" * 101 + "]" * 101 + "}",
        "too_deep",
        None,
    ),
    ("nesting inside an action", '{"type":"final_answer","content":' + "[" * 120 + "]" * 120 + "}", "too_deep", None),
    ("escaped lone surrogate", '{"a":"\\ud800"}', "lone_surrogate", None),
    ("escaped lone surrogate in a key", '{"\\udc00":1}', "lone_surrogate", None),
    ("raw lone surrogate", '{"a":"\ud800"}', "lone_surrogate", None),
]


@pytest.mark.parametrize(("text", "code", "place"), [c[1:] for c in LAYER_1_CASES], ids=[c[0] for c in LAYER_1_CASES])
def test_layer_1_refusals(text: str, code: str, place: tuple[int, int] | None) -> None:
    error = rejection(text)
    assert (error.layer, error.code) == (ValidationLayer.JSON_SYNTAX, code)
    assert error.message.startswith(SYNTAX)
    assert (error.line, error.column) == (place or (None, None))
    if place is not None:
        assert f"{SYNTAX} at line {place[0]}, column {place[1]}: " in error.message
    assert error.expected and error.found


def test_hints_and_hook_refusals_name_what_they_refused() -> None:
    assert dict(rejection('{"a":1,"\\u0061":2}').params) == {"key": "a"}
    assert dict(rejection('{"b":1,"a":2,"a":3}').params) == {"key": "a"}  # the key seen twice, not the first
    assert dict(rejection("[" * 101 + "]" * 101).params) == {"limit": 100}
    assert dict(rejection("[NaN]").params) == {"number": "NaN"}
    assert dict(rejection("[1e400]").params) == {"number": "1e400"}
    assert dict(rejection("[" + "9" * 4301 + "]").params) == {"digits": 4301, "limit": 4300}
    assert dict(rejection('{"a" 1}').params) == {"reason": "Expecting ':' delimiter", "at_end": False}
    assert dict(rejection('{"a": ').params) == {"at_end": True}  # nothing left where json gave up
    assert "U+0009" in rejection('{"a":"x\ty"}').message
    for code, (hint, _) in HINTS.items():
        assert code in {c[2] for c in LAYER_1_CASES}, code
        assert hint.split("{")[0] in rejection(next(c[1] for c in LAYER_1_CASES if c[2] == code)).message


def test_json_whitespace_is_exactly_four_characters() -> None:
    assert parse_json_action("\r\n\t " + ANSWER + " \r\n") == FinalAnswer("x")
    assert parse_json_action(ANSWER.replace(",", ",\r")) == FinalAnswer("x")
    assert rejection("\x0c").code == "control_character"
    for other in ("\u3000", "\u00a0"):
        assert rejection(other).code == "not_json"
        assert rejection(other + ANSWER).code == "prose_around"
        assert rejection(ANSWER + other).code == "prose_around"


def test_layer_1_alone_returns_the_value() -> None:
    assert check_json_syntax(' \n{"a": [1, 2.5, "三", null, true]}\t') == {"a": [1, 2.5, "三", None, True]}
    assert check_json_syntax("[]") == []
    assert check_json_syntax('"only a string"') == "only a string"


def test_deepest_accepted_nesting_is_100() -> None:
    assert check_json_syntax("[" * 100 + "]" * 100) is not None
    assert check_json_syntax('{"a":"' + "[" * 500 + '"}') == {"a": "[" * 500}  # brackets in a string are text


def test_long_texts_holding_one_plain_value_are_valid_json() -> None:
    # Past 200 characters the decoded value's depth is measured: a number, a string or null has none.
    assert check_json_syntax("7" * 300) == int("7" * 300)
    assert check_json_syntax(" " * 300 + "null") is None
    assert check_json_syntax('"' + "x" * 300 + '"') == "x" * 300


def test_longest_accepted_integer() -> None:
    assert check_json_syntax("9" * 4300) == int("9" * 4300)
    assert check_json_syntax("-" + "9" * 4300) == -int("9" * 4300)


def test_a_non_string_is_refused_at_layer_1_not_crashed_on() -> None:
    error = rejection(b'{"type":"final_answer","content":"x"}')
    assert error.layer is ValidationLayer.JSON_SYNTAX
    assert (error.code, dict(error.params), error.expected, error.found) == (
        "not_text",
        {"type": "bytes"},
        "a string",
        "bytes",
    )
    assert error.message.startswith(SYNTAX)


def test_brackets_inside_strings_are_not_nesting() -> None:
    for pad in (50, 5000):
        text = json.dumps({"type": "final_answer", "content": "[{" * pad})
        assert parse_json_action(text) == FinalAnswer("[{" * pad)


def test_many_small_sibling_arrays_are_not_deep_nesting() -> None:
    # 120 arrays side by side nest two levels deep, not 121: each "]" closes one level again.
    arguments = {f"list_{i}": [i] for i in range(120)}
    text = json.dumps({"type": "tool_call", "call_id": "c", "tool_name": "t", "arguments": arguments})
    assert parse_json_action(text) == ToolCall("c", "t", arguments)
    closed_then_deep = "[" + "[]," * 150 + "[" * 99 + "]" * 99 + "]"
    assert check_json_syntax(closed_then_deep) is not None
    assert rejection("[" + "[]," * 150 + "[" * 100 + "]" * 100 + "]").code == "too_deep"


def test_a_surrogate_pair_and_an_escaped_backslash_are_fine() -> None:
    assert check_json_syntax('"\\\\ud800 \\ud83d\\ude00"') == "\\ud800 \U0001f600"
    assert check_json_syntax('["\\\\ud800", "\\u00e9"]') == ["\\ud800", "é"]


def test_check_fields_refuses_a_type_that_does_not_match_the_contract() -> None:
    with pytest.raises(InvalidModelOutputError) as caught:
        check_fields({"type": "final_answer", "call_id": "c", "tool_name": "t", "arguments": {}}, "tool_call")
    assert caught.value.message.startswith("type must be 'tool_call'")  # the series' "<field> must be ..."
    assert (caught.value.code, dict(caught.value.params)) == ("wrong_type", {"field": "type", "value": "final_answer"})
    assert caught.value.layer is ValidationLayer.FIELDS


def test_each_refusal_is_a_new_error_carrying_the_raw_text() -> None:
    first, second = rejection("[1]"), rejection("[1]")
    assert first is not second
    assert first.raw_text == "[1]"


def test_no_repairs_are_attempted() -> None:
    # A fenced or truncated reply is never "fixed" into an action, even though the JSON inside is valid.
    inside = '{"type":"tool_call","call_id":"c","tool_name":"delete_file","arguments":{"path":"x"}}'
    for text in (f"```json\n{inside}\n```", f"Calling: {inside}", inside[:-1], inside + inside):
        assert rejection(text).layer is ValidationLayer.JSON_SYNTAX


# ----------------------------------------------------------------------------- layer 2


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("[" + ANSWER + "]", "an array"),
        ('"final_answer"', "the string 'final_answer'"),
        ("42", "the number 42"),
        ("null", "null"),
        ("true", "true"),
    ],
)
def test_layer_2_top_level_must_be_an_object(text: str, found: str) -> None:
    error = rejection(text)
    assert (error.layer, error.code, error.found) == (ValidationLayer.TOP_LEVEL_OBJECT, "not_an_object", found)
    assert error.message.startswith("model output must be an object")


def test_layer_2_alone() -> None:
    assert check_top_level_object({"a": 1}) == {"a": 1}
    with pytest.raises(InvalidModelOutputError) as caught:
        check_top_level_object([1])
    assert caught.value.layer is ValidationLayer.TOP_LEVEL_OBJECT


# ----------------------------------------------------------------------------- layer 3


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('{"content":"x"}', 'no "type" field'),
        ('{"type":null,"content":"x"}', "null"),
        ('{"type":1,"content":"x"}', "the number 1"),
        ('{"type":"tool_result","call_id":"c","content":"x","is_error":false}', "the string 'tool_result'"),
        ('{"type":"Final_Answer","content":"x"}', "the string 'Final_Answer'"),
        ('{"type":"TOOL_CALL"}', "the string 'TOOL_CALL'"),
        ('{"type":"final_answer ","content":"x"}', "the string 'final_answer '"),
        ('{"type":["final_answer"],"content":"x"}', "an array"),
        ('{"type":true}', "true"),
    ],
)
def test_layer_3_type_is_exact(text: str, found: str) -> None:
    error = rejection(text)
    assert (error.layer, error.code) == (ValidationLayer.ACTION_TYPE, "unknown_type")
    assert error.message.startswith("unsupported action type")
    assert error.found == found
    assert found in error.message


def test_layer_3_alone() -> None:
    assert check_action_type({"type": "tool_call"}) == "tool_call"
    assert check_action_type({"type": "final_answer", "extra": 1}) == "final_answer"


# ----------------------------------------------------------------------------- layer 4


def tool_call(**changes: Any) -> str:
    value: dict[str, Any] = {"type": "tool_call", "call_id": "call_1", "tool_name": "read_file", "arguments": {}}
    value.update(changes)
    return json.dumps({k: v for k, v in value.items() if v is not _DROP})


def final_answer(**changes: Any) -> str:
    value: dict[str, Any] = {"type": "final_answer", "content": "42"}
    value.update(changes)
    return json.dumps({k: v for k, v in value.items() if v is not _DROP})


_DROP = object()


@pytest.mark.parametrize(
    ("text", "exact_message"),
    [
        (tool_call(call_id=1), "call_id must be a string, found the number 1"),
        (tool_call(call_id=None), "call_id must be a string, found null"),
        (tool_call(tool_name=True), "tool_name must be a string, found true"),
        (tool_call(tool_name=["read_file"]), "tool_name must be a string, found an array"),
        (tool_call(arguments='{"path": "a"}'), 'arguments must be an object, found the string \'{"path": "a"}\''),
        (tool_call(arguments=[]), "arguments must be an object, found an array"),
        (tool_call(arguments=None), "arguments must be an object, found null"),
        (tool_call(call_id=""), "call_id must not be blank, found the string ''"),
        (tool_call(call_id="   "), "call_id must not be blank, found the string '   '"),
        (tool_call(tool_name="\n"), "tool_name must not be blank, found the string '\\n'"),
        (final_answer(content=42), "content must be a string, found the number 42"),
        (final_answer(content=1.5), "content must be a string, found the number 1.5"),
        (final_answer(content=True), "content must be a string, found true"),
        (final_answer(content={"text": "42"}), "content must be a string, found an object"),
        (final_answer(content=" "), "content must not be blank, found the string ' '"),
    ],
)
def test_layer_4_field_types_without_coercion(text: str, exact_message: str) -> None:
    error = rejection(text)
    phrase, found = exact_message.split(", found ")
    field = phrase.split()[0]
    code = "blank" if phrase.endswith("blank") else "wrong_type"
    assert (error.layer, error.code, dict(error.params), error.found) == (
        ValidationLayer.FIELDS,
        code,
        {"field": field, "value": json.loads(text)[field]},
        found,
    )
    assert error.message.startswith(phrase)  # the series' phrase: "call_id must be a string", ...


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (tool_call(arguments=_DROP), ["tool_call fields do not match the contract", "missing arguments"]),
        (tool_call(args={}, arguments=_DROP), ["missing arguments", "unexpected 'args'"]),
        (tool_call(call_id=_DROP, tool_name=_DROP), ["missing call_id, tool_name"]),
        (tool_call(thought="why"), ["tool_call fields", "unexpected 'thought'"]),
        (final_answer(content=_DROP), ["final_answer fields do not match the contract", "missing content"]),
        (final_answer(answer="42", content=_DROP), ["missing content", "unexpected 'answer'"]),
        (final_answer(arguments={}), ["final_answer fields", "unexpected 'arguments'"]),
        (final_answer(call_id="c1"), ["unexpected 'call_id'"]),
    ],
)
def test_layer_4_field_set(text: str, words: list[str]) -> None:
    error = rejection(text)
    assert error.layer is ValidationLayer.FIELDS
    for word in words:
        assert word in error.message
    sent = json.loads(text)
    contract = list(CONTRACTS[sent["type"]])
    missing, unexpected = [f for f in contract if f not in sent], [f for f in sent if f not in contract]
    assert error.code == ("missing_field" if missing else "extra_field")
    assert dict(error.params) == {"missing": tuple(missing), "unexpected": tuple(unexpected), "fields": tuple(contract)}
    contracts = {"tool_call": "type, call_id, tool_name, arguments", "final_answer": "type, content"}
    assert error.expected == "exactly " + contracts[json.loads(text)["type"]]


def test_layer_4_1_is_not_the_string_1() -> None:
    assert parse_json_action(tool_call(call_id="1")) == ToolCall("1", "read_file", {})
    assert rejection(tool_call(call_id=1)).layer is ValidationLayer.FIELDS
    assert parse_json_action(final_answer(content="1")) == FinalAnswer("1")
    assert rejection(final_answer(content=1)).layer is ValidationLayer.FIELDS


def test_layer_4_alone() -> None:
    assert check_fields({"type": "final_answer", "content": "ok"}, "final_answer") == FinalAnswer("ok")
    with pytest.raises(InvalidModelOutputError) as caught:
        check_fields({"type": "tool_call", "content": "ok"}, "tool_call")
    assert caught.value.layer is ValidationLayer.FIELDS


def test_layer_4_alone_gives_the_tool_call_its_own_arguments() -> None:
    # A notebook passes its own dict: changing it afterwards must not change the action.
    obj: dict[str, Any] = {"type": "tool_call", "call_id": "c1", "tool_name": "t", "arguments": {"paths": ["a"]}}
    action = check_fields(obj, "tool_call")
    obj["arguments"]["paths"].append("b")
    obj["arguments"]["new"] = 1
    assert action == ToolCall("c1", "t", {"paths": ["a"]})


def test_the_parser_builds_the_same_actions_as_their_constructors() -> None:
    call = parse_json_action('{"type":"tool_call","call_id":"c1","tool_name":"t","arguments":{"a":[1,{"b":null}]}}')
    assert type(call) is ToolCall
    assert (call.call_id, call.tool_name, call.arguments) == ("c1", "t", {"a": [1, {"b": None}]})
    assert call == ToolCall("c1", "t", {"a": [1, {"b": None}]})
    answer = parse_json_action('{"type":"final_answer","content":" 42 "}')
    assert type(answer) is FinalAnswer
    assert answer.content == " 42 "
    assert answer == FinalAnswer(" 42 ")


# ----------------------------------------------------------------------------- accepted


def test_the_chapters_two_examples_are_accepted() -> None:
    call = """{
  "type": "tool_call",
  "call_id": "call_1",
  "tool_name": "read_file",
  "arguments": {
    "path": "README.md"
  }
}"""
    assert parse_json_action(call) == ToolCall("call_1", "read_file", {"path": "README.md"})
    assert parse_json_action('{\n  "type": "final_answer",\n  "content": "42"\n}') == FinalAnswer("42")


def test_argument_values_are_not_checked_here() -> None:
    arguments = {"path": 3, "flags": [None, True, 1.5], "nested": {"deep": {"x": "中文"}}, "": "empty key"}
    action = parse_json_action(tool_call(arguments=arguments))
    assert action == ToolCall("call_1", "read_file", arguments)


def test_whitespace_around_the_value_and_inside_is_fine() -> None:
    assert parse_json_action("\r\n\t " + ANSWER + " \n") == FinalAnswer("x")
    assert parse_json_action(CALL) == ToolCall("c1", "read_file", {"path": "a"})


def test_field_order_does_not_matter() -> None:
    assert parse_json_action('{"content":"x","type":"final_answer"}') == FinalAnswer("x")


# ----------------------------------------------------------------------------- short messages


@pytest.mark.parametrize(
    "text",
    [
        "Here is the file: " + "x" * 1_000_000,
        '{"type":"final_answer","content":"' + "x" * 1_000_000,
        ANSWER + " " + "y" * 1_000_000,
        "[" + "1," * 500_000 + "]",
        '{"type":"' + "t" * 1_000_000 + '"}',
        '{"type":"final_answer","content":' + "7" * 4300 + "}",
        '{"type":' + "9" * 4300 + "}",
        final_answer(**{f"extra_{i}": i for i in range(50_000)}),
        '{"type":"final_answer","content":"x","' + "k" * 1_000_000 + '":1}',
        '{"a":1,"' + "k" * 1_000_000 + '":1,"' + "k" * 1_000_000 + '":2}',
    ],
    ids=[
        "prose",
        "cut off",
        "text after",
        "trailing comma",
        "long type",
        "long int content",
        "long int type",
        "50000 extra fields",
        "long extra field",
        "long duplicate key",
    ],
)
def test_messages_stay_short_whatever_the_input_size(text: str) -> None:
    error = rejection(text)
    assert len(error.message) <= 300, error.message[:400]
    assert error.raw_text is text  # the whole text stays available to code, just not in the message


# ----------------------------------------------------------------------------- schema


def test_schema_describes_both_shapes() -> None:
    schema = action_json_schema()
    text = json.dumps(schema)
    for name in ("tool_call", "final_answer", "call_id", "tool_name", "arguments", "content"):
        assert name in text
    assert schema["discriminator"]["propertyName"] == "type"
    definitions = schema["$defs"]
    assert definitions["ToolCallPayload"]["additionalProperties"] is False
    assert set(definitions["ToolCallPayload"]["required"]) == {"type", "call_id", "tool_name", "arguments"}
    assert set(definitions["FinalAnswerPayload"]["required"]) == {"type", "content"}


def test_schema_lists_the_fields_layer_4_checks_in_the_same_order() -> None:
    schema = action_json_schema()
    definitions = schema["$defs"]
    assert list(definitions["ToolCallPayload"]["properties"]) == ["type", "call_id", "tool_name", "arguments"]
    assert definitions["ToolCallPayload"]["properties"]["type"]["const"] == "tool_call"
    assert definitions["FinalAnswerPayload"]["properties"]["type"]["const"] == "final_answer"
    assert definitions["ToolCallPayload"]["properties"]["arguments"]["type"] == "object"
    assert definitions["ToolCallPayload"]["properties"]["call_id"] == {"minLength": 1, "type": "string"}
    assert definitions["FinalAnswerPayload"]["additionalProperties"] is False
    assert [option["$ref"] for option in schema["oneOf"]] == ["#/$defs/ToolCallPayload", "#/$defs/FinalAnswerPayload"]


def test_field_set_message_names_five_unexpected_fields_then_counts_the_rest() -> None:
    extra = {f"x{i}": i for i in range(7)}
    error = rejection(json.dumps({"type": "final_answer", **extra}))
    params = {"missing": ("content",), "unexpected": tuple(extra), "fields": ("type", "content")}
    assert (error.code, dict(error.params)) == ("missing_field", params)
    assert error.found in error.message and error.expected == "exactly type, content"
    assert error.found == "missing content; unexpected 'x0', 'x1', 'x2', 'x3', 'x4' and 2 more"
    five = rejection(json.dumps({"type": "final_answer", "content": "c", **{f"x{i}": i for i in range(5)}}))
    assert five.found == "unexpected 'x0', 'x1', 'x2', 'x3', 'x4'"
    six = rejection(json.dumps({"type": "final_answer", "content": "c", **{f"x{i}": i for i in range(6)}}))
    assert six.found == "unexpected 'x0', 'x1', 'x2', 'x3', 'x4' and 1 more"


def test_field_type_refusals_say_what_was_expected() -> None:
    assert rejection(tool_call(call_id=1)).expected == "a string"
    assert rejection(tool_call(call_id=" ")).expected == "a non-blank string"
    assert rejection(tool_call(arguments=[])).expected == "an object"
    with pytest.raises(InvalidModelOutputError) as caught:
        check_fields({"type": "x", "content": "c"}, "final_answer")
    assert (caught.value.expected, caught.value.found) == ("'final_answer'", "the string 'x'")


# (text, code, expected, found): what a program reads of a refusal, beside its layer and params
EXPECTED_AND_FOUND = [
    ('{"a":1,"a":2}', "duplicate_key", "each key at most once per object", "a second 'a'"),
    ("[NaN]", "not_finite", "a finite JSON number", "'NaN'"),
    ("```\n{}\n```", "code_fence", "bare JSON", "'```\\n{}\\n```'"),
    ("{} {}", "two_values", "exactly one JSON value", "'{}'"),
    ("{'a':1}", "single_quotes", 'a double quote (")', "\"'a':1}\""),
    ("[1,]", "trailing_comma", "another item after the comma", "']'"),
    ('{"a":', "cut_off", "all of it", "the end of the text"),
    ('{"a" 1}', "not_json", "':' delimiter", "'1}'"),
    (ANSWER + " x", "prose_around", "nothing but the JSON value", "'x'"),
    ("x " + ANSWER, "prose_around", "nothing but the JSON value", "'x " + ANSWER[:19] + "'…"),
    ("[" * 101 + "]" * 101, "too_deep", "at most 100 levels", "deeper"),
    ('"\\ud800"', "lone_surrogate", "valid Unicode text", "a lone U+D800"),
    ('\ufeff{"a":1}', "bom", "the JSON itself", "U+FEFF"),
    ("", "empty", "one JSON value", "empty text"),
    (" \n", "empty", "one JSON value", "only whitespace"),
    (b"{}", "not_text", "a string", "bytes"),
    ('{"a":"x\ty"}', "control_character", "an escape", "'\\ty\"}'"),
    ("[" + "9" * 4301 + "]", "number_too_long", "at most 4300 digits", "4301 digits"),
    ("[{}]", "not_an_object", "a JSON object {...}", "an array"),
    ('{"type":5}', "unknown_type", "'tool_call' or 'final_answer'", "the number 5"),
]


@pytest.mark.parametrize(("text", "code", "expected", "found"), EXPECTED_AND_FOUND)
def test_a_refusal_says_what_was_expected_and_what_came_instead(
    text: Any, code: str, expected: str, found: str
) -> None:
    error = rejection(text)
    assert (error.code, error.expected, error.found) == (code, expected, found)


def test_the_message_is_made_from_the_refusals_data() -> None:
    assert "'a'" in rejection('{"a":1,"a":2}').message and "'1e400'" in rejection("[1e400]").message
    assert "4301 digits" in rejection("[" + "9" * 4301 + "]").message
    assert "100 levels" in rejection("[" * 101 + "]" * 101).message and "U+D800" in rejection('"\\ud800"').message
    assert rejection('{"a" 1}').message.endswith(": Expecting ':' delimiter")  # json's own words where no hint fits
    assert rejection(ANSWER + " x").message.endswith(": text after the JSON value; send the JSON alone")
    assert (
        rejection("\ufeff{}").message
        == f"{SYNTAX} at line 1, column 1: the reply starts with a byte-order mark (U+FEFF)"
    )
    surrogate = rejection('"\\udc01"')
    assert surrogate.message == f"{SYNTAX}: lone surrogate U+DC01 cannot be encoded as UTF-8"
    assert dict(surrogate.params) == {"code_point": 0xDC01} and dict(rejection(b"").params) == {"type": "bytes"}
    assert rejection(b"{}").message == f"{SYNTAX}: the reply must be a string, found bytes"
    assert rejection(" ").message == f"{SYNTAX}: the reply is empty"
    missing = rejection('{"type":"final_answer"}')
    assert (
        missing.message
        == "final_answer fields do not match the contract: missing content (expected exactly type, content)"
    )
    assert (missing.code, missing.found) == ("missing_field", "missing content")


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("[ " * 101, "too_deep"),
        ('["",' * 101, "too_deep"),
        ("[[]" + "[" * 100, "too_deep"),
        ('{"a":' * 101, "too_deep"),
        ('{"content":"' + "[" * 300, "cut_off"),  # brackets inside a string are no nesting
        ('["' + "{" * 200 + '", ' + "[" * 50, "cut_off"),
    ],
)
def test_a_deep_cut_off_reply_is_too_deep_when_the_stack_is_raised(text: str, code: str) -> None:
    """Above the default recursion limit json's C decoder could overflow the C stack, so a pre-scan counts the
    brackets outside strings first: a reply cut off 101 levels deep is too deep, not merely cut off."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1001)  # the lowest limit above the default, where the pre-scan starts
    try:
        error = rejection(text)
    finally:
        sys.setrecursionlimit(limit)
    assert error.code == code


class _LyingText(str):
    """A str subclass whose own methods lie or end the program: the parser reads its text, never calls them."""

    def lstrip(self, *args: Any) -> str:
        return "x" * 100

    def strip(self, *args: Any) -> str:
        raise SystemExit(3)

    def __len__(self) -> int:
        return -1


def test_a_str_subclass_is_parsed_by_its_text_not_its_methods() -> None:
    assert parse_json_action(_LyingText('{"type": "final_answer", "content": "x"}')) == FinalAnswer("x")
    with pytest.raises(InvalidModelOutputError) as refused:
        parse_json_action(_LyingText("[]"))
    assert refused.value.code == "not_an_object"
