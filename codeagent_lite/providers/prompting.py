"""What a JSON-text model is told: the protocol, the two action shapes and the tools.

A JSON-text model has no native tool channel, so everything it must know about the
protocol travels as text. The action shapes are rendered from
``action_json_schema()`` (written from ``CONTRACTS``, the table the parser's layer 4 checks),
so the prompt cannot promise a shape the parser would refuse.

Two renderings exist because two kinds of model exist:

* ``render_system_prompt`` is a system message for instruction-tuned chat models
  (OpenAI, DeepSeek, most Ollama models).
* ``render_completion_prompt`` is a plain-text prompt of worked examples for a *base*
  model such as Gemma 3 270M, which ignores instructions but continues patterns
  (measured on this model: 0 of 8 protocol replies from a system prompt alone, about
  7 of 8 from worked examples).

Both are pure functions of their inputs: the same tools and history give the same
bytes, so prompts can be compared, cached and tested.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..action_schema import action_json_schema
from ..json_text_messages import ProviderMessage, encode_json
from ..kernel_types import ToolSpec

__all__ = [
    "DEFAULT_EXAMPLES",
    "REPLY_LABEL",
    "SCHEMA_EXAMPLES",
    "WorkedExample",
    "describe_action_shapes",
    "render_completion_prompt",
    "render_system_prompt",
    "render_tool_lines",
]

REPLY_LABEL = "Reply:"
"""The label a completion prompt ends with. Never followed by a space: measured on
Gemma 3 270M, a trailing space after it drops valid replies from about 7 of 8 to 0 of 8,
because the model's own tokens for JSON start with a space."""


def _shape_fields(definition: dict[str, Any]) -> str:
    # One line per action: the type constant first, then each required field and its JSON type.
    properties: dict[str, Any] = definition["properties"]
    parts = []
    for name in definition["required"]:
        prop = properties[name]
        if "const" in prop:
            parts.append(f'"{name}": {json.dumps(prop["const"])}')
            continue
        kind = prop.get("type", "any JSON value")
        note = " (non-blank)" if prop.get("minLength", 0) >= 1 else ""
        parts.append(f'"{name}": <{kind}{note}>')
    return "{" + ", ".join(parts) + "}"


def describe_action_shapes() -> list[str]:
    """One line per action shape, read from the parser's JSON Schema (never hand-written)."""
    schema = action_json_schema()
    definitions: dict[str, Any] = schema["$defs"]
    lines = []
    for option in schema["oneOf"]:
        definition = definitions[option["$ref"].rsplit("/", 1)[-1]]
        lines.append(_shape_fields(definition))
    return lines


def render_tool_lines(tools: Sequence[ToolSpec]) -> list[str]:
    """One line per tool: name, description and input schema (keys sorted, so the bytes are stable)."""
    return [f"- {tool.name}: {tool.description} Arguments schema: {encode_json(tool.input_schema)}" for tool in tools]


def render_system_prompt(tools: Sequence[ToolSpec]) -> str:
    """The system message for a chat model that must answer in JSON text."""
    lines = [
        "You are a coding agent. You act only by replying with JSON text.",
        "",
        "Every reply must be exactly one JSON object and nothing else: no prose before or after it, "
        "no markdown code fences, no second object.",
        "",
        "A reply has one of these two shapes:",
        *(f"- {shape}" for shape in describe_action_shapes()),
        "",
        'Use "tool_call" to run one tool: "call_id" is a new id you choose, different from every earlier one, '
        '"tool_name" is one of the tools below and "arguments" follows that tool\'s input_schema. '
        'Use "final_answer" when the task is done; "content" is your answer for the user.',
        "",
        "The result of a tool call comes back in a user message that is a JSON object with "
        '"type": "tool_result", the same "call_id", the tool\'s "content" and "is_error".',
        "",
        "JSON Schema of a reply:",
        encode_json(action_json_schema()),
        "",
    ]
    if tools:
        lines.append("Tools:")
        lines.extend(render_tool_lines(tools))
    else:
        lines.append('No tools are available: reply with a "final_answer".')
    return "\n".join(lines)


# --------------------------------------------------------------------------- base-model prompt


@dataclass(frozen=True, slots=True)
class WorkedExample:
    """One solved exchange shown to a base model: alternating lines, ending with a reply.

    ``turns`` holds (label, text) pairs such as ("Task", "...") and ("Reply", "{...}").
    """

    turns: tuple[tuple[str, str], ...]

    def render(self) -> str:
        return "\n".join(f"{label}: {text}" for label, text in self.turns)


def _encode_as_in_conversation(action: dict[str, Any]) -> str:
    # How build_provider_messages writes the model's own earlier replies into the conversation
    # (encode_json: sorted keys, compact), so a free-text model that has made one call sees a
    # conversation that looks exactly like its examples.
    return encode_json(action)


def _type_first_order(action: dict[str, Any]) -> str:
    # The order the schema grammar forces (the contract's field order, "type" first).
    return json.dumps(action, ensure_ascii=False, separators=(",", ":"))


