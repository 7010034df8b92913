"""The full cycle, small: history -> adapter.complete -> ToolCall -> tool -> ToolResult -> ... -> FinalAnswer.

Short, yet it handles every way a real model's reply goes wrong, because that is this chapter's subject (see
``run_agent``); every call's tokens are counted, rejected ones included: they were paid for.
``workbook.transcript_view`` shows the frozen ``Transcript`` in the learner's language.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import ClassVar, Literal, TypeAlias

from ..display import ELLIPSIS, N_, error_text, quote, shorten, shorten_counted
from ..kernel_types import Action, FinalAnswer, HistoryItem, Message, MessageRole, ToolCall, ToolResult
from ..model_adapter import (
    InvalidModelOutputError,
    ModelAdapter,
    ModelCallBudget,
    ModelProviderError,
    ModelResponse,
    TokenUsage,
    ValidationLayer,
    require_count,
)
from .workspace_tools import Tool, ToolError

DEFAULT_BUDGET = ModelCallBudget(256)
"""Output tokens per model call: ample for one JSON action, small enough to stop a rambling model."""

DEFAULT_SYSTEM_PROMPT = (
    "You are a careful code agent. You can see the workspace only through the tools. "
    "Call a tool when you need to look at a file or folder, and give a final answer once you know it."
)
"""A short role; how to format actions is the provider's job (it renders the action shapes)."""

MAX_TOOL_RESULT_CHARS = 24_000
"""Above ``read_file``'s own cap, so the demo tools never reach it; a tool of your own that returns megabytes
would otherwise be re-sent whole in every later request (20 steps of a 10 MB result: a 200 MB history)."""

_MAX_REASON_CHARS = 300
_ID_QUOTE_CHARS = 80
# No placeholders: measured with Gemma 3 270M, a base model copies "<tool>" and "<a new id>" literally into its
# next call. The provider's prompt already shows the two action shapes; the correction only points back to them.
_REPLY_INSTRUCTION = (
    'Reply with exactly one JSON object and nothing else: a "tool_call" or a "final_answer" '
    "with exactly the fields shown before."
)


class StepKind(StrEnum):
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
    """Ctrl-C while the model is asked or a tool runs (or a tool raising ``KeyboardInterrupt``): the run stops, not its
    host."""
    ADAPTER_ERROR = "adapter error"
    """``adapter.complete`` broke its contract (raised something else, returned no ``ModelResponse``, or refused a
    reply without a ``ValidationLayer``): a bug in the adapter, often a learner's. The run ends, its transcript kept."""


STOP_CAUSES: Mapping[str, str] = {
    "model_call_interrupted": N_("model call {call} was interrupted (KeyboardInterrupt)"),
    "tool_interrupted": N_("tool {tool} was interrupted (KeyboardInterrupt)"),
    "adapter_raised": N_("model call {call}: adapter.complete raised {error_type}: {error}"),
    "adapter_bad_layer": N_(
        "model call {call}: adapter.complete raised InvalidModelOutputError with a layer of type {layer_type}"
    ),
    "adapter_returned": N_("model call {call}: adapter.complete returned {returned}, not a ModelResponse of an action"),
}
"""What ended a run where no step says it (an interrupt, a broken adapter), by code: the English of ``stop_detail``,
and the catalog ids the workbook says it with in the learner's language."""


@dataclass(frozen=True, slots=True)
class StopCause:
    code: str
    params: tuple[tuple[str, object], ...]  # pairs, so a frozen transcript stays hashable

    def __str__(self) -> str:
        return STOP_CAUSES[self.code].format(**dict(self.params))


# One class per kind of step, each holding exactly what it has, so no field is "None unless ...";
# ``model_call`` and ``usage`` are on every class (None constants where a kind has none): every summary counts them.


@dataclass(frozen=True, slots=True)
class ActionStep:
    kind: ClassVar[Literal[StepKind.ACTION]] = StepKind.ACTION
    model_call: int
    usage: TokenUsage
    action: Action


@dataclass(frozen=True, slots=True)
class RejectionStep:
    """A layer refused the reply; ``correction`` is what the model was sent, None when the run stopped instead."""

    kind: ClassVar[Literal[StepKind.REJECTION]] = StepKind.REJECTION
    model_call: int
    usage: TokenUsage | None
    layer: ValidationLayer
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
    """The request failed, or its reply was refused before the parser saw it; ``error``'s cause may carry a code
    the workbook words in the learner's language, ``message`` is only its English. ``usage`` is None unless the
    cause says what the server counted (``_counted``)."""

    kind: ClassVar[Literal[StepKind.PROVIDER_ERROR]] = StepKind.PROVIDER_ERROR
    model_call: int
    message: str
    error: ModelProviderError = field(compare=False, repr=False)
    usage: TokenUsage | None = None


