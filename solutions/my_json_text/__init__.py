"""Teacher's solution: the chapter's three files, written the way a learner could write them.

verify runs each file on its own, so this ``__init__`` only re-exports the blog's names.
Check it with:  python -m codeagent_lite verify solutions/my_json_text
"""

from .json_action_parser import parse_json_action
from .json_text_adapter import JsonTextModelAdapter, ProviderError, ProviderResponse
from .json_text_messages import ProviderMessage, build_provider_messages

__all__ = [
    "JsonTextModelAdapter",
    "ProviderError",
    "ProviderMessage",
    "ProviderResponse",
    "build_provider_messages",
    "parse_json_action",
]
