"""Inbound: untrusted text -> a checked action, as the blog's section 四、行动解析 describes it.

Stage 1: json.loads(), then the four layers. It passes verify's steps 1 to 3. What it lets
through (duplicate keys, NaN, overflowing numbers, blank strings, deep nesting) is step 4.
"""

from __future__ import annotations

import json
from typing import Any

from codeagent_lite.kernel_types import Action, FinalAnswer, ToolCall
from codeagent_lite.model_adapter import InvalidModelOutputError, ValidationLayer

TOOL_CALL_FIELDS = {"type", "call_id", "tool_name", "arguments"}
FINAL_ANSWER_FIELDS = {"type", "content"}


def _require_string(obj: dict[str, Any], name: str) -> str:
    value = obj[name]
    if not isinstance(value, str):
        raise InvalidModelOutputError(f"{name} must be a string", layer=ValidationLayer.FIELDS)
    return value


def parse_json_action(raw_text: str) -> Action:
    """必须是合法 JSON -> 最外层必须是字典 -> type 必须是 tool_call 或 final_answer -> 字段集合和字段类型必须匹配."""
    try:
        value = json.loads(raw_text)
    except json.JSONDecodeError as error:
        raise InvalidModelOutputError(
            f"model output must be valid JSON: {error}", layer=ValidationLayer.JSON_SYNTAX
        ) from None

    if not isinstance(value, dict):
        raise InvalidModelOutputError("model output must be an object", layer=ValidationLayer.TOP_LEVEL_OBJECT)

    action_type = value.get("type")
    if action_type == "tool_call":
        if set(value) != TOOL_CALL_FIELDS:
            raise InvalidModelOutputError(
                "tool_call fields do not match the contract", layer=ValidationLayer.FIELDS
            )
        call_id = _require_string(value, "call_id")
        tool_name = _require_string(value, "tool_name")
        if not isinstance(value["arguments"], dict):
            raise InvalidModelOutputError("arguments must be an object", layer=ValidationLayer.FIELDS)
        return ToolCall(call_id=call_id, tool_name=tool_name, arguments=value["arguments"])
    if action_type == "final_answer":
        if set(value) != FINAL_ANSWER_FIELDS:
            raise InvalidModelOutputError(
                "final_answer fields do not match the contract", layer=ValidationLayer.FIELDS
            )
        return FinalAnswer(content=_require_string(value, "content"))
    raise InvalidModelOutputError("unsupported action type", layer=ValidationLayer.ACTION_TYPE)
