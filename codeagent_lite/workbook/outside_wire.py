"""Values as plain data between the outside judge and the sandboxed child that runs a learner's code.

The child runs the learner's functions and sends back what came out; the judge decides. Nothing here runs a
learner's object: ``encode`` reads only dataclass fields, enum values, exception attributes and builtin values, and
``decode`` builds objects only from the classes the reader names (``classes``), so a message from a hostile child
can at worst decode into wrong values, which the judge then marks wrong. Standard library only: the child that
judges a learner's folder has no package but the previous chapter's two files.
"""

from __future__ import annotations

import builtins
import dataclasses
import enum
import math
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["MAX_DEPTH", "Opaque", "Record", "WireError", "decode", "encode"]

MAX_DEPTH = 60
"""Deeper values are cut to a marker: the chapter's own data never nests this deep, and a recursion stays bounded."""

EXCEPTION_FIELDS = ("layer", "usage", "raw_text", "expected", "found", "line", "column")
"""The attributes an InvalidModelOutputError carries; read from any exception that has them."""

_BUILTIN_ERRORS = {
    name: value
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, Exception) and not name.startswith("_")
}


class WireError(ValueError):
    """A message from the child that is not what this codec writes (too deep, unknown tag, wrong shape)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Opaque:
    """A value the child could not describe as data (a learner's own object): only its type name and repr."""

    type: str
    text: str

    def __repr__(self) -> str:
        return self.text


@dataclasses.dataclass(frozen=True, slots=True)
class Record:
    """A dataclass the reader has no class for (a learner's own ``ProviderMessage``): its name and fields."""

    type: str
    fields: tuple[tuple[str, Any], ...]

    def __getattr__(self, name: str) -> Any:
        for key, value in object.__getattribute__(self, "fields"):
            if key == name:
                return value
        raise AttributeError(name)


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _safe_repr(value: object) -> str:
    try:
        return _short(repr(value))
    except Exception:  # a learner's __repr__ may raise anything
        return f"<{type(value).__name__}>"


def encode(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-ready data; objects it cannot describe become an ``opaque`` entry with their repr."""
    if depth > MAX_DEPTH:
        return {"t": "deep"}
    kind = type(value)
    if value is None or kind in (bool, int, str, float) or value is Ellipsis:
        return _encode_scalar(value)
    if kind in (list, tuple, dict):
        return _encode_container(value, depth)
    return _encode_object(value, depth)


def _encode_scalar(value: Any) -> Any:
    if value is Ellipsis:
        return {"t": "..."}
    if type(value) is float and not math.isfinite(value):
        return {"t": "float", "v": repr(value)}
    return value


def _encode_container(value: list[Any] | tuple[Any, ...] | dict[Any, Any], depth: int) -> Any:
    if type(value) is dict:
        return {"t": "dict", "v": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    items = [encode(item, depth + 1) for item in value]
    return items if type(value) is list else {"t": "tuple", "v": items}


def _encode_object(value: Any, depth: int) -> Any:
    """An enum, an exception, a dataclass by its fields; anything else only by its type name and repr."""
    kind = type(value)
    if isinstance(value, enum.Enum):
        return {"t": "enum", "type": kind.__name__, "v": encode(value.value, depth + 1)}
    if isinstance(value, BaseException):
        return _encode_exception(value, depth)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {
            field.name: encode(getattr(value, field.name, None), depth + 1) for field in dataclasses.fields(value)
        }
        return {"t": "obj", "type": kind.__name__, "f": fields}
    return {"t": "opaque", "type": kind.__name__, "repr": _safe_repr(value)}


def _encode_exception(error: BaseException, depth: int) -> dict[str, Any]:
    attributes = {name: encode(vars(error)[name], depth + 1) for name in EXCEPTION_FIELDS if name in vars(error)}
    message = getattr(error, "message", None)
    if not isinstance(message, str):
        message = str(error.args[0]) if len(error.args) == 1 else _safe_repr(error.args)
    cause = error.__cause__
    return {
        "t": "exc",
        "type": type(error).__name__,
        "mro": [klass.__name__ for klass in type(error).__mro__],
        "msg": message,
        "attrs": attributes,
        "cause": None if cause is None or depth > 3 else _encode_exception(cause, depth + 1),
    }


Classes = Mapping[str, Callable[..., Any]]


def decode(data: Any, classes: Classes, depth: int = 0) -> Any:
    """Rebuild a value from ``encode``'s data, constructing only the ``classes`` named (by class name)."""
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested more than {MAX_DEPTH} levels deep")
    if data is None or type(data) in (bool, int, str, float):
        return data
    if type(data) is list:
        return [decode(item, classes, depth + 1) for item in data]
    if type(data) is not dict or not isinstance(data.get("t"), str):
        raise WireError(f"expected a tagged value, found {type(data).__name__}")
    return _decode_tagged(data, classes, depth)


def _decode_tagged(data: dict[str, Any], classes: Classes, depth: int) -> Any:
    tag = data["t"]
    simple = _SIMPLE_TAGS.get(tag)
    if simple is not None:
        return simple(data)
    if tag == "tuple":
        return tuple(decode(_list(data.get("v")), classes, depth + 1))
    if tag == "dict":
        return _decode_dict(data, classes, depth)
    if tag == "enum":
        return _decode_enum(data, classes, depth)
    if tag == "obj":
        return _decode_object(data, classes, depth)
    if tag == "exc":
        return _decode_exception(data, classes, depth)
    raise WireError(f"an unknown tag {tag!r}")


_SIMPLE_TAGS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "deep": lambda data: Opaque("deep", "<a value nested too deeply to be shown>"),
    "float": lambda data: float(str(data.get("v"))),
    "...": lambda data: Ellipsis,
    "opaque": lambda data: Opaque(str(data.get("type")), str(data.get("repr"))),
}
"""The tags whose value is built from the entry alone (no nested value to decode)."""


def _decode_dict(data: dict[str, Any], classes: Classes, depth: int) -> dict[Any, Any]:
    result = {}
    for pair in _list(data.get("v")):
        if type(pair) is not list or len(pair) != 2:
            raise WireError("a dict entry that is not a [key, value] pair")
        key = decode(pair[0], classes, depth + 1)
        try:
            result[key] = decode(pair[1], classes, depth + 1)
        except TypeError:
            raise WireError("a dict key that cannot be a key") from None
    return result


def _list(value: Any) -> list[Any]:
    if type(value) is not list:
        raise WireError(f"expected a list, found {type(value).__name__}")
    return value


def _decode_enum(data: dict[str, Any], classes: Classes, depth: int) -> Any:
    klass = classes.get(str(data.get("type")))
    value = decode(data.get("v"), classes, depth + 1)
    if isinstance(klass, type) and issubclass(klass, enum.Enum):
        try:
            return klass(value)
        except ValueError:
            pass
    return Opaque(str(data.get("type")), f"{data.get('type')}({value!r})")


def _decode_object(data: dict[str, Any], classes: Classes, depth: int) -> Any:
    name = str(data.get("type"))
    raw = data.get("f")
    if type(raw) is not dict:
        raise WireError("an object without fields")
    fields = {str(key): decode(value, classes, depth + 1) for key, value in raw.items()}
    klass = classes.get(name)
    if klass is not None:
        try:
            return klass(**fields)
        except Exception:  # fields that the class refuses: the learner's object was not a valid one
            pass
    return Record(name, tuple(fields.items()))


def _decode_exception(data: dict[str, Any], classes: Classes, depth: int) -> BaseException:
    name = str(data.get("type"))
    message = str(data.get("msg"))
    raw = data.get("attrs")
    attributes = {str(k): decode(v, classes, depth + 1) for k, v in raw.items()} if type(raw) is dict else {}
    error = _exception_of(name, [str(n) for n in _list(data.get("mro", []))], message, attributes, classes)
    cause = data.get("cause")
    if cause is not None:
        error.__cause__ = _decode_exception(cause, classes, depth + 1) if type(cause) is dict else None
    return error


def _exception_of(
    name: str, mro: list[str], message: str, attributes: dict[str, Any], classes: Classes
) -> BaseException:
    """The named exception rebuilt: a known class with its fields, else a look-alike subclass of a builtin base."""
    known = _known_exception(classes.get(name), message, attributes)
    if known is not None:
        return known
    base = next((_BUILTIN_ERRORS[n] for n in mro if n in _BUILTIN_ERRORS), Exception)
    error = base(message) if name == base.__name__ else type(name, (base,), {})(message)
    for key, value in attributes.items():
        setattr(error, key, value)
    return error


def _known_exception(klass: object, message: str, attributes: dict[str, Any]) -> BaseException | None:
    """An exception of a class the reader knows, with its fields; None when it is none or refuses them."""
    if not (isinstance(klass, type) and issubclass(klass, Exception)):
        return None
    try:
        if "layer" in attributes:
            return klass(message, **{k: v for k, v in attributes.items() if k in EXCEPTION_FIELDS})
        return klass(message)
    except Exception:  # the learner's error carried fields the real class refuses
        return None
