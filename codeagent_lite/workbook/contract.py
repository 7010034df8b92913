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

Every check's sentence parts are written here in English and, beside them (``zh=``), in
Chinese for ``notebooks/zh``; a part that is a Python value (a ``repr``) is the same in both
editions and is not repeated. A check without its Chinese fails at import. What a check says
came back is in ``contract_messages``, in both languages.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .. import json_text_messages as reference_messages
from ..kernel_types import Action, FinalAnswer, HistoryItem, Message, MessageRole, ToolCall, ToolResult, ToolSpec
from ..model_adapter import (
    InvalidModelOutputError,
    ModelProviderError,
    ModelResponse,
    TokenUsage,
    ValidationLayer,
)
from .contract_messages import MESSAGES
from .ladder import layer_label
from .language import Language, edition_language
from .verify_probe import encode, run_probe

say = MESSAGES.say

__all__ = [
    "CHECKS",
    "CORPUS",
    "FILES",
    "SAMPLES",
    "STEPS",
    "Check",
    "CheckWords",
    "Chinese",
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
    "show",
    "text_samples",
]

FILES = ("json_text_messages", "json_text_adapter", "json_action_parser")
"""The three files of the chapter, in the order the notebooks build them."""

STEPS = {
    1: "message encoding · 二、消息转换 (json_text_messages.py)",
    2: "the adapter's flow · 三、Adapter 调度 (json_text_adapter.py)",
    3: "the blog's four checks · 四、行动解析 (json_action_parser.py)",
    4: "strict JSON and non-blank strings, beyond the blog (json_action_parser.py)",
}

_SHOWN_CHARS = 120


@dataclass(frozen=True, slots=True)
class Chinese:
    """A check's sentence parts in Chinese; None where the English part is a Python value, shown as it is."""

    name: str
    given: str | None = None
    expected: str | None = None
    ours: str | None = None


@dataclass(frozen=True, slots=True)
class CheckWords:
    """A check's sentence parts in one language: what verify's report prints."""

    name: str
    given: str
    expected: str
    ours: str | None


@dataclass(frozen=True, slots=True)
class Check:
    """One behaviour of one file, with the sentence parts a failure report needs (English; ``zh``: Chinese)."""

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
    zh: Chinese | None = None

    def probe(self, inputs: Inputs | None = None) -> tuple[Probe, Judge]:
        return self.case(inputs or _PUBLIC)

    def run(self, module: ModuleType, inputs: Inputs | None = None) -> None:
        """Probe and judge in this process: for the package's own modules (``tests/test_contract.py``)."""
        probe, judge = self.probe(inputs)
        judge(run_probe(module, probe))

    def words(self, language: Language | None = None) -> CheckWords:
        """The sentence parts in ``language`` (the edition's by default)."""
        if (language or edition_language()) == "en" or self.zh is None:
            return CheckWords(self.name, self.given, self.expected, self.ours)
        zh = self.zh
        return CheckWords(zh.name, zh.given or self.given, zh.expected or self.expected, zh.ours)


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

    @classmethod
    def draw(cls, seed: int) -> Inputs:
        """Fresh inputs of the same shapes (Chinese strings, odd call ids, numbers) from ``seed``."""
        rng = random.Random(seed)
        hanzi = "文件读取写入目录模型工具结果错误内容请帮我一下答案第七不存在"

        def word(low: int, high: int) -> str:
            return "".join(rng.choice(hanzi) for _ in range(rng.randint(low, high)))

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
        raise Mismatch(say("not_a_sequence", value=_cut(value["shown"])))
    pairs = []
    for item in value["items"]:
        if not item["is_provider_message"]:
            raise Mismatch(say("not_a_provider_message", value=_cut(item["shown"])))
        role, content = item["role"], item["content"]
        if not isinstance(role, str) or not isinstance(content, str):
            raise Mismatch(say("not_strings", value=_cut(item["shown"])))
        pairs.append((role, content))
    return pairs


def _one_pair(result: dict[str, Any]) -> tuple[str, str]:
    return _only_pair(_pairs(result))


def _only_pair(pairs: list[tuple[str, str]]) -> tuple[str, str]:
    if len(pairs) != 1:
        raise Mismatch(say("messages_for_one_item", count=len(pairs)))
    return pairs[0]


def _decoded(content: str) -> Any:
    try:
        return json.loads(content)
    except (ValueError, RecursionError):
        raise Mismatch(say("content_not_json", content=show(content))) from None


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
        role, _ = _one_pair(result)
        if role != "assistant":
            raise Mismatch(say("role", role=repr(role)))

    return _messages_probe([_tool_call(inputs)]), judge


