"""``verify(DIR)``: judge a learner's three files with the package's own contract (``tests/`` runs the same).

Why this way: the learner's code must never decide its own verdict. Each check is a probe, run in a sandbox
(``verify_child``), and a judge here that decides from the data coming back, so a syntax error, ``sys.exit``, an
endless loop or a forged message is one ✘ line, never a traceback or a hang. With ``seed`` the inputs are fresh, so
a forger must compute what it claims (``classroom/GRADING.md``). The command exits 0 when every check passes, 1
otherwise, 2 when used wrongly.
"""

from __future__ import annotations

import contextlib
import html
import importlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import sandbox, verify_progress
from .contract import (
    FILES,
    SAMPLES,
    STEPS,
    Inputs,
    Sample,
    checks_up_to,
    parse_verdict,
    rejected_layer,
    step_title,
    text_samples,
)
from .verify_child import CheckResult, Item, Tally, clean, not_run, run_step
from .words import _

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "CheckResult",
    "Comparison",
    "ComparisonRow",
    "LearnerParse",
    "VerifyReport",
    "VerifyUsageError",
    "compare",
    "learner_parses",
    "verify",
]

DEFAULT_TIME_LIMIT = 5.0
"""Seconds one check (or loading one file) may take; the reference needs a few milliseconds."""

_MIN_TIME_LIMIT, _MAX_TIME_LIMIT = 0.5, 600.0
"""Less than half a second is no time for a sandboxed child to start, so no limit to promise."""


class VerifyUsageError(ValueError):
    """verify was asked something it cannot do (no such folder, no such step): exit status 2."""


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """Every check's verdict for one folder, and the problems of whole files."""

    label: str
    steps: tuple[int, ...]
    results: tuple[CheckResult, ...]
    file_problems: tuple[str, ...] = field(default=())
    notes: tuple[str, ...] = field(default=())
    protection: str = ""
    """How the run's memory was capped (``sandbox.memory_protection``): said on the command line only, since
    it differs between machines and a notebook's saved outputs must not."""

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

    def _passing(self) -> str:
        return _("{passed} of {total} checks pass", passed=self.passed, total=len(self.results))

    def _results_of(self, step: int) -> list[CheckResult]:
        """The report is read step by step: each step's checks together, in contract order."""
        return [result for result in self.results if result.check.step == step]

    def _by_step(self) -> Iterator[tuple[str, list[tuple[CheckResult, tuple[str, ...] | None]]]]:
        for step in self.steps:
            results = self._results_of(step)
            groups = _same_causes(results)
            heading = _("step {step} · {title}", step=step, title=step_title(step))
            yield heading, [(result, groups.get(result.check.id)) for result in results]

    def __str__(self) -> str:
        lines = [_("verify {label}: steps {first}-{last}", label=self.label, first=self.steps[0], last=self.steps[-1])]
        lines += [f"  ! {problem}" for problem in self.file_problems]
        lines += ["  " + _note(note) for note in self.notes]
        for heading, results in self._by_step():
            lines += [heading, *(line for result, group in results for line in _text_lines(result, group))]
        lines.append(self._passing() + ("" if self.ok else _("; {summary}", summary=self.summary())))
        return "\n".join(lines + (["  " + _note(self.protection)] if self.protection else []))

    def overview(self) -> str:
        """One line per step: how many of its checks pass (the progress table of notebook 01)."""
        lines = []
        for step in self.steps:
            results = self._results_of(step)
            passed, total = sum(1 for result in results if result.passed), len(results)
            lines.append(
                _(
                    "{mark} step {step} · {title}: {passed} of {total} checks pass",
                    mark="✔" if passed == total else "✘",
                    step=step,
                    title=step_title(step),
                    passed=passed,
                    total=total,
                )
            )
        return "\n".join(lines)

    def summary(self) -> str:
        first = next(iter(self.failed), None)
        if first is None and self.file_problems:  # every check passed, but a file did what verify refuses
            return _("mend the problem marked ! above")
        if first is None:
            return _("every check passes")
        return _("start with {id} ({file}.py)", id=first.check.id, file=first.check.file)

    def __repr__(self) -> str:
        return f"VerifyReport({self.label!r}, {self.passed} of {len(self.results)} checks pass)"

    def _repr_html_(self) -> str:
        esc = html.escape
        rows = []
        for heading, results in self._by_step():
            rows.append(f'<tr><th colspan="3" style="text-align:left">{esc(heading)}</th></tr>')
            rows += [_html_row(result, group) for result, group in results]
        problems = "".join(f"<p style='color:#cf222e'>! {esc(problem)}</p>" for problem in self.file_problems)
        problems += "".join(f"<p>{esc(_note(note))}</p>" for note in self.notes)
        total = f"<p><b>{esc(self._passing())}</b>" + ("" if self.ok else esc(_("; {summary}", summary=self.summary())))
        table = f"<table>{''.join(rows)}</table>"
        return f"<div><p>verify <code>{esc(self.label)}</code></p>{problems}{table}{total}</p></div>"


