"""The workbook's words in the learner's language: one gettext catalog, read with the standard library.

Every learner-facing sentence is written in the code once, in English, as ``_("…")``; that English is the
message id. Its Chinese (and its English, which may be polished without touching the code) lives in
``codeagent_lite/locale/{zh,en}/LC_MESSAGES/codeagent_lite.po``, where a translator sees the whole catalog
with the tools every translator knows (Poedit, Weblate, ``msgfmt --check``). ``make catalog`` runs Babel to
extract the ids into ``codeagent_lite.pot``, merge them into both ``.po`` files and compile the ``.mo`` files
that ``gettext`` reads. flit_core has no build hook, so the ``.mo`` files are committed;
``tests/test_catalog.py`` compiles the ``.po`` files afresh and checks that they match, that nothing is
untranslated or fuzzy, and that every translation keeps its message's ``{name}`` placeholders.

Placeholders are ``str.format`` names, filled after the lookup: ``_("{file}.py did not load", file=name)``.
A message without fields is returned as it is, so an id may hold literal braces (a JSON example) as long as
it is never given fields. ``N_("…")`` marks an id that is stored now (a check's name in the contract, a
label in a table) and translated where it is shown, with ``_(stored)``; ``_p(context, "…")`` tells apart two
ids spelt the same in English that need different words in Chinese.

The language is ``language=`` when a caller passes one, else ``language.edition_language()`` (``CAL_LANG``,
the notebook's edition folder, an ``*_zh`` assignment, the locale), read at each call, so a notebook that
sets ``CAL_LANG`` sees the change at once.

How to add words: write ``_("<English>", **fields)`` where they are shown, run ``make catalog`` (the new id
appears in both ``.po`` files), fill the ``zh`` ``msgstr``, run ``make catalog`` again to compile. Never read
our own words back with a regular expression: keep the value they were made from (a layer, an error code).
"""

from __future__ import annotations

import gettext
from functools import cache
from pathlib import Path

from .language import Language, edition_language

__all__ = ["DOMAIN", "LOCALE_DIR", "N_", "_", "_p", "catalog"]

DOMAIN = "codeagent_lite"
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
"""``codeagent_lite/locale``: shipped inside the package (flit ships every file under it)."""


@cache
def catalog(language: Language) -> gettext.GNUTranslations:
    """The compiled catalog of ``language``; a missing ``.mo`` is an error, never a silent English fallback."""
    with (LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.mo").open("rb") as compiled:
        return gettext.GNUTranslations(compiled)


def _(message: str, /, language: str | None = None, **fields: object) -> str:
    """``message`` (an English id) in the chosen language, its ``{name}`` placeholders filled from ``fields``."""
    text = catalog(edition_language(requested=language)).gettext(message)
    return text.format(**fields) if fields else text


def _p(context: str, message: str, /, language: str | None = None, **fields: object) -> str:
    """``_`` for an id that means different things in different places: ``context`` tells them apart."""
    text = catalog(edition_language(requested=language)).pgettext(context, message)
    return text.format(**fields) if fields else text


def N_(message: str, /) -> str:
    """``message`` unchanged: marks an id for ``pybabel extract`` where it is stored, not yet shown."""
    return message
