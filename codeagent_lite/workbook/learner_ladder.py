"""Your parser's ladder beside the reference's, for the same replies (notebook 04).

A learner's ``parse_json_action`` is one function, so its ladder is read from what it did: the layers before the
one that refused passed, that one failed, the rest were never reached; one that crashes or hangs (in verify's
killable child process, never in the notebook) has no ladder.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from .. import json_action_parser as reference_parser
from ..diagnosis import MARKS, LayerStatus, diagnose
from ..display import escape_html, pad, printable
from ..model_adapter import ValidationLayer
from .contract import parse_verdict_of
from .ladder import layer_label, layer_name, status_word
from .verify import DEFAULT_TIME_LIMIT, learner_parses
from .words import _, _p


def _said(statuses: Iterable[LayerStatus]) -> tuple[str, ...]:
    """Each layer's mark and status word (``✔ passed``), as the reference's ladder says them."""
    return tuple(f"{MARKS[status]} {status_word(status)}" for status in statuses)


def _your_ladder(rejected_at: int | None, accepted: bool) -> tuple[str, ...] | None:
    passed, failed, not_reached = LayerStatus.PASSED, LayerStatus.FAILED, LayerStatus.NOT_REACHED
    if accepted:
        return _said([passed] * len(ValidationLayer))
    if rejected_at is None:
        return None
    return _said(
        passed if layer < rejected_at else failed if layer == rejected_at else not_reached for layer in ValidationLayer
    )


def _html_row(differs: bool, label: str, ours: str, yours: str) -> str:
    style = ' style="color:#cf222e;font-weight:bold"' if differs else ""
    return f"<tr><td>{'≠' if differs else ''}</td><td>{label}</td><td>{ours}</td><td{style}>{yours}</td></tr>"


@dataclass(frozen=True, slots=True)
class LadderPair:
    """One reply: the reference's ladder and verdict, and the learner's."""

    name: str
    text: str
    ours: tuple[str, ...]
    ours_verdict: str
    yours: tuple[str, ...] | None
    your_verdict: str

    @property
    def same(self) -> bool:
        return self.ours == self.yours and self.ours_verdict == self.your_verdict

    def layer_rows(self) -> Iterator[tuple[bool, ValidationLayer, str, str]]:
        """Whether the layer's row differs, the layer, ours and yours (blank where your parser has no ladder)."""
        yours = self.yours or ("",) * len(self.ours)
        for layer, ours, theirs in zip(ValidationLayer, self.ours, yours, strict=True):
            yield self.yours is not None and ours != theirs, layer, ours, theirs


@dataclass(frozen=True, slots=True)
class LadderPairs:
    """Every reply's pair of ladders, shown as text and as an HTML table."""

    label: str
    pairs: tuple[LadderPair, ...]

    def __str__(self) -> str:
        ours_word = _p("ladder", "ours")
        lines = [f"{'':10}{pad(ours_word, 16)}{self.label}"]
        for pair in self.pairs:
            lines.append(f"{'=' if pair.same else '≠'} {pair.name}")
            for differs, layer, ours, theirs in pair.layer_rows():
                mark = "≠" if differs else " "
                lines.append(f"  {mark} {pad(layer_name(layer), 7)}  {pad(ours, 15)} {theirs}".rstrip())
            mark = "  " if pair.ours_verdict == pair.your_verdict else "≠ "
            lines.append("  " + mark + _("=> ours: {verdict}", verdict=pair.ours_verdict))
            lines.append("  " + _("   yours: {verdict}", verdict=pair.your_verdict))
        return "\n".join(lines)

    def __repr__(self) -> str:
        differ = sum(1 for pair in self.pairs if not pair.same)
        return f"LadderPairs({self.label!r}: {differ} of {len(self.pairs)} differ)"

    def _repr_html_(self) -> str:
        esc = escape_html
        ours_word, verdict_word = esc(_p("ladder", "ours")), esc(_p("ladder", "verdict"))
        rows = []
        for pair in self.pairs:
            rows.append(
                f'<tr><th colspan="4" style="text-align:left">{"=" if pair.same else "≠"} {esc(pair.name)}</th></tr>'
            )
            for differs, layer, ours, theirs in pair.layer_rows():
                rows.append(_html_row(differs, esc(layer_label(layer)), esc(ours), esc(theirs)))
            ours, yours = (f"<code>{esc(verdict)}</code>" for verdict in (pair.ours_verdict, pair.your_verdict))
            rows.append(_html_row(pair.ours_verdict != pair.your_verdict, verdict_word, ours, yours))
        head = f"<tr><th></th><th></th><th>{ours_word}</th><th>{esc(self.label)}</th></tr>"
        return f"<table>{head}{''.join(rows)}</table>"


def learner_ladders(
    directory: str | os.PathLike[str],
    replies: Mapping[str, str] | Iterable[str],
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
) -> LadderPairs:
    """``replies`` maps a name to a raw reply (the parser playground's ``PRESETS`` fits), or is a list of replies
    named by their position; one reply given alone is a list of one, not one reply per character."""
    if isinstance(replies, str):
        replies = [replies]
    if not isinstance(replies, Mapping):
        replies = {_("reply {number}", number=number): text for number, text in enumerate(replies, 1)}
    outcomes = learner_parses(directory, list(replies.values()), time_limit=time_limit)
    pairs = []
    for (name, text), yours in zip(replies.items(), outcomes, strict=True):
        ours = _said(outcome.status for outcome in diagnose(text).outcomes)
        ours_verdict = parse_verdict_of(reference_parser, text)
        your_ladder = _your_ladder(yours.rejected_at, yours.accepted)
        # A preset's key is a catalog id: its name in the edition's language ("" is the catalog's header's id).
        shown = printable(_(str(name)) if name != "" else "")
        pairs.append(LadderPair(shown, text, ours, ours_verdict, your_ladder, yours.verdict))
    given = os.fspath(directory)  # names printed as text: escaped once, here
    return LadderPairs(printable(given if not os.path.isabs(given) else os.path.basename(given)), tuple(pairs))
