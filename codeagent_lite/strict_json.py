"""Layer 1's machinery: strict RFC 8259 decoding with errors a model can act on.

Python's ``json`` module is lenient where an agent must not be: it accepts ``NaN``,
silently keeps the last of two duplicate keys, and its messages ("Expecting value")
do not say what went wrong in terms a model can fix. This module runs the fast C
decoder with hooks that refuse what strict JSON forbids, then, only when decoding
fails, works out what the reply did wrong (a code fence, prose, a cut-off reply, ...)
and where (line and column).

``json_action_parser.check_json_syntax`` is the learner-facing entry point; the rest
of the parser reads like the chapter because this detail lives here.
"""

from __future__ import annotations

import json
import math
import re
import sys
from json.decoder import scanstring  # type: ignore[attr-defined]  # public since Python 2.6, absent from typeshed
from typing import Any

from .model_adapter import InvalidModelOutputError, ValidationLayer

__all__ = ["MAX_INTEGER_DIGITS", "MAX_NESTING_DEPTH", "decode_strict_json", "describe_json_value", "preview"]

MAX_NESTING_DEPTH = 100
"""Deepest nesting of objects and arrays accepted; real actions need three or four levels."""

MAX_INTEGER_DIGITS = 4300
"""Longest integer accepted (Python's own default limit), so huge numbers cannot stall parsing."""

_PREVIEW_CHARS = 24
_JSON_WHITESPACE = " \t\n\r"
_DEFAULT_RECURSION_LIMIT = 1000
_LEADING_WHITESPACE = re.compile(r"[ \t\n\r]*")


# --------------------------------------------------------------------------- helpers


def _line_and_column(text: str, pos: int) -> tuple[int, int]:
    # Same convention as json.JSONDecodeError: both count from 1.
    line = text.count("\n", 0, pos) + 1
    column = pos - text.rfind("\n", 0, pos)
    return line, column


def preview(text: str) -> str:
    """A short quoted excerpt, so a rejection never echoes a whole (possibly huge) reply."""
    if len(text) <= _PREVIEW_CHARS:
        return repr(text)
    return repr(text[:_PREVIEW_CHARS]) + "..."


def describe_json_value(value: object) -> str:
    """Name a JSON value the way a learner reads JSON, not the way Python stores it."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        number = repr(value)
        # A 4000-digit integer is legal JSON but no part of a short correction message.
        return f"the number {number if len(number) <= _PREVIEW_CHARS else number[:_PREVIEW_CHARS] + '...'}"
    if isinstance(value, str):
        return f"the string {preview(value)}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _syntax_error(detail: str, *, expected: str, found: str, text: str, pos: int | None) -> InvalidModelOutputError:
    line = column = None
    where = ""
    if pos is not None:
        line, column = _line_and_column(text, pos)
        where = f" at line {line}, column {column}"
    return InvalidModelOutputError(
        f"model output must be valid JSON: {detail}{where}",
        layer=ValidationLayer.JSON_SYNTAX,
        expected=expected,
        found=found,
        line=line,
        column=column,
    )


# --------------------------------------------------------------------------- decoding


class _ValueProblem(Exception):
    """Raised inside json's hooks; the exact place is found afterwards by ``_locate_value_problem``."""


def _number_problem(token: str) -> str | None:
    """Why a number token is unacceptable, or None. The decoder hooks below apply the same rules."""
    if token in ("NaN", "Infinity", "-Infinity"):
        return f"{token} is not a JSON number (non-finite numbers are not allowed)"
    if any(c in token for c in ".eE"):
        if not math.isfinite(float(token)):
            return f"the number {preview(token)} is too large for a finite float"
        return None
    digits = len(token) - token.startswith("-")
    if digits > MAX_INTEGER_DIGITS:
        return f"an integer with {digits} digits is too long (at most {MAX_INTEGER_DIGITS})"
    return None


