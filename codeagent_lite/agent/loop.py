"""The full cycle, small: the adapter inside the loop the series builds.

    history -> adapter.complete -> ToolCall -> tool -> ToolResult (same call_id) -> ... -> FinalAnswer

``run_agent`` is deliberately minimal so a learner can read it in one sitting, yet it
handles every way a real model's reply goes wrong, because that is what this chapter
is about:

* an invalid reply (``InvalidModelOutputError``) is sent back as a short correction and
  retried, at most ``max_consecutive_rejections`` times in a row;
* a provider failure (``ModelProviderError``) stops the run with its message;
* a repeated ``call_id``, an unknown tool and a tool that raises are all reported, never
  silently accepted and never a crash;
* every call's tokens are counted, rejected replies included, because they were paid for.

The result is a frozen ``Transcript`` that a notebook or the command line can show.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from ..diagnosis import describe_action, diagnose, format_ladder
from ..kernel_types import Action, FinalAnswer, HistoryItem, Message, MessageRole, ToolCall, ToolResult
from ..model_adapter import (
    InvalidModelOutputError,
    ModelAdapter,
    ModelCallBudget,
    ModelProviderError,
    TokenUsage,
    ValidationLayer,
)
from .workspace_tools import Tool, ToolError

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_SYSTEM_PROMPT",
    "Step",
    "StepKind",
    "StopReason",
    "Transcript",
    "correction_message",
    "repeated_call_id_message",
    "run_agent",
    "run_tool",
]

DEFAULT_BUDGET = ModelCallBudget(256)
"""Output tokens allowed per model call: ample for one JSON action, small enough to stop a rambling model."""

DEFAULT_SYSTEM_PROMPT = (
    "You are a careful code agent. You can see the workspace only through the tools. "
    "Call a tool when you need to look at a file or folder, and give a final answer once you know it."
)
"""A short agent role; how to format actions is the provider's job (it renders the action shapes)."""

_MAX_REASON_CHARS = 300
# No template with placeholders here: measured with Gemma 3 270M, a base model copies
# "<tool>" and "<a new id>" literally into its next call. The provider's prompt already
# shows the two action shapes; the correction only has to point back to them.
_REPLY_INSTRUCTION = (
    'Reply with exactly one JSON object and nothing else: a "tool_call" or a "final_answer" '
    "with exactly the fields shown before."
)


class StepKind(StrEnum):
    """What one transcript entry records."""

    ACTION = "action"
    REJECTION = "rejection"
    PROVIDER_ERROR = "provider_error"
    TOOL_RESULT = "tool_result"


class StopReason(StrEnum):
    """Why the loop ended; only ``FINAL_ANSWER`` means the task was answered."""

    FINAL_ANSWER = "final answer"
    STEP_LIMIT = "step limit reached"
    TOO_MANY_REJECTIONS = "too many rejected replies in a row"
    PROVIDER_ERROR = "provider error"


@dataclass(frozen=True, slots=True)
class Step:
    """One entry of the transcript.

    ``model_call`` numbers the model calls (1, 2, ...) and is ``None`` for a tool result.
    ``usage`` is what that call cost, ``None`` when unknown (a provider failure, a tool).
    For a rejection, ``layer`` is the parser layer that refused the reply (``None`` when the
    loop itself refused a valid-looking action, as for a repeated ``call_id``), ``message``
    is the verdict, ``raw_text`` the reply when the adapter reported it, and
    ``correction`` the message added to the history for the model (``None`` when the run
    stopped instead). A loop-level rejection also keeps the refused ``action``.
    """

    kind: StepKind
    model_call: int | None = None
    usage: TokenUsage | None = None
    action: Action | None = None
    raw_text: str | None = None
    layer: ValidationLayer | None = None
    message: str | None = None
    correction: str | None = None
    tool_result: ToolResult | None = None