@dataclass(frozen=True, slots=True)
class ToolResultStep:
    """``result`` is what the model was sent; ``output_chars``, the length of the tool's text before the loop's cap
    (in the form it is sent: a lone surrogate as its escape); ``capped``, whether the cap cut it. A flag, not a
    comparison of the two lengths: the cut text carries a marker, longer than a cut of a few characters."""

    kind: ClassVar[Literal[StepKind.TOOL_RESULT]] = StepKind.TOOL_RESULT
    model_call: ClassVar[None] = None
    usage: ClassVar[None] = None
    result: ToolResult
    output_chars: int
    capped: bool


Step: TypeAlias = ActionStep | RejectionStep | RepeatedCallIdStep | ProviderErrorStep | ToolResultStep


@dataclass(frozen=True, slots=True)
class Transcript:
    """One run, in order. ``history`` is what the model was sent (no rejected reply, see ``run_agent``);
    ``stop_detail`` is what the provider's error, the interrupted tool or model call said, else empty (counts are
    in ``steps``); ``stop_cause`` is the interrupt's or the broken adapter's as data."""

    task: str
    steps: tuple[Step, ...]
    stop_reason: StopReason
    stop_detail: str
    final_answer: str | None
    usage: TokenUsage
    history: tuple[HistoryItem, ...]
    stop_cause: StopCause | None = None

    @property
    def model_calls(self) -> int:
        return sum(1 for step in self.steps if step.model_call is not None)

    @property
    def rejections(self) -> int:
        return sum(1 for step in self.steps if step.kind is StepKind.REJECTION)


def correction_message(error: InvalidModelOutputError) -> str:
    """Why the reply was refused and what to send instead. Never the raw reply: it could be huge, and echoing
    broken text back invites the model to copy it."""
    reason = shorten(_message_of(error), _MAX_REASON_CHARS)
    parts = [_end_sentence(f"Your last reply was rejected at {error.layer.label}: {reason}")]
    expected, found = (value if type(value) is str else None for value in (error.expected, error.found))
    # Many parser messages already say both (layers 3 and 4); saying them twice only adds tokens.
    if expected is not None and found is not None and not (expected in reason and found in reason):
        expected, found = shorten(expected, _MAX_REASON_CHARS), shorten(found, _MAX_REASON_CHARS)
        parts.append(_end_sentence(f"Expected {expected}, found {found}"))
    return " ".join([*parts, _REPLY_INSTRUCTION])


def _message_of(error: InvalidModelOutputError) -> str:
    """A learner's parser may fill the error's fields with anything: only text goes on, else what ``str()`` says."""
    return error.message if type(error.message) is str else error_text(error)


def _end_sentence(text: str) -> str:
    # A preview already ends in "..." or "…"; a second full stop would read as a typo.
    return text if text.endswith((".", ELLIPSIS)) else text + "."


def repeated_call_id_message(call_id: str, suggestion: str) -> str:
    """``suggestion`` names an unused id: small models that copy their examples' ids ("call_1" every time)
    recover more often from an example than from a rule."""
    return (
        f"Your last reply was rejected: call_id {quote(call_id, _ID_QUOTE_CHARS)} was already used earlier in this "
        f"conversation; every tool call needs a new call_id, for example {suggestion!r}. {_REPLY_INSTRUCTION}"
    )


def _call_tool(tool: Tool, call: ToolCall) -> tuple[str, bool]:
    named = f"tool {quote(tool.name, _ID_QUOTE_CHARS)}"
    try:
        # A copy: a tool that edits its arguments must not rewrite the ToolCall in the history.
        content = tool.run(copy.deepcopy(call.arguments))
    except ToolError as error:
        return error_text(error), True
    except Exception as error:  # a tool bug must not end the run; the model sees what failed
        return f"{named} failed: {type(error).__name__}: {error_text(error)}", True
    except KeyboardInterrupt:
        raise  # the learner asked to stop: the run ends (see _Run.run_tool_call), its host goes on
    except BaseException as error:  # sys.exit() in a tool must not end the notebook or the CLI that runs the agent
        return (
            f"{named} tried to end the program: {type(error).__name__}: "
            f"{error_text(error)}; a tool returns text or raises an exception, the run goes on",
            True,
        )
    if not issubclass(type(content), str):  # type(), not isinstance: an object may claim any __class__
        return f"{named} returned {type(content).__name__}, not text", True
    return str.__str__(content), False  # a plain copy: a str subclass's methods are the tool's code too


