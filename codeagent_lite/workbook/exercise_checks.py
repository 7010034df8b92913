"""Self-checks for the exercise book (``notebooks/05_exercises.ipynb``).

Each ``check_exercise_N`` takes the learner's objects, runs them against cases built
from the package itself (never against hard-coded answers where the package can say
what is right), prints one clear verdict and returns a ``CheckResult``.

A check never raises: a stub's ``NotImplementedError`` is reported as "not implemented
yet" and any other exception from the learner's code becomes a problem line. A learner
who sees a traceback from the checker stops trusting the checker.

Only the standard library and the package are imported here, so the checks run in any
environment the package runs in.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..diagnosis import diagnose
from ..display import shorten
from ..json_action_parser import parse_json_action
from ..json_text_adapter import ProviderError, ProviderResponse
from ..json_text_messages import ProviderMessage, build_provider_messages, encode_json
from ..kernel_types import FinalAnswer, HistoryItem, Message, MessageRole, ToolCall, ToolResult, ToolSpec
from ..model_adapter import (
    InvalidModelOutputError,
    ModelCallBudget,
    ModelProviderError,
    ModelResponse,
    TokenUsage,
    ValidationLayer,
)
from ..scripted_provider import ScriptedProvider
from .exercise_checks_messages import MESSAGES

__all__ = [
    "EXERCISE_NAMES",
    "PREDICTION_OUTPUTS",
    "CheckResult",
    "ToolCallRejected",
    "check_exercise",
    "check_exercise_1",
    "check_exercise_2",
    "check_exercise_3",
    "check_exercise_4",
    "check_exercise_5",
    "check_exercise_6",
]

say = MESSAGES.say

NOT_IMPLEMENTED = MESSAGES.say("not_implemented", language="en")
"""The English verdict for a stub; the check itself says it in the edition's language."""

EXERCISE_NAMES: dict[int, tuple[str, ...]] = {
    1: ("my_encode_json", "encode_tool_call_rejected"),
    2: ("my_check_top_level_object",),
    3: ("predictions",),
    4: ("MyJsonTextAdapter",),
    5: ("correction_message",),
    6: ("pair_results",),
}
"""The names each exercise's stub defines, in the order its check takes them."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The verdict of one self-check: no problems means passed."""

    exercise: int
    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        """The lines the notebook shows: one verdict line, then any further problems."""
        if self.passed:
            return say("passed", exercise=self.exercise)
        lines = [say("not_yet", exercise=self.exercise, problem=self.problems[0])]
        lines.extend(say("also", problem=problem) for problem in self.problems[1:])
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class ToolCallRejected:
    """Exercise 1's new history item: the runtime refused to run a tool call.

    Not part of the chapter: the learner writes its encoding. Like a ``ToolResult`` it
    is news from the environment about one earlier call, so it carries that ``call_id``.
    """

    call_id: str
    tool_name: str
    reason: str

    def __post_init__(self) -> None:
        for name in ("call_id", "tool_name", "reason"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"ToolCallRejected.{name} must be a string, found {type(value).__name__}")
            if not value.strip():
                raise ValueError(f"{name} must not be blank")


def _short(value: object, limit: int = 70) -> str:
    """``repr`` shortened the package's one way, so a problem line stays one readable line."""
    return shorten(repr(value), limit)


def _first_problem(checks: Sequence[Callable[..., str | None]], *arguments: Any) -> list[str]:
    """Run ``checks`` in order and keep the first problem: later checks assume earlier ones passed."""
    for check in checks:
        problem = check(*arguments)
        if problem is not None:
            return [problem]
    return []


def _every_problem(checks: Sequence[Callable[..., str | None]], *arguments: Any) -> list[str]:
    """Run every one of ``checks`` (they are independent) and keep each problem."""
    return [problem for check in checks if (problem := check(*arguments)) is not None]


def _verdict(exercise: int, body: Callable[[], list[str]]) -> CheckResult:
    try:
        problems = body()
    except NotImplementedError:
        problems = [say("not_implemented")]
    except Exception as error:  # the learner's code may raise anything; report it, never crash the cell
        problems = [say("your_code_raised", name=type(error).__name__, message=_short(str(error), 120))]
    result = CheckResult(exercise=exercise, problems=tuple(problems))
    print(result.summary())
    return result


# --------------------------------------------------------------------------- exercise 1


_MIXED = {"tool_name": "read_file", "arguments": {"path": "a.txt", "limit": 2}}
_SAMPLE = {"b": [1.5, None, True], "a": {"路径": "说明.md", "z": 0}}


