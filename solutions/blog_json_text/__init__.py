"""Teacher's solution, stage 1: the parser as the blog describes it (json.loads, then four checks).

json_text_messages.py and json_text_adapter.py are copies of solutions/my_json_text's (a test
keeps them identical). verify passes steps 1 to 3 here and fails step 4, on purpose: step 4 is
where the workbook goes beyond the blog. Notebook 04 compares this parser with ours.
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
