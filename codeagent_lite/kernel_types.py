"""The Kernel's own vocabulary: what it remembers and what it can be asked to do.

These types never mention a model or a provider. Everything the Kernel keeps in its
history is a ``Message``, a ``ToolCall`` or a ``ToolResult``; everything a model may
ask for is a ``ToolCall`` or a ``FinalAnswer``. Adapters translate to and from them.

All types are frozen dataclasses: a history item that could change after it was
recorded would make the history lie about what the model actually saw.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeAlias

__all__ = [
    "Action",
    "FinalAnswer",
    "HistoryItem",
    "Message",
    "MessageRole",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
]


class MessageRole(StrEnum):
    """Who said a plain message. Tool traffic has its own types, not a role."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"


def _require_text(owner: str, field_name: str, value: object, *, allow_blank: bool = False) -> None:
    # A wrong type is a programming error (TypeError); a blank value is a bad value (ValueError).
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
    """A plain chat turn: system instructions, the user's task, or the model's prose."""

    role: MessageRole
    content: str

    def __post_init__(self) -> None:
        # Accept the plain string "user" as well as MessageRole.USER; refuse unknown roles early.
        object.__setattr__(self, "role", MessageRole(self.role))
        _require_text("Message", "content", self.content)

    def __repr__(self) -> str:
        # The role as its plain string: Message(role='user', ...) reads better than <MessageRole.USER: 'user'>.
        return f"Message(role={self.role.value!r}, content={self.content!r})"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asks the runtime to run one tool.

    ``call_id`` is how a later ``ToolResult`` finds its call, so it is kept verbatim.
    ``arguments`` is only known to be a JSON object here: each tool checks its own.
    ToolCall is not hashable because ``arguments`` is a dict.
    """

    call_id: str
    tool_name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _require_text("ToolCall", "call_id", self.call_id)
        _require_text("ToolCall", "tool_name", self.tool_name)
        object.__setattr__(self, "arguments", _copy_object("ToolCall", "arguments", self.arguments))


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What the environment observed when it ran a tool call.

    ``content`` may be empty (an empty file is a real observation); ``is_error`` tells
    the model whether the tool failed, so it can change course instead of trusting it.
    """

    call_id: str
    content: str
    is_error: bool = False

    def __post_init__(self) -> None:
        _require_text("ToolResult", "call_id", self.call_id)
        _require_text("ToolResult", "content", self.content, allow_blank=True)
        if not isinstance(self.is_error, bool):
            raise TypeError(f"ToolResult.is_error must be a bool, found {type(self.is_error).__name__}")


@dataclass(frozen=True, slots=True)
class FinalAnswer:
    """The model says it is done; the Kernel stops the loop and shows ``content``."""

    content: str

    def __post_init__(self) -> None:
        _require_text("FinalAnswer", "content", self.content)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a model is told about one tool: its name, purpose and argument schema."""

    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})

    def __post_init__(self) -> None:
        _require_text("ToolSpec", "name", self.name)
        _require_text("ToolSpec", "description", self.description)
        object.__setattr__(self, "input_schema", _copy_object("ToolSpec", "input_schema", self.input_schema))


Action: TypeAlias = ToolCall | FinalAnswer
HistoryItem: TypeAlias = Message | ToolCall | ToolResult
