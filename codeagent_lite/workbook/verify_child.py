"""verify's side of one sandbox session: hand out each step's probes, answer the stand-ins, judge what comes back.

The child (``verify_probe``) knows a probe by its place only, and gets a step's probes after a fence (every other
process of the run killed), so nothing one step forked sees the next. Each verdict is drawn here, from checked data.
One session serves all steps: a hang costs one time limit and the rest of its step; a dead child is replaced.
"""

from __future__ import annotations

import errno
import importlib.util
import keyword
import os
import random
import stat
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

from ..display import error_reason, printable, shorten
from . import sandbox
from .contract import FILES, LOOK_ALIKE, Check, Judge, Mismatch, Probe, Raised
from .verify_probe import MAX_TEXT, package_module
from .verify_standins import StandIns, child_probe, refusal
from .words import N_, _

__all__ = ["MAX_FILE_BYTES", "CheckResult", "Item", "Tally", "clean", "learner_files", "load_package", "not_run"]
__all__ += ["run_step"]

_MAX_PRINTED = 80
MAX_FILE_BYTES = 2 * 2**20  # a learner's file; the chapter's largest is 10 KB
_RESTARTS = 2
# Per process, and how many: their product (8 GiB) bounds what one verify may take of a classroom's machine.
_MEMORY_BYTES = 512 * 2**20
_PROCESSES = 16
_STARTUP_SECONDS = 30.0  # the sandbox starts in a few tens of ms; this is for a machine under load
_PROGRAM = "import verify_probe\nverify_probe.main()\n"
_PROBE_SOURCE = Path(__file__).with_name("verify_probe.py")
_RESERVED = sys.stdlib_module_names | {"codeagent_lite", "verify_probe", "sandbox_io", "solutions", "__main__"}


def clean(text: str, *, limit: int = 400) -> str:
    """One safe line: ``display.printable``, its newlines and tabs escaped too, cut to ``limit``."""
    return shorten(printable(text[: limit * 2]).replace("\n", "\\n").replace("\t", "\\x09"), limit)


def describe_error(error: dict[str, Any]) -> str:
    """What a learner reads when their code raised; an unfinished or runaway step's errors say what to do."""
    place, syntax, mro = _place(error.get("place")), error.get("syntax"), error.get("mro") or []
    if isinstance(syntax, list) and len(syntax) == 3:
        return _("a syntax error in {file} line {line}: {message}", file=syntax[0], line=syntax[1], message=syntax[2])
    if "builtins.NotImplementedError" in mro:
        return _("nothing yet: it is not written (NotImplementedError{place})", place=place)
    if "builtins.SystemExit" in mro:
        code = str(error.get("exit_code", ""))
        return _("SystemExit({code}) raised{place}: library code must never end the program", code=code, place=place)
    if "builtins.RecursionError" in mro:
        return _("RecursionError{place}: the code recursed too deep", place=place)
    name, module, message = str(error.get("type", "?")), str(error.get("module", "")), str(error.get("message", ""))
    if name == "InvalidModelOutputError" and module != "codeagent_lite.model_adapter":
        return _(
            "an InvalidModelOutputError of its own (from {module}), not the Kernel's: "
            "import it from codeagent_lite.model_adapter",
            module=module,
        )
    return f"{name}: {message}{place}" if message else f"{name}{place}"


def _place(place: object) -> str:
    """Where the error was raised, as the learner's file and line; "" when the probe sent no such place."""
    if not isinstance(place, list) or len(place) != 2:
        return ""
    return _(" in {file} line {line}", file=clean(str(place[0]), limit=60), line=clean(str(place[1]), limit=10))


