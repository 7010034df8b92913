"""Inbound: untrusted text -> a checked action. The blog's section 四、行动解析.

Write ``parse_json_action`` in two stages (notebook 04):

1. the blog's version: ``json.loads()``, then the four checks. verify step 3.
2. hardened: strict JSON and non-blank strings, rules of this workbook. verify step 4.
"""

from __future__ import annotations

# What you will need (nothing else is required):
import json
from typing import Any

from codeagent_lite.kernel_types import Action, FinalAnswer, ToolCall
from codeagent_lite.model_adapter import InvalidModelOutputError, ValidationLayer

TOOL_CALL_FIELDS = {"type", "call_id", "tool_name", "arguments"}
FINAL_ANSWER_FIELDS = {"type", "content"}


def parse_json_action(raw_text: str) -> Action:
    """Run the four layers in order; the first that refuses raises InvalidModelOutputError.

    Each refusal names its layer, ``InvalidModelOutputError(message, layer=ValidationLayer.X)``,
    and its message contains the series' phrase (verify looks for the phrase, nothing else):

    1. ``JSON_SYNTAX``       必须是合法 JSON: "model output must be valid JSON"
    2. ``TOP_LEVEL_OBJECT``  最外层必须是字典: "model output must be an object"
    3. ``ACTION_TYPE``       type 必须是 tool_call 或 final_answer: "unsupported action type"
    4. ``FIELDS``            字段集合和字段类型必须匹配:
       "tool_call fields do not match the contract" (or final_answer ...),
       "call_id must be a string", "arguments must be an object", and in stage 2
       "call_id must not be blank".

    Return ``ToolCall(call_id, tool_name, arguments)`` or ``FinalAnswer(content)``.
    """
    raise NotImplementedError("write parse_json_action")