def _check_tool_call_fields(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        decoded = _decoded(_one_pair(result)[1])
        if decoded != _tool_call_fields(inputs):
            raise Mismatch(say("decodes_to", value=show(decoded)))

    return _messages_probe([_tool_call(inputs)]), judge


def _check_tool_result(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        role, content = _one_pair(result)
        decoded = _decoded(content)
        if role != "user" or decoded != _tool_result_fields(inputs):
            raise Mismatch(say("role_and_content", role=repr(role), value=show(decoded)))

    return _messages_probe([_tool_result(inputs)]), judge


def _check_call_id_verbatim(inputs: Inputs) -> tuple[Probe, Judge]:
    odd_id = inputs.odd_id

    def judge(result: dict[str, Any]) -> None:
        decoded = [_decoded(content) for _, content in _pairs(result)]
        ids = [value.get("call_id") if isinstance(value, dict) else None for value in decoded]
        if ids != [odd_id, odd_id]:
            raise Mismatch(say("call_ids", ids=show(ids)))

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
            raise Mismatch(say("messages_summary", count=len(pairs), summary=show(summary, 200)))

    return _messages_probe(history), judge


def _key_orders(content: str) -> list[list[str]]:
    orders: list[list[str]] = []

    def record(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        orders.append([key for key, _ in pairs])
        return dict(pairs)

    try:
        json.loads(content, object_pairs_hook=record)
    except (ValueError, RecursionError):
        raise Mismatch(say("content_not_json", content=show(content))) from None
    return orders


def _both_items(inputs: Inputs, check: Callable[[str, HistoryItem], None]) -> tuple[Probe, Judge]:
    """One probe encoding the ToolCall and the ToolResult each on its own: ``check`` sees each content."""
    items: list[HistoryItem] = [_tool_call(inputs), _tool_result(inputs)]

    def judge(result: dict[str, Any]) -> None:
        each = _value(result)["each"]
        if len(each) != len(items):
            raise Mismatch(say("messages_for_one_item", count=len(each)))
        for value, item in zip(each, items, strict=True):
            check(_only_pair(_pairs_of(value))[1], item)

    return {**_messages_probe(items), "each": True}, judge


def _check_sorted(inputs: Inputs) -> tuple[Probe, Judge]:
    def check(content: str, _item: HistoryItem) -> None:
        for order in _key_orders(content):
            if order != sorted(order):
                raise Mismatch(say("key_order", order=", ".join(order), content=show(content)))

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
        _, content = _one_pair(result)
        if inputs.missing not in content:
            raise Mismatch(show(content))

    return _messages_probe([_tool_result(inputs)]), judge


def _check_exact_bytes(inputs: Inputs) -> tuple[Probe, Judge]:
    def check(content: str, item: HistoryItem) -> None:
        (reference,) = reference_messages.build_provider_messages([item])
        if content != reference.content:
            raise Mismatch(show(content, 200), expected=say("exactly", value=show(reference.content, 200)))

    return _both_items(inputs, check)


def _check_nan_refused(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        error = _error(result)
        if error is not None and _is(error, ValueError):
            return
        raise Mismatch(say("the_message", value=show(_pairs(result))))

    return _messages_probe([ToolCall(inputs.call_id, "sleep", {"seconds": float("nan")})]), judge


def _check_unknown_item(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        error = _error(result)
        if error is not None and _is(error, TypeError):
            return
        raise Mismatch(say("and_no_error", value=_cut(_value(result)["shown"])))

    return _messages_probe([ToolSpec(inputs.tool_name, "Read a file.")]), judge


_ABOVE_ZH = "上面的 ToolCall 和 ToolResult"

_STEP_1 = [
    Check(
        "1.1",
        1,
        "json_text_messages",
        "a Message keeps its role and content",
        "a system, a user and an assistant Message",
        "ProviderMessages with role 'system', 'user', 'assistant' (item.role.value) and the same content",
        _check_message_kept,
        zh=Chinese(
            "Message 保留原来的角色和内容",
            "system、user、assistant 三条 Message",
            "role 依次为 'system'、'user'、'assistant'（item.role.value）、content 不变的 ProviderMessage",
        ),
    ),
    Check(
        "1.2",
        1,
        "json_text_messages",
        "a ToolCall is sent with the assistant role",
        show(_TOOL_CALL),
        "one ProviderMessage with role 'assistant'",
        _check_tool_call_role,
        zh=Chinese("ToolCall 以 assistant 角色发出", expected="一条 role 为 'assistant' 的 ProviderMessage"),
    ),
    Check(
        "1.3",
        1,
        "json_text_messages",
        "a ToolCall's content is its four fields as JSON",
        show(_TOOL_CALL),
        f"content that decodes to {show(_TOOL_CALL_FIELDS)}",
        _check_tool_call_fields,
        zh=Chinese(
            "ToolCall 的 content 是它四个字段的 JSON", expected=f"解码后是 {show(_TOOL_CALL_FIELDS)} 的 content"
        ),
    ),
    Check(
        "1.4",
        1,
        "json_text_messages",
        "a ToolResult is sent as the user, with its four fields",
        show(_TOOL_RESULT),
        f"role 'user' with content that decodes to {show(_TOOL_RESULT_FIELDS)}",
        _check_tool_result,
        zh=Chinese(
            "ToolResult 以 user 角色发出，带着它的四个字段",
            expected=f"role 为 'user'，content 解码后是 {show(_TOOL_RESULT_FIELDS)}",
        ),
    ),
    Check(
        "1.5",
        1,
        "json_text_messages",
        "call_id is copied exactly",
        "a ToolCall and a ToolResult whose call_id is ' call 7 · 第七\\t'",
        "that call_id, character for character, in both messages",
        _check_call_id_verbatim,
        zh=Chinese(
            "call_id 原样保留",
            "call_id 都是 ' call 7 · 第七\\t' 的一个 ToolCall 和一个 ToolResult",
            "两条消息里都是这个 call_id，一个字符都不差",
        ),
    ),
    Check(
        "1.6",
        1,
        "json_text_messages",
        "one message per item, in the history's order",
        "two calls, their results in the other order, then a user Message",
        "5 messages in the same order: call_a, call_b, result call_b, result call_a, 'thanks'",
        _check_order,
        zh=Chinese(
            "每个历史项一条消息，顺序与历史相同",
            "两个工具调用、顺序相反的两个结果，最后是一条 user Message",
            "按同样顺序的 5 条消息：call_a、call_b、call_b 的结果、call_a 的结果、'thanks'",
        ),
    ),
    Check(
        "1.7",
        1,
        "json_text_messages",
        "keys are sorted, at every level",
        "the ToolCall and ToolResult above",
        "JSON keys in alphabetical order (arguments, call_id, tool_name, type)",
        _check_sorted,
        ours="json.dumps(..., sort_keys=True): the blog's _encode_json does not show its arguments",
        zh=Chinese(
            "每一层的键都按字母顺序排列",
            _ABOVE_ZH,
            "JSON 键按字母顺序排列（arguments、call_id、tool_name、type）",
            "json.dumps(..., sort_keys=True)：博客的 _encode_json 没有写出它的参数",
        ),
    ),
    Check(
        "1.8",
        1,
        "json_text_messages",
        "no spaces between JSON tokens",
        "the ToolCall and ToolResult above",
        'compact JSON such as {"call_id":"call_1",...}, with no space after "," or ":"',
        _check_compact,
        ours="json.dumps(..., separators=(',', ':')): not shown in the blog",
        zh=Chinese(
            "JSON 的符号之间没有空格",
            _ABOVE_ZH,
            '紧凑的 JSON，例如 {"call_id":"call_1",...}，"," 和 ":" 后面都没有空格',
            "json.dumps(..., separators=(',', ':'))：博客里没有写",
        ),
    ),
    Check(
        "1.9",
        1,
        "json_text_messages",
        "Chinese text stays readable",
        show(_TOOL_RESULT),
        "content holding 文件不存在 as it is, not \\u6587\\u4ef6... escapes",
        _check_chinese_kept,
        ours="json.dumps(..., ensure_ascii=False): not shown in the blog",
        zh=Chinese(
            "中文保持原样，可以直接读",
            expected="content 里原样写着 文件不存在，而不是 \\u6587\\u4ef6... 这样的转义",
            ours="json.dumps(..., ensure_ascii=False)：博客里没有写",
        ),
    ),
    Check(
        "1.10",
        1,
        "json_text_messages",
        "the exact bytes of the reference encoding",
        "the ToolCall and ToolResult above",
        "the same text as codeagent_lite's encode_json",
        _check_exact_bytes,
        ours="the blog's _encode_json is our public encode_json; this pins all four json.dumps arguments",
        zh=Chinese(
            "与参考编码逐字节相同",
            _ABOVE_ZH,
            "与 codeagent_lite 的 encode_json 完全相同的文本",
            "博客的 _encode_json 就是我们公开的 encode_json；这项检查把 json.dumps 的四个参数全部固定下来",
        ),
    ),
    Check(
        "1.11",
        1,
        "json_text_messages",
        "NaN is refused, not written into the history",
        "ToolCall('call_1', 'sleep', {'seconds': nan})",
        "a ValueError (json.dumps(..., allow_nan=False)), because NaN is not JSON",
        _check_nan_refused,
        ours="allow_nan=False: the blog does not say",
        zh=Chinese(
            "NaN 被拒绝，不会写进历史",
            expected="抛出 ValueError（json.dumps(..., allow_nan=False)），因为 NaN 不是 JSON",
            ours="allow_nan=False：博客没有提到",
        ),
    ),
    Check(
        "1.12",
        1,
        "json_text_messages",
        "an item of another type is refused",
        "a ToolSpec, which is not a HistoryItem",
        "a TypeError naming the type, instead of a guess or silence",
        _check_unknown_item,
        ours="the blog does not say what happens to anything but the three HistoryItem types",
        zh=Chinese(
            "三种历史项之外的类型被拒绝",
            "一个 ToolSpec，它不是 HistoryItem",
            "一个说出类型名的 TypeError，而不是猜测或悄悄略过",
            "三种 HistoryItem 之外的东西会怎样，博客没有说",
        ),
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
    return ToolCall(inputs.call_id, inputs.tool_name, {"path": inputs.path})


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
    """The adapter's inputs, the provider's reply, and what the two stand-ins return (canned values)."""
    history = _history(inputs)
    probe: Probe = {
        "kind": "adapter",
        "history": [item_spec(item) for item in history],
        "tools": [item_spec(tool) for tool in _TOOLS],
        "max_output_tokens": inputs.max_output_tokens,
        "reply": _FENCED if fenced else _reply(inputs),
        "usage": list(inputs.invalid_usage if fenced else inputs.usage),
        "failure": failure,
        "failure_message": inputs.failure if failure == "provider_error" else "a bug inside the provider",
        "canned_messages": [[item.role.value, item.content] for item in history if isinstance(item, Message)],
        "canned_action": item_spec(_reply_action(inputs)),
        "canned_rejection": None,
    }
    if fenced:
        probe["canned_rejection"] = {"message": f"{_NOT_JSON}: found ```", "layer": int(ValidationLayer.JSON_SYNTAX)}
    return probe


def _response_fields(result: dict[str, Any]) -> dict[str, Any]:
    """The fields of the ModelResponse that came back, or a Mismatch when something else did."""
    value = _value(result)
    if not isinstance(value, dict) or value.get("$obj") != _qualified(ModelResponse):
        raise Mismatch(_cut(result.get("shown", ""), 200))
    fields = value["fields"]
    assert isinstance(fields, dict)
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
            raise Mismatch(say("usage", value=_cut(show(usage))))

    return _adapter_probe(inputs), judge


def _check_provider_arguments(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        _value(result)  # an adapter that raised is judged by what it raised
        calls = result["calls"]
        if len(calls) != 1:
            raise Mismatch(say("provider_calls", count=len(calls)))
        call = calls[0]
        problems = []
        if not call["messages_same"]:
            problems.append(f"messages={_cut(call['messages_shown'], 80)}")
        if call["tools"] != encode(list(_TOOLS)):
            problems.append(f"tools={_cut(call['tools_shown'], 80)}")
        if call["max_output_tokens"] != inputs.max_output_tokens:
            problems.append(f"max_output_tokens={_cut(show(call['max_output_tokens']), 40)}")
        if problems:
            raise Mismatch(say("called_with", arguments=", ".join(problems)))

    return _adapter_probe(inputs), judge


def _check_builds_from_history(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        _value(result)  # an adapter that raised is judged by what it raised
        histories = result["built"]
        if histories != [encode(_history(inputs))]:
            raise Mismatch(say("built_times", count=len(histories), histories=_cut(show(histories))))

    return _adapter_probe(inputs), judge


def _check_parses_raw_text(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        _value(result)  # an adapter that raised is judged by what it raised
        if result["parsed"] != [_reply(inputs)]:
            raise Mismatch(say("parsed_with", texts=show(result["parsed"])))

    return _adapter_probe(inputs), judge


def _check_provider_error(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        error = _error(result)
        if error is None:
            raise Mismatch(say("no_error_but", value=_cut(result.get("shown", ""))))
        if not _is(error, ModelProviderError):
            raise Raised(error)
        if result.get("cause_is_original") is not True:
            raise Mismatch(say("wrong_cause", cause=_cut(error.get("cause_shown", "None")))) from None

    return _adapter_probe(inputs, failure="provider_error"), judge


def _check_other_errors_pass(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        error = _error(result)
        if error is None:
            raise Mismatch(say("no_error_but", value=_cut(result.get("shown", ""))))
        if _is(error, KeyError):
            return
        if _is(error, ModelProviderError):
            raise Mismatch(say("disguised"))
        raise Raised(error)

    return _adapter_probe(inputs, failure="key_error"), judge


def _invalid_error(result: dict[str, Any]) -> dict[str, Any]:
    error = _error(result)
    if error is None:
        raise Mismatch(say("no_error_but", value=_cut(result.get("shown", ""))))
    if not _is(error, InvalidModelOutputError):
        raise Raised(error)
    return error


def _check_invalid_keeps_usage(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        error = _invalid_error(result)
        if error.get("usage") != encode(TokenUsage(*inputs.invalid_usage)):
            raise Mismatch(say("error_usage", usage=_cut(show(error.get("usage")))))

    return _adapter_probe(inputs, fenced=True), judge


def _check_invalid_keeps_message(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        error = _invalid_error(result)
        if _NOT_JSON.casefold() not in str(error.get("message", "")).casefold():
            raise Mismatch(say("the_message", value=show(error.get("message", ""))))

    return _adapter_probe(inputs, fenced=True), judge


def _check_invalid_keeps_layer(inputs: Inputs) -> tuple[Probe, Judge]:
    def judge(result: dict[str, Any]) -> None:
        error = _invalid_error(result)
        if _raw_layer(error.get("layer")) != ValidationLayer.JSON_SYNTAX:
            raise Mismatch(say("error_layer", layer=_layer(_raw_layer(error.get("layer")))))

    return _adapter_probe(inputs, fenced=True), judge


_SAME_FENCED_ZH = "同一个带代码围栏的回复"

_STEP_2 = [
    Check(
        "2.1",
        2,
        "json_text_adapter",
        "complete() returns a ModelResponse holding the parsed action",
        f"a provider replying {show(_REPLY.strip(), 60)}",
        f"ModelResponse(action={show(_REPLY_ACTION)}, ...)",
        _check_returns_action,
        zh=Chinese("complete() 返回装着解析结果的 ModelResponse", f"回复 {show(_REPLY.strip(), 60)} 的 Provider"),
    ),
    Check(
        "2.2",
        2,
        "json_text_adapter",
        "the provider's token counts become TokenUsage",
        "a ProviderResponse with input_tokens=17, output_tokens=26",
        "usage=TokenUsage(input_tokens=17, output_tokens=26)",
        _check_usage,
        zh=Chinese("Provider 的 Token 数变成 TokenUsage", "input_tokens=17、output_tokens=26 的 ProviderResponse"),
    ),
    Check(
        "2.3",
        2,
        "json_text_adapter",
        "the provider gets the messages, the tools and the budget",
        "complete(history, tools, ModelCallBudget(max_output_tokens=200))",
        "one provider.complete(messages=<what build_provider_messages returned>, tools=tools, max_output_tokens=200)",
        _check_provider_arguments,
        zh=Chinese(
            "Provider 收到消息、工具和预算",
            expected=(
                "恰好一次 provider.complete(messages=<build_provider_messages 的返回值>, "
                "tools=tools, max_output_tokens=200)"
            ),
        ),
    ),
    Check(
        "2.4",
        2,
        "json_text_adapter",
        "the history goes through build_provider_messages",
        "a history of two Messages",
        "one call build_provider_messages(history) with those two items",
        _check_builds_from_history,
        zh=Chinese(
            "历史经过 build_provider_messages 转换",
            "由两条 Message 组成的历史",
            "恰好一次 build_provider_messages(history) 调用，参数就是这两项",
        ),
    ),
    Check(
        "2.5",
        2,
        "json_text_adapter",
        "the reply text goes to parse_json_action untouched",
        f"a reply with spaces and newlines around it: {show(_REPLY, 40)}",
        "one call parse_json_action(raw_response.text) with exactly that text",
        _check_parses_raw_text,
        zh=Chinese(
            "回复文本原封不动地交给 parse_json_action",
            f"前后带空格和换行的回复：{show(_REPLY, 40)}",
            "恰好一次 parse_json_action(raw_response.text) 调用，参数正是这段文本",
        ),
    ),
    Check(
        "2.6",
        2,
        "json_text_adapter",
        "a ProviderError becomes ModelProviderError, with the cause kept",
        "a provider raising ProviderError('HTTP 503: server overloaded')",
        "ModelProviderError whose __cause__ is that ProviderError (raise ... from error)",
        _check_provider_error,
        zh=Chinese(
            "ProviderError 转换成 ModelProviderError，并保留原因",
            "抛出 ProviderError('HTTP 503: server overloaded') 的 Provider",
            "__cause__ 正是这个 ProviderError 的 ModelProviderError（raise ... from error）",
        ),
    ),
    Check(
        "2.7",
        2,
        "json_text_adapter",
        "an invalid reply raises InvalidModelOutputError carrying the usage",
        f"a provider replying {show(_FENCED, 40)} for 120 + 18 tokens",
        "InvalidModelOutputError with usage=TokenUsage(input_tokens=120, output_tokens=18)",
        _check_invalid_keeps_usage,
        zh=Chinese(
            "无效回复抛出携带 Token 用量的 InvalidModelOutputError",
            f"回复 {show(_FENCED, 40)}、花掉 120 + 18 个 Token 的 Provider",
            "带 usage=TokenUsage(input_tokens=120, output_tokens=18) 的 InvalidModelOutputError",
        ),
    ),
    Check(
        "2.8",
        2,
        "json_text_adapter",
        "the parser's explanation reaches the Kernel",
        "the same fenced reply",
        "an error message still containing 'model output must be valid JSON'",
        _check_invalid_keeps_message,
        zh=Chinese(
            "解析器的说明传到 Kernel",
            _SAME_FENCED_ZH,
            "错误消息里仍然含有 'model output must be valid JSON'",
        ),
    ),
    Check(
        "2.9",
        2,
        "json_text_adapter",
        "the rejecting layer reaches the Kernel",
        "the same fenced reply",
        "InvalidModelOutputError with layer 1 (JSON syntax), e.g. via error.with_usage(usage)",
        _check_invalid_keeps_layer,
        ours="the blog adds the usage; keeping layer (and expected/found) is how our agent loop explains a rejection",
        zh=Chinese(
            "拒绝它的那一层传到 Kernel",
            _SAME_FENCED_ZH,
            f"{_layer(ValidationLayer.JSON_SYNTAX, 'zh')}的 InvalidModelOutputError，例如用 error.with_usage(usage)",
            "博客只补上 usage；保留 layer（以及 expected/found）是我们的智能体循环解释拒绝原因的方式",
        ),
    ),
    Check(
        "2.10",
        2,
        "json_text_adapter",
        "other exceptions are not disguised as provider failures",
        "a provider whose code raises KeyError (a bug, not a network problem)",
        "the KeyError itself, because only ProviderError becomes ModelProviderError",
        _check_other_errors_pass,
        ours="the blog converts ProviderError; that nothing else is converted is our reading of it",
        zh=Chinese(
            "其他异常不会伪装成 Provider 失败",
            "代码里抛出 KeyError 的 Provider（这是 bug，不是网络问题）",
            "原来的 KeyError，因为只有 ProviderError 才转换成 ModelProviderError",
            "博客转换的是 ProviderError；别的异常一概不转换，是我们对它的理解",
        ),
    ),
]


# --------------------------------------------------------------------------- steps 3 and 4: the parser


Text = str | Callable[[Inputs], str]
Outcome = Action | Rejection | Callable[[Inputs], Action]


def _parse_check(
    step: int,
    names: tuple[str, str],
    text: Text,
    outcome: Outcome,
    *,
    ours: tuple[str, str] | None = None,
    given: tuple[str, str] | None = None,
) -> Callable[[str], Check]:
    """A check that feeds ``text`` to ``parse_json_action`` and expects an action or a rejection.

    ``text`` and an action ``outcome`` may be functions of the inputs (so a seed draws them fresh);
    ``names``, ``ours`` and ``given`` are (English, Chinese) pairs; ``given`` defaults to the public text.
    """
    public = _resolve(outcome, _PUBLIC)
    zh = Chinese(names[1], given and given[1], _expected_rejection(public, "zh"), ours and ours[1])
    expected = _expected_rejection(public, "en") or show(public)

    def case(inputs: Inputs) -> tuple[Probe, Judge]:
        wanted = _resolve(outcome, inputs)
        given_text = text(inputs) if callable(text) else _vary(text, inputs)
        return {"kind": "parse", "text": given_text}, lambda result: _judge_parse(result, wanted)

    def make(check_id: str) -> Check:
        shown = given[0] if given else show(text(_PUBLIC) if callable(text) else text, 90)
        return Check(check_id, step, "json_action_parser", names[0], shown, expected, case, ours and ours[0], zh)

    return make


_TOKENS = ('"call_1"', '"c1"', '"read_file"', '"README.md"', '"42"')


def _vary(text: str, inputs: Inputs) -> str:
    """A fixed reply with its call id, tool name, path and answer taken from ``inputs`` (unchanged for the public
    ones): a reply whose verdict a parser could look up by its exact text gets a text of its own per seed."""
    if inputs == _PUBLIC:
        return text
    values = (inputs.call_id, inputs.call_id, inputs.tool_name, inputs.path, inputs.answer)
    for token, value in zip(_TOKENS, values, strict=True):
        text = text.replace(token, json.dumps(value, ensure_ascii=False))
    return text


def _resolve(outcome: Outcome, inputs: Inputs) -> Action | Rejection:
    return outcome if isinstance(outcome, Rejection | ToolCall | FinalAnswer) else outcome(inputs)


def _judge_parse(result: dict[str, Any], outcome: Action | Rejection) -> None:
    error = _error(result)
    if error is not None:
        if not _is(error, InvalidModelOutputError):
            raise Raised(error)
        layer, message = _raw_layer(error.get("layer")), str(error.get("message", ""))
        if not isinstance(outcome, Rejection) or layer != outcome.layer:
            raise Mismatch(say("rejected_at", layer=_layer(layer), message=show(message)))
        if outcome.phrase.casefold() not in message.casefold():
            raise Mismatch(say("right_layer", message=show(message)))
        return
    if isinstance(outcome, Rejection):
        raise Mismatch(say("accepted_as", value=_cut(result.get("shown", ""))))
    if result["value"] != encode(outcome):
        raise Mismatch(_cut(result.get("shown", "")))


def _expected_rejection(outcome: Action | Rejection, language: Language) -> str | None:
    """What a check expecting ``outcome`` says it expects, or None for an action (its ``repr`` is the same in both)."""
    if not isinstance(outcome, Rejection):
        return None
    if language == "zh":
        return f"{_layer(outcome.layer, 'zh')}的 InvalidModelOutputError，消息里含有 {outcome.phrase!r}"
    return f"InvalidModelOutputError at {_layer(outcome.layer, 'en')}, its message containing {outcome.phrase!r}"


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
    _parse_check(
        3, ("the blog's tool call becomes a ToolCall", "博客里的工具调用变成 ToolCall"), _pretty_call, _readme
    ),
    _parse_check(
        3,
        ("a final answer becomes a FinalAnswer", "最终回答变成 FinalAnswer"),
        lambda inputs: json.dumps({"type": "final_answer", "content": inputs.answer}),
        lambda inputs: FinalAnswer(inputs.answer),
    ),
    _parse_check(
        3,
        ("arguments' values are the tool's business", "arguments 里的值归工具自己检查"),
        lambda inputs: _call_text(inputs, arguments={"path": inputs.limit}),
        lambda inputs: ToolCall(inputs.call_id, inputs.tool_name, {"path": inputs.limit}),
    ),
    _parse_check(
        3,
        ("layer 1: prose is not JSON", "第 1 层：夹着说明文字的不是 JSON"),
        'Sure! {"type": "final_answer", "content": "42"}',
        Rejection(_L1, _NOT_JSON),
    ),
    _parse_check(
        3, ("layer 1: a code fence is not JSON", "第 1 层：代码围栏不是 JSON"), _FENCED, Rejection(_L1, _NOT_JSON)
    ),
    _parse_check(
        3,
        ("layer 1: a trailing comma is not JSON", "第 1 层：末尾多一个逗号就不是 JSON"),
        '{"type": "final_answer", "content": "42",}',
        Rejection(_L1, _NOT_JSON),
    ),
    _parse_check(3, ("layer 1: an empty reply is not JSON", "第 1 层：空回复不是 JSON"), "", Rejection(_L1, _NOT_JSON)),
    _parse_check(
        3, ("layer 2: an array is not an action", "第 2 层：数组不是行动"), f"[{_CALL}]", Rejection(_L2, _NOT_OBJECT)
    ),
    _parse_check(
        3, ("layer 2: a string is not an action", "第 2 层：字符串不是行动"), '"42"', Rejection(_L2, _NOT_OBJECT)
    ),
    _parse_check(3, ("layer 2: null is not an action", "第 2 层：null 不是行动"), "null", Rejection(_L2, _NOT_OBJECT)),
    _parse_check(
        3,
        ("layer 3: tool_result is not an action type", "第 3 层：tool_result 不是行动类型"),
        '{"type": "tool_result", "call_id": "call_1", "content": "ok", "is_error": false}',
        Rejection(_L3, _BAD_TYPE),
    ),
    _parse_check(
        3,
        ("layer 3: type is case-sensitive", "第 3 层：type 区分大小写"),
        _seeded(type="Tool_Call"),
        Rejection(_L3, _BAD_TYPE),
    ),
    _parse_check(
        3, ("layer 3: no type at all", "第 3 层：根本没有 type"), '{"content": "42"}', Rejection(_L3, _BAD_TYPE)
    ),
    _parse_check(
        3,
        ("layer 3: a type that is a list", "第 3 层：type 是一个列表"),
        _seeded(type=["tool_call"]),
        Rejection(_L3, _BAD_TYPE),
    ),
    _parse_check(
        3,
        ("layer 4: a missing field", "第 4 层：缺少字段"),
        _seeded(tool_name=_MISSING),
        Rejection(_L4, "tool_call fields do not match the contract"),
    ),
    _parse_check(
        3,
        ("layer 4: an extra field", "第 4 层：多出一个字段"),
        _seeded(reason="I want to look"),
        Rejection(_L4, "tool_call fields do not match the contract"),
    ),
    _parse_check(
        3,
        ("layer 4: a final answer with arguments", "第 4 层：带 arguments 的最终回答"),
        '{"type": "final_answer", "content": "done", "arguments": {}}',
        Rejection(_L4, "final_answer fields do not match the contract"),
    ),
    _parse_check(
        3,
        ("layer 4: a final answer without content", "第 4 层：没有 content 的最终回答"),
        '{"type": "final_answer"}',
        Rejection(_L4, "final_answer fields do not match the contract"),
    ),
    _parse_check(
        3,
        ("layer 4: call_id that is a number", "第 4 层：call_id 是数字"),
        _seeded(call_id=1),
        Rejection(_L4, "call_id must be a string"),
    ),
    _parse_check(
        3,
        ("layer 4: tool_name that is null", "第 4 层：tool_name 是 null"),
        _seeded(tool_name=None),
        Rejection(_L4, "tool_name must be a string"),
    ),
    _parse_check(
        3,
        ("layer 4: content that is true", "第 4 层：content 是 true"),
        '{"type": "final_answer", "content": true}',
        Rejection(_L4, "content must be a string"),
    ),
    _parse_check(
        3,
        ("layer 4: arguments as a string", "第 4 层：arguments 是字符串"),
        _seeded(arguments='{"path": "README.md"}'),
        Rejection(_L4, "arguments must be an object"),
    ),
    _parse_check(
        3,
        ("layer 4: arguments as a list", "第 4 层：arguments 是列表"),
        _seeded(arguments=["README.md"]),
        Rejection(_L4, "arguments must be an object"),
    ),
]

_STRICT = "strict JSON (RFC 8259): json.loads accepts this, the blog's parser starts with json.loads"
_STRICT_ZH = "严格 JSON（RFC 8259）：json.loads 会接受它，而博客的解析器从 json.loads 开始"
_NON_BLANK = ("the non-blank rule: the blog checks types only", "非空规则：博客只检查类型")
_STEP_4_CASES = [
    _parse_check(
        4,
        ("a duplicate key is refused, not resolved", "重复键被拒绝，而不是替模型二选一"),
        '{"type": "tool_call", "call_id": "c1", "tool_name": "read_file", "tool_name": "delete_file", "arguments": {}}',
        Rejection(_L1, _NOT_JSON),
        ours=(
            _STRICT + " and keeps the last value: read_file becomes delete_file",
            _STRICT_ZH + "，并保留后一个值：read_file 变成了 delete_file",
        ),
    ),
    _parse_check(
        4,
        ("a duplicate key inside arguments", "arguments 里的重复键"),
        '{"type": "tool_call", "call_id": "c1", "tool_name": "rm", "arguments": {"path": "a.txt", "path": "/"}}',
        Rejection(_L1, _NOT_JSON),
        ours=(_STRICT, _STRICT_ZH),
    ),
    _parse_check(
        4,
        ("NaN is not a JSON number", "NaN 不是 JSON 数字"),
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"seconds": NaN}}',
        Rejection(_L1, _NOT_JSON),
        ours=(_STRICT, _STRICT_ZH),
    ),
    _parse_check(
        4,
        ("Infinity is not a JSON number", "Infinity 不是 JSON 数字"),
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"seconds": Infinity}}',
        Rejection(_L1, _NOT_JSON),
        ours=(_STRICT, _STRICT_ZH),
    ),
    _parse_check(
        4,
        ("-Infinity is not a JSON number", "-Infinity 不是 JSON 数字"),
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"seconds": -Infinity}}',
        Rejection(_L1, _NOT_JSON),
        ours=(_STRICT, _STRICT_ZH),
    ),
    _parse_check(
        4,
        ("a number too large for a float", "超出 float 范围的数字"),
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"seconds": 1e999}}',
        Rejection(_L1, _NOT_JSON),
        ours=(_STRICT + " and turns 1e999 into inf", _STRICT_ZH + "，并把 1e999 变成 inf"),
    ),
    _parse_check(
        4,
        ("a 5000-digit integer", "5000 位的整数"),
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"n": ' + "9" * 5000 + "}}",
        Rejection(_L1, _NOT_JSON),
        ours=(
            "json.loads raises ValueError (not JSONDecodeError) past 4300 digits",
            "超过 4300 位时 json.loads 抛出 ValueError（不是 JSONDecodeError）",
        ),
        given=(
            'a tool call whose arguments hold {"n": 999…9} with 5000 digits',
            'arguments 里是 {"n": 999…9}（5000 位）的工具调用',
        ),
    ),
    _parse_check(
        4,
        ("nesting 100 000 arrays deep", "数组嵌套 100 000 层"),
        "[" * 100_000 + "]" * 100_000,
        Rejection(_L1, _NOT_JSON),
        ours=("json.loads raises RecursionError on deep nesting", "嵌套太深时 json.loads 抛出 RecursionError"),
        given=("'[[[[…]]]]' nested 100 000 deep", "嵌套 100 000 层的 '[[[[…]]]]'"),
    ),
    _parse_check(
        4,
        ("a cut-off reply", "被截断的回复"),
        '{"type": "final_answer", "content": "The answer is',
        Rejection(_L1, _NOT_JSON),
        ours=(
            "the reply stopped at max_output_tokens; nothing may close its brackets for it",
            "回复停在了 max_output_tokens 处；谁也不能替它补上括号",
        ),
    ),
    _parse_check(
        4,
        ("two JSON values in one reply", "一个回复里有两个 JSON 值"),
        '{"type": "final_answer", "content": "1"}\n{"type": "final_answer", "content": "2"}',
        Rejection(_L1, _NOT_JSON),
        ours=(
            "exactly one value: neither the first nor the last may be picked",
            "只能有一个值：既不能挑第一个，也不能挑最后一个",
        ),
    ),
    _parse_check(
        4,
        ("a byte-order mark before the JSON", "JSON 前面有字节顺序标记"),
        '\ufeff{"type": "final_answer", "content": "42"}',
        Rejection(_L1, _NOT_JSON),
        ours=("RFC 8259 forbids a byte-order mark in JSON text", "RFC 8259 不允许 JSON 文本带字节顺序标记"),
    ),
    _parse_check(
        4,
        ("a blank call_id", "空白的 call_id"),
        _seeded(call_id="   "),
        Rejection(_L4, "call_id must not be blank"),
        ours=_NON_BLANK,
    ),
    _parse_check(
        4,
        ("an empty tool_name", "空的 tool_name"),
        _seeded(tool_name=""),
        Rejection(_L4, "tool_name must not be blank"),
        ours=_NON_BLANK,
    ),
    _parse_check(
        4,
        ("a blank final answer", "空白的最终回答"),
        '{"type": "final_answer", "content": " \\n "}',
        Rejection(_L4, "content must not be blank"),
        ours=_NON_BLANK,
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


def _assert_every_check_speaks_chinese() -> None:
    for check in CHECKS:
        if check.zh is None or (check.zh.ours is None) != (check.ours is None):  # pragma: no cover - a mistake here
            raise AssertionError(f"check {check.id} needs zh=Chinese(...), with ours exactly when it has ours")


_assert_every_check_speaks_chinese()


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
    label_zh: str = ""
    cost_zh: str = ""

    def run(self, module: ModuleType) -> str:
        """The sample through ``module`` in this process (the reference side of ``compare``)."""
        return self.describe(run_probe(module, self.probe))

    def words(self, language: Language | None = None) -> tuple[str, str]:
        """The label and the cost in ``language`` (the edition's by default)."""
        if (language or edition_language()) == "en":
            return self.label, self.cost
        return self.label_zh, self.cost_zh


def describe_parse(module: ModuleType, text: str) -> str:
    """What ``module.parse_json_action`` does with ``text``: ``✔ <action>`` or ``✘ rejected at layer N (...)``."""
    return describe_parse_result(run_probe(module, {"kind": "parse", "text": text}))


def describe_parse_result(result: dict[str, Any]) -> str:
    """``describe_parse`` for a probe's result (the learner's, sent back from the sandbox)."""
    error = _error(result)
    if error is not None:
        if not _is(error, InvalidModelOutputError):
            raise Raised(error)
        return say("described_rejection", layer=_layer(_raw_layer(error.get("layer"))))
    return f"✔ {_cut(result.get('shown', ''), 90)}"


def _describe_messages(result: dict[str, Any]) -> str:
    return "\n".join(f"{role}: {content}" for role, content in _pairs(result))


def _describe_adapter(result: dict[str, Any]) -> str:
    error = _error(result)
    if error is not None and _is(error, ModelProviderError):
        cause = error.get("cause_shown", "None") if result.get("cause_is_original") else "None"
        return say("provider_error_cause", cause=_cut(cause))
    if error is not None and _is(error, InvalidModelOutputError):
        usage = error.get("usage")
        shown_usage = (
            repr(TokenUsage(*_PUBLIC.invalid_usage))
            if usage == encode(TokenUsage(*_PUBLIC.invalid_usage))
            else show(usage)
        )
        return say("invalid_at", layer=_layer(_raw_layer(error.get("layer"))), usage=shown_usage)
    _value(result)
    return _cut(result.get("shown", ""), 160)


def _message_sample(index: int, labels: tuple[str, str], item: HistoryItem) -> Sample:
    probe = _messages_probe([item])
    return Sample(f"s1.{index}", 1, "json_text_messages", labels[0], probe, _describe_messages, label_zh=labels[1])


def _adapter_sample_of(index: int, labels: tuple[str, str], kind: str) -> Sample:
    failure = "provider_error" if kind == "failure" else None
    probe = _adapter_probe(_PUBLIC, fenced=kind == "fenced", failure=failure)
    return Sample(f"s2.{index}", 2, "json_text_adapter", labels[0], probe, _describe_adapter, label_zh=labels[1])


@dataclass(frozen=True, slots=True)
class CorpusReply:
    """One reply of notebook 04's blog-versus-ours table, with what a lax parser's answer costs (in both languages)."""

    text: str
    label_zh: str
    cost: str = ""
    cost_zh: str = ""


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
        reply.label_zh,
        reply.cost_zh,
    )


CORPUS = {
    "the blog's tool call": CorpusReply(_PRETTY_CALL, "博客里的工具调用"),
    "a code fence": CorpusReply(_FENCED, "代码围栏"),
    "a top-level array": CorpusReply(f"[{_CALL}]", "顶层是数组"),
    'type "tool_result"': CorpusReply(
        '{"type": "tool_result", "call_id": "call_1", "content": "ok", "is_error": false}', 'type 为 "tool_result"'
    ),
    "a duplicate tool_name": CorpusReply(
        '{"type": "tool_call", "call_id": "c1", "tool_name": "read_file", "tool_name": "delete_file", "arguments": {}}',
        "重复的 tool_name",
        "json.loads keeps the last value: the agent runs delete_file where the model also wrote read_file",
        "json.loads 保留后一个值：模型明明也写了 read_file，智能体却运行了 delete_file",
    ),
    "a duplicate path": CorpusReply(
        '{"type": "tool_call", "call_id": "c1", "tool_name": "rm", "arguments": {"path": "a.txt", "path": "/"}}',
        "重复的 path",
        "the tool receives '/', the second of two paths",
        "工具收到的是两个路径里的第二个：'/'",
    ),
    "NaN seconds": CorpusReply(
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"seconds": NaN}}',
        "NaN 秒",
        "nan reaches the tool, and every comparison with nan is False: a guard if seconds > 60 lets it through",
        "nan 传到了工具，而与 nan 的任何比较都是 False：if seconds > 60 这样的防护会放它过去",
    ),
    "1e999 seconds": CorpusReply(
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"seconds": 1e999}}',
        "1e999 秒",
        "inf reaches the tool: sleep forever",
        "inf 传到了工具：永远睡下去",
    ),
    "5000 nines": CorpusReply(
        '{"type": "tool_call", "call_id": "c1", "tool_name": "sleep", "arguments": {"n": ' + "9" * 5000 + "}}",
        "5000 个 9",
        "json.loads raises ValueError, which the blog's except json.JSONDecodeError does not catch: a crash",
        "json.loads 抛出 ValueError，博客的 except json.JSONDecodeError 接不住它：程序崩溃",
    ),
    "nesting 100 000 deep": CorpusReply(
        "[" * 100_000 + "]" * 100_000,
        "嵌套 100 000 层",
        "json.loads raises RecursionError: the agent crashes instead of asking for a correction",
        "json.loads 抛出 RecursionError：智能体直接崩溃，而不是请模型纠正",
    ),
    "a blank call_id": CorpusReply(
        _call_with(call_id="   "),
        "空白的 call_id",
        "ToolCall refuses it with ValueError, not InvalidModelOutputError: the Kernel cannot correct the model",
        "ToolCall 用 ValueError 拒绝它，而不是 InvalidModelOutputError：Kernel 没法请模型纠正",
    ),
    "a cut-off reply": CorpusReply('{"type": "final_answer", "content": "The answer is', "被截断的回复"),
    "two objects": CorpusReply(
        '{"type": "final_answer", "content": "1"}\n{"type": "final_answer", "content": "2"}', "两个对象"
    ),
}
"""Replies for the blog-versus-ours table of notebook 04, by their English label."""

SAMPLES: tuple[Sample, ...] = (
    _message_sample(1, ("a Message", "一条 Message"), Message(MessageRole.USER, "请帮我读一下 README.md")),
    _message_sample(2, ("a ToolCall", "一个 ToolCall"), _TOOL_CALL),
    _message_sample(3, ("a ToolResult in Chinese", "内容是中文的 ToolResult"), _TOOL_RESULT),
    _adapter_sample_of(1, ("a valid reply", "合法的回复"), "valid"),
    _adapter_sample_of(2, ("the provider fails", "Provider 调用失败"), "failure"),
    _adapter_sample_of(3, ("a fenced reply", "带代码围栏的回复"), "fenced"),
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
            f"reply {index}",
            {"kind": "parse", "text": text},
            describe_parse_result,
            label_zh=f"回复 {index}",
        )

    return tuple(sample(index, text) for index, text in enumerate(texts, start=1))
