"""Outbound direction: history items become provider messages, byte for byte like the series."""

from __future__ import annotations

import json
from typing import Any

import pytest

from codeagent_lite.json_text_messages import ProviderMessage, build_provider_messages, encode_json
from codeagent_lite.kernel_types import FinalAnswer, Message, MessageRole, ToolCall, ToolResult


def reference_encoding(value: Any) -> str:
    # The encoding written out independently of the package. The chapter calls _encode_json
    # without showing its body; these json.dumps arguments are our reading of it.
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


@pytest.mark.parametrize("role", list(MessageRole))
def test_a_message_keeps_its_role_value_and_content(role: MessageRole) -> None:
    (message,) = build_provider_messages([Message(role, "请读取 README.md")])
    assert message == ProviderMessage(role=role.value, content="请读取 README.md")
    assert type(message.role) is str


def test_a_tool_call_becomes_an_assistant_json_message() -> None:
    call = ToolCall(call_id="call_7", tool_name="read_file", arguments={"path": "README.md", "limit": 10})
    (message,) = build_provider_messages([call])
    assert message.role == "assistant"
    assert message.content == (
        '{"arguments":{"limit":10,"path":"README.md"},"call_id":"call_7","tool_name":"read_file","type":"tool_call"}'
    )
    assert message.content == reference_encoding(
        {"type": "tool_call", "call_id": "call_7", "tool_name": "read_file", "arguments": call.arguments}
    )


@pytest.mark.parametrize("is_error", [False, True])
def test_a_tool_result_becomes_a_user_json_message(is_error: bool) -> None:
    result = ToolResult(call_id="call_7", content="第一行\n第二行", is_error=is_error)
    (message,) = build_provider_messages([result])
    assert message.role == "user"
    assert message.content == reference_encoding(
        {"type": "tool_result", "call_id": "call_7", "content": "第一行\n第二行", "is_error": is_error}
    )
    assert json.loads(message.content)["is_error"] is is_error


def test_chinese_text_is_kept_as_is_not_escaped() -> None:
    (message,) = build_provider_messages([ToolCall("c", "write_file", {"content": "你好，世界"})])
    assert "你好，世界" in message.content
    assert "\\u" not in message.content


def test_call_id_is_preserved_exactly() -> None:
    odd_id = " call-ß/7 ✓ "
    messages = build_provider_messages([ToolCall(odd_id, "t", {}), ToolResult(odd_id, "ok")])
    assert [json.loads(m.content)["call_id"] for m in messages] == [odd_id, odd_id]


def test_a_whole_history_converts_in_order() -> None:
    history = [
        Message(MessageRole.SYSTEM, "You are a code agent."),
        Message(MessageRole.USER, "Read README.md"),
        ToolCall("call_1", "read_file", {"path": "README.md"}),
        ToolResult("call_1", "# Title"),
        Message(MessageRole.ASSISTANT, "Done."),
    ]
    messages = build_provider_messages(history)
    assert isinstance(messages, tuple)
    assert [m.role for m in messages] == ["system", "user", "assistant", "user", "assistant"]
    assert build_provider_messages([]) == ()


def test_non_standard_numbers_are_refused_when_encoding() -> None:
    with pytest.raises(ValueError):
        build_provider_messages([ToolCall("c", "t", {"x": float("nan")})])
    with pytest.raises(ValueError):
        encode_json({"x": float("inf")})


@pytest.mark.parametrize(
    ("item", "type_name"),
    [(FinalAnswer("42"), "FinalAnswer"), ("hello", "str"), ({"role": "user"}, "dict"), (None, "NoneType")],
)
def test_anything_else_is_a_type_error_naming_its_type(item: object, type_name: str) -> None:
    with pytest.raises(TypeError, match=type_name):
        build_provider_messages([item])  # type: ignore[list-item]
