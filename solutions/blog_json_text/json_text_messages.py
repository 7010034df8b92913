"""Outbound: Kernel history -> ProviderMessage (the blog's section 二、消息转换)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from codeagent_lite.kernel_types import HistoryItem, Message, ToolCall, ToolResult


@dataclass(frozen=True)
class ProviderMessage:
    """One message as a text model reads it: a role string and plain text."""

    role: str
    content: str


def _encode_json(value: Any) -> str:
    # Sorted and compact: the same history always gives the same prompt bytes.
    # ensure_ascii=False keeps Chinese readable; allow_nan=False refuses what is not JSON.
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


def build_provider_messages(history: list[HistoryItem]) -> list[ProviderMessage]:
    """One ProviderMessage per history item, in order; call_id is copied untouched."""
    messages = []
    for item in history:
        if isinstance(item, Message):
            messages.append(ProviderMessage(role=item.role.value, content=item.content))
        elif isinstance(item, ToolCall):
            payload = {
                "type": "tool_call",
                "call_id": item.call_id,
                "tool_name": item.tool_name,
                "arguments": item.arguments,
            }
            messages.append(ProviderMessage(role="assistant", content=_encode_json(payload)))
        elif isinstance(item, ToolResult):
            payload = {
                "type": "tool_result",
                "call_id": item.call_id,
                "content": item.content,
                "is_error": item.is_error,
            }
            messages.append(ProviderMessage(role="user", content=_encode_json(payload)))
        else:
            raise TypeError(f"expected Message, ToolCall or ToolResult, found {type(item).__name__}")
    return messages
