"""Values and exceptions as plain data, both ways across a sandbox's channel: one format for verify and the grader.

Why one module: two codecs would be two sets of rules to get right; it runs in the sandbox too (stdlib and display).
``encode`` cuts at ``Caps`` and sends what it cannot read as data as its type and a cut ``repr``; ``decode`` builds
only the classes the reader names and refuses unknown tags and deep nesting: a hostile child's message decodes at
worst into wrong values.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import enum
import math
from collections.abc import Callable, Mapping
from typing import Any

from ..display import shorten

__all__ = [
    "GRADER_CAPS",
    "MAX_DEPTH",
    "Caps",
    "Opaque",
    "Record",
    "WireError",
    "classes_of",
    "decode",
    "describe_error",
    "encode",
    "qualified",
    "shown",
]

MAX_DEPTH = 20
"""The deepest value ``decode`` rebuilds: the chapter's values nest a few levels; the channel allows 64 JSON levels."""

ERROR_FIELDS = ("layer", "code", "usage", "raw_text", "expected", "found", "line", "column")
"""The attributes an InvalidModelOutputError carries, sent from any exception that has them."""
_BUILT_WITH = frozenset(ERROR_FIELDS) - {"code"}  # the grader's errors are rebuilt with these (the code defaults)
_BUILTIN_ERRORS = {
    f"builtins.{name}": value
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, Exception) and not name.startswith("_")
}


@dataclasses.dataclass(frozen=True, slots=True)
class Caps:
    """Where ``encode`` cuts: characters of a string, items of a list or dict, levels of nesting, and values in all
    (a learner's list holding one list many times over, many levels deep, is exponentially many when walked)."""

    text: int = 4000
    items: int = 60
    depth: int = 12
    nodes: int = 10_000

    @classmethod
    def holding(cls, text: str) -> Caps:
        """Caps that cut nothing of a value parsed from ``text`` (no string, list or count of values in it is
        longer than the text; the chapter refuses nesting past 100): a judge that compares cut values on both sides
        would pass a parser that spoils the tail of a long one."""
        return cls(text=len(text) + 1, items=len(text) + 1, depth=128, nodes=len(text) + 64)


GRADER_CAPS = Caps(text=1_000_000, items=10_000, depth=16, nodes=200_000)
"""The grader's: the texts it sends (a 120 kB reply among them) must arrive whole."""


