"""The four-layer parser: a table of every kind of rejection, and the accepted shapes."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from codeagent_lite.json_action_parser import (
    action_json_schema,
    check_action_type,
    check_fields,
    check_json_syntax,
    check_top_level_object,
    parse_json_action,
)
from codeagent_lite.kernel_types import FinalAnswer, ToolCall
from codeagent_lite.model_adapter import InvalidModelOutputError, ValidationLayer

SYNTAX = "model output must be valid JSON"
CUT_OFF = "looks cut off"
ANSWER = '{"type":"final_answer","content":"x"}'
CALL = '{"type":"tool_call","call_id":"c1","tool_name":"read_file","arguments":{"path":"a"}}'


def rejection(text: Any) -> InvalidModelOutputError:
    with pytest.raises(InvalidModelOutputError) as caught:
        parse_json_action(text)
    return caught.value


# ----------------------------------------------------------------------------- layer 1
# (case id, text, words the message must contain, (line, column) or None when there is no single place)
LAYER_1_CASES: list[tuple[str, str, list[str], tuple[int, int] | None]] = [
    ("empty", "", ["empty"], None),
    ("only whitespace", " \n\t ", ["empty"], None),
    ("code fence", '```json\n{"type":"final_answer","content":"x"}\n```', ["code fence"], (1, 1)),
    ("indented tilde fence", '  ~~~\n{"a":1}\n~~~', ["code fence"], (1, 3)),
    ("prose before", 'Sure! Here it is: {"type":"final_answer","content":"x"}', ["text before the JSON value"], (1, 1)),
    ("prose only", "I cannot help with that.", ["not JSON"], (1, 1)),
    ("prose after", ANSWER + "\nHope this helps!", ["text after the JSON value"], (2, 1)),
    ("fence after", ANSWER + "\n```", ["text after the JSON value", "code fence"], (2, 1)),
    ("two values", ANSWER + "\n" + ANSWER, ["more than one JSON value"], (2, 1)),
    ("two values same line", "{} {}", ["more than one JSON value"], (1, 4)),
    ("three values", "1 2 3", ["more than one JSON value"], (1, 3)),
    ("single quotes", "{'type': 'final_answer', 'content': 'x'}", ["single quotes"], (1, 2)),
    ("single-quoted value", "{\"type\": 'final_answer'}", ["single quotes"], (1, 10)),
    ("line comment inside", '{"type":"final_answer", // why\n"content":"x"}', ["comments are not allowed"], (1, 25)),
    ("block comment inside", '{/* c */"type":"final_answer","content":"x"}', ["comments are not allowed"], (1, 2)),
    ("comment after", ANSWER + " // done", ["text after the JSON value", "comments"], (1, 39)),
    ("trailing comma object", '{"type":"final_answer","content":"x",}', ["trailing comma"], (1, 38)),
    ("trailing comma array", '{"a":[1,2,\n]}', ["trailing comma"], (2, 1)),
    ("raw newline in string", '{"type":"final_answer","content":"a\nb"}', ["control character", "U+000A"], (1, 36)),
    ("raw tab in string", '{"a":"x\ty"}', ["control character", "U+0009"], (1, 8)),
    ("NaN", '{"a":NaN}', ["NaN", "not a JSON number"], (1, 6)),
    ("Infinity", '{"a":\n  Infinity}', ["Infinity"], (2, 3)),
    ("-Infinity", '{"a":[1,-Infinity]}', ["-Infinity"], (1, 9)),
    ("1e400", '{"a":1e400}', ["too large for a finite float"], (1, 6)),
    ("-1e400", '{"b":[0, -1e400]}', ["too large for a finite float"], (1, 10)),
    ("1E400", '{"a":1E400}', ["too large for a finite float"], (1, 6)),
    ("duplicate top-level key", '{"type":"final_answer","type":"tool_call"}', ["duplicate key 'type'"], (1, 24)),
    (
        "duplicate key deep inside",
        '{"type":"tool_call","call_id":"c","tool_name":"t","arguments":{"x":[{"p":1,"p":2}]}}',
        ["duplicate key 'p'"],
        (1, 76),
    ),
    ("duplicate key via escape", '{"a":1,"\\u0061":2}', ["duplicate key 'a'"], (1, 8)),
    ("duplicate after a true", '{"a":true,\n"a":false}', ["duplicate key 'a'"], (2, 1)),
    ("duplicate after null", '{"n":null,"f":false,"n":1}', ["duplicate key 'n'"], (1, 21)),
    ("byte-order mark", '\ufeff{"type":"final_answer","content":"x"}', ["byte-order mark"], (1, 1)),
    ("nesting 100000 deep", "[" * 100_000, ["nesting is deeper than 100"], (1, 101)),
    ("nesting 101 deep, closed", "[" * 101 + "]" * 101, ["nesting is deeper than 100"], (1, 101)),
    ("nesting inside an action", '{"type":"final_answer","content":' + "[" * 120 + "]" * 120 + "}", ["nesting"], None),
    ("1e400 run on by a minus", "1e400-", ["too large for a finite float"], (1, 1)),
    ("NaN run on by a letter", '{"a":NaNx}', ["NaN is not a JSON number"], (1, 6)),
    ("integer too long", '{"a":' + "9" * 5000 + "}", ["integer with 5000 digits is too long"], (1, 6)),
    ("negative integer too long", "[-" + "1" * 4301 + "]", ["4301 digits"], (1, 2)),
    ("cut off in a string", '{"type":"final_answer","content":"The answer is', [CUT_OFF, "max_output_tokens"], (1, 48)),
    ("cut off after a value", '{"type":"final_answer","content":"x"', [CUT_OFF], (1, 37)),
    ("cut off in a literal", '{"a":tr', [CUT_OFF], (1, 8)),
    ("cut off after a colon", '{"a":\n', [CUT_OFF], (1, 6)),
    ("cut off in a key", '{"ty', [CUT_OFF], (1, 5)),
    ("cut off, brackets in the string", '{"content":"' + "[" * 300, [CUT_OFF], (1, 313)),
    ("missing colon", '{"a" 1}', ["expected ':' delimiter"], (1, 6)),
    ("unquoted key", "{type: 1}", ["property name"], (1, 2)),
    ("invalid escape", '{"a":"\\x41"}', ["invalid escape"], (1, 7)),
    ("python literal", '{"a": True}', ["expected value"], (1, 7)),
]


@pytest.mark.parametrize(
    ("text", "words", "place"), [case[1:] for case in LAYER_1_CASES], ids=[c[0] for c in LAYER_1_CASES]
)
def test_layer_1_refusals(text: str, words: list[str], place: tuple[int, int] | None) -> None:
    error = rejection(text)
    assert error.layer is ValidationLayer.JSON_SYNTAX
    assert error.message.startswith(SYNTAX)
    for word in words:
        assert word in error.message
    if place is not None:
        assert (error.line, error.column) == place
        assert f"at line {place[0]}, column {place[1]}" in error.message
    assert error.raw_text == text
    assert error.expected and error.found


def test_layer_1_alone_returns_the_value() -> None:
    assert check_json_syntax(' \n{"a": [1, 2.5, "三", null, true]}\t') == {"a": [1, 2.5, "三", None, True]}
    assert check_json_syntax("[]") == []
    assert check_json_syntax('"only a string"') == "only a string"


def test_deepest_accepted_nesting_is_100() -> None:
    assert check_json_syntax("[" * 100 + "]" * 100) is not None
    assert check_json_syntax('{"a":"' + "[" * 500 + '"}') == {"a": "[" * 500}  # brackets in a string are text


@pytest.mark.parametrize("recursion_limit", [None, 10_000_000])
def test_deep_nesting_is_refused_even_with_a_raised_recursion_limit(recursion_limit: int | None) -> None:
    # Run in a child process: the failure this guards against is a crash of the interpreter itself.
    raise_limit = f"sys.setrecursionlimit({recursion_limit})" if recursion_limit else "pass"
    script = (
        "import sys\n"
        "from codeagent_lite import InvalidModelOutputError, parse_json_action\n"
        f"{raise_limit}\n"
        "for text in ('[' * 1_000_000, '{\"a\":' * 300_000 + '1' + '}' * 300_000, '[' * 500_000 + ']' * 500_000):\n"
        "    try:\n"
        "        parse_json_action(text)\n"
        "    except InvalidModelOutputError as error:\n"
        "        print(int(error.layer), error.column)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["1", "101", "1", "501", "1", "101"]


def test_a_raised_recursion_limit_keeps_the_raw_text_refusals() -> None:
    # With the limit raised the depth scan runs before decoding; a fenced reply is still called fenced.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + 5000)
    try:
        error = rejection("```json\n" + CALL + "\n```")
    finally:
        sys.setrecursionlimit(limit)
    assert "wrapped in a markdown code fence" in error.message


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("\n{'a': 1}", 2, 2),
        ("{\n \"a\": 1,\n\n  'b': 2}", 4, 3),
        ('{"a": 1} /* note */', 1, 10),
    ],
    ids=["newline first", "third newline", "one line"],
)
def test_lines_and_columns_count_from_1_as_json_does(text: str, line: int, column: int) -> None:
    error = rejection(text)
    assert (error.line, error.column) == (line, column)
    assert error.message.startswith(f"{SYNTAX} at line {line}, column {column}: ")


@pytest.mark.parametrize("text", ["\x0c", "\u3000 "])
def test_whitespace_json_does_not_know_is_not_an_empty_reply(text: str) -> None:
    # JSON's whitespace is space, tab, newline and carriage return; a form feed is just a character.
    error = rejection(text)
    assert error.message.startswith(f"{SYNTAX} at line 1, column 1: the reply is not JSON, found ")


@pytest.mark.parametrize("text", ["", " \n", b"{}"])
def test_a_refusal_without_one_place_has_no_line_and_column(text: Any) -> None:
    error = rejection(text)
    assert error.line is None
    assert error.column is None
    assert error.message.startswith(f"{SYNTAX}: ")


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
    assert error.message == "model output must be valid JSON: the reply must be a string, found bytes"
    assert (error.expected, error.found) == ("a string", "bytes")


def test_many_small_sibling_arrays_are_not_deep_nesting() -> None:
    # 120 arrays side by side nest two levels deep, not 121: each "]" closes one level again.
    arguments = {f"list_{i}": [i] for i in range(120)}
    text = json.dumps({"type": "tool_call", "call_id": "c", "tool_name": "t", "arguments": arguments})
    assert parse_json_action(text) == ToolCall("c", "t", arguments)
    closed_then_deep = "[" + "[]," * 150 + "[" * 99 + "]" * 99 + "]"
    assert check_json_syntax(closed_then_deep) is not None
    error = rejection("[" + "[]," * 150 + "[" * 100 + "]" * 100 + "]")
    assert error.column == 1 + 450 + 100


def test_a_broken_reply_with_many_small_containers_is_not_called_too_deep() -> None:
    # When decoding fails the text itself is scanned for depth: each "]" and "}" closes a level again.
    error = rejection("[" + "{}," * 120 + "[]," * 120 + "]")
    assert error.message.endswith("trailing comma before ']'")


@pytest.mark.parametrize(
    ("text", "column"),
    [
        ("[" * 50 + "[]" + "[" * 51 + "]" * 101, 103),
        ("[1, 2, 3, " + "[" * 100 + "]" * 101, 110),
        ('{"a":' * 101 + "1" + "}" * 101, 501),
    ],
    ids=["deep after a closed array", "deep after scalars", "objects"],
)
def test_depth_is_counted_across_closed_containers_scalars_and_objects(text: str, column: int) -> None:
    error = rejection(text)
    assert error.message.endswith("nesting is deeper than 100 levels")
    assert error.column == column


@pytest.mark.parametrize(
    ("text", "column", "code"),
    [
        ('{"type":"tool_call","call_id":"\\ud800","tool_name":"t","arguments":{}}', 31, "D800"),
        ('{"type":"final_answer","content":"a\\uDFFFb"}', 34, "DFFF"),
        ('{"type":"final_answer","content":"x","\\ud83d":1}', 38, "D83D"),
        ('["ok \\ud83d\\ude00", "\\udc00\\ud800"]', 21, "DC00"),
        ('{"type":"tool_call","call_id":"\ud800","tool_name":"t","arguments":{}}', 32, "D800"),
        ('{"type":"final_answer","content":"\udfff"', 35, "DFFF"),
    ],
    ids=["escaped high", "escaped low", "escaped key", "reversed pair", "raw high", "raw low, cut off"],
)
def test_a_lone_surrogate_is_refused_at_layer_1(text: str, column: int, code: str) -> None:
    error = rejection(text)
    assert error.layer is ValidationLayer.JSON_SYNTAX
    assert error.message == (
        f"model output must be valid JSON at line 1, column {column}: "
        f"lone surrogate U+{code} cannot be encoded as UTF-8"
    )
    assert error.found == f"a lone U+{code}"
    assert error.expected == "valid Unicode text (a surrogate only as half of an escaped pair)"
    error.message.encode("utf-8")  # the message itself can always be sent on


def test_a_surrogate_pair_and_an_escaped_backslash_are_fine() -> None:
    assert check_json_syntax('"\\\\ud800 \\ud83d\\ude00"') == "\\ud800 \U0001f600"
    assert check_json_syntax('["\\\\ud800", "\\u00e9"]') == ["\\ud800", "é"]


def test_check_fields_refuses_a_type_that_does_not_match_the_contract() -> None:
    with pytest.raises(InvalidModelOutputError) as caught:
        check_fields({"type": "final_answer", "call_id": "c", "tool_name": "t", "arguments": {}}, "tool_call")
    assert caught.value.message == "type must be 'tool_call', found the string 'final_answer'"
    assert caught.value.layer is ValidationLayer.FIELDS


def test_each_refusal_is_a_new_error_carrying_the_raw_text() -> None:
    first, second = rejection("[1]"), rejection("[1]")
    assert first is not second
    assert first.raw_text == "[1]"


# Exact wording of every layer-1 classifier, so a reworded message is a decision, not an accident.
# (case id, text, message, expected, found)
EXACT_LAYER_1: list[tuple[str, str, str, str, str]] = [
    (
        "fence",
        '```json\n{"type":"final_answer","content":"x"}\n```',
        "model output must be valid JSON at line 1, column 1: the reply is wrapped in a markdown code fence; send the bare JSON without ``` lines",  # noqa: E501
        "a JSON value such as {...}",
        '\'```json\\n{"type":"fin\'…',
    ),
    (
        "bom",
        "\ufeff{}",
        "model output must be valid JSON at line 1, column 1: the reply starts with a byte-order mark (U+FEFF)",
        "the JSON value itself",
        "U+FEFF",
    ),
    ("empty", "", "model output must be valid JSON: the reply is empty", "one JSON value", "empty text"),
    ("whitespace", " \n", "model output must be valid JSON: the reply is empty", "one JSON value", "only whitespace"),
    (
        "prose before",
        'Sure! Here it is: {"type":"final_answer","content":"x"}',
        "model output must be valid JSON at line 1, column 1: text before the JSON value; the reply must start with the JSON itself, found 'Sure! Here it is: {\"t'…",  # noqa: E501
        "a JSON value such as {...}",
        "'Sure! Here it is: {\"t'…",
    ),
    (
        "prose only",
        "I cannot help with that.",
        "model output must be valid JSON at line 1, column 1: the reply is not JSON, found 'I cannot help with th'…",
        "a JSON value such as {...}",
        "'I cannot help with th'…",
    ),
    (
        "text after",
        '{"a":1}\nHope this helps!',
        "model output must be valid JSON at line 2, column 1: text after the JSON value",
        "nothing after the JSON value",
        "'Hope this helps!'",
    ),
    (
        "comment after",
        '{"a":1} # done',
        "model output must be valid JSON at line 1, column 9: text after the JSON value (comments are not allowed in JSON)",  # noqa: E501
        "nothing after the JSON value",
        "'# done'",
    ),
    (
        "fence after",
        '{"a":1}\n```',
        "model output must be valid JSON at line 2, column 1: text after the JSON value (a markdown code fence?)",
        "nothing after the JSON value",
        "'```'",
    ),
    (
        "two values",
        '{"a":1} {"b":2}',
        "model output must be valid JSON at line 1, column 9: more than one JSON value; a second one starts here",
        "exactly one JSON value",
        "another value '{\"b\":2}'",
    ),
    (
        "single quote",
        "{'a': 1}",
        "model output must be valid JSON at line 1, column 2: single quotes are not JSON; strings and keys need double quotes",  # noqa: E501
        'a double quote (")',
        "a single quote (')",
    ),
    (
        "hash comment",
        '{"a":1, # why\n"b":2}',
        "model output must be valid JSON at line 1, column 9: comments are not allowed in JSON",
        "JSON",
        "'# why\\n\"b\":2}'",
    ),
    (
        "slash comment",
        '{/* c */"a":1}',
        "model output must be valid JSON at line 1, column 2: comments are not allowed in JSON",
        "JSON",
        "'/* c */\"a\":1}'",
    ),
    (
        "trailing comma",
        "[1,2,\n]",
        "model output must be valid JSON at line 2, column 1: trailing comma before ']'",
        "another item after the comma",
        "']'",
    ),
    (
        "comma then word",
        "[1, x]",
        "model output must be valid JSON at line 1, column 5: expected value, found 'x]'",
        "value",
        "'x]'",
    ),
    (
        "control char",
        '{"a":"x\ty"}',
        "model output must be valid JSON at line 1, column 8: raw control character U+0009 inside a string (escape it, e.g. \\n)",  # noqa: E501
        "an escaped control character",
        "raw U+0009",
    ),
    (
        "bad escape",
        '{"a":"\\x41"}',
        "model output must be valid JSON at line 1, column 7: invalid escape sequence in a string",
        'one of \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX',
        "'\\\\x41\"}'",
    ),
    (
        "block comment after",
        '{"a": 1} /* note */',
        "model output must be valid JSON at line 1, column 10: text after the JSON value (comments are not allowed in JSON)",  # noqa: E501
        "nothing after the JSON value",
        "'/* note */'",
    ),
    (
        "bad unicode escape",
        '{"a":"\\u12x4"}',
        "model output must be valid JSON at line 1, column 8: invalid escape sequence in a string",
        'one of \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX',
        "'u12x4\"'",
    ),
    (
        "cut off",
        '{"a":"b',
        "model output must be valid JSON at line 1, column 8: the reply ends before the JSON value is complete; it looks cut off (usually max_output_tokens was reached)",  # noqa: E501
        "a complete JSON value",
        "the end of the text",
    ),
    (
        "missing colon",
        '{"a" 1}',
        "model output must be valid JSON at line 1, column 6: expected ':' delimiter, found '1}'",
        "':' delimiter",
        "'1}'",
    ),
    (
        "unquoted key",
        "{a: 1}",
        "model output must be valid JSON at line 1, column 2: expected property name in double quotes, found 'a: 1}'",
        "property name in double quotes",
        "'a: 1}'",
    ),
    (
        "python literal",
        '{"a": True}',
        "model output must be valid JSON at line 1, column 7: expected value, found 'True}'",
        "value",
        "'True}'",
    ),
    (
        "NaN",
        '{"a":NaN}',
        "model output must be valid JSON at line 1, column 6: NaN is not a JSON number (non-finite numbers are not allowed)",  # noqa: E501
        "a finite JSON number",
        "'NaN'",
    ),
    (
        "big float",
        "[1e400]",
        "model output must be valid JSON at line 1, column 2: the number '1e400' is too large for a finite float",
        "a finite JSON number",
        "'1e400'",
    ),
    (
        "long int",
        "[99999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999]",
        "model output must be valid JSON at line 1, column 2: an integer with 4301 digits is too long (at most 4300)",
        "a finite JSON number",
        "'999999999999999999999'…",
    ),
    (
        "duplicate",
        '{"a":1,"a":2}',
        "model output must be valid JSON at line 1, column 8: duplicate key 'a' in one object",
        "each key at most once per object",
        "a second 'a'",
    ),
    (
        "deep",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        "model output must be valid JSON at line 1, column 101: nesting is deeper than 100 levels",
        "at most 100 nested objects or arrays",
        "more than 100",
    ),
    (
        "deep string top",
        '"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["',
        "model output must be an object, found the string '[[[[[[[[[[[[[[[[[[[[['…",
        "a JSON object {...}",
        "the string '[[[[[[[[[[[[[[[[[[[[['…",
    ),
]


@pytest.mark.parametrize(
    ("text", "message", "expected", "found"), [case[1:] for case in EXACT_LAYER_1], ids=[c[0] for c in EXACT_LAYER_1]
)
def test_exact_wording_of_each_refusal(text: str, message: str, expected: str, found: str) -> None:
    error = rejection(text)
    assert (error.message, error.expected, error.found) == (message, expected, found)


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
    assert error.layer is ValidationLayer.TOP_LEVEL_OBJECT
    assert error.message == f"model output must be an object, found {found}"


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
    assert error.layer is ValidationLayer.ACTION_TYPE
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
    assert error.layer is ValidationLayer.FIELDS
    assert error.message == exact_message


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
    assert "expected exactly type, " in error.message
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
    assert definitions["ToolCallPayload"]["properties"]["call_id"] == {
        "minLength": 1,
        "title": "Call Id",
        "type": "string",
    }
    assert definitions["FinalAnswerPayload"]["additionalProperties"] is False
    assert [option["$ref"] for option in schema["oneOf"]] == ["#/$defs/ToolCallPayload", "#/$defs/FinalAnswerPayload"]


# The schema is what prompts and grammar-constrained decoding tell a model: every key of it is pinned.
EXPECTED_SCHEMA = {
    "$defs": {
        "FinalAnswerPayload": {
            "additionalProperties": False,
            "description": "The final_answer contract: exactly ``type`` and a non-blank ``content``.",
            "properties": {
                "type": {"const": "final_answer", "title": "Type", "type": "string"},
                "content": {"minLength": 1, "title": "Content", "type": "string"},
            },
            "required": ["type", "content"],
            "title": "FinalAnswerPayload",
            "type": "object",
        },
        "ToolCallPayload": {
            "additionalProperties": False,
            "description": "The tool_call contract: exactly these four fields, strict types, nothing coerced.",
            "properties": {
                "type": {"const": "tool_call", "title": "Type", "type": "string"},
                "call_id": {"minLength": 1, "title": "Call Id", "type": "string"},
                "tool_name": {"minLength": 1, "title": "Tool Name", "type": "string"},
                "arguments": {"additionalProperties": True, "title": "Arguments", "type": "object"},
            },
            "required": ["type", "call_id", "tool_name", "arguments"],
            "title": "ToolCallPayload",
            "type": "object",
        },
    },
    "discriminator": {
        "mapping": {"final_answer": "#/$defs/FinalAnswerPayload", "tool_call": "#/$defs/ToolCallPayload"},
        "propertyName": "type",
    },
    "oneOf": [{"$ref": "#/$defs/ToolCallPayload"}, {"$ref": "#/$defs/FinalAnswerPayload"}],
}


def test_the_schema_is_exactly_what_models_are_told() -> None:
    assert action_json_schema() == EXPECTED_SCHEMA


def test_field_set_message_names_five_unexpected_fields_then_counts_the_rest() -> None:
    extra = {f"x{i}": i for i in range(7)}
    error = rejection(json.dumps({"type": "final_answer", **extra}))
    assert error.message == (
        "final_answer fields do not match the contract: missing content; "
        "unexpected 'x0', 'x1', 'x2', 'x3', 'x4' and 2 more (expected exactly type, content)"
    )
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
