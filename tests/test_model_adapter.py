"""model_adapter: TokenUsage, ModelCallBudget, ValidationLayer and the two errors."""

from __future__ import annotations

import dataclasses

import pytest

from codeagent_lite.kernel_types import FinalAnswer
from codeagent_lite.model_adapter import (
    InvalidModelOutputError,
    ModelCallBudget,
    ModelProviderError,
    ModelResponse,
    TokenUsage,
    ValidationLayer,
)


def test_token_usage_total_and_sum() -> None:
    usage = TokenUsage(input_tokens=120, output_tokens=30)
    assert usage.total_tokens == 150
    assert usage + TokenUsage(1, 2) == TokenUsage(121, 32)
    assert TokenUsage(0, 0).total_tokens == 0


@pytest.mark.parametrize(("input_tokens", "output_tokens"), [(-1, 0), (0, -1)])
def test_token_usage_refuses_negative_counts(input_tokens: int, output_tokens: int) -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        TokenUsage(input_tokens, output_tokens)


@pytest.mark.parametrize("bad", [1.5, "3", True, None])
def test_token_usage_refuses_non_integers(bad: object) -> None:
    with pytest.raises(TypeError):
        TokenUsage(bad, 0)  # type: ignore[arg-type]


def test_budget_is_positional_and_positive() -> None:
    assert ModelCallBudget(128).max_output_tokens == 128
    assert ModelCallBudget(1).max_output_tokens == 1
    for bad in (0, -5):
        with pytest.raises(ValueError, match="must be >= 1"):
            ModelCallBudget(bad)
    with pytest.raises(TypeError):
        ModelCallBudget(True)


def test_value_types_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        TokenUsage(1, 2).input_tokens = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ModelCallBudget(128).max_output_tokens = 5  # type: ignore[misc]
    response = ModelResponse(action=FinalAnswer("42"), usage=TokenUsage(1, 2))
    assert response == ModelResponse(FinalAnswer("42"), TokenUsage(1, 2))


def test_validation_layers_in_the_chapter_order() -> None:
    assert [int(layer) for layer in ValidationLayer] == [1, 2, 3, 4]
    assert ValidationLayer.JSON_SYNTAX == 1
    assert ValidationLayer.FIELDS == 4
    assert [layer.title for layer in ValidationLayer] == [
        "JSON syntax",
        "top-level object",
        "action type",
        "fields and types",
    ]


def test_error_classes_fit_the_kernel_contract() -> None:
    assert issubclass(ModelProviderError, RuntimeError)
    assert issubclass(InvalidModelOutputError, ValueError)


def test_invalid_output_error_carries_its_details() -> None:
    error = InvalidModelOutputError("bad", layer=ValidationLayer.ACTION_TYPE, raw_text="{}", expected="e", found="f")
    assert str(error) == "bad"
    assert error.message == "bad"
    assert error.usage is None
    assert (error.layer, error.raw_text, error.expected, error.found) == (ValidationLayer.ACTION_TYPE, "{}", "e", "f")
    with_usage = error.with_usage(TokenUsage(3, 4))
    assert with_usage.usage == TokenUsage(3, 4)
    assert (with_usage.message, with_usage.layer, with_usage.raw_text) == ("bad", ValidationLayer.ACTION_TYPE, "{}")
    assert error.usage is None  # the original is left alone
    assert "layer 3 (action type)" in repr(error)


def test_invalid_output_error_takes_usage_as_keyword_only() -> None:
    error = InvalidModelOutputError("bad", usage=TokenUsage(1, 1))
    assert error.usage == TokenUsage(1, 1)
    with pytest.raises(TypeError):
        InvalidModelOutputError("bad", TokenUsage(1, 1))  # type: ignore[misc]
