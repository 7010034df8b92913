"""Untrusted model text -> a checked action in the blog's four steps: strict JSON, an object, a known ``type``, the
fields of its ``CONTRACTS`` entry. The first that refuses raises; nothing is repaired (a repaired reply is a guess)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from .display import few_names, json_kind
from .kernel_types import Action, FinalAnswer, ToolCall
from .model_adapter import InvalidModelOutputError, ValidationLayer
from .strict_json import check_json_syntax, too_deep

__all__ = ["CONTRACTS", "check_action_type", "check_fields", "check_json_syntax", "check_top_level_object"]
__all__ += ["parse_json_action"]

ActionType = Literal["tool_call", "final_answer"]
FieldKind = Literal["the action type", "a non-blank string", "an object"]

_TEXT: FieldKind = "a non-blank string"
CONTRACTS: Mapping[ActionType, Mapping[str, FieldKind]] = {
    "tool_call": {"type": "the action type", "call_id": _TEXT, "tool_name": _TEXT, "arguments": "an object"},
    "final_answer": {"type": "the action type", "content": _TEXT},
}
_TOO_DEEP = too_deep()  # made now: when the caller's stack is nearly full there is no room to make it


def _refuse(layer: ValidationLayer, code: str, message: str, expected: str, found: str, **params: Any) -> Exception:
    return InvalidModelOutputError(message, layer=layer, code=code, params=params, expected=expected, found=found)


def check_top_level_object(value: Any) -> dict[str, Any]:
    """Step 2: an action is an object; an array of actions or a bare string is not one."""
    if isinstance(value, dict):
        return value
    message = f"model output must be an object, found {(found := json_kind(value))}"
    raise _refuse(ValidationLayer.TOP_LEVEL_OBJECT, "not_an_object", message, "a JSON object {...}", found, value=value)


def check_action_type(obj: dict[str, Any]) -> ActionType:
    """Step 3: ``type`` picks the contract; only the two action types exist (case-sensitive)."""
    if (action_type := obj.get("type")) in ("tool_call", "final_answer"):
        return cast(ActionType, action_type)
    given = {"value": action_type} if "type" in obj else {}  # a "type": null is not a missing one
    expected, found = "'tool_call' or 'final_answer'", json_kind(action_type) if given else 'no "type" field'
    message = f"unsupported action type: expected {expected}, found {found}"
    raise _refuse(ValidationLayer.ACTION_TYPE, "unknown_type", message, expected, found, **given)


def _field_problem(kind: FieldKind, value: Any, action_type: ActionType) -> tuple[str, str, str] | None:
    # (code, rule, expected) when a value breaks its field's kind; nothing is coerced
    if kind == "the action type":  # layer 3 has chosen it, but check_fields may be called alone
        return None if value == action_type else ("wrong_type", f"must be {action_type!r}", repr(action_type))
    if kind == "an object":
        return None if isinstance(value, dict) else ("wrong_type", "must be an object", kind)
    if not isinstance(value, str):
        return "wrong_type", "must be a string", "a string"
    return None if value.strip() else ("blank", "must not be blank", kind)  # the Kernel types' blank test


def _field_set_error(obj: dict[str, Any], contract: Mapping[str, FieldKind], action_type: ActionType) -> Exception:
    missing = tuple(name for name in contract if name not in obj)
    unexpected = tuple(name for name in obj if name not in contract)
    problems = [f"missing {', '.join(missing)}"] if missing else []
    problems += [f"unexpected {few_names(unexpected)}"] if unexpected else []
    problem, expected = "; ".join(problems), "exactly " + ", ".join(contract)
    code = "missing_field" if missing else "extra_field"
    message = f"{action_type} fields do not match the contract: {problem} (expected {expected})"
    params = {"missing": missing, "unexpected": unexpected, "fields": tuple(contract)}
    return _refuse(ValidationLayer.FIELDS, code, message, expected, problem, **params)


def check_fields(obj: dict[str, Any], action_type: ActionType) -> Action:
    """Step 4: the exact field set, then each field's type, first problem in contract order."""
    contract, layer = CONTRACTS[action_type], ValidationLayer.FIELDS
    if obj.keys() != contract.keys():
        raise _field_set_error(obj, contract, action_type)
    for name, kind in contract.items():
        if (problem := _field_problem(kind, obj[name], action_type)) is not None:
            (code, rule, expected), found = problem, json_kind(obj[name])
            raise _refuse(layer, code, f"{name} {rule}, found {found}", expected, found, field=name, value=obj[name])
    if action_type == "final_answer":
        return FinalAnswer(content=obj["content"])
    return ToolCall(call_id=obj["call_id"], tool_name=obj["tool_name"], arguments=obj["arguments"])


def parse_json_action(raw_text: str) -> Action:
    try:
        try:
            value = check_json_syntax(raw_text)
            obj = check_top_level_object(value)
            action_type = check_action_type(obj)
            return check_fields(obj, action_type)
        except InvalidModelOutputError as error:
            raise error.with_raw_text(raw_text) from None
    except RecursionError:  # no Python call below this one: a copy made in place
        refusal = InvalidModelOutputError.__new__(InvalidModelOutputError, _TOO_DEEP.message)
        refusal.__dict__.update(vars(_TOO_DEEP), raw_text=raw_text)
        raise refusal from None