def _pairs_to_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _ValueProblem
    return obj


def _parse_int(token: str) -> int:
    # json calls this for integer tokens only; the length check comes before int() does quadratic work.
    if len(token) - token.startswith("-") > MAX_INTEGER_DIGITS:
        raise _ValueProblem
    return int(token)


def _parse_float(token: str) -> float:
    # json calls this for tokens with a fraction or an exponent only.
    value = float(token)
    if not math.isfinite(value):
        raise _ValueProblem
    return value


def _parse_constant(token: str) -> float:
    raise _ValueProblem


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs_to_object,
    parse_float=_parse_float,
    parse_int=_parse_int,
    parse_constant=_parse_constant,
    strict=True,
)

# Tokens of a JSON text, used only on the slow paths (depth and problem location).
# A string may be unterminated (a cut-off reply): it then runs to the end of the text, so
# brackets inside it are never mistaken for nesting.
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"?'
_TOKEN = re.compile(_STRING + r'|[{}\[\],:]|[^\s{}\[\],:"]+', re.DOTALL)
_STRING_TOKEN = re.compile(_STRING, re.DOTALL)
# What json's scanner reads at the start of a token: a non-finite constant or a number (its NUMBER_RE).
_NUMBER_OR_CONSTANT = re.compile(r"-?Infinity|NaN|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_STRING_OR_BRACKET = re.compile(r'["{}\[\]]')


def _locate_value_problem(text: str) -> InvalidModelOutputError:
    """Find the first duplicate key or unacceptable number, in text order.

    Only called after json's hooks saw such a problem, so everything before it is
    well-formed JSON and a simple token walk is enough to find where it is.
    """
    stack: list[set[str] | None] = []  # a set of keys seen for objects, None for arrays
    expecting_key = False
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in "{[":
            stack.append(set() if token == "{" else None)
            expecting_key = token == "{"
        elif token in "}]":
            stack.pop()
            expecting_key = False
        elif token == ",":
            expecting_key = bool(stack) and stack[-1] is not None
        elif token == ":":
            expecting_key = False
        elif token.startswith('"'):
            keys = stack[-1] if stack else None
            if expecting_key and keys is not None:
                key = json.loads(token)
                if key in keys:
                    return _syntax_error(
                        f"duplicate key {preview(key)} in one object",
                        expected="each key at most once per object",
                        found=f"a second {preview(key)}",
                        text=text,
                        pos=match.start(),
                    )
                keys.add(key)
        else:
            # A token may run on past its number ("1e400-"); json's hooks saw only the number part.
            number = _NUMBER_OR_CONSTANT.match(token)
            problem = None if number is None else _number_problem(number.group())
            if number is not None and problem is not None:
                return _syntax_error(
                    problem,
                    expected="a finite JSON number",
                    found=preview(number.group()),
                    text=text,
                    pos=match.start(),
                )
    return _syntax_error(
        "a duplicate key or an invalid number", expected="valid JSON", found="an invalid value", text=text, pos=None
    )


def _string_end(text: str, start: int) -> int:
    """Where the string token that starts at ``start`` ends (the same end as ``_STRING``).

    json's own C string scanner skips a long string far faster than a regular
    expression; the expression is the fallback for strings json itself refuses.
    """
    try:
        end: int = scanstring(text, start + 1, False)[1]
        return end
    except json.JSONDecodeError as error:
        if error.msg.startswith("Unterminated string"):
            return len(text)
        match = _STRING_TOKEN.match(text, start)
        assert match is not None  # the pattern matches any text that starts with a quote
        return match.end()


