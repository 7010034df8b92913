"""Layer 1's machinery: exactly one strict RFC 8259 value, or a refusal a model can act on.

The blog's parser starts with ``json.loads()``. That is lenient where an agent must not
be: it accepts ``NaN``, keeps the last of two duplicate keys without a word, and says
"Expecting value" where a model needs "the reply is wrapped in a code fence". So layer 1
runs in four steps, and this file reads in the same order:

1. checks on the raw text (not text at all, empty, a byte-order mark, a code fence,
   a lone surrogate that UTF-8 cannot carry);
2. the depth rule: nesting deeper than 100 levels is refused, and reported before any
   other problem;
3. decoding with ``json``'s fast C decoder, whose hooks refuse duplicate keys and the
   numbers strict JSON forbids (one set of number rules, ``_number_problem``);
4. when decoding fails, classifiers that each turn one kind of failure into a
   ``Refusal`` (detail, expected, found, position).

Every refusal becomes an ``InvalidModelOutputError`` in one place, ``decode_strict_json``.
Where a problem is, steps 2 and 3 find with one tokenizer, ``_TOKEN``: the depth scan
counts its brackets, the duplicate-key and number walk reads every token.

Why step 2 does not always scan the text before decoding: the scan is a Python-level
walk and costs five to ten times ``json.loads`` on a long reply, while a reply an agent
can use nests three or four levels. So the text is scanned only when the answer could be
"too deep": when decoding failed, when the decoded value is deeper than the limit, or
before decoding when a program raised Python's recursion limit (json's C decoder stops
deep input with ``RecursionError`` at the default limit; above it, deep input could
overflow the C stack and crash the interpreter).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .display import quote
from .model_adapter import InvalidModelOutputError, ValidationLayer

__all__ = ["MAX_INTEGER_DIGITS", "MAX_NESTING_DEPTH", "Refusal", "decode_strict_json"]

MAX_NESTING_DEPTH = 100
"""Deepest nesting of objects and arrays accepted; real actions need three or four levels."""

MAX_INTEGER_DIGITS = 4300
"""Longest integer accepted (Python's own default limit), so huge numbers cannot stall parsing."""

_JSON_WHITESPACE = " \t\n\r"
_DEFAULT_RECURSION_LIMIT = 1000
_FENCES = ("```", "~~~")


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why layer 1 refuses a text: what went wrong, what was expected, what came, and where."""

    detail: str
    expected: str
    found: str
    pos: int | None


def _line_and_column(text: str, pos: int) -> tuple[int, int]:
    # Same convention as json.JSONDecodeError: both count from 1.
    line = text.count("\n", 0, pos) + 1
    column = pos - text.rfind("\n", 0, pos)
    return line, column


def _as_error(refusal: Refusal, text: str) -> InvalidModelOutputError:
    # The place comes right after the series' phrase, as in json's own "Expecting value:
    # line 1 column 1": "model output must be valid JSON at line 1, column 1: <detail>".
    line = column = None
    where = ""
    if refusal.pos is not None:
        line, column = _line_and_column(text, refusal.pos)
        where = f" at line {line}, column {column}"
    return InvalidModelOutputError(
        f"model output must be valid JSON{where}: {refusal.detail}",
        layer=ValidationLayer.JSON_SYNTAX,
        expected=refusal.expected,
        found=refusal.found,
        line=line,
        column=column,
    )


# --------------------------------------------------------------------------- the one tokenizer

# A string token may be unterminated (a cut-off reply): it then runs to the end of the text,
# so brackets inside it are never mistaken for nesting. Anything that is not a string or a
# punctuation mark is a bare word: a number, true/false/null, or garbage. The possessive
# quantifiers (*+) never give back what they matched, which halves the time on long strings.
_STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"?'
_TOKEN = re.compile(_STRING + r'|[{}\[\],:]|[^\s{}\[\],:"]+', re.DOTALL)


# --------------------------------------------------------------------------- step 1: the raw text


def _raw_text_problem(text: str) -> Refusal | None:
    """What is wrong with the text before any JSON is read, or None."""
    stripped = text.strip(_JSON_WHITESPACE)
    if not stripped:
        return Refusal("the reply is empty", "one JSON value", "only whitespace" if text else "empty text", None)
    if text.startswith("\ufeff"):
        return Refusal("the reply starts with a byte-order mark (U+FEFF)", "the JSON value itself", "U+FEFF", 0)
    if stripped.startswith(_FENCES):
        return Refusal(
            "the reply is wrapped in a markdown code fence; send the bare JSON without ``` lines",
            "a JSON value such as {...}",
            quote(stripped),
            len(text) - len(text.lstrip(_JSON_WHITESPACE)),
        )
    return None if text.isascii() else _raw_surrogate(text)


def _first_lone_surrogate(text: str) -> int | None:
    """Where ``text`` holds half a surrogate pair, or None: such text cannot be encoded as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return error.start
    return None


def _surrogate_refusal(code: int, pos: int) -> Refusal:
    return Refusal(
        f"lone surrogate U+{code:04X} cannot be encoded as UTF-8",
        "valid Unicode text (a surrogate only as half of an escaped pair)",
        f"a lone U+{code:04X}",
        pos,
    )


def _raw_surrogate(text: str) -> Refusal | None:
    # Python strings may hold lone surrogates (surrogateescape, a provider's bug); nothing
    # downstream could send such text on, so it is refused here instead of crashing later.
    pos = _first_lone_surrogate(text)
    return None if pos is None else _surrogate_refusal(ord(text[pos]), pos)


# --------------------------------------------------------------------------- step 2: the depth scan


def _may_nest_too_deep(text: str) -> bool:
    # Counting brackets is cheap C code: with at most 100 of them, no nesting can exceed 100.
    return text.count("{") + text.count("[") > MAX_NESTING_DEPTH


def _depth_problem(text: str) -> Refusal | None:
    """The first bracket nested deeper than the limit, outside strings, valid JSON or not."""
    if not _may_nest_too_deep(text):
        return None
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ("{", "["):
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                return Refusal(
                    f"nesting is deeper than {MAX_NESTING_DEPTH} levels",
                    f"at most {MAX_NESTING_DEPTH} nested objects or arrays",
                    f"more than {MAX_NESTING_DEPTH}",
                    match.start(),
                )
        elif token in ("}", "]"):
            depth -= 1
    return None


def _found_too_deep(text: str) -> Refusal:
    # Called only when the decoder or the value already showed nesting beyond the limit.
    refusal = _depth_problem(text)
    assert refusal is not None, "the text nests exactly as deep as its value"
    return refusal


def _value_is_too_deep(value: Any) -> bool:
    """Depth of a decoded value: it visits containers only, so long strings cost nothing."""
    open_containers: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, (dict, list)) else []
    while open_containers:
        container, depth = open_containers.pop()
        if depth > MAX_NESTING_DEPTH:
            return True
        children = container.values() if isinstance(container, dict) else container
        open_containers.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


