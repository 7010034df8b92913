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
from .ladder import layer_label
from .words import N_, _, _p

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

_STUB = N_("not implemented yet (the stub still raises NotImplementedError)")
NOT_IMPLEMENTED = _(_STUB, language="en")
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
            return _("✔ Exercise {exercise} passed", exercise=self.exercise)
        lines = [_("✘ Exercise {exercise}: not yet — {problem}", exercise=self.exercise, problem=self.problems[0])]
        lines.extend(_("    also: {problem}", problem=problem) for problem in self.problems[1:])
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


def _verdict(exercise: int, body: Callable[[], list[str]]) -> CheckResult:
    try:
        problems = body()
    except NotImplementedError:
        problems = [_(_STUB)]
    except Exception as error:  # the learner's code may raise anything; report it, never crash the cell
        problems = [_("your code raised {name}: {message}", name=type(error).__name__, message=_short(str(error), 120))]
    result = CheckResult(exercise=exercise, problems=tuple(problems))
    print(result.summary())
    return result


# --------------------------------------------------------------------------- exercise 1


_MIXED = {"tool_name": "read_file", "arguments": {"path": "a.txt", "limit": 2}}
_SAMPLE = {"b": [1.5, None, True], "a": {"路径": "说明.md", "z": 0}}


def _encoding_problems(encode: Callable[[Any], Any], mixed: str) -> list[str]:
    """The series' four JSON rules, each checked on its own: compact, sorted keys, Chinese kept, NaN refused."""
    problems = []
    if " " in mixed or "\n" in mixed:
        problems.append(_("my_encode_json is not compact: got {got}; use separators=(',', ':')", got=_short(mixed)))
    if '"tool_name"' in mixed and '"arguments"' in mixed and mixed.index('"tool_name"') < mixed.index('"arguments"'):
        problems.append(_("my_encode_json does not sort keys: got {got}", got=_short(mixed)))
    chinese = encode({"content": "权限不足"})
    if "权限不足" not in str(chinese):
        problems.append(_("my_encode_json escapes Chinese text: got {got}; keep it as-is", got=_short(chinese)))
    try:
        with_nan = encode({"score": math.nan})
    except ValueError:
        return problems
    return [
        *problems,
        _("my_encode_json wrote NaN into the JSON (got {got}); it must refuse NaN", got=_short(with_nan)),
    ]


_REJECTED_ITEMS = (
    ToolCallRejected(call_id="call_07", tool_name="write_file", reason="权限不足：/etc/hosts 在工作区之外"),
    ToolCallRejected(call_id="Call-B2", tool_name="run_shell", reason="command not allowed: rm -rf /"),
)


def _content_problem(content: str, item: ToolCallRejected) -> str:
    """The first way ``content`` differs from the series' encoding of ``item`` (each step assumes the earlier)."""
    try:
        decoded = json.loads(content)
    except (TypeError, ValueError):
        return _("the content is not JSON: {content}", content=_short(content))
    if not isinstance(decoded, dict):
        return _("the content must be a JSON object, got {content}", content=_short(content))
    if set(decoded) != {"type", "call_id", "tool_name", "reason"}:
        return _("the content's keys are {keys}; expected call_id, reason, tool_name, type", keys=sorted(decoded))
    if decoded["type"] != "tool_call_rejected":
        return _('"type" is {type}; expected "tool_call_rejected"', type=repr(decoded["type"]))
    if decoded["call_id"] != item.call_id:
        want, got = repr(item.call_id), repr(decoded["call_id"])
        return _("call_id {want} came out as {got}; keep it verbatim", want=want, got=got)
    return _("the content is not encoded the series' way: got {content}", content=_short(content))


def _rejected_item_problems(encode_rejected: Callable[[ToolCallRejected], Any], item: ToolCallRejected) -> list[str]:
    message = encode_rejected(item)
    if not isinstance(message, ProviderMessage):
        return [_("encode_tool_call_rejected must return a ProviderMessage, found {name}", name=type(message).__name__)]
    problems = []
    if message.role != "user":
        role = repr(message.role)
        problems.append(
            _("the role is {role}; a rejection is news from the environment, like a tool result", role=role)
        )
    expected = encode_json(
        {"type": "tool_call_rejected", "call_id": item.call_id, "tool_name": item.tool_name, "reason": item.reason}
    )
    return problems if message.content == expected else [*problems, _content_problem(message.content, item)]


