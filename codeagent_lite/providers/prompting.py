"""What a JSON-text model is told: the protocol, the two action shapes and the tools, as text (it has no tool
channel). The shapes come from ``action_json_schema()``, so the prompt cannot promise one the parser refuses. A
chat model gets ``render_system_prompt``; a *base* model, which continues patterns but ignores instructions
(``openai_completions`` has the numbers), ``render_completion_prompt``. Both are pure: same input, same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..action_schema import action_json_schema
from ..json_text_messages import ProviderMessage, encode_json
from ..kernel_types import ToolSpec

__all__ = ["DEFAULT_EXAMPLES", "REPLY_LABEL", "SCHEMA_EXAMPLES", "WorkedExample", "describe_action_shapes"]
__all__ += ["render_completion_prompt", "render_system_prompt"]

REPLY_LABEL = "Reply:"
"""The label a completion prompt ends with, never followed by a space: measured on Gemma 3 270M, a trailing
space drops valid replies from about 7 of 8 to 0 of 8, because the model's own tokens for JSON start with one."""


def _field(name: str, prop: dict[str, Any]) -> str:
    if "const" in prop:
        return f'"{name}": {json.dumps(prop["const"])}'
    note = " (non-blank)" if prop.get("minLength", 0) >= 1 else ""
    return f'"{name}": <{prop.get("type", "any JSON value")}{note}>'


def describe_action_shapes() -> list[str]:
    """One line per action shape, read from the parser's JSON Schema (never hand-written): the type first."""
    schema = action_json_schema()
    shapes = [schema["$defs"][option["$ref"].rsplit("/", 1)[-1]] for option in schema["oneOf"]]
    return [
        "{" + ", ".join(_field(name, shape["properties"][name]) for name in shape["required"]) + "}" for shape in shapes
    ]


def _tools_section(tools: Sequence[ToolSpec], without_tools: str) -> list[str]:
    """One line per tool: name, description and input schema (keys sorted, so the bytes are stable)."""
    lines = [f"- {tool.name}: {tool.description} Arguments schema: {encode_json(tool.input_schema)}" for tool in tools]
    return ["Tools:", *lines] if tools else [without_tools]


def render_system_prompt(tools: Sequence[ToolSpec]) -> str:
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
        *_tools_section(tools, 'No tools are available: reply with a "final_answer".'),
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- base-model prompt


@dataclass(frozen=True, slots=True)
class WorkedExample:
    """One solved exchange shown to a base model: (label, text) turns such as ("Task", …), ending with a reply."""

    turns: tuple[tuple[str, str], ...]

    def render(self) -> str:
        return "\n".join(f"{label}: {text}" for label, text in self.turns)


def _worked_examples(write: Callable[[dict[str, Any]], str]) -> tuple[WorkedExample, ...]:
    def call(call_id: str, tool_name: str, path: str) -> tuple[str, str]:
        action = {"type": "tool_call", "call_id": call_id, "tool_name": tool_name, "arguments": {"path": path}}
        return ("Reply", write(action))

    def result(call_id: str, content: str) -> tuple[str, str]:  # always the conversation's bytes: sorted keys
        observation = {"type": "tool_result", "call_id": call_id, "content": content, "is_error": False}
        return ("Result", encode_json(observation))

    def final(content: str) -> tuple[str, str]:
        return ("Reply", write({"type": "final_answer", "content": content}))

    def example(*turns: tuple[str, str]) -> WorkedExample:
        return WorkedExample(turns)

    return (
        example(("Task", "What is 2 + 3?"), final("2 + 3 = 5.")),
        example(("Task", "Show me the file notes.txt."), call("call_1", "read_file", "notes.txt")),
        example(
            ("Task", "Which files are in the src folder?"),
            call("call_1", "list_files", "src"),
            result("call_1", "app.py\nutil.py"),
            final("The src folder holds app.py and util.py."),
        ),
        example(("Task", "Say hello in French."), final("Bonjour !")),
        example(
            ("Task", "How many lines does todo.txt have?"),
            call("call_1", "read_file", "todo.txt"),
            result("call_1", "buy milk\nfix bug\n"),
            final("todo.txt has 2 lines."),
        ),
        example(
            ("Task", "Read setup.cfg, then read the file it names."),
            call("call_1", "read_file", "setup.cfg"),
            result("call_1", "[options]\nconfig = app.toml\n"),
            call("call_2", "read_file", "app.toml"),
            result("call_2", 'name = "demo"\n'),
            final('setup.cfg names app.toml, which sets name = "demo".'),
        ),
    )


DEFAULT_EXAMPLES: tuple[WorkedExample, ...] = _worked_examples(encode_json)
"""Six worked examples for free text, the replies in the conversation's own bytes (``encode_json``, as
``build_provider_messages`` writes them): two direct answers, a lone call, two exchanges where a result comes
back, one with ``call_1`` then ``call_2`` (a base model copies ids: with ``call_1`` alone it repeated it).
Measured with Gemma 3 270M, ``run_agent`` on 6 tasks: 5 of 6 finished with these, 1 of 6 with type-first
replies (it copied the ``Result:`` line above, a ``tool_result``), 2 of 6 with all-``call_1`` examples. They use
the demo tools ``read_file`` and ``list_files``: pass your own examples when your tools differ."""

SCHEMA_EXAMPLES: tuple[WorkedExample, ...] = _worked_examples(
    lambda action: json.dumps(action, ensure_ascii=False, separators=(",", ":"))  # the contract's field order
)
"""The same exchanges, replies written ``type`` first as the schema grammar forces: 4 of 6 tasks in schema
mode, 1 of 6 with the conversation-order examples (a stray ``"type"`` in ``arguments``, or ``call_1`` again)."""


def _label(message: ProviderMessage) -> str:
    if (by_role := {"assistant": "Reply", "system": "Note"}.get(message.role)) is not None:
        return by_role
    try:  # build_provider_messages sends a tool result as a user message holding one JSON object
        value = json.loads(message.content)
    except (ValueError, RecursionError):  # a task or correction can be any text, "[[[[..." included
        return "Task"
    return "Result" if isinstance(value, dict) and value.get("type") == "tool_result" else "Task"


def render_completion_prompt(
    messages: Sequence[ProviderMessage],
    tools: Sequence[ToolSpec],
    examples: Sequence[WorkedExample] = DEFAULT_EXAMPLES,
) -> str:
    """Rules, tools, worked examples, then the conversation, ending with ``"Reply:"``: the model's continuation
    is its reply (stop at the first newline)."""
    header = [
        "Each reply is exactly one JSON object on one line, in one of these two shapes:",
        *describe_action_shapes(),
        *_tools_section(tools, "No tools are available."),
    ]
    # A newline inside a message would look like the end of a turn to the model, so it is escaped.
    conversation = [f"{_label(m)}: {m.content}".replace("\n", "\\n") for m in messages]
    blocks = ["\n".join(header), *(example.render() for example in examples), "\n".join([*conversation, REPLY_LABEL])]
    return "\n\n".join(blocks)