def _note(note: str) -> str:
    return _("note: {note}", note=note)


# How a verdict is drawn: passed, failed, or could not run (its file did not load).
_MARKS: dict[bool | None, str] = {True: "✔", False: "✘", None: "·"}
_COLOURS: dict[bool | None, str] = {True: "#1a7f37", False: "#cf222e", None: "#888"}


def _same_causes(results: Sequence[CheckResult]) -> dict[str, tuple[str, ...]]:
    """Checks of a step failing for the very same reason, said once: the first maps to the others' ids, they to ()."""
    by_reason: dict[tuple[bool | None, str], list[str]] = {}
    for result in results:
        if not result.passed and result.got:
            by_reason.setdefault((result.passed, result.got), []).append(result.check.id)
    groups: dict[str, tuple[str, ...]] = {}
    for first, *others in by_reason.values():
        if others:
            groups |= {first: tuple(others), **dict.fromkeys(others, ())}
    return groups


def _details(result: CheckResult, group: tuple[str, ...] | None) -> tuple[list[str], str, list[str]]:
    """A check's lines under its name: why it failed (and which others for that cause), the workbook rule it
    enforces (the blog does not ask for it) and its notes; nothing for a check in ``group == ()``."""
    if group == ():
        return [], "", []
    why = [] if result.passed else [result.sentence]
    if group:
        why.append(_("the same for {ids}", ids=_(", ").join(group)))
    rule = (result.check.words().ours or "") if result.passed is False else ""
    return why, rule, [_note(note) for note in result.notes]


def _text_lines(result: CheckResult, group: tuple[str, ...] | None = None) -> list[str]:
    ours = " " + _("[workbook rule]") if result.check.ours else ""
    why, rule, notes = _details(result, group)
    rules = [_("(a rule of this workbook: {rule})", rule=rule)] if rule else []
    head = f"  {_MARKS[result.passed]} {result.check.id} {result.check.words().name}{ours}"
    return [head] + [f"      {line}" for line in why + rules + notes]


def _html_row(result: CheckResult, group: tuple[str, ...] | None = None) -> str:
    """One check as a row of the notebook's table: the same facts as ``_text_lines``, escaped for HTML."""
    esc = html.escape
    words, mark = result.check.words(), _("[workbook rule]")
    ours = f' <span title="{esc(words.ours)}">{esc(mark)}</span>' if words.ours else ""
    why, rule, notes = _details(result, group)
    rules = ["<i>" + esc(_("a rule of this workbook: {rule}", rule=rule)) + "</i>"] if rule else []
    detail = [esc(line) for line in why] + rules + [esc(line) for line in notes]
    cells = (f"{esc(result.check.id)} {esc(words.name)}{ours}", "<br>".join(detail))
    return _html_tr(_MARKS[result.passed], _COLOURS[result.passed], cells)


def _html_tr(mark: str, colour: str, cells: Sequence[str]) -> str:
    left = "".join(f'<td style="text-align:left">{cell}</td>' for cell in cells)
    return f'<tr><td style="color:{colour};font-weight:bold">{mark}</td>{left}</tr>'


# --------------------------------------------------------------------------- the parent side


