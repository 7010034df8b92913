"""The parser's four layers and their ladder, named in the edition's language.

The chapter names a layer ``layer 1 (JSON syntax)`` and prints its ladder in English: it
imports only the standard library, so it cannot know that a learner opened
``notebooks/zh``. This module holds the words of both editions and hands them to the chapter
(``diagnosis.format_ladder`` takes its words as a parameter), so the notebooks, the
playgrounds and verify name every layer the same way in each language. The parser's own
messages inside a ladder stay English: they are the series' phrases.
"""

from __future__ import annotations

from ..diagnosis import Diagnosis, LadderWords, LayerStatus
from ..diagnosis import format_ladder as format_chapter_ladder
from ..model_adapter import ValidationLayer
from .language import Language, Messages

__all__ = ["MESSAGES", "format_ladder", "ladder_words", "layer_label", "layer_title", "status_word"]

_TITLES_ZH = {
    ValidationLayer.JSON_SYNTAX: "JSON 语法",
    ValidationLayer.TOP_LEVEL_OBJECT: "顶层对象",
    ValidationLayer.ACTION_TYPE: "行动类型",
    ValidationLayer.FIELDS: "字段集合与类型",
}
"""Beside ``ValidationLayer.title`` (the English ones): a layer added there without one here fails at import."""

_STATUSES_ZH = {LayerStatus.PASSED: "通过", LayerStatus.FAILED: "拒绝", LayerStatus.NOT_REACHED: "未走到"}

MESSAGES = Messages(
    {
        **{f"title_{int(layer)}": {"en": layer.title, "zh": _TITLES_ZH[layer]} for layer in ValidationLayer},
        **{f"status_{status.name}": {"en": status.value, "zh": _STATUSES_ZH[status]} for status in LayerStatus},
        "layer": {"en": "layer {number}", "zh": "第 {number} 层"},
        "label": {"en": "layer {number} ({title})", "zh": "第 {number} 层（{title}）"},
        "colon": {"en": ": ", "zh": "："},
        "rejected": {
            "en": "rejected at layer {number}: expected {expected}, found {found}",
            "zh": "在第 {number} 层被拒绝：期望 {expected}，实际 {found}",
        },
    }
)
say = MESSAGES.say


def layer_title(layer: ValidationLayer, language: Language | None = None) -> str:
    """``JSON syntax`` or ``JSON 语法``."""
    return say(f"title_{int(layer)}", language=language)


def layer_label(layer: ValidationLayer, language: Language | None = None) -> str:
    """``layer 1 (JSON syntax)`` or ``第 1 层（JSON 语法）``: the edition's ``display.layer_label``."""
    return say("label", language=language, number=int(layer), title=layer_title(layer, language))


def status_word(status: LayerStatus, language: Language | None = None) -> str:
    """``passed`` or ``通过``: what a ladder says beside a layer."""
    return say(f"status_{status.name}", language=language)


def ladder_words(language: Language | None = None) -> LadderWords:
    """The chapter's ladder words in the edition's language (English ones equal ``diagnosis.ENGLISH_WORDS``)."""
    return LadderWords(
        titles={layer: layer_title(layer, language) for layer in ValidationLayer},
        layer=say("layer", language=language),
        statuses={status: status_word(status, language) for status in LayerStatus},
        colon=say("colon", language=language),
        rejected=say("rejected", language=language),
    )


def format_ladder(diagnosis: Diagnosis) -> str:
    """The chapter's ``format_ladder`` in the edition's language: the ladder the notebooks print."""
    return format_chapter_ladder(diagnosis, ladder_words())
