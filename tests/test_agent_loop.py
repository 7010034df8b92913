"""The agent loop, driven offline by ScriptedProvider: every way a run can go, and what it records."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from codeagent_lite import (
    FinalAnswer,
    JsonTextModelAdapter,
    Message,
    MessageRole,
    ModelCallBudget,
    ProviderError,
    ProviderResponse,
    ScriptedProvider,
    TokenUsage,
    ToolCall,
    ToolResult,
    ToolSpec,
    ValidationLayer,
)
from codeagent_lite.agent.loop import (
    StepKind,
    StopReason,
    Transcript,
    correction_message,
    repeated_call_id_message,
    run_agent,
    run_tool,
)
from codeagent_lite.agent.workspace_tools import Tool, ToolError, workspace_tools
from codeagent_lite.json_action_parser import parse_json_action
from codeagent_lite.model_adapter import InvalidModelOutputError
from codeagent_lite.workbook.transcript_view import render_transcript


def tool_call(call_id: str, tool_name: str = "read_file", **arguments: Any) -> str:
    return json.dumps({"type": "tool_call", "call_id": call_id, "tool_name": tool_name, "arguments": arguments})


def final(content: str) -> str:
    return json.dumps({"type": "final_answer", "content": content})


def reply(text: str, input_tokens: int, output_tokens: int) -> ProviderResponse:
    return ProviderResponse(text=text, input_tokens=input_tokens, output_tokens=output_tokens)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("buy milk\nfix bug\n", encoding="utf-8")
    return tmp_path


@pytest.fixture
def tools(workspace: Path) -> tuple[Tool, ...]:
    return workspace_tools(workspace)


def run(
    replies: Sequence[str | ProviderResponse | ProviderError], tools: Sequence[Tool], **options: Any
) -> tuple[Transcript, ScriptedProvider]:
    provider = ScriptedProvider(replies)
    transcript = run_agent(JsonTextModelAdapter(provider), tools, "How many lines does notes.txt have?", **options)
    return transcript, provider


def kinds(transcript: Transcript) -> list[StepKind]:
    return [step.kind for step in transcript.steps]


# --------------------------------------------------------------------------- the happy path


def test_tool_call_result_then_final_answer(tools: tuple[Tool, ...]) -> None:
    transcript, provider = run(
        [tool_call("call_1", path="notes.txt"), final("notes.txt has 2 lines.")], tools, system_prompt="Be brief."
    )

    assert transcript.stop_reason is StopReason.FINAL_ANSWER
    assert transcript.final_answer == "notes.txt has 2 lines."
    assert kinds(transcript) == [StepKind.ACTION, StepKind.TOOL_RESULT, StepKind.ACTION]
    result = transcript.steps[1].result
    assert result == ToolResult("call_1", "buy milk\nfix bug\n", is_error=False)
    assert transcript.history == (
        Message(MessageRole.SYSTEM, "Be brief."),
        Message(MessageRole.USER, "How many lines does notes.txt have?"),
        ToolCall("call_1", "read_file", {"path": "notes.txt"}),
        ToolResult("call_1", "buy milk\nfix bug\n"),
    )
    # The second model call saw the tool result under the same call_id, after the call itself.
    second_call = provider.calls[1].messages
    assert json.loads(second_call[-1].content) == {
        "type": "tool_result",
        "call_id": "call_1",
        "content": "buy milk\nfix bug\n",
        "is_error": False,
    }
    assert second_call[-2].role == "assistant"
    assert [spec.name for spec in provider.calls[0].tools] == ["read_file", "list_files"]


def test_no_system_message_unless_given(tools: tuple[Tool, ...]) -> None:
    transcript, provider = run([final("done")], tools)
    assert transcript.history == (Message(MessageRole.USER, "How many lines does notes.txt have?"),)
    assert [m.role for m in provider.calls[0].messages] == ["user"]


def test_budget_reaches_the_provider(tools: tuple[Tool, ...]) -> None:
    _, provider = run([final("done")], tools, budget=ModelCallBudget(77))
    assert provider.calls[0].max_output_tokens == 77


# --------------------------------------------------------------------------- corrections


def test_invalid_then_valid_sends_one_correction(tools: tuple[Tool, ...]) -> None:
    transcript, provider = run(["```json\n" + final("x") + "\n```", final("done")], tools)

    assert transcript.stop_reason is StopReason.FINAL_ANSWER
    assert kinds(transcript) == [StepKind.REJECTION, StepKind.ACTION]
    rejection = transcript.steps[0]
    assert rejection.layer is ValidationLayer.JSON_SYNTAX
    assert rejection.raw_text is not None and rejection.raw_text.startswith("```json")
    assert rejection.correction is not None
    # The model's second call ends with the correction as a user message; the bad reply is not replayed.
    last = provider.calls[1].messages[-1]
    assert (last.role, last.content) == ("user", rejection.correction)
    assert len(provider.calls[1].messages) == 2
    assert transcript.history[-1] == Message(MessageRole.USER, rejection.correction)


def test_n_plus_one_rejections_in_a_row_stop_the_run(tools: tuple[Tool, ...]) -> None:
    transcript, provider = run(["nope", "[1]", '{"type": "tool_result"}', final("never asked")], tools)

    assert transcript.stop_reason is StopReason.TOO_MANY_REJECTIONS
    assert transcript.final_answer is None
    assert provider.remaining == 1
    assert [step.layer for step in transcript.steps] == [
        ValidationLayer.JSON_SYNTAX,
        ValidationLayer.TOP_LEVEL_OBJECT,
        ValidationLayer.ACTION_TYPE,
    ]
    assert [step.correction is not None for step in transcript.steps] == [True, True, False]
    assert "3 rejected replies in a row; at most 2 corrections" in render_transcript(transcript, language="en")


def test_n_rejections_in_a_row_are_still_retried(tools: tuple[Tool, ...]) -> None:
    transcript, _ = run(["nope", "nope", final("ok")], tools)
    assert transcript.stop_reason is StopReason.FINAL_ANSWER


def test_zero_corrections_allowed_stops_at_the_first_rejection(tools: tuple[Tool, ...]) -> None:
    transcript, provider = run(["nope", final("ok")], tools, max_consecutive_rejections=0)
    assert transcript.stop_reason is StopReason.TOO_MANY_REJECTIONS
    assert len(provider.calls) == 1


def test_a_valid_action_resets_the_rejection_count(tools: tuple[Tool, ...]) -> None:
    replies = [
        "nope",
        "nope",
        tool_call("c1", path="notes.txt"),
        "nope",
        "nope",
        tool_call("c2", "list_files"),
        "nope",
        "nope",
        final("2 lines"),
    ]
    transcript, _ = run(replies, tools, max_steps=20)
    assert transcript.stop_reason is StopReason.FINAL_ANSWER
    assert transcript.rejections == 6


def test_correction_message_names_layer_expected_found_and_asks_for_one_object() -> None:
    with pytest.raises(InvalidModelOutputError) as caught:
        parse_json_action('{"type": "final_answer", "content": "ok"} trailing words')
    message = correction_message(caught.value)
    assert message.startswith("Your last reply was rejected at layer 1 (JSON syntax): model output must be valid JSON")
    assert "Expected nothing but the JSON value, found 'trailing words'." in message
    assert "exactly one JSON object" in message
    assert 'a "tool_call" or a "final_answer"' in message
    # No placeholders a small model could copy literally.
    assert "<" not in message


def test_correction_message_does_not_repeat_what_the_message_already_says() -> None:
    with pytest.raises(InvalidModelOutputError) as caught:
        parse_json_action('{"type": "tool_result"}')
    message = correction_message(caught.value)
    assert message.count("found the string 'tool_result'") == 1
    assert "Expected" not in message


def test_correction_message_never_echoes_a_huge_reply() -> None:
    huge = "Let me think. " + "blah " * 20_000
    with pytest.raises(InvalidModelOutputError) as caught:
        parse_json_action(huge)
    message = correction_message(caught.value)
    assert len(message) < 800
    assert "blah blah blah blah blah blah" not in message


class _TextlessAdapter:
    """An adapter that refuses without recording the raw text, as a third-party adapter might."""

    def complete(self, history: Sequence[Any], tools: Sequence[ToolSpec], budget: ModelCallBudget) -> Any:
        raise InvalidModelOutputError("something odd", layer=ValidationLayer.FIELDS, usage=TokenUsage(3, 1))


def test_rejection_without_raw_text_is_still_reported(tools: tuple[Tool, ...]) -> None:
    transcript = run_agent(_TextlessAdapter(), tools, "Go", max_consecutive_rejections=0)
    assert transcript.stop_reason is StopReason.TOO_MANY_REJECTIONS
    assert transcript.usage == TokenUsage(3, 1)
    text = render_transcript(transcript, language="en")
    assert "[1] model call 1 · rejected at layer 4 (fields and types) · 3 in + 1 out = 4 tokens" in text
    assert "    ✘ something odd" in text


def test_correction_message_without_expected_and_found() -> None:
    message = correction_message(InvalidModelOutputError("something odd", layer=ValidationLayer.FIELDS))
    assert message.startswith("Your last reply was rejected at layer 4 (fields and types): something odd.")
    assert "Expected" not in message


# --------------------------------------------------------------------------- usage


def test_usage_sums_every_call_including_rejected_ones(tools: tuple[Tool, ...]) -> None:
    replies = [
        reply("not json", 100, 7),
        reply(tool_call("c1", path="notes.txt"), 120, 20),
        reply('{"type": "final_answer"}', 150, 9),
        reply(final("2"), 170, 5),
    ]
    transcript, _ = run(replies, tools)
    assert transcript.stop_reason is StopReason.FINAL_ANSWER
    assert transcript.usage == TokenUsage(540, 41)
    per_call = [step.usage for step in transcript.steps if step.model_call is not None]
    assert per_call == [TokenUsage(100, 7), TokenUsage(120, 20), TokenUsage(150, 9), TokenUsage(170, 5)]
    assert transcript.model_calls == 4


def test_provider_failure_has_no_usage_but_earlier_calls_still_count(tools: tuple[Tool, ...]) -> None:
    transcript, _ = run([reply("oops", 10, 2), ProviderError("HTTP 503 from the server")], tools)
    assert transcript.usage == TokenUsage(10, 2)
    assert transcript.steps[-1].usage is None


# --------------------------------------------------------------------------- stops


def test_provider_error_stops_with_its_message(tools: tuple[Tool, ...]) -> None:
    transcript, provider = run(
        [tool_call("c1", path="notes.txt"), ProviderError("timed out after 60 s"), final("never")], tools
    )
    assert transcript.stop_reason is StopReason.PROVIDER_ERROR
    assert "timed out after 60 s" in transcript.stop_detail
    assert transcript.steps[-1].kind is StepKind.PROVIDER_ERROR
    assert transcript.steps[-1].message is not None and "timed out after 60 s" in transcript.steps[-1].message
    assert transcript.final_answer is None
    assert provider.remaining == 1


def test_step_limit_counts_model_calls(tools: tuple[Tool, ...]) -> None:
    replies = [tool_call(f"c{n}", "list_files") for n in range(10)]
    transcript, provider = run(replies, tools, max_steps=3)
    assert transcript.stop_reason is StopReason.STEP_LIMIT
    assert transcript.stop_reason.value == "step limit reached"
    assert transcript.stop_detail == ""  # the detail is counts, made into words where the run is shown
    assert "stopped: step limit reached (3 model calls without a final answer)" in render_transcript(
        transcript, language="en"
    )
    assert len(provider.calls) == 3
    assert transcript.model_calls == 3


def test_rejections_use_up_steps_too(tools: tuple[Tool, ...]) -> None:
    transcript, provider = run(["nope", tool_call("c1", "list_files"), "nope", final("late")], tools, max_steps=3)
    assert transcript.stop_reason is StopReason.STEP_LIMIT
    assert len(provider.calls) == 3


def test_exhausted_script_is_a_provider_error(tools: tuple[Tool, ...]) -> None:
    transcript, _ = run([tool_call("c1", "list_files")], tools)
    assert transcript.stop_reason is StopReason.PROVIDER_ERROR
    assert "no reply left" in transcript.stop_detail


# --------------------------------------------------------------------------- repeated call_id


def test_repeated_call_id_is_rejected_not_run(tools: tuple[Tool, ...]) -> None:
    replies = [
        tool_call("c1", path="notes.txt"),
        tool_call("c1", "list_files"),
        tool_call("c2", "list_files"),
        final("ok"),
    ]
    transcript, provider = run(replies, tools)

    assert transcript.stop_reason is StopReason.FINAL_ANSWER
    assert kinds(transcript) == [
        StepKind.ACTION,
        StepKind.TOOL_RESULT,
        StepKind.REJECTION,
        StepKind.ACTION,
        StepKind.TOOL_RESULT,
        StepKind.ACTION,
    ]
    rejected = transcript.steps[2]
    assert rejected.layer is None
    assert rejected.action == ToolCall("c1", "list_files", {})
    assert rejected.message == "call_id 'c1' was already used in this run"
    assert rejected.correction == repeated_call_id_message("c1", "call_2")
    assert "call_id 'c1' was already used" in rejected.correction
    assert "for example 'call_2'" in rejected.correction
    # Each call_id appears once as a call and once as a result: the history stays unambiguous.
    calls = [item.call_id for item in transcript.history if isinstance(item, ToolCall)]
    results = [item.call_id for item in transcript.history if isinstance(item, ToolResult)]
    assert calls == results == ["c1", "c2"]
    assert provider.calls[2].messages[-1].content == rejected.correction


def test_suggested_call_id_is_really_unused(tools: tuple[Tool, ...]) -> None:
    transcript, _ = run([tool_call("call_2", "list_files"), tool_call("call_2", "list_files"), final("ok")], tools)
    correction = transcript.steps[2].correction
    assert correction is not None and "for example 'call_3'" in correction


def test_repeated_call_id_counts_toward_rejections_in_a_row(tools: tuple[Tool, ...]) -> None:
    replies = [tool_call("c1", "list_files"), "nope", tool_call("c1", "list_files"), "nope", final("never")]
    transcript, _ = run(replies, tools)
    assert transcript.stop_reason is StopReason.TOO_MANY_REJECTIONS


def test_reusing_the_id_of_a_rejected_call_is_allowed(tools: tuple[Tool, ...]) -> None:
    # Only ids that were accepted and run are "used"; a refused reply never entered the history.
    replies = ['{"type": "tool_call", "call_id": "c1"}', tool_call("c1", "list_files"), final("ok")]
    transcript, _ = run(replies, tools)
    assert transcript.stop_reason is StopReason.FINAL_ANSWER


# --------------------------------------------------------------------------- tools going wrong


def test_unknown_tool_gets_an_error_result_naming_the_tools(tools: tuple[Tool, ...]) -> None:
    transcript, _ = run([tool_call("c1", "delete_everything"), final("sorry")], tools)
    assert transcript.stop_reason is StopReason.FINAL_ANSWER
    result = transcript.steps[1].result
    assert result == ToolResult(
        "c1", "unknown tool 'delete_everything'; available tools: list_files, read_file", is_error=True
    )
    assert transcript.rejections == 0


def test_tool_refusal_becomes_an_error_result(tools: tuple[Tool, ...]) -> None:
    transcript, _ = run([tool_call("c1", path="../../etc/passwd"), final("refused")], tools)
    result = transcript.steps[1].result
    assert result is not None and result.is_error and result.call_id == "c1"
    assert "contains '..'" in result.content


def _tool(name: str, function: Any) -> Tool:
    return Tool(ToolSpec(name, f"test tool {name}"), function)


def test_a_crashing_tool_becomes_an_error_result() -> None:
    def explode(arguments: Mapping[str, Any]) -> str:
        raise KeyError("missing")

    transcript, _ = run([tool_call("c1", "explode"), final("ok")], [_tool("explode", explode)])
    assert transcript.steps[1].result == ToolResult("c1", "tool 'explode' failed: KeyError: 'missing'", is_error=True)
    assert transcript.stop_reason is StopReason.FINAL_ANSWER


def test_a_tool_returning_non_text_becomes_an_error_result() -> None:
    result = run_tool([_tool("count", lambda arguments: 42)], ToolCall("c9", "count", {}))
    assert result == ToolResult("c9", "tool 'count' returned int, not text", is_error=True)


def test_tool_error_message_goes_to_the_model_verbatim() -> None:
    def refuse(arguments: Mapping[str, Any]) -> str:
        raise ToolError("size must be positive")

    assert run_tool([_tool("t", refuse)], ToolCall("c1", "t", {})) == ToolResult(
        "c1", "size must be positive", is_error=True
    )


def test_empty_tool_output_is_a_valid_result() -> None:
    assert run_tool([_tool("t", lambda arguments: "")], ToolCall("c1", "t", {})) == ToolResult("c1", "")


# --------------------------------------------------------------------------- arguments and rendering


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"max_steps": 0}, ValueError, "max_steps must be positive, found 0"),
        ({"max_steps": True}, TypeError, "max_steps must be an integer, found bool"),
        ({"max_steps": "3"}, TypeError, "max_steps must be an integer, found str"),
        ({"max_consecutive_rejections": -1}, ValueError, "max_consecutive_rejections must not be negative, found -1"),
        ({"max_consecutive_rejections": 1.5}, TypeError, "max_consecutive_rejections must be an integer, found float"),
        ({"max_tool_result_chars": 0}, ValueError, "max_tool_result_chars must be positive, found 0"),
    ],
)
def test_bad_limits_are_refused(
    tools: tuple[Tool, ...], options: dict[str, Any], error: type[Exception], message: str
) -> None:
    """A wrong type is a TypeError, a wrong value a ValueError, both saying what came instead."""
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        run([final("x")], tools, **options)


def test_duplicate_tool_names_are_refused(tools: tuple[Tool, ...]) -> None:
    with pytest.raises(ValueError, match="repeated: read_file"):
        run([final("x")], [*tools, tools[0]])


def test_blank_task_is_refused(tools: tuple[Tool, ...]) -> None:
    with pytest.raises(ValueError, match="must not be blank"):
        run_agent(JsonTextModelAdapter(ScriptedProvider([final("x")])), tools, "  ")


def test_render_shows_each_step_with_verdicts_and_usage(tools: tuple[Tool, ...]) -> None:
    replies = [
        reply('{"type": "final_answer", "content": 3}', 10, 4),
        reply(tool_call("c1", path="notes.txt"), 20, 6),
        reply(final("2 lines"), 30, 2),
    ]
    text = render_transcript(run(replies, tools)[0], language="en")
    assert text.splitlines() == [
        "task: How many lines does notes.txt have?",
        "[1] model call 1 · rejected at layer 4 (fields and types) · 10 in + 4 out = 14 tokens",
        """    raw reply: '{"type": "final_answer", "content": 3}'""",
        "    ✔ layer 1  JSON syntax       passed",
        "    ✔ layer 2  top-level object  passed",
        "    ✔ layer 3  action type       passed",
        "    ✘ layer 4  fields and types  failed: content must be a string, found the number 3",
        "    => rejected at layer 4: expected a string, found the number 3",
        "    correction sent: Your last reply was rejected at layer 4 (fields and types): content must be a string, "
        "found the number 3. Reply with exactly one JSON object and nothing "
        'else: a "tool_call" or a "final_answer" with exactly the fields shown before.',
        "[2] model call 2 · action · 20 in + 6 out = 26 tokens",
        "    ✔ all four layers passed",
        "    => ToolCall(call_id='c1', tool_name='read_file', arguments={'path': 'notes.txt'})",
        "[3] tool result · call_id='c1' · ok",
        "    buy milk",
        "    fix bug",
        "[4] model call 3 · action · 30 in + 2 out = 32 tokens",
        "    ✔ all four layers passed",
        "    => FinalAnswer(content='2 lines')",
        "stopped: final answer (after 3 model calls)",
        "final answer: 2 lines",
        "usage: 60 in + 12 out = 72 tokens over 3 model calls (1 rejected)",
    ]


def test_the_transcript_speaks_chinese_and_shows_what_the_model_saw_as_it_was(tools: tuple[Tool, ...]) -> None:
    replies = [reply('{"type": "final_answer", "content": 3}', 10, 4), reply(final("2 lines"), 30, 2)]
    text = render_transcript(run(replies, tools)[0], language="zh")
    lines = text.splitlines()
    assert lines[0] == "任务：How many lines does notes.txt have?"
    assert lines[1] == "[1] 第 1 次调用模型 · 在第 4 层（字段集合与类型）被拒绝 · 输入 10 + 输出 4 = 14 个 Token"
    assert any(
        line.startswith("    ✘ 第 4 层") and line.endswith("：content must be a string, found the number 3")
        for line in lines
    )
    # the correction is what the model read: the series' English phrase, never translated
    assert any(line.startswith("    已发送纠错消息：Your last reply was rejected at layer 4") for line in lines)
    assert lines[-3:] == [
        "结束：最终回答（共调用模型 2 次）",
        "最终回答：2 lines",
        "用量：输入 40 + 输出 6 = 46 个 Token，共调用模型 2 次（1 次被拒绝）",
    ]
    assert not re.search(
        r"\b(task|model call|rejected|stopped|usage|final answer|tokens)\b",
        text.replace("Your last reply was rejected", "").replace("How many lines", ""),
    ), text


def test_render_of_a_stopped_run(tools: tuple[Tool, ...]) -> None:
    text = render_transcript(run(["x", "x", "x"], tools)[0], show_ladders=False, language="en")
    assert "no correction sent: the run stops here" in text
    assert "stopped: too many rejected replies in a row (3 rejected replies in a row;" in text
    assert "final answer:" not in text
    assert "layer 2  top-level object" not in text


def test_transcript_is_frozen(tools: tuple[Tool, ...]) -> None:
    transcript = run([final("x")], tools)[0]
    with pytest.raises(AttributeError):
        transcript.final_answer = "changed"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        transcript.steps[0].action = FinalAnswer("changed")  # type: ignore[misc]
