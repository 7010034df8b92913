"""``verify(DIR)``: judge a learner's three files with the package's own contract.

The checks live in ``contract``; ``tests/`` runs the same ones against ``codeagent_lite``.
This module runs them against a learner's folder, in a child process
(``verify_child.run_job``) that it can kill: each check has a time limit, a check that never
returns is reported and the rest still run in a fresh child. Nothing the learner's code
does (a syntax error, ``sys.exit``, ``os._exit``, a print, an endless loop) becomes a
traceback of verify or a hang.

The result is a ``VerifyReport``: ``str()`` gives the text the command line prints, and
``_repr_html_`` the table a notebook shows. ``python -m codeagent_lite verify DIR`` exits
0 when every check passes, 1 otherwise, 2 when it was used wrongly.
"""

from __future__ import annotations

import html
import importlib
import json
import multiprocessing
import multiprocessing.context
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .contract import FILES, SAMPLES, STEPS, Check, Sample, checks_up_to, text_samples
from .language import edition_language
from .verify_child import clean, run_job
from .verify_messages import MESSAGES, step_title

say = MESSAGES.say

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "CheckResult",
    "Comparison",
    "ComparisonRow",
    "VerifyReport",
    "VerifyUsageError",
    "compare",
    "run_learner_parser",
    "verify",
]

DEFAULT_TIME_LIMIT = 5.0
"""Seconds one check (or loading one file) may take; the reference needs a few milliseconds."""

_MAX_TIME_LIMIT = 600.0
_STARTUP_LIMIT = 60.0  # the first child starts the fork server, which imports pydantic, on a busy machine


class VerifyUsageError(ValueError):
    """verify was asked something it cannot do (no such folder, no such step): exit status 2."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check's verdict. ``passed`` is None when the check could not run (its file did not load)."""

    check: Check
    passed: bool | None
    got: str = ""
    expected: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def sentence(self) -> str:
        """Given, expected, got: one sentence a learner can act on (empty when the check passed)."""
        if self.passed:
            return ""
        if self.passed is None:
            return say("not_run", reason=self.got or say("did_not_load", file=self.check.file))
        words = self.check.words()
        return say("sentence", given=words.given, expected=self.expected or words.expected, got=self.got)


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """Every check's verdict for one folder, and the problems of whole files."""

    label: str
    steps: tuple[int, ...]
    results: tuple[CheckResult, ...]
    file_problems: tuple[str, ...] = field(default=())
    notes: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> int:
        return sum(1 for result in self.results if result.passed)

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        return tuple(result for result in self.results if not result.passed)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.file_problems

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def __str__(self) -> str:
        lines = [say("heading", label=self.label, first=self.steps[0], last=self.steps[-1])]
        lines += [f"  ! {problem}" for problem in self.file_problems]
        lines += ["  " + say("note", note=note) for note in self.notes]
        for step in self.steps:
            lines.append(say("step", step=step, title=step_title(step)))
            for result in self._results_of(step):
                lines += _text_lines(result)
        lines.append(
            say("checks_pass", passed=self.passed, total=len(self.results))
            + ("" if self.ok else say("then", summary=self.summary()))
        )
        return "\n".join(lines)

    def _results_of(self, step: int) -> list[CheckResult]:
        """The report is read step by step, so each step's checks are shown together, in contract order."""
        return [result for result in self.results if result.check.step == step]

    def overview(self) -> str:
        """One line per step: how many of its checks pass (the progress table of notebook 01)."""
        lines = []
        for step in self.steps:
            results = self._results_of(step)
            passed = sum(1 for result in results if result.passed)
            mark = "✔" if passed == len(results) else "✘"
            lines.append(
                say("overview_line", mark=mark, step=step, title=step_title(step), passed=passed, total=len(results))
            )
        return "\n".join(lines)

    def summary(self) -> str:
        """Where to look first: the first failing check."""
        first = next(iter(self.failed), None)
        if first is None:
            return say("every_check_passes")
        return say("start_with", id=first.check.id, file=first.check.file)

    def __repr__(self) -> str:
        return f"VerifyReport({self.label!r}, {self.passed} of {len(self.results)} checks pass)"

    def _repr_html_(self) -> str:
        esc = html.escape
        rows = []
        for step in self.steps:
            rows.append(
                f'<tr><th colspan="3" style="text-align:left">'
                f"{esc(say('step', step=step, title=step_title(step)))}</th></tr>"
            )
            rows += [_html_row(result) for result in self._results_of(step)]
        problems = "".join(f"<p style='color:#cf222e'>! {esc(problem)}</p>" for problem in self.file_problems)
        problems += "".join(f"<p>{esc(say('note', note=note))}</p>" for note in self.notes)
        total = f"<p><b>{esc(say('checks_pass', passed=self.passed, total=len(self.results)))}</b>"
        total += "" if self.ok else esc(say("then", summary=self.summary()))
        table = f"<table>{''.join(rows)}</table>"
        return f"<div><p>verify <code>{esc(self.label)}</code></p>{problems}{table}{total}</p></div>"


