"""The contract a learner's three files are judged by: one list of checks, in notebook order.

``python -m codeagent_lite verify DIR`` runs these checks against a learner's folder, and
``tests/test_contract.py`` runs the very same checks against the package's own modules, so
the workbook can never grade a learner on a rule its own reference breaks.

Every check judges behaviour, never wording: the value returned, the exact bytes encoded,
the exception type, the rejecting ``layer``, the ``usage`` kept, the ``__cause__`` kept, and
at most one of the series' short phrases ("model output must be valid JSON", ...) somewhere
in the message. Anything else a learner's messages say is their own business.

A check is marked ``ours`` when the blog never states its rule (the ``json.dumps``
arguments, the non-blank rule, strict JSON): the report says so, and says what the blog does.

Every check's sentence parts are written here once, in English, marked ``N_(...)``: each is a message id of
the workbook's catalog (``words``), whose ``.po`` files hold the Chinese for ``notebooks/zh``, and
``Check.words`` shows them in the learner's language. A part that is a Python value (a ``repr``) is no message
and shows as it is in both editions; a part that holds one is a ``{name}`` template, filled from the check's
``given_fields``/``expected_fields``. What a check says came back is written the same way, with ``_(...)``.

A check never touches the learner's module. It is split in two, so that the learner's code
cannot decide its own verdict: ``check.probe(inputs)`` gives the probe (plain data: which
function, on which inputs; ``verify_probe`` runs it in the sandbox and reports what came back
or what was raised) and the judge (run here, in verify's process: it compares that data with
the expected values, which the probe does not carry). ``Inputs()`` are the public cases every
report prints; ``Inputs.draw(seed)`` draws fresh ones for graded judging, and the expected
values are computed here for those same inputs. ``check.run(module)`` does both in this
process, for the package's own modules.
"""

from __future__ import annotations

import json
import math
import random
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from .. import json_action_parser as reference_parser
from .. import json_text_messages as reference_messages
from ..kernel_types import Action, FinalAnswer, HistoryItem, Message, MessageRole, ToolCall, ToolResult, ToolSpec
from ..model_adapter import (
    DEFAULT_CODES,
    InvalidModelOutputError,
    ModelProviderError,
    ModelResponse,
    TokenUsage,
    ValidationLayer,
)
from .ladder import layer_label
from .language import Language, edition_language
from .verify_probe import encode
from .verify_standins import run_here
from .words import N_, _

__all__ = [
    "CHECKS",
    "CORPUS",
    "FILES",
    "SAMPLES",
    "STEPS",
    "Check",
    "CheckWords",
    "CorpusReply",
    "Inputs",
    "Mismatch",
    "Raised",
    "Rejection",
    "Sample",
    "checks_up_to",
    "describe_parse",
    "describe_parse_result",
    "item_spec",
    "rejected_layer",
    "show",
    "step_title",
    "text_samples",
]

FILES = ("json_text_messages", "json_text_adapter", "json_action_parser")
"""The three files of the chapter, in the order the notebooks build them."""

STEPS = {
    1: N_("message encoding · {section} (json_text_messages.py)"),
    2: N_("the adapter's flow · {section} (json_text_adapter.py)"),
    3: N_("the blog's four checks · {section} (json_action_parser.py)"),
    4: N_("strict JSON and non-blank strings, beyond the blog (json_action_parser.py)"),
}
"""Each step's title (message ids, shown with ``step_title``); ``{section}`` is the blog's own section."""

BLOG_SECTIONS = {1: "二、消息转换", 2: "三、Adapter 调度", 3: "四、行动解析"}
"""The blog's section titles, quoted as the blog writes them in both editions (names, not words to translate)."""


def step_title(step: int, language: str | None = None) -> str:
    """Step ``step``'s title in the learner's language."""
    return _(STEPS[step], language, section=BLOG_SECTIONS.get(step, ""))


_SHOWN_CHARS = 120


Fields = tuple[tuple[str, object], ...]
"""The values of a message's ``{name}`` placeholders, as pairs (a frozen check stays hashable)."""


@dataclass(frozen=True, slots=True)
class CheckWords:
    """A check's sentence parts in one language: what verify's report prints."""

    name: str
    given: str
    expected: str
    ours: str | None


@dataclass(frozen=True, slots=True)
class Check:
    """One behaviour of one file, with the sentence parts a failure report needs (English message ids)."""

    id: str
    step: int
    file: str
    name: str
    given: str
    expected: str
    case: Case
    """The probe (inputs, sent to the child) and the judge (run here, on what came back), for given inputs."""
    ours: str | None = None
    """When the blog never states this rule: what the workbook adds, in a few words."""
    given_fields: Fields = ()
    expected_fields: Fields = ()
    """The values of ``given``'s and ``expected``'s ``{name}`` placeholders (a layer is named in the language)."""

    def probe(self, inputs: Inputs | None = None) -> tuple[Probe, Judge]:
        return self.case(inputs or _PUBLIC)

    def run(self, module: ModuleType, inputs: Inputs | None = None) -> None:
        """Probe and judge in this process: for the package's own modules (``tests/test_contract.py``)."""
        probe, judge = self.probe(inputs)
        judge(run_here(module, probe))

    def words(self, language: Language | None = None) -> CheckWords:
        """The sentence parts in ``language`` (the edition's by default)."""
        chosen = edition_language(requested=language)
        return CheckWords(
            _(self.name, chosen),
            _fill(self.given, self.given_fields, chosen),
            _fill(self.expected, self.expected_fields, chosen),
            None if self.ours is None else _(self.ours, chosen),
        )


def _fill(text: str, fields: Fields, language: Language) -> str:
    """``text`` in ``language``; without fields it is shown as it is when it is a value (no id of the catalog)."""
    if not fields:
        return _(text, language)
    return _(
        text,
        language,
        **{name: _layer(value, language) if isinstance(value, ValidationLayer) else value for name, value in fields},
    )


@dataclass(frozen=True, slots=True)
class Rejection:
    """What a refusal must look like: the layer, and the series' phrase its message contains."""

    layer: ValidationLayer
    phrase: str