class WireError(ValueError):
    """A message that is not what this codec writes (too deep, an unknown tag, a wrong shape)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Opaque:
    """A value the child could not describe as data (a learner's own object): its type's name and repr."""

    type: str
    text: str

    def __repr__(self) -> str:
        return self.text


@dataclasses.dataclass(frozen=True, slots=True)
class Record:
    """A dataclass the reader has no class for (a learner's ``ProviderMessage``): its name and fields."""

    type: str
    fields: tuple[tuple[str, Any], ...]

    def __getattr__(self, name: str) -> Any:
        for key, value in object.__getattribute__(self, "fields"):
            if key == name:
                return value
        raise AttributeError(name)


def qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def shown(value: object, limit: int = 300) -> str:
    """``repr`` cut short; a learner's ``__repr__`` that raises is shown as such."""
    try:
        text = repr(value)
    except BaseException as error:  # learner code: anything may come out
        text = f"<repr raised {type(error).__name__}>"
    return shorten(text, limit)


def encode(value: object, depth: int = 0, caps: Caps = Caps()) -> Any:
    """``value`` as JSON-able data that keeps its type (marked where JSON cannot): a parent's facts, never a verdict."""
    return _Encoder(caps).value(value, depth)


def describe_error(error: BaseException, depth: int = 0, caps: Caps = Caps()) -> dict[str, Any]:
    """An exception as facts: its classes, what it says, its arguments (to rebuild it), the Kernel's attributes
    and (a few levels of) its cause. The one describer: verify's judges read it, ``decode`` rebuilds from it."""
    return _Encoder(caps).error(error, depth)


class _Encoder:
    """One ``encode``: its caps and the values it may still walk (past them, each is its type and a mark)."""

    def __init__(self, caps: Caps) -> None:
        self.caps, self.left = caps, caps.nodes

    def value(self, value: object, depth: int) -> Any:
        caps = self.caps
        self.left -= 1
        if self.left < 0:
            return {"$other": qualified(type(value)), "repr": f"<too many values to be shown (over {caps.nodes})>"}
        if depth > caps.depth:
            return {"$deep": True}
        if isinstance(value, dict):
            pairs = list(value.items())[: caps.items]
            return {"$dict": [[self.value(key, depth + 1), self.value(item, depth + 1)] for key, item in pairs]}
        if isinstance(value, list):
            return [self.value(item, depth + 1) for item in value[: caps.items]]
        if isinstance(value, tuple):
            return {"$tuple": self.value(list(value), depth)}
        if isinstance(value, BaseException):
            return self.error(value, depth)
        return self.dataclass(value, depth)

    def dataclass(self, value: object, depth: int) -> Any:
        """A dataclass by its fields (rebuilt only from a class the reader names), else ``scalar``'s."""
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: self.value(getattr(value, f.name, None), depth + 1) for f in dataclasses.fields(value)}
            return {"$obj": qualified(type(value)), "fields": fields}
        return self.scalar(value, depth)

    def scalar(self, value: object, depth: int) -> Any:
        """A value JSON can almost carry, marked where it cannot. An enum before int: an IntEnum's type counts."""
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, str):
            return value[: self.caps.text]
        if isinstance(value, enum.Enum):
            return {"$enum": qualified(type(value)), "value": self.value(value.value, depth + 1)}
        if isinstance(value, int):
            return value if abs(value) < 10**300 else {"$bigint": True}
        if isinstance(value, float):
            return value if math.isfinite(value) else {"$float": repr(value)}
        return {"$ellipsis": True} if value is Ellipsis else {"$other": qualified(type(value)), "repr": shown(value)}

    def error(self, error: BaseException, depth: int) -> dict[str, Any]:
        described: dict[str, Any] = {
            "$error": qualified(type(error)),
            "type": type(error).__name__,
            "module": type(error).__module__,
            "mro": [qualified(cls) for cls in type(error).__mro__],
            "message": "",
        }
        with contextlib.suppress(BaseException):  # a learner's __str__ may raise anything
            described["message"] = str(error)[: self.caps.text]
        # Only the error itself sends its arguments and only it and its first cause their fields: an error nested in
        # them is rebuilt from its message, so one that holds itself many times costs a line each, not a power of them.
        if depth == 0:
            with contextlib.suppress(BaseException):  # and so may its args, a property like any other
                described["args"] = self.value(list(error.args), depth + 1)
        for name in ERROR_FIELDS if depth <= 1 else ():
            with contextlib.suppress(BaseException):  # and so may a learner's attribute
                if hasattr(error, name):
                    described[name] = self.value(getattr(error, name), depth + 1)
        cause = None
        with contextlib.suppress(BaseException):  # even ``__cause__`` can be a learner's property
            cause = error.__cause__
        if isinstance(cause, BaseException) and depth <= 3:
            described["cause"] = self.error(cause, depth + 1)
        return described


# --------------------------------------------------------------------------- decode

Classes = Mapping[str, Callable[..., Any]]
"""The classes a reader lets ``decode`` build, by qualified name."""


def classes_of(*modules: object) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for module in modules:
        found.update({qualified(value): value for value in vars(module).values() if isinstance(value, type)})
    return found


def decode(data: Any, classes: Classes, depth: int = 0) -> Any:
    """Rebuild a value from ``encode``'s data, constructing only the ``classes`` named."""
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested more than {MAX_DEPTH} levels deep")
    if data is None or type(data) in (bool, int, str, float):
        return data
    if type(data) is list:
        return [decode(item, classes, depth + 1) for item in data]
    return _decode_tagged(data, classes, depth)


def _decode_tagged(data: Any, classes: Classes, depth: int) -> Any:
    if type(data) is not dict or len(data) == 0:
        raise WireError(f"expected a value, found {type(data).__name__}")
    tag = next((key for key in data if key.startswith("$")), None)
    reader = _READERS.get(str(tag))
    if reader is None:
        raise WireError(f"an unknown tag {tag!r}")
    return reader(data, classes, depth)


def _list(value: Any) -> list[Any]:
    if type(value) is not list:
        raise WireError(f"expected a list, found {type(value).__name__}")
    return value


