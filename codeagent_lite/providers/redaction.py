"""Keeping a secret out of every message and log line a provider writes, in whatever spelling.

A server that refuses a key often quotes it, and not always literally or whole: a JSON
body may write ``/`` as ``\\/`` or any character as ``\\u0073``, a proxy may percent-encode
it (sometimes twice: ``%2573``), an HTML page may use ``&#115;`` or ``&amp;#115;``, a
header echo shows it in base64 (``Basic …``), and a log line may cut it after 40 of its
46 characters. Removing only the literal key leaves all of those on the learner's screen.

So the text is read the way a browser, a JSON decoder or a URL decoder would read it,
up to ``_MAX_LAYERS`` times over (each escape undone, remembering where in the original
text every character came from), and in each reading, and in it with spaces and zero-width characters taken
out, any run of ``_RUN`` or more consecutive characters of a secret is found; those places in the original text
become ``***``. Derived spellings that are not escapes (base64 at each of its three alignments,
hexadecimal) are secrets of their own.

Credentials can also hide in the server address (``https://user:pass@host/v1`` or an
``?api-key=`` query); ``redact_url`` is the address as it may be shown. ``SecretLogFilter``
applies all of this to what the HTTP libraries log, for a learner who turns logging on.
"""

from __future__ import annotations

import base64
import binascii
import html
import logging
import re
import unicodedata
import urllib.parse
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["MASK", "Redactor", "SecretLogFilter", "protect_library_logs", "redact_url", "url_secrets"]

MASK = "***"
"""What a secret is replaced by."""

_MIN_SECRET_CHARS = 4
"""Shorter "secrets" (a user name like ``a``) would blank out ordinary words; they are not hunted."""

_RUN = 8
"""A run this long of a secret's characters is hidden: enough to be specific, too short to leak much."""

_HEX_RUN = 16
"""Hexadecimal spends two characters per byte, so its runs are counted twice as long."""

_MAX_LAYERS = 4
"""How many times escapes are undone (``%252573`` is three layers deep); past that, nobody reads it."""

# One escaped character, in the spellings of JSON, Python, URLs and HTML.
_ESCAPE = re.compile(
    r"%(?P<pct>[0-9a-fA-F]{2})"
    r"|\\u\{(?P<ub>[0-9a-fA-F]{1,6})\}|\\u(?P<u4>[0-9a-fA-F]{4})|\\U(?P<u8>[0-9a-fA-F]{8})|\\x(?P<x2>[0-9a-fA-F]{2})"
    r"|\\(?P<lit>[\\/\"'`])"
    r"|&#(?P<dec>[0-9]{1,7});?|&#[xX](?P<hex>[0-9a-fA-F]{1,6});?"
    r"|&(?P<named>amp|lt|gt|quot|apos);"
)


def _unescaped(match: re.Match[str]) -> str | None:
    """The character one escape stands for, or None when it names no character."""
    kind = match.lastgroup
    value = match.group(kind) if kind else None
    if kind is None or value is None:
        return None
    if kind == "lit":
        return value
    if kind == "named":
        return html.unescape(f"&{value};")
    code = int(value, 10 if kind == "dec" else 16)
    return chr(code) if code < 0x110000 else None


