"""verify's side of one sandbox session: send a step's probes, judge what comes back.

Why it exists: the learner's code must never run where its verdict is decided. So a step's
probes (plain inputs, from ``contract``) go to ``verify_probe.main`` running in
``sandbox.run_in_sandbox`` beside a copy of the learner's files, and every verdict is
drawn here, from the data that came back, by the check's judge. That data is untrusted:
each message is schema-checked first (``verify_wire``), and a judge that meets data of the
wrong shape gives a failed check, never a traceback. The child is told no check id: a probe is
known there by its place in this session's list, which only the parent maps back to its check.

One session for all the steps asked keeps verify fast (each costs a fresh interpreter). The
child asks for each step's probes when the last step is done, and the parent kills every other
process of the run before it answers (``sandbox.Answer(fence=True)``): nothing the learner's code
forked in one step lives on into the next, nor sees the next step's inputs. Step 2's stand-ins'
calls are answered and recorded here (``verify_standins``); the judges read that record.
A check that hangs costs one time limit: the session is killed, the rest of its step is "not
run", with the reason once, and a fresh session runs the later steps. A process that dies
(``os._exit``, a crash) is replaced by a fresh one for the checks left.
"""

from __future__ import annotations

import errno
import importlib.machinery
import importlib.util
import keyword
import os
import random
import stat
import sys
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import sandbox, verify_wire
from .contract import FILES, Judge, Mismatch, Probe, Raised
from .verify_standins import StandIns, child_probe, refusal
from .words import _

__all__ = ["Item", "Outcome", "Tally", "clean", "describe_error", "load_package", "package_name", "run_step"]

_MAX_CHARS = 400
_MAX_PRINTED = 80
_MAX_FILE_BYTES = 2 * 2**20
_RESTARTS = 2
# Per process, and how many: their product (8 GiB) bounds what one verify may take of a classroom's machine.
_MEMORY_BYTES = 512 * 2**20
_PROCESSES = 16
_STARTUP_SECONDS = 30.0  # the sandbox starts in a few tens of ms; this is for a machine under load
_PROGRAM = "import verify_probe\nverify_probe.main()\n"
_PROBE_SOURCE = Path(__file__).with_name("verify_probe.py")
_RESERVED = frozenset({"codeagent_lite", "verify_probe", "sandbox_io", "solutions", "__main__"})


def clean(text: str, *, limit: int = _MAX_CHARS) -> str:
    """One safe line: no control characters, no unbounded length."""
    return verify_wire.clean(text, limit=limit)


def describe_error(error: dict[str, Any]) -> str:
    """What a learner should read when their code raised instead of returning (from the probe's facts)."""
    place = _place(error.get("place"))
    syntax = error.get("syntax")
    if isinstance(syntax, list) and len(syntax) == 3:
        return _("a syntax error in {file} line {line}: {message}", file=syntax[0], line=syntax[1], message=syntax[2])
    special = _special_error(error.get("mro") or [], error, place)
    if special:
        return special
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


def _special_error(mro: list[Any], error: dict[str, Any], place: str) -> str:
    """The errors a learner meets while the step is unfinished or runs away get words of their own ("" else):
    a bare class name would not tell them what to do."""
    if "builtins.NotImplementedError" in mro:
        return _("nothing yet: it is not written (NotImplementedError{place})", place=place)
    if "builtins.SystemExit" in mro:
        return _(
            "SystemExit({code}) raised{place}: library code must never end the program",
            code=str(error.get("exit_code", "")),
            place=place,
        )
    if "builtins.RecursionError" in mro:
        return _("RecursionError{place}: the code recursed too deep", place=place)
    return ""


