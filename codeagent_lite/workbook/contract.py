"""The contract a learner's three files are judged by: one list of checks, in notebook order.

``verify DIR`` runs them on a learner's folder and ``tests/test_contract.py`` on the package's own modules, so the
workbook never grades a learner on a rule its own reference breaks. A check judges behaviour, never wording; ``ours``
marks a rule the blog never states. The learner's code must not decide its own verdict, so ``check.probe(inputs)``
gives a probe (data that ``verify_probe`` runs in the sandbox) and a judge (run here, with the expected values the
probe never carries). ``Inputs()`` are the public cases a report prints; ``Inputs.draw(seed)`` draws fresh ones.
"""

from __future__ import annotations

import json
import random
import secrets
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from types import ModuleType
from typing import Any

from .. import json_action_parser as reference_parser
from .. import json_text_messages as reference_messages
from ..display import shorten
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
from .verify_standins import run_here
from .wire import Caps, encode, qualified
from .words import N_, _

FILES = ("json_text_messages", "json_text_adapter", "json_action_parser")
"""The three files of the chapter, in the order the notebooks build them; step 4 is the parser again."""

STEPS = {
    1: N_("message encoding · {section} (json_text_messages.py)"),
    2: N_("the adapter's flow · {section} (json_text_adapter.py)"),
    3: N_("the blog's four checks · {section} (json_action_parser.py)"),
    4: N_("strict JSON and non-blank strings, beyond the blog (json_action_parser.py)"),
}

BLOG_SECTIONS = {1: "二、消息转换", 2: "三、Adapter 调度", 3: "四、行动解析"}
"""Quoted as the blog writes them in both editions: names, not words to translate."""


def step_title(step: int, language: str | None = None) -> str:
    return _(STEPS[step], language, section=BLOG_SECTIONS.get(step, ""))


Fields = tuple[tuple[str, object], ...]
"""The values of a message's ``{name}`` placeholders, as pairs, so a frozen check stays hashable."""


@dataclass(frozen=True, slots=True)
class CheckWords:
    name: str
    given: str
    expected: str
    ours: str | None


@dataclass(frozen=True, slots=True)
class Check:
    """One behaviour of one file; ``id`` and ``step`` come from its place in ``CHECKS``."""

    name: str
    given: str
    expected: str
    case: Case
    """The probe (inputs, sent to the child) and the judge (run here, on what came back), for given inputs."""
    ours: str | None = None
    """When the blog never states this rule: what the workbook adds, in a few words."""
    given_fields: Fields = ()
    expected_fields: Fields = ()
    id: str = ""
    step: int = 0

    @property
    def file(self) -> str:
        return FILES[min(self.step, 3) - 1]

    def probe(self, inputs: Inputs | None = None) -> tuple[Probe, Judge]:
        return self.case(inputs or _PUBLIC)

    def run(self, module: ModuleType, inputs: Inputs | None = None) -> None:
        """Probe and judge in this process: for the package's own modules (``tests/test_contract.py``)."""
        probe, judge = self.probe(inputs)
        judge(run_here(module, probe))

    def words(self, language: Language | None = None) -> CheckWords:
        chosen = edition_language(requested=language)
        return CheckWords(
            _(self.name, chosen),
            _fill(self.given, self.given_fields, chosen),
            _fill(self.expected, self.expected_fields, chosen),
            None if self.ours is None else _(self.ours, chosen),
        )


def _fill(text: str, fields: Fields, language: Language) -> str:
    values = {name: _layer(value, language) if isinstance(value, ValidationLayer) else value for name, value in fields}
    return _(text, language, **values)


class Mismatch(Exception):
    """The learner's code returned, but not what the contract expects: ``got`` says what came back, and
    ``expected`` replaces the check's own expectation where the failure needs a more precise one."""

    def __init__(self, got: str, expected: str | None = None) -> None:
        super().__init__(got)
        self.got = got
        self.expected = expected


class Raised(Exception):
    """The learner's code raised where the check wanted a value: ``error`` is the probe's description of it;
    ``look_alike``, the valid text it raised on when that was the check's second text (``LOOK_ALIKE``)."""

    def __init__(self, error: dict[str, Any], look_alike: str | None = None) -> None:
        super().__init__(str(error.get("type", "")))
        self.error = error
        self.look_alike = look_alike


LOOK_ALIKE = N_("on the valid look-alike {text}: {got}")


@dataclass(frozen=True, slots=True)
class Inputs:
    """The values the probes are built from: the public cases by default, fresh ones from ``draw``."""

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
        return replace(self, nonce="~" + secrets.token_hex(4))

    @classmethod
    def draw(cls, seed: int) -> Inputs:
        """Inputs of the public cases' shapes (Chinese strings, odd call ids, numbers) that the learner's code
        cannot know: a parser that looks verdicts up by their text fails them."""
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


_PUBLIC = Inputs()
Probe = dict[str, Any]
Judge = Callable[[dict[str, Any]], None]
Case = Callable[[Inputs], tuple[Probe, Judge]]
Rule = Callable[[Inputs, dict[str, Any]], None]


# --------------------------------------------------------------------------- what came back


def _cut(text: object, limit: int = 120) -> str:
    return shorten(str(text), limit)


def _show(value: object, limit: int = 120) -> str:
    return _cut(repr(value), limit)


def _shown(result: dict[str, Any], limit: int = 120) -> str:
    return _cut(result.get("shown", ""), limit)


def _same(got: object, wanted: object) -> bool:
    """Equal as data, types too: Python's ``==`` holds that 40 == 40.0 and True == 1, and a parser that turns one
    into the other has changed the value."""
    try:
        return json.dumps(got, sort_keys=True) == json.dumps(wanted, sort_keys=True)
    except (TypeError, ValueError, RecursionError):  # what came back is no data the contract can hold
        return False


def _error(result: dict[str, Any]) -> dict[str, Any] | None:
    error = result.get("error")
    return error if isinstance(error, dict) else None


def _value(result: dict[str, Any]) -> Any:
    if (error := _error(result)) is not None:
        raise Raised(error)
    return result["value"]


