"""Outbound: Kernel history -> messages a plain-text model can read; with no tool channel, tool traffic is JSON."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .kernel_types import HistoryItem, Message, MessageRole, ToolCall, ToolResult

__all__ = ["ProviderMessage", "build_provider_messages", "encode_json"]


@dataclass(frozen=True, slots=True)
class ProviderMessage:
    """A message in the provider's terms: a role string and plain text."""

    role: str
    content: str


def encode_json(value: Any) -> str:
    """Our ``_encode_json`` (the chapter calls it but does not show it).

    Sorted keys and no spaces: the same history gives the same prompt bytes. ``ensure_ascii=False`` keeps
    Chinese readable and cheap in tokens. ``allow_nan=False``: ``NaN`` is not JSON, so our parser would refuse it.
    """
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _convert(item: HistoryItem) -> ProviderMessage:
    if isinstance(item, Message):
        return ProviderMessage(role=item.role.value, content=item.content)
    if isinstance(item, ToolCall):
        # The model itself asked for this call earlier, so it is replayed as the assistant.
        return ProviderMessage(
            role=MessageRole.ASSISTANT.value,
            content=encode_json(
                {
                    "type": "tool_call",
                    "call_id": item.call_id,
                    "tool_name": item.tool_name,
                    "arguments": item.arguments,
                }
            ),
        )
    if isinstance(item, ToolResult):
        # There is no "tool" role in a plain text chat, so observations come from the user side.
        return ProviderMessage(
            role=MessageRole.USER.value,
            content=encode_json(
                {
                    "type": "tool_result",
                    "call_id": item.call_id,
                    "content": item.content,
                    "is_error": item.is_error,
                }
            ),
        )
    raise TypeError(
        f"cannot convert {type(item).__name__} to a provider message; expected Message, ToolCall or ToolResult"
    )


def build_provider_messages(history: Iterable[HistoryItem]) -> tuple[ProviderMessage, ...]:
    """Convert every history item, in order; ``call_id`` values pass through untouched."""
    return tuple(_convert(item) for item in history)