@dataclass(frozen=True, slots=True)
class Item:
    """One thing to run in the sandbox: a check (judge: raises ``Mismatch``) or a sample (describe: text)."""

    id: str
    file: str
    probe: Probe
    judge: Judge | None = None
    describe: Callable[[dict[str, Any]], str] | None = None
    group: int = 0
    """The step: a hang stops the rest of its own step, and a fresh session runs the later steps."""
    secret: str = ""
    """The run's nonce (``Inputs.nonce``): taken out of what a learner is shown, so reports read the same."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """The verdict on one item (``shown``: a sample's description)."""

    passed: bool | None
    got: str = ""
    expected: str | None = None
    notes: tuple[str, ...] = ()
    shown: str = ""
    result: dict[str, Any] | None = None
    """A sample's probe result as it came back (plain data), for a caller that needs facts, not the words."""


@dataclass(frozen=True, slots=True)
class Tally:
    """Verdicts by item id, and what went wrong with whole files (``<file>:printed`` for a note)."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)
    file_problems: dict[str, str] = field(default_factory=dict)


def package_name(folder_name: str) -> str:
    """The learner's folder name when it shadows nothing (absolute self-imports then work), else an alias."""
    if (
        folder_name.isidentifier()
        and not keyword.iskeyword(folder_name)
        and folder_name not in sys.stdlib_module_names
        and folder_name not in _RESERVED
    ):
        return folder_name
    return "_verified_" + "".join(char if char.isalnum() else "_" for char in folder_name)


def load_package(directory: Path) -> str:
    """Register ``directory`` as a package in *this* process, without running its ``__init__``; return its name.

    Not used by verify (which never imports learner code here); kept for notebook 07's in-kernel
    checks (``build_assignment.load_learner_file``), whose scores the classroom's grader re-decides
    in a sandbox. The folder's own name is used when that is safe, else an alias that shadows nothing.
    """
    name = directory.name
    existing = sys.modules.get(name)
    if existing is not None and any(Path(p).resolve() == directory for p in getattr(existing, "__path__", [])):
        return name
    if not _free_in_this_process(name, existing):
        name = "_verified_" + "".join(char if char.isalnum() else "_" for char in name)
    sys.modules[name] = _folder_package(name, directory)
    return name


def _free_in_this_process(name: str, existing: types.ModuleType | None) -> bool:
    """A name nothing here uses or could import: the folder may take it, so its absolute self-imports work."""
    return (
        name.isidentifier()
        and not keyword.iskeyword(name)
        and existing is None
        and name not in sys.stdlib_module_names
        and importlib.util.find_spec(name) is None
    )


def _folder_package(name: str, directory: Path) -> types.ModuleType:
    """A package module for the folder that has not run its ``__init__`` (each file is loaded on its own)."""
    package = types.ModuleType(name, f"the learner's folder {directory.name}")
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = [str(directory)]
    package.__spec__ = spec
    package.__path__ = [str(directory)]
    package.__package__ = name
    return package


def learner_files(folder: Path, package: str, problems: dict[str, str] | None = None) -> dict[str, bytes]:
    """Copies of the learner's three files (and ``__init__.py``, never run) and the probe program.

    Each is read as a regular file of the folder itself: a symbolic link (to ``/proc/self/environ``,
    the solutions), a FIFO or a device is refused, never followed or waited on, and so is a file over
    the size cap. Why: the read happens here, in the parent, with the teacher's rights. What was
    refused, and why, goes to ``problems`` (file name -> sentence); the child then says it is missing.
    """
    files = {"verify_probe.py": _PROBE_SOURCE.read_bytes()}
    try:
        directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as error:
        directory = -1
        reason = _os_reason(error)
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
        content = os.read(descriptor, _MAX_FILE_BYTES + 1)
        return (
            content
            if len(content) <= _MAX_FILE_BYTES
            else _("it is larger than {limit} MB", limit=_MAX_FILE_BYTES // 2**20)
        )
    except OSError as error:
        return _os_reason(error)
    finally:
        os.close(descriptor)


def _os_reason(error: OSError) -> str:
    """A refused file in words: a symbolic link is said as such (O_NOFOLLOW gives ELOOP), else the OS's reason."""
    if error.errno == errno.ELOOP:
        return _("it is a symbolic link")
    return clean(error.strerror or type(error).__name__, limit=80)


def run_step(
    folder: Path,
    label: str,
    items: Sequence[Item],
    time_limit: float,
    tally: Tally,
    on_event: Callable[[str], None] | None = None,
    seed: int | None = None,
) -> None:
    """Run ``items`` in one sandbox session (a fresh one after a crash); record every verdict in ``tally``.

    With ``seed`` (graded judging) each step's probes reach the child in an order drawn from it, so
    not even a probe's place tells the learner's code which check it is.
    """
    package = package_name(folder.name)
    files = learner_files(folder, package, tally.file_problems)
    remaining = _shuffled(items, seed)
    for _attempt in range(_RESTARTS + 1 + len({item.group for item in items})):
        if not remaining:
            return
        remaining = _session(files, package, label, remaining, time_limit, tally, on_event)
    for item in remaining:
        tally.outcomes.setdefault(
            item.id,
            Outcome(None, got=_("verify stopped: {reason}", reason=_("the checking process stopped answering"))),
        )


def _shuffled(items: Sequence[Item], seed: int | None) -> list[Item]:
    """The items step by step as given, each step's own in an order drawn from ``seed`` (as given for None)."""
    if seed is None:
        return list(items)
    draw = random.Random(f"verify-order-{seed}")
    steps: dict[int, list[Item]] = {}
    for item in items:
        steps.setdefault(item.group, []).append(item)
    for group in steps.values():
        draw.shuffle(group)
    return [item for group in steps.values() for item in group]


@dataclass
class _Session:
    label: str
    by_id: dict[str, Item]
    tally: Tally
    running: str | None = None
    loads: dict[str, bool] = field(default_factory=dict)  # file -> loaded
    started: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)
    keys: dict[str, str] = field(default_factory=dict)
    """The keys the child holds now (the current step's places, ``load:<file>``) -> ours: the only ones that count."""
    time_limit: float = 0.0
    step: int | None = None
    step_started: float | None = None
    steps: list[list[tuple[str, Item]]] = field(default_factory=list)
    """The steps not handed out yet, each as (place, item): one step's probes per request of the child."""
    handed: int = 0
    stand_ins: dict[str, StandIns] = field(default_factory=dict)
    """Step 2's stand-ins by check id: what the parent answered and saw (the judges read these, not the child)."""


def _session(
    files: dict[str, bytes],
    package: str,
    label: str,
    items: Sequence[Item],
    time_limit: float,
    tally: Tally,
    on_event: Callable[[str], None] | None,
) -> list[Item]:
    """One sandbox run; returns the items to try again in a fresh process (after a crash), else []."""
    # The child sees no check id: each probe is known there by its place in this session's list only.
    keys = {f"load:{file}": f"load:{file}" for file in FILES}  # a step's places join when it is handed out
    state = _Session(label, {item.id: item for item in items}, tally, keys=keys, time_limit=time_limit)
    state.step, state.step_started = items[0].group if items else None, time.monotonic()
    for place, item in enumerate(items):
        if not state.steps or state.steps[-1][0][1].group != item.group:
            state.steps.append([])
        state.steps[-1].append((str(place), item))
    payload = {"package": package}
    limits = sandbox.Limits(
        seconds=_STARTUP_SECONDS + time_limit * (len(items) + len(FILES)),
        memory_bytes=_MEMORY_BYTES,
        processes=_PROCESSES,
        output_bytes=8_000_000,
    )

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
        payload=payload,
        files=files,
        limits=limits,
        part_seconds=max(time_limit, 0.5),
        on_part=on_part,
        answers=True,
    )
    if outcome.status == "ok":
        _not_run_left(state, items, _("the checking process stopped answering"))
        return []
    return _after_stop(state, items, outcome, time_limit)