def _is(error: dict[str, Any], cls: type) -> bool:
    return qualified(cls) in error.get("mro", [])


def _error_of(result: dict[str, Any], cls: type) -> dict[str, Any] | None:
    """The ``cls`` error the call raised, None when it returned: any other error is ``Raised``."""
    if (error := _error(result)) is not None and not _is(error, cls):
        raise Raised(error)
    return error


def _raw_layer(error: dict[str, Any]) -> object:
    """An error's layer as the probe encoded it: an enum's value, or the plain value a learner put there."""
    encoded = error.get("layer")
    return encoded.get("value") if isinstance(encoded, dict) and "$enum" in encoded else encoded


def _layer(layer: object, language: Language | None = None) -> str:
    """``layer 1 (JSON syntax)`` in the language, or the raw value when it is no layer."""
    try:
        return layer_label(ValidationLayer(layer), language)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return f"layer={layer!r}"


# --------------------------------------------------------------------------- step 1: messages


def _messages_probe(history: Sequence[HistoryItem | ToolSpec], each: bool = False) -> Probe:
    return {"kind": "messages", "history": encode(list(history))} | ({"each": True} if each else {})


def _messages(history: Callable[[Inputs], Sequence[HistoryItem | ToolSpec]], rule: Rule) -> Case:
    return lambda inputs: (_messages_probe(history(inputs)), partial(rule, inputs))


def _pairs(value: dict[str, Any]) -> list[tuple[str, str]]:
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


def _one(value: dict[str, Any]) -> tuple[str, str]:
    pairs = _pairs(value)
    if len(pairs) != 1:
        raise Mismatch(_("{count} messages for one history item", count=len(pairs)))
    return pairs[0]


def _decoded(content: str, object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None) -> Any:
    try:
        return json.loads(content, object_pairs_hook=object_pairs_hook)
    except (ValueError, RecursionError):
        raise Mismatch(_("the content {content}, which is not JSON", content=_show(content))) from None


def _tool_call(inputs: Inputs) -> ToolCall:
    return ToolCall(inputs.call_id, inputs.tool_name, {"path": inputs.path, "limit": inputs.limit})


def _tool_result(inputs: Inputs) -> ToolResult:
    return ToolResult(inputs.call_id, inputs.missing, is_error=True)


def _fields(item: ToolCall | ToolResult) -> dict[str, Any]:
    return {"type": "tool_call" if isinstance(item, ToolCall) else "tool_result", **asdict(item)}


_TOOL_CALL, _TOOL_RESULT = _tool_call(_PUBLIC), _tool_result(_PUBLIC)


def _three_messages(inputs: Inputs) -> list[Message]:
    return [
        Message(MessageRole.SYSTEM, "Answer with one JSON action."),
        Message(MessageRole.USER, inputs.request),
        Message(MessageRole.ASSISTANT, "I will read it first."),
    ]


def _messages_kept(inputs: Inputs, result: dict[str, Any]) -> None:
    got = _pairs(_value(result))
    if got != [(item.role.value, item.content) for item in _three_messages(inputs)]:
        raise Mismatch(_show(got, 200))


def _assistant_role(_inputs: Inputs, result: dict[str, Any]) -> None:
    role, _content = _one(_value(result))
    if role != "assistant":
        raise Mismatch(_("role {role}", role=repr(role)))


def _tool_call_fields(inputs: Inputs, result: dict[str, Any]) -> None:
    decoded = _decoded(_one(_value(result))[1])
    if not _same(decoded, _fields(_tool_call(inputs))):
        raise Mismatch(_("content that decodes to {value}", value=_show(decoded)))


def _tool_result_sent(inputs: Inputs, result: dict[str, Any]) -> None:
    role, content = _one(_value(result))
    decoded = _decoded(content)
    if role != "user" or not _same(decoded, _fields(_tool_result(inputs))):
        raise Mismatch(_("role {role} with content that decodes to {value}", role=repr(role), value=_show(decoded)))


def _call_id_verbatim(inputs: Inputs, result: dict[str, Any]) -> None:
    decoded = [_decoded(content) for _role, content in _pairs(_value(result))]
    ids = [value.get("call_id") if isinstance(value, dict) else None for value in decoded]
    if ids != [inputs.odd_id, inputs.odd_id]:
        raise Mismatch(_("call_id values {ids}", ids=_show(ids)))


def _in_order(inputs: Inputs) -> tuple[Probe, Judge]:
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
        pairs = _pairs(_value(result))
        summary = []
        for role, content in pairs:
            value = content if role == "user" and not content.startswith("{") else _decoded(content)
            summary.append(f"{value.get('type')}:{value.get('call_id')}" if isinstance(value, dict) else content)
        if summary != wanted:
            raise Mismatch(_("{count} messages: {summary}", count=len(pairs), summary=_show(summary, 200)))

    return _messages_probe(history), judge


def _each_item(check: Callable[[str, HistoryItem], None]) -> Case:
    """The ToolCall and the ToolResult, each encoded on its own: ``check`` sees each one's content."""

    def case(inputs: Inputs) -> tuple[Probe, Judge]:
        items: list[HistoryItem] = [_tool_call(inputs), _tool_result(inputs)]

        def judge(result: dict[str, Any]) -> None:
            each = _value(result)["each"]
            if len(each) != len(items):
                raise Mismatch(_("{count} messages for one history item", count=len(each)))
            for value, item in zip(each, items, strict=True):
                check(_one(value)[1], item)

        return _messages_probe(items, each=True), judge

    return case


