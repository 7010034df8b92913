"""Keeping a secret out of every message and log line a provider writes, in whatever spelling.

A server that refuses a key often quotes it, and not always literally or whole: JSON writes ``\\/`` or
``\\u0073``, a proxy percent-encodes (sometimes twice: ``%2573``), HTML writes ``&#115;``, a header echo is
base64, a log line cuts the key after 40 characters. So the text is read as a browser, a JSON or URL decoder
would read it, up to ``_MAX_LAYERS`` times over (remembering where each character came from), with and without
spaces and zero-width characters, and every run of ``_RUN`` characters of a secret becomes ``***`` in the
original. Base64, base32 (at each alignment) and hexadecimal spellings, of the UTF-8 or UTF-16 bytes, are secrets
of their own.
"""

from __future__ import annotations

import base64
import binascii
import functools
import html
import logging
import re
import unicodedata
import urllib.parse
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..display import printable

__all__ = ["MASK", "Redactor", "SecretLogFilter", "protect_library_logs", "redact_url", "url_secrets"]

MASK = "***"
_MIN_SECRET_CHARS = 4  # shorter "secrets" (a user name like "a") would blank out ordinary words
_RUN = 8  # a run this long of a secret's characters is hidden: specific enough, too short to leak much
_HEX_RUN = 16  # hexadecimal spends two characters per byte
_BYTE_ENCODINGS = ("utf-8", "utf-16-le", "utf-16-be")  # what a secret's bytes may be before base64 or hex
_MAX_LAYERS = 4  # how often escapes are undone ("%252573" is three layers deep); past that, nobody reads it

# One escaped character, in the spellings of JSON, Python, URLs and HTML.
_ESCAPE = re.compile(
    r"%(?P<pct>[0-9a-fA-F]{2})"
    r"|\\u\{(?P<ub>[0-9a-fA-F]{1,6})\}|\\u(?P<u4>[0-9a-fA-F]{4})|\\U(?P<u8>[0-9a-fA-F]{8})|\\x(?P<x2>[0-9a-fA-F]{2})"
    r"|\\(?P<lit>[\\/\"'`])|\\(?P<oct>[0-3][0-7]{2})"
    r"|&#(?P<dec>[0-9]{1,7});?|&#[xX](?P<hex>[0-9a-fA-F]{1,6});?"
    r"|&(?P<named>amp|lt|gt|quot|apos);"
)


def _unescaped(match: re.Match[str]) -> str | None:
    # Each alternative of _ESCAPE has one named group: the one that matched says how to read its value.
    kind, value = next((kind, value) for kind, value in match.groupdict().items() if value is not None)
    if kind == "lit":
        return value
    if kind == "named":
        return html.unescape(f"&{value};")
    code = int(value, {"dec": 10, "oct": 8}.get(kind, 16))
    return chr(code) if code < 0x110000 else None


