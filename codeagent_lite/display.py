"""How everything the package shows to a person or a model is written, said one way.

Rejection messages go back to a model, ladders go to a learner's screen, transcripts go to a
terminal. All of them quote untrusted text, and all of them must stay short and harmless
whatever that text holds: a megabyte of reply, a terminal escape sequence, a lone surrogate.
Keeping the few rules for that in one module means a learner reads them once, and a fix
(say, to the length cap) reaches every place at the same time.

Only the standard library is imported, and no module of the package: every module may use
this one, the chapter included, without an import circle. How a layer or a token count is
named belongs to the types themselves (``ValidationLayer.label``, ``model_adapter.usage_text``).
"""

from __future__ import annotations

import html
import unicodedata
from typing import Any

__all__ = [
    "ELLIPSIS",
    "QUOTE_CHARS",
    "display_width",
    "escape_html",
    "json_kind",
    "pad",
    "printable",
    "quote",
    "shorten",
    "shorten_counted",
]

ELLIPSIS = "…"
"""The one mark for "cut here", everywhere."""

QUOTE_CHARS = 24
"""Default length of a quoted excerpt of untrusted text, quotes and ellipsis included."""


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``…`` when something was cut."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, found {limit}")
    if len(text) <= limit:
        return text
    return text[: limit - 1] + ELLIPSIS


def shorten_counted(text: str, limit: int) -> str:
    """Like ``shorten``, but says how much was left out: for text a reader may need whole.

    The marker is added after ``limit`` characters of the text, so the result can be a
    little longer than ``limit``; the count is what tells a model (or a learner) that the
    rest exists.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, found {limit}")
    if len(text) <= limit:
        return text
    return f"{text[:limit]}{ELLIPSIS} [{len(text) - limit} more characters]"


def quote(text: str, limit: int = QUOTE_CHARS) -> str:
    """A quoted, escaped excerpt of untrusted text, at most ``limit`` characters long in the end.

    ``repr`` makes every control character and lone surrogate visible as an escape, which
    can make a character up to ten characters long; so the cap is applied to the quoted
    result, not to the text before quoting.
    """
    if limit < 4:
        raise ValueError(f"limit must be at least 4, found {limit}")
    head = text[:limit]  # repr of a long text would cost its whole length; no more than this can show
    quoted = repr(head)
    if len(head) == len(text) and len(quoted) <= limit:
        return quoted
    kept = min(len(head), limit - 3)  # two quotes and the ellipsis leave no more room than this
    while kept > 0 and len(repr(text[:kept])) + len(ELLIPSIS) > limit:
        kept -= 1
    return repr(text[:kept]) + ELLIPSIS


def printable(text: str) -> str:
    """``text`` with every control or format character written as an escape, for terminals and HTML.

    A model (or a file it read) can put ``\\x1b[2J`` or a right-to-left override into its
    reply; printed raw, that clears or garbles the learner's screen. Newlines and tabs are
    layout and stay, and so do spaces (Chinese text uses U+3000); everything else of Unicode
    category C (controls, format characters, surrogates, unassigned) and the line and
    paragraph separators become ``\\x..``, ``\\u....`` or ``\\U........``.
    """
    if text.isprintable():
        return text
    out = []
    for char in text:
        if char in "\n\t" or char.isprintable() or unicodedata.category(char) == "Zs":
            out.append(char)
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)


def escape_html(text: str) -> str:
    """``text`` made safe inside HTML (element text and attribute values alike), controls shown as escapes."""
    return html.escape(printable(text), quote=True)


def display_width(text: str) -> int:
    """Columns ``text`` takes in a monospaced font: a Chinese character takes two."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def pad(text: str, width: int) -> str:
    """``text`` followed by spaces up to ``width`` terminal columns, counting a Chinese character as two.

    ``str.ljust`` counts characters, so a column of Chinese titles padded with it comes out ragged.
    """
    return text + " " * max(0, width - display_width(text))


def json_kind(value: object) -> str:
    """Name a decoded JSON value the way a learner reads JSON, not the way Python stores it."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        # A 4000-digit integer is legal JSON but no part of a short message.
        return f"the number {shorten(repr(value), QUOTE_CHARS)}"
    if isinstance(value, str):
        return f"the string {quote(value)}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def __getattr__(name: str) -> Any:
    # The old home of ``usage_text``: importing model_adapter here at the top would make the
    # circle this module exists to avoid, so the name resolves on first use.
    if name == "usage_text":
        from . import model_adapter

        return getattr(model_adapter, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