def verify(
    directory: str | os.PathLike[str],
    step: int | None = None,
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    seed: int | None = None,
    progress: bool | None = None,
) -> VerifyReport:
    """Run the contract's checks of steps 1..``step`` (all four for None) on ``directory``'s files.

    ``time_limit`` is per check, in seconds; ``seed`` draws fresh inputs (graded judging); ``progress`` (None: where
    it can be seen) shows a line per step or a notebook bar. ``VerifyUsageError`` for wrong arguments."""
    label, folder = _arguments(directory, step, time_limit, seed)
    inputs = (Inputs() if seed is None else Inputs.draw(seed)).fresh()
    checks = checks_up_to(step)
    steps = tuple(sorted({check.step for check in checks}))
    items = [Item(c.id, c.file, *c.probe(inputs), group=c.step, secret=inputs.nonce, check=c) for c in checks]
    step_of, reached, tally = {item.id: item.group for item in items}, [steps[0]], Tally()
    shown = verify_progress.start(len(steps), progress)

    def on_event(key: str) -> None:  # the first event of a later step moves the display on
        if step_of.get(key, 0) > reached[0]:
            reached[0] = step_of[key]
            shown.step(reached[0])

    try:
        shown.step(steps[0])
        run_step(folder, label, items, time_limit, tally, on_event, seed)
    finally:
        shown.done()  # emptied on every path (Ctrl-C included): no bar is left in the saved notebook
    results = tuple(tally.outcomes[check.id] for check in checks)
    notes = tuple(tally.file_notes.values())
    if seed is not None:
        notes += (
            _("the checks' inputs were drawn from seed {seed}; the cases printed above are the public ones", seed=seed),
        )
    protection = _(sandbox.memory_protection(bool(tally.capped) and all(tally.capped)))
    return VerifyReport(
        label, steps, results, tuple(tally.file_problems.values()), notes + _weaker_sandbox_note(), protection
    )


def _arguments(
    directory: str | os.PathLike[str], step: int | None, time_limit: float, seed: int | None
) -> tuple[str, Path]:
    """Wrong arguments, and a folder with none of the three files (the wrong one), fail before any learner code."""
    if step is not None:
        _check_step(step)
    _check_time_limit(time_limit)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise VerifyUsageError(_("seed must be an integer, found {found}", found=repr(seed)))
    label, folder = _folder(directory)
    if not any((folder / f"{name}.py").is_file() for name in FILES):
        raise VerifyUsageError(
            _("{label} holds none of {files}", label=f"'{label}'", files=", ".join(f"{name}.py" for name in FILES))
        )
    return label, folder


_said_protections: list[bool] = []


def _weaker_sandbox_note() -> tuple[str, ...]:
    """Once per process, where the learner's code runs without bubblewrap (macOS, Windows): what protects it."""
    if _said_protections or sandbox.isolated():
        return ()
    _said_protections.append(True)
    protections = "; ".join(_(phrase) for phrase in sandbox.protections())
    return (_("your code runs without bubblewrap here; what protects it: {list}", list=protections),)


def _run_samples(
    directory: str | os.PathLike[str], samples: Sequence[Sample], time_limit: float
) -> tuple[str, list[tuple[str, CheckResult]]]:
    """The folder's label, and each sample's verdict with its words as verify would say them."""
    _check_time_limit(time_limit)
    label, folder = _folder(directory)
    tally = Tally()
    run_step(folder, label, [Item(s.id, s.file, s.probe, describe=s.describe) for s in samples], time_limit, tally)
    shown = []
    for sample in samples:
        outcome = tally.outcomes[sample.id]
        words = outcome.shown if outcome.passed else outcome.got
        if outcome.passed is None:
            words = not_run(tally.file_problems.get(sample.file, ""), sample.file)
        shown.append((words, outcome))
    return label, shown


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
        title = step_title(self.step)
        lines = [
            _("{label} beside the reference: step {step} · {title}", label=self.label, step=self.step, title=title)
        ]
        for row in self.rows:
            lines += [f"{'=' if row.same else '≠'} {row.label}", _("    ours : {text}", text=row.reference)]
            if not row.same:
                lines.append(_("    yours: {text}", text=row.yours))
                if row.cost:
                    lines.append(_("    cost : {text}", text=row.cost))
        if differ := self._differ():
            lines.append(_("{differ} of {total} differ", differ=differ, total=len(self.rows)))
        else:
            lines.append(_("all {total} the same", total=len(self.rows)))
        return "\n".join(lines)

    def _differ(self) -> int:
        return sum(1 for row in self.rows if not row.same)

    def __repr__(self) -> str:
        return f"Comparison({self.label!r}, step {self.step}: {self._differ()} of {len(self.rows)} differ)"

    def _repr_html_(self) -> str:
        esc = html.escape
        columns = (_("reply"), _("ours (reference)"), _("yours"), _("what the difference costs"))
        head = "<tr><th></th>" + "".join(f"<th>{esc(column)}</th>" for column in columns) + "</tr>"
        rows = []
        for row in self.rows:
            yours, cost = (_("same"), "") if row.same else (row.yours, row.cost)
            cells = (esc(row.label), f"<code>{esc(row.reference)}</code>", f"<code>{esc(yours)}</code>", esc(cost))
            rows.append(_html_tr("=" if row.same else "≠", _COLOURS[row.same], cells))
        title = _("{label} beside the reference", label=f"<code>{esc(self.label)}</code>")
        return f"<div><p>{title}</p><table>{head}{''.join(rows)}</table></div>"


