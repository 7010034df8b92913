"""The contract between the Kernel and any model: ``complete`` returns a ``ModelResponse`` or raises one of two
errors, ``ModelProviderError`` (the model could not be reached) or ``InvalidModelOutputError`` (it answered with no
valid action). An error set this small is what lets the Kernel stay ignorant of providers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType
from typing import Any, Protocol

from .display import N_
from .kernel_types import Action, HistoryItem, ToolSpec

__all__ = ["DEFAULT_CODES", "LAYER_LABEL", "LAYER_NAME", "FakeModelAdapter", "FakeModelExhaustedError"]
__all__ += ["InvalidModelOutputError", "ModelAdapter", "ModelCall", "ModelCallBudget", "ModelProviderError"]
__all__ += ["ModelResponse", "TokenUsage", "ValidationLayer", "require_count"]


def require_count(field_name: str, value: object, least: int) -> None:
    """The one check of a count the Kernel is given (tokens, steps, limits), in the series' own words: bool is an
    int in Python, and ``True`` tokens is a bug, not a count."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{field_name} must be an integer, found {type(value).__name__}")
    if value < least:
        must = {0: "not be negative", 1: "be positive"}.get(least, f"be at least {least}")
        raise ValueError(f"{field_name} must {must}, found {value}")


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens one model call consumed. Spent tokens are spent, even when the reply is useless."""

    input_tokens: int
    output_tokens: int

    def __post_init__(self) -> None:
        require_count("input_tokens", self.input_tokens, 0)
        require_count("output_tokens", self.output_tokens, 0)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        # Lets an agent loop sum usage over many calls with plain ``+``.
        return TokenUsage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens)


@dataclass(frozen=True, slots=True)
class ModelCallBudget:
    """Limits the Kernel sets for one model call, independent of any provider's option names."""

    max_output_tokens: int

    def __post_init__(self) -> None:
        require_count("max_output_tokens", self.max_output_tokens, 1)


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """What the Kernel receives: an action that already passed every structural check."""

    action: Action
    usage: TokenUsage


class ModelAdapter(Protocol):
    def complete(
        self,
        history: Sequence[HistoryItem],
        tools: Sequence[ToolSpec],
        budget: ModelCallBudget,
    ) -> ModelResponse: ...


class ModelProviderError(RuntimeError):
    """The model could not be asked; adapters wrap each provider's own error in it, the original as ``__cause__``."""


class ValidationLayer(IntEnum):
    """The four checks that raw model text goes through, in the order they run."""

    JSON_SYNTAX = 1
    TOP_LEVEL_OBJECT = 2
    ACTION_TYPE = 3
    FIELDS = 4

    @property
    def title(self) -> str:  # the one place layer names are written; the workbook translates them
        return _LAYER_TITLES[self]

    @property
    def label(self) -> str:  # ``layer 1 (JSON syntax)``
        return LAYER_LABEL.format(number=int(self), title=self.title)


LAYER_NAME = N_("layer {number}")  # beside a title in a ladder
LAYER_LABEL = N_("layer {number} ({title})")  # in a message
_LAYER_TITLES = {
    ValidationLayer.JSON_SYNTAX: N_("JSON syntax"),
    ValidationLayer.TOP_LEVEL_OBJECT: N_("top-level object"),
    ValidationLayer.ACTION_TYPE: N_("action type"),
    ValidationLayer.FIELDS: N_("fields and types"),
}

DEFAULT_CODES = {
    ValidationLayer.JSON_SYNTAX: "not_json",
    ValidationLayer.TOP_LEVEL_OBJECT: "not_an_object",
    ValidationLayer.ACTION_TYPE: "unknown_type",
    ValidationLayer.FIELDS: "bad_fields",
}  # the code an error gets when its maker names none: the series' own parsers name only a layer