@dataclass(frozen=True, slots=True)
class _Reading:
    """The text as read after undoing escapes, and for each character where it came from."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]


def _read_once(reading: _Reading) -> _Reading | None:
    """``reading`` with one more layer of escapes undone, or None when it had none."""
    text = reading.text
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    last = 0
    for match in _ESCAPE.finditer(text):
        char = _unescaped(match)
        if char is None:
            continue
        pieces.append(text[last : match.start()])
        starts.extend(reading.starts[last : match.start()])
        ends.extend(reading.ends[last : match.start()])
        pieces.append(char)
        starts.append(reading.starts[match.start()])
        ends.append(reading.ends[match.end() - 1])
        last = match.end()
    if not pieces:
        return None
    pieces.append(text[last:])
    starts.extend(reading.starts[last:])
    ends.extend(reading.ends[last:])
    return _Reading("".join(pieces), tuple(starts), tuple(ends))


def _without_invisibles(reading: _Reading) -> _Reading | None:
    """``reading`` without spaces and format characters (U+200B and its kind), or None when it has none: a key
    with a zero-width space after each character is still read as the key by whoever looks at it."""
    kept = [i for i, char in enumerate(reading.text) if not (char.isspace() or unicodedata.category(char) == "Cf")]
    if len(kept) == len(reading.text):
        return None
    text = "".join(reading.text[i] for i in kept)
    return _Reading(text, tuple(reading.starts[i] for i in kept), tuple(reading.ends[i] for i in kept))


def _base64_forms(secret: bytes) -> list[str]:
    """The base64 of ``secret`` wherever it may sit in a longer encoded text (three alignments, two alphabets).

    Of each encoding, only the characters made of the secret's own bits are kept: the ones
    that mix in what comes before or after depend on the neighbours.
    """
    forms: list[str] = []
    for offset in range(3):
        first = -(-8 * offset // 6)
        last = 8 * (offset + len(secret)) // 6
        encoded = base64.b64encode(bytes(offset) + secret).decode("ascii")[first:last]
        forms.extend({encoded, encoded.replace("+", "-").replace("/", "_")})
    return forms


def _runs(secret: str, length: int) -> set[str]:
    length = min(length, len(secret))
    return {secret[start : start + length] for start in range(len(secret) - length + 1)}


@dataclass(frozen=True, slots=True)
class Redactor:
    """Replaces each run of a few secrets' characters, in any spelling, by ``***``.

    ``finders`` are lookahead patterns: each match marks where a run of ``width`` characters
    of some secret starts, so overlapping runs are all found and merged.
    """

    finders: tuple[tuple[re.Pattern[str], int], ...]

    @classmethod
    def for_secrets(cls, secrets: Iterable[str]) -> Redactor:
        kept = {secret for secret in secrets if len(secret) >= _MIN_SECRET_CHARS}
        runs: dict[int, set[str]] = {}
        for secret in kept:
            for form in (secret, secret.replace(" ", "+")):
                runs.setdefault(min(_RUN, len(form)), set()).update(_runs(form, _RUN))
            raw = secret.encode("utf-8", "surrogatepass")
            for form in _base64_forms(raw):
                if len(form) >= _MIN_SECRET_CHARS:
                    runs.setdefault(min(_RUN, len(form)), set()).update(_runs(form, _RUN))
            hexadecimal = binascii.hexlify(raw).decode("ascii")
            runs.setdefault(min(_HEX_RUN, len(hexadecimal)), set()).update(_runs(hexadecimal, _HEX_RUN))
        finders = tuple(
            (re.compile("(?=(?:" + "|".join(map(re.escape, sorted(found))) + "))", re.IGNORECASE), width)
            for width, found in sorted(runs.items())
        )
        return cls(finders)

    def scrub(self, text: str) -> str:
        if not self.finders or not text:
            return text
        hidden: list[tuple[int, int]] = []
        reading: _Reading | None = _Reading(text, tuple(range(len(text))), tuple(range(1, len(text) + 1)))
        for _ in range(_MAX_LAYERS + 1):
            if reading is None:
                break
            squeezed = _without_invisibles(reading)
            for seen in (reading,) if squeezed is None else (reading, squeezed):
                for finder, width in self.finders:
                    for match in finder.finditer(seen.text):
                        hidden.append((seen.starts[match.start()], seen.ends[match.start() + width - 1]))
            reading = _read_once(reading)
        return _masked(text, hidden)


def _masked(text: str, hidden: list[tuple[int, int]]) -> str:
    """``text`` with each union of overlapping or touching ``hidden`` spans replaced by one ``***``."""
    if not hidden:
        return text
    pieces: list[str] = []
    last = 0
    current_start, current_end = -1, -1
    for start, end in sorted(hidden):
        if start <= current_end:
            current_end = max(current_end, end)
            continue
        if current_end >= 0:
            pieces.extend((text[last:current_start], MASK))
            last = current_end
        current_start, current_end = start, end
    pieces.extend((text[last:current_start], MASK, text[current_end:]))
    return "".join(pieces)


def url_secrets(url: str) -> list[str]:
    """The parts of ``url`` that may be credentials: user name, password, and every query value."""
    parts = urllib.parse.urlsplit(url)
    secrets = [part for part in (parts.username, parts.password) if part]
    secrets.extend(value for _, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=False))
    return secrets


def redact_url(url: str) -> str:
    """``url`` as it may be printed: user name, password and query values replaced by ``***``."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(f"{name}={MASK}" for name, _ in urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


# --------------------------------------------------------------------------- logs

_LIBRARY_LOGGERS = ("openai", "httpx", "httpx2", "httpcore", "httpcore2")
"""Where the official client and its HTTP libraries log requests, URLs and headers."""