def _too_deep(text: str) -> InvalidModelOutputError | None:
    """Find the first bracket nested deeper than the limit, outside strings, whether the JSON is valid or not."""
    # Counting brackets is cheap C code; the walk runs only when the count could matter.
    if text.count("{") + text.count("[") <= MAX_NESTING_DEPTH:
        return None
    depth = 0
    match = _STRING_OR_BRACKET.search(text)
    while match is not None:
        char, pos = match.group(), match.start()
        next_pos = pos + 1
        if char == '"':
            next_pos = _string_end(text, pos)
        elif char in "{[":
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                return _syntax_error(
                    f"nesting is deeper than {MAX_NESTING_DEPTH} levels",
                    expected=f"at most {MAX_NESTING_DEPTH} nested objects or arrays",
                    found=f"more than {MAX_NESTING_DEPTH}",
                    text=text,
                    pos=pos,
                )
        else:
            depth -= 1
        match = _STRING_OR_BRACKET.search(text, next_pos)
    return None


def _nested_deeper_than_limit(value: Any) -> bool:
    """Depth check on an already decoded value: it visits containers only, so long strings cost nothing."""
    if not isinstance(value, (dict, list)):
        return False
    stack: list[tuple[dict[str, Any] | list[Any], int]] = [(value, 1)]
    while stack:
        container, depth = stack.pop()
        if depth > MAX_NESTING_DEPTH:
            return True
        children = container.values() if isinstance(container, dict) else container
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


_PARTIAL_LITERALS = frozenset({"t", "tr", "tru", "f", "fa", "fal", "fals", "n", "nu", "nul", "-"})


def _looks_cut_off(error: json.JSONDecodeError, text: str, end: int) -> bool:
    if error.msg.startswith("Unterminated string") or error.pos >= end:
        return True
    return error.msg == "Expecting value" and text[error.pos : end] in _PARTIAL_LITERALS


def _previous_significant(text: str, pos: int) -> str:
    before = text[:pos].rstrip(_JSON_WHITESPACE)
    return before[-1:] if before else ""


def _explain_decode_error(error: json.JSONDecodeError, text: str) -> InvalidModelOutputError:
    """Turn json's terse message into one that says what was expected and what came."""
    pos = error.pos
    end = len(text.rstrip(_JSON_WHITESPACE))
    char = text[pos] if pos < len(text) else ""

    if error.msg.startswith("Extra data"):
        rest = text[pos:end]
        try:
            _DECODER.raw_decode(rest)
        except (ValueError, _ValueProblem, RecursionError):
            detail = "text after the JSON value"
            if rest.startswith(("//", "/*", "#")):
                detail += " (comments are not allowed in JSON)"
            elif rest.startswith(("```", "~~~")):
                detail += " (a markdown code fence?)"
            return _syntax_error(
                detail, expected="nothing after the JSON value", found=preview(rest), text=text, pos=pos
            )
        return _syntax_error(
            "more than one JSON value; the second one starts",
            expected="exactly one JSON value",
            found=f"another value {preview(rest)}",
            text=text,
            pos=pos,
        )
    if _looks_cut_off(error, text, end):
        return _syntax_error(
            "the reply ends before the JSON value is complete; it looks cut off "
            "(usually max_output_tokens was reached); the text ends",
            expected="a complete JSON value",
            found="the end of the text",
            text=text,
            pos=end,
        )
    if error.msg.startswith("Invalid control character"):
        return _syntax_error(
            f"raw control character U+{ord(char):04X} inside a string (escape it, e.g. \\n)",
            expected="an escaped control character",
            found=f"raw U+{ord(char):04X}",
            text=text,
            pos=pos,
        )
    if error.msg.startswith("Invalid \\escape") or error.msg.startswith("Invalid \\uXXXX escape"):
        return _syntax_error(
            "invalid escape sequence in a string",
            expected='one of \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX',
            found=preview(text[pos : pos + 6]),
            text=text,
            pos=pos,
        )
    if char == "'":
        return _syntax_error(
            "single quotes are not JSON; strings and keys need double quotes",
            expected='a double quote (")',
            found="a single quote (')",
            text=text,
            pos=pos,
        )
    if char in "/#" and char:
        return _syntax_error(
            "comments are not allowed in JSON", expected="JSON", found=preview(text[pos:end]), text=text, pos=pos
        )
    if char in "}]" and char and _previous_significant(text, pos) == ",":
        return _syntax_error(
            f"trailing comma before {char!r}",
            expected="another item after the comma",
            found=repr(char),
            text=text,
            pos=pos,
        )
    first = len(text) - len(text.lstrip(_JSON_WHITESPACE))
    if error.msg == "Expecting value" and pos == first:
        if "{" in text[pos:]:
            detail = "text before the JSON value; the reply must start with the JSON itself, found"
        else:
            detail = "the reply is not JSON, found"
        return _syntax_error(
            f"{detail} {preview(text[pos:end])}",
            expected="a JSON value such as {...}",
            found=preview(text[pos:end]),
            text=text,
            pos=pos,
        )
    expected = error.msg.removeprefix("Expecting ").replace(" enclosed in double quotes", " in double quotes")
    return _syntax_error(
        f"expected {expected}, found {preview(text[pos : pos + _PREVIEW_CHARS])}",
        expected=expected,
        found=preview(text[pos : pos + _PREVIEW_CHARS]),
        text=text,
        pos=pos,
    )


