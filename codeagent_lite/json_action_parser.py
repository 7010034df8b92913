"""Inbound direction: untrusted model text -> a checked Kernel action.

The text goes through four layers, in the chapter's order, and the first layer that
refuses it raises ``InvalidModelOutputError`` naming itself:

1. JSON syntax: exactly one strict RFC 8259 value, nothing repaired or guessed.
2. Top-level object: the value is a JSON object.
3. Action type: ``type`` is exactly ``"tool_call"`` or ``"final_answer"``.
4. Fields: the field set and every field's type match the contract, with no coercion.

Each layer is a small public function so a notebook can run one alone. Nothing here
"fixes" a reply (strips code fences, closes brackets, picks the first of two objects):
a repaired reply is a guess, and an agent must never execute a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from .display import json_kind, quote
from .kernel_types import Action, FinalAnswer, ToolCall
from .model_adapter import InvalidModelOutputError, ValidationLayer
from .strict_json import decode_strict_json

__all__ = [
    "CONTRACTS",
    "FieldKind",
    "action_json_schema",
    "check_action_type",
    "check_fields",
    "check_json_syntax",
    "check_top_level_object",
    "parse_json_action",
]

ActionType = Literal["tool_call", "final_answer"]


# --------------------------------------------------------------------------- layer 1


def check_json_syntax(raw_text: str) -> Any:
    """Layer 1: the text must be exactly one strict JSON value, whitespace around it allowed.

    How that is checked, and how each failure is explained, lives in ``strict_json``.
    """
    return decode_strict_json(raw_text)


# --------------------------------------------------------------------------- layer 2


def check_top_level_object(value: Any) -> dict[str, Any]:
    """Layer 2: an action is a JSON object; an array of actions or a bare string is not one."""
    if not isinstance(value, dict):
        raise InvalidModelOutputError(
            f"model output must be an object, found {json_kind(value)}",
            layer=ValidationLayer.TOP_LEVEL_OBJECT,
            expected="a JSON object {...}",
            found=json_kind(value),
        )
    return value


# --------------------------------------------------------------------------- layer 3


def check_action_type(obj: dict[str, Any]) -> ActionType:
    """Layer 3: ``type`` picks the contract; only the two action types exist (case-sensitive)."""
    expected = "'tool_call' or 'final_answer'"
    if "type" not in obj:
        found = 'no "type" field'
    else:
        action_type = obj["type"]
        if action_type == "tool_call":
            return "tool_call"
        if action_type == "final_answer":
            return "final_answer"
        found = json_kind(action_type)
    raise InvalidModelOutputError(
        f"unsupported action type: expected {expected}, found {found}",
        layer=ValidationLayer.ACTION_TYPE,
        expected=expected,
        found=found,
    )


# --------------------------------------------------------------------------- layer 4


FieldKind = Literal["the action type", "a non-blank string", "an object"]
"""What one field must hold. Plain strings rather than an Enum: they read like the blog's rules."""

CONTRACTS: Mapping[ActionType, Mapping[str, FieldKind]] = {
    "tool_call": {
        "type": "the action type",
        "call_id": "a non-blank string",
        "tool_name": "a non-blank string",
        "arguments": "an object",
    },
    "final_answer": {
        "type": "the action type",
        "content": "a non-blank string",
    },
}
"""The one definition of both actions: layer 4 checks it, ``action_json_schema`` describes it.

``arguments`` is only known to be an object here: each tool checks its own arguments.
"""

_MAX_NAMED_FIELDS = 5


def _field_set_problem(obj: dict[str, Any], contract: Mapping[str, FieldKind]) -> str:
    """``missing ...; unexpected ...``: how the field set differs from the contract's."""
    missing = [name for name in contract if name not in obj]
    unexpected = [name for name in obj if name not in contract]
    parts = []
    if missing:
        parts.append("missing " + ", ".join(missing))
    if unexpected:
        # Name a few: a reply with thousands of extra keys must not produce a huge message.
        named = ", ".join(quote(name) for name in unexpected[:_MAX_NAMED_FIELDS])
        more = len(unexpected) - _MAX_NAMED_FIELDS
        parts.append(f"unexpected {named}" + (f" and {more} more" if more > 0 else ""))
    return "; ".join(parts)


def _field_problem(name: str, kind: FieldKind, value: Any, action_type: ActionType) -> tuple[str, str] | None:
    """``(message, expected)`` when one field breaks its rule, else None. No value is coerced."""
    if kind == "a non-blank string":
        if not isinstance(value, str):
            return f"{name} must be a string", "a string"
        # str.strip() is the blank test the Kernel types use too, so the two never disagree.
        if not value.strip():
            return f"{name} must not be blank", "a non-blank string"
    elif kind == "an object":
        if not isinstance(value, dict):
            return f"{name} must be an object", "an object"
    elif value != action_type:
        return f"{name} must be {action_type!r}", repr(action_type)
    return None


