"""The one way the package shows untrusted text to a person or a model: short, quoted, escaped.

A reply may be a megabyte long or hold a terminal escape or a lone surrogate; one module means a fix (say, to
the length cap) reaches every place at once. It imports no module of the package, so every module, the chapter
included, may use it without an import circle.
"""

from __future__ import annotations

import bisect
import html
import unicodedata
from collections.abc import Mapping, Sequence

__all__ = ["ELLIPSIS", "JSON_KINDS", "N_", "QUOTE_CHARS", "display_width", "escape_html", "json_kind", "pad"]
__all__ += ["error_reason", "error_text", "few_names", "printable", "quote", "shorten", "shorten_counted"]

ELLIPSIS = "…"  # the one mark for "cut here"
QUOTE_CHARS = 24  # a quoted excerpt's default length, quotes and ellipsis included
NAMES_SHOWN = 5  # a reply with a thousand keys is still refused in one line


def N_(message: str, /) -> str:
    """Marks a catalog id in the chapter, which imports no translation code: the workbook looks these up itself."""
    return message


JSON_KINDS = {
    "number": N_("the number {value}"),
    "string": N_("the string {value}"),
    "array": N_("an array"),
    "object": N_("an object"),
}
"""``json_kind``'s English words; the workbook passes their translations."""


def _check_limit(limit: int, least: int) -> None:
    if limit < least:
        raise ValueError(f"limit must be at least {least}, found {limit}")


def shorten(text: str, limit: int) -> str:
    """At most ``limit`` characters, ending in ``…`` when something was cut."""
    _check_limit(limit, 1)
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def shorten_counted(text: str, limit: int) -> str:
    """Like ``shorten``, but the count of what was left out tells the reader (or a model) the rest exists."""
    _check_limit(limit, 1)
    return text if len(text) <= limit else f"{text[:limit]}{ELLIPSIS} [{len(text) - limit} more characters]"


def quote(text: str, limit: int = QUOTE_CHARS) -> str:
    """A ``repr`` excerpt of at most ``limit`` characters: capped after quoting, as one escape can take ten."""
    _check_limit(limit, 4)
    head = text[:limit]  # repr of a long text would cost its whole length; no more than this can show
    if len(head) == len(text) and len(quoted := repr(head)) <= limit:
        return quoted
    # The longest prefix whose repr and the ellipsis fit, found by bisection (a repr only grows with its text): one
    # character at a time took a repr per character, seconds for a limit of 60,000 escapes. Two quotes and the
    # ellipsis leave room for no more than ``limit - 3`` characters.
    sizes = range(min(len(head), limit - 3) + 1)
    fitting = bisect.bisect_right(sizes, limit - len(ELLIPSIS), key=lambda size: len(repr(text[:size])))
    return repr(text[: fitting - 1]) + ELLIPSIS  # ``fitting`` sizes fit, counting from 0


def few_names(names: Sequence[str], more: str = " and {count} more") -> str:
    """The first names, quoted, then how many more: ``more`` is in the reader's words (the model's are English)."""
    rest = len(names) - NAMES_SHOWN
    return ", ".join(map(quote, names[:NAMES_SHOWN])) + (more.format(count=rest) if rest > 0 else "")


def printable(text: str) -> str:
    """Control and format characters as escapes: printed raw, ``\\x1b[2J`` would clear the learner's screen.

    Newlines, tabs and spaces (Chinese text uses U+3000) are layout and stay.
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
    """Safe in element text and attribute values alike, with controls shown as escapes."""
    return html.escape(printable(text), quote=True)


def display_width(text: str) -> int:
    """Monospaced columns: a Chinese character takes two."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def pad(text: str, width: int) -> str:
    """Padded to ``width`` columns; ``str.ljust`` counts characters, so Chinese titles would come out ragged."""
    return text + " " * max(0, width - display_width(text))


def json_kind(value: object, words: Mapping[str, str] = JSON_KINDS) -> str:
    """A decoded JSON value named the way a learner reads JSON, not the way Python stores it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return words["number"].format(value=shorten(repr(value), QUOTE_CHARS))  # a 4000-digit integer is legal JSON
    if isinstance(value, str):
        return words["string"].format(value=quote(value))
    if isinstance(value, (list, dict)):
        return words["array" if isinstance(value, list) else "object"]
    return type(value).__name__


def error_reason(error: BaseException) -> str:
    """An OS error's reason without its path (``str(error)`` has one: the host's paths are no one else's business)."""
    strerror = getattr(error, "strerror", None)
    return strerror if isinstance(strerror, str) and strerror else type(error).__name__


def error_text(error: BaseException) -> str:
    """``str(error)`` that cannot raise, as a plain ``str``: a tool's or a library's exception is foreign code, its
    ``__str__`` too (``sys.exit()`` in it included), and so are the methods of a ``str`` subclass it returns."""
    try:
        return str.__str__(str(error))
    except KeyboardInterrupt:
        raise  # Ctrl-C while a message was made: the person asked to stop
    except BaseException:
        return "(the error's message cannot be shown)"