def run_tool(tools: Sequence[Tool], call: ToolCall) -> ToolResult:
    """Always a ``ToolResult`` with the call's own ``call_id``: whatever goes wrong becomes an error result the
    model can read, so a bad call costs one step, never the run. The loop caps what it sends back."""
    by_name = {tool.name: tool for tool in tools}
    tool = by_name.get(call.tool_name)
    if tool is None:
        available = ", ".join(sorted(by_name)) or "none"
        message = f"unknown tool {quote(call.tool_name, _ID_QUOTE_CHARS)}; available tools: {available}"
        return ToolResult(call.call_id, message, is_error=True)
    content, is_error = _call_tool(tool, call)
    # A lone surrogate (a tool that decoded bytes with surrogateescape) has no UTF-8 form, so no provider could
    # send it: it is written as the escape \udcxx instead.
    sendable = content.encode("utf-8", "backslashreplace").decode("utf-8")
    return ToolResult(call.call_id, sendable, is_error=is_error)


@dataclass
class _Run:
    """The state of one run while it lasts; ``finish`` freezes it into a ``Transcript``."""

    adapter: ModelAdapter
    tools: tuple[Tool, ...]
    task: str
    history: list[HistoryItem]
    budget: ModelCallBudget
    max_rejections: int
    max_chars: int
    steps: list[Step] = field(default_factory=list)
    used_call_ids: set[str] = field(default_factory=set)
    total: TokenUsage = field(default_factory=lambda: TokenUsage(0, 0))
    rejections_in_a_row: int = 0

    def finish(self, reason: StopReason, detail: str = "", final_answer: str | None = None) -> Transcript:
        return Transcript(self.task, tuple(self.steps), reason, detail, final_answer, self.total, tuple(self.history))

    def stop(self, reason: StopReason, code: str, **params: object) -> Transcript:
        """The run ended by what no step records: its detail made from its cause, shortened as a reason is."""
        cause = StopCause(code, tuple(params.items()))
        return replace(self.finish(reason, shorten(str(cause), _MAX_REASON_CHARS)), stop_cause=cause)

    def turn(self, call_number: int) -> Transcript | None:
        """One model call and what follows from it; a ``Transcript`` when the run ends here."""
        response = self.ask(call_number)
        if not isinstance(response, ModelResponse):
            return response
        self.total += response.usage
        action = response.action
        if isinstance(action, ToolCall) and action.call_id in self.used_call_ids:
            message = f"call_id {quote(action.call_id, _ID_QUOTE_CHARS)} was already used in this run"
            repeated = RepeatedCallIdStep(call_number, response.usage, action, message, None)
            return self.reject(repeated, repeated_call_id_message(action.call_id, self.unused_call_id()))
        self.rejections_in_a_row = 0
        self.steps.append(ActionStep(call_number, response.usage, action))
        if isinstance(action, FinalAnswer):
            return self.finish(StopReason.FINAL_ANSWER, "", action.content)
        return self.run_tool_call(action)

    def ask(self, call_number: int) -> ModelResponse | Transcript | None:
        """The adapter's response, or what its failure makes of the run: ``None`` when a correction goes out."""
        try:
            response = self.adapter.complete(tuple(self.history), tuple(t.spec for t in self.tools), self.budget)
        except ModelProviderError as error:
            counted = _counted(error)
            if counted is not None:
                self.total += counted
            self.steps.append(ProviderErrorStep(call_number, error_text(error), error, counted))
            return self.finish(StopReason.PROVIDER_ERROR, error_text(error))
        except InvalidModelOutputError as error:
            step = self.rejection(call_number, error)  # its cost counted first: a broken adapter's call was paid too
            if not isinstance(error.layer, ValidationLayer):
                return self.broken(call_number, "adapter_bad_layer", layer_type=type(error.layer).__name__)
            return self.reject(step, correction_message(error))
        except KeyboardInterrupt:  # Ctrl-C while the model thinks, where a run spends most of its time
            return self.stop(StopReason.INTERRUPTED, "model_call_interrupted", call=call_number)
        except BaseException as error:  # sys.exit() in an adapter must not end the notebook either
            return self.broken(
                call_number,
                "adapter_raised",
                error_type=type(error).__name__,
                error=shorten(error_text(error), _MAX_REASON_CHARS),
            )
        if not _is_response(response):
            self.total += _paid(response)
            return self.broken(call_number, "adapter_returned", returned=type(response).__name__)
        return response

    def broken(self, call_number: int, code: str, **params: object) -> Transcript:
        return self.stop(StopReason.ADAPTER_ERROR, code, call=call_number, **params)

    def rejection(self, call_number: int, error: InvalidModelOutputError) -> RejectionStep:
        """The step, its cost counted; a learner's parser may fill the error with anything but text and counts."""
        usage = error.usage if isinstance(error.usage, TokenUsage) else None
        if usage is not None:
            self.total += usage
        raw_text = error.raw_text if type(error.raw_text) is str else None
        return RejectionStep(call_number, usage, error.layer, _message_of(error), raw_text, None)

    def unused_call_id(self) -> str:
        ids = (f"call_{number}" for number in itertools.count(len(self.used_call_ids) + 1))
        return next(call_id for call_id in ids if call_id not in self.used_call_ids)

    def reject(self, step: RejectionStep | RepeatedCallIdStep, correction: str) -> Transcript | None:
        self.rejections_in_a_row += 1
        if self.rejections_in_a_row > self.max_rejections:
            self.steps.append(step)
            return self.finish(StopReason.TOO_MANY_REJECTIONS)
        self.history.append(Message(MessageRole.USER, correction))
        self.steps.append(replace(step, correction=correction))
        return None

    def run_tool_call(self, call: ToolCall) -> Transcript | None:
        self.used_call_ids.add(call.call_id)
        self.history.append(call)
        interrupted = None
        try:
            result = run_tool(self.tools, call)
        except KeyboardInterrupt:
            interrupted = {"tool": quote(call.tool_name, _ID_QUOTE_CHARS)}
            result = ToolResult(call.call_id, STOP_CAUSES["tool_interrupted"].format(**interrupted), is_error=True)
        sent = replace(result, content=shorten_counted(result.content, self.max_chars))
        self.history.append(sent)
        self.steps.append(ToolResultStep(sent, len(result.content), capped=len(result.content) > self.max_chars))
        return None if interrupted is None else self.stop(StopReason.INTERRUPTED, "tool_interrupted", **interrupted)