def _answer(state: _Session, part: object) -> sandbox.Answer | None:
    """A request of the child: the next step's probes (after a fence: nothing the last step's code left
    behind is alive when they arrive), or a stand-in's call, answered and recorded here. None: not a request."""
    if not isinstance(part, dict):
        return None
    if part.get("next") is True:
        return _next_step(state)
    if "call" not in part:
        return None
    item = state.by_id.get(state.running or "")
    values = item.probe.get("stand_ins") if item is not None else None
    if item is None or not isinstance(values, dict):
        return sandbox.Answer(refusal(part.get("call")), progress=False)
    stand_ins = state.stand_ins.setdefault(item.id, StandIns(values))
    return sandbox.Answer(stand_ins.answer(part), progress=_within_budget(state, item.id))


def _next_step(state: _Session) -> sandbox.Answer:
    """The next step's probes, after a fence. Only the step handed out now can start, answer or call:
    a key of a later step is not known yet, and one of an earlier step is known no more."""
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
    """One event from the child; True when it is progress (a key we sent started or answered, once).

    Anything not of our shape, or about a key we did not send or have seen already, is ignored
    and buys no time: the verdicts come only from the judges, and each key's clock starts once.
    """
    if not isinstance(part, dict):
        return False
    started, key = _ours(state, part.get("start")), _ours(state, part.get("done"))
    if started is not None and started not in state.started:
        state.started.add(started)
        state.running = started
        return _within_budget(state, started)
    if key is None or key in state.answered:
        return False
    state.answered.add(key)
    state.running = None
    if key.startswith("load:"):
        _record_load(state, key.removeprefix("load:"), verify_wire.checked_load(part))
    elif key not in state.tally.outcomes:
        state.tally.outcomes[key] = _verdict(state, state.by_id[key], _with_facts(state, key, part))
    return _within_budget(state, key)


