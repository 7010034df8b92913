"""Outbound: Kernel history -> ProviderMessage. The blog's section 二、消息转换.

Write ``_encode_json`` and ``build_provider_messages``; verify step 1 checks them.
"""

from __future__ import annotations

# What you will need (nothing else is required):
import json
from dataclasses import dataclass
from typing import Any

from codeagent_lite.kernel_types import HistoryItem, Message, ToolCall, ToolResult


@dataclass(frozen=True)
class ProviderMessage:
    """One message as a text model reads it: a role string and plain text (given, not an exercise)."""

    role: str
    content: str


def _encode_json(value: Any) -> str:
    """Write ``value`` as JSON text, the same bytes for the same data every time.

    The blog calls this helper but does not show its body. Step 1 asks for what the
    workbook's reference writes: keys sorted, no spaces after ``,`` and ``:``, Chinese
    kept as it is, and ``NaN`` refused with ValueError. Which four ``json.dumps``
    arguments give that? (Notebook 02, section 3.)
    """
    raise NotImplementedError("write _encode_json")


def build_provider_messages(history: list[HistoryItem]) -> list[ProviderMessage]:
    """One ProviderMessage per history item, in the same order.

    * ``Message``: ``role=item.role.value``, ``content=item.content``.
    * ``ToolCall``: role ``"assistant"``, content ``_encode_json`` of
      ``{"type": "tool_call", "call_id": ..., "tool_name": ..., "arguments": ...}``.
    * ``ToolResult``: role ``"user"``, content ``_encode_json`` of
      ``{"type": "tool_result", "call_id": ..., "content": ..., "is_error": ...}``.
    * anything else: ``TypeError`` (a rule of this workbook; the blog does not say).

    ``call_id`` is copied untouched: it is the only thread between a result and its call.
    """
    raise NotImplementedError("write build_provider_messages")
