"""The verdicts of notebooks 05 and 07's graded cells, decided where no learner's code runs.

nbgrader runs a whole submission in one kernel, so an answer cell can rewrite the checks the locked cells import. The
outside judge (``outside_grade.OutsideJudge``, a step of nbgrader's autograde) therefore decides every graded cell again
in the teacher's process: the learner's code runs in a sandboxed child (``sandbox.SandboxSession``, the sandbox verify
uses, running ``outside_child``) that only answers requests with plain data, and the checks here compare that data with
what is right.

* Notebook 05: the answer cells' source runs in the child; the exercise checks (``exercise_checks``) run here on proxies
  that forward each call to the child. The hidden cells add cases drawn fresh from ``seed`` and the traps of the
  teacher's copy (work handed to the package, computed predictions, a cause dropped, every layer named).
* Notebook 07: each step is ``verify`` on the submission's folder (run here: verify sandboxes the learner's files
  itself), plus what only an outside judge can check: the step's file loads in a child that has the previous chapter and
  nothing else (a file that reaches for the reference, however the import is spelled, fails there), and gives the
  reference's answers on the hidden replies and on fresh ones. A step whose own-work check fails scores 0, both of its
  cells.

What no judge sees: a learner who types the reference's text in by hand (classroom/GRADING.md).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import io
import json
import os
import random
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import json_action_parser as reference_parser
from .. import json_text_adapter, kernel_types, model_adapter, scripted_provider
from .. import json_text_messages as reference_messages
from ..display import shorten
from ..json_action_parser import parse_json_action
from ..json_text_messages import encode_json
from ..kernel_types import Message, MessageRole, ToolCall, ToolResult
from ..model_adapter import InvalidModelOutputError, ModelCallBudget, TokenUsage, ValidationLayer
from ..scripted_provider import ScriptedProvider
from . import exercise_checks
from .build_assignment import chapter_imports
from .exercise_checks import ToolCallRejected
from .sandbox import Limits, SandboxSession, SandboxStopped
from .verify import VerifyReport, verify
from .wire import GRADER_CAPS, WireError, classes_of, decode
from .wire import encode as wire_encode
from .words import _

__all__ = ["STEP_FILES", "Verdict", "judge_build", "judge_exercises", "sandboxed"]

_HERE = Path(__file__).resolve().parent
_CHILD = "import outside_child\noutside_child.main()\n"
_CHILD_LIMITS = Limits(seconds=10.0, memory_bytes=1 << 30, processes=32, open_files=128, output_bytes=16_000_000)
"""One answer is small; the session's channel carries all of a notebook's answers, capped as a whole."""


def _package_files() -> dict[str, bytes]:
    """The whole package, for notebook 05's answer cells (they use the chapter; what they can reach decides nothing)."""
    package = _HERE.parent
    return {
        f"codeagent_lite/{path.relative_to(package).as_posix()}": path.read_bytes()
        for path in sorted(package.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


def _folder_files(folder: Path) -> dict[str, bytes]:
    """The learner's own ``*.py`` files (no symlinks: a link could name a teacher's file)."""
    return {
        f"my_json_text/{path.name}": path.read_bytes()
        for path in sorted(folder.glob("*.py"))
        if path.is_file() and not path.is_symlink()
    }


def sandboxed(
    config: Mapping[str, Any],
    *,
    full_package: bool,
    folder: Path | None = None,
    language: str = "en",
    deadline: float = 10.0,
) -> SandboxSession:
    """A session with ``outside_child`` loaded with ``config``: the whole package (05) or the Kernel types only (07)."""
    files = {"outside_child.py": (_HERE / "outside_child.py").read_bytes()}
    files.update(_package_files() if full_package else {})
    files.update(_folder_files(folder) if folder is not None else {})
    payload = dict(config, language=language, folder="my_json_text")
    limits = dataclasses.replace(_CHILD_LIMITS, seconds=deadline)
    return SandboxSession(_CHILD, payload=payload, files=files, limits=limits, kernel_types=not full_package)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outside judge's word on one graded cell: passed or not, and the text the feedback shows."""

    passed: bool
    text: str


def _classes() -> dict[str, Any]:
    found = classes_of(kernel_types, model_adapter, json_text_adapter, reference_messages, scripted_provider)
    found[f"{ToolCallRejected.__module__}.{ToolCallRejected.__qualname__}"] = ToolCallRejected
    return found


def encode(value: object) -> Any:
    """A value for the child, whole (the grader's texts must arrive as they are)."""
    return wire_encode(value, caps=GRADER_CAPS)


CLASSES = _classes()


class JudgeStopped(RuntimeError):
    """The learner's child broke off (a hang, a crash, garbage): every later call says so."""


def _answer(child: SandboxSession | _Replay, request: Mapping[str, Any], timeout: float | None = None) -> Any:
    """The child's answer, decoded: the value returned, or the exception raised (re-raised here)."""
    try:
        reply = child.ask(request, timeout)
    except SandboxStopped as stopped:
        raise JudgeStopped(_("the sandboxed run of your code stopped: {stopped}", stopped=stopped)) from None
    if type(reply) is not dict:
        raise JudgeStopped(_("the sandboxed run of your code sent something that is not an answer"))
    try:
        raised = "raised" in reply
        value = decode(reply["raised"] if raised else reply.get("returned"), CLASSES)
    except (WireError, ValueError, TypeError, RecursionError) as error:
        raise JudgeStopped(_("the sandboxed run of your code sent unreadable data: {error}", error=error)) from None
    if raised:
        if not isinstance(value, BaseException):
            raise JudgeStopped(_("the sandboxed run of your code raised something that is not an exception"))
        raise value
    return value


class _Replay:
    """An answer already received, read again through ``_answer``'s checks."""

    def __init__(self, reply: Any) -> None:
        self._reply = reply

    def ask(self, request: Mapping[str, Any], timeout: float | None = None) -> Any:
        return self._reply


@contextlib.contextmanager
def _language(language: str) -> Iterator[None]:
    saved = os.environ.get("CAL_LANG")
    os.environ["CAL_LANG"] = language
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("CAL_LANG", None)
        else:
            os.environ["CAL_LANG"] = saved


# --------------------------------------------------------------------------- notebook 05: proxies to the child


class _RemoteFunction:
    """Stands where the learner's function stood: each call runs the learner's code in the child."""

    def __init__(self, child: SandboxSession, name: str) -> None:
        self._child, self.__name__ = child, name

    def __call__(self, *args: Any) -> Any:
        return _answer(self._child, {"op": "call", "target": self.__name__, "args": [encode(arg) for arg in args]})


class _RemoteAdapter:
    """Exercise 4's class: ``_RemoteAdapter(provider).complete(...)`` drives the learner's adapter in the child."""

    def __init__(self, child: SandboxSession, name: str, provider: ScriptedProvider) -> None:
        self._child, self._name, self._provider = child, name, provider

    def complete(self, *args: Any) -> Any:
        request = {
            "op": "adapter",
            "target": self._name,
            "replies": [encode(reply) for reply in self._provider._replies],
            "args": [encode(arg) for arg in args],
        }
        try:
            reply = self._child.ask(request)
        except SandboxStopped as stopped:
            raise JudgeStopped(_("the sandboxed run of your code stopped: {stopped}", stopped=stopped)) from None
        try:
            calls = decode(reply.get("calls", []), CLASSES) if type(reply) is dict else []
        except (WireError, ValueError, TypeError, RecursionError):
            calls = []
        calls = calls if isinstance(calls, list) else []
        self._provider.calls.extend(call for call in calls if isinstance(call, scripted_provider.ProviderCall))
        return _answer(_Replay(reply), {})


def _namespace(child: SandboxSession) -> dict[str, Any]:
    """The names the checks take, each a proxy into the child (predictions fetched as data)."""
    names: dict[str, Any] = {}
    for number, wanted in exercise_checks.EXERCISE_NAMES.items():
        for name in wanted:
            if number == 3:
                with contextlib.suppress(Exception):
                    names[name] = _answer(child, {"op": "value", "target": name})
            elif number == 4:
                names[name] = functools.partial(_RemoteAdapter, child, name)
            else:
                names[name] = _RemoteFunction(child, name)
    return names


def _run_check(number: int, names: Mapping[str, Any]) -> tuple[bool, str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        result = exercise_checks.check_exercise(number, names)
    return result.passed, printed.getvalue().strip()


def _hidden(problem: str | None, check: tuple[bool, str], number: int) -> Verdict:
    if not check[0]:
        return Verdict(False, _("the self-check for exercise {number} does not pass", number=number))
    return Verdict(problem is None, problem or _("✔ exercise {number}: the hidden tests pass", number=number))


def _fresh_text(rng: random.Random) -> str:
    alphabet = 'abcxyz 012_-/"\\\n\t路径说明权限🙂é'
    # Never blank: the Kernel types refuse blank ids and contents, and a case must be one the chapter accepts.
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 11))) + rng.choice("az路🙂")


