"""Keeping a secret out of every message a provider writes, in whatever spelling it comes back.

A server that refuses a key often quotes it, and not always literally: a JSON body may
write ``/`` as ``\\/`` or any character as ``\\u0073``, a proxy may percent-encode it, an
HTML error page may use ``&#115;``. Removing only the literal key leaves all of those on
the learner's screen. So each secret becomes one regular expression in which every
character may appear in any of those spellings, and a match of the whole secret is
replaced by ``***``.

Credentials can also hide in the server address (``https://user:pass@host/v1`` or an
``?api-key=`` query); ``redact_url`` is the address as it may be shown.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["MASK", "Redactor", "redact_url", "url_secrets"]

MASK = "***"
"""What a secret is replaced by."""

_MIN_SECRET_CHARS = 4
"""Shorter "secrets" (a user name like ``a``) would blank out ordinary words; they are not hunted."""


_NAMED_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"}


def _spellings(char: str) -> str:
    """A regular expression for one character written literally or escaped the usual ways."""
    code = ord(char)
    options = [
        re.escape(char),
        rf"\\u0*{code:x}",  # JSON and Python escapes (\u0073); re.IGNORECASE covers \u004A vs \u004a
        rf"\\x{code:02x}",  # Python's repr of a control character
        rf"&#0*{code};",  # HTML decimal entity
        rf"&#x0*{code:x};",  # HTML hexadecimal entity
    ]
    if code < 0x80:
        options.append(f"%{code:02x}")  # percent-encoding (URLs, form bodies)
    if char in _NAMED_ENTITIES:
        options.append(_NAMED_ENTITIES[char])  # HTML named entity
    if char in '"\\/':
        options.append(r"\\" + re.escape(char))  # JSON's two-character escapes: \" \\ \/
    if char == " ":
        options.append(r"\+")  # form encoding writes a space as +
    return "(?:" + "|".join(options) + ")"


def _pattern(secret: str) -> re.Pattern[str]:
    return re.compile("".join(_spellings(char) for char in secret), re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Redactor:
    """Replaces each of a few secrets, in any spelling, by ``***``."""

    patterns: tuple[re.Pattern[str], ...]

    @classmethod
    def for_secrets(cls, secrets: Iterable[str]) -> Redactor:
        kept = {secret for secret in secrets if len(secret) >= _MIN_SECRET_CHARS}
        # Longest first, so a secret that contains another is removed whole.
        return cls(tuple(_pattern(secret) for secret in sorted(kept, key=len, reverse=True)))

    def scrub(self, text: str) -> str:
        for pattern in self.patterns:
            text = pattern.sub(MASK, text)
        return text


def url_secrets(url: str) -> list[str]:
    """The parts of ``url`` that may be credentials: the password, and every query value."""
    parts = urllib.parse.urlsplit(url)
    secrets = [parts.password] if parts.password else []
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
