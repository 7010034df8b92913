"""Kernel types: frozen values with equality, readable reprs, and blank strings refused where they mean nothing."""

from __future__ import annotations

import dataclasses

import pytest

from codeagent_lite.kernel_types import FinalAnswer, Message, MessageRole, ToolCall, ToolResult, ToolSpec


def test_message_role_values_are_the_provider_strings() -> None:
    assert [role.value for role in MessageRole] == ["system", "user", "assistant"]
    assert MessageRole.USER == "user"


def test_message_accepts_the_plain_role_string_and_normalises_it() -> None:
    message = Message("user", "hi")  # type: ignore[arg-type]
    assert message.role is MessageRole.USER
    assert message == Message(MessageRole.USER, "hi")


def test_message_refuses_an_unknown_role() -> None:
    with pytest.raises(ValueError):
        Message("tool", "hi")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("build", "field_name"),
    [
        (lambda text: Message(MessageRole.USER, text), "content"),
        (lambda text: ToolCall(call_id=text, tool_name="read_file"), "call_id"),
        (lambda text: ToolCall(call_id="call_1", tool_name=text), "tool_name"),
        (lambda text: ToolResult(call_id=text, content="ok"), "call_id"),
        (lambda text: FinalAnswer(text), "content"),
        (lambda text: ToolSpec(name=text, description="reads a file"), "name"),
        (lambda text: ToolSpec(name="read_file", description=text), "description"),
    ],
)
@pytest.mark.parametrize("blank", ["", " ", "\n\t "])
def test_blank_strings_are_refused_with_the_field_name(build, field_name: str, blank: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError) as caught:
        build(blank)
    assert str(caught.value) == f"{field_name} must not be blank"


def test_tool_result_content_may_be_blank() -> None:
    # An empty file is a real observation: a tool result's content may be blank, ids and names may not.
    assert ToolResult(call_id="call_1", content="").content == ""
    assert ToolResult(call_id="call_1", content="  ").content == "  "


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Message(MessageRole.USER, 42), "Message.content must be a string, found int"),
        (lambda: ToolCall(call_id=1, tool_name="t"), "ToolCall.call_id must be a string, found int"),
        (lambda: ToolCall(call_id="c", tool_name=None), "ToolCall.tool_name must be a string, found NoneType"),
        (lambda: ToolCall("c", "t", []), "ToolCall.arguments must be a dict, found list"),
        (lambda: ToolCall("c", "t", {1: "x"}), "ToolCall.arguments keys must be strings, found int"),
        (lambda: ToolResult(call_id=1, content="x"), "ToolResult.call_id must be a string, found int"),
        (lambda: ToolResult(call_id="c", content=b"x"), "ToolResult.content must be a string, found bytes"),
        (lambda: ToolResult("c", "x", is_error=1), "ToolResult.is_error must be a bool, found int"),
        (lambda: FinalAnswer(None), "FinalAnswer.content must be a string, found NoneType"),
        (lambda: ToolSpec(name=1, description="d"), "ToolSpec.name must be a string, found int"),
        (lambda: ToolSpec(name="t", description=2.5), "ToolSpec.description must be a string, found float"),
        (lambda: ToolSpec("t", "d", "{}"), "ToolSpec.input_schema must be a dict, found str"),
        (lambda: ToolSpec("t", "d", {1: "x"}), "ToolSpec.input_schema keys must be strings, found int"),
    ],
)
def test_wrong_types_are_type_errors_naming_the_type_and_field(build, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError) as caught:
        build()
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("value", "field_name", "new_value"),
    [
        (Message(MessageRole.USER, "hi"), "content", "bye"),
        (ToolCall(call_id="c", tool_name="t", arguments={}), "call_id", "d"),
        (ToolResult(call_id="c", content="ok"), "is_error", True),
        (FinalAnswer("42"), "content", "43"),
        (ToolSpec(name="t", description="d"), "name", "u"),
    ],
)
def test_values_are_frozen(value: object, field_name: str, new_value: object) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field_name, new_value)


def test_equality_is_by_value() -> None:
    assert ToolCall("c", "t", {"path": "a"}) == ToolCall("c", "t", {"path": "a"})
    assert ToolCall("c", "t", {"path": "a"}) != ToolCall("c", "t", {"path": "b"})
    assert ToolResult("c", "x", is_error=True) != ToolResult("c", "x", is_error=False)
    assert FinalAnswer("42") == FinalAnswer("42")
    assert FinalAnswer("42") != Message(MessageRole.ASSISTANT, "42")


def test_tool_call_arguments_are_copied_so_history_cannot_change_later() -> None:
    arguments = {"path": "a.txt", "options": {"lines": [1, 2]}}
    call = ToolCall("call_1", "read_file", arguments)
    arguments["options"]["lines"].append(3)  # type: ignore[attr-defined]
    arguments["path"] = "b.txt"
    assert call.arguments == {"path": "a.txt", "options": {"lines": [1, 2]}}


def test_defaults() -> None:
    assert ToolCall("c", "t").arguments == {}
    assert ToolResult("c", "x").is_error is False
    assert ToolSpec("t", "d").input_schema == {"type": "object"}


def test_reprs_read_like_the_code_that_builds_them() -> None:
    assert repr(Message(MessageRole.SYSTEM, "be brief")) == "Message(role='system', content='be brief')"
    assert repr(Message("user", "a\nb")) == "Message(role='user', content='a\\nb')"  # type: ignore[arg-type]
    assert (
        repr(ToolCall("c1", "read_file", {"path": "a"}))
        == "ToolCall(call_id='c1', tool_name='read_file', arguments={'path': 'a'})"
    )
    assert repr(ToolResult("c1", "", is_error=True)) == "ToolResult(call_id='c1', content='', is_error=True)"
    assert repr(FinalAnswer("好")) == "FinalAnswer(content='好')"


def test_arguments_are_copied_deeply_so_history_cannot_change_later() -> None:
    arguments = {"paths": ["a", {"b": [1, 2.5, True, None]}]}
    call = ToolCall("c", "t", arguments)
    arguments["paths"][1]["b"].append("changed")  # type: ignore[index, union-attr]
    assert call.arguments == {"paths": ["a", {"b": [1, 2.5, True, None]}]}


def test_values_that_are_not_json_are_copied_deeply_too() -> None:
    # A program (not a parser) may pass a tuple or a set: it is kept, as its own deep copy.
    inner = [1]
    call = ToolCall("c", "t", {"pair": ("a", inner), "tags": {"x"}})
    inner.append(2)
    assert call.arguments == {"pair": ("a", [1]), "tags": {"x"}}