@dataclass(frozen=True, slots=True)
class Item:
    """One thing to run in the sandbox: a check (``judge`` raises ``Mismatch``) or a sample (``describe``)."""

    id: str
    file: str
    probe: Probe
    judge: Judge | None = None
    describe: Callable[[dict[str, Any]], str] | None = None
    group: int = 0
    """The step: a hang stops the rest of its own step, and a fresh session runs the later steps."""
    secret: str = ""
    """The run's nonce (``Inputs.nonce``): taken out of what a learner is shown, so reports read the same."""
    check: Check | None = None


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One item's verdict (a sample's has ``shown`` and ``result``, its probe's facts); ``passed`` None: not run."""

    of_check: Check | None
    passed: bool | None
    got: str = ""
    expected: str | None = None
    notes: tuple[str, ...] = ()
    shown: str = ""
    result: dict[str, Any] | None = None

    @property
    def check(self) -> Check:
        assert self.of_check is not None, "a sample's verdict is no check's"
        return self.of_check

    @property
    def sentence(self) -> str:
        """Given, expected, got: one sentence a learner can act on (empty when the check passed)."""
        if self.passed:
            return ""
        if self.passed is None:
            return not_run(self.got, self.check.file)
        words = self.check.words()
        expected = self.expected or words.expected
        return _("given {given}, expected {expected}, got {got}.", given=words.given, expected=expected, got=self.got)


@dataclass(frozen=True, slots=True)
class Tally:
    """Verdicts by item id, whole files' problems and notes, and for each session whether it had a cgroup."""

    outcomes: dict[str, CheckResult] = field(default_factory=dict)
    file_problems: dict[str, str] = field(default_factory=dict)
    file_notes: dict[str, str] = field(default_factory=dict)
    capped: list[bool] = field(default_factory=list)


def package_name(folder: str, taken: Callable[[str], bool] = lambda name: False) -> str:
    """The learner's folder name when it shadows nothing (its absolute self-imports then work), else an alias."""
    if folder.isidentifier() and not keyword.iskeyword(folder) and folder not in _RESERVED and not taken(folder):
        return folder
    return "_verified_" + "".join(char if char.isalnum() else "_" for char in folder)


def load_package(directory: Path) -> str:
    """Register ``directory`` as a package here, its ``__init__`` not run: notebook 07's in-kernel checks only."""
    existing = sys.modules.get(directory.name)
    if existing is not None and any(Path(p).resolve() == directory for p in getattr(existing, "__path__", [])):
        return directory.name
    name = package_name(directory.name, lambda name: name in sys.modules or importlib.util.find_spec(name) is not None)
    sys.modules[name] = package_module(name, str(directory))
    return name


def learner_files(folder: Path, package: str, problems: dict[str, str] | None = None) -> dict[str, bytes]:
    """Copies of the learner's three files (and ``__init__.py``, never run) and the probe program.

    Only regular files of the folder itself: the read has the teacher's rights, so a symbolic link, a FIFO, a device
    or a file over the cap is refused, never followed or waited on; why goes to ``problems`` (file -> sentence)."""
    files = {"verify_probe.py": _PROBE_SOURCE.read_bytes()}
    try:
        directory, reason = os.open(folder, os.O_RDONLY | os.O_DIRECTORY), ""
    except OSError as error:
        directory, reason = -1, _os_reason(error)
    try:
        for name in (*FILES, "__init__"):
            content = _read_regular(directory, f"{name}.py") if directory >= 0 else reason
            if isinstance(content, bytes):
                files[f"{package}/{name}.py"] = content
            elif content and problems is not None and name in FILES:
                problems[name] = _(
                    "{file}.py was not read: {why}; verify reads only your own regular files", file=name, why=content
                )
    finally:
        if directory >= 0:
            os.close(directory)
    files.setdefault(f"{package}/__init__.py", b"")
    return files


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


