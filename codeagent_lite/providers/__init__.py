"""Real models behind the ``TextProvider`` protocol.

Importing this package imports neither ``openai`` nor ``llama_cpp``: each provider
loads its library when it is created, so the package works with only the extras that
are installed (``openai`` for OpenAI-compatible servers, ``local`` for Gemma 3 270M).
``llama_cpp`` is never imported in the learner's process at all: the local model runs in
an engine process of its own (``local_server``) and is asked over HTTP.

What this room may import: the ``TextProvider`` protocol and the types it carries
(``ProviderMessage``, ``ProviderResponse``, ``ProviderError``, ``ToolSpec``), plus the action
contract a provider describes to its model (``action_json_schema`` and ``encode_json``, so the
prompt shows replies in the bytes the chapter encodes). Never ``agent`` or ``workbook``.
The class's reply cache is the teacher's side (classroom/reply_cache.py); here is only the mark its shared replies
carry, read where replies are read (``local_server.SharedReply``).
"""

from .local_llama import default_model_path, ensure_model_file
from .local_server import (
    GemmaProvider,
    LocalMode,
    LocalModelServer,
    connect_local_server,
    llama_server,
    local_model_server,
    start_local_server,
)
from .openai_compatible import PLACEHOLDER_API_KEY, OpenAICompatibleProvider
from .openai_completions import CompletionSettings, OpenAICompletionsProvider
from .prompting import (
    DEFAULT_EXAMPLES,
    SCHEMA_EXAMPLES,
    WorkedExample,
    describe_action_shapes,
    render_completion_prompt,
    render_system_prompt,
)

__all__ = [
    "DEFAULT_EXAMPLES",
    "PLACEHOLDER_API_KEY",
    "SCHEMA_EXAMPLES",
    "CompletionSettings",
    "GemmaProvider",
    "LocalMode",
    "LocalModelServer",
    "OpenAICompatibleProvider",
    "OpenAICompletionsProvider",
    "WorkedExample",
    "connect_local_server",
    "default_model_path",
    "describe_action_shapes",
    "ensure_model_file",
    "llama_server",
    "local_model_server",
    "render_completion_prompt",
    "render_system_prompt",
    "start_local_server",
]