@dataclass(frozen=True, slots=True)
class _Reading:
    """The text as read after undoing escapes, and for each character the span of the original it came from."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def picked(self, spans: list[tuple[str, int, int]]) -> _Reading:
        return _Reading(
            "".join(char for char, _, _ in spans),
            tuple(self.starts[first] for _, first, _ in spans),
            tuple(self.ends[last] for _, _, last in spans),
        )


def _read_once(reading: _Reading) -> _Reading | None:
    text, last = reading.text, 0
    spans: list[tuple[str, int, int]] = []
    for match in _ESCAPE.finditer(text):
        char = _unescaped(match)
        if char is not None:
            spans += [(text[i], i, i) for i in range(last, match.start())]
            spans.append((char, match.start(), match.end() - 1))
            last = match.end()
    if not spans:
        return None
    return reading.picked(spans + [(text[i], i, i) for i in range(last, len(text))])


_INVISIBLE = frozenset({"Cc", "Cf", "Mn", "Me"})  # controls (NUL, ESC), format (U+200B…), combining marks


def _without_invisibles(reading: _Reading) -> _Reading | None:
    """``reading`` without spaces, control, format and combining characters and in compatibility form, or None when
    that changes nothing: a key with a zero-width space, a NUL (UTF-16 read as bytes) or an accent after each
    character, or in fullwidth letters (ｓｋ), is still the key to a reader."""
    kept = [
        (_compatible(c), i, i)
        for i, c in enumerate(reading.text)
        if not (c.isspace() or unicodedata.category(c) in _INVISIBLE)
    ]
    plain = reading.picked(kept)
    return None if plain.text == reading.text else plain


def _compatible(char: str) -> str:
    folded = unicodedata.normalize("NFKC", char)
    return folded if len(folded) == 1 else char


_ENCODINGS = ((base64.b64encode, 3, 6), (base64.b32encode, 5, 5))
"""Each binary-to-text spelling: its encoder, the bytes of one group, the bits one character holds."""


def _encoded_forms(secret: bytes) -> list[str]:
    """The base64 and base32 of ``secret`` at each alignment in a longer text (base64 in both alphabets): only
    the characters made of the secret's own bits, since the others depend on the neighbours."""
    forms: list[str] = []
    for encode, group, bits in _ENCODINGS:
        for offset in range(group):
            first, last = -(-8 * offset // bits), 8 * (offset + len(secret)) // bits
            encoded = encode(bytes(offset) + secret).decode("ascii")[first:last]
            forms.extend({encoded, encoded.replace("+", "-").replace("/", "_")})
    return forms


@dataclass(frozen=True, slots=True, repr=False)  # its runs spell the secrets: a repr would show them
class Redactor:
    """Replaces each run of a few secrets' characters, in any spelling, by ``***``.

    ``runs`` holds, for each width, every run of that many characters of every spelling, in ``_folded`` case:
    looking each window of the text up in a set costs the same however many spellings there are, where a
    pattern of thousands of alternatives is tried one by one at every position.
    """

    runs: tuple[tuple[int, frozenset[str]], ...]

    @classmethod
    def for_secrets(cls, secrets: Iterable[str]) -> Redactor:
        runs: dict[int, set[str]] = {}

        def hunt(form: str, run: int = _RUN) -> None:
            width = min(run, len(form))
            runs.setdefault(width, set()).update(form[i : i + width] for i in range(len(form) - width + 1))

        for secret in {secret for secret in secrets if len(secret) >= _MIN_SECRET_CHARS}:
            for form in (secret, secret.replace(" ", "+")):
                hunt(form)
            for encoding in _BYTE_ENCODINGS:
                raw = secret.encode(encoding, "surrogatepass")
                for form in _encoded_forms(raw):
                    if len(form) >= _MIN_SECRET_CHARS:
                        hunt(form)
                hunt(binascii.hexlify(raw).decode("ascii"), _HEX_RUN)
        return cls(tuple((width, frozenset(map(_folded, found))) for width, found in sorted(runs.items())))

    def scrub(self, text: str) -> str:
        if not self.runs or not text:
            return text
        hidden: list[tuple[int, int]] = []
        reading: _Reading | None = _Reading(text, tuple(range(len(text))), tuple(range(1, len(text) + 1)))
        for _ in range(_MAX_LAYERS + 1):
            if reading is None:
                break
            for seen in filter(None, (reading, _without_invisibles(reading))):
                folded = _folded(seen.text)
                for width, found in self.runs:
                    for start in range(len(folded) - width + 1):
                        if folded[start : start + width] in found:
                            hidden.append((seen.starts[start], seen.ends[start + width - 1]))
            reading = _read_once(reading)
        return _masked(text, hidden)


def _folded(text: str) -> str:
    """Case-folded a character at a time, so positions stay those of the text ("ß" folds to two: it stays) and a
    run folds as it does inside any text; "ς", "σ" and "Σ" all become "σ"."""
    return "".join(char.casefold() if len(char.casefold()) == 1 else char for char in text)


def _masked(text: str, hidden: list[tuple[int, int]]) -> str:
    """``text`` with each union of overlapping or touching ``hidden`` spans replaced by one ``***``."""
    pieces: list[str] = []
    shown_from = 0
    for start, end in sorted(hidden):
        if start > shown_from or not pieces:
            pieces += (text[shown_from:start], MASK)
        shown_from = max(shown_from, end)
    return "".join(pieces) + text[shown_from:]


_PATH_PARAMETER = re.compile(r"(;[^/;=]*=)([^/;]*)")  # "/v1;key=..." : a value that may be a credential


def _query_items(query: str) -> list[tuple[str, str | None]]:
    """Each item of a query, decoded: its name and value, or the item itself and None when it has no "=" (a bare
    ``?sk-...`` is a value, most likely the key)."""
    items = (item.partition("=") for item in query.split("&") if item)
    return [
        (urllib.parse.unquote_plus(name), urllib.parse.unquote_plus(value) if eq else None) for name, eq, value in items
    ]


def url_secrets(url: str) -> list[str]:
    """The parts of ``url`` that may be credentials: user name, password, every query value (a bare item too) and
    path parameter's value, and the fragment (``#access_token=...``; a server never needs it)."""
    parts = urllib.parse.urlsplit(url)
    secrets = [part for part in (parts.username, parts.password, parts.fragment) if part]
    secrets += [value for _, value in _PATH_PARAMETER.findall(parts.path) if value]
    return secrets + [name if value is None else value for name, value in _query_items(parts.query) if value != ""]


def redact_url(url: str) -> str:
    """``url`` as it may be printed: each of its ``url_secrets`` replaced by ``***``, control characters escaped."""
    parts = urllib.parse.urlsplit(url)
    netloc = f"{MASK}@{parts.netloc.rsplit('@', 1)[1]}" if "@" in parts.netloc else parts.netloc
    path = _PATH_PARAMETER.sub(r"\1" + MASK, parts.path)
    query = "&".join(MASK if value is None else f"{name}={MASK}" for name, value in _query_items(parts.query))
    return printable(urllib.parse.urlunsplit((parts.scheme, netloc, path, query, MASK if parts.fragment else "")))


# --------------------------------------------------------------------------- logs

_LIBRARY_LOGGERS = ("openai", "httpx", "httpx2", "httpcore", "httpcore2")
"""Where the official client and its HTTP libraries log requests, URLs and headers."""

# Masked in a library's log line even when no provider knows it as a secret: credentials in a URL, query
# values, and the value of any header or field that carries one.
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

_SHOWN_HEADERS = frozenset({"content-type", "content-length", "content-encoding", "transfer-encoding", "connection"})
_SHOWN_HEADERS |= {"date", "server", "retry-after", "x-request-id", "request-id", "openai-processing-ms"}
"""Headers whose values a log line may show; every other value is masked (as Azure's SDK logs them)."""

# A header as httpcore logs it, (b'Name', b'value'), and as a Headers repr shows it, 'name': 'value'.
_LOGGED_HEADER = re.compile(
    r"""\((b?)(['"])([^'"]*)\2, b?(['"])(?:\\.|(?!\4).)*\4\)"""
    r"""|(['"])([\w-]+)\5: (['"])(?:\\.|(?!\7).)*\7"""
)


def _mask_header(match: re.Match[str]) -> str:
    prefix, quote_mark, name, key_quote, key = match.group(1, 2, 3, 5, 6)
    if (key if name is None else name).lower() in _SHOWN_HEADERS:
        return match.group(0)
    if name is None:
        return f"{key_quote}{key}{key_quote}: '{MASK}'"
    return f"({prefix}{quote_mark}{name}{quote_mark}, {prefix}'{MASK}')"


class SecretLogFilter(logging.Filter):
    """Rewrites each record of the HTTP libraries with every known secret and credential masked.

    ``redactors`` holds each provider's ``Redactor``, forgotten with the provider. A record is formatted here
    (message, arguments, traceback) and replaced by its masked text, so no handler the learner sets up sees it.
    """

    def __init__(self) -> None:
        super().__init__()
        self.redactors: weakref.WeakKeyDictionary[object, Redactor] = weakref.WeakKeyDictionary()

    def mask(self, text: str) -> str:
        for redactor in list(self.redactors.values()):
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
        record.args = record.exc_info = record.exc_text = record.stack_info = None
        return True


_MASKED = "codeagent_lite_masked"  # set on a record once masked, so the factory and the filter do it once
_LOG_FILTER = SecretLogFilter()


@functools.cache  # once: a second factory would wrap the first
def _install_record_factory() -> None:
    """Mask records of the libraries as they are created, for loggers that do not exist yet too."""
    previous = logging.getLogRecordFactory()

    def masking_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if str(record.name).split(".", 1)[0] in _LIBRARY_LOGGERS:
            _LOG_FILTER.filter(record)
        return record

    logging.setLogRecordFactory(masking_factory)


def protect_library_logs(owner: object, redactor: Redactor) -> None:
    """Mask ``redactor``'s secrets (and any credential) in what the HTTP libraries log, while ``owner`` lives.

    A logger's filters see only records logged to it by name, not its children's, so the filter goes on every
    logger of those libraries that exists now (call this once the client is built) and a wrapped record factory
    catches the loggers created later.
    """
    _LOG_FILTER.redactors[owner] = redactor
    _install_record_factory()
    for name in {*_LIBRARY_LOGGERS, *logging.root.manager.loggerDict}:
        logger = logging.getLogger(name)
        if name.split(".", 1)[0] in _LIBRARY_LOGGERS and _LOG_FILTER not in logger.filters:
            logger.addFilter(_LOG_FILTER)
