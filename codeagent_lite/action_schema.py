"""The parser's contract as JSON Schema, for prompts and grammar-constrained decoding."""

from __future__ import annotations

from typing import Any

from .json_action_parser import CONTRACTS

__all__ = ["action_json_schema"]


def action_json_schema() -> dict[str, Any]:
    """Written from ``CONTRACTS``, the table layer 4 checks: what a model is told cannot drift from what is checked.

    JSON Schema cannot say "not only whitespace"; ``minLength`` 1 is the closest it gets.
    """
    kinds: dict[str, dict[str, Any]] = {"a non-blank string": {"minLength": 1, "type": "string"}}
    kinds["an object"] = {"additionalProperties": True, "type": "object"}
    names = {"tool_call": "ToolCallPayload", "final_answer": "FinalAnswerPayload"}
    definitions = {
        names[action]: {
            "additionalProperties": False,
            "properties": {
                name: {"const": action, "type": "string"} if kind == "the action type" else kinds[kind]
                for name, kind in contract.items()
            },
            "required": list(contract),
            "title": names[action],
            "type": "object",
        }
        for action, contract in CONTRACTS.items()
    }
    references = {action: f"#/$defs/{name}" for action, name in names.items()}
    return {
        "$defs": dict(sorted(definitions.items())),
        "discriminator": {"mapping": dict(sorted(references.items())), "propertyName": "type"},
        "oneOf": [{"$ref": reference} for reference in references.values()],
    }
