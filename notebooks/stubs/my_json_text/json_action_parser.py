"""入站方向：不可信文本 -> 检查过的行动。对应博客的「四、行动解析」。

分两个阶段写 ``parse_json_action``（笔记本 04）：

1. 博客版：先 ``json.loads()``，再做四层检查。verify 第 3 步。
2. 加固版：严格 JSON 和非空字符串，这些是 [工作簿规则]。verify 第 4 步。

Inbound: untrusted text -> a checked action. Two stages: the blog's ``json.loads()`` and four checks (verify step 3),
then strict JSON and non-blank strings, rules of this workbook (verify step 4).
"""

from __future__ import annotations

# 你要用到的东西（别的都不需要）· What you will need (nothing else is required):
import json
from typing import Any

from codeagent_lite.kernel_types import Action, FinalAnswer, ToolCall
from codeagent_lite.model_adapter import InvalidModelOutputError, ValidationLayer

TOOL_CALL_FIELDS = {"type", "call_id", "tool_name", "arguments"}
FINAL_ANSWER_FIELDS = {"type", "content"}


def parse_json_action(raw_text: str) -> Action:
    """按顺序走四层检查；第一个拒绝的那一层抛出 InvalidModelOutputError。

    每次拒绝都要写明是哪一层：``InvalidModelOutputError(message, layer=ValidationLayer.X)``；
    消息里要包含系列的英文短语（verify 只找这个短语，不管其余措辞）。
    Each refusal names its layer, and its message contains the series' phrase:

    1. ``JSON_SYNTAX``       必须是合法 JSON: "model output must be valid JSON"
    2. ``TOP_LEVEL_OBJECT``  最外层必须是字典: "model output must be an object"
    3. ``ACTION_TYPE``       type 必须是 tool_call 或 final_answer: "unsupported action type"
    4. ``FIELDS``            字段集合和字段类型必须匹配:
       "tool_call fields do not match the contract" (or final_answer ...),
       "call_id must be a string", "arguments must be an object", and in stage 2
       "call_id must not be blank".

    通过时返回 ``ToolCall(call_id, tool_name, arguments)`` 或 ``FinalAnswer(content)``。
    Return ``ToolCall(call_id, tool_name, arguments)`` or ``FinalAnswer(content)``.
    """
    raise NotImplementedError("write parse_json_action")

