"""model_adapter: TokenUsage, ModelCallBudget, ValidationLayer, the two errors and the fake model."""

from __future__ import annotations

import copy as copying
import pickle

import pytest

from codeagent_lite.kernel_types import FinalAnswer, Message, MessageRole, ToolSpec
from codeagent_lite.model_adapter import (
    FakeModelAdapter,
    FakeModelExhaustedError,
    InvalidModelOutputError,
    ModelCall,
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


@pytest.mark.parametrize(
    ("input_tokens", "output_tokens", "message"),
    [
        (-1, 0, "input_tokens must not be negative, found -1"),
        (0, -7, "output_tokens must not be negative, found -7"),
    ],
)
def test_token_usage_refuses_negative_counts_in_the_series_words(
    input_tokens: int, output_tokens: int, message: str
) -> None:
    with pytest.raises(ValueError) as caught:
        TokenUsage(input_tokens, output_tokens)
    assert str(caught.value) == message


@pytest.mark.parametrize("bad", [1.5, "3", True, None])
def test_token_usage_refuses_non_integers_with_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError) as caught:
        TokenUsage(bad, 0)  # type: ignore[arg-type]
    assert str(caught.value) == f"input_tokens must be an integer, found {type(bad).__name__}"
    with pytest.raises(TypeError, match=r"^output_tokens must be an integer"):
        TokenUsage(0, bad)  # type: ignore[arg-type]


def test_budget_is_positional_and_positive() -> None:
    assert ModelCallBudget(128).max_output_tokens == 128
    assert ModelCallBudget(1).max_output_tokens == 1
    for bad in (0, -5):
        with pytest.raises(ValueError) as caught:
            ModelCallBudget(bad)
        assert str(caught.value) == f"max_output_tokens must be positive, found {bad}"
    with pytest.raises(TypeError, match=r"^max_output_tokens must be an integer, found bool$"):
        ModelCallBudget(True)


def test_responses_compare_by_value() -> None:
    response = ModelResponse(action=FinalAnswer("42"), usage=TokenUsage(1, 2))
    assert response == ModelResponse(FinalAnswer("42"), TokenUsage(1, 2))
    assert response != ModelResponse(FinalAnswer("42"), TokenUsage(1, 3))


def test_validation_layers_in_the_chapter_order() -> None:
    assert [int(layer) for layer in ValidationLayer] == [1, 2, 3, 4]
    assert ValidationLayer.FIELDS.label == "layer 4 (fields and types)"
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
    error = InvalidModelOutputError(
        "bad", layer=ValidationLayer.ACTION_TYPE, raw_text="{}", expected="e", found="f", line=2, column=3
    )
    assert str(error) == "bad"
    assert error.message == "bad"
    assert error.usage is None
    assert (error.layer, error.raw_text, error.expected, error.found) == (ValidationLayer.ACTION_TYPE, "{}", "e", "f")
    assert (error.line, error.column) == (2, 3)
    assert (error.code, dict(error.params)) == ("unknown_type", {})  # the code defaults per layer
    assert "layer 3 (action type)" in repr(error)


def test_an_error_carries_a_code_and_frozen_params_that_copies_and_pickling_keep() -> None:
    error = InvalidModelOutputError(
        "duplicate", layer=ValidationLayer.JSON_SYNTAX, code="duplicate_key", params={"key": "path"}
    )
    with pytest.raises(TypeError):
        error.params["key"] = "other"  # type: ignore[index]
    for copy in (error.with_usage(TokenUsage(1, 1)), error.with_raw_text("{}"), pickle.loads(pickle.dumps(error))):
        assert (copy.code, dict(copy.params)) == ("duplicate_key", {"key": "path"})
    defaults = [InvalidModelOutputError("x", layer=layer).code for layer in ValidationLayer]
    assert defaults == ["not_json", "not_an_object", "unknown_type", "bad_fields"]


def test_context_is_added_by_copies_and_the_original_is_left_alone() -> None:
    error = InvalidModelOutputError("bad", layer=ValidationLayer.FIELDS, expected="e", found="f", line=1, column=9)
    with_usage = error.with_usage(TokenUsage(3, 4))
    with_text = with_usage.with_raw_text("{}")
    assert with_usage is not error and with_text is not with_usage
    assert (error.usage, error.raw_text) == (None, None)
    assert (with_usage.usage, with_usage.raw_text) == (TokenUsage(3, 4), None)
    assert (with_text.usage, with_text.raw_text) == (TokenUsage(3, 4), "{}")
    for copy in (with_usage, with_text):
        assert (copy.message, copy.layer, copy.expected, copy.found, copy.line, copy.column) == (
            "bad",
            ValidationLayer.FIELDS,
            "e",
            "f",
            1,
            9,
        )


