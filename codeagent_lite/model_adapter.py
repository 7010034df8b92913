"""The contract between the Kernel and any model, whatever wire format it speaks.

The Kernel only ever calls ``ModelAdapter.complete`` and only ever receives a
``ModelResponse`` (a checked action plus token usage) or one of two errors:
``ModelProviderError`` (the model could not be reached) and ``InvalidModelOutputError``
(it answered, but with something that is not a valid action). Keeping the error set
this small is what lets the Kernel stay ignorant of providers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol

from .kernel_types import Action, HistoryItem, ToolSpec

__all__ = [
    "InvalidModelOutputError",
    "ModelAdapter",
    "ModelCallBudget",
    "ModelProviderError",
    "ModelResponse",
    "TokenUsage",
    "ValidationLayer",
]


def _require_count(owner: str, field_name: str, value: object, *, minimum: int) -> None:
    # bool is an int in Python; True tokens is a bug, not a count.
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{owner}.{field_name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{field_name} must be >= {minimum}, got {value}")


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens one model call consumed. Spent tokens are spent, even when the reply is useless."""

    input_tokens: int
    output_tokens: int

    def __post_init__(self) -> None:
        _require_count("TokenUsage", "input_tokens", self.input_tokens, minimum=0)
        _require_count("TokenUsage", "output_tokens", self.output_tokens, minimum=0)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        # Lets an agent loop sum usage over many calls with plain ``+``.
        return TokenUsage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens)


@dataclass(frozen=True, slots=True)
class ModelCallBudget:
    """Limits the Kernel sets for one model call, independent of any provider's option names."""

    max_output_tokens: int

    def __post_init__(self) -> None:
        _require_count("ModelCallBudget", "max_output_tokens", self.max_output_tokens, minimum=1)


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """What the Kernel receives: an action that already passed every structural check."""

    action: Action
    usage: TokenUsage


class ModelAdapter(Protocol):
    """Anything that can turn a Kernel history into the model's next action."""

    def complete(
        self,
        history: Sequence[HistoryItem],
        tools: Sequence[ToolSpec],
        budget: ModelCallBudget,
    ) -> ModelResponse: ...


class ModelProviderError(RuntimeError):
    """The model could not be asked: network, authentication, server or timeout trouble.

    Adapters wrap each provider's own exception in this one, with the original as
    ``__cause__``, so the Kernel needs to know only one failure type per direction.
    """


class ValidationLayer(IntEnum):
    """The four checks that raw model text goes through, in the order they run."""

    JSON_SYNTAX = 1
    TOP_LEVEL_OBJECT = 2
    ACTION_TYPE = 3
    FIELDS = 4

    @property
    def title(self) -> str:
        return _LAYER_TITLES[self]


_LAYER_TITLES = {
    ValidationLayer.JSON_SYNTAX: "JSON syntax",
    ValidationLayer.TOP_LEVEL_OBJECT: "top-level object",
    ValidationLayer.ACTION_TYPE: "action type",
    ValidationLayer.FIELDS: "fields and types",
}


class InvalidModelOutputError(ValueError):
    """The model answered, but its text is not a valid action.

    ``str(error)`` is short on purpose: it is meant to be sent back to the model as a
    correction. The structured attributes say which layer refused the text, what that
    layer expected, what it found instead and (for syntax errors) where. ``usage`` is
    set by the adapter, because a rejected reply has still been paid for.
    """

    def __init__(
        self,
        message: str,
        *,
        usage: TokenUsage | None = None,
        layer: ValidationLayer | None = None,
        raw_text: str | None = None,
        expected: str | None = None,
        found: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage
        self.layer = layer
        self.raw_text = raw_text
        self.expected = expected
        self.found = found
        self.line = line
        self.column = column

    def with_usage(self, usage: TokenUsage) -> InvalidModelOutputError:
        """A copy of this error that also records the tokens the failed call spent."""
        return InvalidModelOutputError(
            self.message,
            usage=usage,
            layer=self.layer,
            raw_text=self.raw_text,
            expected=self.expected,
            found=self.found,
            line=self.line,
            column=self.column,
        )

    def __repr__(self) -> str:
        layer = f"layer {int(self.layer)} ({self.layer.title})" if self.layer is not None else "layer unknown"
        return f"InvalidModelOutputError({self.message!r}, {layer}, usage={self.usage!r})"