def _problems_exercise_1(
    my_encode_json: Callable[[Any], Any],
    encode_tool_call_rejected: Callable[[ToolCallRejected], Any],
    sample: object = _SAMPLE,
    items: Sequence[ToolCallRejected] = _REJECTED_ITEMS,
) -> list[str]:
    mixed = my_encode_json(_MIXED)
    if not isinstance(mixed, str):
        return [_("my_encode_json must return a string, found {name}", name=type(mixed).__name__)]
    problems = _encoding_problems(my_encode_json, mixed)
    expected = encode_json(sample)
    if not problems and my_encode_json(sample) != expected:
        shown, wanted = _short(sample), repr(expected)
        problems.append(
            _("my_encode_json({sample}) differs from the series' encoding {expected}", sample=shown, expected=wanted)
        )
    item_problems = (_rejected_item_problems(encode_tool_call_rejected, item) for item in items)
    return problems + next((found for found in item_problems if found), [])


def check_exercise_1(
    my_encode_json: Callable[[Any], Any], encode_tool_call_rejected: Callable[[ToolCallRejected], Any]
) -> CheckResult:
    """Exercise 1: the series' JSON rules, then a new history item encoded with them."""
    return _verdict(1, lambda: _problems_exercise_1(my_encode_json, encode_tool_call_rejected))


# --------------------------------------------------------------------------- exercise 2

_OBJECTS: tuple[dict[str, Any], ...] = ({"type": "final_answer", "content": "hi"}, {}, {"type": 1})
_NOT_OBJECTS: tuple[tuple[str, object], ...] = (
    (N_("an array of actions"), [{"type": "final_answer", "content": "hi"}]),
    (N_("an empty array"), []),
    (N_("a string"), "final_answer"),
    (N_("a number"), 42),
    (N_("a float"), 0.5),
    (N_("the value true"), True),
    (N_("the value null"), None),
)


def _object_problem(check: Callable[[Any], Any], obj: dict[str, Any]) -> str | None:
    try:
        returned = check(obj)
    except InvalidModelOutputError as error:
        return _(
            "it rejected the object {obj} ({error}); layer 2 lets every object through", obj=_short(obj), error=error
        )
    if returned != obj or not isinstance(returned, dict):
        shown, got = _short(obj), _short(returned)
        return _("for the object {obj} it returned {returned}; return the object itself", obj=shown, returned=got)
    return None


def _kind_words(value: object) -> tuple[str, ...]:
    """Words that name ``value``'s kind in ``found=``: its JSON type or its Python type (``bool`` before ``int``)."""
    if isinstance(value, bool):
        return ("true" if value else "false", "bool")
    if isinstance(value, (int, float)):
        return ("number", type(value).__name__)
    if isinstance(value, list):
        return ("array", "list")
    return ("string", "str") if isinstance(value, str) else ("null", "none")


def _rejection_problem(label: str, value: object, error: InvalidModelOutputError) -> str | None:
    """Layer 2's refusal as the series writes it; expected= and found= each say what they mean (the loop shows them)."""
    expected, found = str(error.expected or ""), str(error.found or "")
    if error.layer is not ValidationLayer.TOP_LEVEL_OBJECT:
        layer = repr(error.layer)
        return _("the error for {label} has layer {layer}; expected TOP_LEVEL_OBJECT", label=label, layer=layer)
    if not str(error).startswith("model output must be an object"):
        message = repr(str(error))
        return _(
            "the message for {label} is {message}; start it 'model output must be an object'",
            label=label,
            message=message,
        )
    if not expected or not found:
        return _("the error for {label} does not fill expected= and found=", label=label)
    return _fields_problem(label, value, expected, found)


def _fields_problem(label: str, value: object, expected: str, found: str) -> str | None:
    if not any(word in expected.lower() for word in ("object", "dict", "{")):
        return _(
            "the error for {label} has expected={expected}, which does not say that an object was expected",
            label=label,
            expected=repr(expected),
        )
    shown = (*_kind_words(value), repr(value), json.dumps(value))
    if not any(word in found.lower() or word in found for word in shown):
        return _(
            "the error for {label} has found={found}, which does not say what came instead "
            "(name its JSON type, such as 'an array', or show the value)",
            label=label,
            found=repr(found),
        )
    named = _other_kinds_named(value, found)
    if named:
        return _(
            "the error for {label} has found={found}, which also names {kinds}: say what this value is, "
            "not every kind it might have been",
            label=label,
            found=repr(found),
            kinds=_(", ").join(named),
        )
    return None


_KIND_WORDS = frozenset({"array", "list", "string", "str", "number", "int", "float", "true", "false", "bool", "null"})


