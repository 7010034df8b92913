"""Real models behind the ``TextProvider`` protocol.

Importing this package imports neither ``openai`` nor ``llama_cpp``: a provider loads its library when created,
so the package works with only the extras installed; ``llama_cpp`` runs in an engine process of its own
(``local_server``), never in the learner's. What this room may import: the chapter's provider types and action
contract, never ``agent`` or ``workbook``.
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

__all__ = ["DEFAULT_EXAMPLES", "PLACEHOLDER_API_KEY", "SCHEMA_EXAMPLES", "CompletionSettings", "GemmaProvider"]
__all__ += ["LocalMode", "LocalModelServer", "OpenAICompatibleProvider", "OpenAICompletionsProvider", "WorkedExample"]
__all__ += ["connect_local_server", "default_model_path", "describe_action_shapes", "ensure_model_file"]
__all__ += ["llama_server", "local_model_server", "render_completion_prompt", "render_system_prompt"]
__all__ += ["start_local_server"]