# --------------------------------------------------------------------------- step 3: decoding


def _number_problem(token: str) -> str | None:
    """Why a number token breaks strict JSON, or None: the one set of number rules."""
    if token in ("NaN", "Infinity", "-Infinity"):
        return f"{token} is not a JSON number (non-finite numbers are not allowed)"
    if any(char in token for char in ".eE"):
        if not math.isfinite(float(token)):
            return f"the number {quote(token)} is too large for a finite float"
        return None
    # The length is checked before int() runs: int() on a huge digit string does quadratic work.
    digits = len(token) - token.startswith("-")
    if digits > MAX_INTEGER_DIGITS:
        return f"an integer with {digits} digits is too long (at most {MAX_INTEGER_DIGITS})"
    return None


class _RuleBroken(Exception):
    """Raised inside json's hooks; ``_first_broken_rule`` then finds where, with the tokenizer."""


def _checked_number(token: str) -> int | float:
    """The decoder's hook for every number token, NaN and Infinity included: the rules, then the value."""
    if _number_problem(token) is not None:
        raise _RuleBroken
    return int(token) if token.lstrip("-").isdigit() else float(token)


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _RuleBroken
    return obj


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object_without_duplicates,
    parse_int=_checked_number,
    parse_float=_checked_number,
    parse_constant=_checked_number,
    strict=True,
)