def _other_kinds_named(value: object, found: str) -> list[str]:
    """The kinds ``found`` names besides ``value``'s own (the value itself, if shown, taken out first): a ``found``
    that lists every kind would otherwise always name the right one."""
    rest = found.lower()
    for shown in (repr(value), json.dumps(value)):
        rest = rest.replace(shown.lower(), " ")
    return sorted((set(re.findall(r"[a-z]+", rest)) & _KIND_WORDS) - set(_kind_words(value)))


def _not_object_problem(check: Callable[[Any], Any], label: str, value: object) -> str | None:
    try:
        check(value)
    except InvalidModelOutputError as error:
        return _rejection_problem(label, value, error)
    except NotImplementedError:
        raise
    except Exception as error:
        return _(
            "{label} ({value}) raised {name}, not InvalidModelOutputError",
            label=label,
            value=_short(value),
            name=type(error).__name__,
        )
    return _("{label} ({value}) was let through; layer 2 must reject it", label=label, value=_short(value))


def _problems_exercise_2(
    my_check_top_level_object: Callable[[Any], Any],
    objects: Sequence[dict[str, Any]] = _OBJECTS,
    not_objects: Sequence[tuple[str, object]] = _NOT_OBJECTS,
) -> list[str]:
    found = [_object_problem(my_check_top_level_object, obj) for obj in objects]
    found += [_not_object_problem(my_check_top_level_object, _(label), value) for label, value in not_objects]
    return [problem for problem in found if problem is not None]


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
    return _("{label}: {value} is not a prediction (use 1, 2, 3, 4 or None)", label=label, value=_short(value, 30))


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
        problems.append(_("no prediction for {labels}", labels=", ".join(missing)))
    unknown = [str(label) for label in predictions if label not in PREDICTION_OUTPUTS]
    if unknown:
        problems.append(_("unknown labels {labels}", labels=", ".join(unknown)))
    problems.extend(
        problem
        for label in PREDICTION_OUTPUTS
        if label in predictions and (problem := _prediction_problem(label, predictions[label])) is not None
    )
    return problems


def _problems_exercise_3(predictions: Mapping[str, object]) -> list[str]:
    if not isinstance(predictions, Mapping):
        return [_("predictions must be a dict from label to layer, found {name}", name=type(predictions).__name__)]
    placeholders = [label for label in PREDICTION_OUTPUTS if predictions.get(label, None) is Ellipsis]
    if placeholders:
        left, total = len(placeholders), len(PREDICTION_OUTPUTS)
        return [_("{left} of {total} outputs still have no prediction (the ... marks)", left=left, total=total)]
    problems = _prediction_form_problems(predictions)
    if problems:
        return problems
    return _wrong_predictions(predictions)


def _wrong_predictions(predictions: Mapping[str, object]) -> list[str]:
    """How many predictions are wrong and which rules to reread; never which labels, or reruns find the answers."""
    truths = {label: diagnose(text).rejected_by for label, text in PREDICTION_OUTPUTS.items()}
    wrong = [truth for label, truth in truths.items() if _as_layer(predictions[label]) != truth]
    if not wrong:
        return []
    rules = [layer_label(layer) for layer in sorted({layer for layer in wrong if layer is not None})]
    rules += [_("what the parser accepts")] if None in wrong else []
    return [
        _(
            "{wrong} of {total} predictions are wrong. Reread the rules of: {rules}; the first layer to refuse decides",
            wrong=len(wrong),
            total=len(PREDICTION_OUTPUTS),
            rules=_p("between the items of a list", "; ").join(rules),
        )
    ]


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
_USAGE_4 = TokenUsage(80, 7)


def _response_problems(response: object) -> list[str]:
    if not isinstance(response, ModelResponse):
        return [_("a valid reply must give a ModelResponse, found {name}", name=type(response).__name__)]
    problems = []
    if response.action != FinalAnswer("一个教学项目"):
        problems.append(_("a valid reply gave the action {action}", action=_short(response.action)))
    if response.usage != TokenUsage(120, 30):
        problems.append(
            _("a valid reply reported usage {usage}; expected TokenUsage(120, 30)", usage=_short(response.usage))
        )
    return problems


def _request_problems(provider: ScriptedProvider) -> list[str]:
    if not provider.calls:
        return []
    call = provider.calls[0]
    problems = []
    if call.messages != build_provider_messages(_HISTORY_4):
        problems.append(_("the provider did not receive build_provider_messages(history)"))
    if call.max_output_tokens != _BUDGET_4.max_output_tokens:
        problems.append(_("max_output_tokens was {got}, not budget.max_output_tokens (64)", got=call.max_output_tokens))
    return problems