def _not_compact(encode: Callable[[Any], Any], mixed: str) -> str | None:
    if " " in mixed or "\n" in mixed:
        return say("not_compact", got=_short(mixed))
    return None


def _keys_not_sorted(encode: Callable[[Any], Any], mixed: str) -> str | None:
    if '"tool_name"' in mixed and '"arguments"' in mixed and mixed.index('"tool_name"') < mixed.index('"arguments"'):
        return say("keys_not_sorted", got=_short(mixed))
    return None


def _escapes_chinese(encode: Callable[[Any], Any], mixed: str) -> str | None:
    chinese = encode({"content": "权限不足"})
    if "权限不足" not in str(chinese):
        return say("escapes_chinese", got=_short(chinese))
    return None


def _writes_nan(encode: Callable[[Any], Any], mixed: str) -> str | None:
    try:
        with_nan = encode({"score": math.nan})
    except ValueError:
        return None
    return say("writes_nan", got=_short(with_nan))


_ENCODE_JSON_CHECKS = (_not_compact, _keys_not_sorted, _escapes_chinese, _writes_nan)

_REJECTED_ITEMS = (
    ToolCallRejected(call_id="call_07", tool_name="write_file", reason="权限不足：/etc/hosts 在工作区之外"),
    ToolCallRejected(call_id="Call-B2", tool_name="run_shell", reason="command not allowed: rm -rf /"),
)


def _decoded_content(message: ProviderMessage) -> Any:
    try:
        return json.loads(message.content)
    except (TypeError, ValueError):
        return None


# Each check looks at (message, decoded content, item); they run in order, the first problem is reported.
_REJECTED_MESSAGE_CHECKS: tuple[Callable[[ProviderMessage, Any, ToolCallRejected], str | None], ...] = (
    lambda message, decoded, item: (
        None if decoded is not None else say("content_not_json", content=_short(message.content))
    ),
    lambda message, decoded, item: (
        None if isinstance(decoded, dict) else say("content_not_object", content=_short(message.content))
    ),
    lambda message, decoded, item: (
        None
        if set(decoded) == {"type", "call_id", "tool_name", "reason"}
        else say("content_keys", keys=sorted(decoded))
    ),
    lambda message, decoded, item: (
        None if decoded["type"] == "tool_call_rejected" else say("content_type", type=repr(decoded["type"]))
    ),
    lambda message, decoded, item: (
        None
        if decoded["call_id"] == item.call_id
        else say("content_call_id", want=repr(item.call_id), got=repr(decoded["call_id"]))
    ),
    lambda message, decoded, item: say("content_not_series", content=_short(message.content)),
)


def _rejected_item_problems(encode_rejected: Callable[[ToolCallRejected], Any], item: ToolCallRejected) -> list[str]:
    message = encode_rejected(item)
    if not isinstance(message, ProviderMessage):
        return [say("rejected_not_message", name=type(message).__name__)]
    problems = []
    if message.role != "user":
        problems.append(say("rejected_role", role=repr(message.role)))
    expected = encode_json(
        {"type": "tool_call_rejected", "call_id": item.call_id, "tool_name": item.tool_name, "reason": item.reason}
    )
    if message.content != expected:
        problems.extend(_first_problem(_REJECTED_MESSAGE_CHECKS, message, _decoded_content(message), item))
    return problems


def _problems_exercise_1(
    my_encode_json: Callable[[Any], Any], encode_tool_call_rejected: Callable[[ToolCallRejected], Any]
) -> list[str]:
    mixed = my_encode_json(_MIXED)
    if not isinstance(mixed, str):
        return [say("encode_not_string", name=type(mixed).__name__)]
    problems = _every_problem(_ENCODE_JSON_CHECKS, my_encode_json, mixed)
    if not problems and my_encode_json(_SAMPLE) != encode_json(_SAMPLE):
        problems.append(say("differs_from_series", sample=_short(_SAMPLE), expected=repr(encode_json(_SAMPLE))))
    for item in _REJECTED_ITEMS:
        item_problems = _rejected_item_problems(encode_tool_call_rejected, item)
        problems.extend(item_problems)
        if item_problems:
            break
    return problems


def check_exercise_1(
    my_encode_json: Callable[[Any], Any], encode_tool_call_rejected: Callable[[ToolCallRejected], Any]
) -> CheckResult:
    """Exercise 1: the series' JSON rules, then a new history item encoded with them."""
    return _verdict(1, lambda: _problems_exercise_1(my_encode_json, encode_tool_call_rejected))