def _worked_examples(write: Callable[[dict[str, Any]], str]) -> tuple[WorkedExample, ...]:
    def call(call_id: str, tool_name: str, path: str) -> tuple[str, str]:
        return (
            "Reply",
            write({"type": "tool_call", "call_id": call_id, "tool_name": tool_name, "arguments": {"path": path}}),
        )

    def result(call_id: str, content: str) -> tuple[str, str]:
        # Results always come from the conversation (build_provider_messages), so always sorted keys.
        return (
            "Result",
            encode_json({"type": "tool_result", "call_id": call_id, "content": content, "is_error": False}),
        )

    def final(content: str) -> tuple[str, str]:
        return ("Reply", write({"type": "final_answer", "content": content}))

    return (
        WorkedExample((("Task", "What is 2 + 3?"), final("2 + 3 = 5."))),
        WorkedExample((("Task", "Show me the file notes.txt."), call("call_1", "read_file", "notes.txt"))),
        WorkedExample(
            (
                ("Task", "Which files are in the src folder?"),
                call("call_1", "list_files", "src"),
                result("call_1", "app.py\nutil.py"),
                final("The src folder holds app.py and util.py."),
            )
        ),
        WorkedExample((("Task", "Say hello in French."), final("Bonjour !"))),
        WorkedExample(
            (
                ("Task", "How many lines does todo.txt have?"),
                call("call_1", "read_file", "todo.txt"),
                result("call_1", "buy milk\nfix bug\n"),
                final("todo.txt has 2 lines."),
            )
        ),
        WorkedExample(
            (
                ("Task", "Read setup.cfg, then read the file it names."),
                call("call_1", "read_file", "setup.cfg"),
                result("call_1", "[options]\nconfig = app.toml\n"),
                call("call_2", "read_file", "app.toml"),
                result("call_2", 'name = "demo"\n'),
                final('setup.cfg names app.toml, which sets name = "demo".'),
            )
        ),
    )


DEFAULT_EXAMPLES: tuple[WorkedExample, ...] = _worked_examples(_encode_as_in_conversation)
"""Six worked examples for free text: two direct answers, one lone tool call, two exchanges
where a result comes back and the reply answers, and one with two calls, ``call_1`` then
``call_2`` (a base model copies ids: when every example said ``call_1``, it repeated
``call_1`` and the agent loop refused the reply).

The replies are written in the conversation's own key order. Measured with Gemma 3 270M,
``run_agent`` on 6 tasks in a 3-file workspace: with type-first replies the free-text model
copied the ``Result:`` line above it (a ``tool_result``, refused at layer 3) and finished 1
of 6 tasks; with these it finishes 5 of 6 (the earlier all-``call_1`` examples: 2 of 6).
They use the demo tools ``read_file`` and ``list_files``; pass your own examples when
your tools differ."""

SCHEMA_EXAMPLES: tuple[WorkedExample, ...] = _worked_examples(_type_first_order)
"""The same exchanges with replies written ``type`` first, the order the schema grammar forces.

Measured as above in schema mode: 4 of 6 tasks finished with these, 1 of 6 with the
conversation-order examples (the model, made to start with ``"type"``, had no example in
that order and put a stray ``"type"`` into ``arguments`` or repeated ``call_1``), 2 of 6
with the earlier all-``call_1`` examples."""


def _is_tool_result(content: str) -> bool:
    # build_provider_messages sends tool results as user messages holding this JSON object.
    try:
        value = json.loads(content)
    except (ValueError, RecursionError):  # a task or correction can be any text, "[[[[..." included
        return False
    return isinstance(value, dict) and value.get("type") == "tool_result"


def _label(message: ProviderMessage) -> str:
    if message.role == "assistant":
        return "Reply"
    if message.role == "system":
        return "Note"
    return "Result" if _is_tool_result(message.content) else "Task"


def render_completion_prompt(
    messages: Sequence[ProviderMessage],
    tools: Sequence[ToolSpec],
    examples: Sequence[WorkedExample] = DEFAULT_EXAMPLES,
) -> str:
    """A plain completion prompt for a base model: rules, tools, worked examples, then the conversation.

    The prompt ends with ``"Reply:"`` and no space, so the model's continuation is its
    reply; stop generating at the first newline.
    """
    header = [
        "Each reply is exactly one JSON object on one line, in one of these two shapes:",
        *describe_action_shapes(),
    ]
    if tools:
        header.append("Tools:")
        header.extend(render_tool_lines(tools))
    else:
        header.append("No tools are available.")
    # A newline inside a message would look like the end of a turn to the model, so it is escaped.
    conversation = [f"{_label(m)}: {m.content}".replace("\n", "\\n") for m in messages]
    blocks = ["\n".join(header), *(example.render() for example in examples), "\n".join([*conversation, REPLY_LABEL])]
    return "\n\n".join(blocks)