def _read_regular(directory: int, name: str) -> bytes | str:
    """The file's bytes, or why it was refused ("" when it does not exist: the child says it is missing)."""
    try:
        descriptor = os.open(name, _READ_FLAGS, dir_fd=directory)
    except FileNotFoundError:
        return ""
    except OSError as error:
        return _os_reason(error)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return _("it is not a regular file")
        content = os.read(descriptor, MAX_FILE_BYTES + 1)
        if len(content) > MAX_FILE_BYTES:
            return _("it is larger than {limit} MB", limit=MAX_FILE_BYTES // 2**20)
        return content
    except OSError as error:
        return _os_reason(error)
    finally:
        os.close(descriptor)


def _os_reason(error: OSError) -> str:
    """A refused file in words: a symbolic link is said as such (O_NOFOLLOW gives ELOOP), else the OS's reason."""
    if error.errno == errno.ELOOP:
        return _("it is a symbolic link")
    return clean(error_reason(error), limit=80)


def run_step(
    folder: Path,
    label: str,
    items: Sequence[Item],
    time_limit: float,
    tally: Tally,
    on_event: Callable[[str], None] | None = None,
    seed: int | None = None,
) -> None:
    """Run ``items`` in a sandbox session (a fresh one after a crash or hang), verdicts to ``tally``; with ``seed``
    each step's probes are shuffled, so not even a place tells which check it is."""
    package = package_name(folder.name)
    files = learner_files(folder, package, tally.file_problems)
    remaining = list(items) if seed is None else _shuffled(items, seed)
    crashes: Counter[int] = Counter()
    while remaining:  # a session judges one item at least, or ends in a crash its step has a budget for
        remaining, crashed = _session(files, package, label, remaining, time_limit, tally, on_event)
        if crashed is not None:
            crashes[crashed] += 1
            remaining = _within_restarts(tally, remaining, crashed, crashes[crashed])


def _shuffled(items: Sequence[Item], seed: int) -> list[Item]:
    steps = [[item for item in items if item.group == group] for group in dict.fromkeys(item.group for item in items)]
    draw = random.Random(f"verify-order-{seed}")
    for step in steps:
        draw.shuffle(step)
    return [item for step in steps for item in step]


def _within_restarts(tally: Tally, remaining: list[Item], crashed: int, crashes: int) -> list[Item]:
    """A step's restarts are its own: past them its rest is not run, and one crashing function costs no other step."""
    if crashes <= _RESTARTS:
        return remaining
    reason = _("this step stopped: the checking process crashed {count} times", count=crashes)
    _not_run(tally, [item for item in remaining if item.group == crashed], reason)
    return [item for item in remaining if item.group != crashed]


def _not_run(tally: Tally, items: Sequence[Item], reason: str = "") -> None:
    """Items without a verdict yet: not run, for ``reason`` (by default that the child stopped answering)."""
    reason = reason or _("verify stopped: {reason}", reason=_("the checking process stopped answering"))
    for item in items:
        tally.outcomes.setdefault(item.id, CheckResult(item.check, None, got=reason))


@dataclass
class _Session:
    label: str
    by_id: dict[str, Item]
    tally: Tally
    time_limit: float
    keys: dict[str, str]
    """The keys the child holds now (the current step's places, ``load:<file>``) -> ours: the only ones that count."""
    steps: list[list[tuple[str, Item]]]
    """The steps not handed out yet, each as (place, item): one step's probes per request of the child."""
    stand_ins: dict[str, StandIns]
    """Step 2's stand-ins by check id: what the parent answered and saw (the judges read these, not the child)."""
    running: str | None = None
    loads: dict[str, bool] = field(default_factory=dict)  # file -> loaded
    started: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)
    step: int | None = None
    step_started: float = 0.0
    handed: int = 0


def _session(
    files: dict[str, bytes],
    package: str,
    label: str,
    items: Sequence[Item],
    time_limit: float,
    tally: Tally,
    on_event: Callable[[str], None] | None,
) -> tuple[list[Item], int | None]:
    places = [(str(place), item) for place, item in enumerate(items)]
    steps = [list(step) for _group, step in groupby(places, key=lambda pair: pair[1].group)]
    stand_ins = {item.id: StandIns(v) for item in items if isinstance(v := item.probe.get("stand_ins"), dict)}
    keys = {f"load:{file}": f"load:{file}" for file in FILES}  # a step's places join when it is handed out
    state = _Session(label, {item.id: item for item in items}, tally, time_limit, keys, steps, stand_ins)
    state.step, state.step_started = items[0].group, time.monotonic()  # a session has an item at least
    seconds = _STARTUP_SECONDS + time_limit * (len(items) + len(FILES))
    limits = sandbox.Limits(seconds, memory_bytes=_MEMORY_BYTES, processes=_PROCESSES, output_bytes=8_000_000)

    def on_part(part: object) -> bool | sandbox.Answer:
        answer = _answer(state, part)
        if answer is not None:
            return answer
        advanced = _take(state, part)
        if on_event is not None and state.running is not None:
            on_event(state.running)
        return advanced

    outcome = sandbox.run_in_sandbox(
        _PROGRAM,
        payload={"package": package},
        files=files,
        limits=limits,
        part_seconds=time_limit,
        on_part=on_part,
        answers=True,
    )
    tally.capped.append(outcome.capped)
    if outcome.status == "ok":
        _not_run(tally, items)
        return [], None
    return _after_stop(state, items, outcome, time_limit)


