"""The verdicts of notebooks 05 and 07's graded cells, decided where no learner's code runs.

nbgrader runs a whole submission in one kernel, so an answer cell can rewrite the checks the locked cells import. The
outside judge (``outside_grade.OutsideJudge``, a step of nbgrader's autograde) therefore decides every graded cell again
in the teacher's process: the learner's code runs in a sandboxed child (``sandbox.SandboxSession``, the sandbox verify
uses, running ``outside_child``) that only answers requests with plain data, and the checks here compare that data with
what is right.

* Notebook 05: the answer cells' source runs in the child; the exercise checks (``exercise_checks``), the very ones
  the learner runs, run here on proxies that forward each call to the child, on their own cases and again on cases
  drawn fresh from ``seed``; the hidden cells add the traps of the teacher's copy (work handed to the package,
  computed predictions, hard-coded tokens, every layer named).
* Notebook 07: each step is ``verify`` on the submission's folder (run here: verify sandboxes the learner's files
  itself), plus what only an outside judge can check: the step's file loads in a child that has the previous chapter and
  nothing else (a file that reaches for the reference, however the import is spelled, fails there), and gives the
  reference's answers on the hidden replies and on fresh ones. A step whose own-work check fails scores 0, both of its
  cells.

What no judge sees: a learner who types the reference's text in by hand (classroom/GRADING.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import json
import os
import random
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import codeagent_lite
from codeagent_lite import json_action_parser as reference_parser
from codeagent_lite import json_text_adapter, kernel_types, model_adapter, scripted_provider
from codeagent_lite import json_text_messages as reference_messages
from codeagent_lite.display import printable, shorten
from codeagent_lite.kernel_types import Message, MessageRole, ToolCall, ToolResult
from codeagent_lite.model_adapter import InvalidModelOutputError, TokenUsage, ValidationLayer
from codeagent_lite.scripted_provider import ScriptedProvider
from codeagent_lite.workbook import exercise_checks
from codeagent_lite.workbook.build_assignment import StepCheck, chapter_imports, step_part
from codeagent_lite.workbook.exercise_checks import ToolCallRejected, computed_predictions_problem
from codeagent_lite.workbook.sandbox import Limits, SandboxSession, SandboxStopped
from codeagent_lite.workbook.verify import VerifyReport, verify
from codeagent_lite.workbook.wire import GRADER_CAPS, WireError, classes_of, decode
from codeagent_lite.workbook.wire import encode as wire_encode
from codeagent_lite.workbook.words import N_, _

__all__ = ["STEP_FILES", "Verdict", "judge_build", "judge_exercises", "sandboxed"]

_HERE = Path(__file__).resolve().parent
_CHILD = "import outside_child\noutside_child.main()\n"
_CHILD_LIMITS = Limits(seconds=10.0, memory_bytes=1 << 30, processes=32, open_files=128, output_bytes=16_000_000)
"""One answer is small; the session's channel carries all of a notebook's answers, capped as a whole."""


def _package_files() -> dict[str, bytes]:
    """The whole package, for notebook 05's answer cells (they use the chapter; what they can reach decides nothing)."""
    package = Path(codeagent_lite.__file__).resolve().parent
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
    total: float | None = None,
) -> SandboxSession:
    """A session with ``outside_child`` loaded with ``config``: the whole package (05) or the Kernel types only (07)."""
    files = {"outside_child.py": (_HERE / "outside_child.py").read_bytes()}
    files.update(_package_files() if full_package else {})
    files.update(_folder_files(folder) if folder is not None else {})
    payload = dict(config, language=language, folder="my_json_text")
    limits = dataclasses.replace(_CHILD_LIMITS, seconds=deadline)
    kernel_types = not full_package
    return SandboxSession(
        _CHILD, payload=payload, files=files, limits=limits, kernel_types=kernel_types, total_seconds=total
    )


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outside judge's word on one graded cell: passed or not, and the text the feedback shows (escaped here,
    the one door: the student's code speaks in it, an exception's message or its class's name)."""

    passed: bool
    text: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", printable(self.text))


CLASSES = classes_of(
    kernel_types, model_adapter, json_text_adapter, reference_messages, scripted_provider, exercise_checks
)
"""What the child's answers may be decoded into: the package's value types and exercise 1's new item."""


