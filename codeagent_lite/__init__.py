"""codeagent-lite: the JSON text model section of "从零搭建 Code Agent", as runnable code.

Blog chapter: https://zhuanlan.zhihu.com/p/2077860124157277532

Data path::

    HistoryItem -> json_text_messages -> ProviderMessage -> json_text_adapter
        -> ProviderResponse.text -> json_action_parser -> ToolCall | FinalAnswer
"""

from .agent_loop import (
    DEFAULT_BUDGET,
    DEFAULT_SYSTEM_PROMPT,
    Step,
    StepKind,
    StopReason,
    Transcript,
    correction_message,
    run_agent,
    run_tool,
)
from .diagnosis import Diagnosis, LayerOutcome, LayerStatus, describe_action, diagnose, format_ladder
from .json_action_parser import (
    action_json_schema,
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
from .workspace_tools import Tool, ToolError, list_files_tool, read_file_tool, resolve_in_workspace, workspace_tools

BLOG_URL = "https://zhuanlan.zhihu.com/p/2077860124157277532"

__all__ = [
    "BLOG_URL",
    "DEFAULT_BUDGET",
    "DEFAULT_SYSTEM_PROMPT",
    "Action",
    "Diagnosis",
    "FinalAnswer",
    "HistoryItem",
    "InvalidModelOutputError",
    "JsonTextModelAdapter",
    "LayerOutcome",
    "LayerStatus",
    "Message",
    "MessageRole",
    "ModelAdapter",
    "ModelCallBudget",
    "ModelProviderError",
    "ModelResponse",
    "ProviderCall",
    "ProviderError",
    "ProviderMessage",
    "ProviderResponse",
    "ScriptExhaustedError",
    "ScriptedProvider",
    "Step",
    "StepKind",
    "StopReason",
    "TextProvider",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "ToolSpec",
    "Transcript",
    "ValidationLayer",
    "action_json_schema",
    "build_provider_messages",
    "check_action_type",
    "check_fields",
    "check_json_syntax",
    "check_top_level_object",
    "correction_message",
    "describe_action",
    "diagnose",
    "format_ladder",
    "list_files_tool",
    "parse_json_action",
    "read_file_tool",
    "resolve_in_workspace",
    "run_agent",
    "run_tool",
    "workspace_tools",
]
