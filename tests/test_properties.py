"""Property tests: the parser never crashes, round-trips what the encoder writes, and refuses every near miss."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeagent_lite.action_schema import action_json_schema
from codeagent_lite.json_action_parser import check_fields, parse_json_action
from codeagent_lite.json_text_messages import build_provider_messages, encode_json
from codeagent_lite.kernel_types import FinalAnswer, ToolCall
from codeagent_lite.model_adapter import InvalidModelOutputError, ValidationLayer

# Quick enough for 2 shared cores; deadline off because a shared machine makes single examples jitter.
# `make mutation` (mutmut sets MUTANT_UNDER_TEST) repeats these tests for hundreds of mutants,
# so it draws fewer examples: a mutant the properties catch is usually caught within the first few.
settings.register_profile(
    "codeagent_core",
    max_examples=40 if os.environ.get("MUTANT_UNDER_TEST") else 200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
PROFILE = settings.get_profile("codeagent_core")
# mutmut calls each mutated function through a trampoline, a few more frames per call: a test that counts the
# caller's stack frames cannot hold there. Its mutants are caught by running it on the code by hand.
COUNTS_FRAMES = pytest.mark.skipif("mutmut.mutation.trampoline" in sys.modules, reason="mutmut adds frames")

ACTION_TYPES = ("tool_call", "final_answer")

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=20,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=6)
non_blank = st.text(min_size=1).filter(lambda text: text.strip() != "")


@st.composite
def typed_objects(draw: st.DrawFn) -> dict[str, Any]:
    """Objects that reach layers 3 and 4: a "type" drawn from the two action types, other keys arbitrary."""
    obj = draw(json_objects)
    obj["type"] = draw(st.sampled_from(ACTION_TYPES))
    return obj


tool_calls = st.builds(ToolCall, call_id=non_blank, tool_name=non_blank, arguments=json_objects)
final_answers = st.builds(FinalAnswer, content=non_blank)


def outcome(text: str) -> ToolCall | FinalAnswer | InvalidModelOutputError:
    """Anything but InvalidModelOutputError propagates and fails the property."""
    try:
        return parse_json_action(text)
    except InvalidModelOutputError as error:
        assert error.layer in ValidationLayer
        assert error.raw_text is text
        return error


@PROFILE
@given(st.text())
def test_arbitrary_text_only_ever_raises_invalid_model_output(text: str) -> None:
    outcome(text)


# Pieces of JSON and of its usual mistakes, glued in random order.
JSON_PIECES = [*"{}[],:\"\\ \n\t01-.eE+5'/*#`x\ufeff", '"type"', '"tool_call"', '"final_answer"', '"content"']
JSON_PIECES += ['"a"', '"\\u0061"', "true", "false", "null", "tru", "1e400", "NaN", "-Infinity", "```", "//"]


@PROFILE
@given(st.lists(st.sampled_from(JSON_PIECES) | st.characters(), max_size=40).map("".join))
def test_json_shaped_noise_only_ever_raises_invalid_model_output(text: str) -> None:
    outcome(text)


@PROFILE
@given(json_values | typed_objects(), st.sampled_from([None, 2]))
def test_arbitrary_json_only_ever_raises_invalid_model_output(value: Any, indent: int | None) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=indent is None)
    result = outcome(text)
    if isinstance(result, InvalidModelOutputError):
        # A json.dumps text is valid JSON: only depth could stop it at layer 1, and these values are shallow.
        assert result.layer is not ValidationLayer.JSON_SYNTAX


# Raw key spellings: "\\u0061" is another way to write "a", so it duplicates it.
KEY_SPELLINGS = ['"a"', '"\\u0061"', '"b"', '"type"', '"content"']


def _object_text(pairs: list[tuple[str, tuple[str, bool]]]) -> tuple[str, bool]:
    keys = [json.loads(key) for key, _ in pairs]
    text = "{" + ",".join(f"{key}:{value}" for key, (value, _) in pairs) + "}"
    return text, len(set(keys)) < len(keys) or any(inner for _, (_, inner) in pairs)


def _array_text(items: list[tuple[str, bool]]) -> tuple[str, bool]:
    return "[" + ",".join(text for text, _ in items) + "]", any(inner for _, inner in items)


# JSON texts written pair by pair, so objects can repeat a key at any depth: (text, has a duplicate key).
texts_with_pairs = st.recursive(
    json_scalars.map(lambda value: (json.dumps(value), False)),
    lambda children: (
        st.lists(children, max_size=4).map(_array_text)
        | st.lists(st.tuples(st.sampled_from(KEY_SPELLINGS), children), max_size=4).map(_object_text)
    ),
    max_leaves=15,
)


@PROFILE
@given(texts_with_pairs)
def test_duplicate_keys_at_any_depth_are_refused_at_layer_1(case: tuple[str, bool]) -> None:
    text, has_duplicate = case
    result = outcome(text)
    if has_duplicate:
        assert isinstance(result, InvalidModelOutputError)
        assert result.layer is ValidationLayer.JSON_SYNTAX
        assert "duplicate key" in result.message
    else:
        assert getattr(result, "layer", None) is not ValidationLayer.JSON_SYNTAX


@PROFILE
@given(json_values)
def test_text_around_a_json_value_is_never_accepted(value: Any) -> None:
    text = json.dumps(value)
    for wrapped in (f"```json\n{text}\n```", f"Here you go: {text}", f"{text} Done.", f"{text}\n{text}"):
        assert outcome(wrapped).layer is ValidationLayer.JSON_SYNTAX  # type: ignore[union-attr]


@PROFILE
@given(tool_calls)
def test_every_encoded_tool_call_parses_back_equal(call: ToolCall) -> None:
    (message,) = build_provider_messages([call])
    assert message.role == "assistant"
    assert parse_json_action(message.content) == call


@PROFILE
@given(final_answers)
def test_every_encoded_final_answer_parses_back_equal(answer: FinalAnswer) -> None:
    text = encode_json({"type": "final_answer", "content": answer.content})
    assert parse_json_action(text) == answer


@st.composite
def valid_actions(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        call = draw(tool_calls)
        return {"type": "tool_call", "call_id": call.call_id, "tool_name": call.tool_name, "arguments": call.arguments}
    return {"type": "final_answer", "content": draw(final_answers).content}


def wrong_type_for(field_name: str) -> st.SearchStrategy[Any]:
    """A JSON value of a different kind than the contract wants for this field."""
    if field_name == "arguments":
        return json_scalars | st.lists(json_values, max_size=3)
    return st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | json_objects


@PROFILE
@given(valid_actions(), st.data())
def test_removing_one_field_is_refused(action: dict[str, Any], data: st.DataObject) -> None:
    field_name = data.draw(st.sampled_from(sorted(action)))
    del action[field_name]
    error = outcome(encode_json(action))
    assert isinstance(error, InvalidModelOutputError)
    expected = ValidationLayer.ACTION_TYPE if field_name == "type" else ValidationLayer.FIELDS
    assert error.layer is expected
    if expected is ValidationLayer.FIELDS:
        assert "fields do not match the contract" in error.message
        assert f"missing {field_name}" in error.message


@PROFILE
@given(valid_actions(), st.text(max_size=12), json_values)
def test_adding_one_field_is_refused_at_layer_4(action: dict[str, Any], name: str, value: Any) -> None:
    if name in action:
        name = "_" + name + "_extra"
    action[name] = value
    error = outcome(encode_json(action))
    assert isinstance(error, InvalidModelOutputError)
    assert error.layer is ValidationLayer.FIELDS
    assert "unexpected" in error.message


@PROFILE
@given(valid_actions(), st.data())
def test_changing_one_fields_type_is_refused(action: dict[str, Any], data: st.DataObject) -> None:
    field_name = data.draw(st.sampled_from(sorted(action)))
    action[field_name] = data.draw(wrong_type_for(field_name))
    error = outcome(encode_json(action))
    assert isinstance(error, InvalidModelOutputError)
    if field_name == "type":
        assert error.layer is ValidationLayer.ACTION_TYPE
    else:
        assert error.layer is ValidationLayer.FIELDS
        assert error.message.startswith(f"{field_name} must be ")


# --------------------------------------------------------------------------- layer 4 and the JSON Schema agree

jsonschema = pytest.importorskip("jsonschema")  # installed with JupyterLab, which the dev extra brings
SCHEMA_VALIDATOR = jsonschema.Draft202012Validator(action_json_schema())
blank_or_any = st.sampled_from(["", " ", "\n\t"]) | json_values


@st.composite
def near_actions(draw: st.DrawFn) -> dict[str, Any]:
    """A valid action, then perhaps a field dropped, a field added, or a value replaced by any JSON value."""
    if draw(st.booleans()):
        obj: dict[str, Any] = {"type": "tool_call", "call_id": draw(non_blank), "tool_name": draw(non_blank)}
        obj["arguments"] = draw(json_objects)
    else:
        obj = {"type": "final_answer", "content": draw(non_blank)}
    change = draw(st.sampled_from(["none", "drop", "add", "replace"]))
    names = sorted(name for name in obj if name != "type")
    if change == "drop":
        del obj[draw(st.sampled_from(names))]
    elif change == "add":
        obj[draw(st.text(max_size=8).filter(lambda name: name not in obj))] = draw(json_values)
    elif change == "replace":
        obj[draw(st.sampled_from(names))] = draw(blank_or_any)
    return obj


@PROFILE
@given(near_actions() | typed_objects())
def test_layer_4_and_the_json_schema_agree_except_on_blank_strings(obj: dict[str, Any]) -> None:
    schema_accepts = SCHEMA_VALIDATOR.is_valid(obj)
    try:
        check_fields(obj, obj["type"])
    except InvalidModelOutputError as error:
        assert error.layer is ValidationLayer.FIELDS
        # JSON Schema can say "at least one character" but not "not only whitespace": the one rule that is ours.
        assert not schema_accepts or error.message.split(",")[0].endswith("must not be blank"), error.message
    else:
        assert schema_accepts, obj


# ----------------------------------------------------------- the caller's stack, the interpreter's limits
# (issue 18: the parser raises nothing but InvalidModelOutputError, however deep the caller's stack and whatever
# sys.set_int_max_str_digits says)

STACK_SAMPLES = [
    '{"type":"tool_call","call_id":"c","tool_name":"t","arguments":{"a":[{"b":[1,2,{"c":null}]}]}}',
    '{"type":"final_answer","content":"x"}',
    '```json\n{"type":"final_answer","content":"x"}\n```',
    "[" * 50 + "]" * 50,
    "[" * 5000,
    '{"a":1,"a":2}',
    '{"type":"tool_call"}',
    '{"type":"final_answer","content":"\\ud800"}',
]


def _frames_left() -> int:
    """How many more calls the interpreter allows from here (measured, since C calls count too)."""
    try:
        return 1 + _frames_left()
    except RecursionError:
        return 0


def _descend(frames: int, text: str) -> object:
    if frames > 0:
        return _descend(frames - 1, text)
    try:
        return parse_json_action(text)
    except InvalidModelOutputError as error:
        return error


def _parse_with_headroom(headroom: int, text: str) -> object:
    """``parse_json_action(text)`` called with ``headroom`` frames left: its own, and one for what it calls."""
    return _descend(_frames_left() - headroom, text)


@COUNTS_FRAMES
@settings(max_examples=150, deadline=None)
@given(st.integers(2, 80), st.sampled_from(STACK_SAMPLES) | st.text(max_size=60))
def test_however_deep_the_callers_stack_only_the_parsers_error_comes_out(headroom: int, text: str) -> None:
    outcome = _parse_with_headroom(headroom, text)  # a RecursionError or any other exception fails the test
    assert isinstance(outcome, (ToolCall, FinalAnswer, InvalidModelOutputError))
    if isinstance(outcome, InvalidModelOutputError) and outcome.code == "too_deep":
        assert outcome.layer is ValidationLayer.JSON_SYNTAX and outcome.raw_text == text


@COUNTS_FRAMES
@settings(max_examples=60, deadline=None)
@given(st.integers(50, 120), st.sampled_from(STACK_SAMPLES[:2]))
def test_with_50_frames_of_headroom_a_valid_reply_still_parses(headroom: int, text: str) -> None:
    assert _parse_with_headroom(headroom, text) == parse_json_action(text)


@settings(max_examples=120, deadline=None)
@given(st.sampled_from([0, 640, 1000, 4300, 5000, 10_000]), st.integers(1, 6000), st.booleans())
def test_whatever_the_int_digit_limit_a_long_integer_is_refused_at_layer_1(
    limit: int, digits: int, minus: bool
) -> None:
    number = ("-" if minus else "") + "7" * digits
    text = '{"type":"tool_call","call_id":"c","tool_name":"t","arguments":{"n":' + number + "}}"
    allowed = min(4300, limit or 4300)
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(limit)
    try:
        outcome = parse_json_action(text) if digits <= allowed else None
        if outcome is None:
            with pytest.raises(InvalidModelOutputError) as caught:  # never a ValueError of int()'s own
                parse_json_action(text)
            assert (caught.value.layer, caught.value.code) == (ValidationLayer.JSON_SYNTAX, "number_too_long")
            assert dict(caught.value.params) == {"digits": digits, "limit": allowed}
    finally:
        sys.set_int_max_str_digits(before)
    if outcome is not None:
        assert isinstance(outcome, ToolCall) and outcome.arguments["n"] == int(number)


@pytest.mark.parametrize("recursion_limit", [1000, 10_000, 1_000_000])
def test_deep_nesting_is_refused_at_any_recursion_limit(recursion_limit: int) -> None:
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(recursion_limit)
    try:
        for text in ("[" * 200_000, "[" * 101 + "]" * 101, '{"a":' * 101 + "1" + "}" * 101):
            with pytest.raises(InvalidModelOutputError) as caught:
                parse_json_action(text)
            assert caught.value.code == "too_deep"
        with pytest.raises(InvalidModelOutputError) as caught:  # brackets in a string cut off are no nesting
            parse_json_action('{"a":"' + "[" * 300)
        assert caught.value.code == "cut_off"
        assert check_fields_ok("[" * 100 + "]" * 100)
    finally:
        sys.setrecursionlimit(before)


def check_fields_ok(text: str) -> bool:
    """The deepest nesting accepted (100) passes layer 1; it is refused later, at layer 2, as an array."""
    with pytest.raises(InvalidModelOutputError) as caught:
        parse_json_action(text)
    return caught.value.layer is ValidationLayer.TOP_LEVEL_OBJECT