def test_the_layer_is_required_so_no_message_can_say_layer_unknown() -> None:
    with pytest.raises(TypeError):
        InvalidModelOutputError("bad", usage=TokenUsage(1, 1))  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^layer must be a ValidationLayer, found int$"):
        InvalidModelOutputError("bad", layer=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        InvalidModelOutputError("bad", ValidationLayer.FIELDS)  # type: ignore[misc]


def test_an_invalid_output_error_survives_pickling_whole() -> None:
    error = InvalidModelOutputError(
        "bad", layer=ValidationLayer.JSON_SYNTAX, code="duplicate_key", params={"key": "k"}, usage=TokenUsage(1, 2)
    ).with_raw_text("x")
    error.add_note("seen by the loop")  # a note is state too: it must not break unpickling
    for restored in (pickle.loads(pickle.dumps(error)), copying.copy(error), copying.deepcopy(error)):
        assert vars(restored) == vars(error)
        assert (restored.code, dict(restored.params)) == ("duplicate_key", {"key": "k"})
        assert restored.__notes__ == ["seen by the loop"]
        assert str(restored) == "bad" and restored.layer is ValidationLayer.JSON_SYNTAX


def test_a_copy_of_an_invalid_output_error_is_its_own() -> None:
    """An error already raised or logged never changes: not through a deep copy's params, nor a with_ copy's notes."""
    error = InvalidModelOutputError("bad", layer=ValidationLayer.FIELDS, params={"missing": ["type"]})
    error.add_note("first")
    assert copying.deepcopy(error).params["missing"] is not error.params["missing"]
    error.with_usage(TokenUsage(1, 1)).add_note("second")
    error.with_raw_text("{}").add_note("third")
    assert error.__notes__ == ["first"]


# --------------------------------------------------------------------------- the previous chapter's fake model

HISTORY = (Message(MessageRole.USER, "hi"),)
TOOLS = (ToolSpec("read_file", "Read a file."),)
BUDGET = ModelCallBudget(32)


def test_fake_model_replays_responses_and_records_each_call() -> None:
    first = ModelResponse(FinalAnswer("one"), TokenUsage(1, 1))
    second = ModelResponse(FinalAnswer("two"), TokenUsage(2, 2))
    fake = FakeModelAdapter([first, second])
    assert fake.complete(list(HISTORY), list(TOOLS), BUDGET) is first
    assert fake.complete(HISTORY, (), ModelCallBudget(8)) is second
    assert fake.calls == [ModelCall(HISTORY, TOOLS, BUDGET), ModelCall(HISTORY, (), ModelCallBudget(8))]
    assert isinstance(fake.calls[0].history, tuple)


def test_fake_model_raises_the_configured_errors_then_runs_out() -> None:
    provider_error = ModelProviderError("down")
    invalid = InvalidModelOutputError("bad", layer=ValidationLayer.TOP_LEVEL_OBJECT)
    fake = FakeModelAdapter(iter([provider_error, invalid]))
    with pytest.raises(ModelProviderError) as caught_provider:
        fake.complete(HISTORY, TOOLS, BUDGET)
    assert caught_provider.value is provider_error
    with pytest.raises(InvalidModelOutputError) as caught_invalid:
        fake.complete(HISTORY, TOOLS, BUDGET)
    assert caught_invalid.value is invalid
    with pytest.raises(FakeModelExhaustedError) as caught_exhausted:
        fake.complete(HISTORY, TOOLS, BUDGET)
    assert str(caught_exhausted.value) == "fake model has no configured outcome left"
    assert len(fake.calls) == 3  # the call that found nothing left is recorded too, as the series' test expects
    assert isinstance(caught_exhausted.value, ModelProviderError)  # one tree: like a provider that cannot answer


def test_fake_model_refuses_an_outcome_it_cannot_replay() -> None:
    with pytest.raises(TypeError) as caught:
        FakeModelAdapter(["not an outcome"])  # type: ignore[list-item]
    assert str(caught.value) == (
        "an outcome must be a ModelResponse, ModelProviderError or InvalidModelOutputError, found str"
    )
