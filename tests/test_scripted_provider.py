"""ScriptedProvider: replays a script in order, records calls, rehearses failures."""

from __future__ import annotations

import pytest

from codeagent_lite.json_text_adapter import JsonTextModelAdapter, ProviderError, ProviderResponse
from codeagent_lite.json_text_messages import ProviderMessage
from codeagent_lite.kernel_types import FinalAnswer, Message, MessageRole, ToolCall, ToolSpec
from codeagent_lite.model_adapter import InvalidModelOutputError, ModelCallBudget, ModelProviderError, TokenUsage
from codeagent_lite.scripted_provider import ProviderCall, ScriptedProvider, ScriptExhaustedError

MESSAGES = [ProviderMessage("user", "12345678")]  # 8 characters: 2 estimated tokens
TOOLS = [ToolSpec("read_file", "Read a file.")]


def test_replays_text_and_estimates_tokens() -> None:
    provider = ScriptedProvider(['{"type":"final_answer","content":"ok"}', "x"])
    first = provider.complete(messages=MESSAGES, tools=TOOLS, max_output_tokens=64)
    assert first == ProviderResponse('{"type":"final_answer","content":"ok"}', 2, 10, "stop")
    second = provider.complete(messages=[], tools=[], max_output_tokens=8)
    assert (second.text, second.input_tokens, second.output_tokens) == ("x", 0, 1)
    assert provider.remaining == 0


def test_records_every_call() -> None:
    provider = ScriptedProvider(["a", "b"])
    provider.complete(messages=MESSAGES, tools=TOOLS, max_output_tokens=64)
    assert provider.calls == [ProviderCall(tuple(MESSAGES), tuple(TOOLS), 64)]


def test_provider_response_is_returned_unchanged() -> None:
    response = ProviderResponse('{"type":"final_answer","content":"ok', 100, 128, finish_reason="length")
    provider = ScriptedProvider([response])
    assert provider.complete(messages=[], tools=[], max_output_tokens=128) is response


def test_provider_error_is_raised_and_the_call_still_recorded() -> None:
    error = ProviderError("timeout")
    provider = ScriptedProvider([error, "ok"])
    with pytest.raises(ProviderError) as caught:
        provider.complete(messages=[], tools=[], max_output_tokens=1)
    assert caught.value is error
    assert len(provider.calls) == 1
    assert provider.complete(messages=[], tools=[], max_output_tokens=1).text == "ok"


def test_running_out_is_a_provider_error() -> None:
    provider = ScriptedProvider([])
    with pytest.raises(ScriptExhaustedError, match="no reply left after 0 calls"):
        provider.complete(messages=[], tools=[], max_output_tokens=1)
    assert issubclass(ScriptExhaustedError, ProviderError)


def test_refuses_a_bad_script_up_front() -> None:
    with pytest.raises(TypeError, match="int"):
        ScriptedProvider(["ok", 42])  # type: ignore[list-item]


def test_drives_the_adapter_through_a_small_session() -> None:
    provider = ScriptedProvider(
        [
            '{"type":"tool_call","call_id":"call_1","tool_name":"read_file","arguments":{"path":"a.txt"}}',
            "Sure, the answer is 42.",
            ProviderError("HTTP 500"),
            '{"type":"final_answer","content":"42"}',
        ]
    )
    adapter = JsonTextModelAdapter(provider)
    history = [Message(MessageRole.USER, "What is in a.txt?")]
    budget = ModelCallBudget(256)

    assert adapter.complete(history, TOOLS, budget).action == ToolCall("call_1", "read_file", {"path": "a.txt"})
    with pytest.raises(InvalidModelOutputError) as invalid:
        adapter.complete(history, TOOLS, budget)
    assert invalid.value.usage == TokenUsage(5, 6)
    with pytest.raises(ModelProviderError):
        adapter.complete(history, TOOLS, budget)
    assert adapter.complete(history, TOOLS, budget).action == FinalAnswer("42")
    assert [call.max_output_tokens for call in provider.calls] == [256] * 4
    assert provider.calls[0].messages == (ProviderMessage("user", "What is in a.txt?"),)
