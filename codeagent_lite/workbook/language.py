"""Which language the learner's notebook speaks.

The two editions' code cells are identical (a test compares them), so the language is read from where the notebook
runs (a kernel for ``notebooks/zh/x.ipynb`` runs in ``notebooks/zh``); ``CAL_LANG`` overrides that for a terminal
or a classroom server. An nbgrader copy runs far from any ``zh`` folder (``autograded/<student>/exercises_zh``), so
a folder named ``*_zh`` speaks Chinese too: a Chinese class's feedback needs no setting to forget. Where no folder
says it, the locale does. The parser's own rejection messages stay English: they are what goes back to the model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

__all__ = ["ENV_VAR", "LANGUAGES", "LOCALE_VARS", "Language", "assignment_language", "edition_language"]

Language = Literal["en", "zh"]
LANGUAGES: tuple[Language, ...] = ("en", "zh")
_BY_CODE: Mapping[str, Language] = {language: language for language in LANGUAGES}
ENV_VAR = "CAL_LANG"
LOCALE_VARS = ("LC_ALL", "LC_MESSAGES", "LANG")  # the POSIX order: the first one set names the locale of messages


def _language_of(code: str) -> Language | None:
    return _BY_CODE.get(code.strip().lower()[:2])


def assignment_language(name: str) -> Language | None:
    """``exercises_zh`` → zh: an nbgrader assignment's folder names its edition (release, fetched copy, grading)."""
    stem, _underscore, suffix = name.rpartition("_")
    return _BY_CODE.get(suffix) if stem else None


def edition_language(
    cwd: Path | None = None, environ: Mapping[str, str] | None = None, *, requested: str | None = None
) -> Language:
    """``requested`` if it names a language we have, else ``CAL_LANG``, else an assignment folder ``*_zh``/``*_en``,
    else the nearest ``zh``/``en`` folder, else the locale (``zh_*`` → Chinese), else English."""
    if requested is not None and (language := _language_of(requested)) is not None:
        return language
    environ = os.environ if environ is None else environ
    chosen = _language_of(environ.get(ENV_VAR, ""))
    if chosen is not None:
        return chosen
    return _folder_language(Path.cwd() if cwd is None else cwd) or _locale_language(environ)


def _folder_language(folder: Path) -> Language | None:
    nearest = next((_BY_CODE[part] for part in reversed(folder.parts) if part in _BY_CODE), None)
    return assignment_language(folder.name) or nearest


def _locale_language(environ: Mapping[str, str]) -> Language:
    locale = next((environ[name] for name in LOCALE_VARS if environ.get(name)), "")
    return "zh" if locale.lower().startswith("zh") else "en"
