"""An offline ``TextProvider``: notebooks and tests need a model that answers the same every time, costs nothing
and needs no network. It replays a script and records every call, so a test can check what the adapter sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .display import N_
from .json_text_adapter import ProviderError, ProviderResponse
from .json_text_messages import ProviderMessage
from .kernel_types import ToolSpec

__all__ = ["EXHAUSTED", "ProviderCall", "ScriptExhaustedError", "ScriptedProvider"]

EXHAUSTED = N_("scripted provider has no reply left after {calls} calls")


class ScriptExhaustedError(ProviderError):
    """The code under test asked the model more often than planned."""

    def __init__(self, calls: int) -> None:
        super().__init__(EXHAUSTED.format(calls=calls))
        self.calls = calls

    def __reduce__(self) -> tuple[object, ...]:  # copied from its count, not from its message
        return (type(self), (self.calls,))


@dataclass(frozen=True, slots=True)
class ProviderCall:
    messages: tuple[ProviderMessage, ...]
    tools: tuple[ToolSpec, ...]
    max_output_tokens: int


Reply = str | ProviderResponse | ProviderError


class ScriptedProvider:
    """Replays one reply per call: a ``str`` with token counts estimated from its text, a ``ProviderResponse`` as
    is, a ``ProviderError`` raised (to rehearse failures)."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        for reply in replies:
            if not isinstance(reply, (str, ProviderResponse, ProviderError)):
                kinds = "a string, a ProviderResponse or a ProviderError"
                raise TypeError(f"a scripted reply must be {kinds}, found {type(reply).__name__}")
        self._replies = list(replies)
        self.calls: list[ProviderCall] = []

    @property
    def remaining(self) -> int:
        return len(self._replies) - len(self.calls)

    def complete(
        self,
        *,
        messages: Sequence[ProviderMessage],
        tools: Sequence[ToolSpec],
        max_output_tokens: int,
    ) -> ProviderResponse:
        if self.remaining <= 0:
            raise ScriptExhaustedError(len(self.calls))
        reply = self._replies[len(self.calls)]
        self.calls.append(ProviderCall(tuple(messages), tuple(tools), max_output_tokens))
        if isinstance(reply, ProviderError):
            raise reply
        if isinstance(reply, ProviderResponse):
            return reply
        return ProviderResponse(
            text=reply,
            input_tokens=sum(_estimate_tokens(m.content) for m in messages),
            output_tokens=_estimate_tokens(reply),
            finish_reason="stop",
        )


def _estimate_tokens(text: str) -> int:
    # A deterministic stand-in for a tokenizer (four characters a token, at least one): usage still adds up.
    return max(1, (len(text) + 3) // 4)