# How a verdict is drawn: passed, failed, or could not run (its file did not load).
_MARKS: dict[bool | None, str] = {True: "✔", False: "✘", None: "·"}
_COLOURS: dict[bool | None, str] = {True: "#1a7f37", False: "#cf222e", None: "#888"}


def _broken_rule(result: CheckResult) -> str:
    """The workbook rule a failed check enforces, or "": a learner should know the blog does not ask for it."""
    ours = result.check.words().ours
    return ours if ours and result.passed is False else ""


def _text_lines(result: CheckResult) -> list[str]:
    """One check in the command line's report: its mark and name, then why it failed and any notes."""
    ours = " " + say("ours") if result.check.ours else ""
    lines = [f"  {_MARKS[result.passed]} {result.check.id} {result.check.words().name}{ours}"]
    if not result.passed:
        lines.append(f"      {result.sentence}")
        rule = _broken_rule(result)
        if rule:
            lines.append("      " + say("workbook_rule", rule=rule))
    lines += ["      " + say("note", note=note) for note in result.notes]
    return lines


def _html_row(result: CheckResult) -> str:
    """One check as a row of the notebook's table: the same facts as ``_text_lines``, escaped for HTML."""
    esc = html.escape
    words = result.check.words()
    ours = f' <span title="{esc(words.ours)}">{esc(say("ours"))}</span>' if words.ours else ""
    detail = esc(result.sentence)
    rule = _broken_rule(result)
    if rule:
        detail += f"<br><i>{esc(say('workbook_rule_html', rule=rule))}</i>"
    detail += "".join(f"<br>{esc(say('note', note=note))}" for note in result.notes)
    return (
        f'<tr><td style="color:{_COLOURS[result.passed]};font-weight:bold">{_MARKS[result.passed]}</td>'
        f'<td style="text-align:left">{esc(result.check.id)} {esc(words.name)}{ours}</td>'
        f'<td style="text-align:left">{detail}</td></tr>'
    )


# --------------------------------------------------------------------------- the parent side


def _label(directory: str | os.PathLike[str]) -> str:
    """How the folder is named in the report: as given when relative, else by its name (no machine paths)."""
    given = Path(directory)
    return given.as_posix() if not given.is_absolute() else given.name


def _context() -> multiprocessing.context.BaseContext:
    """The fork server where the platform has one (a fork per run, no re-import), else spawn (Windows)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["codeagent_lite.workbook.verify_child"])
        return context
    return multiprocessing.get_context("spawn")


class _Child:
    """One run of ``verify_child.run_job``; ``next_event`` returns its events, or None at a time-out or exit."""

    def __init__(self, directory: Path, label: str, check_ids: Sequence[str], texts: Sequence[str] = ()) -> None:
        context = _context()
        self._events, sender = context.Pipe(duplex=False)
        job = {
            "directory": str(directory),
            "label": label,
            "ids": list(check_ids),
            "texts": list(texts),
            "language": edition_language(),  # the fork server's environment is the one it started with
        }
        self.process = context.Process(target=run_job, args=(job, sender), daemon=True)  # type: ignore[attr-defined]
        self.process.start()
        sender.close()  # only the child writes; the pipe ends when the child does
        self.ended = False

    def next_event(self, timeout: float) -> dict[str, Any] | None:
        """The next event, or None when the child sent nothing within ``timeout`` or ended."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._events.poll(remaining):
                return None
            try:
                data = self._events.recv_bytes()
            except (EOFError, OSError):
                self.ended = True
                return None
            try:
                event = json.loads(data)
            except ValueError:
                continue  # not ours: the protocol only ever sends JSON objects
            if isinstance(event, dict):
                return event

    def exit_note(self) -> str:
        if self.ended:
            self.process.join(timeout=5)  # its pipe is closed; the exit status follows at once
        code = self.process.exitcode
        if code is None:
            return ""
        return say("exit_status", code=code)

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self._events.close()


