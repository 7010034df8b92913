"""The adapter: provider in the middle, usage kept, errors unified (the blog's section 三、Adapter 调度)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from codeagent_lite.kernel_types import HistoryItem, ToolSpec
from codeagent_lite.model_adapter import (
    InvalidModelOutputError,
    ModelCallBudget,
    ModelProviderError,
    ModelResponse,
    TokenUsage,
)

from .json_action_parser import parse_json_action
from .json_text_messages import build_provider_messages


class ProviderError(RuntimeError):
    """A provider could not answer (network, HTTP status, timeout)."""


@dataclass(frozen=True)
class ProviderResponse:
    """The provider's raw reply: untrusted text and what it cost."""

    text: str
    input_tokens: int
    output_tokens: int


class JsonTextModelAdapter:
    """Turns a Kernel history into the next action, through a text provider."""

    def __init__(self, provider: Any) -> None:
        self._provider = provider

    def complete(self, history: Sequence[HistoryItem], tools: Sequence[ToolSpec], budget: ModelCallBudget) -> ModelResponse:
        provider_messages = build_provider_messages(history)
        try:
            raw_response = self._provider.complete(
                messages=provider_messages,
                tools=tools,
                max_output_tokens=budget.max_output_tokens,
            )
        except ProviderError as error:
            raise ModelProviderError(f"provider request failed: {error}") from error

        # Counted before parsing: a rejected reply has been paid for too.
        usage = TokenUsage(input_tokens=raw_response.input_tokens, output_tokens=raw_response.output_tokens)
        try:
            action = parse_json_action(raw_response.text)
        except InvalidModelOutputError as error:
            raise error.with_usage(usage) from error
        return ModelResponse(action=action, usage=usage)
