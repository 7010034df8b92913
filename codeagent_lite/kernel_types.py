"""The Kernel's own vocabulary, which never mentions a model: its history holds ``Message``, ``ToolCall`` and
``ToolResult``; a model may ask for a ``ToolCall`` or a ``FinalAnswer``. All are frozen: a history item that
changed after it was recorded would make the history lie about what the model saw.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeAlias

__all__ = ["Action", "FinalAnswer", "HistoryItem", "Message", "MessageRole", "ToolCall", "ToolResult", "ToolSpec"]
__all__ += ["require_text"]


class MessageRole(StrEnum):
    """Who said a plain message; tool traffic has its own types, not a role."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"


def require_text(owner: str, field_name: str, value: object, *, allow_blank: bool = False) -> None:
    """The one check of a text field, for these types and the workbook's own: a wrong type is a programming error
    (TypeError), a blank value a bad value (ValueError)."""
    if not isinstance(value, str):
        raise TypeError(f"{owner}.{field_name} must be a string, found {type(value).__name__}")
    if not allow_blank and not value.strip():
        raise ValueError(f"{field_name} must not be blank")


def _copy_object(owner: str, field_name: str, value: object) -> dict[str, Any]:
    # Deep-copied so that mutating the caller's dict later cannot rewrite recorded history.
    if not isinstance(value, dict):
        raise TypeError(f"{owner}.{field_name} must be a dict, found {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise TypeError(f"{owner}.{field_name} keys must be strings, found {type(key).__name__}")
    copied: dict[str, Any] = _copy_json_like(value)
    return copied


_IMMUTABLE = frozenset({str, int, float, bool, type(None)})


def _copy_json_like(value: Any) -> Any:
    # JSON-shaped data is copied directly, several times faster than copy.deepcopy: every parsed
    # tool call passes through here. Immutable leaves are kept without a call: most values are leaves.
    if isinstance(value, dict):
        return {key: item if type(item) in _IMMUTABLE else _copy_json_like(item) for key, item in value.items()}
    if isinstance(value, list):
        return [item if type(item) in _IMMUTABLE else _copy_json_like(item) for item in value]
    if isinstance(value, (str, int, float)) or value is None:
        return value
    return copy.deepcopy(value)


@dataclass(frozen=True, slots=True)
class Message:
    role: MessageRole
    content: str

    def __post_init__(self) -> None:
        # Accept the plain string "user" as well as MessageRole.USER; refuse unknown roles early.
        object.__setattr__(self, "role", MessageRole(self.role))
        require_text("Message", "content", self.content)

    def __repr__(self) -> str:
        # The role as its plain string: Message(role='user', ...) reads better than <MessageRole.USER: 'user'>.
        return f"Message(role={self.role.value!r}, content={self.content!r})"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """``call_id`` is kept verbatim: it is how a later ``ToolResult`` finds its call.

    Each tool checks its own ``arguments``; here they are only known to be an object.
    """

    call_id: str
    tool_name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require_text("ToolCall", "call_id", self.call_id)
        require_text("ToolCall", "tool_name", self.tool_name)
        object.__setattr__(self, "arguments", _copy_object("ToolCall", "arguments", self.arguments))


@dataclass(frozen=True, slots=True)
class ToolResult:
    """``content`` may be empty: an empty file is a real observation. ``is_error`` lets the model change course."""

    call_id: str
    content: str
    is_error: bool = False

    def __post_init__(self) -> None:
        require_text("ToolResult", "call_id", self.call_id)
        require_text("ToolResult", "content", self.content, allow_blank=True)
        if not isinstance(self.is_error, bool):
            raise TypeError(f"ToolResult.is_error must be a bool, found {type(self.is_error).__name__}")


@dataclass(frozen=True, slots=True)
class FinalAnswer:
    content: str

    def __post_init__(self) -> None:
        require_text("FinalAnswer", "content", self.content)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})

    def __post_init__(self) -> None:
        require_text("ToolSpec", "name", self.name)
        require_text("ToolSpec", "description", self.description)
        object.__setattr__(self, "input_schema", _copy_object("ToolSpec", "input_schema", self.input_schema))


Action: TypeAlias = ToolCall | FinalAnswer
HistoryItem: TypeAlias = Message | ToolCall | ToolResult