def encode(value: object) -> Any:
    """A value for the child, whole (the grader's texts must arrive as they are)."""
    return wire_encode(value, caps=GRADER_CAPS)


class JudgeStopped(RuntimeError):
    """The learner's child broke off (a hang, a crash, garbage): every later call says so."""


def _ask(child: SandboxSession, request: Mapping[str, Any]) -> dict[str, Any]:
    """The child's reply to one request, which must at least be a JSON object."""
    try:
        reply = child.ask(request)
    except SandboxStopped as stopped:
        raise JudgeStopped(_("the sandboxed run of your code stopped: {stopped}", stopped=stopped)) from None
    if type(reply) is not dict:
        raise JudgeStopped(_("the sandboxed run of your code sent something that is not an answer"))
    return reply


def _returned(reply: Mapping[str, Any]) -> Any:
    """The value a reply says was returned, decoded; the exception it says was raised is raised here."""
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


def _answer(child: SandboxSession, request: Mapping[str, Any]) -> Any:
    return _returned(_ask(child, request))


def _language(language: str) -> Any:
    """The edition's language for the words the checks say, while it lasts (they read ``CAL_LANG``)."""
    return mock.patch.dict(os.environ, {"CAL_LANG": language})


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
        replies = [encode(reply) for reply in self._provider._replies]
        request = {"op": "adapter", "target": self._name, "replies": replies, "args": [encode(arg) for arg in args]}
        reply = _ask(self._child, request)
        try:  # what the provider was asked: the check compares it with the history and budget it gave
            calls = decode(reply.get("calls", []), CLASSES)
        except (WireError, ValueError, TypeError, RecursionError):
            calls = []
        calls = calls if isinstance(calls, list) else []
        self._provider.calls.extend(call for call in calls if isinstance(call, scripted_provider.ProviderCall))
        return _returned(reply)


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


def _checked(number: int, names: Mapping[str, Any], **cases: Any) -> Verdict:
    """Exercise ``number``'s self-check, the learner's own, on the proxies (on ``cases`` instead of its own)."""
    with contextlib.redirect_stdout(io.StringIO()):
        result = exercise_checks.check_exercise(number, names, **cases)
    return Verdict(result.passed, result.summary())


def _problem(verdict: Verdict) -> str | None:
    return None if verdict.passed else verdict.text


def _hidden(number: int, check: Verdict, problem: Callable[[], str | None]) -> Verdict:
    """A hidden cell: its self-check first (a point the self-check denies is not given back), then ``problem``."""
    if not check.passed:
        return Verdict(False, _("the self-check for exercise {number} does not pass", number=number))
    found = _guarded_problem(problem)
    return Verdict(found is None, found or _("✔ exercise {number}: the hidden tests pass", number=number))


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


_ONE_LAYER_REPLIES = (
    "Sure, here it is: {}",
    "null",
    '{"type": "answer", "content": "42"}',
    '{"type": "final_answer", "content": 42}',
)
"""One rejection per layer: a correction that names every layer names a wrong one for three of them."""


def _fresh_cases(rng: random.Random) -> dict[int, dict[str, Any]]:
    """Inputs for the exercises' own checks that no learner has seen: a copy of the self-check's answers fails
    them (1, 2: other values; 4: other token counts; 5: other rejections, one per layer)."""
    item = ToolCallRejected(f"call_{rng.randrange(10**6)}", _fresh_text(rng).strip() or "t", _fresh_text(rng) + "x")
    values = [_fresh_value(rng) for _ in range(6)] + [{"type": _fresh_text(rng)}, [_fresh_text(rng)]]
    drawn = N_("a value drawn for this run")
    rejections = (
        json.dumps([_fresh_text(rng)]),
        json.dumps({"type": _fresh_text(rng) + "_x", "content": "a"}),
        json.dumps({"type": "final_answer", "content": rng.randint(0, 99)}),
    )
    return {
        1: {"sample": {_fresh_text(rng): _fresh_value(rng) for _ in range(3)}, "items": (item,)},
        2: {
            "objects": [value for value in values if isinstance(value, dict)],
            "not_objects": [(drawn, value) for value in values if not isinstance(value, dict)],
        },
        4: {"reply": '{"type": "final_answer"}', "usage": TokenUsage(rng.randint(10, 999), rng.randint(1, 99))},
        5: {"cases": (*_ONE_LAYER_REPLIES, *rejections)},
    }