def _answer(state: _Session, part: object) -> sandbox.Answer | None:
    """A request of the child (the next step's probes, a stand-in's call for the check running now), else None."""
    if not isinstance(part, dict):
        return None
    if part.get("next") is True:
        return _next_step(state)
    if "call" not in part:
        return None
    stand_ins = state.stand_ins.get(state.running or "")
    # No progress: the time limit is the check's as a whole, however often it calls the stand-ins.
    return sandbox.Answer(refusal(part.get("call")) if stand_ins is None else stand_ins.answer(part), progress=False)


def _next_step(state: _Session) -> sandbox.Answer:
    """The next step's probes, fenced (but the first): only the keys of the step handed out count from now."""
    if not state.steps:
        return sandbox.Answer({"probes": []}, progress=False)
    step = state.steps.pop(0)
    state.keys = {key: ours for key, ours in state.keys.items() if key.startswith("load:")}
    state.keys.update((place, item.id) for place, item in step)
    state.running = None
    probes = [{"id": place, "file": item.file, "probe": child_probe(item.probe)} for place, item in step]
    state.handed += 1
    return sandbox.Answer({"probes": probes}, fence=state.handed > 1)


def _take(state: _Session, part: object) -> bool:
    """One event from the child; progress only when a key we sent starts or is answered, once each."""
    if not isinstance(part, dict):
        return False
    started, key = state.keys.get(_key(part.get("start"))), state.keys.get(_key(part.get("done")))
    if started is not None and started not in state.started:
        state.started.add(started)
        state.running = started
        return _within_budget(state, started)
    if key is None or key in state.answered:
        return False
    state.answered.add(key)
    state.running = None
    if key.startswith("load:"):
        _record_load(state, key.removeprefix("load:"), _checked(part, _LOAD))
    elif key not in state.tally.outcomes:
        state.tally.outcomes[key] = _verdict(state.by_id[key], _with_facts(state, key, part))
    return _within_budget(state, key)


def _key(sent: object) -> str:
    return sent if isinstance(sent, str) else ""  # "" matches no key; a list would not even be looked up


def _with_facts(state: _Session, key: str, part: dict[str, Any]) -> dict[str, Any] | None:
    """The child's answer, checked, with what the parent saw of step 2's stand-ins in place of its claims."""
    checked = _checked(part, _CHECK)
    stand_ins = state.stand_ins.get(key)
    if stand_ins is not None and checked is not None and isinstance(checked.get("result"), dict):
        checked["result"] = stand_ins.facts(checked["result"])
    return checked


def _within_budget(state: _Session, key: str) -> bool:
    """Whether the key's step is within one time limit per check and per file: past it nothing is progress."""
    item = state.by_id.get(key)
    step = item.group if item is not None else state.step
    if step != state.step:
        state.step, state.step_started = step, time.monotonic()
    checks = sum(1 for other in state.by_id.values() if other.group == step)
    return time.monotonic() - state.step_started <= state.time_limit * (checks + len(FILES))


def _record_load(state: _Session, file: str, part: dict[str, Any] | None) -> None:
    """What loading a file came to: missing, importing the reference, raising, or loaded (noted if it printed)."""
    problems = state.tally.file_problems
    if file in state.loads or file in problems:
        pass  # said already: a file loads once, and a hang's blame stands
    elif part is None:
        problems[file] = _(_NOT_LOADED, file=file, what=_(_MALFORMED, id=file + ".py"))
    elif part.get("missing"):
        problems[file] = _("{file}.py is missing from {label}", file=file, label=state.label)
    elif part.get("reference_imports"):
        problems[file] = _imports_reference(file, part["reference_imports"])
    elif part.get("error") is not None:
        problems[file] = _(_NOT_LOADED, file=file, what=clean(describe_error(part["error"])))
    elif part.get("printed", "").strip():
        state.tally.file_notes[file] = _printed_note(part["printed"], file)
    state.loads.setdefault(file, file not in problems)


def not_run(reason: str, file: str) -> str:
    """Why an item did not run: ``reason``, or else that its file did not load."""
    return _("not run: {reason}", reason=reason or _(_DID_NOT_LOAD, file=file))


