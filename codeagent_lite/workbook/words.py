"""The workbook's words in the learner's language: one gettext catalog, read with the standard library.

Every learner-facing sentence is written once, in English, as ``_("…", **fields)``: that English is the message id,
its Chinese lives in ``codeagent_lite/locale/zh/LC_MESSAGES/codeagent_lite.po``, where a translator's tools see the
whole catalog. ``N_("…")`` (the chapter's own, from display) marks an id stored now and shown later
(``_(stored)``); ``_p(context, "…")`` tells apart ids spelt alike that need different Chinese. Fields are filled
after the lookup (a message given none may hold literal braces); the language is read at each call, so setting
``CAL_LANG`` in a notebook acts at once. To add words: write them so, run ``make catalog``, fill the ``zh``
``msgstr``, run it again (flit_core has no build hook, so the ``.mo`` files are committed). Never read our own words
back: keep the value they were made from.
"""

from __future__ import annotations

import gettext
from functools import cache
from pathlib import Path

from ..display import N_
from .language import Language, edition_language

__all__ = ["DOMAIN", "LOCALE_DIR", "N_", "_", "_p", "catalog"]

DOMAIN = "codeagent_lite"
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"


@cache
def catalog(language: Language) -> gettext.GNUTranslations:
    """The compiled catalog of ``language``; a missing ``.mo`` is an error, never a silent English fallback."""
    with (LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.mo").open("rb") as compiled:
        return gettext.GNUTranslations(compiled)


def _(message: str, /, language: str | None = None, **fields: object) -> str:
    text = catalog(edition_language(requested=language)).gettext(message)
    return text.format(**fields) if fields else text


def _p(context: str, message: str, /, language: str | None = None, **fields: object) -> str:
    text = catalog(edition_language(requested=language)).pgettext(context, message)
    return text.format(**fields) if fields else text