# What is masked in a library's log line even when no provider knows it as a secret:
# credentials in a URL, query values, and the value of any header or field that carries one.
_CREDENTIAL_PATTERNS = (
    (re.compile(r"(?<=://)[^/@\s'\"]*@"), MASK + "@"),
    (re.compile(r"(?<=[?&])([^=&\s#'\"]+)=[^&\s#'\"]*"), r"\1=" + MASK),
    (re.compile(r"\b(Bearer|Basic|Token)\s+[^\s'\",;)]+", re.IGNORECASE), r"\1 " + MASK),
    (
        re.compile(
            r"""(['"]?(?:authorization|proxy-authorization|api[-_]?key|x-api-key|cookie|set-cookie|"""
            r"""password|secret|token)['"]?\s*[:=]\s*)(?:'[^']*'|"[^"]*"|[^\s,;)}]+)""",
            re.IGNORECASE,
        ),
        r"\1" + MASK,
    ),
)


_SHOWN_HEADERS = frozenset(
    {
        "content-type",
        "content-length",
        "content-encoding",
        "transfer-encoding",
        "connection",
        "date",
        "server",
        "retry-after",
        "x-request-id",
        "request-id",
        "openai-processing-ms",
    }
)
"""Headers whose values a log line may show; every other value is masked (as Azure's SDK logs them)."""

# A header as httpcore logs it, (b'Name', b'value'), and as a Headers repr shows it, 'name': 'value'.
_LOGGED_HEADER = re.compile(
    r"""\((b?)(['"])([^'"]*)\2, b?(['"])(?:\\.|(?!\4).)*\4\)"""
    r"""|(['"])([\w-]+)\5: (['"])(?:\\.|(?!\7).)*\7"""
)


def _mask_header(match: re.Match[str]) -> str:
    if match.group(3) is not None:
        prefix, quote_mark, name = match.group(1), match.group(2), match.group(3)
        if name.lower() in _SHOWN_HEADERS:
            return match.group(0)
        return f"({prefix}{quote_mark}{name}{quote_mark}, {prefix}'{MASK}')"
    name = match.group(6)
    if name.lower() in _SHOWN_HEADERS:
        return match.group(0)
    return f"{match.group(5)}{name}{match.group(5)}: '{MASK}'"


class SecretLogFilter(logging.Filter):
    """Rewrites each record of the HTTP libraries with every known secret and credential masked.

    Providers register their ``Redactor`` with ``watch``; it is forgotten when the provider
    is. A record is formatted here (message, arguments and traceback) and replaced by its
    masked text, so no handler or formatter the learner configures can see the original.
    """

    def __init__(self) -> None:
        super().__init__()
        self._redactors: weakref.WeakKeyDictionary[object, Redactor] = weakref.WeakKeyDictionary()

    def watch(self, owner: object, redactor: Redactor) -> None:
        self._redactors[owner] = redactor

    def mask(self, text: str) -> str:
        for redactor in list(self._redactors.values()):
            text = redactor.scrub(text)
        text = _LOGGED_HEADER.sub(_mask_header, text)
        for pattern, replacement in _CREDENTIAL_PATTERNS:
            text = pattern.sub(replacement, text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, _MASKED, False):
            return True
        setattr(record, _MASKED, True)
        try:
            text = record.getMessage()
            if record.exc_info:
                text += "\n" + logging.Formatter().formatException(record.exc_info)
            if record.stack_info:
                text += "\n" + record.stack_info
            record.msg = self.mask(text)
        except Exception:  # a log line is never worth a crash, nor a leak
            record.msg = "(a log line of the HTTP client, withheld: it could not be checked for secrets)"
        record.args = None
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        return True


_MASKED = "codeagent_lite_masked"
"""Set on a record once masked, so the factory and the logger's filter do the work once."""

_LOG_FILTER = SecretLogFilter()
_factory_installed = False


def _install_record_factory() -> None:
    """Mask records of the libraries as they are created, for loggers that do not exist yet too."""
    global _factory_installed
    if _factory_installed:
        return
    _factory_installed = True
    previous = logging.getLogRecordFactory()

    def masking_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if str(record.name).split(".", 1)[0] in _LIBRARY_LOGGERS:
            _LOG_FILTER.filter(record)
        return record

    logging.setLogRecordFactory(masking_factory)


def protect_library_logs(owner: object, redactor: Redactor) -> None:
    """Mask ``redactor``'s secrets (and any credential) in what the HTTP libraries log, for as long as ``owner`` lives.

    A logger's filters see only the records logged to it by name, not those of its
    children, so the filter goes on every logger of those libraries that exists now (call
    this after the client is built and its modules are imported); a wrapped record factory
    catches the loggers created later, as long as no program replaces the factory.
    """
    _LOG_FILTER.watch(owner, redactor)
    _install_record_factory()
    for name in {*_LIBRARY_LOGGERS, *logging.root.manager.loggerDict}:
        logger = logging.getLogger(name)
        if name.split(".", 1)[0] in _LIBRARY_LOGGERS and _LOG_FILTER not in logger.filters:
            logger.addFilter(_LOG_FILTER)
