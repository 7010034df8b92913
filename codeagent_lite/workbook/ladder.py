"""The parser's four layers and their ladder, named in the edition's language.

The chapter names a layer ``layer 1 (JSON syntax)`` and prints its ladder in English: it
imports only the standard library, so it cannot know that a learner opened
``notebooks/zh``. Its English words (``model_adapter.LAYER_LABEL``, the layer titles,
``diagnosis.ENGLISH_WORDS``) are written once, there, and are the catalog's ids; this module
looks them up and hands the translations back (``diagnosis.format_ladder`` takes its words as a
parameter), so the notebooks, the playgrounds and verify name every layer the same way in each
language. The parser's own messages inside a ladder stay English: they are the series' phrases.
"""

from __future__ import annotations

from ..diagnosis import ENGLISH_WORDS, Diagnosis, LadderWords, LayerStatus
from ..diagnosis import format_ladder as format_chapter_ladder
from ..model_adapter import LAYER_LABEL, LAYER_NAME, ValidationLayer
from .language import Language
from .words import _

__all__ = ["format_ladder", "ladder_words", "layer_label", "layer_name", "layer_title", "status_word"]


def layer_title(layer: ValidationLayer, language: Language | None = None) -> str:
    """``JSON syntax`` or ``JSON 语法``."""
    return _(layer.title, language)


def layer_name(layer: ValidationLayer, language: Language | None = None) -> str:
    """``layer 1`` or ``第 1 层``: a layer without its title."""
    return _(LAYER_NAME, language, number=int(layer))


def layer_label(layer: ValidationLayer, language: Language | None = None) -> str:
    """``layer 1 (JSON syntax)`` or ``第 1 层（JSON 语法）``: the edition's ``ValidationLayer.label``."""
    return _(LAYER_LABEL, language, number=int(layer), title=layer_title(layer, language))


def status_word(status: LayerStatus, language: Language | None = None) -> str:
    """``passed`` or ``通过``: what a ladder says beside a layer."""
    return _(status.value, language)


def ladder_words(language: Language | None = None) -> LadderWords:
    """The chapter's ladder words in the edition's language (the English ones are ``diagnosis.ENGLISH_WORDS``)."""
    return LadderWords(
        titles={layer: layer_title(layer, language) for layer in ValidationLayer},
        layer=_(ENGLISH_WORDS.layer, language),
        statuses={status: status_word(status, language) for status in LayerStatus},
        colon=_(ENGLISH_WORDS.colon, language),
        rejected=_(ENGLISH_WORDS.rejected, language),
    )


def format_ladder(diagnosis: Diagnosis) -> str:
    """The chapter's ``format_ladder`` in the edition's language: the ladder the notebooks print."""
    return format_chapter_ladder(diagnosis, ladder_words())
