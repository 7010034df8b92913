"""The shape of each message verify's child may send, checked before the parent uses any field.

Why a module of its own: everything the child sends is untrusted (learner code runs there and
can write to the channel), so the parent takes a message only after one schema check per
message kind: a field of the wrong type, or an error description that is not one, makes the
message malformed, which verify says as one failed line, never an exception. The strings it
shows a learner (what was raised, what was printed, what was imported) are cleaned here, where
they enter the parent's data: no control character, no unbounded length.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["MALFORMED", "checked_check", "checked_load"]

MALFORMED = object()
"""What ``checked_load``/``checked_check`` return for a message of the wrong shape."""

_TEXT = 4000  # the probe's own cut (``verify_probe._MAX_TEXT``)
_NAME = 200
_NAMES = 64  # classes of an mro, reference imports: a few in practice

Field = Callable[[object], object]


class _Malformed(Exception):
    """A field of the wrong shape: the whole message is refused."""


def clean(text: str, *, limit: int) -> str:
    """One safe line: no control characters, no unbounded length (``verify_child.clean`` is this)."""
    out = []
    for char in text[: limit * 2]:
        if char.isprintable() or char == " ":
            out.append(char)
        elif char == "\n":
            out.append("\\n")
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    line = "".join(out)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _text(limit: int) -> Callable[[object], str]:
    def field(value: object) -> str:
        if not isinstance(value, str):
            raise _Malformed
        return clean(value, limit=limit)

    return field


def _raw_text(limit: int) -> Field:
    """A string kept as it is but cut (the parent shows it with ``repr``, then cleans it)."""

    def field(value: object) -> str:
        if not isinstance(value, str):
            raise _Malformed
        return value[:limit]

    return field


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise _Malformed
    return value


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Malformed
    return value


def _names(value: object) -> list[str]:
    if not isinstance(value, list) or len(value) > _NAMES:
        raise _Malformed
    return [_text(_NAME)(name) for name in value]


def _place(value: object) -> list[object] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 2:
        raise _Malformed
    return [_text(60)(value[0]), _int(value[1])]


def _syntax(value: object) -> list[object]:
    if not isinstance(value, list) or len(value) != 3:
        raise _Malformed
    line = None if value[1] is None else _int(value[1])
    return [_text(60)(value[0]), line, _text(_NAME)(value[2])]


def _cause(value: object) -> dict[str, Any]:
    return _record(value, {"type": _text(_NAME), "mro": _names}, required=("type", "mro"))


def _data(value: object) -> object:
    """Encoded values (an error's ``layer``, ``usage``...): only the judges read them, inside their try."""
    return value


_ERROR: dict[str, Field] = {
    "type": _text(_NAME),
    "module": _text(_NAME),
    "mro": _names,
    "message": _text(_TEXT),
    "place": _place,
    "syntax": _syntax,
    "exit_code": _text(_NAME),
    "cause": _cause,
    "cause_shown": _text(_TEXT),
    **{name: _data for name in ("layer", "code", "usage", "expected", "found")},
}


def _error(value: object) -> dict[str, Any]:
    return _record(value, _ERROR, required=("type", "module", "mro", "message"))


def _maybe_error(value: object) -> dict[str, Any] | None:
    return None if value is None else _error(value)


# A check's result: the probe's facts the judges read (``value``, the stand-ins' records) stay data for the
# judges, which treat a wrong shape as a failed check; the ones a learner is shown are typed and cleaned.
_RESULT_SHOWN: dict[str, Field] = {
    "error": _error,
    "printed": _raw_text(200),
    "reference_imports": _names,
    "shown": _text(_TEXT),
}


def _result(value: object) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise _Malformed
    return {key: _RESULT_SHOWN.get(key, _data)(item) for key, item in value.items()}


_LOAD: dict[str, Field] = {
    "missing": _flag,
    "error": _maybe_error,
    "printed": _raw_text(200),
    "reference_imports": _names,
}
_CHECK: dict[str, Field] = {"not_run": _flag, "result": _result}


def _record(value: object, fields: Mapping[str, Field], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fields we know, each checked (and cleaned); the ones we do not know are dropped."""
    if not isinstance(value, dict) or any(name not in value for name in required):
        raise _Malformed
    return {name: check(value[name]) for name, check in fields.items() if name in value}


def _checked(part: Mapping[str, object], fields: Mapping[str, Field]) -> dict[str, Any] | object:
    try:
        return _record(part, fields)
    except _Malformed:
        return MALFORMED


def checked_load(part: Mapping[str, object]) -> dict[str, Any] | object:
    """A ``{"done": "load:<file>", ...}`` message's fields, checked; ``MALFORMED`` when one has the wrong shape."""
    return _checked(part, _LOAD)


def checked_check(part: Mapping[str, object]) -> dict[str, Any] | object:
    """A ``{"done": "<check id>", ...}`` message's fields, checked; ``MALFORMED`` when one has the wrong shape."""
    return _checked(part, _CHECK)