def _decode_dict(data: dict[str, Any], classes: Classes, depth: int) -> dict[Any, Any]:
    result = {}
    for pair in _list(data["$dict"]):
        if type(pair) is not list or len(pair) != 2:
            raise WireError("a dict entry that is not a [key, value] pair")
        try:
            result[decode(pair[0], classes, depth + 1)] = decode(pair[1], classes, depth + 1)
        except TypeError:
            raise WireError("a dict key that cannot be a key") from None
    return result


def _decode_enum(data: dict[str, Any], classes: Classes, depth: int) -> Any:
    name, klass = str(data["$enum"]), classes.get(str(data["$enum"]))
    value = decode(data.get("value"), classes, depth + 1)
    if isinstance(klass, type) and issubclass(klass, enum.Enum):
        with contextlib.suppress(ValueError):
            return klass(value)
    return Opaque(name, f"{name.rpartition('.')[2]}({value!r})")


def _decode_object(data: dict[str, Any], classes: Classes, depth: int) -> Any:
    name = str(data["$obj"])
    raw = data.get("fields")
    if type(raw) is not dict:
        raise WireError("an object without fields")
    fields = {str(key): decode(value, classes, depth + 1) for key, value in raw.items()}
    klass = classes.get(name)
    if klass is not None:
        with contextlib.suppress(Exception):  # fields that the class refuses: the learner's object was not valid
            return klass(**fields)
    return Record(name.rpartition(".")[2], tuple(fields.items()))


def _decode_error(data: dict[str, Any], classes: Classes, depth: int) -> BaseException:
    """The named exception rebuilt: a known class with its fields, else a look-alike subclass of a builtin base."""
    name = str(data["$error"])
    fields = {key: decode(data[key], classes, depth + 1) for key in ERROR_FIELDS if key in data}
    args = decode(data["args"], classes, depth + 1) if type(data.get("args")) is list else [str(data.get("message"))]
    error = _known_error(classes.get(name), args, fields) or _look_alike(name, data, args, fields)
    cause = data.get("cause")
    if type(cause) is dict and "$error" in cause:
        error.__cause__ = _decode_error(cause, classes, depth + 1)
    return error


def _look_alike(name: str, data: dict[str, Any], args: list[Any], fields: dict[str, Any]) -> BaseException:
    """An exception of a class the reader does not know: a subclass of its first builtin base, of that name."""
    base = next((_BUILTIN_ERRORS[str(n)] for n in _list(data.get("mro", [])) if str(n) in _BUILTIN_ERRORS), Exception)
    try:
        error = base(*args) if name == qualified(base) else type(name.rpartition(".")[2], (base,), {})(*args)
    except Exception:  # arguments a builtin's own constructor refuses (UnicodeDecodeError wants bytes): what it said
        plain = {"__init__": BaseException.__init__, "__str__": BaseException.__str__}
        error = type(name.rpartition(".")[2], (base,), plain)(str(data.get("message")))
    for key, value in fields.items():
        with contextlib.suppress(Exception):  # a builtin's read-only attribute keeps its own value
            setattr(error, key, value)
    return error


def _known_error(klass: object, args: list[Any], fields: dict[str, Any]) -> BaseException | None:
    """An exception of a class the reader knows, with its fields; None when it is none or refuses them."""
    if not (isinstance(klass, type) and issubclass(klass, Exception)):
        return None
    try:
        if "layer" in fields:
            return klass(*args, **{k: v for k, v in fields.items() if k in _BUILT_WITH})
        return klass(*args)
    except Exception:  # the learner's error carried fields the real class refuses
        return None


_READERS: dict[str, Callable[[dict[str, Any], Classes, int], Any]] = {
    "$tuple": lambda data, classes, depth: tuple(decode(_list(data["$tuple"]), classes, depth + 1)),
    "$dict": _decode_dict,
    "$enum": _decode_enum,
    "$obj": _decode_object,
    "$error": _decode_error,
    "$other": lambda data, classes, depth: Opaque(str(data["$other"]), str(data.get("repr"))),
    "$float": lambda data, classes, depth: float(str(data["$float"])),
    "$bigint": lambda data, classes, depth: Opaque("bigint", "<an integer too large to be shown>"),
    "$ellipsis": lambda data, classes, depth: Ellipsis,
    "$deep": lambda data, classes, depth: Opaque("deep", "<a value nested too deeply to be shown>"),
}
"""Each tag's reader: what ``decode`` can build, and nothing else."""