@dataclass(frozen=True, slots=True)
class Transcript:
    """Everything one run did, in order, plus why it stopped and what it cost.

    ``history`` is the history the loop built for the model (system message, task, tool
    calls, tool results and corrections); rejected replies are not in it, see
    ``run_agent``. ``usage`` sums every model call, failed ones included.
    """

    task: str
    steps: tuple[Step, ...]
    stop_reason: StopReason
    stop_detail: str
    final_answer: str | None
    usage: TokenUsage
    history: tuple[HistoryItem, ...]

    @property
    def model_calls(self) -> int:
        return sum(1 for step in self.steps if step.model_call is not None)

    @property
    def rejections(self) -> int:
        return sum(1 for step in self.steps if step.kind is StepKind.REJECTION)

    def render(self, *, show_ladders: bool = True, max_chars: int = 400) -> str:
        """Plain text for a terminal or a notebook; long texts are shortened to ``max_chars``.

        With ``show_ladders`` a rejected reply whose raw text is known is run through
        ``diagnose`` again, so the learner sees all four layers, not only the one that failed.
        """
        lines = [f"task: {_shorten(self.task, max_chars)}"]
        for number, step in enumerate(self.steps, start=1):
            lines.append(_step_heading(number, step))
            lines.extend("    " + line for line in _step_body(step, show_ladders, max_chars).splitlines())
        lines.append(f"stopped: {self.stop_reason.value} ({self.stop_detail})")
        if self.final_answer is not None:
            lines.append(f"final answer: {_shorten(self.final_answer, max_chars)}")
        lines.append(
            f"usage: {self.usage.input_tokens} input + {self.usage.output_tokens} output = "
            f"{self.usage.total_tokens} tokens over {self.model_calls} model calls "
            f"({self.rejections} rejected)"
        )
        return "\n".join(lines)