def compare(directory: str | os.PathLike[str], step: int, *, time_limit: float = DEFAULT_TIME_LIMIT) -> Comparison:
    """Step ``step``'s samples through ``directory``'s file (sandboxed) and the reference; step 4 shows step 3's."""
    _check_step(step)
    samples = [sample for sample in SAMPLES if sample.step == min(step, 3)]
    label, results = _run_samples(directory, samples, time_limit)
    rows = []
    for sample, (yours, _outcome) in zip(samples, results, strict=True):
        reference = clean(sample.run(importlib.import_module(f"codeagent_lite.{sample.file}")))
        name, cost = sample.words()
        rows.append(ComparisonRow(name, reference, yours, cost))
    return Comparison(label, step, tuple(rows))


@dataclass(frozen=True, slots=True)
class LearnerParse:
    """What the learner's parser did with one text: the words (``shown``) and the facts they say, as data."""

    shown: str
    verdict: str
    """``shown`` with no ``✔`` before an accepted action (``contract.parse_verdict``): what a ladder's last row says."""
    accepted: bool
    rejected_at: int | None
    """The layer number it refused the text at; None when it accepted it, or crashed, hung or did not load."""


def learner_parses(
    directory: str | os.PathLike[str], texts: Sequence[str], *, time_limit: float = DEFAULT_TIME_LIMIT
) -> tuple[LearnerParse, ...]:
    """What the learner's ``parse_json_action`` does with each text: the words verify would say, and as facts
    whether it accepted the text or at which layer it refused it (a ladder is drawn from facts, not words)."""
    _label, results = _run_samples(directory, text_samples(texts), time_limit)
    parses = []
    for shown, outcome in results:
        result = outcome.result if outcome.passed else None
        accepted = result is not None and not isinstance(result.get("error"), dict)
        if result is None:
            parses.append(LearnerParse(shown, shown, accepted, None))
        else:
            parses.append(LearnerParse(shown, clean(parse_verdict(result)), accepted, rejected_layer(result)))
    return tuple(parses)


def _check_step(step: object) -> None:
    """A step is one of the contract's step numbers; True is not 1 here, though Python says it equals 1."""
    if isinstance(step, bool) or not isinstance(step, int) or step not in STEPS:
        raise VerifyUsageError(
            _("step must be one of {steps}, found {step}", steps=", ".join(map(str, STEPS)), step=repr(step))
        )


def _check_time_limit(time_limit: float) -> None:
    if not _MIN_TIME_LIMIT <= time_limit <= _MAX_TIME_LIMIT:  # also refuses NaN
        raise VerifyUsageError(
            _(
                "time_limit must be at least {least} and at most {limit} seconds, found {found}",
                least=format(_MIN_TIME_LIMIT, "g"),
                limit=format(_MAX_TIME_LIMIT, "g"),
                found=repr(time_limit),
            )
        )


def _folder(directory: str | os.PathLike[str]) -> tuple[str, Path]:
    """The folder's name in the report (as given when relative, else its name: no machine paths), and where it is."""
    given = Path(directory)
    label = clean(given.as_posix() if not given.is_absolute() else given.name, limit=120)
    with contextlib.suppress(OSError, RuntimeError, ValueError):  # a name too long, a symlink loop, a NUL: no folder
        if (folder := given.resolve()).is_dir():
            return label, folder
    raise VerifyUsageError(
        _("{label} is not a folder (run from the folder that holds it, or give its path)", label=f"'{label}'")
    )
