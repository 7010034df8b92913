"""Reference solutions for notebooks/05_exercises.ipynb.

Try each exercise first: the self-check in the notebook tells you what is still wrong,
which teaches more than reading an answer. Each solution here is one way to pass; the
checks accept any implementation that behaves the same.

Run this file to see every self-check pass:  python notebooks/solutions/05_exercises_solutions.py
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from codeagent_lite import (
    InvalidModelOutputError,
    ModelCallBudget,
    ModelProviderError,
    ModelResponse,
    ProviderError,
    ProviderMessage,
    TextProvider,
    TokenUsage,
    ToolSpec,
    ValidationLayer,
    build_provider_messages,
    parse_json_action,
)
from codeagent_lite.workbook.exercise_checks import ToolCallRejected
from codeagent_lite.kernel_types import HistoryItem

# --------------------------------------------------------------------------- exercise 1


def my_encode_json(value: Any) -> str:
    # Sorted and compact: the same history always gives the same prompt bytes.
    # ensure_ascii=False: Chinese stays readable (and cheaper in tokens than \uXXXX).
    # allow_nan=False: NaN is not JSON, and our own parser would refuse to read it back.
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


def encode_tool_call_rejected(item: ToolCallRejected) -> ProviderMessage:
    # Like a ToolResult, a rejection is news from the environment, so it comes from the user side.
    return ProviderMessage(
        role="user",
        content=my_encode_json(
            {
                "type": "tool_call_rejected",
                "call_id": item.call_id,
                "tool_name": item.tool_name,
                "reason": item.reason,
            }
        ),
    )


# --------------------------------------------------------------------------- exercise 2


def my_check_top_level_object(value: Any) -> dict[str, Any]:
    # isinstance, not truthiness: {} is an object (layer 3 will refuse it), [] is not.
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else type(value).__name__
        raise InvalidModelOutputError(
            f"model output must be an object, found {kind}",
            layer=ValidationLayer.TOP_LEVEL_OBJECT,
            expected="a JSON object {...}",
            found=kind,
        )
    return value


# --------------------------------------------------------------------------- exercise 3

predictions: dict[str, int | None] = {
    "A": 1,  # a markdown fence is not JSON; nothing is stripped for the model
    "B": 2,  # valid JSON, but an array of actions is not one action
    "C": 3,  # type is case-sensitive
    "D": 4,  # arguments is a string that happens to hold JSON, not an object
    "E": 1,  # duplicate keys are refused while reading the JSON, before anything else
    "F": 2,  # a bare string is a valid JSON value, but not an object
    "G": 3,  # tool_result is something the model receives, never an action it sends
    "H": 4,  # an extra field breaks the final_answer contract
    "I": None,  # accepted: spaces between tokens and Chinese text are fine
    "J": 4,  # call_id is present and a string, but blank
}


# --------------------------------------------------------------------------- exercise 4


class MyJsonTextAdapter:
    def __init__(self, provider: TextProvider) -> None:
        self._provider = provider

    def complete(
        self, history: Sequence[HistoryItem], tools: Sequence[ToolSpec], budget: ModelCallBudget
    ) -> ModelResponse:
        provider_messages = build_provider_messages(history)
        try:
            raw_response = self._provider.complete(
                messages=provider_messages, tools=tools, max_output_tokens=budget.max_output_tokens
            )
        except ProviderError as error:
            raise ModelProviderError(f"provider request failed: {error}") from error
        usage = TokenUsage(input_tokens=raw_response.input_tokens, output_tokens=raw_response.output_tokens)
        try:
            action = parse_json_action(raw_response.text)
        except InvalidModelOutputError as error:
            # The tokens are spent whether or not the reply was usable.
            raise error.with_usage(usage) from error
        return ModelResponse(action=action, usage=usage)


# --------------------------------------------------------------------------- exercise 5


def correction_message(error: InvalidModelOutputError) -> str:
    # Built from the structured fields only: error.raw_text may be megabytes the model already has.
    layer = error.layer
    where = f"layer {int(layer)} ({layer.title})" if layer is not None else "the parser"
    return (
        f"Your last reply was rejected at {where}. "
        f"Expected {error.expected}; found {error.found}. "
        "Reply again with exactly one JSON object and nothing else: "
        '{"type":"tool_call","call_id":...,"tool_name":...,"arguments":{...}} '
        'or {"type":"final_answer","content":...}.'
    )


# --------------------------------------------------------------------------- exercise 6


def pair_results(messages: Sequence[ProviderMessage]) -> list[tuple[str, str, str]]:
    calls: dict[str, str] = {}
    pairs: list[tuple[str, str, str]] = []
    for message in messages:
        try:
            decoded = json.loads(message.content)
        except ValueError:
            continue  # plain prose, not tool traffic
        if not isinstance(decoded, dict):
            continue
        if decoded.get("type") == "tool_call":
            calls[decoded["call_id"]] = decoded["tool_name"]
        elif decoded.get("type") == "tool_result":
            call_id = decoded["call_id"]
            if call_id not in calls:
                raise ValueError(f"tool result for unknown call_id {call_id!r}")
            pairs.append((call_id, calls[call_id], decoded["content"]))
    return pairs


if __name__ == "__main__":
    from codeagent_lite.workbook.exercise_checks import check_exercise

    for number in range(1, 7):
        check_exercise(number, globals())
