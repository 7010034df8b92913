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
* what a tool returns is capped before it goes back to the model (``max_tool_result_chars``),
  with a visible marker, so one huge result cannot swell every later request;
* every call's tokens are counted, rejected replies included, because they were paid for.

The result is a frozen ``Transcript`` that a notebook or the command line can show
(``workbook.transcript_view``, in the learner's language).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import ClassVar, Literal, TypeAlias

from ..display import quote, shorten, shorten_counted
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
    "MAX_TOOL_RESULT_CHARS",
    "ActionStep",
    "ProviderErrorStep",
    "RejectionStep",
    "RepeatedCallIdStep",
    "Step",
    "StepKind",
    "StopReason",
    "ToolResultStep",
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

MAX_TOOL_RESULT_CHARS = 24_000
"""Longest tool output sent back to the model. It sits above ``read_file``'s own cap, so the
demo tools never reach it; a tool of your own that returns megabytes would otherwise be
re-sent whole in every later request (20 steps of a 10 MB result: a 200 MB history)."""

_MAX_REASON_CHARS = 300
_ID_QUOTE_CHARS = 80
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
    INTERRUPTED = "interrupted"
    """A tool was interrupted (Ctrl-C, or a tool raising ``KeyboardInterrupt``): the run stops, its host does not."""


# --------------------------------------------------------------------------- the transcript's steps
#
# One class per kind of step, each holding exactly what that kind has, so no field is
# "None unless ...". ``kind`` (a class constant) names the kind for code that only
# sorts steps; ``model_call`` and ``usage`` exist on every class (a tool result has
# neither: they are the constant None there) because every summary of a run counts them.


@dataclass(frozen=True, slots=True)
class ActionStep:
    """The model's reply passed all four layers and the loop accepted the action."""

    kind: ClassVar[Literal[StepKind.ACTION]] = StepKind.ACTION
    model_call: int
    usage: TokenUsage
    action: Action


@dataclass(frozen=True, slots=True)
class RejectionStep:
    """A layer refused the reply. ``raw_text`` is the reply when the adapter reported it; ``layer``
    is None only for an adapter that did not say which layer refused. ``correction`` is the
    message added to the history for the model, None when the run stopped instead."""

    kind: ClassVar[Literal[StepKind.REJECTION]] = StepKind.REJECTION
    model_call: int
    usage: TokenUsage | None
    layer: ValidationLayer | None
    message: str
    raw_text: str | None
    correction: str | None


@dataclass(frozen=True, slots=True)
class RepeatedCallIdStep:
    """All four layers passed, but the loop refused the tool call: its ``call_id`` was used before."""

    kind: ClassVar[Literal[StepKind.REJECTION]] = StepKind.REJECTION
    layer: ClassVar[None] = None
    model_call: int
    usage: TokenUsage
    action: ToolCall
    message: str
    correction: str | None


@dataclass(frozen=True, slots=True)
class ProviderErrorStep:
    """The model could not be asked; the run stops here. What the failed call cost is unknown.

    ``error`` is the adapter's error itself: its cause may carry a code the workbook words in the learner's
    language, where ``message`` is only its English.
    """

    kind: ClassVar[Literal[StepKind.PROVIDER_ERROR]] = StepKind.PROVIDER_ERROR
    usage: ClassVar[None] = None
    model_call: int
    message: str
    error: ModelProviderError | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ToolResultStep:
    """A tool ran. ``result`` is what the model was sent; ``output_chars`` is how long the tool's
    own output was, larger than ``result.content`` when the loop capped it."""

    kind: ClassVar[Literal[StepKind.TOOL_RESULT]] = StepKind.TOOL_RESULT
    model_call: ClassVar[None] = None
    usage: ClassVar[None] = None
    result: ToolResult
    output_chars: int

    @property
    def capped(self) -> bool:
        return self.output_chars > len(self.result.content)


Step: TypeAlias = ActionStep | RejectionStep | RepeatedCallIdStep | ProviderErrorStep | ToolResultStep


@dataclass(frozen=True, slots=True)
class Transcript:
    """Everything one run did, in order, plus why it stopped and what it cost.

    ``history`` is the history the loop built for the model (system message, task, tool
    calls, tool results and corrections); rejected replies are not in it, see
    ``run_agent``. ``usage`` sums every model call, failed ones included. ``stop_detail`` is what the
    provider's error or the interrupted tool said, empty for the other reasons (their details are counts, in
    ``steps``). ``workbook.transcript_view`` shows a transcript in the learner's language.
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


# --------------------------------------------------------------------------- messages back to the model


def correction_message(error: InvalidModelOutputError) -> str:
    """The user message that tells a model why its reply was refused and what to send instead.

    It names the layer, what was expected and what was found, and asks for exactly one
    JSON object. It never repeats the raw reply: that could be huge, and echoing broken
    text back invites the model to copy it.
    """
    where = error.layer.label if error.layer is not None else "validation"
    reason = shorten(error.message, _MAX_REASON_CHARS)
    parts = [_end_sentence(f"Your last reply was rejected at {where}: {reason}")]
    # Many parser messages already say both (layers 3 and 4); saying them twice only adds tokens.
    if (
        error.expected is not None
        and error.found is not None
        and not (error.expected in reason and error.found in reason)
    ):
        expected = shorten(error.expected, _MAX_REASON_CHARS)
        parts.append(_end_sentence(f"Expected {expected}, found {shorten(error.found, _MAX_REASON_CHARS)}"))
    parts.append(_REPLY_INSTRUCTION)
    return " ".join(parts)


def _end_sentence(text: str) -> str:
    # A preview already ends in "..." or "…"; a second full stop would read as a typo.
    return text if text.endswith((".", "…")) else text + "."


def repeated_call_id_message(call_id: str, suggestion: str | None = None) -> str:
    """The correction for a tool call that reuses a ``call_id`` from earlier in the run.

    ``suggestion`` names a concrete unused id: small models that copy the ids of their
    examples ("call_1" every time) recover more often from an example than from a rule.
    """
    example = f", for example {suggestion!r}" if suggestion is not None else ""
    return (
        f"Your last reply was rejected: call_id {quote(call_id, _ID_QUOTE_CHARS)} was already used earlier in this "
        f"conversation; every tool call needs a new call_id{example}. {_REPLY_INSTRUCTION}"
    )


def _unused_call_id(used: set[str]) -> str:
    number = len(used) + 1
    while f"call_{number}" in used:
        number += 1
    return f"call_{number}"


# --------------------------------------------------------------------------- tools


def _text_of(error: BaseException) -> str:
    # A tool's exception is the tool's code: even its __str__ may raise.
    try:
        return str(error)
    except Exception:
        return "(the error's message cannot be shown)"


def _sendable(text: str) -> str:
    # A lone surrogate (a learner's tool that decoded bytes with surrogateescape) has no UTF-8
    # form, so no provider could send it: write it as the escape \udcxx instead.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _call_tool(tool: Tool, call: ToolCall) -> tuple[str, bool]:
    """The tool's output (or what went wrong) and whether it is an error."""
    try:
        # A copy: a tool that edits its arguments must not rewrite the ToolCall in the history.
        content = tool.run(copy.deepcopy(call.arguments))
    except ToolError as error:
        return _text_of(error), True
    except Exception as error:  # a tool bug must not end the run; the model sees what failed
        return f"tool {quote(tool.name, _ID_QUOTE_CHARS)} failed: {type(error).__name__}: {_text_of(error)}", True
    except KeyboardInterrupt:
        raise  # the learner asked to stop: the run ends (see _Run._run_tool_call), its host goes on
    except BaseException as error:  # sys.exit() in a tool must not end the notebook or the CLI that runs the agent
        return (
            f"tool {quote(tool.name, _ID_QUOTE_CHARS)} tried to end the program: {type(error).__name__}: "
            f"{_text_of(error)}; a tool returns text or raises an exception, the run goes on",
            True,
        )
    if not isinstance(content, str):
        return f"tool {quote(tool.name, _ID_QUOTE_CHARS)} returned {type(content).__name__}, not text", True
    return content, False


def run_tool(tools: Sequence[Tool], call: ToolCall) -> ToolResult:
    """Run one call and always return a ``ToolResult`` with the call's own ``call_id``.

    Whatever goes wrong (an unknown tool, arguments the tool refuses, a tool that
    crashes or returns something other than text) becomes an error result the model can
    read, so a bad call costs one step, never the run. The content is whole here; the
    loop caps what it sends back (``MAX_TOOL_RESULT_CHARS``).
    """
    by_name = {tool.name: tool for tool in tools}
    tool = by_name.get(call.tool_name)
    if tool is None:
        available = ", ".join(sorted(by_name)) or "none"
        message = f"unknown tool {quote(call.tool_name, _ID_QUOTE_CHARS)}; available tools: {available}"
        return ToolResult(call.call_id, message, is_error=True)
    content, is_error = _call_tool(tool, call)
    return ToolResult(call.call_id, _sendable(content), is_error=is_error)


# --------------------------------------------------------------------------- the loop


def _check_count(name: str, value: object, minimum: int) -> int:
    # bool is an int in Python; max_steps=True is a bug, not a count.
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, found {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, found {value}")
    return value


def _check_tool_names(tools: Sequence[Tool]) -> None:
    names = [tool.name for tool in tools]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"tool names must be unique; repeated: {', '.join(duplicates)}")


class _Run:
    """The state of one run while it lasts; ``run_agent`` turns it into a frozen ``Transcript``."""

    def __init__(
        self,
        adapter: ModelAdapter,
        tools: Sequence[Tool],
        task: str,
        system_prompt: str | None,
        budget: ModelCallBudget,
        max_consecutive_rejections: int,
        max_tool_result_chars: int,
    ) -> None:
        self.adapter = adapter
        self.tools = tuple(tools)
        self.specs = tuple(tool.spec for tool in tools)
        self.task = task
        self.budget = budget
        self.max_consecutive_rejections = max_consecutive_rejections
        self.max_tool_result_chars = max_tool_result_chars
        self.history: list[HistoryItem] = [] if system_prompt is None else [Message(MessageRole.SYSTEM, system_prompt)]
        self.history.append(Message(MessageRole.USER, task))
        self.steps: list[Step] = []
        self.used_call_ids: set[str] = set()
        self.total = TokenUsage(0, 0)
        self.rejections_in_a_row = 0

    def finish(self, reason: StopReason, detail: str, final_answer: str | None = None) -> Transcript:
        return Transcript(
            task=self.task,
            steps=tuple(self.steps),
            stop_reason=reason,
            stop_detail=detail,
            final_answer=final_answer,
            usage=self.total,
            history=tuple(self.history),
        )

    def turn(self, call_number: int) -> Transcript | None:
        """One model call and what follows from it; a ``Transcript`` when the run ends here."""
        try:
            response = self.adapter.complete(tuple(self.history), self.specs, self.budget)
        except ModelProviderError as error:
            self.steps.append(ProviderErrorStep(model_call=call_number, message=_text_of(error), error=error))
            return self.finish(StopReason.PROVIDER_ERROR, _text_of(error))
        except InvalidModelOutputError as error:
            return self._reply_rejected(call_number, error)
        self.total += response.usage
        action = response.action
        if isinstance(action, ToolCall) and action.call_id in self.used_call_ids:
            return self._call_id_repeated(call_number, action, response.usage)
        self.rejections_in_a_row = 0
        self.steps.append(ActionStep(model_call=call_number, usage=response.usage, action=action))
        if isinstance(action, FinalAnswer):
            return self.finish(StopReason.FINAL_ANSWER, "", action.content)
        return self._run_tool_call(action)

    def _reply_rejected(self, call_number: int, error: InvalidModelOutputError) -> Transcript | None:
        if error.usage is not None:
            self.total += error.usage
        step = RejectionStep(
            model_call=call_number,
            usage=error.usage,
            layer=error.layer,
            message=error.message,
            raw_text=error.raw_text,
            correction=None,
        )
        return self._reject(step, correction_message(error))

    def _call_id_repeated(self, call_number: int, action: ToolCall, usage: TokenUsage) -> Transcript | None:
        step = RepeatedCallIdStep(
            model_call=call_number,
            usage=usage,
            action=action,
            message=f"call_id {quote(action.call_id, _ID_QUOTE_CHARS)} was already used in this run",
            correction=None,
        )
        return self._reject(step, repeated_call_id_message(action.call_id, _unused_call_id(self.used_call_ids)))

    def _reject(self, step: RejectionStep | RepeatedCallIdStep, correction: str) -> Transcript | None:
        """Record a rejection; send the correction, or stop when too many came in a row."""
        self.rejections_in_a_row += 1
        if self.rejections_in_a_row > self.max_consecutive_rejections:
            self.steps.append(step)
            return self.finish(StopReason.TOO_MANY_REJECTIONS, "")
        self.history.append(Message(MessageRole.USER, correction))
        self.steps.append(replace(step, correction=correction))
        return None

    def _run_tool_call(self, call: ToolCall) -> Transcript | None:
        """Run the call and record its result; a ``Transcript`` when the tool was interrupted."""
        self.used_call_ids.add(call.call_id)
        self.history.append(call)
        try:
            result = run_tool(self.tools, call)
        except KeyboardInterrupt:
            message = f"tool {quote(call.tool_name, _ID_QUOTE_CHARS)} was interrupted (KeyboardInterrupt)"
            result = ToolResult(call.call_id, message, is_error=True)
            self._record(result)
            return self.finish(StopReason.INTERRUPTED, message)
        self._record(result)
        return None

    def _record(self, result: ToolResult) -> None:
        sent = replace(result, content=shorten_counted(result.content, self.max_tool_result_chars))
        self.history.append(sent)
        self.steps.append(ToolResultStep(result=sent, output_chars=len(result.content)))


def run_agent(
    adapter: ModelAdapter,
    tools: Sequence[Tool],
    task: str,
    *,
    system_prompt: str | None = None,
    max_steps: int = 8,
    max_consecutive_rejections: int = 2,
    budget: ModelCallBudget = DEFAULT_BUDGET,
    max_tool_result_chars: int = MAX_TOOL_RESULT_CHARS,
) -> Transcript:
    """Run ``task`` until a final answer, a step limit, too many rejections, a provider error or an interrupt.

    ``max_steps`` bounds the number of model calls, rejected ones included, so it is
    also a bound on cost. ``max_consecutive_rejections`` is how many corrections are sent
    in a row before giving up; any accepted action resets the count.
    ``max_tool_result_chars`` caps each tool output sent back to the model; a longer one
    is cut and ends in a marker saying how many characters were left out.

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
    * A tool that ends the program (``sys.exit``, ``SystemExit`` or any other
      ``BaseException``) gets an error ``ToolResult`` like a crash; a ``KeyboardInterrupt``
      in a tool (Ctrl-C) stops the run with ``StopReason.INTERRUPTED``. Either way
      ``run_agent`` returns, and the notebook or CLI that called it goes on.
    """
    _check_count("max_steps", max_steps, 1)
    _check_count("max_consecutive_rejections", max_consecutive_rejections, 0)
    _check_count("max_tool_result_chars", max_tool_result_chars, 1)
    _check_tool_names(tools)
    run = _Run(adapter, tools, task, system_prompt, budget, max_consecutive_rejections, max_tool_result_chars)
    for call_number in range(1, max_steps + 1):
        transcript = run.turn(call_number)
        if transcript is not None:
            return transcript
    return run.finish(StopReason.STEP_LIMIT, "")