def _fresh_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(6 if depth < 2 else 4)
    if kind == 0:
        return _fresh_text(rng)
    if kind == 1:
        return rng.randint(-1000, 1000)
    if kind == 2:
        return rng.choice([True, False, None, 0.25, -3.5])
    if kind == 3:
        return _fresh_text(rng)[:3]
    if kind == 4:
        return [_fresh_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {_fresh_text(rng): _fresh_value(rng, depth + 1) for _ in range(rng.randint(1, 3))}


def _fresh_exercise_1(names: Mapping[str, Any], rng: random.Random) -> str | None:
    sample = {_fresh_text(rng): _fresh_value(rng) for _ in range(3)}
    got = names["my_encode_json"](sample)
    if got != encode_json(sample):
        return _(
            "exercise 1: for a fresh sample my_encode_json gave {got}, not {expected}",
            got=shorten(repr(got), 80),
            expected=repr(encode_json(sample)),
        )
    item = ToolCallRejected(f"call_{rng.randrange(10**6)}", _fresh_text(rng).strip() or "t", _fresh_text(rng) + "x")
    message = names["encode_tool_call_rejected"](item)
    expected = encode_json(
        {"type": "tool_call_rejected", **{k: getattr(item, k) for k in ("call_id", "tool_name", "reason")}}
    )
    if getattr(message, "content", None) != expected or getattr(message, "role", None) != "user":
        return _("exercise 1: a fresh rejection was encoded as {message}", message=shorten(repr(message), 80))
    return None


def _layer_2_problem(check: Callable[[Any], Any], value: Any) -> str | None:
    try:
        returned = check(value)
    except InvalidModelOutputError as error:
        if isinstance(value, dict):
            return _("exercise 2 refused the object {value}", value=shorten(repr(value), 60))
        return (
            None
            if error.layer is ValidationLayer.TOP_LEVEL_OBJECT
            else _("exercise 2 refused at {layer}", layer=repr(error.layer))
        )
    except JudgeStopped:
        raise
    except Exception as error:
        return _("exercise 2 raised {name} for {value}", name=type(error).__name__, value=shorten(repr(value), 60))
    if not isinstance(value, dict):
        return _let_through(value)
    return None if returned == value else _("exercise 2 changed {value}", value=shorten(repr(value), 60))


def _let_through(value: Any) -> str:
    """The words for a non-object exercise 2 let through (the sabotaged child's telltale, see _exercise_2_hidden)."""
    return _("exercise 2 let {value} through", value=shorten(repr(value), 60))


def _fresh_exercise_2(names: Mapping[str, Any], rng: random.Random) -> str | None:
    values = [_fresh_value(rng) for _ in range(6)] + [{"type": _fresh_text(rng)}, [_fresh_text(rng)]]
    return next((p for value in values if (p := _layer_2_problem(names["my_check_top_level_object"], value))), None)


_KINDS = (
    ([1, 2], ("array", "list")),
    ("final_answer", ("string", "str")),
    (7, ("number", "int")),
    (2.5, ("number", "float")),
    (False, ("false", "bool")),
    (None, ("null", "none")),
)


def _placeholders_problem(check: Callable[[Any], Any]) -> str | None:
    """Trap: expected="?" and found="?": each field must say what it means."""
    for value, words in _KINDS:
        try:
            check(value)
        except InvalidModelOutputError as error:
            expected, found = str(error.expected or ""), str(error.found or "")
        except JudgeStopped:
            raise
        except Exception as error:
            return _("{value} raised {name}", value=repr(value), name=type(error).__name__)
        else:
            return _("{value} was let through", value=repr(value))
        problem = _fields_problem(value, words, expected, found)
        if problem is not None:
            return problem
    return None


def _fields_problem(value: Any, words: tuple[str, ...], expected: str, found: str) -> str | None:
    """Whether a rejection's expected and found say what was expected (an object) and what came instead."""
    if not any(word in expected.lower() for word in ("object", "dict", "{")):
        return _(
            "for {value} expected={expected} does not say that an object was expected",
            value=repr(value),
            expected=repr(expected),
        )
    if not (any(word in found.lower() for word in words) or repr(value) in found or json.dumps(value) in found):
        return _("for {value} found={found} does not say what came instead", value=repr(value), found=repr(found))
    return None


def _is_literal_answer(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is None or node.value is Ellipsis or type(node.value) is int
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ValidationLayer"


def _names_predictions(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "predictions"


def _literal_dict(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Dict)
        and all(isinstance(key, ast.Constant) and isinstance(key.value, str) for key in node.keys)
        and all(_is_literal_answer(item) for item in node.values)
    )


def _mutates_predictions(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and _names_predictions(node.func.value)
        and node.func.attr in ("update", "setdefault", "__setitem__", "fromkeys")
    )


def computed_predictions(source: str) -> list[str]:
    """Statements of ``source`` that set predictions from anything but literal labels and layers."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if _computes_predictions(node):
            fallback = "predictions.update(...)" if isinstance(node, ast.Call) else "predictions = ..."
            found.append(ast.get_source_segment(source, node) or fallback)
    return found


def _computes_predictions(node: ast.AST) -> bool:
    """An assignment to predictions (whole, or one item) from anything but literals, or a mutating call on it."""
    if _mutates_predictions(node):
        return True
    if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return False
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return any(_computed_target(node, target) for target in targets)


def _computed_target(node: ast.Assign | ast.AnnAssign | ast.AugAssign, target: ast.expr) -> bool:
    literal_whole = not isinstance(node, ast.AugAssign) and node.value is not None and _literal_dict(node.value)
    if _names_predictions(target):
        return not literal_whole
    literal_item = node.value is not None and _is_literal_answer(node.value)
    return isinstance(target, ast.Subscript) and _names_predictions(target.value) and not literal_item


def _cause_problem(names: Mapping[str, Any], rng: random.Random) -> str | None:
    """Exercise 4's trap: the error keeps the call's tokens and the parser's error as its cause."""
    tokens = TokenUsage(rng.randint(10, 999), rng.randint(1, 99))
    provider = ScriptedProvider(
        [json_text_adapter.ProviderResponse('{"type": "final_answer"}', tokens.input_tokens, tokens.output_tokens)]
    )
    adapter = names["MyJsonTextAdapter"](provider)
    try:
        adapter.complete([Message(MessageRole.USER, "hi")], [], ModelCallBudget(max_output_tokens=16))
    except InvalidModelOutputError as error:
        if error.usage != tokens:
            return _(
                "the error carries usage={usage}, not the call's {tokens}", usage=repr(error.usage), tokens=repr(tokens)
            )
        if error.layer is not ValidationLayer.FIELDS:
            return _("the error's layer is {layer}, not FIELDS", layer=repr(error.layer))
        cause = error.__cause__
        if not isinstance(cause, InvalidModelOutputError):
            return _(
                "the error's __cause__ is {cause}: raise it `from` the parser's InvalidModelOutputError",
                cause=repr(cause),
            )
        return None if cause.layer is ValidationLayer.FIELDS else _("the cause is not the parser's own error")
    except JudgeStopped:
        raise
    except Exception as error:
        return _("a reply missing its content field raised {name}", name=type(error).__name__)
    return _("a reply missing its content field was accepted")


_ONE_LAYER_REPLIES = {
    ValidationLayer.JSON_SYNTAX: "Sure, here it is: {}",
    ValidationLayer.TOP_LEVEL_OBJECT: "null",
    ValidationLayer.ACTION_TYPE: '{"type": "answer", "content": "42"}',
    ValidationLayer.FIELDS: '{"type": "final_answer", "content": 42}',
}


def _rejection(text: str) -> InvalidModelOutputError:
    try:
        parse_json_action(text)
    except InvalidModelOutputError as error:
        return error
    raise AssertionError(f"the parser accepted {text!r}")


def _one_layer_problem(names: Mapping[str, Any], rng: random.Random) -> str | None:
    """Exercise 5's trap: a message that names every layer; and fresh rejections it must describe."""
    fresh = {
        ValidationLayer.TOP_LEVEL_OBJECT: json.dumps([_fresh_text(rng)]),
        ValidationLayer.ACTION_TYPE: json.dumps({"type": _fresh_text(rng) + "_x", "content": "a"}),
        ValidationLayer.FIELDS: json.dumps({"type": "final_answer", "content": rng.randint(0, 99)}),
    }
    for replies in (_ONE_LAYER_REPLIES, fresh):
        for layer, reply in replies.items():
            error = _rejection(reply)
            message = names["correction_message"](error)
            if not isinstance(message, str):
                return _("correction_message returned {name}, not a string", name=type(message).__name__)
            text = message.replace(str(error.expected), " ").replace(str(error.found), " ").lower()
            for other in ValidationLayer:
                if other is not layer and (
                    re.search(rf"\blayer\s*{int(other)}\b", text) or other.title.lower() in text
                ):
                    return _(
                        "the message for a layer-{layer} rejection also names layer {other} ({title}); "
                        "name only the layer that refused the reply",
                        layer=int(layer),
                        other=int(other),
                        title=other.title,
                    )
            if str(error.found) not in message:
                return _(
                    "the message for {reply} does not say what was found ({found})",
                    reply=repr(reply),
                    found=repr(error.found),
                )
    return None


_FRESH_CHECKS: dict[int, Callable[[Mapping[str, Any], random.Random], str | None]] = {
    1: _fresh_exercise_1,
    2: _fresh_exercise_2,
}


def judge_exercises(sources: Sequence[str], *, language: str = "en", seed: int | None = None) -> dict[str, Verdict]:
    """Notebook 05's graded cells, by grade_id, for answer cells whose source is ``sources`` (in notebook order)."""
    rng = random.Random(seed if seed is not None else random.SystemRandom().randrange(2**63))
    verdicts: dict[str, Verdict] = {}
    with _language(language), sandboxed({"mode": "answers", "sources": list(sources)}, full_package=True) as child:
        names = _namespace(child)
        checks = {number: _guarded(functools.partial(_run_check, number, names)) for number in range(1, 6)}
        for number, check in checks.items():
            passed, text = check
            fresh = _FRESH_CHECKS.get(number)
            problem = _guarded_problem(functools.partial(fresh, names, rng)) if passed and fresh else None
            verdicts[f"exercise_{number}_check"] = Verdict(passed and problem is None, problem or text)
        verdicts["exercise_3_hidden"] = _hidden(_predictions_problem(sources), checks[3], 3)
        verdicts["exercise_4_hidden"] = _hidden(_guarded_problem(lambda: _cause_problem(names, rng)), checks[4], 4)
        verdicts["exercise_5_hidden"] = _hidden(_guarded_problem(lambda: _one_layer_problem(names, rng)), checks[5], 5)
    verdicts["exercise_2_hidden"] = _hidden(_exercise_2_hidden(sources, language), checks[2], 2)
    return verdicts


def _exercise_2_hidden(sources: Sequence[str], language: str) -> str | None:
    """Trap: layer 2 handed to the package. In this child the package's layer 2 lets everything through."""
    config = {
        "mode": "answers",
        "sources": list(sources),
        "sabotage": ["codeagent_lite.json_action_parser:check_top_level_object"],
    }
    with _language(language), sandboxed(config, full_package=True) as child:
        check = _RemoteFunction(child, "my_check_top_level_object")
        for value in ([1], "text", None, 3):
            problem = _guarded_problem(functools.partial(_layer_2_problem, check, value))
            if problem is not None and problem == _let_through(value):
                return _(
                    "exercise 2 calls the package's check_top_level_object (directly or through its parser) "
                    "instead of doing the check itself"
                )
            if problem is not None:
                return problem
        return _guarded_problem(lambda: _placeholders_problem(check))


def _predictions_problem(sources: Sequence[str]) -> str | None:
    if not any("predictions" in source for source in sources):
        return _("cannot find the cell that writes the predictions")
    computed = [statement for source in sources for statement in computed_predictions(source)]
    return (
        _("the predictions are computed, not predicted: {statement}", statement=repr(computed[0])) if computed else None
    )


def _guarded(run: Callable[[], tuple[bool, str]]) -> tuple[bool, str]:
    try:
        return run()
    except Exception as error:  # the checks never raise on a learner's values; a judge failure is a ✘, not a crash
        return False, _(
            "the outside judge could not run this check: {name}: {error}", name=type(error).__name__, error=error
        )


def _guarded_problem(run: Callable[[], str | None]) -> str | None:
    try:
        return run()
    except Exception as error:
        return f"{type(error).__name__}: {shorten(str(error), 200)}"


# --------------------------------------------------------------------------- notebook 07: the learner's folder

STEP_FILES = {1: "json_text_messages", 2: "json_text_adapter", 3: "json_action_parser", 4: "json_action_parser"}
"""The file each step grades: its own-work check is about this file."""

HIDDEN_HISTORY = (
    Message(MessageRole.SYSTEM, "只回答一个 JSON 对象"),
    ToolCall(
        'call "9" \\ 末', "write_file", {"path": "笔记/a.md", "lines": [{"n": 1, "text": "🙂\n"}], "append": False}
    ),
    ToolResult('call "9" \\ 末', "已写入 1 行", is_error=False),
)

BLOG_REPLIES = (
    '{"arguments": {"type": "final_answer"}, "tool_name": "search", "call_id": "c-2", "type": "tool_call"}',
    '{"type": "final_answer", "content": "\\u4f60\\u597d"}',
    '\t{"type":"final_answer","content":"ok"}\r\n',
    '{"type": {"name": "tool_call"}, "content": "x"}',
    '{"type": null, "content": "x"}',
    '{"type": "tool_call", "call_id": "c", "tool_name": "read_file"}',
    '{"type": "tool_call", "call_id": ["c"], "tool_name": "x", "arguments": {}}',
    '{"type": "tool_call", "call_id": "c", "tool_name": 7, "arguments": {}}',
    '{"type": "tool_call", "call_id": "c", "tool_name": "x", "arguments": null}',
    '{"type": "final_answer", "content": ["42"]}',
    '{"type": "final_answer", "content": "42", "reason": "sure"}',
    "42",
    "true",
    "{",
    "{'type': 'final_answer', 'content': '42'}",
    "   ",
)

STRICT_REPLIES = (
    '{"type": "final_answer", "content": "NaN and -Infinity are not JSON numbers; 1e999 overflows"}',
    '{"type": "tool_call", "call_id": "c", "tool_name": "write_file",'
    ' "arguments": {"text": "\\"path\\": 1, \\"path\\": 2", "n": -0.5e3}}',
    '{"type": "final_answer", "content": "' + "[" * 3000 + '"}',
    '{"type": "tool_call", "call_id": "c", "tool_name": "t", "arguments": {"items": [{"k": 1, "k": 2}]}}',
    '{"type": "tool_call", "call_id": "c", "tool_name": "t", "arguments": {"x": [1, NaN]}}',
    '{"type": "tool_call", "call_id": "c", "tool_name": "t", "arguments": {"x": 1E400}}',
    '{"type": "tool_call", "call_id": "c", "tool_name": "t", "arguments": {"x": -2e308}}',
    '{"a": ' * 20000 + "1" + "}" * 20000,
    '{"type": "final_answer", "content": "1"} []',
    '{"type": "tool_call", "call_id": "c", "tool_name": "\\t\\n", "arguments": {}}',
    '{"type": "final_answer", "content": "\\u3000"}',
)


def _fresh_replies(rng: random.Random, strict: bool) -> list[str]:
    """Replies nobody has seen before this run: valid actions and each layer's refusals, with fresh content."""
    key, text = _fresh_text(rng).replace('"', "'"), _fresh_text(rng)
    replies = [
        json.dumps({"type": "final_answer", "content": text}, ensure_ascii=rng.random() < 0.5),
        json.dumps(
            {"type": "tool_call", "call_id": key or "c", "tool_name": "t", "arguments": {key: _fresh_value(rng)}}
        ),
        json.dumps([text]),
        json.dumps({"type": key + "!", "content": text}),
        json.dumps({"type": "final_answer", "content": text, key + "_": 1}),
        json.dumps({"type": "final_answer", "content": text})[: rng.randint(1, 12)],
    ]
    if strict:
        number, name = rng.randint(2, 9), json.dumps(key)
        head = '{"type": "tool_call", "call_id": "c", "tool_name": "t", "arguments": '
        constant = rng.choice(["NaN", "Infinity", "-Infinity"])
        replies += [
            head + f"{{{name}: 1, {name}: 2}}}}",
            head + f'{{"x": {number}e9{number}}}}}',
            f'{{"type": "final_answer", "content": {constant}}}',
        ]
    return replies


def _outcome(run: Callable[[], Any]) -> tuple[str, str]:
    """What a parser does with a text, as data: ("returned", the action's repr), ("refused", the layer's number) or
    ("crashed", the exception); the two sides are compared as data and worded only for the feedback."""
    try:
        return ("returned", repr(run()))
    except InvalidModelOutputError as error:
        return ("refused", str(int(error.layer)))
    except JudgeStopped:
        raise
    except Exception as error:
        return ("crashed", f"{type(error).__name__}: {error}")


def _outcome_words(outcome: tuple[str, str]) -> str:
    kind, detail = outcome
    if kind == "refused":
        return _("refused it at layer {number}", number=detail)
    if kind == "crashed":
        return _("crashed with {error}", error=shorten(detail, 200))
    return _("returned {value}", value=shorten(detail, 200))


def _parser_problem(child: SandboxSession, replies: Sequence[str]) -> str | None:
    parse = _RemoteFunction(child, "json_action_parser.parse_json_action")
    for text in replies:
        got = _outcome(functools.partial(parse, text))
        wanted = _outcome(functools.partial(reference_parser.parse_json_action, text))
        if got != wanted:
            return _(
                "for {text} your parser {got}; the reference {wanted}",
                text=shorten(repr(text), 90),
                got=_outcome_words(got),
                wanted=_outcome_words(wanted),
            )
    return None


def _messages_problem(child: SandboxSession, rng: random.Random) -> str | None:
    call_id = _fresh_text(rng).strip() or "c"
    fresh = (
        Message(MessageRole.USER, _fresh_text(rng)),
        ToolCall(call_id, "read_file", {_fresh_text(rng): _fresh_value(rng)}),
        ToolResult(call_id, _fresh_text(rng), is_error=rng.random() < 0.5),
    )
    build = _RemoteFunction(child, "json_text_messages.build_provider_messages")
    for history in (HIDDEN_HISTORY, fresh):
        mine = build(list(history))
        reference = reference_messages.build_provider_messages(list(history))
        if not isinstance(mine, list | tuple) or len(mine) != len(reference):
            return _("build_provider_messages returned {value}", value=shorten(repr(mine), 120))
        for number, (got, wanted) in enumerate(zip(mine, reference, strict=True), start=1):
            pair = (getattr(got, "role", None), getattr(got, "content", None))
            if pair != (wanted.role, wanted.content):
                reference_pair = (wanted.role, wanted.content)
                return _(
                    "history item {number}: {got} instead of the reference's {wanted}",
                    number=number,
                    got=shorten(repr(pair), 160),
                    wanted=repr(reference_pair),
                )
    return None


def _adapter_problem(child: SandboxSession, rng: random.Random) -> str | None:
    """Step 2's traps, with stand-ins lent for the learner's other two files: fresh usage kept, only the parser's
    refusal caught. (The cause and expected/found are not graded here: step 2's visible checks do not check them.)"""
    usage = [rng.randint(10, 999), rng.randint(1, 99)]
    expected, found, message = _fresh_text(rng) + "e", _fresh_text(rng) + "f", "refused " + _fresh_text(rng)
    refusal = InvalidModelOutputError(message, layer=ValidationLayer.TOP_LEVEL_OBJECT, expected=expected, found=found)
    try:
        _answer(child, {"op": "lent_adapter", "error": encode(refusal), "usage": usage})
    except InvalidModelOutputError as raised:
        if raised.usage != TokenUsage(*usage):
            return _(
                "the error carries usage={usage}, not {tokens}",
                usage=repr(raised.usage),
                tokens=repr(TokenUsage(*usage)),
            )
    except JudgeStopped:
        raise
    except Exception as error:
        return _(
            "a reply the parser refused came out as {name}: {error}",
            name=type(error).__name__,
            error=shorten(str(error), 120),
        )
    else:
        return _("a reply the parser refused came back as an action")
    return _bug_problem(child, rng, usage)


def _bug_problem(child: SandboxSession, rng: random.Random, usage: list[int]) -> str | None:
    try:
        _answer(child, {"op": "lent_adapter", "error": encode(KeyError(_fresh_text(rng))), "usage": usage})
    except KeyError:
        return None
    except JudgeStopped:
        raise
    except Exception as error:
        return _(
            "a KeyError inside the parser came out as {name}: catch only"
            " InvalidModelOutputError around the parser (and ProviderError around the provider)",
            name=type(error).__name__,
        )
    return _("a parser that raised KeyError gave an answer")


def _load_problem(child: SandboxSession, file: str) -> str | None:
    """Own work: the file loads where only the previous chapter exists (step 2's siblings lent as stand-ins)."""
    try:
        if file == "json_text_adapter":
            _answer(child, {"op": "lent_adapter", "error": encode(KeyError("load")), "usage": [1, 1]})
        else:
            _answer(child, {"op": "load", "target": file})
    except (KeyError, NotImplementedError):
        return None
    except JudgeStopped:
        raise
    except ModuleNotFoundError as error:
        if "codeagent_lite" in str(error):
            return _(
                "{file}.py imports the reference one ({error}); "
                "only codeagent_lite.kernel_types and codeagent_lite.model_adapter are there to use",
                file=file,
                error=error,
            )
        return _(
            "{file}.py cannot be loaded: {name}: {error}",
            file=file,
            name="ModuleNotFoundError",
            error=shorten(str(error), 160),
        )
    except Exception as error:
        if file == "json_text_adapter" and not isinstance(error, ImportError | SyntaxError):
            return None
        return _(
            "{file}.py cannot be loaded: {name}: {error}",
            file=file,
            name=type(error).__name__,
            error=shorten(str(error), 160),
        )
    return None


def _implemented(child: SandboxSession, step: int) -> bool:
    """Whether the step's function does anything but the stub's NotImplementedError on the hidden inputs."""
    try:
        if step == 1:
            _RemoteFunction(child, "json_text_messages.build_provider_messages")(list(HIDDEN_HISTORY))
        elif step == 2:
            _answer(child, {"op": "lent_adapter", "error": encode(KeyError("x")), "usage": [1, 1]})
        else:
            _RemoteFunction(child, "json_action_parser.parse_json_action")(BLOG_REPLIES[0])
    except NotImplementedError:
        return False
    except JudgeStopped:
        return False
    except Exception:
        return True
    return True


def _verify_steps(folder: Path, language: str, seed: int) -> dict[int, tuple[bool, str]]:
    """verify's checks on the learner's folder, with cases drawn from ``seed``: each step's pass and report.

    Run here, in the teacher's process: verify runs the learner's files in its own sandbox and judges outside it
    (inside another sandbox it would fall back to a weaker one). All steps in one run, each step's part reported;
    step 2 in a run of its own that judges the adapter alone (``_adapter_alone``).
    """
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            report = verify(folder, seed=seed)
            alone = _adapter_alone(folder, seed)
    except Exception as error:  # a folder verify cannot read is a ✘ for every step, never a crash of grading
        return dict.fromkeys(
            STEP_FILES, (False, _("verify could not run: {name}: {error}", name=type(error).__name__, error=error))
        )
    verdicts = {step: _step_part(report, step) for step in STEP_FILES}
    verdicts[2] = _step_part(alone, 2)
    return verdicts


def _step_part(report: VerifyReport, step: int) -> tuple[bool, str]:
    results = tuple(result for result in report.results if result.check.step == step)
    part = VerifyReport(report.label, (step,), results, report.file_problems, report.notes)
    return bool(results) and all(result.passed for result in results), printable_report(str(part))


_STAND_IN = '''"""A stand-in the grader puts beside your adapter for a file that uses the package's chapter."""


def __getattr__(name):
    def stand_in(*args, **kwargs):
        raise NotImplementedError(name + " is a stand-in: step 2 judges the adapter alone")

    return stand_in
'''
"""Any name the adapter imports from a sibling is there; verify's step-2 checks lend the two helpers anyway."""


def _uses_chapter(folder: Path, file: str) -> bool:
    """Whether ``file`` imports the package's chapter (read from its source); a file that does not parse does not."""
    try:
        return bool(chapter_imports(folder, file))
    except (SyntaxError, ValueError, RecursionError, MemoryError, OSError):
        return False


def _adapter_alone(folder: Path, seed: int) -> VerifyReport:
    """verify's step 2 on the learner's adapter, a sibling that uses the package's chapter replaced by a stand-in.

    Why: the adapter imports its siblings, and verify's sandbox has no reference chapter, so a sibling that uses it
    would fail to load and take step 2's points too, though that sibling's own step already scores 0 for it.
    verify's checks lend the adapter its two helpers, so the stand-in decides nothing. A sibling broken on its
    own (one that raises as it loads) stays: the adapter that imports it cannot run, as verify reports.
    """
    with tempfile.TemporaryDirectory(prefix="outside-judge-") as temporary:
        copy = Path(temporary) / folder.name
        copy.mkdir()
        adapter = folder / "json_text_adapter.py"
        if adapter.is_file() and not adapter.is_symlink():
            shutil.copyfile(adapter, copy / adapter.name)
        for sibling in ("json_text_messages", "json_action_parser"):
            original = folder / f"{sibling}.py"
            if original.is_file() and not original.is_symlink() and not _uses_chapter(folder, sibling):
                shutil.copyfile(original, copy / original.name)
            elif original.is_file():
                (copy / original.name).write_text(_STAND_IN, encoding="utf-8")
        return verify(copy, step=2, seed=seed)


def printable_report(text: str) -> str:
    """A report from the child, kept to printable characters and a bounded length (it is untrusted text)."""
    kept = "".join(character if character == "\n" or character.isprintable() else "?" for character in text)
    return shorten(kept, 20_000)


def judge_build(folder: Path, *, language: str = "en", seed: int | None = None) -> dict[str, Verdict]:
    """Notebook 07's graded cells, by grade_id, for the learner's folder ``folder`` (a submission's my_json_text)."""
    seed = seed if seed is not None else random.SystemRandom().randrange(2**63)
    rng = random.Random(seed)
    verdicts: dict[str, Verdict] = {}
    with _language(language):
        checks = _verify_steps(folder, language, seed)
        for step, file in STEP_FILES.items():
            verdicts.update(_judge_step(folder, step, file, language, checks[step], rng))
    return verdicts


def _judge_step(
    folder: Path, step: int, file: str, language: str, verified: tuple[bool, str], rng: random.Random
) -> dict[str, Verdict]:
    check_id, hidden_id = f"step_{step}_check", f"step_{step}_hidden"
    passed, report = verified
    with sandboxed({"mode": "folder"}, full_package=False, folder=folder, language=language) as child:
        used = _guarded_problem(lambda: _imports_problem(folder, file))
        own = used or _guarded_problem(lambda: _load_problem(child, file))
        if own is None and not _implemented(child, step):
            own = _("{file}.py still raises NotImplementedError (the stub)", file=file)
        if own is not None:
            failed = Verdict(False, _("✘ step {step} scores 0: {problem}", step=step, problem=own))
            # A report with passes in it is not the learner's own work: shown beside 0 points it would mislead.
            shown = failed.text if "✔" in report else f"{report}\n{failed.text}"
            return {check_id: Verdict(False, shown), hidden_id: failed}
        check = Verdict(passed, report)
        if not passed:
            return {
                check_id: check,
                hidden_id: Verdict(False, _("the checks of step {step} do not pass yet", step=step)),
            }
        problem = _guarded_problem(lambda: _step_hidden(child, step, rng))
    return {
        check_id: check,
        hidden_id: Verdict(problem is None, problem or _("✔ step {step}: the hidden tests pass", step=step)),
    }


def _imports_problem(folder: Path, file: str) -> str | None:
    if not (folder / f"{file}.py").is_file():
        return _("there is no {file}.py", file=file)
    used = chapter_imports(folder, file)
    return (
        _("{file}.py uses the package's {modules}: write it yourself", file=file, modules=", ".join(used))
        if used
        else None
    )


def _step_hidden(child: SandboxSession, step: int, rng: random.Random) -> str | None:
    if step == 1:
        return _messages_problem(child, rng)
    if step == 2:
        return _adapter_problem(child, rng)
    if step == 3:
        return _parser_problem(child, [*BLOG_REPLIES, *_fresh_replies(rng, strict=False)])
    return _parser_problem(child, [*STRICT_REPLIES, *_fresh_replies(rng, strict=True)])