EXERCISE_SECONDS = 60.0
"""One exercise's grading, all its requests together (each has 10 s): the teacher's answers take well under one."""


def judge_exercises(sources: Sequence[str], *, language: str = "en", seed: int | None = None) -> dict[str, Verdict]:
    """Notebook 05's graded cells, by grade_id, for answer cells whose source is ``sources`` (in notebook order).

    A check cell is the exercise's self-check, then (1, 2) the same check on fresh cases; a hidden cell is its
    self-check, then its trap: the same check on fresh cases (4, 5), computed predictions (3), layer 2 handed to
    the package (2)."""
    fresh = _fresh_cases(random.Random(seed if seed is not None else random.SystemRandom().randrange(2**63)))
    config = {"mode": "answers", "sources": list(sources)}
    verdicts: dict[str, Verdict] = {}
    with _language(language):
        for number in range(1, 6):  # a child each: one exercise's hang or crash costs no other its points
            with sandboxed(config, full_package=True, language=language, total=EXERCISE_SECONDS) as child:
                verdicts.update(_exercise_verdicts(number, _namespace(child), fresh.get(number, {}), sources))
        verdicts["exercise_2_hidden"] = _hidden(
            2, verdicts["exercise_2_check"], lambda: _exercise_2_hidden(sources, language)
        )
    return verdicts


def _exercise_verdicts(
    number: int, names: Mapping[str, Any], fresh: Mapping[str, Any], sources: Sequence[str]
) -> dict[str, Verdict]:
    """Exercise ``number``'s check cell (1, 2: again on fresh cases once it passes) and hidden cell (3, 4, 5)."""
    check = _checked(number, names)
    if number in (1, 2) and check.passed:
        check = _checked(number, names, **fresh)
    verdicts = {f"exercise_{number}_check": check}
    if number == 3:
        predictions = names.get("predictions", {})
        verdicts["exercise_3_hidden"] = _hidden(3, check, lambda: computed_predictions_problem(predictions, sources))
    elif number in (4, 5):
        verdicts[f"exercise_{number}_hidden"] = _hidden(
            number, check, lambda: _problem(_checked(number, names, **fresh))
        )
    return verdicts


def _exercise_2_hidden(sources: Sequence[str], language: str) -> str | None:
    """Trap: layer 2 handed to the package. The same self-check again, in a child where the package's layer 2
    lets everything through: a check that relies on it (directly, or through the parser) fails there."""
    sabotage = ["codeagent_lite.json_action_parser:check_top_level_object"]
    config = {"mode": "answers", "sources": list(sources), "sabotage": sabotage}
    with sandboxed(config, full_package=True, language=language, total=EXERCISE_SECONDS) as child:
        if _checked(2, _namespace(child)).passed:
            return None
    return _(
        "exercise 2 calls the package's check_top_level_object (directly or through its parser) "
        "instead of doing the check itself"
    )


def _guarded_problem(run: Callable[[], str | None]) -> str | None:
    """``run``'s problem, or the error that stopped it as one: a judge failure is a ✘, never a crash of grading."""
    try:
        return run()
    except Exception as error:
        return f"{type(error).__name__}: {shorten(str(error), 200)}"


# --------------------------------------------------------------------------- notebook 07: the learner's folder

STEP_FILES = {1: "json_text_messages", 2: "json_text_adapter", 3: "json_action_parser", 4: "json_action_parser"}
"""The file each step grades: its own-work check is about this file."""
_BUILD, _PARSE = "json_text_messages.build_provider_messages", "json_action_parser.parse_json_action"

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
    parse = _RemoteFunction(child, _PARSE)
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
    build = _RemoteFunction(child, _BUILD)
    for history in (HIDDEN_HISTORY, fresh):
        mine = build(list(history))
        wanted = [(item.role, item.content) for item in reference_messages.build_provider_messages(list(history))]
        if not isinstance(mine, list | tuple) or len(mine) != len(wanted):
            return _("build_provider_messages returned {value}", value=shorten(repr(mine), 120))
        got = [(getattr(item, "role", None), getattr(item, "content", None)) for item in mine]
        for number, (pair, reference) in enumerate(zip(got, wanted, strict=True), start=1):
            if pair != reference:
                mine_words, reference_words = shorten(repr(pair), 160), repr(reference)
                return _(
                    "history item {number}: {got} instead of the reference's {wanted}",
                    number=number,
                    got=mine_words,
                    wanted=reference_words,
                )
    return None