def _with_facts(state: _Session, key: str, part: dict[str, Any]) -> dict[str, Any] | object:
    """The child's answer, checked, with what the parent saw of step 2's stand-ins in place of its claims."""
    checked = verify_wire.checked_check(part)
    stand_ins = state.stand_ins.get(key) or _unasked(state.by_id[key])
    if stand_ins is not None and isinstance(checked, dict) and isinstance(checked.get("result"), dict):
        checked["result"] = stand_ins.facts(checked["result"])
    return checked


def _unasked(item: Item) -> StandIns | None:
    """An adapter probe whose stand-ins were never called still gets the parent's (empty) record."""
    values = item.probe.get("stand_ins")
    return StandIns(values) if isinstance(values, dict) else None


def _ours(state: _Session, key: object) -> str | None:
    """The parent's key (a check id, ``load:<file>``) for a key the child sent; None for one it was never given."""
    return state.keys.get(key) if isinstance(key, str) else None


def _within_budget(state: _Session, key: str) -> bool:
    """Whether the key's step is still within its budget (one time limit per check and per file): past it,
    no event is progress, so the per-check clock runs out however many keys the child still sends."""
    item = state.by_id.get(key)
    step = item.group if item is not None else state.step
    if step != state.step or state.step_started is None:
        state.step, state.step_started = step, time.monotonic()
    checks = sum(1 for other in state.by_id.values() if other.group == step)
    return time.monotonic() - state.step_started <= state.time_limit * (checks + len(FILES))


def _record_load(state: _Session, file: str, part: dict[str, Any] | object) -> None:
    problems = state.tally.file_problems
    if file in state.loads or file in problems:
        state.loads.setdefault(file, file not in problems)
        return
    if not isinstance(part, dict):
        problems[file] = _("{file}.py could not be loaded: {what}", file=file, what=_malformed(f"{file}.py"))
    else:
        _load_problem(state, file, part)
    printed = part.get("printed") if isinstance(part, dict) else None
    if isinstance(printed, str) and printed.strip() and file not in problems:
        problems[file + ":printed"] = _printed_note(printed, file)
    state.loads[file] = file not in problems


def _malformed(key: str) -> str:
    return _("the checking process sent malformed data for {id}", id=key)


def _load_problem(state: _Session, file: str, part: dict[str, Any]) -> None:
    """What stopped the file loading, if anything: missing, an import of the reference, or what it raised."""
    problems = state.tally.file_problems
    attempts, error = part.get("reference_imports"), part.get("error")
    if part.get("missing"):
        problems[file] = _("{file}.py is missing from {label}", file=file, label=state.label)
    elif attempts:
        problems[file] = _imports_reference(file, attempts)
    elif error is not None:
        problems[file] = _("{file}.py could not be loaded: {what}", file=file, what=clean(describe_error(error)))


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


def _verdict(state: _Session, item: Item, part: dict[str, Any] | object) -> Outcome:
    """The judge's verdict on what came back: the learner's code never decides it."""
    if not isinstance(part, dict):
        return Outcome(False, got=_malformed(item.id))
    if part.get("not_run"):
        return Outcome(None, got=_("{file}.py did not load", file=item.file))
    result = part.get("result")
    if not isinstance(result, dict):
        return Outcome(
            False,
            got=_("the checking process answered with data of the wrong shape (was verify's channel tampered with?)"),
        )
    printed = result.get("printed")
    notes = (_printed_note(printed, item.file),) if isinstance(printed, str) and printed.strip() else ()
    attempts = result.get("reference_imports")
    if isinstance(attempts, list) and attempts:
        return Outcome(False, got=_imports_reference(item.file, attempts), notes=notes)
    return _judged(item, result, notes)