def _shorten(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f"… [{len(text) - max_chars} more characters]"


def _usage_text(usage: TokenUsage | None) -> str:
    if usage is None:
        return "usage unknown"
    return f"{usage.input_tokens} in + {usage.output_tokens} out tokens"


def _step_heading(number: int, step: Step) -> str:
    if step.kind is StepKind.TOOL_RESULT:
        assert step.tool_result is not None
        status = "error" if step.tool_result.is_error else "ok"
        return f"[{number}] tool result · call_id={step.tool_result.call_id!r} · {status}"
    verdict = step.kind.value.replace("_", " ")
    if step.kind is StepKind.REJECTION:
        if step.layer is not None:
            verdict = f"rejected at layer {int(step.layer)} ({step.layer.title})"
        elif step.action is not None:
            verdict = "rejected by the loop"  # the four layers passed; the loop refused the action
        else:
            verdict = "rejected"
    return f"[{number}] model call {step.model_call} · {verdict} · {_usage_text(step.usage)}"


def _step_body(step: Step, show_ladders: bool, max_chars: int) -> str:
    lines: list[str] = []
    if step.kind is StepKind.TOOL_RESULT:
        assert step.tool_result is not None
        lines.append(_shorten(step.tool_result.content, max_chars) or "(empty)")
    elif step.kind is StepKind.ACTION:
        assert step.action is not None
        lines.append("✔ all four layers passed")
        lines.append(f"=> {describe_action(step.action)}")
    elif step.kind is StepKind.PROVIDER_ERROR:
        lines.append(f"✘ {step.message}")
    else:
        if step.raw_text is not None:
            lines.append(f"raw reply: {_shorten(repr(step.raw_text), max_chars)}")
        if step.raw_text is not None and step.layer is not None and show_ladders:
            lines.append(format_ladder(diagnose(step.raw_text)))
        else:
            if step.action is not None:
                lines.append(f"✔ all four layers passed: {describe_action(step.action)}")
            lines.append(f"✘ {step.message}")
        if step.correction is not None:
            lines.append(f"correction sent: {_shorten(step.correction, max_chars)}")
        else:
            lines.append("no correction sent: the run stops here")
    return "\n".join(lines)


# --------------------------------------------------------------------------- messages back to the model


def correction_message(error: InvalidModelOutputError) -> str:
    """The user message that tells a model why its reply was refused and what to send instead.

    It names the layer, what was expected and what was found, and asks for exactly one
    JSON object. It never repeats the raw reply: that could be huge, and echoing broken
    text back invites the model to copy it.
    """
    where = f"layer {int(error.layer)} ({error.layer.title})" if error.layer is not None else "validation"
    reason = _shorten(error.message, _MAX_REASON_CHARS)
    parts = [_end_sentence(f"Your last reply was rejected at {where}: {reason}")]
    # Many parser messages already say both (layers 3 and 4); saying them twice only adds tokens.
    if (
        error.expected is not None
        and error.found is not None
        and not (error.expected in reason and error.found in reason)
    ):
        expected = _shorten(error.expected, _MAX_REASON_CHARS)
        parts.append(_end_sentence(f"Expected {expected}, found {_shorten(error.found, _MAX_REASON_CHARS)}"))
    parts.append(_REPLY_INSTRUCTION)
    return " ".join(parts)


def _end_sentence(text: str) -> str:
    # A preview already ends in "..."; a second full stop would read as a typo.
    return text if text.endswith(".") else text + "."


def repeated_call_id_message(call_id: str, suggestion: str | None = None) -> str:
    """The correction for a tool call that reuses a ``call_id`` from earlier in the run.

    ``suggestion`` names a concrete unused id: small models that copy the ids of their
    examples ("call_1" every time) recover more often from an example than from a rule.
    """
    example = f", for example {suggestion!r}" if suggestion is not None else ""
    return (
        f"Your last reply was rejected: call_id {_shorten(call_id, 80)!r} was already used earlier in this "
        f"conversation; every tool call needs a new call_id{example}. {_REPLY_INSTRUCTION}"
    )


def _unused_call_id(used: set[str]) -> str:
    number = len(used) + 1
    while f"call_{number}" in used:
        number += 1
    return f"call_{number}"


# --------------------------------------------------------------------------- tools


def run_tool(tools: Sequence[Tool], call: ToolCall) -> ToolResult:
    """Run one call and always return a ``ToolResult`` with the call's own ``call_id``.

    Whatever goes wrong (an unknown tool, arguments the tool refuses, a tool that
    crashes or returns something other than text) becomes an error result the model can
    read, so a bad call costs one step, never the run.
    """
    by_name = {tool.name: tool for tool in tools}
    tool = by_name.get(call.tool_name)
    if tool is None:
        available = ", ".join(sorted(by_name)) or "none"
        return ToolResult(
            call.call_id,
            f"unknown tool {_shorten(call.tool_name, 80)!r}; available tools: {available}",
            is_error=True,
        )
    try:
        content = tool.run(call.arguments)
    except ToolError as error:
        return ToolResult(call.call_id, str(error), is_error=True)
    except Exception as error:  # a tool bug must not end the run; the model sees what failed
        return ToolResult(call.call_id, f"tool {tool.name!r} failed: {type(error).__name__}: {error}", is_error=True)
    if not isinstance(content, str):
        return ToolResult(
            call.call_id, f"tool {tool.name!r} returned {type(content).__name__}, not text", is_error=True
        )
    return ToolResult(call.call_id, content)


# --------------------------------------------------------------------------- the loop


def run_agent(
    adapter: ModelAdapter,
    tools: Sequence[Tool],
    task: str,
    *,
    system_prompt: str | None = None,
    max_steps: int = 8,
    max_consecutive_rejections: int = 2,
    budget: ModelCallBudget = DEFAULT_BUDGET,
) -> Transcript:
    """Run ``task`` until a final answer, a step limit, too many rejections or a provider error.

    ``max_steps`` bounds the number of model calls, rejected ones included, so it is
    also a bound on cost. ``max_consecutive_rejections`` is how many corrections are sent
    in a row before giving up; any accepted action resets the count.

    Choices worth knowing:

    * A rejected reply is not added to the history, only the correction is. The history
      holds Kernel types that passed every check; replaying broken text as an assistant
      turn would show the model a bad example to imitate.
    * A tool call whose ``call_id`` was already used in this run is treated as a rejected
      reply (a correction asks for a new id, and it counts toward the rejections in a
      row). Answering it with a ``ToolResult`` instead would put two results with the same
      ``call_id`` into the history, and then no one could tell which result belongs to
      which call.
    * An unknown tool name is not a rejection: the reply is a valid action, so it gets an
      error ``ToolResult`` naming the available tools and the model can recover.
    """
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
        raise ValueError(f"max_steps must be an int >= 1, got {max_steps!r}")
    if (
        not isinstance(max_consecutive_rejections, int)
        or isinstance(max_consecutive_rejections, bool)
        or max_consecutive_rejections < 0
    ):
        raise ValueError(f"max_consecutive_rejections must be an int >= 0, got {max_consecutive_rejections!r}")
    names = [tool.name for tool in tools]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"tool names must be unique; repeated: {', '.join(duplicates)}")

    history: list[HistoryItem] = []
    if system_prompt is not None:
        history.append(Message(MessageRole.SYSTEM, system_prompt))
    history.append(Message(MessageRole.USER, task))
    specs = tuple(tool.spec for tool in tools)
    steps: list[Step] = []
    used_call_ids: set[str] = set()
    total = TokenUsage(0, 0)
    rejections_in_a_row = 0

    def finish(reason: StopReason, detail: str, final_answer: str | None = None) -> Transcript:
        return Transcript(
            task=task,
            steps=tuple(steps),
            stop_reason=reason,
            stop_detail=detail,
            final_answer=final_answer,
            usage=total,
            history=tuple(history),
        )

    def reject(step: Step, correction: str) -> Transcript | None:
        """Record a rejection; send the correction, or stop when the limit in a row is passed."""
        nonlocal rejections_in_a_row
        rejections_in_a_row += 1
        if rejections_in_a_row > max_consecutive_rejections:
            steps.append(step)
            return finish(
                StopReason.TOO_MANY_REJECTIONS,
                f"{rejections_in_a_row} rejected replies in a row; at most "
                f"{max_consecutive_rejections} corrections are sent in a row",
            )
        history.append(Message(MessageRole.USER, correction))
        steps.append(replace(step, correction=correction))
        return None

    for call_number in range(1, max_steps + 1):
        try:
            response = adapter.complete(tuple(history), specs, budget)
        except ModelProviderError as error:
            steps.append(Step(StepKind.PROVIDER_ERROR, model_call=call_number, message=str(error)))
            return finish(StopReason.PROVIDER_ERROR, str(error))
        except InvalidModelOutputError as error:
            if error.usage is not None:
                total += error.usage
            rejection = Step(
                StepKind.REJECTION,
                model_call=call_number,
                usage=error.usage,
                raw_text=error.raw_text,
                layer=error.layer,
                message=error.message,
            )
            stopped = reject(rejection, correction_message(error))
            if stopped is not None:
                return stopped
            continue

        total += response.usage
        action = response.action
        if isinstance(action, ToolCall) and action.call_id in used_call_ids:
            rejection = Step(
                StepKind.REJECTION,
                model_call=call_number,
                usage=response.usage,
                action=action,
                message=f"call_id {action.call_id!r} was already used in this run",
            )
            correction = repeated_call_id_message(action.call_id, _unused_call_id(used_call_ids))
            stopped = reject(rejection, correction)
            if stopped is not None:
                return stopped
            continue

        rejections_in_a_row = 0
        steps.append(Step(StepKind.ACTION, model_call=call_number, usage=response.usage, action=action))
        if isinstance(action, FinalAnswer):
            return finish(StopReason.FINAL_ANSWER, f"after {call_number} model calls", action.content)
        used_call_ids.add(action.call_id)
        history.append(action)
        result = run_tool(tools, action)
        history.append(result)
        steps.append(Step(StepKind.TOOL_RESULT, tool_result=result))

    return finish(StopReason.STEP_LIMIT, f"{max_steps} model calls without a final answer")
