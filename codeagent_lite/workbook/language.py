"""Which language the learner's notebook speaks.

The workbook comes in two editions, ``notebooks/en/`` and ``notebooks/zh/``, whose code cells
are identical (a test compares them), so no cell can say "now speak Chinese". The language
is therefore read from where the notebook runs: a kernel started for ``notebooks/zh/x.ipynb``
has ``notebooks/zh`` as its working directory. ``CAL_LANG`` overrides that (``zh``,
``zh_CN.UTF-8``, ``en``, ...), for a terminal or a classroom server. An nbgrader copy of a notebook runs in its
assignment's folder (``release/exercises_zh``, a student's ``~/exercises_zh``, ``autograded/<student>/exercises_zh``),
far from any ``zh`` folder, so a working folder named ``*_zh`` speaks Chinese too: a Chinese class's graded
notebooks and feedback pages come out in Chinese with no setting to forget.

Where no folder says it (a terminal, ``python -m codeagent_lite verify`` from the repository's root), the
locale does: ``LC_ALL``, else ``LC_MESSAGES``, else ``LANG`` naming ``zh_*`` speaks Chinese, as every gettext
program does. The words themselves are in one gettext catalog (``words``, ``codeagent_lite/locale``).

The parser's own rejection messages are not translated: they are the series' English phrases,
part of its API and what goes back to the model. The Chinese notebooks explain them in Chinese.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

__all__ = ["ENV_VAR", "LANGUAGES", "LOCALE_VARS", "Language", "edition_language"]

Language = Literal["en", "zh"]
LANGUAGES: tuple[Language, ...] = ("en", "zh")
ENV_VAR = "CAL_LANG"


def _language_of(code: str) -> Language | None:
    prefix = code.strip().lower()[:2]
    if prefix == "zh":
        return "zh"
    if prefix == "en":
        return "en"
    return None


def _assignment_suffix(name: str) -> Language | None:
    """``exercises_zh`` → zh: an nbgrader assignment's folder names its edition (release, fetched copy, grading)."""
    stem, underscore, suffix = name.rpartition("_")
    if underscore and stem and suffix in LANGUAGES:
        return _language_of(suffix)
    return None


LOCALE_VARS = ("LC_ALL", "LC_MESSAGES", "LANG")
"""The POSIX order: the first of these that is set names the locale of messages."""


def edition_language(
    cwd: Path | None = None, environ: Mapping[str, str] | None = None, *, requested: str | None = None
) -> Language:
    """The one answer to "which language?": ``requested`` (a caller's explicit choice) if it names a language we
    have, else ``CAL_LANG``, else the kernel's own folder if it is an assignment named ``*_zh``/``*_en``, else the
    nearest ``zh``/``en`` folder (the notebook's edition), else the locale (``zh_*`` → Chinese), else English."""
    if requested is not None and (language := _language_of(requested)) is not None:
        return language
    environ = os.environ if environ is None else environ
    chosen = _language_of(environ.get(ENV_VAR, ""))
    if chosen is not None:
        return chosen
    folder = Path.cwd() if cwd is None else cwd
    suffix = _assignment_suffix(folder.name)
    if suffix is not None:
        return suffix
    for part in reversed(folder.parts):
        if part in LANGUAGES:
            return _language_of(part) or "en"
    return _locale_language(environ)


def _locale_language(environ: Mapping[str, str]) -> Language:
    """``zh_CN.UTF-8`` → zh; any other locale (``C.UTF-8``, ``en_US``, ``fr_FR``) or none → en."""
    for name in LOCALE_VARS:
        value = environ.get(name, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"