def show(value: object, limit: int = _SHOWN_CHARS) -> str:
    """``repr`` cut to ``limit`` characters: a check's sentence must stay one readable line."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _layer(layer: object, language: Language | None = None) -> str:
    """``layer 1 (JSON syntax)`` in ``language`` (the edition's by default), or the raw value when it is no layer."""
    try:
        known = ValidationLayer(layer)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return f"layer={layer!r}"
    return layer_label(known, language)


class Mismatch(Exception):
    """The learner's code ran and returned, but not what the contract expects.

    ``got`` says what came back; ``expected`` replaces the check's own expectation when the
    failure needs a more precise one.
    """

    def __init__(self, got: str, expected: str | None = None) -> None:
        super().__init__(got)
        self.got = got
        self.expected = expected


class Raised(Exception):
    """The learner's code raised where the check wanted a value: ``error`` is the probe's description of it."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("type", "")))
        self.error = error


@dataclass(frozen=True, slots=True)
class Inputs:
    """The values the probes are built from. The defaults are the public cases verify prints;
    ``Inputs.draw(seed)`` gives fresh ones for graded judging, which the learner's code cannot know.
    """

    call_id: str = "call_1"
    tool_name: str = "read_file"
    path: str = "README.md"
    limit: int = 40
    missing: str = "文件不存在：README.md"
    request: str = "请帮我读一下 README.md"
    odd_id: str = " call 7 · 第七\t"
    answer: str = "42"
    usage: tuple[int, int] = (17, 26)
    invalid_usage: tuple[int, int] = (120, 18)
    max_output_tokens: int = 200
    failure: str = "HTTP 503: server overloaded"
    nonce: str = ""
    """Drawn fresh by verify for each run (``fresh``), never printed: the values step 2's stand-ins hand out carry
    it, so an adapter that hands on what it got is told from one that made up the public values."""

    def fresh(self) -> Inputs:
        """These inputs with a nonce nobody can know before the run."""
        return replace(self, nonce="~" + secrets.token_hex(4))

    @classmethod
    def draw(cls, seed: int) -> Inputs:
        """Fresh inputs of the same shapes (Chinese strings, odd call ids, numbers) from ``seed``."""
        rng = random.Random(seed)
        hanzi = "文件读取写入目录模型工具结果错误内容请帮我一下答案第七不存在"

        def word(low: int, high: int) -> str:
            return "".join(rng.choice(hanzi) for _index in range(rng.randint(low, high)))

        def ident(prefix: str) -> str:
            return f"{prefix}_{rng.randrange(10**6)}"

        path = f"{ident('notes')}.md"
        return cls(
            call_id=ident("call"),
            tool_name=rng.choice(["read_file", "list_dir", "search_text", "word_count"]) + f"_{rng.randrange(100)}",
            path=path,
            limit=rng.randint(1, 5000),
            missing=f"{word(2, 6)}：{path}",
            request=f"{word(3, 8)} {path}",
            odd_id=f" {ident('call')} · {word(1, 3)}\t",
            answer=str(rng.randint(0, 10**9)),
            usage=(rng.randint(1, 5000), rng.randint(1, 5000)),
            invalid_usage=(rng.randint(1, 5000), rng.randint(1, 5000)),
            max_output_tokens=rng.randint(16, 4096),
            failure=f"HTTP {rng.choice([500, 502, 503, 504])}: {word(2, 5)}",
        )


Probe = dict[str, Any]
Judge = Callable[[dict[str, Any]], None]
Case = Callable[[Inputs], tuple[Probe, Judge]]


def item_spec(item: object) -> list[Any]:
    """A Kernel value as the plain description ``verify_probe.decode_item`` rebuilds in the child."""
    if isinstance(item, Message):
        return ["Message", item.role.value, item.content]
    if isinstance(item, ToolCall):
        return ["ToolCall", item.call_id, item.tool_name, _json_spec(item.arguments)]
    if isinstance(item, ToolResult):
        return ["ToolResult", item.call_id, item.content, item.is_error]
    if isinstance(item, ToolSpec):
        return ["ToolSpec", item.name, item.description, _json_spec(item.input_schema)]
    raise TypeError(f"no probe description for {type(item).__name__}")


def _json_spec(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    if isinstance(value, dict):
        return {key: _json_spec(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_spec(item) for item in value]
    return value


def _error(result: dict[str, Any]) -> dict[str, Any] | None:
    error = result.get("error")
    return error if isinstance(error, dict) else None


def _value(result: dict[str, Any]) -> Any:
    """What came back, or ``Raised`` when the learner's code raised instead."""
    error = _error(result)
    if error is not None:
        raise Raised(error)
    return result["value"]


def _is(error: dict[str, Any], cls: type) -> bool:
    return f"{cls.__module__}.{cls.__qualname__}" in error.get("mro", [])


def _cut(text: object, limit: int = _SHOWN_CHARS) -> str:
    line = str(text)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _raw_layer(encoded: object) -> object:
    """A layer as the probe encoded it: an enum's value, or the plain value a learner put there."""
    if isinstance(encoded, dict) and "$enum" in encoded:
        return encoded.get("value")
    return encoded


# --------------------------------------------------------------------------- step 1: messages


def _messages_probe(history: Sequence[object]) -> Probe:
    return {"kind": "messages", "history": [item_spec(item) for item in history]}


def _pairs(result: dict[str, Any]) -> list[tuple[str, str]]:
    """The (role, content) pairs the learner's ``build_provider_messages`` returned."""
    return _pairs_of(_value(result))


def _pairs_of(value: dict[str, Any]) -> list[tuple[str, str]]:
    if not value["iterable"]:
        raise Mismatch(_("{value}, which is not a sequence of messages", value=_cut(value["shown"])))
    pairs = []
    for item in value["items"]:
        if not item["is_provider_message"]:
            raise Mismatch(_("{value}, which is not a ProviderMessage", value=_cut(item["shown"])))
        role, content = item["role"], item["content"]
        if not isinstance(role, str) or not isinstance(content, str):
            raise Mismatch(_("{value}, whose role and content are not both strings", value=_cut(item["shown"])))
        pairs.append((role, content))
    return pairs


def _one_pair(result: dict[str, Any]) -> tuple[str, str]:
    return _only_pair(_pairs(result))


def _only_pair(pairs: list[tuple[str, str]]) -> tuple[str, str]:
    if len(pairs) != 1:
        raise Mismatch(_("{count} messages for one history item", count=len(pairs)))
    return pairs[0]


def _decoded(content: str) -> Any:
    try:
        return json.loads(content)
    except (ValueError, RecursionError):
        raise Mismatch(_("the content {content}, which is not JSON", content=show(content))) from None


def _tool_call(inputs: Inputs) -> ToolCall:
    return ToolCall(inputs.call_id, inputs.tool_name, {"path": inputs.path, "limit": inputs.limit})


def _tool_call_fields(inputs: Inputs) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "call_id": inputs.call_id,
        "tool_name": inputs.tool_name,
        "arguments": {"path": inputs.path, "limit": inputs.limit},
    }


def _tool_result(inputs: Inputs) -> ToolResult:
    return ToolResult(inputs.call_id, inputs.missing, is_error=True)


def _tool_result_fields(inputs: Inputs) -> dict[str, Any]:
    return {"type": "tool_result", "call_id": inputs.call_id, "content": inputs.missing, "is_error": True}


_PUBLIC = Inputs()
_TOOL_CALL = _tool_call(_PUBLIC)
_TOOL_CALL_FIELDS = _tool_call_fields(_PUBLIC)
_TOOL_RESULT = _tool_result(_PUBLIC)
_TOOL_RESULT_FIELDS = _tool_result_fields(_PUBLIC)


def _check_message_kept(inputs: Inputs) -> tuple[Probe, Judge]:
    history = [
        Message(MessageRole.SYSTEM, "Answer with one JSON action."),
        Message(MessageRole.USER, inputs.request),
        Message(MessageRole.ASSISTANT, "I will read it first."),
    ]

    def judge(result: dict[str, Any]) -> None:
        got = _pairs(result)
        if got != [(item.role.value, item.content) for item in history]:
            raise Mismatch(show(got, 200))

    return _messages_probe(history), judge