# --------------------------------------------------------------------------- exercise 2

_NOT_OBJECTS: tuple[tuple[str, object], ...] = (
    ("label_actions_array", [{"type": "final_answer", "content": "hi"}]),
    ("label_empty_array", []),
    ("label_string", "final_answer"),
    ("label_number", 42),
    ("label_float", 0.5),
    ("label_true", True),
    ("label_null", None),
)


def _object_problem(check: Callable[[Any], Any], obj: dict[str, Any]) -> str | None:
    try:
        returned = check(obj)
    except InvalidModelOutputError as error:
        return say("object_rejected", obj=_short(obj), error=error)
    if returned != obj or not isinstance(returned, dict):
        return say("object_changed", obj=_short(obj), returned=_short(returned))
    return None


def _rejection_problem(label: str, error: InvalidModelOutputError) -> str | None:
    if error.layer is not ValidationLayer.TOP_LEVEL_OBJECT:
        return say("wrong_layer", label=label, layer=repr(error.layer))
    if not str(error).startswith("model output must be an object"):
        return say("wrong_message", label=label, message=repr(str(error)))
    if not error.expected or not error.found:
        return say("no_expected_found", label=label)
    return None


def _not_object_problem(check: Callable[[Any], Any], label: str, value: object) -> str | None:
    try:
        check(value)
    except InvalidModelOutputError as error:
        return _rejection_problem(label, error)
    except NotImplementedError:
        raise
    except Exception as error:
        return say("raised_other", label=label, value=_short(value), name=type(error).__name__)
    return say("let_through", label=label, value=_short(value))


def _problems_exercise_2(my_check_top_level_object: Callable[[Any], Any]) -> list[str]:
    problems = [
        problem
        for obj in ({"type": "final_answer", "content": "hi"}, {}, {"type": 1})
        if (problem := _object_problem(my_check_top_level_object, obj)) is not None
    ]
    problems.extend(
        problem
        for label, value in _NOT_OBJECTS
        if (problem := _not_object_problem(my_check_top_level_object, say(label), value)) is not None
    )
    return problems


def check_exercise_2(my_check_top_level_object: Callable[[Any], Any]) -> CheckResult:
    """Exercise 2: layer 2 written by the learner."""
    return _verdict(2, lambda: _problems_exercise_2(my_check_top_level_object))


# --------------------------------------------------------------------------- exercise 3

PREDICTION_OUTPUTS: dict[str, str] = {
    "A": '```json\n{"type": "final_answer", "content": "done"}\n```',
    "B": '[{"type": "final_answer", "content": "done"}]',
    "C": '{"type": "Final_Answer", "content": "done"}',
    "D": '{"type": "tool_call", "call_id": "c1", "tool_name": "read_file", "arguments": "{\\"path\\": \\"a.txt\\"}"}',
    "E": '{"type": "tool_call", "call_id": "c1", "call_id": "c2", "tool_name": "read_file", "arguments": {}}',
    "F": '"final_answer"',
    "G": '{"type": "tool_result", "call_id": "c1", "content": "hello", "is_error": false}',
    "H": '{"type": "final_answer", "content": "done", "confidence": 0.9}',
    "I": '{"type": "final_answer", "content": "答案是 42"}',
    "J": '{"type": "tool_call", "call_id": " ", "tool_name": "read_file", "arguments": {"path": "a.txt"}}',
}
"""Ten raw model outputs for exercise 3. The right answers come from ``diagnose``, not from a table."""


def _prediction_problem(label: str, value: object) -> str | None:
    """Why ``value`` is not a well-formed prediction, or None when it is one."""
    if value is None or isinstance(value, ValidationLayer):
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 4:
        return None
    return say("not_a_prediction", label=label, value=_short(value, 30))


def _as_layer(prediction: object) -> ValidationLayer | None:
    # Only called on predictions that passed _prediction_problem: None, 1-4 or a ValidationLayer.
    if isinstance(prediction, int):
        return ValidationLayer(prediction)
    return None


def _prediction_form_problems(predictions: Mapping[str, object]) -> list[str]:
    """Missing, unknown or malformed predictions: what must be fixed before any is judged."""
    problems: list[str] = []
    missing = [label for label in PREDICTION_OUTPUTS if label not in predictions]
    if missing:
        problems.append(say("no_prediction_for", labels=", ".join(missing)))
    unknown = [str(label) for label in predictions if label not in PREDICTION_OUTPUTS]
    if unknown:
        problems.append(say("unknown_labels", labels=", ".join(unknown)))
    problems.extend(
        problem
        for label in PREDICTION_OUTPUTS
        if label in predictions and (problem := _prediction_problem(label, predictions[label])) is not None
    )
    return problems