_DID_NOT_LOAD = N_("{file}.py did not load")
_NOT_LOADED = N_("{file}.py could not be loaded: {what}")
_MALFORMED = N_("the checking process sent malformed data for {id}")
_WRONG_SHAPE = N_("the checking process answered with data of the wrong shape (was verify's channel tampered with?)")


def _imports_reference(file: str, attempts: list[Any]) -> str:
    return _(
        "your {file}.py imports the reference one ({name}): verify judges your own code, "
        "and the reference chapter is not there to import",
        file=file,
        name=clean(", ".join(str(name) for name in attempts[:3]), limit=120),
    )


def _printed_note(printed: str, file: str) -> str:
    return _(
        "{file}.py printed {printed} (verify ignores printed text)",
        file=file,
        printed=clean(repr(printed.strip()), limit=_MAX_PRINTED),
    )


def _verdict(item: Item, part: dict[str, Any] | None) -> CheckResult:
    """The judge's verdict on what came back (never the learner's code's); a judge's crash on bad data is a ✘."""
    if part is None:
        return CheckResult(item.check, False, got=_(_MALFORMED, id=item.id))
    if part.get("not_run"):
        return CheckResult(item.check, None, got=_(_DID_NOT_LOAD, file=item.file))
    result = part.get("result")
    if not isinstance(result, dict):
        return CheckResult(item.check, False, got=_(_WRONG_SHAPE))
    printed = result.get("printed")
    notes = (_printed_note(printed, item.file),) if isinstance(printed, str) and printed.strip() else ()
    attempts = result.get("reference_imports")
    if isinstance(attempts, list) and attempts:
        return CheckResult(item.check, False, got=_imports_reference(item.file, attempts), notes=notes)
    return _judged(item, result, notes)


def _judged(item: Item, result: dict[str, Any], notes: tuple[str, ...]) -> CheckResult:
    try:
        if item.describe is not None:
            return CheckResult(item.check, True, shown=clean(item.describe(result)), notes=notes, result=result)
        assert item.judge is not None
        item.judge(result)
    except Mismatch as mismatch:
        expected = None if mismatch.expected is None else _hidden(mismatch.expected, item.secret)
        return CheckResult(item.check, False, got=_hidden(mismatch.got, item.secret), expected=expected, notes=notes)
    except Raised as raised:
        described = clean(describe_error(raised.error))
        if "builtins.NotImplementedError" not in (raised.error.get("mro") or []):
            described = _("it raised {described}", described=described)
        if raised.look_alike is not None:
            described = _(LOOK_ALIKE, text=raised.look_alike, got=described)
        return CheckResult(item.check, False, got=_hidden(described, item.secret), notes=notes)
    except Exception:  # the child's data had the wrong shape: forged or broken, never a verdict
        return CheckResult(item.check, False, got=_(_WRONG_SHAPE), notes=notes)
    return CheckResult(item.check, True, notes=notes)


def _hidden(text: str, secret: str) -> str:
    """``text`` cleaned, the run's nonce taken out (it is no business of the learner's, and varies)."""
    return clean(text.replace(secret, ""))


def _after_stop(
    state: _Session, items: Sequence[Item], outcome: sandbox.ChildOutcome, time_limit: float
) -> tuple[list[Item], int | None]:
    """The session ended early: what was running gets the cause. Returns what a fresh session runs, and the step that
    crashed: after a crash every item left; after a hang or a broken channel the later steps (the stopped one's
    rest not run, said once)."""
    running, what = state.running, _blame(state, outcome, time_limit)
    left = [item for item in items if item.id not in state.tally.outcomes]
    if running is None:  # nothing of the learner's had started: the sandbox itself did not
        _not_run(state.tally, left, _("this step did not start: {what}", what=what))
        return [], None
    stopped = state.by_id[running].group if running in state.by_id else state.step  # a file's load stops its step
    if outcome.status == "crashed":
        return left, stopped
    reason = _("this step stopped at {id}: {what}", id=running.removeprefix("load:"), what=what)
    _not_run(state.tally, [item for item in left if item.group == stopped], reason)
    return [item for item in left if item.group != stopped], None


