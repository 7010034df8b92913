"""codeagent-lite: the JSON text model section of "从零搭建 Code Agent", as runnable code.

Blog chapter: https://zhuanlan.zhihu.com/p/2077860124157277532

The top level of this package is the chapter, so the blog and the code read side by side
(beside it only the entry points ``cli`` and ``__main__``, which may use the rooms)::

    HistoryItem -> json_text_messages -> ProviderMessage -> json_text_adapter
        -> ProviderResponse.text -> json_action_parser -> ToolCall | FinalAnswer

``kernel_types`` and ``model_adapter`` are the previous chapter's Kernel contract;
``strict_json`` is layer 1 of the parser, ``action_schema`` tells models its contract,
``diagnosis`` runs the four layers one by one, ``display`` is the one text module (shorten,
quote, escape), and ``scripted_provider`` is the offline provider the notebooks use. Everything beyond the
chapter lives in named rooms, which the chapter never imports:

* ``codeagent_lite.agent``: the loop that runs tools, and two demo tools;
* ``codeagent_lite.providers``: real models (OpenAI-compatible servers, a local Gemma);
* ``codeagent_lite.workbook``: playgrounds, exercise checks and helpers for the notebooks.
"""

from .action_schema import action_json_schema
from .diagnosis import LayerStatus, describe_action, diagnose, format_ladder
from .json_action_parser import (
    check_action_type,
    check_fields,
    check_json_syntax,
    check_top_level_object,
    parse_json_action,
)
from .json_text_adapter import JsonTextModelAdapter, ProviderError, ProviderResponse, TextProvider
from .json_text_messages import ProviderMessage, build_provider_messages
from .kernel_types import Action, FinalAnswer, HistoryItem, Message, MessageRole, ToolCall, ToolResult, ToolSpec
from .model_adapter import (
    InvalidModelOutputError,
    ModelAdapter,
    ModelCallBudget,
    ModelProviderError,
    ModelResponse,
    TokenUsage,
    ValidationLayer,
)
from .scripted_provider import ProviderCall, ScriptedProvider, ScriptExhaustedError

BLOG_URL = "https://zhuanlan.zhihu.com/p/2077860124157277532"

__all__ = ["BLOG_URL", "Action", "FinalAnswer", "HistoryItem", "InvalidModelOutputError", "JsonTextModelAdapter"]
__all__ += ["LayerStatus", "Message", "MessageRole", "ModelAdapter", "ModelCallBudget", "ModelProviderError"]
__all__ += ["ModelResponse", "ProviderCall", "ProviderError", "ProviderMessage", "ProviderResponse"]
__all__ += ["ScriptExhaustedError", "ScriptedProvider", "TextProvider", "TokenUsage", "ToolCall", "ToolResult"]
__all__ += ["ToolSpec", "ValidationLayer", "action_json_schema", "build_provider_messages", "check_action_type"]
__all__ += ["check_fields", "check_json_syntax", "check_top_level_object", "describe_action", "diagnose"]
__all__ += ["format_ladder", "parse_json_action"]