def _problems_exercise_3(predictions: Mapping[str, object]) -> list[str]:
    if not isinstance(predictions, Mapping):
        return [say("predictions_not_mapping", name=type(predictions).__name__)]
    placeholders = [label for label in PREDICTION_OUTPUTS if predictions.get(label, None) is Ellipsis]
    if placeholders:
        return [say("predictions_left", left=len(placeholders), total=len(PREDICTION_OUTPUTS))]
    problems = _prediction_form_problems(predictions)
    if problems:
        return problems
    wrong = [
        label
        for label, text in PREDICTION_OUTPUTS.items()
        if _as_layer(predictions[label]) != diagnose(text).rejected_by
    ]
    if not wrong:
        return []
    right = len(PREDICTION_OUTPUTS) - len(wrong)
    return [say("predictions_wrong", right=right, total=len(PREDICTION_OUTPUTS), labels=", ".join(wrong))]


def check_exercise_3(predictions: Mapping[str, object]) -> CheckResult:
    """Exercise 3: the learner's predictions against what ``diagnose`` says."""
    return _verdict(3, lambda: _problems_exercise_3(predictions))


# --------------------------------------------------------------------------- exercise 4

_HISTORY_4: tuple[HistoryItem, ...] = (
    Message(MessageRole.SYSTEM, "Answer with exactly one JSON action."),
    Message(MessageRole.USER, "README 里写了什么？"),
    ToolCall(call_id="call_1", tool_name="read_file", arguments={"path": "README.md"}),
    ToolResult(call_id="call_1", content="# codeagent-lite"),
)
_TOOLS_4 = (ToolSpec("read_file", "Read a text file in the workspace."),)


_BUDGET_4 = ModelCallBudget(max_output_tokens=64)
_INVALID_REPLY_4 = '[{"type":"final_answer","content":"hi"}]'


def _response_problems(response: object) -> list[str]:
    if not isinstance(response, ModelResponse):
        return [say("response_type", name=type(response).__name__)]
    problems = []
    if response.action != FinalAnswer("一个教学项目"):
        problems.append(say("response_action", action=_short(response.action)))
    if response.usage != TokenUsage(120, 30):
        problems.append(say("response_usage", usage=_short(response.usage)))
    return problems


def _request_problems(provider: ScriptedProvider) -> list[str]:
    if not provider.calls:
        return []
    call = provider.calls[0]
    problems = []
    if call.messages != build_provider_messages(_HISTORY_4):
        problems.append(say("request_messages"))
    if call.max_output_tokens != _BUDGET_4.max_output_tokens:
        problems.append(say("request_budget", got=call.max_output_tokens))
    return problems


def _valid_reply_problems(adapter_class: Callable[[Any], Any]) -> list[str]:
    good = ScriptedProvider([ProviderResponse('{"type":"final_answer","content":"一个教学项目"}', 120, 30)])
    response = adapter_class(good).complete(_HISTORY_4, _TOOLS_4, _BUDGET_4)
    return _response_problems(response) + _request_problems(good)


# Checks on the InvalidModelOutputError an invalid reply raised; each is independent of the others.
_INVALID_REPLY_CHECKS: tuple[Callable[[InvalidModelOutputError], str | None], ...] = (
    lambda error: None if error.usage == TokenUsage(80, 7) else say("invalid_usage", usage=_short(error.usage)),
    lambda error: (
        None if error.layer is ValidationLayer.TOP_LEVEL_OBJECT else say("invalid_layer", layer=repr(error.layer))
    ),
    lambda error: None if error.raw_text == _INVALID_REPLY_4 else say("invalid_raw_text"),
)


def _invalid_reply_problems(adapter_class: Callable[[Any], Any]) -> list[str]:
    bad = ScriptedProvider([ProviderResponse(_INVALID_REPLY_4, 80, 7)])
    try:
        returned = adapter_class(bad).complete(_HISTORY_4, _TOOLS_4, _BUDGET_4)
    except InvalidModelOutputError as error:
        return _every_problem(_INVALID_REPLY_CHECKS, error)
    return [say("invalid_returned", returned=_short(returned))]