def verify(
    directory: str | os.PathLike[str], step: int | None = None, *, time_limit: float = DEFAULT_TIME_LIMIT
) -> VerifyReport:
    """Run the contract's checks of steps 1..``step`` (all four for None) on ``directory``'s files.

    ``time_limit`` is per check, in seconds. Raises ``VerifyUsageError`` when the folder
    does not exist, holds none of the three files, or ``step`` is not 1 to 4.
    """
    if step is not None:
        _check_step(step)
    _check_time_limit(time_limit)
    label, folder = _folder(directory)
    _check_holds_a_file(folder, label)
    checks = checks_up_to(step)
    outcomes, file_problems = _run_items(folder, label, checks, time_limit)
    results = tuple(_check_result(check, outcomes[check.id]) for check in checks)
    steps = tuple(sorted({check.step for check in checks}))
    problems, notes = _problems_and_notes(file_problems)
    return VerifyReport(label, steps, results, problems, notes)


def _check_holds_a_file(folder: Path, label: str) -> None:
    """A folder with none of the three files is almost always the wrong folder: say so instead of failing all."""
    if not any((folder / f"{name}.py").is_file() for name in FILES):
        raise VerifyUsageError(say("holds_none", label=repr(label), files=", ".join(f"{name}.py" for name in FILES)))