def _keys_sorted(content: str, _item: HistoryItem) -> None:
    orders: list[list[str]] = []

    def record(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        orders.append([key for key, _ignored in pairs])
        return dict(pairs)

    _decoded(content, record)
    for order in orders:
        if order != sorted(order):
            raise Mismatch(_("keys in the order {order} in {content}", order=", ".join(order), content=_show(content)))


def _compact(content: str, _item: HistoryItem) -> None:
    value = _decoded(content)
    if content not in {json.dumps(value, separators=(",", ":"), ensure_ascii=flag) for flag in (True, False)}:
        raise Mismatch(_show(content))


def _exact_bytes(content: str, item: HistoryItem) -> None:
    (reference,) = reference_messages.build_provider_messages([item])
    if content != reference.content:
        raise Mismatch(_show(content, 200), expected=_("exactly {value}", value=_show(reference.content, 200)))


def _chinese_kept(inputs: Inputs, result: dict[str, Any]) -> None:
    _role, content = _one(_value(result))
    if inputs.missing not in content:
        raise Mismatch(_show(content))


def _refused(cls: type, got: Callable[[Any], str]) -> Rule:
    """A judge wanting ``cls`` raised; ``got`` words what came back instead."""

    def rule(_inputs: Inputs, result: dict[str, Any]) -> None:
        if _error_of(result, cls) is None:
            raise Mismatch(got(result["value"]))

    return rule


_ABOVE = N_("the ToolCall and ToolResult above")
_STEP_1 = [
    Check(
        N_("a Message keeps its role and content"),
        N_("a system, a user and an assistant Message"),
        N_("ProviderMessages with role 'system', 'user', 'assistant' (item.role.value) and the same content"),
        _messages(_three_messages, _messages_kept),
    ),
    Check(
        N_("a ToolCall is sent with the assistant role"),
        _show(_TOOL_CALL),
        N_("one ProviderMessage with role 'assistant'"),
        _messages(lambda inputs: [_tool_call(inputs)], _assistant_role),
    ),
    Check(
        N_("a ToolCall's content is its four fields as JSON"),
        _show(_TOOL_CALL),
        N_("content that decodes to {value}"),
        _messages(lambda inputs: [_tool_call(inputs)], _tool_call_fields),
        expected_fields=(("value", _show(_fields(_TOOL_CALL))),),
    ),
    Check(
        N_("a ToolResult is sent as the user, with its four fields"),
        _show(_TOOL_RESULT),
        N_("role {role} with content that decodes to {value}"),
        _messages(lambda inputs: [_tool_result(inputs)], _tool_result_sent),
        expected_fields=(("role", "'user'"), ("value", _show(_fields(_TOOL_RESULT)))),
    ),
    Check(
        N_("call_id is copied exactly"),
        N_("a ToolCall and a ToolResult whose call_id is ' call 7 · 第七\\t'"),
        N_("that call_id, character for character, in both messages"),
        _messages(lambda i: [ToolCall(i.odd_id, i.tool_name, {}), ToolResult(i.odd_id, "ok")], _call_id_verbatim),
    ),
    Check(
        N_("one message per item, in the history's order"),
        N_("two calls, their results in the other order, then a user Message"),
        N_("5 messages in the same order: call_a, call_b, result call_b, result call_a, 'thanks'"),
        _in_order,
    ),
    Check(
        N_("keys are sorted, at every level"),
        _ABOVE,
        N_("JSON keys in alphabetical order (arguments, call_id, tool_name, type)"),
        _each_item(_keys_sorted),
        ours=N_("json.dumps(..., sort_keys=True): the blog's _encode_json does not show its arguments"),
    ),
    Check(
        N_("no spaces between JSON tokens"),
        _ABOVE,
        N_('compact JSON such as {"call_id":"call_1",...}, with no space after "," or ":"'),
        _each_item(_compact),
        ours=N_("json.dumps(..., separators=(',', ':')): not shown in the blog"),
    ),
    Check(
        N_("Chinese text stays readable"),
        _show(_TOOL_RESULT),
        N_("content holding 文件不存在 as it is, not \\u6587\\u4ef6... escapes"),
        _messages(lambda inputs: [_tool_result(inputs)], _chinese_kept),
        ours=N_("json.dumps(..., ensure_ascii=False): not shown in the blog"),
    ),
    Check(
        N_("the exact bytes of the reference encoding"),
        _ABOVE,
        N_("the same text as codeagent_lite's encode_json"),
        _each_item(_exact_bytes),
        ours=N_("the blog's _encode_json is our public encode_json; this pins all four json.dumps arguments"),
    ),
    Check(
        N_("NaN is refused, not written into the history"),
        "ToolCall('call_1', 'sleep', {'seconds': nan})",
        N_("a ValueError (json.dumps(..., allow_nan=False)), because NaN is not JSON"),
        _messages(
            lambda inputs: [ToolCall(inputs.call_id, "sleep", {"seconds": float("nan")})],
            _refused(ValueError, lambda value: _("the message {value}", value=_show(_pairs(value)))),
        ),
        ours=N_("allow_nan=False: the blog does not say"),
    ),
    Check(
        N_("an item of another type is refused"),
        N_("a ToolSpec, which is not a HistoryItem"),
        N_("a TypeError naming the type, instead of a guess or silence"),
        _messages(
            lambda inputs: [ToolSpec(inputs.tool_name, "Read a file.")],
            _refused(TypeError, lambda value: _("{value} and no error", value=_cut(value["shown"]))),
        ),
        ours=N_("the blog does not say what happens to anything but the three HistoryItem types"),
    ),
]


# --------------------------------------------------------------------------- step 2: the adapter

_NOT_JSON = "model output must be valid JSON"
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
    return "\n " + json.dumps(_fields(_reply_action(inputs)), ensure_ascii=False) + " \n"


def _adapter_probe(inputs: Inputs, *, fenced: bool = False, failure: str | None = None) -> Probe:
    """The adapter's inputs (sent to the child), and under ``stand_ins`` what the parent answers its helpers'
    and the provider's calls with (``verify_standins``; never sent: the child learns them only by calling)."""
    history = _history(inputs)
    nonce = inputs.nonce
    rejection = {"message": f"{_NOT_JSON}: found ```{nonce}", "layer": int(ValidationLayer.JSON_SYNTAX)}
    stand_ins = {
        "reply": _FENCED if fenced else _reply(inputs),
        "usage": list(inputs.invalid_usage if fenced else inputs.usage),
        "failure": failure,
        "failure_message": (inputs.failure if failure == "provider_error" else "a bug inside the provider") + nonce,
        "canned_messages": [[item.role.value, item.content + nonce] for item in history if isinstance(item, Message)],
        "canned_action": encode(_reply_action(inputs)),
        "canned_rejection": rejection if fenced else None,
    }
    return {
        "kind": "adapter",
        "history": encode(history),
        "tools": encode(list(_TOOLS)),
        "max_output_tokens": inputs.max_output_tokens,
        "stand_ins": stand_ins,
    }


def _adapter(rule: Rule, *, fenced: bool = False, failure: str | None = None) -> Case:
    return lambda inputs: (_adapter_probe(inputs, fenced=fenced, failure=failure), partial(rule, inputs))


def _asked_the_provider(result: dict[str, Any]) -> None:
    """An adapter's answer counts only when it came from the provider: the parent saw the call (a value or an
    error made up without one, from the public cases, is not the adapter's flow)."""
    if not result.get("calls"):
        raise Mismatch(_("{count} calls to the provider", count=0))


def _response_fields(result: dict[str, Any]) -> dict[str, Any]:
    value = _value(result)
    if not isinstance(value, dict) or value.get("$obj") != qualified(ModelResponse):
        raise Mismatch(_shown(result, 200))
    fields = value["fields"]
    assert isinstance(fields, dict)
    _asked_the_provider(result)
    return fields


def _raised(result: dict[str, Any], cls: type) -> dict[str, Any]:
    if (error := _error_of(result, cls)) is None:
        raise Mismatch(_("no error but {value}", value=_shown(result)))
    _asked_the_provider(result)
    return error


def _returns_action(inputs: Inputs, result: dict[str, Any]) -> None:
    if not _same(_response_fields(result).get("action"), encode(_reply_action(inputs))):
        raise Mismatch(_shown(result, 200))


def _usage_kept(inputs: Inputs, result: dict[str, Any]) -> None:
    usage = _response_fields(result).get("usage")
    if not _same(usage, encode(TokenUsage(*inputs.usage))):
        raise Mismatch(_("usage {value}", value=_show(usage)))


def _provider_arguments(inputs: Inputs, result: dict[str, Any]) -> None:
    _value(result)  # an adapter that raised is judged by what it raised
    calls = result["calls"]
    if len(calls) != 1:
        raise Mismatch(_("{count} calls to the provider", count=len(calls)))
    call = calls[0]
    problems = []
    if not call["messages_same"]:
        problems.append(f"messages={_cut(call['messages_shown'], 80)}")
    if not _same(call["tools"], encode(list(_TOOLS))):
        problems.append(f"tools={_cut(call['tools_shown'], 80)}")
    if not _same(call["max_output_tokens"], inputs.max_output_tokens):
        problems.append(f"max_output_tokens={_show(call['max_output_tokens'], 40)}")
    if problems:
        raise Mismatch(_("the provider was called with {arguments}", arguments=", ".join(problems)))


def _builds_from_history(inputs: Inputs, result: dict[str, Any]) -> None:
    _value(result)
    histories = result["built"]
    if not _same(histories, [encode(_history(inputs))]):
        shown = _show(histories)
        raise Mismatch(
            _("build_provider_messages called {count} times, with {histories}", count=len(histories), histories=shown)
        )


def _parses_raw_text(inputs: Inputs, result: dict[str, Any]) -> None:
    _value(result)
    if result["parsed"] != [_reply(inputs)]:
        raise Mismatch(_("parse_json_action called with {texts}", texts=_show(result["parsed"])))


def _cause_kept(_inputs: Inputs, result: dict[str, Any]) -> None:
    error = _raised(result, ModelProviderError)
    if result.get("cause_is_original") is not True:
        cause = _cut(error.get("cause_shown", "None"))
        raise Mismatch(_("ModelProviderError with __cause__ {cause} (raise ... from error)", cause=cause))


def _other_errors_pass(_inputs: Inputs, result: dict[str, Any]) -> None:
    error = _error(result)
    if error is not None and _is(error, ModelProviderError) and not _is(error, KeyError):
        raise Mismatch(_("ModelProviderError, which hides a programming error as a network problem"))
    _raised(result, KeyError)


def _invalid_error(result: dict[str, Any]) -> dict[str, Any]:
    error = _raised(result, InvalidModelOutputError)
    if not result.get("parsed"):
        raise Mismatch(_("parse_json_action called with {texts}", texts="[]"))
    return error


def _usage_on_error(inputs: Inputs, result: dict[str, Any]) -> None:
    usage = _invalid_error(result).get("usage")
    if not _same(usage, encode(TokenUsage(*inputs.invalid_usage))):
        raise Mismatch(_("InvalidModelOutputError with usage={usage}", usage=_show(usage)))


def _message_on_error(inputs: Inputs, result: dict[str, Any]) -> None:
    message = str(_invalid_error(result).get("message", ""))
    if _NOT_JSON.casefold() not in message.casefold() or inputs.nonce not in message:
        raise Mismatch(_("the message {value}", value=_show(message)))


def _layer_on_error(_inputs: Inputs, result: dict[str, Any]) -> None:
    layer = _raw_layer(_invalid_error(result))
    if layer != ValidationLayer.JSON_SYNTAX:
        raise Mismatch(_("InvalidModelOutputError with {layer}", layer=_layer(layer)))


_SAME_FENCED = N_("the same fenced reply")
_STEP_2 = [
    Check(
        N_("complete() returns a ModelResponse holding the parsed action"),
        N_("a provider replying {reply}"),
        f"ModelResponse(action={_show(_reply_action(_PUBLIC))}, ...)",
        _adapter(_returns_action),
        given_fields=(("reply", _show(_reply(_PUBLIC).strip(), 60)),),
    ),
    Check(
        N_("the provider's token counts become TokenUsage"),
        N_("a ProviderResponse with input_tokens=17, output_tokens=26"),
        "usage=TokenUsage(input_tokens=17, output_tokens=26)",
        _adapter(_usage_kept),
    ),
    Check(
        N_("the provider gets the messages, the tools and the budget"),
        "complete(history, tools, ModelCallBudget(max_output_tokens=200))",
        N_(
            "one provider.complete(messages=<what build_provider_messages returned>, "
            "tools=tools, max_output_tokens=200)"
        ),
        _adapter(_provider_arguments),
    ),
    Check(
        N_("the history goes through build_provider_messages"),
        N_("a history of two Messages"),
        N_("one call build_provider_messages(history) with those two items"),
        _adapter(_builds_from_history),
    ),
    Check(
        N_("the reply text goes to parse_json_action untouched"),
        N_("a reply with spaces and newlines around it: {reply}"),
        N_("one call parse_json_action(raw_response.text) with exactly that text"),
        _adapter(_parses_raw_text),
        given_fields=(("reply", _show(_reply(_PUBLIC), 40)),),
    ),
    Check(
        N_("a ProviderError becomes ModelProviderError, with the cause kept"),
        N_("a provider raising ProviderError('HTTP 503: server overloaded')"),
        N_("ModelProviderError whose __cause__ is that ProviderError (raise ... from error)"),
        _adapter(_cause_kept, failure="provider_error"),
    ),
    Check(
        N_("an invalid reply raises InvalidModelOutputError carrying the usage"),
        N_("a provider replying {reply} for 120 + 18 tokens"),
        N_("InvalidModelOutputError with usage=TokenUsage(input_tokens=120, output_tokens=18)"),
        _adapter(_usage_on_error, fenced=True),
        given_fields=(("reply", _show(_FENCED, 40)),),
    ),
    Check(
        N_("the parser's explanation reaches the Kernel"),
        _SAME_FENCED,
        N_("an error message still containing 'model output must be valid JSON'"),
        _adapter(_message_on_error, fenced=True),
    ),
    Check(
        N_("the rejecting layer reaches the Kernel"),
        _SAME_FENCED,
        N_("InvalidModelOutputError with {layer}, e.g. via error.with_usage(usage)"),
        _adapter(_layer_on_error, fenced=True),
        expected_fields=(("layer", ValidationLayer.JSON_SYNTAX),),
        ours=N_(
            "the blog adds the usage; keeping layer (and expected/found) is how our agent loop explains a rejection"
        ),
    ),
    Check(
        N_("other exceptions are not disguised as provider failures"),
        N_("a provider whose code raises KeyError (a bug, not a network problem)"),
        N_("the KeyError itself, because only ProviderError becomes ModelProviderError"),
        _adapter(_other_errors_pass, failure="key_error"),
        ours=N_("the blog converts ProviderError; that nothing else is converted is our reading of it"),
    ),
]


# --------------------------------------------------------------------------- steps 3 and 4: the parser


@dataclass(frozen=True, slots=True)
class Rejection:
    layer: ValidationLayer
    phrase: str


Text = str | Callable[[Inputs], str]
Outcome = Action | Rejection | Callable[[Inputs], Action]


def _parse_check(
    name: str,
    text: Text,
    outcome: Outcome,
    *,
    ours: str | None = None,
    given: str | None = None,
    look_alike: Callable[[Inputs], str] | None = None,
) -> Check:
    """``text`` and an action may be functions of the inputs, so a seed draws them fresh. ``look_alike``: for
    drawn inputs, a valid reply of the same surface (the same key twice in two objects, ``NaN`` in a string...),
    sent with the text in a drawn order, so a parser that recognises the refused texts by their look fails."""
    public = outcome(_PUBLIC) if callable(outcome) else outcome
    fields: Fields = ()
    if isinstance(public, Rejection):
        expected = N_("InvalidModelOutputError at {layer}, its message containing {phrase}")
        fields = (("layer", public.layer), ("phrase", repr(public.phrase)))
    else:
        expected = _show(public)

    def case(inputs: Inputs) -> tuple[Probe, Judge]:
        wanted = outcome(inputs) if callable(outcome) else outcome
        given_text = text(inputs) if callable(text) else _vary(text, inputs)
        if look_alike is not None and _drawn(inputs):
            return _with_look_alike(given_text, wanted, look_alike(inputs), inputs)
        return _parse_probe(given_text), lambda result: _judge_parse(result, wanted, given_text)

    shown = given or _show(text(_PUBLIC) if callable(text) else text, 90)
    return Check(name, shown, expected, case, ours, expected_fields=fields)


def _parse_probe(text: str) -> Probe:
    return {"kind": "parse", "text": text}


def _drawn(inputs: Inputs) -> bool:
    return replace(inputs, nonce="") != _PUBLIC  # the nonce is for step 2 only


def _vary(text: str, inputs: Inputs) -> str:
    """A fixed reply with its call id, tool name, path and answer taken from drawn inputs: a reply whose verdict a
    parser could look up by its exact text gets a text of its own per seed."""
    if not _drawn(inputs):
        return text
    values = (inputs.call_id, inputs.call_id, inputs.tool_name, inputs.path, inputs.answer)
    for token, value in zip(('"call_1"', '"c1"', '"read_file"', '"README.md"', '"42"'), values, strict=True):
        text = text.replace(token, json.dumps(value, ensure_ascii=False))
    return text


def _with_look_alike(text: str, wanted: Action | Rejection, alike: str, inputs: Inputs) -> tuple[Probe, Judge]:
    first = random.Random(f"{inputs.call_id}{alike}").random() < 0.5
    texts = [text, alike] if first else [alike, text]
    accepted = reference_parser.parse_json_action(alike)

    def judge(result: dict[str, Any]) -> None:
        each = _value(result)["each"]
        _judge_parse(each[0 if first else 1], wanted, text)
        try:
            _judge_parse(each[1 if first else 0], accepted, alike)
        except Mismatch as failed:
            raise Mismatch(_(LOOK_ALIKE, text=_show(alike, 80), got=failed.got)) from None
        except Raised as failed:
            raise Raised(failed.error, look_alike=_show(alike, 80)) from None

    return {"kind": "parse", "texts": texts}, judge


def _judge_parse(result: dict[str, Any], outcome: Action | Rejection, text: str) -> None:
    error = _error_of(result, InvalidModelOutputError)
    if error is None:
        if isinstance(outcome, Rejection):
            raise Mismatch(_("no error: it was accepted as {value}", value=_shown(result)))
        if not _same(result["value"], encode(outcome, caps=Caps.holding(text))):
            raise Mismatch(_shown(result))
        return
    layer, message = _raw_layer(error), str(error.get("message", ""))
    if not isinstance(outcome, Rejection) or layer != outcome.layer:
        raise Mismatch(_("a rejection at {layer}: {message}", layer=_layer(layer), message=_show(message)))
    if outcome.phrase.casefold() not in message.casefold():
        raise Mismatch(_("the right layer, but the message {message}", message=_show(message)))
    _judge_error_data(error, outcome, text)


def _judge_error_data(error: dict[str, Any], outcome: Rejection, text: str) -> None:
    """The rest of the error's data, where the learner's contract has it: the ``code`` is the layer's default
    (a parser that names only a message and a layer, as the series' do) or the reference's code for this very
    text; ``expected`` and ``found``, when the learner sets them, are the reference's."""
    try:
        reference_parser.parse_json_action(text)
        reference = None
    except InvalidModelOutputError as refused:
        reference = refused
    code = error.get("code")
    if code is not None and code not in (DEFAULT_CODES[outcome.layer], getattr(reference, "code", None)):
        raise Mismatch(_("the right layer, but the code {code}", code=_show(code)))
    for name in ("expected", "found"):
        value = error.get(name)
        if value is not None and reference is not None and value != getattr(reference, name):
            raise Mismatch(_("the right layer, but {name}={value}", name=name, value=_show(value)))


_BAD_JSON = Rejection(ValidationLayer.JSON_SYNTAX, _NOT_JSON)
_NO_OBJECT = Rejection(ValidationLayer.TOP_LEVEL_OBJECT, "model output must be an object")
_BAD_TYPE = Rejection(ValidationLayer.ACTION_TYPE, "unsupported action type")


def _l4(phrase: str) -> Rejection:
    return Rejection(ValidationLayer.FIELDS, phrase)


_MISSING = object()


def _call_text(inputs: Inputs, **fields: object) -> str:
    """A tool call's text with ``fields`` changed (``_MISSING`` leaves one out), the others from ``inputs``."""
    base = {"type": "tool_call", "call_id": inputs.call_id, "tool_name": inputs.tool_name, "arguments": {}, **fields}
    return json.dumps({key: value for key, value in base.items() if value is not _MISSING}, ensure_ascii=False)


def _seeded(**fields: object) -> Callable[[Inputs], str]:
    return lambda inputs: _call_text(inputs, **fields)


def _pretty_call(inputs: Inputs) -> str:
    fields = {"type": "tool_call", "call_id": inputs.call_id, "tool_name": inputs.tool_name}
    return "\n" + json.dumps({**fields, "arguments": {"path": inputs.path}}, ensure_ascii=False, indent=2) + "\n"


def _sleep(arguments: str) -> str:
    return '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {' + arguments + "}}"


def _final(content: Callable[[Inputs], str]) -> Callable[[Inputs], str]:
    return lambda inputs: json.dumps({"type": "final_answer", "content": content(inputs)})


_CALL = '{"type": "tool_call", "call_id": "call_1", "tool_name": "read_file", "arguments": {"path": "README.md"}}'
_TWO_NAMES = (
    '{"type": "tool_call", "call_id": "c1", "tool_name": "read_file", "tool_name": "delete_file", "arguments": {}}'
)
_TWO_PATHS = '{"type": "tool_call", "call_id": "c1", "tool_name": "rm", "arguments": {"path": "a.txt", "path": "/"}}'
_NINES = _sleep('"n": ' + "9" * 5000)
_DEEP = "[" * 100_000 + "]" * 100_000
_CUT_OFF = '{"type": "final_answer", "content": "The answer is'
_TWO_VALUES = '{"type": "final_answer", "content": "1"}\n{"type": "final_answer", "content": "2"}'
_TOOL_RESULT_REPLY = '{"type": "tool_result", "call_id": "call_1", "content": "ok", "is_error": false}'
_FIELDS_WRONG = _l4("tool_call fields do not match the contract")
_ANSWER_FIELDS_WRONG = _l4("final_answer fields do not match the contract")
_ROWS_3: list[tuple[str, Text, Outcome]] = [
    (
        N_("the blog's tool call becomes a ToolCall"),
        _pretty_call,
        lambda i: ToolCall(i.call_id, i.tool_name, {"path": i.path}),
    ),
    (N_("a final answer becomes a FinalAnswer"), _final(lambda i: i.answer), lambda i: FinalAnswer(i.answer)),
    (
        N_("arguments' values are the tool's business"),
        lambda i: _call_text(i, arguments={"path": i.limit}),
        lambda i: ToolCall(i.call_id, i.tool_name, {"path": i.limit}),
    ),
    (N_("layer 1: prose is not JSON"), 'Sure! {"type": "final_answer", "content": "42"}', _BAD_JSON),
    (N_("layer 1: a code fence is not JSON"), _FENCED, _BAD_JSON),
    (N_("layer 1: a trailing comma is not JSON"), '{"type": "final_answer", "content": "42",}', _BAD_JSON),
    (N_("layer 1: an empty reply is not JSON"), "", _BAD_JSON),
    (N_("layer 2: an array is not an action"), f"[{_CALL}]", _NO_OBJECT),
    (N_("layer 2: a string is not an action"), '"42"', _NO_OBJECT),
    (N_("layer 2: null is not an action"), "null", _NO_OBJECT),
    (N_("layer 3: tool_result is not an action type"), _TOOL_RESULT_REPLY, _BAD_TYPE),
    (N_("layer 3: type is case-sensitive"), _seeded(type="Tool_Call"), _BAD_TYPE),
    (N_("layer 3: no type at all"), '{"content": "42"}', _BAD_TYPE),
    (N_("layer 3: a type that is a list"), _seeded(type=["tool_call"]), _BAD_TYPE),
    (N_("layer 4: a missing field"), _seeded(tool_name=_MISSING), _FIELDS_WRONG),
    (N_("layer 4: an extra field"), _seeded(reason="I want to look"), _FIELDS_WRONG),
    (
        N_("layer 4: a final answer with arguments"),
        '{"type": "final_answer", "content": "done", "arguments": {}}',
        _ANSWER_FIELDS_WRONG,
    ),
    (N_("layer 4: a final answer without content"), '{"type": "final_answer"}', _ANSWER_FIELDS_WRONG),
    (N_("layer 4: call_id that is a number"), _seeded(call_id=1), _l4("call_id must be a string")),
    (N_("layer 4: tool_name that is null"), _seeded(tool_name=None), _l4("tool_name must be a string")),
    (N_("layer 4: content that is true"), '{"type": "final_answer", "content": true}', _l4("content must be a string")),
    (
        N_("layer 4: arguments as a string"),
        _seeded(arguments='{"path": "README.md"}'),
        _l4("arguments must be an object"),
    ),
    (N_("layer 4: arguments as a list"), _seeded(arguments=["README.md"]), _l4("arguments must be an object")),
]
_STEP_3 = [_parse_check(name, text, outcome) for name, text, outcome in _ROWS_3]

_STRICT = N_("strict JSON (RFC 8259): json.loads accepts this, the blog's parser starts with json.loads")


def _not_json(name: str, text: str, ours: str, look_alike: Callable[[Inputs], str], given: str | None = None) -> Check:
    return _parse_check(name, text, _BAD_JSON, ours=ours, given=given, look_alike=look_alike)


def _no_number(name: str, token: str) -> Check:
    return _not_json(
        name,
        _sleep(f'"seconds": {token}'),
        _STRICT,
        lambda inputs: _call_text(inputs, arguments={"seconds": token, "n": inputs.limit}),
    )


def _blank(name: str, text: Text, field: str, look_alike: Callable[[Inputs], str]) -> Check:
    ours = N_("the non-blank rule: the blog checks types only")
    return _parse_check(name, text, _l4(f"{field} must not be blank"), ours=ours, look_alike=look_alike)


_STEP_4 = [
    _not_json(
        N_("a duplicate key is refused, not resolved"),
        _TWO_NAMES,
        N_(
            "strict JSON (RFC 8259): json.loads accepts this, the blog's parser starts with json.loads"
            " and keeps the last value: read_file becomes delete_file"
        ),
        lambda inputs: _call_text(inputs, arguments={"tool_name": inputs.tool_name, "note": inputs.answer}),
    ),
    _not_json(
        N_("a duplicate key inside arguments"),
        _TWO_PATHS,
        _STRICT,
        lambda inputs: _call_text(inputs, arguments={"path": {"path": inputs.path}, "limit": inputs.limit}),
    ),
    _no_number(N_("NaN is not a JSON number"), "NaN"),
    _no_number(N_("Infinity is not a JSON number"), "Infinity"),
    _no_number(N_("-Infinity is not a JSON number"), "-Infinity"),
    _not_json(
        N_("a number too large for a float"),
        _sleep('"seconds": 1e999'),
        N_(
            "strict JSON (RFC 8259): json.loads accepts this, the blog's parser starts with json.loads"
            " and turns 1e999 into inf"
        ),
        lambda inputs: _call_text(inputs, arguments={"seconds": 10.0 ** (inputs.limit % 300), "s": "1e999"}),
    ),
    _not_json(
        N_("a 5000-digit integer"),
        _NINES,
        N_("json.loads raises ValueError (not JSONDecodeError) past 4300 digits"),
        lambda inputs: _call_text(inputs, arguments={"n": "9" * 5000, "limit": inputs.limit}),
        given=N_('a tool call whose arguments hold {"n": 999…9} with 5000 digits'),
    ),
    _not_json(
        N_("nesting 100 000 arrays deep"),
        _DEEP,
        N_("json.loads raises RecursionError on deep nesting"),
        lambda inputs: _call_text(inputs, arguments={"deep": "[" * 100_000, "n": [[[inputs.limit]]]}),
        given=N_("'[[[[…]]]]' nested 100 000 deep"),
    ),
    _not_json(
        N_("a cut-off reply"),
        _CUT_OFF,
        N_("json.loads refuses it too; unstated in the blog: nothing may close the brackets of a reply cut off"),
        _final(lambda inputs: f"The answer is {inputs.answer}"),
    ),
    _not_json(
        N_("two JSON values in one reply"),
        _TWO_VALUES,
        N_("json.loads refuses it too; unstated in the blog: one value, never the first or last of several"),
        _final(lambda inputs: inputs.answer + '}\n{"type": 2'),
    ),
    _not_json(
        N_("a byte-order mark before the JSON"),
        '\ufeff{"type": "final_answer", "content": "42"}',
        N_("json.loads refuses it too; unstated in the blog: RFC 8259 forbids a byte-order mark in JSON text"),
        _final(lambda inputs: "\ufeff" + inputs.answer),
    ),
    _blank(N_("a blank call_id"), _seeded(call_id="   "), "call_id", lambda i: _call_text(i, call_id=f" {i.call_id} ")),
    _blank(
        N_("an empty tool_name"), _seeded(tool_name=""), "tool_name", lambda i: _call_text(i, tool_name=i.tool_name[:1])
    ),
    _blank(
        N_("a blank final answer"),
        '{"type": "final_answer", "content": " \\n "}',
        "content",
        _final(lambda i: f" {i.answer} \n "),
    ),
]

CHECKS = tuple(
    replace(check, id=f"{step}.{number}", step=step)
    for step, checks in enumerate((_STEP_1, _STEP_2, _STEP_3, _STEP_4), 1)
    for number, check in enumerate(checks, 1)
)


def checks_up_to(step: int | None) -> tuple[Check, ...]:
    return tuple(check for check in CHECKS if step is None or check.step <= step)


# --------------------------------------------------------------------------- samples: yours beside ours


@dataclass(frozen=True, slots=True)
class Sample:
    """One input shown through a learner's file and through the reference, side by side, not graded: a learner
    sees where their code differs from ours, also where ours differs on purpose (``cost`` says what a difference
    costs an agent). ``label`` and ``cost`` are message ids; ``label_fields`` fill the label's placeholders."""

    id: str
    step: int
    label: str
    probe: Probe
    cost: str = ""
    label_fields: Fields = ()

    @property
    def file(self) -> str:
        return FILES[self.step - 1]

    @property
    def describe(self) -> Callable[[dict[str, Any]], str]:
        """What the probe's result shows, as one text: the same function for the reference and the learner."""
        return (_describe_messages, _describe_adapter, _describe_parse)[self.step - 1]

    def run(self, module: ModuleType) -> str:
        return self.describe(run_here(module, self.probe))

    def words(self, language: Language | None = None) -> tuple[str, str]:
        chosen = edition_language(requested=language)
        return _fill(self.label, self.label_fields, chosen), _(self.cost, chosen) if self.cost else ""


def parse_verdict_of(module: ModuleType, text: str) -> str:
    """What ``module.parse_json_action`` does with ``text``, as ``parse_verdict`` says it."""
    return parse_verdict(run_here(module, _parse_probe(text)))


def parse_verdict(result: dict[str, Any]) -> str:
    """A parse probe's verdict, with no ``✔`` before an accepted action: the action, or ``✘ rejected at layer N``."""
    if (error := _error_of(result, InvalidModelOutputError)) is None:
        return _shown(result, 90)
    return _("✘ rejected at {layer}", layer=_layer(_raw_layer(error)))


def rejected_layer(result: dict[str, Any]) -> int | None:
    """The layer a parse probe's result was refused at, as data: the fact ``parse_verdict`` puts into words,
    so nobody parses the words back (None: accepted, crashed, or no known layer)."""
    try:
        error = _error_of(result, InvalidModelOutputError)
        return None if error is None else int(ValidationLayer(_raw_layer(error)))  # type: ignore[arg-type]
    except (Raised, ValueError, TypeError):
        return None


def _describe_parse(result: dict[str, Any]) -> str:
    verdict = parse_verdict(result)
    return verdict if _error(result) else f"✔ {verdict}"


def _describe_messages(result: dict[str, Any]) -> str:
    return "\n".join(f"{role}: {content}" for role, content in _pairs(_value(result)))


def _describe_adapter(result: dict[str, Any]) -> str:
    error = _error(result)
    if error is not None and _is(error, ModelProviderError):
        cause = error.get("cause_shown", "None") if result.get("cause_is_original") else "None"
        return _("ModelProviderError, cause {cause}", cause=_cut(cause))
    if error is not None and _is(error, InvalidModelOutputError):
        usage, public = error.get("usage"), TokenUsage(*_PUBLIC.invalid_usage)
        shown_usage = repr(public) if usage == encode(public) else _show(usage)
        return _(
            "InvalidModelOutputError at {layer}, usage={usage}", layer=_layer(_raw_layer(error)), usage=shown_usage
        )
    _value(result)
    return _shown(result, 160)


def _samples(step: int, rows: Sequence[tuple[str, Probe, str]]) -> list[Sample]:
    return [Sample(f"s{step}.{n}", step, label, probe, cost) for n, (label, probe, cost) in enumerate(rows, 1)]


_CORPUS = [
    (N_("the blog's tool call"), _pretty_call(_PUBLIC), ""),
    (N_("a code fence"), _FENCED, ""),
    (N_("a top-level array"), f"[{_CALL}]", ""),
    (N_('type "tool_result"'), _TOOL_RESULT_REPLY, ""),
    (
        N_("a duplicate tool_name"),
        _TWO_NAMES,
        N_("json.loads keeps the last value: the agent runs delete_file where the model also wrote read_file"),
    ),
    (N_("a duplicate path"), _TWO_PATHS, N_("the tool receives '/', the second of two paths")),
    (
        N_("NaN seconds"),
        _sleep('"seconds": NaN'),
        N_("nan reaches the tool, and every comparison with nan is False: a guard if seconds > 60 lets it through"),
    ),
    (N_("1e999 seconds"), _sleep('"seconds": 1e999'), N_("inf reaches the tool: sleep forever")),
    (
        N_("5000 nines"),
        _NINES,
        N_("json.loads raises ValueError, which the blog's except json.JSONDecodeError does not catch: a crash"),
    ),
    (
        N_("nesting 100 000 deep"),
        _DEEP,
        N_("json.loads raises RecursionError: the agent crashes instead of asking for a correction"),
    ),
    (
        N_("a blank call_id"),
        _call_text(_PUBLIC, call_id="   "),
        N_("ToolCall refuses it with ValueError, not InvalidModelOutputError: the Kernel cannot correct the model"),
    ),
    (N_("a cut-off reply"), _CUT_OFF, ""),
    (N_("two objects"), _TWO_VALUES, ""),
]
"""The replies of notebook 04's blog-versus-ours table, with what a lax parser's answer costs."""

_MESSAGES = [
    (N_("a Message"), _messages_probe([Message(MessageRole.USER, _PUBLIC.request)]), ""),
    (N_("a ToolCall"), _messages_probe([_TOOL_CALL]), ""),
    (N_("a ToolResult in Chinese"), _messages_probe([_TOOL_RESULT]), ""),
]
_ADAPTER = [
    (N_("a valid reply"), _adapter_probe(_PUBLIC), ""),
    (N_("the provider fails"), _adapter_probe(_PUBLIC, failure="provider_error"), ""),
    (N_("a fenced reply"), _adapter_probe(_PUBLIC, fenced=True), ""),
]
_PARSES = [(label, _parse_probe(text), cost) for label, text, cost in _CORPUS]
SAMPLES = (*_samples(1, _MESSAGES), *_samples(2, _ADAPTER), *_samples(3, _PARSES))
"""What notebooks 02-04 show beside the reference; step 3's samples are also step 4's corpus."""


def text_samples(texts: Sequence[str]) -> tuple[Sample, ...]:
    return tuple(
        Sample(f"t.{n}", 3, N_("reply {index}"), _parse_probe(text), label_fields=(("index", n),))
        for n, text in enumerate(texts, start=1)
    )
