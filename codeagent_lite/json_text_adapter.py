"""The bridge from a text provider to the Kernel's ``ModelAdapter``: it owns the order of events and the error
translation, nothing else, so encoding (``json_text_messages``) and parsing (``json_action_parser``) test alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .json_action_parser import parse_json_action
from .json_text_messages import ProviderMessage, build_provider_messages
from .kernel_types import HistoryItem, ToolSpec
from .model_adapter import InvalidModelOutputError, ModelCallBudget, ModelProviderError, ModelResponse, TokenUsage

__all__ = ["JsonTextModelAdapter", "ProviderError", "ProviderResponse", "TextProvider"]


class ProviderError(RuntimeError):
    """The request itself failed: transport, HTTP status, timeout."""


@dataclass(frozen=True, slots=True)
class ProviderResponse:
    """Untrusted text and what it cost; a ``finish_reason`` of "length" best explains a reply cut off mid-JSON."""

    text: str
    input_tokens: int
    output_tokens: int
    finish_reason: str | None = None


class TextProvider(Protocol):
    def complete(
        self,
        *,
        messages: Sequence[ProviderMessage],
        tools: Sequence[ToolSpec],
        max_output_tokens: int,
    ) -> ProviderResponse: ...


class JsonTextModelAdapter:
    """A ``ModelAdapter`` for models that answer with one JSON action as plain text."""

    def __init__(self, provider: TextProvider) -> None:
        self._provider = provider

    def complete(
        self,
        history: Sequence[HistoryItem],
        tools: Sequence[ToolSpec],
        budget: ModelCallBudget,
    ) -> ModelResponse:
        provider_messages = build_provider_messages(history)

        try:
            raw_response = self._provider.complete(
                messages=provider_messages,
                tools=tools,
                max_output_tokens=budget.max_output_tokens,
            )
        except ProviderError as error:
            raise ModelProviderError(f"provider request failed: {error}") from error

        usage = TokenUsage(
            input_tokens=raw_response.input_tokens,
            output_tokens=raw_response.output_tokens,
        )

        try:
            action = parse_json_action(raw_response.text)
        except InvalidModelOutputError as error:
            # The tokens are already spent: the Kernel must still be able to count them.
            raise error.with_usage(usage) from error

        return ModelResponse(action=action, usage=usage)
