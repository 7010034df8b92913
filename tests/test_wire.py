"""The one codec for values and exceptions crossing a sandbox's channel (verify's probe and the grader's child).

What the child sends is untrusted: only classes the reader names are built, nesting is bounded, unknown shapes
are refused; what the parent sends arrives whole when it asks for the grader's caps.
"""

from __future__ import annotations

import json
import time

import pytest

from codeagent_lite import kernel_types, model_adapter
from codeagent_lite.kernel_types import Message, MessageRole, ToolCall
from codeagent_lite.model_adapter import InvalidModelOutputError, TokenUsage, ValidationLayer
from codeagent_lite.workbook.wire import GRADER_CAPS, MAX_DEPTH, Opaque, Record, WireError, classes_of, decode, encode

CLASSES = classes_of(kernel_types, model_adapter)


def _across(value: object) -> object:
    """Encode, send as JSON text (as the channel does), decode."""
    return decode(json.loads(json.dumps(encode(value, caps=GRADER_CAPS))), CLASSES)


def test_kernel_values_and_builtins_cross_as_they_are() -> None:
    values = [
        Message(MessageRole.USER, "你好"),
        ToolCall("c", "read_file", {"path": "a.md", "n": [1, 2.5, None, True]}),
        TokenUsage(3, 4),
        ("a", 1),
        {1: "x", "k": (None,)},
        ...,
        ValidationLayer.FIELDS,
    ]
    assert [_across(value) for value in values] == values


def test_an_exception_crosses_with_its_fields_and_cause() -> None:
    try:
        try:
            raise InvalidModelOutputError("bad", layer=ValidationLayer.JSON_SYNTAX, expected="an object", found="[")
        except InvalidModelOutputError as inner:
            raise InvalidModelOutputError("outer", layer=ValidationLayer.FIELDS).with_usage(TokenUsage(1, 2)) from inner
    except InvalidModelOutputError as error:
        crossed = _across(error)
    assert isinstance(crossed, InvalidModelOutputError)
    assert (crossed.layer, crossed.usage) == (ValidationLayer.FIELDS, TokenUsage(1, 2))
    cause = crossed.__cause__
    assert isinstance(cause, InvalidModelOutputError)
    assert (cause.message, cause.expected, cause.found) == ("bad", "an object", "[")
    key_error = _across(KeyError("k"))
    assert type(key_error) is KeyError


def test_an_exception_is_rebuilt_from_its_arguments_and_says_what_it_said() -> None:
    for error in (KeyError("k"), KeyError(1), ValueError(), OSError(2, "gone"), ValueError("a", 2)):
        crossed = _across(error)
        assert (type(crossed), crossed.args, str(crossed)) == (type(error), error.args, str(error))
    assert encode(KeyError("k"))["message"] == "'k'"  # what verify shows a learner: the error as Python prints it


def test_an_error_whose_builtin_refuses_its_crossed_arguments_still_says_what_it_said() -> None:
    try:
        b"\xff".decode()
    except UnicodeDecodeError as error:  # its bytes argument crosses as an Opaque, which its constructor refuses
        crossed = _across(error)
        assert isinstance(crossed, UnicodeDecodeError)
        assert str(crossed) == str(error)


class _Hostile(Exception):
    @property
    def args(self) -> tuple[object, ...]:  # type: ignore[override]
        raise RuntimeError("no args for you")

    @property
    def __cause__(self) -> BaseException | None:  # type: ignore[override]
        raise RuntimeError("no cause either")


def test_a_hostile_error_is_still_described_by_what_it_says() -> None:
    crossed = _across(_Hostile("my message"))
    assert type(crossed).__name__ == "_Hostile" and str(crossed) == "my message"


def test_an_error_that_holds_itself_many_times_costs_a_line_each() -> None:
    error = ValueError("x")
    error.args = (error,) * 60
    error.layer = error  # type: ignore[attr-defined]
    sent = json.dumps(encode(error))
    assert len(sent) < 200_000  # a power of 60 before: minutes and megabytes
    assert isinstance(decode(json.loads(sent), CLASSES), ValueError)


def test_only_named_classes_are_built() -> None:
    forged = {"$obj": "subprocess.Popen", "fields": {"args": ["sh", "-c", "id"]}}
    assert isinstance(decode(forged, CLASSES), Record)
    error = decode({"$error": "os.system", "mro": ["builtins.ValueError"], "message": "m", "attrs": {}}, CLASSES)
    assert isinstance(error, ValueError) and type(error).__name__ == "system"
    assert isinstance(decode({"$other": "x.Y", "repr": "<Y>"}, CLASSES), Opaque)


@pytest.mark.parametrize(
    "data",
    [{"$exec": "print(1)"}, {"no tag": 1}, {}, {"$dict": [[1]]}, {"$tuple": "not a list"}, {"$dict": [[[], 1]]}],
)
def test_unknown_or_broken_shapes_are_refused(data: object) -> None:
    with pytest.raises(WireError):
        decode(data, CLASSES)


def test_nesting_past_the_bound_is_refused_not_recursed() -> None:
    data: object = 1
    for _ in range(MAX_DEPTH + 5):
        data = [data]
    with pytest.raises(WireError):
        decode(data, CLASSES)
    deep: object = 1
    for _ in range(10_000):
        deep = [deep]
    assert "$deep" in json.dumps(encode(deep))  # encoding a hostile value stops too


def test_verifys_caps_cut_and_the_graders_keep_a_long_text_whole() -> None:
    text = '{"a": ' * 20000
    assert len(encode(text)) == 4000
    assert encode(text, caps=GRADER_CAPS) == text


def test_a_value_sharing_its_parts_is_cut_at_the_node_budget_not_expanded() -> None:
    """A learner's list holding one list 20 times, 5 levels deep, is 20**5 nodes when walked: the child must answer
    at once, with what it left out marked, and the parent must say so."""
    shared: object = [1]
    for _ in range(5):
        shared = [shared] * 20
    started = time.monotonic()
    encoded = encode(shared)
    assert time.monotonic() - started < 1.0
    text = json.dumps(encoded)
    assert len(text) < 200_000 and "too many values" in text
    assert "too many values" in repr(decode(json.loads(text), CLASSES))
    assert "too many values" not in json.dumps(encode([[1] * 50] * 50))  # a value within the budget is whole