def _valid_reply_problems(adapter_class: Callable[[Any], Any]) -> list[str]:
    good = ScriptedProvider([ProviderResponse('{"type":"final_answer","content":"一个教学项目"}', 120, 30)])
    response = adapter_class(good).complete(_HISTORY_4, _TOOLS_4, _BUDGET_4)
    return _response_problems(response) + _request_problems(good)


def _raised_problems(error: InvalidModelOutputError, refused: InvalidModelOutputError, usage: TokenUsage) -> list[str]:
    """What the adapter's error must keep: the tokens spent, the parser's layer and raw text, the parser's error."""
    problems = []
    if error.usage != usage:
        problems.append(
            _(
                "the InvalidModelOutputError carries usage={usage}; the {total} tokens were spent, "
                "so it must carry TokenUsage({input}, {output})",
                usage=_short(error.usage),
                total=usage.input_tokens + usage.output_tokens,
                input=usage.input_tokens,
                output=usage.output_tokens,
            )
        )
    if error.layer is not refused.layer:
        layer, wanted = repr(error.layer), refused.layer.name
        problems.append(
            _("the error lost the parser's layer (got {layer}, expected {wanted})", layer=layer, wanted=wanted)
        )
    if error.raw_text != refused.raw_text:
        problems.append(_("the error lost the raw text the parser recorded"))
    if not isinstance(error.__cause__, InvalidModelOutputError):
        problems.append(
            _("the error has no cause: raise it from the parser's error (raise error.with_usage(usage) from error)")
        )
    return problems


def _invalid_reply_problems(
    adapter_class: Callable[[Any], Any], reply: str = _INVALID_REPLY_4, usage: TokenUsage = _USAGE_4
) -> list[str]:
    bad = ScriptedProvider([ProviderResponse(reply, usage.input_tokens, usage.output_tokens)])
    try:
        returned = adapter_class(bad).complete(_HISTORY_4, _TOOLS_4, _BUDGET_4)
    except InvalidModelOutputError as error:
        return _raised_problems(error, _rejection(reply), usage)
    got = _short(returned)
    return [_("an invalid reply must raise InvalidModelOutputError, but complete() returned {returned}", returned=got)]


def _provider_failure_problems(adapter_class: Callable[[Any], Any]) -> list[str]:
    failing = ScriptedProvider([ProviderError("HTTP 503 from the model server")])
    try:
        adapter_class(failing).complete(_HISTORY_4, _TOOLS_4, _BUDGET_4)
    except ModelProviderError as error:
        if not isinstance(error.__cause__, ProviderError):
            return [_("the ModelProviderError lost its cause; raise it 'from' the ProviderError")]
        return []
    except ProviderError:
        return [_("a ProviderError escaped; the Kernel only knows ModelProviderError")]
    return [_("a failing provider must raise ModelProviderError")]


