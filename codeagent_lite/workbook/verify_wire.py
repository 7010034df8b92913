"""The shape of each message verify's child may send, checked before the parent reads any field of it.

Why: learner code runs in the child and can write to the channel, so a field of the wrong type, or an error
description that is not one, makes the whole message malformed: one failed line in the report, never an
exception. The strings a learner is shown are cleaned where they enter the parent's data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..display import printable, shorten

__all__ = ["MALFORMED", "checked_check", "checked_load", "clean"]

MALFORMED = object()
"""What ``checked_load``/``checked_check`` return for a message of the wrong shape."""

_TEXT = 4000  # the probe's own cut (``verify_probe._MAX_TEXT``)
_NAME = 200
_NAMES = 64  # classes of an mro, reference imports: a few in practice

Field = Callable[[Any], Any]


class _Malformed(Exception):
    """A field of the wrong shape: the whole message is refused."""


def clean(text: str, *, limit: int = 400) -> str:
    """One safe line: ``display.printable``, its newlines and tabs escaped too, cut to ``limit``."""
    return shorten(printable(text[: limit * 2]).replace("\n", "\\n").replace("\t", "\\x09"), limit)


def _of(kind: type, then: Field = lambda value: value) -> Field:
    def field(value: object) -> object:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise _Malformed
        return then(value)

    return field


def _text(limit: int) -> Field:
    return _of(str, lambda value: clean(value, limit=limit))


def _optional(check: Field) -> Field:
    return lambda value: None if value is None else check(value)


def _items(*checks: Field) -> Field:
    """A list of exactly these fields, in order."""
    return _of(list, lambda value: [check(item) for check, item in zip(checks, value, strict=True)])


def _names(value: object) -> list[str]:
    if not isinstance(value, list) or len(value) > _NAMES:
        raise _Malformed
    return [_text(_NAME)(name) for name in value]


def _record(fields: Mapping[str, Field], required: tuple[str, ...] = ()) -> Field:
    """A dict whose known fields are each checked (and cleaned); the ones we do not know are dropped."""

    def field(value: object) -> dict[str, Any]:
        if not isinstance(value, dict) or any(name not in value for name in required):
            raise _Malformed
        return {name: check(value[name]) for name, check in fields.items() if name in value}

    return field


def _data(value: object) -> object:
    """A probe's facts (a value, an error's ``layer``): only the judges read them, inside their try."""
    return value


_ERROR = _record(
    {
        "type": _text(_NAME),
        "module": _text(_NAME),
        "mro": _names,
        "message": _text(_TEXT),
        "place": _optional(_items(_text(60), _of(int))),
        "syntax": _items(_text(60), _optional(_of(int)), _text(_NAME)),
        "exit_code": _text(_NAME),
        "cause": _record({"type": _text(_NAME), "mro": _names}, ("type", "mro")),
        "cause_shown": _text(_TEXT),
        **{name: _data for name in ("layer", "code", "usage", "expected", "found")},
    },
    ("type", "module", "mro", "message"),
)
_PRINTED = _of(str, lambda value: value[:200])  # kept as it is: the parent shows it with ``repr``, then cleans
# A check's result: the facts the judges read stay data (a wrong shape there is a failed check); what a learner
# is shown is typed and cleaned.
_SHOWN: dict[str, Field] = {"error": _ERROR, "printed": _PRINTED, "reference_imports": _names, "shown": _text(_TEXT)}


def _result(value: object) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise _Malformed
    return {key: _SHOWN.get(key, _data)(item) for key, item in value.items()}


_LOAD = _record({"missing": _of(bool), "error": _optional(_ERROR), "printed": _PRINTED, "reference_imports": _names})
_CHECK = _record({"not_run": _of(bool), "result": _result})


def _checked(part: Mapping[str, object], record: Field) -> dict[str, Any] | object:
    try:
        checked: dict[str, Any] = record(part)
        return checked
    except (_Malformed, ValueError):  # ValueError: a list of another length than its fields
        return MALFORMED


def checked_load(part: Mapping[str, object]) -> dict[str, Any] | object:
    """A ``{"done": "load:<file>", ...}`` message's fields, checked; ``MALFORMED`` when one has the wrong shape."""
    return _checked(part, _LOAD)


def checked_check(part: Mapping[str, object]) -> dict[str, Any] | object:
    """A ``{"done": "<place>", ...}`` message's fields, checked; ``MALFORMED`` when one has the wrong shape."""
    return _checked(part, _CHECK)