def _raised(run: Callable[[], object]) -> BaseException | None:
    """What ``run`` raised (None: it returned); a child that stopped stops the judging of the step instead."""
    try:
        run()
    except JudgeStopped:
        raise
    except Exception as error:
        return error
    return None


def _lent_adapter(child: SandboxSession, error: BaseException, usage: list[int]) -> BaseException | None:
    """What the learner's adapter raises when the parser it is lent raises ``error`` (None: it returned)."""
    return _raised(lambda: _answer(child, {"op": "lent_adapter", "error": encode(error), "usage": usage}))


def _adapter_problem(child: SandboxSession, rng: random.Random) -> str | None:
    """Step 2's traps, with stand-ins lent for the learner's other two files: fresh usage kept, only the parser's
    refusal caught. (The cause and expected/found are not graded here: step 2's visible checks do not check them.)"""
    usage = [rng.randint(10, 999), rng.randint(1, 99)]
    expected, found, message = _fresh_text(rng) + "e", _fresh_text(rng) + "f", "refused " + _fresh_text(rng)
    refusal = InvalidModelOutputError(message, layer=ValidationLayer.TOP_LEVEL_OBJECT, expected=expected, found=found)
    raised = _lent_adapter(child, refusal, usage)
    if raised is None:
        return _("a reply the parser refused came back as an action")
    if not isinstance(raised, InvalidModelOutputError):
        name, error = type(raised).__name__, shorten(str(raised), 120)
        return _("a reply the parser refused came out as {name}: {error}", name=name, error=error)
    if raised.usage != TokenUsage(*usage):
        tokens = repr(TokenUsage(*usage))
        return _("the error carries usage={usage}, not {tokens}", usage=repr(raised.usage), tokens=tokens)
    bug = _lent_adapter(child, KeyError(_fresh_text(rng)), usage)
    if bug is None:
        return _("a parser that raised KeyError gave an answer")
    if not isinstance(bug, KeyError):
        return _(
            "a KeyError inside the parser came out as {name}: catch only"
            " InvalidModelOutputError around the parser (and ProviderError around the provider)",
            name=type(bug).__name__,
        )
    return None


def _own_work_problem(child: SandboxSession, folder: Path, step: int, file: str) -> str | None:
    """Own work: the file is there, imports nothing of the package's chapter, loads where only the previous chapter
    exists (step 2's siblings lent as stand-ins) and is no longer the stub on the hidden inputs."""
    if not (folder / f"{file}.py").is_file():
        return _("there is no {file}.py", file=file)
    used = chapter_imports(folder, file)
    if used:
        return _("{file}.py uses the package's {modules}: write it yourself", file=file, modules=", ".join(used))
    try:
        if step != 2:
            _answer(child, {"op": "load", "target": file})
        raised = _stub_probe(child, step)
    except Exception as error:
        return _load_words(file, error)
    if isinstance(raised, NotImplementedError):
        return _("{file}.py still raises NotImplementedError (the stub)", file=file)
    return _load_words(file, raised) if isinstance(raised, ImportError | SyntaxError) else None


def _stub_probe(child: SandboxSession, step: int) -> BaseException | None:
    """What the step's function raises on a hidden input (loading its file first): the stub's NotImplementedError,
    a load error, or whatever the learner's code raises, which is for the checks to judge (None: it returned)."""
    if step == 2:
        return _lent_adapter(child, KeyError("load"), [1, 1])
    if step == 1:
        return _raised(lambda: _RemoteFunction(child, _BUILD)(list(HIDDEN_HISTORY)))
    return _raised(lambda: _RemoteFunction(child, _PARSE)(BLOG_REPLIES[0]))


