"""Inbound: untrusted text -> a checked action (the blog's section 四、行动解析), hardened.

This is stage 2. Stage 1, the blog's version (json.loads, then the four checks), is in
solutions/blog_json_text/json_action_parser.py; the differences are the strict-JSON hooks
of layer 1 and the non-blank rule of layer 4, both rules of this workbook, not the blog's.
"""

from __future__ import annotations

import json
import math
from typing import Any

from codeagent_lite.kernel_types import Action, FinalAnswer, ToolCall
from codeagent_lite.model_adapter import InvalidModelOutputError, ValidationLayer

TOOL_CALL_FIELDS = {"type", "call_id", "tool_name", "arguments"}
FINAL_ANSWER_FIELDS = {"type", "content"}


class _NotStrictJSON(ValueError):
    """Raised inside json's hooks for what json.loads would otherwise let through."""


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise _NotStrictJSON(f"duplicate key {duplicate!r} in one object")
    return obj


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _NotStrictJSON(f"the number {token[:24]} is too large for a float")
    return value


def _no_constants(token: str) -> float:
    raise _NotStrictJSON(f"{token} is not a JSON number")


def _load_strict_json(raw_text: str) -> Any:
    """Layer 1: exactly one strict JSON value (json.loads rejects a BOM and a second value itself)."""
    try:
        return json.loads(
            raw_text,
            object_pairs_hook=_object_without_duplicates,
            parse_float=_finite_float,
            parse_constant=_no_constants,
        )
    except RecursionError:
        raise InvalidModelOutputError(
            "model output must be valid JSON: nesting is too deep", layer=ValidationLayer.JSON_SYNTAX
        ) from None
    except ValueError as error:  # JSONDecodeError, our hooks, and json's 4300-digit integer limit
        raise InvalidModelOutputError(
            f"model output must be valid JSON: {error}", layer=ValidationLayer.JSON_SYNTAX
        ) from None


def _fields_error(action_type: str, expected: set[str], obj: dict[str, Any]) -> InvalidModelOutputError:
    missing = sorted(expected - set(obj))
    extra = sorted(set(obj) - expected)
    return InvalidModelOutputError(
        f"{action_type} fields do not match the contract: missing {missing}, unexpected {extra}",
        layer=ValidationLayer.FIELDS,
    )


def _require_text(obj: dict[str, Any], name: str) -> str:
    value = obj[name]
    if not isinstance(value, str):
        raise InvalidModelOutputError(f"{name} must be a string", layer=ValidationLayer.FIELDS)
    if not value.strip():
        raise InvalidModelOutputError(f"{name} must not be blank", layer=ValidationLayer.FIELDS)
    return value


def parse_json_action(raw_text: str) -> Action:
    """The four layers in order; the first that refuses raises InvalidModelOutputError."""
    value = _load_strict_json(raw_text)
    if not isinstance(value, dict):
        raise InvalidModelOutputError("model output must be an object", layer=ValidationLayer.TOP_LEVEL_OBJECT)
    action_type = value.get("type")
    if action_type == "tool_call":
        if set(value) != TOOL_CALL_FIELDS:
            raise _fields_error("tool_call", TOOL_CALL_FIELDS, value)
        call_id = _require_text(value, "call_id")
        tool_name = _require_text(value, "tool_name")
        if not isinstance(value["arguments"], dict):
            raise InvalidModelOutputError("arguments must be an object", layer=ValidationLayer.FIELDS)
        return ToolCall(call_id=call_id, tool_name=tool_name, arguments=value["arguments"])
    if action_type == "final_answer":
        if set(value) != FINAL_ANSWER_FIELDS:
            raise _fields_error("final_answer", FINAL_ANSWER_FIELDS, value)
        return FinalAnswer(content=_require_text(value, "content"))
    raise InvalidModelOutputError(
        "unsupported action type: expected 'tool_call' or 'final_answer'", layer=ValidationLayer.ACTION_TYPE
    )