def _provider_failure_problems(adapter_class: Callable[[Any], Any]) -> list[str]:
    failing = ScriptedProvider([ProviderError("HTTP 503 from the model server")])
    try:
        adapter_class(failing).complete(_HISTORY_4, _TOOLS_4, _BUDGET_4)
    except ModelProviderError as error:
        if not isinstance(error.__cause__, ProviderError):
            return [say("lost_cause")]
        return []
    except ProviderError:
        return [say("provider_error_escaped")]
    return [say("provider_error_missing")]


def _problems_exercise_4(adapter_class: Callable[[Any], Any]) -> list[str]:
    return (
        _valid_reply_problems(adapter_class)
        + _invalid_reply_problems(adapter_class)
        + _provider_failure_problems(adapter_class)
    )


def check_exercise_4(adapter_class: Callable[[Any], Any]) -> CheckResult:
    """Exercise 4: an adapter that still reports the tokens a rejected reply cost."""
    return _verdict(4, lambda: _problems_exercise_4(adapter_class))


# --------------------------------------------------------------------------- exercise 5

MAX_CORRECTION_CHARS = 600
_LONG_PROSE = "Sure! Let me think about which file to read first, step by step. " * 30

_CORRECTION_CASES: tuple[str, ...] = (
    '```json\n{"type": "final_answer", "content": "done"}\n```',
    _LONG_PROSE + '{"type": "final_answer", "content": "done"}',
    "[1, 2]",
    '{"type": "tool_result", "call_id": "c1", "content": "x", "is_error": false}',
    '{"type": "final_answer", "content": "' + "很长的回答。" * 300 + '", "note": "hi"}',
)


def _rejection(raw_text: str) -> InvalidModelOutputError:
    try:
        parse_json_action(raw_text)
    except InvalidModelOutputError as error:
        return error
    raise AssertionError(f"exercise 5 case was accepted by the parser: {raw_text[:40]!r}")


# A correction may be written in English or in Chinese: both name the layer and ask for one object.
_CHINESE_NUMERALS = {1: "一", 2: "二", 3: "三", 4: "四"}
_CHINESE_LAYER_NAMES: dict[ValidationLayer, tuple[str, ...]] = {
    ValidationLayer.JSON_SYNTAX: ("json语法", "合法json"),
    ValidationLayer.TOP_LEVEL_OBJECT: ("顶层对象", "最外层"),
    ValidationLayer.ACTION_TYPE: ("行动类型", "动作类型"),
    ValidationLayer.FIELDS: ("字段集合", "字段和类型", "字段与类型"),
}
_ONE_OBJECT_IN_CHINESE = re.compile(r"(只|仅|恰好|正好)[^。！？\n]{0,8}一个\s*json\s*对象")


def _names_layer(text: str, layer: ValidationLayer) -> bool:
    """``layer 2`` or ``top-level object``, or in Chinese ``第 2 层``, ``第二层`` or ``顶层对象``."""
    lowered = text.lower()
    compact = "".join(lowered.split())
    chinese = (f"第{int(layer)}层", f"第{_CHINESE_NUMERALS[layer]}层", *_CHINESE_LAYER_NAMES[layer])
    english = (f"layer {int(layer)}", layer.title.lower())
    return any(name in lowered for name in english) or any(name in compact for name in chinese)


def _asks_for_one_object(text: str) -> bool:
    """``exactly one JSON object``, or in Chinese ``只回复一个 JSON 对象`` and its like."""
    lowered = text.lower()
    return "exactly one json object" in lowered or _ONE_OBJECT_IN_CHINESE.search(lowered) is not None


# Each check looks at (the correction text, the rejection, the raw reply) and returns a problem or None.
_CORRECTION_CHECKS: tuple[Callable[[str, InvalidModelOutputError, str], str | None], ...] = (
    lambda text, error, raw: None if _names_layer(text, error.layer) else say("no_layer", layer=int(error.layer)),
    lambda text, error, raw: None if str(error.expected) in text else say("no_expected", expected=repr(error.expected)),
    lambda text, error, raw: None if str(error.found) in text else say("no_found", found=repr(error.found)),
    lambda text, error, raw: None if _asks_for_one_object(text) else say("no_one_object"),
    lambda text, error, raw: (
        say("echoes_raw", length=len(raw))
        if len(raw) > 100 and raw in text
        else say("too_long", length=len(text), limit=MAX_CORRECTION_CHARS)
        if len(text) > MAX_CORRECTION_CHARS
        else None
    ),
)