def _blame(state: _Session, outcome: sandbox.ChildOutcome, time_limit: float) -> str:
    """What stopped the session, said of what was running and of every check whose file did not load."""
    running, tally = state.running, state.tally
    what = _what_stopped(outcome, time_limit) if running is not None else clean(outcome.detail)
    if running is not None and running.startswith("load:"):
        file = running.removeprefix("load:")
        tally.file_problems[file] = _(_NOT_LOADED, file=file, what=what)
        state.loads[file] = False
    elif running in state.by_id:
        tally.outcomes[running] = CheckResult(state.by_id[running].check, False, got=what)
    for item in state.by_id.values():
        if state.loads.get(item.file) is False:
            tally.outcomes.setdefault(item.id, CheckResult(item.check, None, got=_(_DID_NOT_LOAD, file=item.file)))
    return what


def _what_stopped(outcome: sandbox.ChildOutcome, time_limit: float) -> str:
    if outcome.status == "timeout":
        return _(
            "no answer within {limit} s (an endless loop, or input() waiting?); it was stopped",
            limit=format(time_limit, "g"),
        )
    if outcome.status == "crashed":
        return _("{died} (os._exit, a crash, or the process was killed) while running this", died=clean(outcome.detail))
    return _("the checking process broke its channel ({detail}); it was stopped", detail=clean(outcome.detail))


# --------------------------------------------------------------------------- the child's messages, checked
# Learner code can write to the channel: one field of the wrong shape makes the whole message malformed (one ✘,
# never an exception). Text shown is cleaned where it enters; the judges' facts stay data, read inside their try.

_NAME = 200
_NAMES = 64  # classes of an mro, reference imports: a few in practice

Field = Callable[[Any], Any]


class _Malformed(Exception):
    """A field of the wrong shape: the whole message is refused."""


def _of(kind: type, then: Field = lambda value: value) -> Field:
    def field(value: object) -> object:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise _Malformed
        return then(value)

    return field


def _text(limit: int) -> Field:
    return _of(str, lambda value: clean(value, limit=limit))


def _optional(check: Field) -> Field:
    return lambda value: None if value is None else check(value)


def _items(*checks: Field) -> Field:
    return _of(list, lambda value: [check(item) for check, item in zip(checks, value, strict=True)])


def _names(value: object) -> list[str]:
    if not isinstance(value, list) or len(value) > _NAMES:
        raise _Malformed
    return [_text(_NAME)(name) for name in value]


def _record(fields: Mapping[str, Field], required: tuple[str, ...] = ()) -> Field:
    """A dict whose known fields are each checked (and cleaned); the ones we do not know are dropped."""

    def field(value: object) -> dict[str, Any]:
        if not isinstance(value, dict) or any(name not in value for name in required):
            raise _Malformed
        return {name: check(value[name]) for name, check in fields.items() if name in value}

    return field


_ANY = _of(object)  # data the judges read inside their try
_ERROR = _record(
    {
        "type": _text(_NAME),
        "module": _text(_NAME),
        "mro": _names,
        "message": _text(MAX_TEXT),
        "place": _optional(_items(_text(60), _of(int))),
        "syntax": _items(_text(60), _optional(_of(int)), _text(_NAME)),
        "exit_code": _text(_NAME),
        "cause": _record({"type": _text(_NAME), "mro": _names}, ("type", "mro")),
        "cause_shown": _text(MAX_TEXT),
        **{name: _ANY for name in ("layer", "code", "usage", "expected", "found")},
    },
    ("type", "module", "mro", "message"),
)
_PRINTED = _of(str, lambda value: value[:200])  # kept as it is: the parent shows it with ``repr``, then cleans
_SHOWN: dict[str, Field] = {"error": _ERROR, "printed": _PRINTED, "reference_imports": _names, "shown": _text(MAX_TEXT)}


def _result(value: object) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise _Malformed
    return {key: _SHOWN.get(key, _ANY)(item) for key, item in value.items()}


_LOAD = _record({"missing": _of(bool), "error": _optional(_ERROR), "printed": _PRINTED, "reference_imports": _names})
_CHECK = _record({"not_run": _of(bool), "result": _result})


def _checked(part: Mapping[str, object], record: Field) -> dict[str, Any] | None:
    """A ``{"done": key, ...}`` message's fields, checked; None when one has the wrong shape."""
    try:
        checked: dict[str, Any] = record(part)
        return checked
    except (_Malformed, ValueError):  # ValueError: a list of another length than its fields
        return None