def _problems_exercise_4(
    adapter_class: Callable[[Any], Any], reply: str = _INVALID_REPLY_4, usage: TokenUsage = _USAGE_4
) -> list[str]:
    return (
        _valid_reply_problems(adapter_class)
        + _invalid_reply_problems(adapter_class, reply, usage)
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
    raise AssertionError(f"the parser accepted a case meant to be refused: {raw_text[:40]!r}")


# A correction may be written in English or in Chinese: both name the layer and ask for one object.
_CHINESE_NUMERALS = {1: "一", 2: "二", 3: "三", 4: "四"}
_CHINESE_LAYER_NAMES: dict[ValidationLayer, tuple[str, ...]] = {
    ValidationLayer.JSON_SYNTAX: ("json语法", "合法json"),
    ValidationLayer.TOP_LEVEL_OBJECT: ("顶层对象", "最外层"),
    ValidationLayer.ACTION_TYPE: ("行动类型",),
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


def _other_layer_named(text: str, error: InvalidModelOutputError) -> ValidationLayer | None:
    """A layer the message names besides the one that refused (``layer 3``, ``action type``), its fields aside."""
    rest = text.replace(str(error.expected), " ").replace(str(error.found), " ").lower()
    return next(
        (
            other
            for other in ValidationLayer
            if other is not error.layer
            and (re.search(rf"\blayer\s*{int(other)}\b", rest) or other.title.lower() in rest)
        ),
        None,
    )


def _asks_for_one_object(text: str) -> bool:
    """``exactly one JSON object``, or in Chinese ``只回复一个 JSON 对象`` and its like."""
    lowered = text.lower()
    return "exactly one json object" in lowered or _ONE_OBJECT_IN_CHINESE.search(lowered) is not None


def _correction_problems(text: str, error: InvalidModelOutputError, raw: str) -> list[str]:
    """Each independent way the correction ``text`` for ``error`` (on the reply ``raw``) falls short."""
    problems = []
    if not _names_layer(text, error.layer):
        problems.append(_("the message does not name the layer (layer {layer})", layer=int(error.layer)))
    if str(error.expected) not in text:
        problems.append(_("the message does not say what was expected ({expected})", expected=repr(error.expected)))
    if str(error.found) not in text:
        problems.append(_("the message does not say what was found ({found})", found=repr(error.found)))
    if not _asks_for_one_object(text):
        problems.append(_("the message does not ask for exactly one JSON object"))
    other = _other_layer_named(text, error)
    if other is not None:
        label = layer_label(other)
        problems.append(_("the message also names {other}; name only the layer that refused the reply", other=label))
    if len(raw) > 100 and raw in text:
        problems.append(_("the message echoes the whole raw reply ({length} characters)", length=len(raw)))
    elif len(text) > MAX_CORRECTION_CHARS:
        length, limit = len(text), MAX_CORRECTION_CHARS
        problems.append(_("the message has {length} characters; keep it under {limit}", length=length, limit=limit))
    return problems


def _problems_exercise_5(
    correction_message: Callable[[InvalidModelOutputError], Any], cases: Sequence[str] = _CORRECTION_CASES
) -> list[str]:
    for raw_text in cases:
        error = _rejection(raw_text)
        text = correction_message(error)
        if not isinstance(text, str):
            return [_("correction_message must return a string, found {name}", name=type(text).__name__)]
        problems = _correction_problems(text, error, raw_text)
        if problems:
            return [
                _("for a layer-{layer} rejection {problem}", layer=int(error.layer), problem=problem)
                for problem in problems
            ]
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
        return [
            _(
                "expected {want} pairs (one per tool result), got {got}: {pairs}",
                want=len(_EXPECTED_6),
                got=len(got),
                pairs=_short(got),
            )
        ]
    wrong = [f"{want[0]!r}" for want, row in zip(_EXPECTED_6, got, strict=True) if row != want]
    return [
        _(
            "results for {ids} were paired with the wrong call (got {pairs}); "
            "match on call_id exactly, not on position",
            ids=", ".join(wrong),
            pairs=_short(got, 140),
        )
    ]


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
        return [_("a result for an unknown call_id raised {name}; raise ValueError", name=type(error).__name__)]
    return [_("a result whose call_id matches no earlier call was accepted; raise ValueError")]


def _problems_exercise_6(pair_results: Callable[[Sequence[ProviderMessage]], Any]) -> list[str]:
    paired = pair_results(build_provider_messages(_HISTORY_6))
    if paired is None or isinstance(paired, (str, bytes)) or not hasattr(paired, "__iter__"):
        return [
            _(
                "pair_results must return a list of (call_id, tool_name, content), found {name}",
                name=type(paired).__name__,
            )
        ]
    return _pairing_problems(paired) + _orphan_problems(pair_results)


def check_exercise_6(pair_results: Callable[[Sequence[ProviderMessage]], Any]) -> CheckResult:
    """Exercise 6 (optional): reading the encoded history back, pairing results with calls by call_id."""
    return _verdict(6, lambda: _problems_exercise_6(pair_results))


_PROBLEMS: dict[int, Callable[..., list[str]]] = {
    1: _problems_exercise_1,
    2: _problems_exercise_2,
    3: _problems_exercise_3,
    4: _problems_exercise_4,
    5: _problems_exercise_5,
    6: _problems_exercise_6,
}


def check_exercise(number: int, namespace: Mapping[str, Any], **cases: Any) -> CheckResult:
    """Run exercise ``number``'s check on the names its stub defines in ``namespace`` (a notebook's globals).

    ``cases`` replace the check's own inputs by others of the same kind (the outside judge's, drawn fresh for each
    grading run), so the self-check a learner sees and the hidden one are one check."""
    if number not in _PROBLEMS:
        raise ValueError(f"there is no exercise {number}; the exercises are {sorted(_PROBLEMS)}")
    missing = [name for name in EXERCISE_NAMES[number] if name not in namespace]
    if missing:
        problem = _("{names} is not defined yet: run the exercise cell first", names=", ".join(missing))
        return _verdict(number, lambda: [problem])
    return _verdict(number, lambda: _PROBLEMS[number](*(namespace[name] for name in EXERCISE_NAMES[number]), **cases))
