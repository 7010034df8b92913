"""The parser's four layers and their ladder in the edition's language: the chapter imports no catalog, so its
English words (``LAYER_LABEL``, the layer titles, ``ENGLISH_WORDS``) are the catalog's ids, looked up here."""

from __future__ import annotations

from ..diagnosis import ENGLISH_WORDS, Diagnosis, LadderWords, LayerStatus
from ..diagnosis import format_ladder as format_chapter_ladder
from ..model_adapter import LAYER_LABEL, LAYER_NAME, ValidationLayer
from .error_words import expected_and_found
from .language import Language
from .words import _

__all__ = ["format_ladder", "layer_label", "layer_name", "layer_title", "status_word"]


def layer_title(layer: ValidationLayer, language: Language | None = None) -> str:
    return _(layer.title, language)


def layer_name(layer: ValidationLayer, language: Language | None = None) -> str:
    return _(LAYER_NAME, language, number=int(layer))


def layer_label(layer: ValidationLayer, language: Language | None = None) -> str:
    return _(LAYER_LABEL, language, number=int(layer), title=layer_title(layer, language))


def status_word(status: LayerStatus, language: Language | None = None) -> str:
    return _(status.value, language)


def format_ladder(diagnosis: Diagnosis, language: Language | None = None) -> str:
    words = LadderWords(
        titles={layer: layer_title(layer, language) for layer in ValidationLayer},
        layer=_(ENGLISH_WORDS.layer, language),
        statuses={status: status_word(status, language) for status in LayerStatus},
        colon=_(ENGLISH_WORDS.colon, language),
        rejected=_(ENGLISH_WORDS.rejected, language),
        facts=lambda error: expected_and_found(error, language),
    )
    return format_chapter_ladder(diagnosis, words)
