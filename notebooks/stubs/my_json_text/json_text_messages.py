"""出站方向：Kernel 历史 -> ProviderMessage。对应博客的「二、消息转换」。

写出 ``_encode_json`` 和 ``build_provider_messages``，由 verify 第 1 步检查。

Outbound: Kernel history -> ProviderMessage. Write ``_encode_json`` and ``build_provider_messages``; verify step 1.
"""

from __future__ import annotations

# 你要用到的东西（别的都不需要）· What you will need (nothing else is required):
import json
from dataclasses import dataclass
from typing import Any

from codeagent_lite.kernel_types import HistoryItem, Message, ToolCall, ToolResult


@dataclass(frozen=True)
class ProviderMessage:
    """文本模型读到的一条消息：角色加纯文本（已给出，不是练习）。 · One message as a text model reads it (given)."""

    role: str
    content: str


def _encode_json(value: Any) -> str:
    """把 ``value`` 写成 JSON 文本：同样的数据，每次都得到同样的字节。

    博客调用了这个辅助函数，却没有写出函数体。第 1 步要求它写出和工作簿的参考实现一样的结果：
    键排好序，``,`` 和 ``:`` 后面没有空格，中文原样保留，遇到 ``NaN`` 抛出 ValueError。
    ``json.dumps`` 的哪四个参数能做到？（笔记本 02 第 3 节。）[工作簿规则]

    Write ``value`` as JSON text, the same bytes for the same data every time: keys sorted, no spaces after ``,``
    and ``:``, Chinese kept as it is, ``NaN`` refused with ValueError. Which four ``json.dumps`` arguments give
    that? (Notebook 02, section 3; rules of this workbook, the blog does not show the body.)
    """
    raise NotImplementedError("write _encode_json")


def build_provider_messages(history: list[HistoryItem]) -> list[ProviderMessage]:
    """每个历史项对应一条 ProviderMessage，顺序不变。

    * ``Message``：``role=item.role.value``，``content=item.content``。
    * ``ToolCall``：角色 ``"assistant"``，内容是 ``_encode_json`` 写出的
      ``{"type": "tool_call", "call_id": ..., "tool_name": ..., "arguments": ...}``。
    * ``ToolResult``：角色 ``"user"``，内容是 ``_encode_json`` 写出的
      ``{"type": "tool_result", "call_id": ..., "content": ..., "is_error": ...}``。
    * 其他任何东西：抛出 ``TypeError``（[工作簿规则]，博客没有说）。

    ``call_id`` 原样复制：工具结果和它的调用之间，只靠这一根线连着。

    One ProviderMessage per history item, in order: ``Message`` keeps its role and content; ``ToolCall`` is sent as
    ``"assistant"`` and ``ToolResult`` as ``"user"``, each as ``_encode_json`` of the dict above; anything else
    raises ``TypeError`` (a rule of this workbook). ``call_id`` is copied untouched: it ties a result to its call.
    """
    raise NotImplementedError("write build_provider_messages")
