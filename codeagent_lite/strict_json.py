"""Layer 1, strict JSON. ``json.loads()`` takes ``NaN`` and the last of two equal keys, and says "Expecting value" to a
fenced reply. So: hooks that refuse, naming the key or number; the checks hooks cannot make; json's position, a hint."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from itertools import accumulate
from typing import Any

from .display import quote
from .model_adapter import InvalidModelOutputError as Error
from .model_adapter import ValidationLayer

__all__ = ["DECODER", "HINTS", "MAX_INTEGER_DIGITS", "MAX_NESTING_DEPTH", "WHITESPACE", "check_json_syntax", "too_deep"]

MAX_NESTING_DEPTH = 100  # real actions nest three or four levels
MAX_INTEGER_DIGITS = 4300  # Python's default limit, so a huge number cannot stall parsing
WHITESPACE = " \t\n\r"  # JSON's four; str.strip() removes many more

HINTS = {  # the shapes real models send: code -> (the correction, what to send instead); else json's words
    "code_fence": ("the reply is wrapped in a markdown code fence; send the bare JSON without ``` lines", "bare JSON"),
    "cut_off": ("the reply ends before the JSON value is complete; it looks cut off (max_output_tokens?)", "all of it"),
    "two_values": ("more than one JSON value; a second one starts here", "exactly one JSON value"),
    "prose_around": ("text {where} the JSON value; send the JSON alone", "nothing but the JSON value"),
    "single_quotes": ("single quotes are not JSON; strings and keys need double quotes", 'a double quote (")'),
    "trailing_comma": ("trailing comma before the closing bracket", "another item after the comma"),
    "control_character": ("raw control character {char}; in a string, escape it (\\n, \\t)", "an escape"),
}
_LAYER = ValidationLayer.JSON_SYNTAX
_PARTIAL_LITERALS = {"", "t", "tr", "tru", "f", "fa", "fal", "fals", "n", "nu", "nul", "-"}  # "": nothing left
_STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+'  # possessive, so linear; the closing quote follows, unless cut off
_UNTERMINATED, _STRINGS = re.compile(_STRING + r"\\?\Z", re.DOTALL), re.compile(_STRING + '"?', re.DOTALL)
_SCALAR = r"(?:-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|" + _STRING + '")'  # a whole one
_SECOND = re.compile(r"[\[{]|" + _SCALAR + r'[ \t\n\r]*(?:\Z|[-\[{"\d]|true|false|null)', re.DOTALL | re.ASCII)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # valid JSON, but no UTF-8 when unpaired
_SHAPES: tuple[tuple[str, Callable[[str, int, str], bool]], ...] = (  # (text, where json gave up, the rest)
    ("cut_off", lambda t, p, r: (len(r) < 5 and r in _PARTIAL_LITERALS) or bool(_UNTERMINATED.match(t, p))),
    ("control_character", lambda t, p, r: "\x00" <= t[p : p + 1] < " "),
    ("single_quotes", lambda t, p, r: r.startswith("'")),
    ("prose_around", lambda t, p, r: p == len(t) - len(t.lstrip(WHITESPACE)) and "{" in r),
    ("trailing_comma", lambda t, p, r: r[:1] in "}]" and t[:p].rstrip(WHITESPACE).endswith(",")),
)


def _refuse(code: str, detail: str, expected: str, found: str, place: Any = None, **params: Any) -> Error:
    line, column = (place.lineno, place.colno) if place else (None, None)  # json's own count, from its error
    params |= {"at_end": not place.doc[place.pos :].strip(WHITESPACE)} if place else {}  # found: nothing left
    text = f"model output must be valid JSON{f' at line {line}, column {column}' if place else ''}: {detail}"
    return Error(text, layer=_LAYER, code=code, params=params, expected=expected, found=found, line=line, column=column)


def too_deep() -> Error:
    detail = f"nesting is deeper than {MAX_NESTING_DEPTH} levels, or than the caller's stack allows"
    return _refuse("too_deep", detail, f"at most {MAX_NESTING_DEPTH} levels", "deeper", limit=MAX_NESTING_DEPTH)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    if len(obj := dict(pairs)) != len(pairs):
        seen: set[str] = set()
        key = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        detail, found = f"duplicate key {quote(key)} in one object", f"a second {quote(key)}"
        raise _refuse("duplicate_key", detail, "each key at most once per object", found, key=key)
    return obj


def _integer(token: str) -> int:
    limit = min(MAX_INTEGER_DIGITS, sys.get_int_max_str_digits() or MAX_INTEGER_DIGITS)
    if len(token) < 640 or (digits := len(token) - (token[0] == "-")) <= limit:  # 640: the lowest limit there is
        return int(token)
    detail, expected = f"an integer with {digits} digits is too long (at most {limit})", f"at most {limit} digits"
    raise _refuse("number_too_long", detail, expected, f"{digits} digits", digits=digits, limit=limit)


def _finite(token: str) -> float:  # every other number, and NaN and Infinity
    if math.isfinite(value := float(token)):
        return value
    detail = f"{quote(token)} is not a finite number (NaN, Infinity and overflowing numbers are not JSON)"
    raise _refuse("not_finite", detail, "a finite JSON number", quote(token), number=token)


DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_int=_integer, parse_float=_finite, parse_constant=_finite)


def _syntax_error(text: str, place: json.JSONDecodeError, after_value: bool = False) -> Error:
    pos, rest = place.pos, text[place.pos :].rstrip(WHITESPACE)
    if text.lstrip(WHITESPACE).startswith(("```", "~~~")):
        code = "code_fence"
    elif after_value:
        code = "two_values" if _SECOND.match(text, pos) else "prose_around"
    else:
        code = next((code for code, fits in _SHAPES if fits(text, pos, rest)), "not_json")
    found = quote(rest) if rest else "the end of the text"
    if code == "not_json":
        return _refuse(code, place.msg, place.msg.removeprefix("Expecting "), found, place, reason=place.msg)
    words = {"char": f"U+{ord(text[pos]):04X}" if rest else "", "where": "after" if after_value else "before"}
    hint, expected = HINTS[code]
    return _refuse(code, hint.format(**words), expected.format(**words), found, place)


def _nests_too_deep(value: Any) -> bool:  # level by level, containers only: long strings cost nothing
    level: list[Any] = [value] if isinstance(value, (dict, list)) else []
    for _ in range(MAX_NESTING_DEPTH):
        children = (c for x in level for c in (x.values() if isinstance(x, dict) else x))
        if not (level := [c for c in children if isinstance(c, (dict, list))]):
            return False
    return True


def _check_text(text: str) -> str:
    if not isinstance(text, str):  # untrusted callers pass bytes too: a refusal, not a crash
        kind = type(text).__name__
        raise _refuse("not_text", f"the reply must be a string, found {kind}", "a string", kind, type=kind)
    text = str.__str__(text)  # the text of a str subclass, not its own methods (a strip() that lies, or raises)
    if not text.strip(WHITESPACE):
        raise _refuse("empty", "the reply is empty", "one JSON value", "only whitespace" if text else "empty text")
    if text.startswith("\ufeff"):
        place = json.JSONDecodeError("", text, 0)
        raise _refuse("bom", "the reply starts with a byte-order mark (U+FEFF)", "the JSON itself", "U+FEFF", place)
    if sys.getrecursionlimit() > 1000:  # json's C decoder recurses per level and could overflow the C stack
        brackets = re.sub(r"[^\[\]{}]++", "", _STRINGS.sub("", text))  # those outside strings, counted in C
        if max(accumulate(1 if b in "[{" else -1 for b in brackets), default=0) > MAX_NESTING_DEPTH:
            raise too_deep()
    return text


def check_json_syntax(raw_text: str) -> Any:
    """Step 1: exactly one strict JSON value, whitespace around it allowed, or a layer-1 refusal."""
    raw_text = _check_text(raw_text)
    try:
        value, end = DECODER.raw_decode(raw_text, len(raw_text) - len(raw_text.lstrip(WHITESPACE)))
    except json.JSONDecodeError as error:
        raise _syntax_error(raw_text, error) from None
    except RecursionError:  # deeper than the stack allows: so, deeper than 100
        raise too_deep() from None
    if rest := raw_text[end:].lstrip(WHITESPACE):
        raise _syntax_error(raw_text, json.JSONDecodeError("Extra data", raw_text, len(raw_text) - len(rest)), True)
    if raw_text.count("[") + raw_text.count("{") > MAX_NESTING_DEPTH and _nests_too_deep(value):
        raise too_deep()
    # Half a surrogate pair (surrogateescape, an escaped "\ud800") is no UTF-8 and could never be sent on.
    text = json.dumps(value, ensure_ascii=False) if _SURROGATE_ESCAPE.search(raw_text) else raw_text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        detail = f"lone surrogate U+{(code := ord(text[error.start])):04X} cannot be encoded as UTF-8"
        raise _refuse("lone_surrogate", detail, "valid Unicode text", f"a lone U+{code:04X}", code_point=code) from None
    return value