def _problems_and_notes(file_problems: dict[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A file that loaded but printed gets a note (its ``:printed`` key), not a problem: it still passes."""
    problems = tuple(text for key, text in file_problems.items() if not key.endswith(":printed"))
    notes = tuple(text for key, text in file_problems.items() if key.endswith(":printed"))
    return problems, notes


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What came back for one check or sample (``shown``: a sample's description)."""

    passed: bool | None
    got: str = ""
    expected: str | None = None
    notes: tuple[str, ...] = ()
    shown: str = ""


def _check_result(check: Check, outcome: _Outcome) -> CheckResult:
    """The public verdict drops what only ``compare`` needs (``shown``)."""
    return CheckResult(check, outcome.passed, outcome.got, outcome.expected, outcome.notes)


_Item = Check | Sample


@dataclass(frozen=True, slots=True)
class _Tally:
    """What the children have reported so far; its two dicts fill as events arrive, across children.

    ``outcomes`` holds a verdict per item id; ``file_problems`` what went wrong with a whole
    file, by file name (``<file>:printed`` for a file that printed while loading).
    """

    outcomes: dict[str, _Outcome] = field(default_factory=dict)
    file_problems: dict[str, str] = field(default_factory=dict)


def _run_items(
    folder: Path, label: str, items: Sequence[_Item], time_limit: float, texts: Sequence[str] = ()
) -> tuple[dict[str, _Outcome], dict[str, str]]:
    """Run ``items`` in as many children as it takes: a fresh one after each time-out or crash."""
    tally = _Tally()
    remaining = list(items)
    while remaining:
        remaining = _run_child(folder, label, remaining, time_limit, tally, texts)
    return tally.outcomes, tally.file_problems


def _run_child(
    folder: Path, label: str, items: Sequence[_Item], time_limit: float, tally: _Tally, texts: Sequence[str] = ()
) -> list[_Item]:
    """Run ``items`` in one child; return those still to run in a fresh child after a time-out."""
    by_id = {item.id: item for item in items}
    child = _Child(folder, label, list(by_id), texts)
    try:
        if not _is_ready(child):
            _record_no_start(child, items, tally)
            return []
        return _follow(child, by_id, items, time_limit, tally)
    finally:
        child.stop()


def _is_ready(child: _Child) -> bool:
    """The child's first event says it started; the limit is generous, the fork server may be starting too."""
    event = child.next_event(_STARTUP_LIMIT)
    return event is not None and event.get("event") == "ready"


def _record_no_start(child: _Child, items: Sequence[_Item], tally: _Tally) -> None:
    """No checking process means no verdict at all: every item is "not run", with the reason."""
    reason = child.exit_note() or say("no_answer")
    problem = say("could_not_start", reason=clean(reason))
    tally.file_problems["verify"] = problem
    for item in items:
        tally.outcomes[item.id] = _Outcome(None, got=problem)


def _follow(
    child: _Child, by_id: dict[str, _Item], items: Sequence[_Item], time_limit: float, tally: _Tally
) -> list[_Item]:
    """Record the child's verdicts until it finishes; the clock runs only while learner code does."""
    running: str | None = None
    while True:
        event = child.next_event(time_limit if running else _STARTUP_LIMIT)
        if event is None:
            return _after_stop(child, running, by_id, items, time_limit, tally)
        kind, key = event.get("event"), str(event.get("key", ""))
        if kind == "finished":
            return []
        if kind == "start":
            running = key
        elif kind == "done":
            running = None
            _record(event, key, by_id, tally)


def _record(event: dict[str, Any], key: str, by_id: dict[str, _Item], tally: _Tally) -> None:
    """A "done" event is either a file's load (``load:<file>``) or one item's verdict; ids not asked for are ignored."""
    if key.startswith("load:"):
        _record_load(event, key.removeprefix("load:"), tally)
    elif key in by_id:
        tally.outcomes[key] = _outcome_of(event, by_id[key])


def _record_load(event: dict[str, Any], file: str, tally: _Tally) -> None:
    """A file that did not load is a problem of the whole file; one that printed while loading gets a note."""
    printed = str(event.get("printed") or "")
    if not event.get("passed"):
        tally.file_problems[file] = str(event.get("got", ""))
    elif printed:
        tally.file_problems[file + ":printed"] = printed


def _outcome_of(event: dict[str, Any], item: _Item) -> _Outcome:
    """The verdict in a "done" event, as sent by ``verify_child`` (already cleaned there)."""
    if event.get("not_run"):
        return _Outcome(None, got=say("did_not_load", file=item.file))
    expected = event.get("expected")
    printed = str(event.get("printed") or "")
    return _Outcome(
        bool(event.get("passed")),
        got=str(event.get("got", "")),
        expected=None if expected is None else str(expected),
        notes=(printed,) if printed else (),
        shown=str(event.get("shown", "")),
    )


def _after_stop(
    child: _Child,
    running: str | None,
    by_id: dict[str, _Item],
    items: Sequence[_Item],
    time_limit: float,
    tally: _Tally,
) -> list[_Item]:
    """The child went quiet or died while ``running``: record that, and say what is left to run."""
    died = child.exit_note()
    if running is None:
        _record_stopped_between_items(died, items, tally)
        return []
    what = _stop_reason(died, time_limit)
    if running.startswith("load:"):
        _record_load_stopped(running.removeprefix("load:"), what, items, tally)
    elif running in by_id:
        tally.outcomes[running] = _Outcome(False, got=what)
    return [item for item in items if item.id not in tally.outcomes]


def _stop_reason(died: str, time_limit: float) -> str:
    """Why the running item has no verdict: its process ended, or it ran past the time limit."""
    if died:
        return say("died", died=died)
    return say("timed_out", limit=f"{time_limit:g}")


def _record_stopped_between_items(died: str, items: Sequence[_Item], tally: _Tally) -> None:
    """Nothing of the learner's was running, so no item is to blame: those without a verdict are "not run"."""
    reason = clean(died or say("stopped_answering"))
    for item in items:
        tally.outcomes.setdefault(item.id, _Outcome(None, got=say("verify_stopped", reason=reason)))


def _record_load_stopped(file: str, what: str, items: Sequence[_Item], tally: _Tally) -> None:
    """Loading ``file`` hung or crashed: that is the file's problem, and its items cannot run."""
    tally.file_problems[file] = say("could_not_load", file=file, what=what)
    skipped = {item.id for item in items if item.file == file and item.id not in tally.outcomes}
    for item_id in skipped:
        tally.outcomes[item_id] = _Outcome(None, got=say("did_not_load", file=file))


# --------------------------------------------------------------------------- yours beside ours


@dataclass(frozen=True, slots=True)
class ComparisonRow:
    """One sample: what the reference did, what the learner's file did, and what a difference costs."""

    label: str
    reference: str
    yours: str
    cost: str = ""

    @property
    def same(self) -> bool:
        return self.reference == self.yours


@dataclass(frozen=True, slots=True)
class Comparison:
    """Samples of one step through the reference and through a learner's file, side by side."""

    label: str
    step: int
    rows: tuple[ComparisonRow, ...]

    def __str__(self) -> str:
        lines = [say("beside", label=self.label, step=self.step, title=step_title(self.step))]
        for row in self.rows:
            lines.append(f"{'=' if row.same else '≠'} {row.label}")
            lines.append(say("row_ours", text=row.reference))
            if not row.same:
                lines.append(say("row_yours", text=row.yours))
                if row.cost:
                    lines.append(say("row_cost", text=row.cost))
        differ = sum(1 for row in self.rows if not row.same)
        lines.append(
            say("differ", differ=differ, total=len(self.rows)) if differ else say("all_same", total=len(self.rows))
        )
        return "\n".join(lines)

    def __repr__(self) -> str:
        differ = sum(1 for row in self.rows if not row.same)
        return f"Comparison({self.label!r}, step {self.step}: {differ} of {len(self.rows)} differ)"

    def _repr_html_(self) -> str:
        esc = html.escape
        head = (
            f"<tr><th></th><th>{esc(say('column_reply'))}</th><th>{esc(say('column_ours'))}</th>"
            f"<th>{esc(say('column_yours'))}</th><th>{esc(say('column_cost'))}</th></tr>"
        )
        rows = []
        for row in self.rows:
            mark = "=" if row.same else "≠"
            colour = "#1a7f37" if row.same else "#cf222e"
            yours = esc(say("same")) if row.same else esc(row.yours)
            rows.append(
                f'<tr><td style="color:{colour};font-weight:bold">{mark}</td>'
                f'<td style="text-align:left">{esc(row.label)}</td>'
                f'<td style="text-align:left"><code>{esc(row.reference)}</code></td>'
                f'<td style="text-align:left"><code>{yours}</code></td>'
                f'<td style="text-align:left">{"" if row.same else esc(row.cost)}</td></tr>'
            )
        return (
            f"<div><p>{say('beside_html', label=f'<code>{esc(self.label)}</code>')}</p>"
            f"<table>{head}{''.join(rows)}</table></div>"
        )


def compare(directory: str | os.PathLike[str], step: int, *, time_limit: float = DEFAULT_TIME_LIMIT) -> Comparison:
    """Run step ``step``'s samples through ``directory``'s file and through the reference.

    Step 4 shows the same corpus as step 3 (the parser is one file in two stages).
    The learner's side runs in a killable child, like ``verify``; the reference runs here.
    """
    _check_step(step)
    _check_time_limit(time_limit)
    label, folder = _folder(directory)
    samples = [sample for sample in SAMPLES if sample.step == min(step, 3)]
    outcomes, file_problems = _run_items(folder, label, samples, time_limit)
    rows = []
    for sample in samples:
        module = importlib.import_module(f"codeagent_lite.{sample.file}")
        reference = clean(sample.run(module))
        yours = _shown(outcomes[sample.id], sample, file_problems)
        sample_label, cost = sample.words()
        rows.append(ComparisonRow(sample_label, reference, yours, cost))
    return Comparison(label, step, tuple(rows))


def run_learner_parser(
    directory: str | os.PathLike[str], texts: Sequence[str], *, time_limit: float = DEFAULT_TIME_LIMIT
) -> tuple[str, ...]:
    """What the learner's ``parse_json_action`` does with each text, described by ``contract.describe_parse``.

    A crash, a hang or a file that does not load comes back as the sentence verify would print.
    """
    _check_time_limit(time_limit)
    label, folder = _folder(directory)
    samples = text_samples(texts)
    outcomes, file_problems = _run_items(folder, label, samples, time_limit, texts)
    return tuple(_shown(outcomes[sample.id], sample, file_problems) for sample in samples)


def _check_step(step: object) -> None:
    """A step is one of the contract's step numbers; True is not 1 here, though Python says it equals 1."""
    if isinstance(step, bool) or not isinstance(step, int) or step not in STEPS:
        raise VerifyUsageError(say("step_range", steps=", ".join(map(str, STEPS)), step=repr(step)))


def _check_time_limit(time_limit: float) -> None:
    if not 0 < time_limit <= _MAX_TIME_LIMIT:  # also refuses NaN
        raise VerifyUsageError(say("time_limit", limit=f"{_MAX_TIME_LIMIT:g}", found=repr(time_limit)))


def _folder(directory: str | os.PathLike[str]) -> tuple[str, Path]:
    label = _label(directory)
    folder = Path(directory).resolve()
    if not folder.is_dir():
        raise VerifyUsageError(say("not_a_folder", label=repr(label)))
    return label, folder


def _shown(outcome: _Outcome, sample: Sample, file_problems: dict[str, str]) -> str:
    if outcome.passed:
        return outcome.shown
    if outcome.passed is None:
        return say("not_run", reason=file_problems.get(sample.file) or say("did_not_load", file=sample.file))
    return outcome.got