def _is_response(response: object) -> bool:
    return (
        isinstance(response, ModelResponse)
        and isinstance(response.action, (ToolCall, FinalAnswer))
        and isinstance(response.usage, TokenUsage)
    )


def _paid(response: object) -> TokenUsage:
    """What a ``ModelResponse`` of no action still cost, when its usage says so."""
    usage = response.usage if isinstance(response, ModelResponse) else None
    return usage if isinstance(usage, TokenUsage) else TokenUsage(0, 0)


def _counted(error: ModelProviderError) -> TokenUsage | None:
    """What a reply refused by its provider cost, when the provider's error (the cause the adapter chains) holds
    ``input_tokens`` and ``output_tokens`` as ``ProviderResponse`` does: a server counts a reply it sent in vain."""
    counted_in, counted_out = (getattr(error.__cause__, name, None) for name in ("input_tokens", "output_tokens"))
    if type(counted_in) is int and type(counted_out) is int and min(counted_in, counted_out) >= 0:
        return TokenUsage(counted_in, counted_out)
    return None


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
    """Run ``task`` until a final answer, the step limit, too many rejections, a provider or adapter error, or an
    interrupt.

    ``max_steps`` bounds the model calls, rejected ones included, so the cost too; an accepted action resets the
    count of rejections in a row. Choices worth knowing:

    * A rejected reply is not added to the history, only the correction: it would be a bad example to imitate.
    * A reused ``call_id`` is a rejection: two results with one ``call_id`` could not be told apart.
    * An unknown tool name is a valid action: it gets an error ``ToolResult`` naming the available tools.
    * A tool that raises anything, ``SystemExit`` included, gets an error ``ToolResult``; a ``KeyboardInterrupt``
      (in a tool or while the model is asked) stops the run with ``StopReason.INTERRUPTED``. Either way
      ``run_agent`` returns.
    * An adapter that breaks its own contract (see ``StopReason.ADAPTER_ERROR``) stops the run, which still returns.
    """
    require_count("max_steps", max_steps, 1)
    require_count("max_consecutive_rejections", max_consecutive_rejections, 0)
    require_count("max_tool_result_chars", max_tool_result_chars, 1)
    tools = tuple(tools)  # read once: an iterator checked for duplicates would be empty when the run begins
    names = [tool.name for tool in tools]
    if duplicates := sorted({name for name in names if names.count(name) > 1}):
        raise ValueError(f"tool names must be unique; repeated: {', '.join(duplicates)}")
    history: list[HistoryItem] = [] if system_prompt is None else [Message(MessageRole.SYSTEM, system_prompt)]
    history.append(Message(MessageRole.USER, task))
    run = _Run(adapter, tools, task, history, budget, max_consecutive_rejections, max_tool_result_chars)
    for call_number in range(1, max_steps + 1):
        if (transcript := run.turn(call_number)) is not None:
            return transcript
    return run.finish(StopReason.STEP_LIMIT)