_NUMBER_OR_CONSTANT = re.compile(r"-?Infinity|NaN|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
"""What json's scanner reads at the start of a bare word: a number (its NUMBER_RE) or a constant."""


def _duplicate_key(keys: set[str], token: str, pos: int) -> Refusal | None:
    key = json.loads(token)
    if key in keys:
        return Refusal(
            f"duplicate key {quote(key)} in one object",
            "each key at most once per object",
            f"a second {quote(key)}",
            pos,
        )
    keys.add(key)
    return None


def _bad_number(token: str, pos: int) -> Refusal | None:
    # A word may run on past its number ("1e400-"); json's hooks saw only the number part.
    number = _NUMBER_OR_CONSTANT.match(token)
    problem = None if number is None else _number_problem(number.group())
    if number is None or problem is None:
        return None
    return Refusal(problem, "a finite JSON number", quote(number.group()), pos)


def _after_punctuation(token: str, open_containers: list[set[str] | None]) -> set[str] | None:
    """Track one punctuation mark; return the key set of the object whose key comes next, or None."""
    if token == "{":
        keys: set[str] = set()
        open_containers.append(keys)
        return keys
    if token == "[":
        open_containers.append(None)
    elif token in ("}", "]"):
        open_containers.pop()
    elif token == ",":
        return open_containers[-1]
    return None  # after ":" comes a value, never a key


def _first_broken_rule(text: str) -> Refusal:
    """The first duplicate key or forbidden number, in text order.

    Runs only after a hook refused something, so everything before that point is
    well-formed JSON and a token walk keeping one key set per open object finds it.
    """
    open_containers: list[set[str] | None] = []  # a key set for each open object, None for each array
    keys_of_next_key: set[str] | None = None
    for match in _TOKEN.finditer(text):
        token, pos = match.group(), match.start()
        if token in _PUNCTUATION:
            keys_of_next_key = _after_punctuation(token, open_containers)
            continue
        if token.startswith('"'):
            refusal = None if keys_of_next_key is None else _duplicate_key(keys_of_next_key, token, pos)
        else:
            refusal = _bad_number(token, pos)
        if refusal is not None:
            return refusal
    raise AssertionError("a decoder hook refused a value that the token walk cannot find")


_PUNCTUATION = frozenset("{}[],:")


def _escaped_surrogate(text: str) -> Refusal | None:
    r"""The first string whose ``\uD800``-style escape decodes to half a surrogate pair, or None.

    RFC 8259 allows the escape, but the decoded string cannot be encoded as UTF-8, so
    every later request that carried it would fail. Runs only when such an escape appears.
    """
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token.startswith('"') and "\\u" in token:
            decoded: str = json.loads(token)
            pos = _first_lone_surrogate(decoded)
            if pos is not None:
                return _surrogate_refusal(ord(decoded[pos]), match.start())
    return None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


# --------------------------------------------------------------------------- step 4: explaining a failure

_PARTIAL_LITERALS = frozenset({"t", "tr", "tru", "f", "fa", "fal", "fals", "n", "nu", "nul", "-"})


@dataclass(frozen=True, slots=True)
class _Failure:
    """json's complaint, with the facts every classifier looks at."""

    message: str
    pos: int
    text: str

    @property
    def char(self) -> str:
        return self.text[self.pos : self.pos + 1]

    @property
    def end(self) -> int:
        """Where the text ends, trailing whitespace not counted."""
        return len(self.text.rstrip(_JSON_WHITESPACE))

    @property
    def rest(self) -> str:
        return self.text[self.pos : self.end]


def _extra_data(failure: _Failure) -> Refusal | None:
    if not failure.message.startswith("Extra data"):
        return None
    rest = failure.rest
    try:
        _DECODER.raw_decode(rest)
    except (ValueError, _RuleBroken):
        detail = "text after the JSON value"
        if rest.startswith(("//", "/*", "#")):
            detail += " (comments are not allowed in JSON)"
        elif rest.startswith(_FENCES):
            detail += " (a markdown code fence?)"
        return Refusal(detail, "nothing after the JSON value", quote(rest), failure.pos)
    return Refusal(
        "more than one JSON value; a second one starts here",
        "exactly one JSON value",
        f"another value {quote(rest)}",
        failure.pos,
    )


def _cut_off(failure: _Failure) -> Refusal | None:
    cut = failure.message.startswith("Unterminated string") or failure.pos >= failure.end
    partial_literal = failure.message == "Expecting value" and failure.rest in _PARTIAL_LITERALS
    if not (cut or partial_literal):
        return None
    return Refusal(
        "the reply ends before the JSON value is complete; it looks cut off (usually max_output_tokens was reached)",
        "a complete JSON value",
        "the end of the text",
        failure.end,
    )


def _control_character(failure: _Failure) -> Refusal | None:
    if not failure.message.startswith("Invalid control character"):
        return None
    code = ord(failure.char)
    return Refusal(
        f"raw control character U+{code:04X} inside a string (escape it, e.g. \\n)",
        "an escaped control character",
        f"raw U+{code:04X}",
        failure.pos,
    )


def _bad_escape(failure: _Failure) -> Refusal | None:
    if not failure.message.startswith(("Invalid \\escape", "Invalid \\uXXXX escape")):
        return None
    return Refusal(
        "invalid escape sequence in a string",
        'one of \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX',
        quote(failure.text[failure.pos : failure.pos + 6]),
        failure.pos,
    )


def _single_quote(failure: _Failure) -> Refusal | None:
    if failure.char != "'":
        return None
    return Refusal(
        "single quotes are not JSON; strings and keys need double quotes",
        'a double quote (")',
        "a single quote (')",
        failure.pos,
    )


def _comment(failure: _Failure) -> Refusal | None:
    if failure.char not in ("/", "#"):
        return None
    return Refusal("comments are not allowed in JSON", "JSON", quote(failure.rest), failure.pos)


def _trailing_comma(failure: _Failure) -> Refusal | None:
    before = failure.text[: failure.pos].rstrip(_JSON_WHITESPACE)
    if failure.char not in ("}", "]") or not before.endswith(","):
        return None
    return Refusal(
        f"trailing comma before {failure.char!r}", "another item after the comma", repr(failure.char), failure.pos
    )


def _not_json_at_all(failure: _Failure) -> Refusal | None:
    first = len(failure.text) - len(failure.text.lstrip(_JSON_WHITESPACE))
    if failure.message != "Expecting value" or failure.pos != first:
        return None
    if "{" in failure.rest:
        detail = "text before the JSON value; the reply must start with the JSON itself, found"
    else:
        detail = "the reply is not JSON, found"
    found = quote(failure.rest)
    return Refusal(f"{detail} {found}", "a JSON value such as {...}", found, failure.pos)


def _anything_else(failure: _Failure) -> Refusal:
    expected = failure.message.removeprefix("Expecting ").replace(" enclosed in double quotes", " in double quotes")
    found = quote(failure.text[failure.pos :])
    return Refusal(f"expected {expected}, found {found}", expected, found, failure.pos)


_CLASSIFIERS: tuple[Callable[[_Failure], Refusal | None], ...] = (
    _extra_data,
    _cut_off,
    _control_character,
    _bad_escape,
    _single_quote,
    _comment,
    _trailing_comma,
    _not_json_at_all,
)
"""Tried in this order; the first that recognises the failure explains it."""


def _explain(error: json.JSONDecodeError, text: str) -> Refusal:
    failure = _Failure(error.msg, error.pos, text)
    for classify in _CLASSIFIERS:
        refusal = classify(failure)
        if refusal is not None:
            return refusal
    return _anything_else(failure)


# --------------------------------------------------------------------------- all four steps


def _refusal_for(raw_text: str) -> tuple[Refusal | None, Any]:
    """Steps 1 to 4: a refusal, or None and the decoded value."""
    refusal = _raw_text_problem(raw_text)
    if refusal is None and sys.getrecursionlimit() > _DEFAULT_RECURSION_LIMIT:
        # Above Python's default limit, json's C decoder could overflow the C stack on deep input.
        refusal = _depth_problem(raw_text)
    if refusal is not None:
        return refusal, None
    try:
        value = _DECODER.decode(raw_text)
    except RecursionError:
        return _found_too_deep(raw_text), None
    except json.JSONDecodeError as error:
        return _depth_problem(raw_text) or _explain(error, raw_text), None
    except _RuleBroken:
        return _depth_problem(raw_text) or _first_broken_rule(raw_text), None
    return _decoded_value_problem(raw_text, value), value


def _decoded_value_problem(raw_text: str, value: Any) -> Refusal | None:
    """What the decoder cannot see: nesting beyond the limit, a surrogate escape without its pair."""
    # A decoded text nested 101 deep holds 101 opening and 101 closing brackets, so a shorter
    # one needs no walk. The walk visits containers only: a few for a usual reply.
    if len(raw_text) > 2 * MAX_NESTING_DEPTH and _value_is_too_deep(value):
        return _found_too_deep(raw_text)
    if _SURROGATE_ESCAPE.search(raw_text) is not None:
        return _escaped_surrogate(raw_text)
    return None


def decode_strict_json(raw_text: str) -> Any:
    """Decode exactly one strict JSON value, or raise a layer-1 ``InvalidModelOutputError``."""
    if isinstance(raw_text, str):
        refusal, value = _refusal_for(raw_text)
    else:
        # Untrusted callers pass bytes too; that is a refusal like any other, not a crash.
        found = type(raw_text).__name__
        refusal, value = Refusal(f"the reply must be a string, found {found}", "a string", found, None), None
    if refusal is not None:
        raise _as_error(refusal, raw_text if isinstance(raw_text, str) else "")
    return value
