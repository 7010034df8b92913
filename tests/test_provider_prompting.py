"""The prompts a JSON-text model sees: stable bytes, the parser's own schema, the tools."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from codeagent_lite import ProviderMessage, ToolSpec, action_json_schema, parse_json_action
from codeagent_lite.json_text_messages import build_provider_messages, encode_json
from codeagent_lite.kernel_types import HistoryItem, Message, MessageRole, ToolCall, ToolResult
from codeagent_lite.providers import prompting
from codeagent_lite.providers.prompting import (
    DEFAULT_EXAMPLES,
    REPLY_LABEL,
    SCHEMA_EXAMPLES,
    WorkedExample,
    describe_action_shapes,
    render_completion_prompt,
    render_system_prompt,
)

READ_FILE = ToolSpec(
    name="read_file",
    description="Read a UTF-8 text file inside the workspace.",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
LIST_FILES = ToolSpec(
    name="list_files",
    description="List the files in a workspace folder.",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)
TOOLS = (READ_FILE, LIST_FILES)


def test_system_prompt_is_deterministic() -> None:
    assert render_system_prompt(TOOLS) == render_system_prompt(TOOLS)


def test_system_prompt_does_not_depend_on_schema_key_order() -> None:
    # The same tool written with its schema keys in another order must give the same bytes.
    reordered = ToolSpec(
        name="read_file",
        description=READ_FILE.description,
        input_schema={"required": ["path"], "properties": {"path": {"type": "string"}}, "type": "object"},
    )
    assert render_system_prompt((reordered, LIST_FILES)) == render_system_prompt(TOOLS)


def test_system_prompt_contains_the_parser_schema() -> None:
    prompt = render_system_prompt(TOOLS)
    assert encode_json(action_json_schema()) in prompt
    for shape in describe_action_shapes():
        assert shape in prompt


def test_system_prompt_states_the_protocol() -> None:
    prompt = render_system_prompt(TOOLS)
    assert "exactly one JSON object" in prompt
    assert "no markdown code fences" in prompt
    assert '"tool_result"' in prompt


def test_system_prompt_lists_every_tool_with_its_schema() -> None:
    prompt = render_system_prompt(TOOLS)
    for tool in TOOLS:
        assert f"- {tool.name}: {tool.description}" in prompt
        assert encode_json(tool.input_schema) in prompt


def test_system_prompt_without_tools_says_so() -> None:
    prompt = render_system_prompt(())
    assert "No tools are available" in prompt
    assert "Tools:" not in prompt


def test_action_shapes_name_every_contract_field() -> None:
    tool_call, final_answer = describe_action_shapes()
    assert tool_call == (
        '{"type": "tool_call", "call_id": <string (non-blank)>, '
        '"tool_name": <string (non-blank)>, "arguments": <object>}'
    )
    assert final_answer == '{"type": "final_answer", "content": <string (non-blank)>}'


def test_action_shapes_follow_the_schema_when_it_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    # The prompt is rendered from action_json_schema(), so a new contract field must show up in it.
    changed: dict[str, Any] = copy.deepcopy(action_json_schema())
    final = changed["$defs"]["FinalAnswerPayload"]
    final["properties"]["confidence"] = {"type": "number"}
    final["required"].append("confidence")
    monkeypatch.setattr(prompting, "action_json_schema", lambda: changed)
    assert describe_action_shapes()[1] == (
        '{"type": "final_answer", "content": <string (non-blank)>, "confidence": <number>}'
    )
    assert encode_json(changed) in render_system_prompt(TOOLS)


@pytest.mark.parametrize("examples", [DEFAULT_EXAMPLES, SCHEMA_EXAMPLES], ids=["default", "schema"])
def test_every_worked_example_reply_is_a_valid_action(examples: tuple[WorkedExample, ...]) -> None:
    # A base model copies its examples: one bad example would teach it a bad shape.
    for example in examples:
        replies = [text for label, text in example.turns if label == "Reply"]
        assert replies, example
        for reply in replies:
            parse_json_action(reply)


def test_completion_prompt_ends_with_reply_label_and_no_trailing_space() -> None:
    prompt = render_completion_prompt([ProviderMessage("user", "Read a.txt")], TOOLS)
    assert prompt.endswith("\nReply:")
    assert REPLY_LABEL == "Reply:"
    assert not prompt.endswith(" ")


def test_completion_prompt_is_deterministic_and_contains_tools_and_examples() -> None:
    messages = [ProviderMessage("user", "Read a.txt")]
    prompt = render_completion_prompt(messages, TOOLS)
    assert prompt == render_completion_prompt(messages, TOOLS)
    for tool in TOOLS:
        assert f"- {tool.name}: {tool.description}" in prompt
    for shape in describe_action_shapes():
        assert shape in prompt
    for example in DEFAULT_EXAMPLES:
        assert example.render() in prompt


def test_completion_prompt_labels_the_conversation() -> None:
    history: list[HistoryItem] = [
        Message(MessageRole.USER, "Read a.txt"),
        ToolCall(call_id="c1", tool_name="read_file", arguments={"path": "a.txt"}),
        ToolResult(call_id="c1", content="hello\nworld"),
    ]
    prompt = render_completion_prompt(build_provider_messages(history), TOOLS, examples=())
    conversation = prompt.split("\n\n")[-1].splitlines()
    assert conversation == [
        "Task: Read a.txt",
        'Reply: {"arguments":{"path":"a.txt"},"call_id":"c1","tool_name":"read_file","type":"tool_call"}',
        'Result: {"call_id":"c1","content":"hello\\nworld","is_error":false,"type":"tool_result"}',
        "Reply:",
    ]


def test_completion_prompt_keeps_each_turn_on_one_line() -> None:
    prompt = render_completion_prompt([ProviderMessage("user", "line one\nline two")], TOOLS, examples=())
    assert prompt.split("\n\n")[-1] == "Task: line one\\nline two\nReply:"


def test_completion_prompt_uses_custom_examples() -> None:
    example = WorkedExample((("Task", "Ping"), ("Reply", '{"type":"final_answer","content":"pong"}')))
    prompt = render_completion_prompt([ProviderMessage("user", "Ping again")], TOOLS, examples=[example])
    assert 'Task: Ping\nReply: {"type":"final_answer","content":"pong"}' in prompt
    assert DEFAULT_EXAMPLES[0].render() not in prompt


def test_completion_prompt_without_tools_says_so() -> None:
    prompt = render_completion_prompt([ProviderMessage("user", "Hi")], (), examples=())
    assert "No tools are available." in prompt


# --------------------------------------------------------------------------- the worked examples


def _tool_call_ids(example: WorkedExample) -> list[str]:
    return [json.loads(text)["call_id"] for label, text in example.turns if label == "Reply" and '"tool_call"' in text]


BOTH_SETS = pytest.mark.parametrize("examples", [DEFAULT_EXAMPLES, SCHEMA_EXAMPLES], ids=["default", "schema"])


@BOTH_SETS
def test_worked_examples_number_their_calls_call_1_call_2_in_order(examples: tuple[WorkedExample, ...]) -> None:
    # A base model copies ids: examples that always say "call_1" teach it to repeat "call_1",
    # which the agent loop refuses. Within each example the ids count up from call_1.
    for example in examples:
        ids = _tool_call_ids(example)
        assert ids == [f"call_{number}" for number in range(1, len(ids) + 1)], example


@BOTH_SETS
def test_some_worked_example_makes_a_second_call_after_a_result(examples: tuple[WorkedExample, ...]) -> None:
    turns = [turn for example in examples for turn in zip(example.turns, example.turns[1:], strict=False)]
    second_calls = [
        (before, after)
        for before, after in turns
        if before[0] == "Result" and after[0] == "Reply" and json.loads(after[1]).get("call_id") == "call_2"
    ]
    assert second_calls, "no example shows call_2 following the result of call_1"
    assert json.loads(second_calls[0][0][1])["call_id"] == "call_1"


@BOTH_SETS
def test_every_worked_example_result_answers_the_call_just_before_it(examples: tuple[WorkedExample, ...]) -> None:
    for example in examples:
        for (label, text), (next_label, next_text) in zip(example.turns, example.turns[1:], strict=False):
            if next_label != "Result":
                continue
            assert label == "Reply", example
            result = json.loads(next_text)
            assert result["type"] == "tool_result" and result["is_error"] is False
            assert result["call_id"] == json.loads(text)["call_id"]
        assert example.turns[0][0] == "Task" and example.turns[-1][0] == "Reply", example


def test_worked_example_replies_look_like_the_replies_in_the_conversation() -> None:
    # Measured on Gemma 3 270M: when the examples' key order differed from the order the
    # conversation shows the model's own earlier replies in, the model copied the Result line
    # instead of answering. So every example reply is byte-for-byte what the conversation would show.
    for example in DEFAULT_EXAMPLES:
        for label, text in example.turns:
            if label != "Reply":
                continue
            action = parse_json_action(text)
            if isinstance(action, ToolCall):
                assert build_provider_messages([action])[0].content == text
            else:
                assert encode_json(json.loads(text)) == text


def test_default_examples_render_the_same_bytes_every_time() -> None:
    first = render_completion_prompt([ProviderMessage("user", "Read a.txt")], TOOLS)
    assert all(example.render() in first for example in DEFAULT_EXAMPLES)
    assert first == render_completion_prompt([ProviderMessage("user", "Read a.txt")], TOOLS)
    assert '"call_id":"call_2"' in first


def test_schema_examples_are_the_same_exchanges_written_type_first() -> None:
    # The schema grammar makes the model start every reply with "type"; its examples must show that order.
    assert len(SCHEMA_EXAMPLES) == len(DEFAULT_EXAMPLES)
    for schema_example, default_example in zip(SCHEMA_EXAMPLES, DEFAULT_EXAMPLES, strict=True):
        assert [label for label, _ in schema_example.turns] == [label for label, _ in default_example.turns]
        for (label, schema_text), (_, default_text) in zip(schema_example.turns, default_example.turns, strict=True):
            if label == "Reply":
                assert json.loads(schema_text) == json.loads(default_text)
                assert schema_text.startswith('{"type":'), schema_text
            else:
                assert schema_text == default_text


def test_the_local_provider_picks_the_examples_of_its_mode() -> None:
    from codeagent_lite.providers import GemmaProvider

    url = "http://127.0.0.1:9/v1"  # nothing is sent
    assert GemmaProvider(url, "free_text").examples == DEFAULT_EXAMPLES
    assert GemmaProvider(url, "schema").examples == SCHEMA_EXAMPLES
    mine = (WorkedExample((("Task", "Ping"), ("Reply", '{"type":"final_answer","content":"pong"}'))),)
    assert GemmaProvider(url, "schema", examples=mine).examples == mine
    messages = [ProviderMessage("user", "Ping?")]
    assert GemmaProvider(url, "schema", examples=mine).render_prompt(messages, ()) == render_completion_prompt(
        messages, (), mine
    )


def test_a_deeply_nested_message_is_labelled_not_a_crash() -> None:
    """A task may be any text; one that nests too deeply for json.loads is still just a task."""
    prompt = render_completion_prompt([ProviderMessage("user", "[" * 100_000)], ())
    assert prompt.endswith("Reply:") and "Task: [[[" in prompt