def decode_strict_json(raw_text: str) -> Any:
    """Decode exactly one strict JSON value, or raise a layer-1 ``InvalidModelOutputError``."""
    if not isinstance(raw_text, str):
        raise InvalidModelOutputError(
            f"model output must be valid JSON: expected text, found {type(raw_text).__name__}",
            layer=ValidationLayer.JSON_SYNTAX,
            expected="text (str)",
            found=type(raw_text).__name__,
        )
    first = _LEADING_WHITESPACE.match(raw_text).end()  # type: ignore[union-attr]
    if first == len(raw_text):
        raise _syntax_error(
            "the reply is empty",
            expected="one JSON value",
            found="empty text" if not raw_text else "only whitespace",
            text=raw_text,
            pos=None,
        )
    if raw_text.startswith("\ufeff"):
        raise _syntax_error(
            "the reply starts with a byte-order mark (U+FEFF)",
            expected="the JSON value itself",
            found="U+FEFF",
            text=raw_text,
            pos=0,
        )
    if raw_text.startswith(("```", "~~~"), first):
        raise _syntax_error(
            "the reply is wrapped in a markdown code fence; send the bare JSON without ``` lines",
            expected="a JSON value such as {...}",
            found=preview(raw_text.strip(_JSON_WHITESPACE)),
            text=raw_text,
            pos=first,
        )
    # Decoding first keeps the common case at C speed. Too deep nesting is reported before
    # any other problem, as if it had been checked first: a valid value is measured as
    # decoded, and every failure first looks for it in the text. json's C decoder stops at
    # Python's recursion limit with RecursionError; that is safe at the default limit, but
    # a program that raised the limit could let deep input overflow the C stack, so then
    # the text is measured before it is decoded.
    if sys.getrecursionlimit() > _DEFAULT_RECURSION_LIMIT:
        too_deep = _too_deep(raw_text)
        if too_deep is not None:
            raise too_deep
    try:
        value = _DECODER.decode(raw_text)
    except json.JSONDecodeError as error:
        raise _too_deep(raw_text) or _explain_decode_error(error, raw_text) from None
    except _ValueProblem:
        raise _too_deep(raw_text) or _locate_value_problem(raw_text) from None
    except RecursionError:
        raise _too_deep(raw_text) or _syntax_error(
            "nesting is too deep to parse",
            expected=f"at most {MAX_NESTING_DEPTH} nested objects or arrays",
            found="deeper nesting",
            text=raw_text,
            pos=None,
        ) from None
    if _nested_deeper_than_limit(value):
        too_deep = _too_deep(raw_text)
        assert too_deep is not None  # a valid text nests exactly as deep as its value
        raise too_deep
    return value
