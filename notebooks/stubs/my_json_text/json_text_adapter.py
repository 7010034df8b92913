"""Adapter：调用 Provider，记下 Token 用量，统一错误。对应博客的「三、Adapter 调度」。

写出 ``JsonTextModelAdapter``，由 verify 第 2 步检查。（检查第 2 步时，verify 把参考实现的
``build_provider_messages`` 和 ``parse_json_action`` 借给你的 Adapter，所以解析器没写完也不影响这一步。）

The adapter: calls the provider, keeps the usage, unifies the errors. Write ``JsonTextModelAdapter``; verify step 2
checks it, lending it the reference messages and parser, so an unfinished parser does not fail these checks.
"""

from __future__ import annotations

# 你要用到的东西（别的都不需要）· What you will need (nothing else is required):
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
    """Provider 没能回答：网络、HTTP 状态码、超时（已经给出，不是练习）。 · A provider could not answer (given)."""


@dataclass(frozen=True)
class ProviderResponse:
    """Provider 的原始回复：不可信文本和它的花费（已经给出，不是练习）。 · The provider's raw reply (given)."""

    text: str
    input_tokens: int
    output_tokens: int


class JsonTextModelAdapter:
    """一个 ModelAdapter，它的模型用纯文本回复一个 JSON 行动。 · A ModelAdapter for a model answering in JSON text."""

    def __init__(self, provider: Any) -> None:
        """保存 Provider：任何带 ``complete(*, messages, tools, max_output_tokens)`` 的对象。 · Keep the provider."""
        raise NotImplementedError("write JsonTextModelAdapter.__init__")

    def complete(
        self,
        history: Sequence[HistoryItem],
        tools: Sequence[ToolSpec],
        budget: ModelCallBudget,
    ) -> ModelResponse:
        """构造消息，调用 Provider，记下 Token，解析文本。

        * 用关键字参数调用 Provider：``messages=``、``tools=``、
          ``max_output_tokens=budget.max_output_tokens``；
        * ``ProviderError`` 转换成 ``ModelProviderError``，原来的异常保存在 ``__cause__`` 里
          （``raise ... from error``）；其他异常原样抛出；
        * ``TokenUsage`` 要在解析*之前*构造，因为被拒绝的回复同样付过费：``InvalidModelOutputError``
          离开这里时要带着它（``error.with_usage(usage)`` 同时保留校验层）。

        Build the messages, call the provider (keywords ``messages=``, ``tools=``, ``max_output_tokens=``), count the
        tokens, parse. ``ProviderError`` becomes ``ModelProviderError`` with the original as ``__cause__``; other
        exceptions pass through. Build ``TokenUsage`` *before* parsing: a rejected reply is paid for too, so an
        ``InvalidModelOutputError`` leaves carrying it (``error.with_usage(usage)`` keeps the layer as well).
        """
        raise NotImplementedError("write JsonTextModelAdapter.complete")