class InvalidModelOutputError(ValueError):
    """The model answered, but its text is not a valid action.

    ``str(error)`` is short: it goes back to the model as a correction. A program reads the data: ``layer``,
    ``code`` (stable, such as ``duplicate_key``), ``params`` (the key, the field, the value), ``expected``,
    ``found``, and for a syntax error ``line`` and ``column``. Context (``raw_text``, the ``usage`` a rejected
    reply still cost) is added by copies, so an error already raised or logged never changes.
    """

    def __init__(
        self,
        message: str,
        *,
        layer: ValidationLayer,
        code: str | None = None,
        params: Mapping[str, Any] | None = None,
        usage: TokenUsage | None = None,
        raw_text: str | None = None,
        expected: str | None = None,
        found: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        # Required, with no default: a correction that cannot say which check failed helps nobody.
        if not isinstance(layer, ValidationLayer):
            raise TypeError(f"layer must be a ValidationLayer, found {type(layer).__name__}")
        super().__init__(message)
        self.message = message
        self.layer = layer
        self.code = DEFAULT_CODES[layer] if code is None else code
        self.params: Mapping[str, Any] = MappingProxyType(dict(params or {}))
        self.usage = usage
        self.raw_text = raw_text
        self.expected = expected
        self.found = found
        self.line = line
        self.column = column

    def _copy_with(self, **changes: Any) -> InvalidModelOutputError:
        # A copy of fields this class has already checked: no second check, and no Python call
        # below this one, so the parser can still refuse when its caller left almost no stack.
        copy = InvalidModelOutputError.__new__(InvalidModelOutputError, self.message)
        copy.__dict__.update(vars(self), **changes)
        if hasattr(self, "__notes__"):  # a note added to the copy must not change the original
            copy.__notes__ = list(self.__notes__)
        return copy

    def with_usage(self, usage: TokenUsage) -> InvalidModelOutputError:
        return self._copy_with(usage=usage)

    def with_raw_text(self, raw_text: str) -> InvalidModelOutputError:  # the message quotes only a bit
        return self._copy_with(raw_text=raw_text)

    def __reduce__(self) -> tuple[Any, ...]:
        # Exceptions pickle as ``cls(*args)``, which would lose the required keyword ``layer``. The rest travels as
        # state, notes added by ``add_note`` included; ``params`` goes as a dict (a mappingproxy cannot be pickled)
        # and the constructor wraps it again. Pickling and copy.copy/deepcopy all take this road.
        state = {name: value for name, value in vars(self).items() if name not in ("message", "params")}
        return (_rebuilt, (type(self), self.message, self.layer, dict(self.params)), state)

    def __repr__(self) -> str:
        return (
            f"InvalidModelOutputError({self.message!r}, {self.layer.label}, code={self.code!r}, usage={self.usage!r})"
        )


def _rebuilt(
    cls: type[InvalidModelOutputError], message: str, layer: ValidationLayer, params: dict[str, Any]
) -> InvalidModelOutputError:
    return cls(message, layer=layer, params=params)


# --------------------------------------------------------------------------- the previous chapter's fake model


@dataclass(frozen=True, slots=True)
class ModelCall:
    """What the Kernel passed for one call, as ``FakeModelAdapter`` records it."""

    history: tuple[HistoryItem, ...]
    tools: tuple[ToolSpec, ...]
    budget: ModelCallBudget


class FakeModelExhaustedError(ModelProviderError):
    """Asked more often than it has outcomes for: like a provider that cannot answer."""

    def __init__(self) -> None:
        super().__init__("fake model has no configured outcome left")


ModelOutcome = ModelResponse | ModelProviderError | InvalidModelOutputError


class FakeModelAdapter:
    """The previous chapter's test double: returns or raises prepared outcomes, one per call.

    Every call is recorded, the one that finds no outcome left included (the series' own tests count it too).
    """

    def __init__(self, outcomes: Iterable[ModelOutcome]) -> None:
        self._outcomes = list(outcomes)
        for outcome in self._outcomes:
            if not isinstance(outcome, (ModelResponse, ModelProviderError, InvalidModelOutputError)):
                kinds = "a ModelResponse, ModelProviderError or InvalidModelOutputError"
                raise TypeError(f"an outcome must be {kinds}, found {type(outcome).__name__}")
        self.calls: list[ModelCall] = []

    def complete(
        self,
        history: Sequence[HistoryItem],
        tools: Sequence[ToolSpec],
        budget: ModelCallBudget,
    ) -> ModelResponse:
        self.calls.append(ModelCall(tuple(history), tuple(tools), budget))
        if len(self.calls) > len(self._outcomes):
            raise FakeModelExhaustedError
        outcome = self._outcomes[len(self.calls) - 1]
        if isinstance(outcome, ModelResponse):
            return outcome
        raise outcome
