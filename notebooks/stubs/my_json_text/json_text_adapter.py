"""The adapter: calls the provider, keeps the usage, unifies the errors. The blog's section 三、Adapter 调度.

Write ``JsonTextModelAdapter``; verify step 2 checks it. (verify lends your adapter the
reference ``build_provider_messages`` and ``parse_json_action`` for step 2, so an
unfinished parser does not fail the adapter's checks.)
"""

from __future__ import annotations

# What you will need (nothing else is required):
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
    """A provider could not answer: network, HTTP status, timeout (given, not an exercise)."""


@dataclass(frozen=True)
class ProviderResponse:
    """The provider's raw reply: untrusted text and what it cost (given, not an exercise)."""

    text: str
    input_tokens: int
    output_tokens: int


class JsonTextModelAdapter:
    """A ModelAdapter for a provider whose model answers with one JSON action as plain text."""

    def __init__(self, provider: Any) -> None:
        """Keep the provider: anything with ``complete(*, messages, tools, max_output_tokens)``."""
        raise NotImplementedError("write JsonTextModelAdapter.__init__")

    def complete(
        self,
        history: Sequence[HistoryItem],
        tools: Sequence[ToolSpec],
        budget: ModelCallBudget,
    ) -> ModelResponse:
        """Build the messages, call the provider, count the tokens, parse the text.

        * call the provider with keywords: ``messages=``, ``tools=``,
          ``max_output_tokens=budget.max_output_tokens``;
        * a ``ProviderError`` becomes ``ModelProviderError``, the original kept as
          ``__cause__`` (``raise ... from error``); other exceptions pass through;
        * the ``TokenUsage`` is built *before* parsing, because a rejected reply is paid
          for too: an ``InvalidModelOutputError`` leaves here carrying it
          (``error.with_usage(usage)`` keeps the layer as well).
        """
        raise NotImplementedError("write JsonTextModelAdapter.complete")

