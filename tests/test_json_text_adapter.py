"""The adapter runs the chapter's sequence and translates the two failure kinds."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from codeagent_lite.json_text_adapter import JsonTextModelAdapter, ProviderError, ProviderResponse
from codeagent_lite.json_text_messages import ProviderMessage, build_provider_messages
from codeagent_lite.kernel_types import FinalAnswer, Message, MessageRole, ToolCall, ToolResult, ToolSpec
from codeagent_lite.model_adapter import (
    InvalidModelOutputError,
    ModelCallBudget,
    ModelProviderError,
    ModelResponse,
    TokenUsage,
    ValidationLayer,
)

HISTORY = [
    Message(MessageRole.SYSTEM, "Answer with one JSON action."),
    Message(MessageRole.USER, "What is in README.md?"),
    ToolCall("call_1", "read_file", {"path": "README.md"}),
    ToolResult("call_1", "# codeagent-lite"),
]
TOOLS = [ToolSpec("read_file", "Read a UTF-8 text file.", {"type": "object", "properties": {"path": {}}})]


class RecordingProvider:
    """Records exactly how it was called; answers or fails as told."""

    def __init__(self, outcome: ProviderResponse | Exception) -> None:
        self.outcome = outcome
        self.calls: list[tuple[tuple[object, ...], dict[str, object]]] = []

    def complete(self, *args: object, **kwargs: object) -> ProviderResponse:
        self.calls.append((args, kwargs))
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


def test_builds_messages_calls_the_provider_with_keywords_and_parses() -> None:
    text = '{"type":"final_answer","content":"It is the project README."}'
    provider = RecordingProvider(ProviderResponse(text=text, input_tokens=40, output_tokens=12))
    response = JsonTextModelAdapter(provider).complete(HISTORY, TOOLS, ModelCallBudget(128))

    assert response == ModelResponse(action=FinalAnswer("It is the project README."), usage=TokenUsage(40, 12))
    ((args, kwargs),) = provider.calls
    assert args == ()
    assert set(kwargs) == {"messages", "tools", "max_output_tokens"}
    assert tuple(kwargs["messages"]) == build_provider_messages(HISTORY)  # type: ignore[call-overload]
    assert kwargs["tools"] is TOOLS  # passed on unchanged
    assert kwargs["max_output_tokens"] == 128


def test_a_tool_call_comes_back_as_a_tool_call() -> None:
    text = '{"type":"tool_call","call_id":"call_2","tool_name":"read_file","arguments":{"path":"a.txt"}}'
    provider = RecordingProvider(ProviderResponse(text, 5, 6))
    response = JsonTextModelAdapter(provider).complete([], [], ModelCallBudget(64))
    assert response.action == ToolCall("call_2", "read_file", {"path": "a.txt"})
    assert provider.calls[0][1]["messages"] == ()


def test_provider_error_becomes_model_provider_error_with_cause() -> None:
    original = ProviderError("HTTP 503 from the server")
    adapter = JsonTextModelAdapter(RecordingProvider(original))
    with pytest.raises(ModelProviderError) as caught:
        adapter.complete(HISTORY, TOOLS, ModelCallBudget(128))
    assert str(caught.value).startswith("provider request failed")
    assert "HTTP 503" in str(caught.value)
    assert caught.value.__cause__ is original


@pytest.mark.parametrize("bug", [KeyError("bug"), ValueError("bug"), TypeError("bug"), RuntimeError("bug")])
def test_other_exceptions_are_not_disguised_as_provider_errors(bug: Exception) -> None:
    # Only the provider's own failure type is translated; a bug stays a bug (ValueError included,
    # though it is the base of InvalidModelOutputError).
    adapter = JsonTextModelAdapter(RecordingProvider(bug))
    with pytest.raises(type(bug)) as caught:
        adapter.complete(HISTORY, TOOLS, ModelCallBudget(128))
    assert caught.value is bug


def test_invalid_text_raises_with_the_usage_already_spent() -> None:
    text = '```json\n{"type":"final_answer","content":"x"}\n```'
    adapter = JsonTextModelAdapter(RecordingProvider(ProviderResponse(text, input_tokens=30, output_tokens=9)))
    with pytest.raises(InvalidModelOutputError) as caught:
        adapter.complete(HISTORY, TOOLS, ModelCallBudget(128))
    error = caught.value
    assert error.usage == TokenUsage(30, 9)
    assert error.layer is ValidationLayer.JSON_SYNTAX
    assert error.raw_text == text
    assert error.message.startswith("model output must be valid JSON")
    assert error.code == "code_fence"
    assert str(error) == error.message


@pytest.mark.parametrize(
    ("text", "layer", "phrase"),
    [
        ("[1, 2]", ValidationLayer.TOP_LEVEL_OBJECT, "model output must be an object"),
        ('{"type":"tool_result"}', ValidationLayer.ACTION_TYPE, "unsupported action type"),
        ('{"type":"final_answer"}', ValidationLayer.FIELDS, "final_answer fields do not match the contract"),
    ],
)
def test_every_layer_reaches_the_kernel_with_usage(text: str, layer: ValidationLayer, phrase: str) -> None:
    adapter = JsonTextModelAdapter(RecordingProvider(ProviderResponse(text, 1, 2)))
    with pytest.raises(InvalidModelOutputError) as caught:
        adapter.complete([], [], ModelCallBudget(8))
    assert (caught.value.layer, caught.value.usage, caught.value.raw_text) == (layer, TokenUsage(1, 2), text)
    assert phrase in caught.value.message


def test_messages_are_provider_messages() -> None:
    provider = RecordingProvider(ProviderResponse('{"type":"final_answer","content":"ok"}', 1, 1))
    JsonTextModelAdapter(provider).complete(HISTORY, TOOLS, ModelCallBudget(16))
    messages = provider.calls[0][1]["messages"]
    assert isinstance(messages, Sequence)
    assert all(isinstance(m, ProviderMessage) for m in messages)