def _judged(item: Item, result: dict[str, Any], notes: tuple[str, ...]) -> Outcome:
    """The check's judge (or the sample's description) on the result; whatever it raises is a failed check."""
    try:
        if item.describe is not None:
            return Outcome(True, shown=clean(item.describe(result)), notes=notes, result=result)
        assert item.judge is not None
        item.judge(result)
    except Mismatch as mismatch:
        expected = None if mismatch.expected is None else _hidden(mismatch.expected, item.secret)
        return Outcome(False, got=_hidden(mismatch.got, item.secret), expected=expected, notes=notes)
    except Raised as raised:
        return Outcome(False, got=_hidden(_raised_got(raised.error), item.secret), notes=notes)
    except Exception:  # the child's data had the wrong shape: forged or broken, never a verdict
        return Outcome(
            False,
            got=_("the checking process answered with data of the wrong shape (was verify's channel tampered with?)"),
            notes=notes,
        )
    return Outcome(True, notes=notes)


def _hidden(text: str, secret: str) -> str:
    """``text`` cleaned, the run's nonce taken out (it is no business of the learner's, and varies)."""
    return clean(text.replace(secret, "") if secret else text)


def _raised_got(error: dict[str, Any]) -> str:
    """An unwritten function is said as such; any other error the learner's code raised is said "it raised"."""
    described = clean(describe_error(error))
    not_written = "builtins.NotImplementedError" in (error.get("mro") or [])
    return described if not_written else _("it raised {described}", described=described)


def _not_run_left(state: _Session, items: Sequence[Item], reason: str) -> None:
    """Items the child answered "finished" without reporting (it should not happen): not run, and why."""
    for item in items:
        state.tally.outcomes.setdefault(item.id, Outcome(None, got=_("verify stopped: {reason}", reason=reason)))


def _after_stop(state: _Session, items: Sequence[Item], outcome: sandbox.ChildOutcome, time_limit: float) -> list[Item]:
    """The session ended without its final answer: blame the item that was running, decide what is left.

    After a crash the items left are run again in a fresh process; after a hang or a broken
    channel, only the later steps are: the rest of the stopped step is not run, said once.
    """
    running = state.running
    what = _what_stopped(outcome, time_limit)
    _blame(state, running, what)
    left = [item for item in items if item.id not in state.tally.outcomes and state.loads.get(item.file) is not False]
    _not_loaded_left(state, items)
    if outcome.status == "crashed" and running is not None:
        return left
    return _later_steps(state, items, left, running, what)


def _later_steps(
    state: _Session, items: Sequence[Item], left: list[Item], running: str | None, what: str
) -> list[Item]:
    """A hang or a broken channel stops its own step: its checks left are not run (one reason for all of them),
    and the later steps are returned for a fresh session."""
    stopped = state.by_id[running].group if running in state.by_id else None
    later = [item for item in left if stopped is not None and item.group != stopped]
    reason = _("this step stopped at {id}: {what}", id=running.removeprefix("load:") if running else "-", what=what)
    for item in items:
        if item.id not in state.tally.outcomes and item not in later:
            state.tally.outcomes[item.id] = Outcome(None, got=reason)
    return later


def _what_stopped(outcome: sandbox.ChildOutcome, time_limit: float) -> str:
    """Why the session ended early, in the learner's words: a hang, a death, or a broken channel."""
    if outcome.status == "timeout":
        return _(
            "no answer within {limit} s (an endless loop, or input() waiting?); it was stopped",
            limit=format(time_limit, "g"),
        )
    if outcome.status == "crashed":
        return _("{died} (os._exit, a crash, or the process was killed) while running this", died=clean(outcome.detail))
    return _("the checking process broke its channel ({detail}); it was stopped", detail=clean(outcome.detail))


def _blame(state: _Session, running: str | None, what: str) -> None:
    """The key that was running when the session ended gets the cause: a file that was loading, or a check."""
    if running is not None and running.startswith("load:"):
        file = running.removeprefix("load:")
        state.tally.file_problems[file] = _("{file}.py could not be loaded: {what}", file=file, what=what)
        state.loads[file] = False
    elif running in state.by_id:
        state.tally.outcomes[running] = Outcome(False, got=what)


def _not_loaded_left(state: _Session, items: Sequence[Item]) -> None:
    """Items without a verdict whose file did not load: not run, for that reason."""
    for item in items:
        if item.id not in state.tally.outcomes and state.loads.get(item.file) is False:
            state.tally.outcomes[item.id] = Outcome(None, got=_("{file}.py did not load", file=item.file))