def _problems_exercise_5(correction_message: Callable[[InvalidModelOutputError], Any]) -> list[str]:
    for raw_text in _CORRECTION_CASES:
        error = _rejection(raw_text)
        text = correction_message(error)
        if not isinstance(text, str):
            return [say("correction_not_string", name=type(text).__name__)]
        problems = _every_problem(_CORRECTION_CHECKS, text, error, raw_text)
        if problems:
            return [say("for_layer", layer=int(error.layer), problem=problem) for problem in problems]
    return []


def check_exercise_5(correction_message: Callable[[InvalidModelOutputError], Any]) -> CheckResult:
    """Exercise 5: the correction a model gets back after a rejection."""
    return _verdict(5, lambda: _problems_exercise_5(correction_message))


# --------------------------------------------------------------------------- exercise 6

_HISTORY_6: tuple[HistoryItem, ...] = (
    Message(MessageRole.SYSTEM, "Answer with exactly one JSON action."),
    Message(MessageRole.USER, "比较 a.txt 和 b.txt"),
    Message(MessageRole.USER, "{this looks like JSON but is not"),
    ToolCall(call_id="call_a", tool_name="read_file", arguments={"path": "a.txt"}),
    ToolCall(call_id="call_B", tool_name="stat_file", arguments={"path": "b.txt"}),
    ToolCall(call_id="call_b", tool_name="read_file", arguments={"path": "b.txt"}),
    Message(MessageRole.USER, '["not", "a", "tool", "message"]'),
    ToolResult(call_id="call_b", content="内容 B"),
    ToolResult(call_id="call_a", content="内容 A"),
    ToolResult(call_id="call_B", content="size=12", is_error=False),
)
_EXPECTED_6 = [("call_b", "read_file", "内容 B"), ("call_a", "read_file", "内容 A"), ("call_B", "stat_file", "size=12")]


def _pairing_problems(paired: Iterable[Any]) -> list[str]:
    got = [tuple(row) if isinstance(row, (list, tuple)) else row for row in paired]
    if got == _EXPECTED_6:
        return []
    if len(got) != len(_EXPECTED_6):
        return [say("pair_count", want=len(_EXPECTED_6), got=len(got), pairs=_short(got))]
    wrong = [f"{want[0]!r}" for want, row in zip(_EXPECTED_6, got, strict=True) if row != want]
    return [say("pairs_wrong", ids=", ".join(wrong), pairs=_short(got, 140))]


def _orphan_problems(pair_results: Callable[[Sequence[ProviderMessage]], Any]) -> list[str]:
    stray = encode_json({"type": "tool_result", "call_id": "call_x", "content": "?", "is_error": True})
    orphan = (*build_provider_messages(_HISTORY_6), ProviderMessage("user", stray))
    try:
        pair_results(orphan)
    except ValueError:
        return []
    except NotImplementedError:
        raise
    except Exception as error:
        return [say("orphan_raised", name=type(error).__name__)]
    return [say("orphan_accepted")]


def _problems_exercise_6(pair_results: Callable[[Sequence[ProviderMessage]], Any]) -> list[str]:
    paired = pair_results(build_provider_messages(_HISTORY_6))
    if paired is None or isinstance(paired, (str, bytes)) or not hasattr(paired, "__iter__"):
        return [say("pairs_not_list", name=type(paired).__name__)]
    return _pairing_problems(paired) + _orphan_problems(pair_results)


def check_exercise_6(pair_results: Callable[[Sequence[ProviderMessage]], Any]) -> CheckResult:
    """Exercise 6 (optional): reading the encoded history back, pairing results with calls by call_id."""
    return _verdict(6, lambda: _problems_exercise_6(pair_results))


_CHECKS: dict[int, Callable[..., CheckResult]] = {
    1: check_exercise_1,
    2: check_exercise_2,
    3: check_exercise_3,
    4: check_exercise_4,
    5: check_exercise_5,
    6: check_exercise_6,
}


def check_exercise(number: int, namespace: Mapping[str, Any]) -> CheckResult:
    """Run exercise ``number``'s check on the names its stub defines in ``namespace`` (a notebook's globals)."""
    if number not in _CHECKS:
        raise ValueError(f"there is no exercise {number}; the exercises are {sorted(_CHECKS)}")
    missing = [name for name in EXERCISE_NAMES[number] if name not in namespace]
    if missing:
        result = CheckResult(number, (say("not_defined", names=", ".join(missing)),))
        print(result.summary())
        return result
    return _CHECKS[number](*(namespace[name] for name in EXERCISE_NAMES[number]))
