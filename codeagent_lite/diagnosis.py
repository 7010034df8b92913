"""The parser's four layers, each one's outcome recorded.

``parse_json_action`` stops at the first refusal with one error, right for an agent; a learner wants the whole
ladder: the layers it passed, the one that refused, and those it never reached. The
playground and ``python -m codeagent_lite check`` both use this module, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from .display import N_, pad, shorten
from .json_action_parser import parse_json_action
from .kernel_types import Action, FinalAnswer, ToolCall
from .model_adapter import LAYER_NAME, InvalidModelOutputError, ValidationLayer

__all__ = ["ACTION_CHARS", "ENGLISH_WORDS", "MARKS", "Diagnosis", "LadderWords", "LayerOutcome", "LayerStatus"]
__all__ += ["describe_action", "diagnose", "format_ladder"]

ACTION_CHARS = 200  # longest rendering of an accepted action: a write_file call may carry a megabyte


class LayerStatus(StrEnum):  # the English words are also the workbook's catalog ids
    PASSED = N_("passed")
    FAILED = N_("failed")
    NOT_REACHED = N_("not reached")


MARKS = {LayerStatus.PASSED: "✔", LayerStatus.FAILED: "✘", LayerStatus.NOT_REACHED: "·"}  # text and HTML alike


@dataclass(frozen=True, slots=True)
class LadderWords:
    """A ladder's words, in English: they are the workbook's catalog ids, so it passes their translations.

    The chapter cannot know which edition runs. The parser's messages inside the ladder stay as they are (they are
    what the model is sent); ``facts`` says the verdict's expected and found, which the workbook makes from the
    error's code and params.
    """

    titles: Mapping[ValidationLayer, str] = field(
        default_factory=lambda: {layer: layer.title for layer in ValidationLayer}
    )
    layer: str = LAYER_NAME
    statuses: Mapping[LayerStatus, str] = field(
        default_factory=lambda: {status: status.value for status in LayerStatus}
    )
    colon: str = N_(": ")
    rejected: str = N_("rejected at layer {number}: expected {expected}, found {found}")
    facts: Callable[[InvalidModelOutputError], tuple[object, object]] = lambda error: (error.expected, error.found)


ENGLISH_WORDS = LadderWords()  # the command line, the agent loop and the English edition


@dataclass(frozen=True, slots=True)
class LayerOutcome:
    layer: ValidationLayer
    status: LayerStatus
    error: InvalidModelOutputError | None = None


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Every layer's outcome for one text, and the action when all four passed."""

    raw_text: str
    outcomes: tuple[LayerOutcome, ...]
    action: Action | None

    @property
    def accepted(self) -> bool:
        return self.action is not None

    @property
    def error(self) -> InvalidModelOutputError | None:
        return next((o.error for o in self.outcomes if o.error is not None), None)

    @property
    def rejected_by(self) -> ValidationLayer | None:
        return None if self.error is None else self.error.layer


def diagnose(raw_text: str) -> Diagnosis:
    """``parse_json_action``'s own answer, laid out layer by layer: the same checks and messages, a caller's nearly
    full stack included (which the four checks called one by one let escape as RecursionError); never raises for
    bad text."""
    try:
        action = parse_json_action(raw_text)
    except InvalidModelOutputError as refusal:
        outcomes = []
        for layer in ValidationLayer:  # a loop, not a comprehension: no frame more than the parser had
            if layer == refusal.layer:
                outcomes.append(LayerOutcome(layer, LayerStatus.FAILED, refusal))
            else:
                outcomes.append(
                    LayerOutcome(layer, LayerStatus.PASSED if layer < refusal.layer else LayerStatus.NOT_REACHED)
                )
        return Diagnosis(raw_text=raw_text, outcomes=tuple(outcomes), action=None)
    passed = tuple(LayerOutcome(layer, LayerStatus.PASSED) for layer in ValidationLayer)
    return Diagnosis(raw_text=raw_text, outcomes=passed, action=action)


def describe_action(action: Action) -> str:
    """An accepted action on one line: its ``repr``, shortened, so a huge write_file stays one line."""
    if not isinstance(action, (ToolCall, FinalAnswer)):
        raise TypeError(f"describe_action needs a ToolCall or a FinalAnswer, found {type(action).__name__}")
    return shorten(repr(action), ACTION_CHARS)


def format_ladder(diagnosis: Diagnosis, words: LadderWords = ENGLISH_WORDS) -> str:
    """Plain-text ladder, one line per layer, then the verdict; ``words`` says it in another language."""
    lines = []
    for outcome in diagnosis.outcomes:
        label = f"{words.layer.format(number=int(outcome.layer))}  {pad(words.titles[outcome.layer], 17)}"
        detail = "" if outcome.error is None else f"{words.colon}{outcome.error.message}"
        lines.append(f"{MARKS[outcome.status]} {label} {words.statuses[outcome.status]}{detail}")
    if diagnosis.action is not None:
        lines.append(f"=> {describe_action(diagnosis.action)}")
    elif (error := diagnosis.error) is not None:
        expected, found = words.facts(error)
        verdict = words.rejected.format(number=int(error.layer), expected=expected, found=found)
        lines.append(f"=> {verdict}")
    return "\n".join(lines)