def _load_words(file: str, error: BaseException) -> str:
    if isinstance(error, ModuleNotFoundError) and "codeagent_lite" in str(error):
        return _(
            "{file}.py imports the reference one ({error}); "
            "only codeagent_lite.kernel_types and codeagent_lite.model_adapter are there to use",
            file=file,
            error=error,
        )
    name, text = type(error).__name__, shorten(str(error), 160)
    return _("{file}.py cannot be loaded: {name}: {error}", file=file, name=name, error=text)


def _verify_steps(folder: Path, seed: int) -> dict[int, StepCheck]:
    """verify's checks on the learner's folder, with cases drawn from ``seed``, by step.

    Run here, in the teacher's process: verify runs the learner's files in its own sandbox and judges outside it
    (inside another sandbox it would fall back to a weaker one). All steps in one run, each step's part reported;
    step 2 in a run of its own that judges the adapter alone (``_adapter_alone``).
    """
    with contextlib.redirect_stdout(io.StringIO()):
        report = verify(folder, seed=seed)
        alone = _adapter_alone(folder, seed)
    return {step: step_part(alone if step == 2 else report, step) for step in STEP_FILES}


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
        for file in sorted(set(STEP_FILES.values())):
            original = folder / f"{file}.py"
            if not original.is_file():
                continue
            if original.is_symlink() or (file != "json_text_adapter" and _uses_chapter(folder, file)):
                (copy / original.name).write_text(_STAND_IN, encoding="utf-8")
            else:
                shutil.copyfile(original, copy / original.name)
        return verify(copy, step=2, seed=seed)


def judge_build(folder: Path, *, language: str = "en", seed: int | None = None) -> dict[str, Verdict]:
    """Notebook 07's graded cells, by grade_id, for the learner's folder ``folder`` (a submission's my_json_text)."""
    seed = seed if seed is not None else random.SystemRandom().randrange(2**63)
    rng = random.Random(seed)
    verdicts: dict[str, Verdict] = {}
    with _language(language):
        try:
            checks = _verify_steps(folder, seed)
        except Exception as error:  # a folder verify cannot read is a ✘ for every step, never a crash of grading
            failed = Verdict(False, _("verify could not run: {name}: {error}", name=type(error).__name__, error=error))
            return {f"step_{step}_{kind}": failed for step in STEP_FILES for kind in ("check", "hidden")}
        for step, file in STEP_FILES.items():
            verdicts.update(_judge_step(folder, step, file, language, checks[step], rng))
    return verdicts


def _judge_step(
    folder: Path, step: int, file: str, language: str, verified: StepCheck, rng: random.Random
) -> dict[str, Verdict]:
    check_id, hidden_id = f"step_{step}_check", f"step_{step}_hidden"
    report = shorten(printable(str(verified)), 20_000)  # the learner's files speak in it: untrusted text
    with sandboxed({"mode": "folder"}, full_package=False, folder=folder, language=language) as child:
        own = _guarded_problem(lambda: _own_work_problem(child, folder, step, file))
        if own is not None:
            failed = Verdict(False, _("✘ step {step} scores 0: {problem}", step=step, problem=own))
            # A report with passes in it is not the learner's own work: shown beside 0 points it would mislead.
            shown = failed.text if "✔" in report else f"{report}\n{failed.text}"
            return {check_id: Verdict(False, shown), hidden_id: failed}
        if not verified.passed:
            hidden = Verdict(False, _("the checks of step {step} do not pass yet", step=step))
            return {check_id: Verdict(False, report), hidden_id: hidden}
        problem = _guarded_problem(lambda: _step_hidden(child, step, rng))
    passed = _("✔ step {step}: the hidden tests pass", step=step)
    return {check_id: Verdict(True, report), hidden_id: Verdict(problem is None, problem or passed)}


def _step_hidden(child: SandboxSession, step: int, rng: random.Random) -> str | None:
    if step == 1:
        return _messages_problem(child, rng)
    if step == 2:
        return _adapter_problem(child, rng)
    if step == 3:
        return _parser_problem(child, [*BLOG_REPLIES, *_fresh_replies(rng, strict=False)])
    return _parser_problem(child, [*STRICT_REPLIES, *_fresh_replies(rng, strict=True)])