def _fields_error(message: str, expected: str, found: str) -> InvalidModelOutputError:
    return InvalidModelOutputError(message, layer=ValidationLayer.FIELDS, expected=expected, found=found)


def check_fields(obj: dict[str, Any], action_type: ActionType, *, just_decoded: bool = False) -> Action:
    """Layer 4: the exact field set, then each field's type; ``arguments`` values are the tool's business.

    A ToolCall normally gets its own copy of ``arguments``, so changing ``obj`` later cannot
    change the action. ``just_decoded=True`` (what ``parse_json_action`` passes) says that the
    decoder built ``obj`` for this call alone: nobody else holds it, so the action keeps it as
    it is, without the copy and without checking again what this layer has just checked.
    """
    contract = CONTRACTS[action_type]
    if obj.keys() != contract.keys():
        field_set_problem = _field_set_problem(obj, contract)
        expected = "exactly " + ", ".join(contract)
        message = f"{action_type} fields do not match the contract: {field_set_problem} (expected {expected})"
        raise _fields_error(message, expected, field_set_problem)
    # Report the first problem in contract order; one clear correction beats a list of five.
    for name, kind in contract.items():
        problem = _field_problem(name, kind, obj[name], action_type)
        if problem is not None:
            message, expected = problem
            raise _fields_error(f"{message}, found {json_kind(obj[name])}", expected, json_kind(obj[name]))
    if action_type == "final_answer":
        return FinalAnswer.from_checked_reply(obj["content"])
    if just_decoded:
        return ToolCall.from_checked_reply(obj["call_id"], obj["tool_name"], obj["arguments"])
    return ToolCall(call_id=obj["call_id"], tool_name=obj["tool_name"], arguments=obj["arguments"])


# --------------------------------------------------------------------------- the same contract as JSON Schema

_SCHEMA_NAMES: Mapping[ActionType, str] = {"tool_call": "ToolCallPayload", "final_answer": "FinalAnswerPayload"}
_SCHEMA_DESCRIPTIONS: Mapping[ActionType, str] = {
    "tool_call": "The tool_call contract: exactly these four fields, strict types, nothing coerced.",
    "final_answer": "The final_answer contract: exactly ``type`` and a non-blank ``content``.",
}


def _property_schema(name: str, kind: FieldKind, action_type: ActionType) -> dict[str, Any]:
    title = name.replace("_", " ").title()
    if kind == "the action type":
        return {"const": action_type, "title": title, "type": "string"}
    if kind == "a non-blank string":
        # JSON Schema cannot say "not only whitespace"; minLength 1 is the closest it gets.
        return {"minLength": 1, "title": title, "type": "string"}
    return {"additionalProperties": True, "title": title, "type": "object"}


def _action_schema(action_type: ActionType) -> dict[str, Any]:
    contract = CONTRACTS[action_type]
    return {
        "additionalProperties": False,
        "description": _SCHEMA_DESCRIPTIONS[action_type],
        "properties": {name: _property_schema(name, kind, action_type) for name, kind in contract.items()},
        "required": list(contract),
        "title": _SCHEMA_NAMES[action_type],
        "type": "object",
    }


def action_json_schema() -> dict[str, Any]:
    """JSON Schema of the two action shapes, written from ``CONTRACTS``, the table layer 4 checks.

    Prompts and grammar-constrained decoding use this, so what a model is told can
    never drift from what the parser accepts.
    """
    references = {action_type: f"#/$defs/{name}" for action_type, name in _SCHEMA_NAMES.items()}
    return {
        "$defs": {_SCHEMA_NAMES[action_type]: _action_schema(action_type) for action_type in sorted(CONTRACTS)},
        "discriminator": {"mapping": dict(sorted(references.items())), "propertyName": "type"},
        "oneOf": [{"$ref": references[action_type]} for action_type in CONTRACTS],
    }


# --------------------------------------------------------------------------- all four


def parse_json_action(raw_text: str) -> Action:
    """Run the four layers in order; the first refusal raises ``InvalidModelOutputError``."""
    try:
        value = check_json_syntax(raw_text)
        obj = check_top_level_object(value)
        action_type = check_action_type(obj)
        return check_fields(obj, action_type, just_decoded=True)
    except InvalidModelOutputError as error:
        raise error.with_raw_text(raw_text) from None
