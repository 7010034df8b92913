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

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr, TypeAdapter, ValidationError

from .kernel_types import Action, FinalAnswer, ToolCall
from .model_adapter import InvalidModelOutputError, ValidationLayer
from .strict_json import MAX_INTEGER_DIGITS, MAX_NESTING_DEPTH, decode_strict_json, describe_json_value, preview

__all__ = [
    "ACTION_TYPES",
    "FINAL_ANSWER_FIELDS",
    "MAX_INTEGER_DIGITS",
    "MAX_NESTING_DEPTH",
    "TOOL_CALL_FIELDS",
    "FinalAnswerPayload",
    "ToolCallPayload",
    "action_json_schema",
    "check_action_type",
    "check_fields",
    "check_json_syntax",
    "check_top_level_object",
    "parse_json_action",
]

ACTION_TYPES = ("tool_call", "final_answer")
TOOL_CALL_FIELDS = ("type", "call_id", "tool_name", "arguments")
FINAL_ANSWER_FIELDS = ("type", "content")
_CONTRACT_FIELDS = {"tool_call": TOOL_CALL_FIELDS, "final_answer": FINAL_ANSWER_FIELDS}


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
            f"model output must be an object, found {describe_json_value(value)}",
            layer=ValidationLayer.TOP_LEVEL_OBJECT,
            expected="a JSON object {...}",
            found=describe_json_value(value),
        )
    return value


# --------------------------------------------------------------------------- layer 3


def check_action_type(obj: dict[str, Any]) -> Literal["tool_call", "final_answer"]:
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
        found = describe_json_value(action_type)
    raise InvalidModelOutputError(
        f"unsupported action type: expected {expected}, found {found}",
        layer=ValidationLayer.ACTION_TYPE,
        expected=expected,
        found=found,
    )


# --------------------------------------------------------------------------- layer 4


def _not_blank(value: str) -> str:
    # str.strip() is the same blank test the Kernel types use, so the two can never disagree.
    if not value.strip():
        raise ValueError("must not be blank")
    return value


# ``_not_blank`` already refuses "", so minLength only goes into the JSON Schema: as a runtime
# constraint it makes pydantic re-encode every long string to count its characters.
NonBlankStr = Annotated[StrictStr, Field(json_schema_extra={"minLength": 1}), AfterValidator(_not_blank)]


class ToolCallPayload(BaseModel):
    """The tool_call contract: exactly these four fields, strict types, nothing coerced."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    type: Literal["tool_call"]
    call_id: NonBlankStr
    tool_name: NonBlankStr
    arguments: dict[str, Any]


class FinalAnswerPayload(BaseModel):
    """The final_answer contract: exactly ``type`` and a non-blank ``content``."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    type: Literal["final_answer"]
    content: NonBlankStr


_PAYLOADS: dict[str, type[ToolCallPayload] | type[FinalAnswerPayload]] = {
    "tool_call": ToolCallPayload,
    "final_answer": FinalAnswerPayload,
}
_TYPE_NAMES = {"arguments": "an object"}
_MAX_NAMED_FIELDS = 5


def _field_set_error(obj: dict[str, Any], action_type: str) -> InvalidModelOutputError | None:
    contract = _CONTRACT_FIELDS[action_type]
    if len(obj) == len(contract) and all(name in obj for name in contract):
        return None
    missing = [name for name in contract if name not in obj]
    unexpected = [name for name in obj if name not in contract]
    if not missing and not unexpected:
        return None
    parts = []
    if missing:
        parts.append("missing " + ", ".join(missing))
    if unexpected:
        # Name a few: a reply with thousands of extra keys must not produce a huge message.
        named = ", ".join(preview(name) for name in unexpected[:_MAX_NAMED_FIELDS])
        more = len(unexpected) - _MAX_NAMED_FIELDS
        parts.append(f"unexpected {named}" + (f" and {more} more" if more > 0 else ""))
    expected = "exactly " + ", ".join(contract)
    return InvalidModelOutputError(
        f"{action_type} fields do not match the contract: {'; '.join(parts)} (expected {expected})",
        layer=ValidationLayer.FIELDS,
        expected=expected,
        found="; ".join(parts),
    )


def _field_type_error(obj: dict[str, Any], error: ValidationError) -> InvalidModelOutputError:
    # Report the first problem in contract order; one clear correction beats a list of five.
    detail = error.errors(include_url=False)[0]
    name = str(detail["loc"][0])
    value = obj.get(name)
    if detail["type"] in ("string_too_short", "value_error"):
        message, expected = f"{name} must not be blank", "a non-blank string"
    else:
        wanted = _TYPE_NAMES.get(name, "a string")
        message, expected = f"{name} must be {wanted}", wanted
    return InvalidModelOutputError(
        f"{message}, found {describe_json_value(value)}",
        layer=ValidationLayer.FIELDS,
        expected=expected,
        found=describe_json_value(value),
    )


def check_fields(obj: dict[str, Any], action_type: Literal["tool_call", "final_answer"]) -> Action:
    """Layer 4: the exact field set, then each field's type; ``arguments`` values are the tool's business."""
    field_set_error = _field_set_error(obj, action_type)
    if field_set_error is not None:
        raise field_set_error
    try:
        payload = _PAYLOADS[action_type].model_validate(obj)
    except ValidationError as error:
        raise _field_type_error(obj, error) from None
    if isinstance(payload, ToolCallPayload):
        return ToolCall(call_id=payload.call_id, tool_name=payload.tool_name, arguments=dict(payload.arguments))
    return FinalAnswer(content=payload.content)


def action_json_schema() -> dict[str, Any]:
    """JSON Schema of the two action shapes, generated from the same models layer 4 uses.

    Prompts and grammar-constrained decoding use this, so what a model is told can
    never drift from what the parser accepts.
    """
    adapter: TypeAdapter[ToolCallPayload | FinalAnswerPayload] = TypeAdapter(
        Annotated[ToolCallPayload | FinalAnswerPayload, Field(discriminator="type")]
    )
    return adapter.json_schema()


# --------------------------------------------------------------------------- all four


def parse_json_action(raw_text: str) -> Action:
    """Run the four layers in order; the first refusal raises ``InvalidModelOutputError``."""
    try:
        value = check_json_syntax(raw_text)
        obj = check_top_level_object(value)
        action_type = check_action_type(obj)
        return check_fields(obj, action_type)
    except InvalidModelOutputError as error:
        error.raw_text = raw_text
        raise
