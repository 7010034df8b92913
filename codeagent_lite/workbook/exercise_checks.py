"""Self-checks for the exercise book (notebook 05): each runs the learner's objects on cases the package itself
judges (never a table of answers where the package can say what is right) and prints one verdict. A check never
raises (a learner who sees a traceback from the checker stops trusting it): a stub's ``NotImplementedError`` is
"not implemented yet", any other exception from the learner's code a problem line.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..diagnosis import diagnose
from ..display import error_text, printable
from ..json_text_adapter import ProviderError, ProviderResponse
from ..json_text_messages import ProviderMessage, build_provider_messages, encode_json
from ..kernel_types import FinalAnswer, HistoryItem, Message, MessageRole, ToolCall, ToolResult, ToolSpec, require_text
from ..model_adapter import (
    InvalidModelOutputError,
    ModelCallBudget,
    ModelProviderError,
    ModelResponse,
    TokenUsage,
    ValidationLayer,
)
from ..scripted_provider import ScriptedProvider
from .ladder import layer_label, layer_title
from .wire import shown
from .words import N_, _, _p

_short = functools.partial(shown, limit=70)
"""A value in a problem line, cut so the line stays readable (a learner's raising ``__repr__`` says so)."""

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
class ExerciseVerdict:
    """The verdict of one exercise's self-check (verify's checks have ``verify.CheckResult``): no problems, passed."""

    exercise: int
    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        """Escaped: a problem quotes the learner's code (an exception's message, a class's name)."""
        if self.passed:
            return _("✔ Exercise {exercise} passed", exercise=self.exercise)
        lines = [_("✘ Exercise {exercise}: not yet — {problem}", exercise=self.exercise, problem=self.problems[0])]
        lines.extend(_("    also: {problem}", problem=problem) for problem in self.problems[1:])
        return printable("\n".join(lines))


@dataclass(frozen=True, slots=True)
class ToolCallRejected:
    """Exercise 1's new history item, not the chapter's: like a ``ToolResult`` it is news from the environment
    about one earlier call (the runtime refused to run it), so it carries that ``call_id``."""

    call_id: str
    tool_name: str
    reason: str

    def __post_init__(self) -> None:
        for name in ("call_id", "tool_name", "reason"):
            require_text("ToolCallRejected", name, getattr(self, name))


def _verdict(exercise: int, body: Callable[[], list[str]]) -> ExerciseVerdict:
    try:
        problems = body()
    except NotImplementedError:
        problems = [_("not implemented yet (the stub still raises NotImplementedError)")]
    except Exception as error:  # the learner's code may raise anything; report it, never crash the cell
        message = shown(error_text(error), 120)
        problems = [_("your code raised {name}: {message}", name=type(error).__name__, message=message)]
    result = ExerciseVerdict(exercise=exercise, problems=tuple(problems))
    print(result.summary())
    return result


_CHECKS: dict[int, Callable[..., ExerciseVerdict]] = {}


def _self_check(exercise: int) -> Callable[[Callable[..., list[str]]], Callable[..., ExerciseVerdict]]:
    """Turns the list of an exercise's problems into the check a notebook calls. Keyword arguments replace its cases
    by others of the same kind (the outside judge's, fresh for each grading), so what a learner sees is the grade."""

    def register(problems: Callable[..., list[str]]) -> Callable[..., ExerciseVerdict]:
        @functools.wraps(problems)
        def check(*objects: Any, **cases: Any) -> ExerciseVerdict:
            return _verdict(exercise, lambda: problems(*objects, **cases))

        _CHECKS[exercise] = check
        return check

    return register


# --------------------------------------------------------------------------- exercise 1

_MIXED = {"tool_name": "read_file", "arguments": {"path": "a.txt", "limit": 2}}
_SAMPLE = {"b": [1.5, None, True], "a": {"路径": "说明.md", "z": 0}}
_REJECTED_ITEMS = (
    ToolCallRejected(call_id="call_07", tool_name="write_file", reason="权限不足：/etc/hosts 在工作区之外"),
    ToolCallRejected(call_id="Call-B2", tool_name="run_shell", reason="command not allowed: rm -rf /"),
)


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
    with contextlib.suppress(ValueError):  # refusing NaN is the rule
        got = _short(encode({"score": math.nan}))
        problems.append(_("my_encode_json wrote NaN into the JSON (got {got}); it must refuse NaN", got=got))
    return problems


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
    expected = encode_json({"type": "tool_call_rejected", **asdict(item)})
    return problems if message.content == expected else [*problems, _content_problem(message.content, item)]


@_self_check(1)
def check_exercise_1(
    my_encode_json: Callable[[Any], Any],
    encode_tool_call_rejected: Callable[[ToolCallRejected], Any],
    sample: object = _SAMPLE,
    items: Sequence[ToolCallRejected] = _REJECTED_ITEMS,
) -> list[str]:
    """Exercise 1: the series' JSON rules, then a new history item encoded with them."""
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
_KIND_WORDS = frozenset({"array", "list", "string", "str", "number", "int", "float", "true", "false", "bool", "null"})


def _object_problem(check: Callable[[Any], Any], obj: dict[str, Any]) -> str | None:
    shown = _short(obj)
    try:
        returned = check(obj)
    except InvalidModelOutputError as error:
        return _("it rejected the object {obj} ({error}); layer 2 lets every object through", obj=shown, error=error)
    if returned != obj or not isinstance(returned, dict):
        got = _short(returned)
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
    if not any(word in expected.lower() for word in ("object", "dict", "{")):
        return _(
            "the error for {label} has expected={expected}, which does not say that an object was expected",
            label=label,
            expected=repr(expected),
        )
    return _found_problem(label, value, found)


def _found_problem(label: str, value: object, found: str) -> str | None:
    """``found=`` must name this value's kind (or show the value), and no other kind: one that names every kind
    always names the right one. The value itself, if shown, is taken out before looking for other kinds."""
    kinds, shown = _kind_words(value), (repr(value), json.dumps(value))
    if not any(word in found.lower() or word in found for word in (*kinds, *shown)):
        return _(
            "the error for {label} has found={found}, which does not say what came instead "
            "(name its JSON type, such as 'an array', or show the value)",
            label=label,
            found=repr(found),
        )
    rest = found.lower().replace(shown[0].lower(), " ").replace(shown[1].lower(), " ")
    named = sorted((set(re.findall(r"[a-z]+", rest)) & _KIND_WORDS) - set(kinds))
    if not named:
        return None
    return _(
        "the error for {label} has found={found}, which also names {kinds}: say what this value is, "
        "not every kind it might have been",
        label=label,
        found=repr(found),
        kinds=_(", ").join(named),
    )


def _not_object_problem(check: Callable[[Any], Any], label: str, value: object) -> str | None:
    try:
        check(value)
    except InvalidModelOutputError as error:
        return _rejection_problem(label, value, error)
    except NotImplementedError:
        raise
    except Exception as error:
        name, shown = type(error).__name__, _short(value)
        return _("{label} ({value}) raised {name}, not InvalidModelOutputError", label=label, value=shown, name=name)
    return _("{label} ({value}) was let through; layer 2 must reject it", label=label, value=_short(value))


@_self_check(2)
def check_exercise_2(
    my_check_top_level_object: Callable[[Any], Any],
    objects: Sequence[dict[str, Any]] = _OBJECTS,
    not_objects: Sequence[tuple[str, object]] = _NOT_OBJECTS,
) -> list[str]:
    """Exercise 2: layer 2 written by the learner."""
    found = [_object_problem(my_check_top_level_object, obj) for obj in objects]
    found += [_not_object_problem(my_check_top_level_object, _(label), value) for label, value in not_objects]
    return [problem for problem in found if problem is not None]


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
    """None for None or 1-4, which a ``ValidationLayer`` (an ``IntEnum``) is too."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 4):
        return None
    return _("{label}: {value} is not a prediction (use 1, 2, 3, 4 or None)", label=label, value=shown(value, 30))


def _prediction_form_problems(predictions: Mapping[str, object]) -> list[str]:
    """Missing, unknown or malformed predictions: what must be fixed before any is judged."""
    missing = [label for label in PREDICTION_OUTPUTS if label not in predictions]
    unknown = [str(label) for label in predictions if label not in PREDICTION_OUTPUTS]
    problems = [_("no prediction for {labels}", labels=", ".join(missing))] if missing else []
    problems += [_("unknown labels {labels}", labels=", ".join(unknown))] if unknown else []
    malformed = (_prediction_problem(label, predictions[label]) for label in PREDICTION_OUTPUTS if label in predictions)
    return problems + list(filter(None, malformed))


@_self_check(3)
def check_exercise_3(predictions: Mapping[str, object]) -> list[str]:
    """Exercise 3: the learner's predictions against what ``diagnose`` says."""
    if not isinstance(predictions, Mapping):
        return [_("predictions must be a dict from label to layer, found {name}", name=type(predictions).__name__)]
    left, total = sum(predictions.get(label) is Ellipsis for label in PREDICTION_OUTPUTS), len(PREDICTION_OUTPUTS)
    if left:
        return [_("{left} of {total} outputs still have no prediction (the ... marks)", left=left, total=total)]
    problems = _prediction_form_problems(predictions)
    if problems:
        return problems
    # Well-formed predictions only from here: None, 1-4 or a ValidationLayer.
    guesses = {
        label: ValidationLayer(value) if isinstance(value, int) else None for label, value in predictions.items()
    }
    return _wrong_predictions(guesses)


def _wrong_predictions(guesses: Mapping[str, ValidationLayer | None]) -> list[str]:
    """How many predictions are wrong and which rules to reread; never which labels, or reruns find the answers."""
    truths = {label: diagnose(text).rejected_by for label, text in PREDICTION_OUTPUTS.items()}
    wrong = [truth for label, truth in truths.items() if guesses[label] != truth]
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


MAX_PREDICTIONS_CELL_CHARS = 100_000
"""A predictions cell is a few hundred characters; ``ast.parse`` costs about 600 bytes of memory a character."""


def computed_predictions_problem(predictions: Mapping[str, object], sources: Iterable[str]) -> str | None:
    """Exercise 3's trap: the predictions the notebook holds must be the ones its cells write out by hand
    (``written_predictions``). Comparing values, not hunting for statements that compute them: a list of such
    statements always misses one (``globals().update(...)``, ``exec``, a cell that never names them)."""
    written = written_predictions(sources)
    if written is None:
        return _(
            "the predictions are computed, not predicted: no cell (of at most {limit} characters) writes them out "
            "by hand as predictions = {{...}} with literal labels and layers",
            limit=MAX_PREDICTIONS_CELL_CHARS,
        )
    labels = sorted({*written, *predictions})
    differ = [label for label in labels if predictions.get(label, _UNSET) != written.get(label, _UNSET)]
    if differ:
        return _(
            "the predictions are computed, not predicted: {labels} in the notebook differ from what the cell "
            "writes out by hand",
            labels=", ".join(shown(label, 20) for label in differ),
        )
    return None


_UNSET = object()


def written_predictions(sources: Iterable[str]) -> dict[str, object] | None:
    """What the cells write by hand, in order: each top-level ``predictions = {...}`` of literal labels and answers
    (1-4, ``ValidationLayer.X``, None, ...) and each ``predictions["X"] = answer``; None when no cell writes it."""
    written: dict[str, object] | None = None
    for source in sources:
        if "predictions" not in source or len(source) > MAX_PREDICTIONS_CELL_CHARS:
            continue
        try:
            statements = ast.parse(source).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # a NUL, or nesting deeper than the parser goes
            continue
        for statement in statements:
            match statement:
                case ast.Assign(targets=[target], value=value) | ast.AnnAssign(target=target, value=value):
                    written = _written_by(target, value, written)
    return written


def _written_by(
    target: ast.expr, value: ast.expr | None, written: dict[str, object] | None
) -> dict[str, object] | None:
    """``written`` after ``target = value``; unchanged unless every label and answer it writes is a literal."""
    base: dict[str, object]
    match target, value:
        case ast.Name(id="predictions"), ast.Dict(keys=keys, values=values):
            base, pairs = {}, [(_literal(key), _literal(item)) for key, item in zip(keys, values, strict=True)]
        case ast.Subscript(value=ast.Name(id="predictions"), slice=key), _ if written is not None:
            base, pairs = written, [(_literal(key), _literal(value))]
        case _:
            return written
    if not all(type(key) is str and item is not _UNSET for key, item in pairs):
        return written
    return {**base, **{str(key): item for key, item in pairs}}


def _literal(node: ast.expr | None) -> object:
    """A label or an answer as written, or ``_UNSET`` for anything computed."""
    if isinstance(node, ast.Constant) and (type(node.value) in (str, int) or node.value in (None, Ellipsis)):
        return node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ValidationLayer":
        return ValidationLayer.__members__.get(node.attr, _UNSET)
    return _UNSET


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


def _valid_reply_problems(adapter_class: Callable[[Any], Any]) -> list[str]:
    provider = ScriptedProvider([ProviderResponse('{"type":"final_answer","content":"一个教学项目"}', 120, 30)])
    response = adapter_class(provider).complete(_HISTORY_4, _TOOLS_4, _BUDGET_4)
    problems = []
    if not isinstance(response, ModelResponse):
        problems.append(_("a valid reply must give a ModelResponse, found {name}", name=type(response).__name__))
    else:
        if response.action != FinalAnswer("一个教学项目"):
            problems.append(_("a valid reply gave the action {action}", action=_short(response.action)))
        if response.usage != TokenUsage(120, 30):
            usage = _short(response.usage)
            problems.append(_("a valid reply reported usage {usage}; expected TokenUsage(120, 30)", usage=usage))
    call = provider.calls[0] if provider.calls else None
    if call is not None and call.messages != build_provider_messages(_HISTORY_4):
        problems.append(_("the provider did not receive build_provider_messages(history)"))
    if call is not None and call.max_output_tokens != _BUDGET_4.max_output_tokens:
        got = call.max_output_tokens
        problems.append(_("max_output_tokens was {got}, not budget.max_output_tokens (64)", got=got))
    return problems


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


@_self_check(4)
def check_exercise_4(
    adapter_class: Callable[[Any], Any], reply: str = _INVALID_REPLY_4, usage: TokenUsage = _USAGE_4
) -> list[str]:
    """Exercise 4: an adapter that still reports the tokens a rejected reply cost."""
    problems = _valid_reply_problems(adapter_class)
    bad = ScriptedProvider([ProviderResponse(reply, usage.input_tokens, usage.output_tokens)])
    try:
        returned = adapter_class(bad).complete(_HISTORY_4, _TOOLS_4, _BUDGET_4)
    except InvalidModelOutputError as error:
        problems += _raised_problems(error, _rejection(reply), usage)
    else:
        got = _short(returned)
        problems.append(
            _("an invalid reply must raise InvalidModelOutputError, but complete() returned {returned}", returned=got)
        )
    failing = ScriptedProvider([ProviderError("HTTP 503 from the model server")])
    try:
        adapter_class(failing).complete(_HISTORY_4, _TOOLS_4, _BUDGET_4)
    except ModelProviderError as error:
        if not isinstance(error.__cause__, ProviderError):
            problems.append(_("the ModelProviderError lost its cause; raise it 'from' the ProviderError"))
    except ProviderError:
        problems.append(_("a ProviderError escaped; the Kernel only knows ModelProviderError"))
    else:
        problems.append(_("a failing provider must raise ModelProviderError"))
    return problems


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
    error = diagnose(raw_text).error
    if error is None:
        raise AssertionError(f"the parser accepted a case meant to be refused: {raw_text[:40]!r}")
    return error


# A correction may be written in English or in Chinese: both name the layer and ask for one object. A layer is
# named by its number or its title, in either language; the looser Chinese phrases count only for the layer that
# refused (a layer-2 correction may well say its reply was "合法 JSON" without naming layer 1).
_CHINESE_NUMERALS = "一二三四"
_LOOSE_CHINESE_NAMES: dict[ValidationLayer, tuple[str, ...]] = {
    ValidationLayer.JSON_SYNTAX: ("合法json",),
    ValidationLayer.TOP_LEVEL_OBJECT: ("最外层",),
    ValidationLayer.FIELDS: ("字段集合", "字段和类型", "字段与类型"),
}
_ONE_OBJECT_IN_CHINESE = re.compile(r"(只|仅|恰好|正好)[^。！？\n]{0,8}一个\s*json\s*对象")


def _compact(text: str) -> str:
    return "".join(text.lower().split())


def _names_layer(text: str, layer: ValidationLayer, *, loosely: bool = True) -> bool:
    """``layer 2`` or ``top-level object``, or in Chinese ``第 2 层``, ``第二层`` or ``顶层对象``."""
    number = int(layer)
    names = [f"layer{number}", f"第{number}层", f"第{_CHINESE_NUMERALS[number - 1]}层", _compact(layer.title)]
    names.append(_compact(layer_title(layer, "zh")))
    if loosely:
        names.extend(_LOOSE_CHINESE_NAMES.get(layer, ()))
    compact = _compact(text)
    return any(name in compact for name in names)


def _other_layer_named(text: str, error: InvalidModelOutputError) -> ValidationLayer | None:
    """A layer the message names besides the one that refused (``layer 3``, ``第三层``), its fields aside."""
    rest = text.replace(str(error.expected), " ").replace(str(error.found), " ")
    for layer in ValidationLayer:
        if layer is not error.layer and _names_layer(rest, layer, loosely=False):
            return layer
    return None


def _correction_problems(text: str, error: InvalidModelOutputError, raw: str) -> list[str]:
    problems = []
    if not _names_layer(text, error.layer):
        problems.append(_("the message does not name the layer (layer {layer})", layer=int(error.layer)))
    if str(error.expected) not in text:
        problems.append(_("the message does not say what was expected ({expected})", expected=repr(error.expected)))
    if str(error.found) not in text:
        problems.append(_("the message does not say what was found ({found})", found=repr(error.found)))
    lowered = text.lower()  # "exactly one JSON object", or in Chinese "只回复一个 JSON 对象" and its like
    if "exactly one json object" not in lowered and _ONE_OBJECT_IN_CHINESE.search(lowered) is None:
        problems.append(_("the message does not ask for exactly one JSON object"))
    other = _other_layer_named(text, error)
    if other is not None:
        label = layer_label(other)
        problems.append(_("the message also names {other}; name only the layer that refused the reply", other=label))
    if len(raw) > 100 and raw in text:
        problems.append(_("the message echoes the whole raw reply ({length} characters)", length=len(raw)))
    elif len(text) > MAX_CORRECTION_CHARS:
        length, limit = len(text), MAX_CORRECTION_CHARS
        problems.append(_("the message has {length} characters; the limit is {limit}", length=length, limit=limit))
    return problems


@_self_check(5)
def check_exercise_5(
    correction_message: Callable[[InvalidModelOutputError], Any], cases: Sequence[str] = _CORRECTION_CASES
) -> list[str]:
    """Exercise 5: the correction a model gets back after a rejection."""
    for raw_text in cases:
        error = _rejection(raw_text)
        text = correction_message(error)
        if not isinstance(text, str):
            return [_("correction_message must return a string, found {name}", name=type(text).__name__)]
        problems = _correction_problems(text, error, raw_text)
        if problems:
            layer = int(error.layer)
            return [_("for a layer-{layer} rejection {problem}", layer=layer, problem=problem) for problem in problems]
    return []


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
        want, count, pairs = len(_EXPECTED_6), len(got), _short(got)
        return [_("expected {want} pairs (one per tool result), got {got}: {pairs}", want=want, got=count, pairs=pairs)]
    wrong = [f"{want[0]!r}" for want, row in zip(_EXPECTED_6, got, strict=True) if row != want]
    return [
        _(
            "results for {ids} were paired with the wrong call (got {pairs}); "
            "match on call_id exactly, not on position",
            ids=", ".join(wrong),
            pairs=shown(got, 140),
        )
    ]


@_self_check(6)
def check_exercise_6(pair_results: Callable[[Sequence[ProviderMessage]], Any]) -> list[str]:
    """Exercise 6 (optional): reading the encoded history back, pairing results with calls by call_id."""
    paired = pair_results(build_provider_messages(_HISTORY_6))
    if isinstance(paired, (str, bytes)) or not hasattr(paired, "__iter__"):
        name = type(paired).__name__
        return [_("pair_results must return a list of (call_id, tool_name, content), found {name}", name=name)]
    problems = _pairing_problems(paired)
    stray = encode_json({"type": "tool_result", "call_id": "call_x", "content": "?", "is_error": True})
    try:
        pair_results((*build_provider_messages(_HISTORY_6), ProviderMessage("user", stray)))
    except ValueError:
        return problems
    except NotImplementedError:
        raise
    except Exception as error:
        name = type(error).__name__
        return [*problems, _("a result for an unknown call_id raised {name}; raise ValueError", name=name)]
    return [*problems, _("a result whose call_id matches no earlier call was accepted; raise ValueError")]


# --------------------------------------------------------------------------- the checks the notebook calls


def check_exercise(number: int, namespace: Mapping[str, Any], **cases: Any) -> ExerciseVerdict:
    """Run exercise ``number``'s check on the names its stub defines in ``namespace`` (a notebook's globals)."""
    if number not in _CHECKS:
        raise ValueError(f"there is no exercise {number}; the exercises are {sorted(_CHECKS)}")
    missing = [name for name in EXERCISE_NAMES[number] if name not in namespace]
    if missing:
        problem = _("{names} is not defined yet: run the exercise cell first", names=", ".join(missing))
        return _verdict(number, lambda: [problem])
    return _CHECKS[number](*(namespace[name] for name in EXERCISE_NAMES[number]), **cases)