def _check_tool_call_role(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        role, _content = _one_pair(result)
        if role != "assistant":
            raise Mismatch(_("role {role}", role=repr(role)))

    return _messages_probe([_tool_call(inputs)]), judge


def _check_tool_call_fields(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        decoded = _decoded(_one_pair(result)[1])
        if decoded != _tool_call_fields(inputs):
            raise Mismatch(_("content that decodes to {value}", value=show(decoded)))

    return _messages_probe([_tool_call(inputs)]), judge


def _check_tool_result(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        role, content = _one_pair(result)
        decoded = _decoded(content)
        if role != "user" or decoded != _tool_result_fields(inputs):
            raise Mismatch(_("role {role} with content that decodes to {value}", role=repr(role), value=show(decoded)))

    return _messages_probe([_tool_result(inputs)]), judge


def _check_call_id_verbatim(inputs: Inputs) -> tuple[Probe, Judge]:
    odd_id = inputs.odd_id

    def judge(result: dict[str, Any]) -> None:
        decoded = [_decoded(content) for _, content in _pairs(result)]
        ids = [value.get("call_id") if isinstance(value, dict) else None for value in decoded]
        if ids != [odd_id, odd_id]:
            raise Mismatch(_("call_id values {ids}", ids=show(ids)))

    return _messages_probe([ToolCall(odd_id, inputs.tool_name, {}), ToolResult(odd_id, "ok")]), judge


def _check_order(inputs: Inputs) -> tuple[Probe, Judge]:
    first, second = f"{inputs.call_id}_a", f"{inputs.call_id}_b"
    history: list[HistoryItem] = [
        ToolCall(first, inputs.tool_name, {"path": "a.txt"}),
        ToolCall(second, inputs.tool_name, {"path": "b.txt"}),
        ToolResult(second, "contents of b.txt"),
        ToolResult(first, "contents of a.txt"),
        Message(MessageRole.USER, "thanks"),
    ]
    wanted = [f"tool_call:{first}", f"tool_call:{second}", f"tool_result:{second}", f"tool_result:{first}", "thanks"]

    def judge(result: dict[str, Any]) -> None:
        pairs = _pairs(result)
        summary = []
        for role, content in pairs:
            if role == "user" and not content.startswith("{"):
                summary.append(content)
            else:
                value = _decoded(content)
                summary.append(f"{value.get('type')}:{value.get('call_id')}" if isinstance(value, dict) else content)
        if summary != wanted:
            raise Mismatch(_("{count} messages: {summary}", count=len(pairs), summary=show(summary, 200)))

    return _messages_probe(history), judge


def _key_orders(content: str) -> list[list[str]]:
    orders: list[list[str]] = []

    def record(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        orders.append([key for key, _value in pairs])
        return dict(pairs)

    try:
        json.loads(content, object_pairs_hook=record)
    except (ValueError, RecursionError):
        raise Mismatch(_("the content {content}, which is not JSON", content=show(content))) from None
    return orders


def _both_items(inputs: Inputs, check: Callable[[str, HistoryItem], None]) -> tuple[Probe, Judge]:
    """One probe encoding the ToolCall and the ToolResult each on its own: ``check`` sees each content."""
    items: list[HistoryItem] = [_tool_call(inputs), _tool_result(inputs)]

    def judge(result: dict[str, Any]) -> None:
        each = _value(result)["each"]
        if len(each) != len(items):
            raise Mismatch(_("{count} messages for one history item", count=len(each)))
        for value, item in zip(each, items, strict=True):
            check(_only_pair(_pairs_of(value))[1], item)

    return {**_messages_probe(items), "each": True}, judge


def _check_sorted(inputs: Inputs) -> tuple[Probe, Judge]:
    def check(content: str, _item: HistoryItem) -> None:
        for order in _key_orders(content):
            if order != sorted(order):
                raise Mismatch(
                    _("keys in the order {order} in {content}", order=", ".join(order), content=show(content))
                )

    return _both_items(inputs, check)


def _check_compact(inputs: Inputs) -> tuple[Probe, Judge]:
    def check(content: str, _item: HistoryItem) -> None:
        value = _decoded(content)
        compact = {json.dumps(value, separators=(",", ":"), ensure_ascii=flag) for flag in (True, False)}
        if content not in compact:
            raise Mismatch(show(content))

    return _both_items(inputs, check)


def _check_chinese_kept(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        _role, content = _one_pair(result)
        if inputs.missing not in content:
            raise Mismatch(show(content))

    return _messages_probe([_tool_result(inputs)]), judge


def _check_exact_bytes(inputs: Inputs) -> tuple[Probe, Judge]:
    def check(content: str, item: HistoryItem) -> None:
        (reference,) = reference_messages.build_provider_messages([item])
        if content != reference.content:
            raise Mismatch(show(content, 200), expected=_("exactly {value}", value=show(reference.content, 200)))

    return _both_items(inputs, check)


def _check_nan_refused(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        error = _error(result)
        if error is not None and _is(error, ValueError):
            return
        raise Mismatch(_("the message {value}", value=show(_pairs(result))))

    return _messages_probe([ToolCall(inputs.call_id, "sleep", {"seconds": float("nan")})]), judge


def _check_unknown_item(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        error = _error(result)
        if error is not None and _is(error, TypeError):
            return
        raise Mismatch(_("{value} and no error", value=_cut(_value(result)["shown"])))

    return _messages_probe([ToolSpec(inputs.tool_name, "Read a file.")]), judge


_STEP_1 = [
    Check(
        "1.1",
        1,
        "json_text_messages",
        N_("a Message keeps its role and content"),
        N_("a system, a user and an assistant Message"),
        N_("ProviderMessages with role 'system', 'user', 'assistant' (item.role.value) and the same content"),
        _check_message_kept,
    ),
    Check(
        "1.2",
        1,
        "json_text_messages",
        N_("a ToolCall is sent with the assistant role"),
        show(_TOOL_CALL),
        N_("one ProviderMessage with role 'assistant'"),
        _check_tool_call_role,
    ),
    Check(
        "1.3",
        1,
        "json_text_messages",
        N_("a ToolCall's content is its four fields as JSON"),
        show(_TOOL_CALL),
        N_("content that decodes to {value}"),
        _check_tool_call_fields,
        expected_fields=(("value", show(_TOOL_CALL_FIELDS)),),
    ),
    Check(
        "1.4",
        1,
        "json_text_messages",
        N_("a ToolResult is sent as the user, with its four fields"),
        show(_TOOL_RESULT),
        N_("role {role} with content that decodes to {value}"),
        _check_tool_result,
        expected_fields=(("role", "'user'"), ("value", show(_TOOL_RESULT_FIELDS))),
    ),
    Check(
        "1.5",
        1,
        "json_text_messages",
        N_("call_id is copied exactly"),
        N_("a ToolCall and a ToolResult whose call_id is ' call 7 · 第七\\t'"),
        N_("that call_id, character for character, in both messages"),
        _check_call_id_verbatim,
    ),
    Check(
        "1.6",
        1,
        "json_text_messages",
        N_("one message per item, in the history's order"),
        N_("two calls, their results in the other order, then a user Message"),
        N_("5 messages in the same order: call_a, call_b, result call_b, result call_a, 'thanks'"),
        _check_order,
    ),
    Check(
        "1.7",
        1,
        "json_text_messages",
        N_("keys are sorted, at every level"),
        N_("the ToolCall and ToolResult above"),
        N_("JSON keys in alphabetical order (arguments, call_id, tool_name, type)"),
        _check_sorted,
        ours=N_("json.dumps(..., sort_keys=True): the blog's _encode_json does not show its arguments"),
    ),
    Check(
        "1.8",
        1,
        "json_text_messages",
        N_("no spaces between JSON tokens"),
        N_("the ToolCall and ToolResult above"),
        N_('compact JSON such as {"call_id":"call_1",...}, with no space after "," or ":"'),
        _check_compact,
        ours=N_("json.dumps(..., separators=(',', ':')): not shown in the blog"),
    ),
    Check(
        "1.9",
        1,
        "json_text_messages",
        N_("Chinese text stays readable"),
        show(_TOOL_RESULT),
        N_("content holding 文件不存在 as it is, not \\u6587\\u4ef6... escapes"),
        _check_chinese_kept,
        ours=N_("json.dumps(..., ensure_ascii=False): not shown in the blog"),
    ),
    Check(
        "1.10",
        1,
        "json_text_messages",
        N_("the exact bytes of the reference encoding"),
        N_("the ToolCall and ToolResult above"),
        N_("the same text as codeagent_lite's encode_json"),
        _check_exact_bytes,
        ours=N_("the blog's _encode_json is our public encode_json; this pins all four json.dumps arguments"),
    ),
    Check(
        "1.11",
        1,
        "json_text_messages",
        N_("NaN is refused, not written into the history"),
        "ToolCall('call_1', 'sleep', {'seconds': nan})",
        N_("a ValueError (json.dumps(..., allow_nan=False)), because NaN is not JSON"),
        _check_nan_refused,
        ours=N_("allow_nan=False: the blog does not say"),
    ),
    Check(
        "1.12",
        1,
        "json_text_messages",
        N_("an item of another type is refused"),
        N_("a ToolSpec, which is not a HistoryItem"),
        N_("a TypeError naming the type, instead of a guess or silence"),
        _check_unknown_item,
        ours=N_("the blog does not say what happens to anything but the three HistoryItem types"),
    ),
]


# --------------------------------------------------------------------------- step 2: the adapter

_FENCED = '```json\n{"type": "final_answer", "content": "42"}\n```'
_TOOLS = (ToolSpec("read_file", "Read a UTF-8 text file.", {"type": "object"}),)


def _history(inputs: Inputs) -> list[HistoryItem]:
    return [
        Message(MessageRole.SYSTEM, "Answer with exactly one JSON action."),
        Message(MessageRole.USER, f"What is the title of {inputs.path}?"),
    ]


def _reply_action(inputs: Inputs) -> ToolCall:
    return ToolCall(inputs.call_id + inputs.nonce, inputs.tool_name, {"path": inputs.path})


def _reply(inputs: Inputs) -> str:
    action = _reply_action(inputs)
    fields = {
        "type": "tool_call",
        "call_id": action.call_id,
        "tool_name": action.tool_name,
        "arguments": action.arguments,
    }
    return "\n " + json.dumps(fields, ensure_ascii=False) + " \n"


_REPLY = _reply(_PUBLIC)
_REPLY_ACTION = _reply_action(_PUBLIC)


def _adapter_probe(inputs: Inputs, *, fenced: bool = False, failure: str | None = None) -> Probe:
    """The adapter's inputs (sent to the child), and under ``stand_ins`` what the parent answers its helpers'
    and the provider's calls with (``verify_standins``; never sent: the child learns them only by calling)."""
    history = _history(inputs)
    nonce = inputs.nonce
    stand_ins: dict[str, Any] = {
        "reply": _FENCED if fenced else _reply(inputs),
        "usage": list(inputs.invalid_usage if fenced else inputs.usage),
        "failure": failure,
        "failure_message": (inputs.failure if failure == "provider_error" else "a bug inside the provider") + nonce,
        "canned_messages": [[item.role.value, item.content + nonce] for item in history if isinstance(item, Message)],
        "canned_action": item_spec(_reply_action(inputs)),
        "canned_rejection": None,
    }
    if fenced:
        message = f"{_NOT_JSON}: found ```{nonce}"
        stand_ins["canned_rejection"] = {"message": message, "layer": int(ValidationLayer.JSON_SYNTAX)}
    return {
        "kind": "adapter",
        "history": [item_spec(item) for item in history],
        "tools": [item_spec(tool) for tool in _TOOLS],
        "max_output_tokens": inputs.max_output_tokens,
        "stand_ins": stand_ins,
    }


def _asked_the_provider(result: dict[str, Any]) -> None:
    """An adapter's answer counts only when it came from the provider: the parent saw the call (a value or an
    error made up without one, from the public cases, is not the adapter's flow)."""
    if not result.get("calls"):
        raise Mismatch(_("{count} calls to the provider", count=0))


def _response_fields(result: dict[str, Any]) -> dict[str, Any]:
    """The fields of the ModelResponse that came back, or a Mismatch when something else did."""
    value = _value(result)
    if not isinstance(value, dict) or value.get("$obj") != _qualified(ModelResponse):
        raise Mismatch(_cut(result.get("shown", ""), 200))
    fields = value["fields"]
    assert isinstance(fields, dict)
    _asked_the_provider(result)
    return fields


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _check_returns_action(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        if _response_fields(result).get("action") != encode(_reply_action(inputs)):
            raise Mismatch(_cut(result.get("shown", ""), 200))

    return _adapter_probe(inputs), judge


def _check_usage(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        usage = _response_fields(result).get("usage")
        if usage != encode(TokenUsage(*inputs.usage)):
            raise Mismatch(_("usage {value}", value=_cut(show(usage))))

    return _adapter_probe(inputs), judge


def _check_provider_arguments(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        _value(result)  # an adapter that raised is judged by what it raised
        calls = result["calls"]
        if len(calls) != 1:
            raise Mismatch(_("{count} calls to the provider", count=len(calls)))
        call = calls[0]
        problems = []
        if not call["messages_same"]:
            problems.append(f"messages={_cut(call['messages_shown'], 80)}")
        if call["tools"] != encode(list(_TOOLS)):
            problems.append(f"tools={_cut(call['tools_shown'], 80)}")
        if call["max_output_tokens"] != inputs.max_output_tokens:
            problems.append(f"max_output_tokens={_cut(show(call['max_output_tokens']), 40)}")
        if problems:
            raise Mismatch(_("the provider was called with {arguments}", arguments=", ".join(problems)))

    return _adapter_probe(inputs), judge


def _check_builds_from_history(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        _value(result)  # an adapter that raised is judged by what it raised
        histories = result["built"]
        if histories != [encode(_history(inputs))]:
            raise Mismatch(
                _(
                    "build_provider_messages called {count} times, with {histories}",
                    count=len(histories),
                    histories=_cut(show(histories)),
                )
            )

    return _adapter_probe(inputs), judge


def _check_parses_raw_text(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        _value(result)  # an adapter that raised is judged by what it raised
        if result["parsed"] != [_reply(inputs)]:
            raise Mismatch(_("parse_json_action called with {texts}", texts=show(result["parsed"])))

    return _adapter_probe(inputs), judge


def _check_provider_error(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        error = _error(result)
        if error is None:
            raise Mismatch(_("no error but {value}", value=_cut(result.get("shown", ""))))
        if not _is(error, ModelProviderError):
            raise Raised(error)
        _asked_the_provider(result)
        if result.get("cause_is_original") is not True:
            raise Mismatch(
                _(
                    "ModelProviderError with __cause__ {cause} (raise ... from error)",
                    cause=_cut(error.get("cause_shown", "None")),
                )
            ) from None

    return _adapter_probe(inputs, failure="provider_error"), judge


def _check_other_errors_pass(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        error = _error(result)
        if error is None:
            raise Mismatch(_("no error but {value}", value=_cut(result.get("shown", ""))))
        if _is(error, KeyError):
            _asked_the_provider(result)
            return
        if _is(error, ModelProviderError):
            raise Mismatch(_("ModelProviderError, which hides a programming error as a network problem"))
        raise Raised(error)

    return _adapter_probe(inputs, failure="key_error"), judge


def _invalid_error(result: dict[str, Any]) -> dict[str, Any]:
    error = _error(result)
    if error is None:
        raise Mismatch(_("no error but {value}", value=_cut(result.get("shown", ""))))
    if not _is(error, InvalidModelOutputError):
        raise Raised(error)
    _asked_the_provider(result)
    if not result.get("parsed"):
        raise Mismatch(_("parse_json_action called with {texts}", texts="[]"))
    return error


def _check_invalid_keeps_usage(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        error = _invalid_error(result)
        if error.get("usage") != encode(TokenUsage(*inputs.invalid_usage)):
            raise Mismatch(_("InvalidModelOutputError with usage={usage}", usage=_cut(show(error.get("usage")))))

    return _adapter_probe(inputs, fenced=True), judge


def _check_invalid_keeps_message(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        error = _invalid_error(result)
        message = str(error.get("message", ""))
        if _NOT_JSON.casefold() not in message.casefold() or inputs.nonce not in message:
            raise Mismatch(_("the message {value}", value=show(error.get("message", ""))))

    return _adapter_probe(inputs, fenced=True), judge


def _check_invalid_keeps_layer(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        error = _invalid_error(result)
        if _raw_layer(error.get("layer")) != ValidationLayer.JSON_SYNTAX:
            raise Mismatch(_("InvalidModelOutputError with {layer}", layer=_layer(_raw_layer(error.get("layer")))))

    return _adapter_probe(inputs, fenced=True), judge


_STEP_2 = [
    Check(
        "2.1",
        2,
        "json_text_adapter",
        N_("complete() returns a ModelResponse holding the parsed action"),
        N_("a provider replying {reply}"),
        f"ModelResponse(action={show(_REPLY_ACTION)}, ...)",
        _check_returns_action,
        given_fields=(("reply", show(_REPLY.strip(), 60)),),
    ),
    Check(
        "2.2",
        2,
        "json_text_adapter",
        N_("the provider's token counts become TokenUsage"),
        N_("a ProviderResponse with input_tokens=17, output_tokens=26"),
        "usage=TokenUsage(input_tokens=17, output_tokens=26)",
        _check_usage,
    ),
    Check(
        "2.3",
        2,
        "json_text_adapter",
        N_("the provider gets the messages, the tools and the budget"),
        "complete(history, tools, ModelCallBudget(max_output_tokens=200))",
        N_(
            "one provider.complete(messages=<what build_provider_messages returned>, "
            "tools=tools, max_output_tokens=200)"
        ),
        _check_provider_arguments,
    ),
    Check(
        "2.4",
        2,
        "json_text_adapter",
        N_("the history goes through build_provider_messages"),
        N_("a history of two Messages"),
        N_("one call build_provider_messages(history) with those two items"),
        _check_builds_from_history,
    ),
    Check(
        "2.5",
        2,
        "json_text_adapter",
        N_("the reply text goes to parse_json_action untouched"),
        N_("a reply with spaces and newlines around it: {reply}"),
        N_("one call parse_json_action(raw_response.text) with exactly that text"),
        _check_parses_raw_text,
        given_fields=(("reply", show(_REPLY, 40)),),
    ),
    Check(
        "2.6",
        2,
        "json_text_adapter",
        N_("a ProviderError becomes ModelProviderError, with the cause kept"),
        N_("a provider raising ProviderError('HTTP 503: server overloaded')"),
        N_("ModelProviderError whose __cause__ is that ProviderError (raise ... from error)"),
        _check_provider_error,
    ),
    Check(
        "2.7",
        2,
        "json_text_adapter",
        N_("an invalid reply raises InvalidModelOutputError carrying the usage"),
        N_("a provider replying {reply} for 120 + 18 tokens"),
        N_("InvalidModelOutputError with usage=TokenUsage(input_tokens=120, output_tokens=18)"),
        _check_invalid_keeps_usage,
        given_fields=(("reply", show(_FENCED, 40)),),
    ),
    Check(
        "2.8",
        2,
        "json_text_adapter",
        N_("the parser's explanation reaches the Kernel"),
        N_("the same fenced reply"),
        N_("an error message still containing 'model output must be valid JSON'"),
        _check_invalid_keeps_message,
    ),
    Check(
        "2.9",
        2,
        "json_text_adapter",
        N_("the rejecting layer reaches the Kernel"),
        N_("the same fenced reply"),
        N_("InvalidModelOutputError with {layer}, e.g. via error.with_usage(usage)"),
        _check_invalid_keeps_layer,
        expected_fields=(("layer", ValidationLayer.JSON_SYNTAX),),
        ours=N_(
            "the blog adds the usage; keeping layer (and expected/found) is how our agent loop explains a rejection"
        ),
    ),
    Check(
        "2.10",
        2,
        "json_text_adapter",
        N_("other exceptions are not disguised as provider failures"),
        N_("a provider whose code raises KeyError (a bug, not a network problem)"),
        N_("the KeyError itself, because only ProviderError becomes ModelProviderError"),
        _check_other_errors_pass,
        ours=N_("the blog converts ProviderError; that nothing else is converted is our reading of it"),
    ),
]


# --------------------------------------------------------------------------- steps 3 and 4: the parser


Text = str | Callable[[Inputs], str]
Outcome = Action | Rejection | Callable[[Inputs], Action]


def _parse_check(
    step: int,
    name: str,
    text: Text,
    outcome: Outcome,
    *,
    ours: str | None = None,
    given: str | None = None,
    look_alike: Callable[[Inputs], str] | None = None,
) -> Callable[[str], Check]:
    """A check that feeds ``text`` to ``parse_json_action`` and expects an action or a rejection.

    ``text`` and an action ``outcome`` may be functions of the inputs (so a seed draws them fresh);
    ``name``, ``ours`` and ``given`` are message ids (``N_``); ``given`` defaults to the public text.
    ``look_alike``: for drawn inputs, a valid reply with the same surface (the same key twice in two
    objects, ``NaN`` in a string...), sent with the text in an order drawn from them; the check passes
    only when the text is refused and the look-alike accepted as the reference accepts it, so a parser
    that recognises the refused texts by their look, not by parsing, fails it (``_judge_parses``).
    """
    public = _resolve(outcome, _PUBLIC)
    expected, expected_fields = _expected_rejection(public)

    def case(inputs: Inputs) -> tuple[Probe, Judge]:
        wanted = _resolve(outcome, inputs)
        given_text = text(inputs) if callable(text) else _vary(text, inputs)
        if look_alike is not None and _drawn(inputs):
            return _with_look_alike(given_text, wanted, look_alike(inputs), inputs)
        return {"kind": "parse", "text": given_text}, lambda result: _judge_parse(result, wanted, given_text)

    def make(check_id: str) -> Check:
        shown = given or show(text(_PUBLIC) if callable(text) else text, 90)
        return Check(
            check_id, step, "json_action_parser", name, shown, expected, case, ours, expected_fields=expected_fields
        )

    return make


_TOKENS = ('"call_1"', '"c1"', '"read_file"', '"README.md"', '"42"')


def _vary(text: str, inputs: Inputs) -> str:
    """A fixed reply with its call id, tool name, path and answer taken from ``inputs`` (unchanged for the public
    ones): a reply whose verdict a parser could look up by its exact text gets a text of its own per seed."""
    if replace(inputs, nonce="") == _PUBLIC:  # the nonce is for step 2 only
        return text
    values = (inputs.call_id, inputs.call_id, inputs.tool_name, inputs.path, inputs.answer)
    for token, value in zip(_TOKENS, values, strict=True):
        text = text.replace(token, json.dumps(value, ensure_ascii=False))
    return text


def _drawn(inputs: Inputs) -> bool:
    return replace(inputs, nonce="") != _PUBLIC


def _with_look_alike(text: str, wanted: Action | Rejection, alike: str, inputs: Inputs) -> tuple[Probe, Judge]:
    """Both texts in one probe, in an order drawn from the inputs (the child is not told which is which)."""
    first = random.Random(f"{inputs.call_id}{alike}").random() < 0.5
    texts = [text, alike] if first else [alike, text]
    accepted = reference_parser.parse_json_action(alike)

    def judge(result: dict[str, Any]) -> None:
        each = _value(result)["each"]
        _judge_parse(each[0 if first else 1], wanted, text)
        try:
            _judge_parse(each[1 if first else 0], accepted, alike)
        except (Mismatch, Raised) as failed:
            got = failed.got if isinstance(failed, Mismatch) else _("it raised {described}", described=failed.error)
            raise Mismatch(_("on the valid look-alike {text}: {got}", text=show(alike, 80), got=got)) from None

    return {"kind": "parse", "texts": texts}, judge


def _resolve(outcome: Outcome, inputs: Inputs) -> Action | Rejection:
    return outcome if isinstance(outcome, Rejection | ToolCall | FinalAnswer) else outcome(inputs)


def _judge_parse(result: dict[str, Any], outcome: Action | Rejection, text: str = "") -> None:
    error = _error(result)
    if error is not None:
        if not _is(error, InvalidModelOutputError):
            raise Raised(error)
        layer, message = _raw_layer(error.get("layer")), str(error.get("message", ""))
        if not isinstance(outcome, Rejection) or layer != outcome.layer:
            raise Mismatch(_("a rejection at {layer}: {message}", layer=_layer(layer), message=show(message)))
        if outcome.phrase.casefold() not in message.casefold():
            raise Mismatch(_("the right layer, but the message {message}", message=show(message)))
        _judge_error_data(error, outcome, text)
        return
    if isinstance(outcome, Rejection):
        raise Mismatch(_("no error: it was accepted as {value}", value=_cut(result.get("shown", ""))))
    if result["value"] != encode(outcome):
        raise Mismatch(_cut(result.get("shown", "")))


def _judge_error_data(error: dict[str, Any], outcome: Rejection, text: str) -> None:
    """The rest of the error's data, where the learner's contract has it: the ``code`` is the layer's default
    (a parser that names only a message and a layer, as the series' do) or the reference's code for this very
    text; ``expected`` and ``found``, when the learner sets them, are the reference's."""
    reference = _reference_rejection(text)
    code = error.get("code")
    if code is not None and code not in (DEFAULT_CODES[outcome.layer], getattr(reference, "code", None)):
        raise Mismatch(_("the right layer, but the code {code}", code=show(code)))
    for name in ("expected", "found"):
        value = error.get(name)
        if value is not None and reference is not None and value != getattr(reference, name):
            raise Mismatch(_("the right layer, but {name}={value}", name=name, value=show(value)))


def _reference_rejection(text: str) -> InvalidModelOutputError | None:
    try:
        reference_parser.parse_json_action(text)
    except InvalidModelOutputError as error:
        return error
    return None


def _expected_rejection(outcome: Action | Rejection) -> tuple[str, Fields]:
    """What a check expecting ``outcome`` says it expects: a template and its fields, or an action's ``repr``."""
    if not isinstance(outcome, Rejection):
        return show(outcome), ()
    template = N_("InvalidModelOutputError at {layer}, its message containing {phrase}")
    return template, (("layer", outcome.layer), ("phrase", repr(outcome.phrase)))


_L1 = ValidationLayer.JSON_SYNTAX
_L2 = ValidationLayer.TOP_LEVEL_OBJECT
_L3 = ValidationLayer.ACTION_TYPE
_L4 = ValidationLayer.FIELDS
_NOT_JSON = "model output must be valid JSON"
_NOT_OBJECT = "model output must be an object"
_BAD_TYPE = "unsupported action type"
_CALL = '{"type": "tool_call", "call_id": "call_1", "tool_name": "read_file", "arguments": {"path": "README.md"}}'


def _pretty_call(inputs: Inputs) -> str:
    fields = {"type": "tool_call", "call_id": inputs.call_id, "tool_name": inputs.tool_name}
    return "\n" + json.dumps({**fields, "arguments": {"path": inputs.path}}, ensure_ascii=False, indent=2) + "\n"


_PRETTY_CALL = _pretty_call(_PUBLIC)


def _readme(inputs: Inputs) -> ToolCall:
    return ToolCall(inputs.call_id, inputs.tool_name, {"path": inputs.path})


def _call_with(**fields: object) -> str:
    return _call_text(_PUBLIC, **fields)


def _call_text(inputs: Inputs, **fields: object) -> str:
    base: dict[str, object] = {"type": "tool_call", "call_id": inputs.call_id, "tool_name": inputs.tool_name}
    base["arguments"] = {}
    base.update(fields)
    return json.dumps({key: value for key, value in base.items() if value is not _MISSING}, ensure_ascii=False)


def _seeded(**fields: object) -> Callable[[Inputs], str]:
    """A tool call with ``fields`` changed, its other fields drawn from the inputs."""
    return lambda inputs: _call_text(inputs, **fields)


_MISSING = object()

_STEP_3_CASES = [
    _parse_check(3, N_("the blog's tool call becomes a ToolCall"), _pretty_call, _readme),
    _parse_check(
        3,
        N_("a final answer becomes a FinalAnswer"),
        lambda inputs: json.dumps({"type": "final_answer", "content": inputs.answer}),
        lambda inputs: FinalAnswer(inputs.answer),
    ),
    _parse_check(
        3,
        N_("arguments' values are the tool's business"),
        lambda inputs: _call_text(inputs, arguments={"path": inputs.limit}),
        lambda inputs: ToolCall(inputs.call_id, inputs.tool_name, {"path": inputs.limit}),
    ),
    _parse_check(
        3,
        N_("layer 1: prose is not JSON"),
        'Sure! {"type": "final_answer", "content": "42"}',
        Rejection(_L1, _NOT_JSON),
    ),
    _parse_check(3, N_("layer 1: a code fence is not JSON"), _FENCED, Rejection(_L1, _NOT_JSON)),
    _parse_check(
        3,
        N_("layer 1: a trailing comma is not JSON"),
        '{"type": "final_answer", "content": "42",}',
        Rejection(_L1, _NOT_JSON),
    ),
    _parse_check(3, N_("layer 1: an empty reply is not JSON"), "", Rejection(_L1, _NOT_JSON)),
    _parse_check(3, N_("layer 2: an array is not an action"), f"[{_CALL}]", Rejection(_L2, _NOT_OBJECT)),
    _parse_check(3, N_("layer 2: a string is not an action"), '"42"', Rejection(_L2, _NOT_OBJECT)),
    _parse_check(3, N_("layer 2: null is not an action"), "null", Rejection(_L2, _NOT_OBJECT)),
    _parse_check(
        3,
        N_("layer 3: tool_result is not an action type"),
        '{"type": "tool_result", "call_id": "call_1", "content": "ok", "is_error": false}',
        Rejection(_L3, _BAD_TYPE),
    ),
    _parse_check(
        3,
        N_("layer 3: type is case-sensitive"),
        _seeded(type="Tool_Call"),
        Rejection(_L3, _BAD_TYPE),
    ),
    _parse_check(3, N_("layer 3: no type at all"), '{"content": "42"}', Rejection(_L3, _BAD_TYPE)),
    _parse_check(
        3,
        N_("layer 3: a type that is a list"),
        _seeded(type=["tool_call"]),
        Rejection(_L3, _BAD_TYPE),
    ),
    _parse_check(
        3,
        N_("layer 4: a missing field"),
        _seeded(tool_name=_MISSING),
        Rejection(_L4, "tool_call fields do not match the contract"),
    ),
    _parse_check(
        3,
        N_("layer 4: an extra field"),
        _seeded(reason="I want to look"),
        Rejection(_L4, "tool_call fields do not match the contract"),
    ),
    _parse_check(
        3,
        N_("layer 4: a final answer with arguments"),
        '{"type": "final_answer", "content": "done", "arguments": {}}',
        Rejection(_L4, "final_answer fields do not match the contract"),
    ),
    _parse_check(
        3,
        N_("layer 4: a final answer without content"),
        '{"type": "final_answer"}',
        Rejection(_L4, "final_answer fields do not match the contract"),
    ),
    _parse_check(
        3,
        N_("layer 4: call_id that is a number"),
        _seeded(call_id=1),
        Rejection(_L4, "call_id must be a string"),
    ),
    _parse_check(
        3,
        N_("layer 4: tool_name that is null"),
        _seeded(tool_name=None),
        Rejection(_L4, "tool_name must be a string"),
    ),
    _parse_check(
        3,
        N_("layer 4: content that is true"),
        '{"type": "final_answer", "content": true}',
        Rejection(_L4, "content must be a string"),
    ),
    _parse_check(
        3,
        N_("layer 4: arguments as a string"),
        _seeded(arguments='{"path": "README.md"}'),
        Rejection(_L4, "arguments must be an object"),
    ),
    _parse_check(
        3,
        N_("layer 4: arguments as a list"),
        _seeded(arguments=["README.md"]),
        Rejection(_L4, "arguments must be an object"),
    ),
]

_STRICT = N_("strict JSON (RFC 8259): json.loads accepts this, the blog's parser starts with json.loads")
_NON_BLANK = N_("the non-blank rule: the blog checks types only")
_STEP_4_CASES = [
    _parse_check(
        4,
        N_("a duplicate key is refused, not resolved"),
        '{"type": "tool_call", "call_id": "c1", "tool_name": "read_file", "tool_name": "delete_file", "arguments": {}}',
        Rejection(_L1, _NOT_JSON),
        ours=N_(
            "strict JSON (RFC 8259): json.loads accepts this, the blog's parser starts with json.loads"
            " and keeps the last value: read_file becomes delete_file"
        ),
        look_alike=lambda inputs: _call_text(inputs, arguments={"tool_name": inputs.tool_name, "note": inputs.answer}),
    ),
    _parse_check(
        4,
        N_("a duplicate key inside arguments"),
        '{"type": "tool_call", "call_id": "c1", "tool_name": "rm", "arguments": {"path": "a.txt", "path": "/"}}',
        Rejection(_L1, _NOT_JSON),
        ours=_STRICT,
        look_alike=lambda inputs: _call_text(inputs, arguments={"path": {"path": inputs.path}, "limit": inputs.limit}),
    ),
    _parse_check(
        4,
        N_("NaN is not a JSON number"),
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"seconds": NaN}}',
        Rejection(_L1, _NOT_JSON),
        ours=_STRICT,
        look_alike=lambda inputs: _call_text(inputs, arguments={"seconds": "NaN", "n": inputs.limit}),
    ),
    _parse_check(
        4,
        N_("Infinity is not a JSON number"),
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"seconds": Infinity}}',
        Rejection(_L1, _NOT_JSON),
        ours=_STRICT,
        look_alike=lambda inputs: _call_text(inputs, arguments={"seconds": "Infinity", "n": inputs.limit}),
    ),
    _parse_check(
        4,
        N_("-Infinity is not a JSON number"),
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"seconds": -Infinity}}',
        Rejection(_L1, _NOT_JSON),
        ours=_STRICT,
        look_alike=lambda inputs: _call_text(inputs, arguments={"seconds": "-Infinity", "n": inputs.limit}),
    ),
    _parse_check(
        4,
        N_("a number too large for a float"),
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"seconds": 1e999}}',
        Rejection(_L1, _NOT_JSON),
        ours=N_(
            "strict JSON (RFC 8259): json.loads accepts this, the blog's parser starts with json.loads"
            " and turns 1e999 into inf"
        ),
        look_alike=lambda inputs: _call_text(inputs, arguments={"seconds": 10.0 ** (inputs.limit % 300), "s": "1e999"}),
    ),
    _parse_check(
        4,
        N_("a 5000-digit integer"),
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"n": ' + "9" * 5000 + "}}",
        Rejection(_L1, _NOT_JSON),
        ours=N_("json.loads raises ValueError (not JSONDecodeError) past 4300 digits"),
        given=N_('a tool call whose arguments hold {"n": 999…9} with 5000 digits'),
        look_alike=lambda inputs: _call_text(inputs, arguments={"n": "9" * 5000, "limit": inputs.limit}),
    ),
    _parse_check(
        4,
        N_("nesting 100 000 arrays deep"),
        "[" * 100_000 + "]" * 100_000,
        Rejection(_L1, _NOT_JSON),
        ours=N_("json.loads raises RecursionError on deep nesting"),
        given=N_("'[[[[…]]]]' nested 100 000 deep"),
        look_alike=lambda inputs: _call_text(inputs, arguments={"deep": "[" * 100_000, "n": [[[inputs.limit]]]}),
    ),
    _parse_check(
        4,
        N_("a cut-off reply"),
        '{"type": "final_answer", "content": "The answer is',
        Rejection(_L1, _NOT_JSON),
        ours=N_("the reply stopped at max_output_tokens; nothing may close its brackets for it"),
        look_alike=lambda inputs: json.dumps({"type": "final_answer", "content": f"The answer is {inputs.answer}"}),
    ),
    _parse_check(
        4,
        N_("two JSON values in one reply"),
        '{"type": "final_answer", "content": "1"}\n{"type": "final_answer", "content": "2"}',
        Rejection(_L1, _NOT_JSON),
        ours=N_("exactly one value: neither the first nor the last may be picked"),
        look_alike=lambda inputs: json.dumps({"type": "final_answer", "content": inputs.answer + '}\n{"type": 2'}),
    ),
    _parse_check(
        4,
        N_("a byte-order mark before the JSON"),
        '\ufeff{"type": "final_answer", "content": "42"}',
        Rejection(_L1, _NOT_JSON),
        ours=N_("RFC 8259 forbids a byte-order mark in JSON text"),
        look_alike=lambda inputs: json.dumps({"type": "final_answer", "content": "\ufeff" + inputs.answer}),
    ),
    _parse_check(
        4,
        N_("a blank call_id"),
        _seeded(call_id="   "),
        Rejection(_L4, "call_id must not be blank"),
        ours=_NON_BLANK,
        look_alike=lambda inputs: _call_text(inputs, call_id=f" {inputs.call_id} "),
    ),
    _parse_check(
        4,
        N_("an empty tool_name"),
        _seeded(tool_name=""),
        Rejection(_L4, "tool_name must not be blank"),
        ours=_NON_BLANK,
        look_alike=lambda inputs: _call_text(inputs, tool_name=inputs.tool_name[:1]),
    ),
    _parse_check(
        4,
        N_("a blank final answer"),
        '{"type": "final_answer", "content": " \\n "}',
        Rejection(_L4, "content must not be blank"),
        ours=_NON_BLANK,
        look_alike=lambda inputs: json.dumps({"type": "final_answer", "content": f" {inputs.answer} \n "}),
    ),
]


def _numbered(step: int, makers: Sequence[Callable[[str], Check]]) -> list[Check]:
    return [make(f"{step}.{number}") for number, make in enumerate(makers, start=1)]


CHECKS: tuple[Check, ...] = (*_STEP_1, *_STEP_2, *_numbered(3, _STEP_3_CASES), *_numbered(4, _STEP_4_CASES))
"""Every check, in step order; ``id`` is ``"<step>.<number>"``."""


def checks_up_to(step: int | None) -> tuple[Check, ...]:
    """The checks of steps 1..``step`` (all of them for None): each step builds on the one before."""
    last = max(STEPS) if step is None else step
    return tuple(check for check in CHECKS if check.step <= last)


def _assert_ids_unique() -> None:
    ids = [check.id for check in CHECKS]
    if len(ids) != len(set(ids)):  # pragma: no cover - a mistake in this file
        raise AssertionError(f"duplicate check ids in {ids}")


_assert_ids_unique()


# --------------------------------------------------------------------------- samples: yours beside ours


@dataclass(frozen=True, slots=True)
class Sample:
    """One input shown through a learner's file and through the reference, side by side.

    Samples are not graded: they let a learner see what their code does next to what the
    reference does, including where the two differ on purpose (``cost`` says what a
    difference costs an agent).
    """

    id: str
    step: int
    file: str
    label: str
    probe: Probe
    describe: Callable[[dict[str, Any]], str]
    """What the probe's result shows, as one text (the same function for the reference and the learner)."""
    cost: str = ""
    label_fields: Fields = ()
    """``label`` and ``cost`` are message ids; ``label_fields`` fill the label's placeholders."""

    def run(self, module: ModuleType) -> str:
        """The sample through ``module`` in this process (the reference side of ``compare``)."""
        return self.describe(run_here(module, self.probe))

    def words(self, language: Language | None = None) -> tuple[str, str]:
        """The label and the cost in ``language`` (the edition's by default)."""
        chosen = edition_language(requested=language)
        return _fill(self.label, self.label_fields, chosen), _(self.cost, chosen) if self.cost else ""


def describe_parse(module: ModuleType, text: str) -> str:
    """What ``module.parse_json_action`` does with ``text``: ``✔ <action>`` or ``✘ rejected at layer N (...)``."""
    return describe_parse_result(run_here(module, {"kind": "parse", "text": text}))


def rejected_layer(result: dict[str, Any]) -> int | None:
    """The layer number a parse probe's result was refused at (None: accepted, or not an InvalidModelOutputError
    with a known layer): the fact ``describe_parse_result`` puts into words, so nobody parses the words back."""
    error = _error(result)
    if error is None or not _is(error, InvalidModelOutputError):
        return None
    try:
        return int(ValidationLayer(_raw_layer(error.get("layer"))))  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return None


def describe_parse_result(result: dict[str, Any]) -> str:
    """``describe_parse`` for a probe's result (the learner's, sent back from the sandbox)."""
    error = _error(result)
    if error is not None:
        if not _is(error, InvalidModelOutputError):
            raise Raised(error)
        return _("✘ rejected at {layer}", layer=_layer(_raw_layer(error.get("layer"))))
    return f"✔ {_cut(result.get('shown', ''), 90)}"


def _describe_messages(result: dict[str, Any]) -> str:
    return "\n".join(f"{role}: {content}" for role, content in _pairs(result))


def _describe_adapter(result: dict[str, Any]) -> str:
    error = _error(result)
    if error is not None and _is(error, ModelProviderError):
        cause = error.get("cause_shown", "None") if result.get("cause_is_original") else "None"
        return _("ModelProviderError, cause {cause}", cause=_cut(cause))
    if error is not None and _is(error, InvalidModelOutputError):
        usage = error.get("usage")
        shown_usage = (
            repr(TokenUsage(*_PUBLIC.invalid_usage))
            if usage == encode(TokenUsage(*_PUBLIC.invalid_usage))
            else show(usage)
        )
        return _(
            "InvalidModelOutputError at {layer}, usage={usage}",
            layer=_layer(_raw_layer(error.get("layer"))),
            usage=shown_usage,
        )
    _value(result)
    return _cut(result.get("shown", ""), 160)


def _message_sample(index: int, label: str, item: HistoryItem) -> Sample:
    probe = _messages_probe([item])
    return Sample(f"s1.{index}", 1, "json_text_messages", label, probe, _describe_messages)


def _adapter_sample_of(index: int, label: str, kind: str) -> Sample:
    failure = "provider_error" if kind == "failure" else None
    probe = _adapter_probe(_PUBLIC, fenced=kind == "fenced", failure=failure)
    return Sample(f"s2.{index}", 2, "json_text_adapter", label, probe, _describe_adapter)


@dataclass(frozen=True, slots=True)
class CorpusReply:
    """One reply of notebook 04's blog-versus-ours table, with what a lax parser's answer costs (a message id)."""

    text: str
    cost: str = ""


def _parse_sample(index: int, label: str, reply: CorpusReply) -> Sample:
    probe = {"kind": "parse", "text": reply.text}
    return Sample(
        f"s3.{index}",
        3,
        "json_action_parser",
        label,
        probe,
        describe_parse_result,
        reply.cost,
    )


CORPUS = {
    N_("the blog's tool call"): CorpusReply(_PRETTY_CALL),
    N_("a code fence"): CorpusReply(_FENCED),
    N_("a top-level array"): CorpusReply(f"[{_CALL}]"),
    N_('type "tool_result"'): CorpusReply(
        '{"type": "tool_result", "call_id": "call_1", "content": "ok", "is_error": false}'
    ),
    N_("a duplicate tool_name"): CorpusReply(
        '{"type": "tool_call", "call_id": "c1", "tool_name": "read_file", "tool_name": "delete_file", "arguments": {}}',
        N_("json.loads keeps the last value: the agent runs delete_file where the model also wrote read_file"),
    ),
    N_("a duplicate path"): CorpusReply(
        '{"type": "tool_call", "call_id": "c1", "tool_name": "rm", "arguments": {"path": "a.txt", "path": "/"}}',
        N_("the tool receives '/', the second of two paths"),
    ),
    N_("NaN seconds"): CorpusReply(
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"seconds": NaN}}',
        N_("nan reaches the tool, and every comparison with nan is False: a guard if seconds > 60 lets it through"),
    ),
    N_("1e999 seconds"): CorpusReply(
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"seconds": 1e999}}',
        N_("inf reaches the tool: sleep forever"),
    ),
    N_("5000 nines"): CorpusReply(
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"n": ' + "9" * 5000 + "}}",
        N_("json.loads raises ValueError, which the blog's except json.JSONDecodeError does not catch: a crash"),
    ),
    N_("nesting 100 000 deep"): CorpusReply(
        "[" * 100_000 + "]" * 100_000,
        N_("json.loads raises RecursionError: the agent crashes instead of asking for a correction"),
    ),
    N_("a blank call_id"): CorpusReply(
        _call_with(call_id="   "),
        N_("ToolCall refuses it with ValueError, not InvalidModelOutputError: the Kernel cannot correct the model"),
    ),
    N_("a cut-off reply"): CorpusReply('{"type": "final_answer", "content": "The answer is'),
    N_("two objects"): CorpusReply(
        '{"type": "final_answer", "content": "1"}\n{"type": "final_answer", "content": "2"}'
    ),
}
"""Replies for the blog-versus-ours table of notebook 04, by their English label."""

SAMPLES: tuple[Sample, ...] = (
    _message_sample(1, N_("a Message"), Message(MessageRole.USER, "请帮我读一下 README.md")),
    _message_sample(2, N_("a ToolCall"), _TOOL_CALL),
    _message_sample(3, N_("a ToolResult in Chinese"), _TOOL_RESULT),
    _adapter_sample_of(1, N_("a valid reply"), "valid"),
    _adapter_sample_of(2, N_("the provider fails"), "failure"),
    _adapter_sample_of(3, N_("a fenced reply"), "fenced"),
    *(_parse_sample(number, label, reply) for number, (label, reply) in enumerate(CORPUS.items(), 1)),
)
"""What notebooks 02-04 show beside the reference; step 3's samples are also step 4's corpus."""


def text_samples(texts: Sequence[str]) -> tuple[Sample, ...]:
    """Samples for replies chosen at run time (the playground's): ``t.1``, ``t.2``, ... in order."""

    def sample(index: int, text: str) -> Sample:
        return Sample(
            f"t.{index}",
            3,
            "json_action_parser",
            N_("reply {index}"),
            {"kind": "parse", "text": text},
            describe_parse_result,
            label_fields=(("index", index),),
        )

    return tuple(sample(index, text) for index, text in enumerate(texts, start=1))
