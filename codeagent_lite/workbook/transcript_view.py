"""An agent run's transcript in the learner's language: what ``run`` and notebook 06 print. ``agent.loop`` keeps
the run as data and may not import this room. What the model said or was sent (replies, tool results, the English
corrections the model reads) is shown as it was, shortened to ``max_chars``, with no raw control character."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import takewhile

from ..agent.loop import (
    STOP_CAUSES,
    ActionStep,
    ProviderErrorStep,
    RejectionStep,
    RepeatedCallIdStep,
    Step,
    StepKind,
    StopReason,
    ToolResultStep,
    Transcript,
)
from ..diagnosis import diagnose
from ..display import printable, quote, shorten, shorten_counted
from ..model_adapter import TokenUsage, require_count
from .ladder import format_ladder, layer_label
from .language import Language
from .words import N_, _

__all__ = ["render_transcript", "stop_words", "usage_words"]

_ID_QUOTE_CHARS = 40

_STOP_REASONS: Mapping[StopReason, str] = {
    StopReason.FINAL_ANSWER: N_("final answer"),
    StopReason.STEP_LIMIT: N_("step limit reached"),
    StopReason.TOO_MANY_REJECTIONS: N_("too many rejected replies in a row"),
    StopReason.PROVIDER_ERROR: N_("provider error"),
    StopReason.INTERRUPTED: N_("interrupted"),
    StopReason.ADAPTER_ERROR: N_("adapter error"),
}


def stop_words(reason: StopReason, language: Language | None = None) -> str:
    return _(_STOP_REASONS[reason], language)


def usage_words(usage: TokenUsage | None, language: Language | None = None) -> str:
    """``12 in + 3 out = 15 tokens``: what a call cost."""
    if usage is None:
        return _("usage unknown", language)
    numbers = {"input": usage.input_tokens, "output": usage.output_tokens, "total": usage.total_tokens}
    return _("{input} in + {output} out = {total} tokens", language, **numbers)


def _stop_detail(transcript: Transcript, language: Language | None) -> str:
    """Made from the run's counts, the provider's failure, or the cause of an interrupt or a broken adapter."""
    reason, calls, last = transcript.stop_reason, transcript.model_calls, transcript.steps[-1:]
    if reason is StopReason.PROVIDER_ERROR and last and isinstance(last[0], ProviderErrorStep):
        return _provider_error(last[0], language)
    if reason is StopReason.FINAL_ANSWER:
        return _("after {calls} model calls", language, calls=calls)
    if reason is StopReason.STEP_LIMIT:
        return _("{calls} model calls without a final answer", language, calls=calls)
    if reason is StopReason.TOO_MANY_REJECTIONS:
        count = len(list(takewhile(lambda step: step.kind is StepKind.REJECTION, reversed(transcript.steps))))
        said = N_("{count} rejected replies in a row; at most {limit} corrections are sent in a row")
        return _(said, language, count=count, limit=count - 1)
    if (cause := transcript.stop_cause) is not None:
        return _(STOP_CAUSES[cause.code], language, **dict(cause.params))
    return transcript.stop_detail


def render_transcript(
    transcript: Transcript, *, show_ladders: bool = True, max_chars: int = 400, language: Language | None = None
) -> str:
    """The task, each step, why the run stopped and what it cost. With ``show_ladders`` a rejected reply is run
    through ``diagnose`` again, so the learner sees all four layers, not only the one that failed."""
    require_count("max_chars", max_chars, 4)  # a raw reply is quoted, and a quote needs its two marks and "…"
    lines = [_("task: {task}", language, task=_indented(shorten_counted(transcript.task, max_chars)))]
    for number, step in enumerate(transcript.steps, start=1):
        lines.append(_heading(number, step, language))
        lines.extend("    " + line for line in _body(step, show_ladders, max_chars, language).splitlines())
    detail = _indented(shorten_counted(_stop_detail(transcript, language), max_chars))
    reason = stop_words(transcript.stop_reason, language)
    lines.append(_("stopped: {reason} ({detail})", language, reason=reason, detail=detail))
    if transcript.final_answer is not None:
        answer = _indented(shorten_counted(transcript.final_answer, max_chars))
        lines.append(_("final answer: {answer}", language, answer=answer))
    usage, calls, rejected = usage_words(transcript.usage, language), transcript.model_calls, transcript.rejections
    counts = {"usage": usage, "calls": calls, "rejected": rejected}
    lines.append(_("usage: {usage} over {calls} model calls ({rejected} rejected)", language, **counts))
    return printable("\n".join(lines))


def _indented(text: str) -> str:
    """Text a model or a user wrote, on a line of the transcript's own: its next lines indented like a step's
    body, so "usage: …" or "[3] tool result" in a final answer cannot pass for the transcript's lines."""
    return text.replace("\n", "\n    ")  # the one line break printable() keeps


def _heading(number: int, step: Step, language: Language | None) -> str:
    if isinstance(step, ToolResultStep):
        fields = {"number": number, "call_id": quote(step.result.call_id, _ID_QUOTE_CHARS)}
        status = _("error", language) if step.result.is_error else _("ok", language)
        return _("[{number}] tool result · call_id={call_id} · {status}", language, status=status, **fields)
    if isinstance(step, RejectionStep):
        verdict = _("rejected at {layer}", language, layer=layer_label(step.layer, language))
    elif isinstance(step, RepeatedCallIdStep):
        verdict = _("rejected by the loop", language)  # the four layers passed; the loop refused the action
    elif isinstance(step, ActionStep):
        verdict = _("action", language)
    else:
        verdict = _("provider error", language)
    fields = {"number": number, "call": step.model_call, "usage": usage_words(step.usage, language)}
    return _("[{number}] model call {call} · {verdict} · {usage}", language, verdict=verdict, **fields)


def _body(step: Step, show_ladders: bool, max_chars: int, language: Language | None) -> str:
    if isinstance(step, ToolResultStep):
        body = shorten_counted(step.result.content, max_chars) or _("(empty)", language)
        if not step.capped:
            return body
        note = N_("(the tool returned {count} characters; the model was sent them cut, ending in the marker)")
        return f"{body}\n{_(note, language, count=step.output_chars)}"
    if isinstance(step, ActionStep):
        return _("✔ all four layers passed\n=> {action}", language, action=shorten(repr(step.action), max_chars))
    if isinstance(step, ProviderErrorStep):
        return f"✘ {shorten_counted(_provider_error(step, language), max_chars)}"
    if isinstance(step, RepeatedCallIdStep):
        passed = _("✔ all four layers passed: {action}", language, action=shorten(repr(step.action), max_chars))
        call_id = quote(step.action.call_id, _ID_QUOTE_CHARS)
        refused = _("✘ call_id {call_id} was already used in this run", language, call_id=call_id)
        return "\n".join([passed, refused, _correction_line(step.correction, max_chars, language)])
    lines = []
    if step.raw_text is not None:
        lines.append(_("raw reply: {text}", language, text=quote(step.raw_text, max_chars)))
    if step.raw_text is not None and show_ladders:
        lines.append(format_ladder(diagnose(step.raw_text), language))
    else:
        lines.append(f"✘ {shorten_counted(step.message, max_chars)}")
    return "\n".join([*lines, _correction_line(step.correction, max_chars, language)])


def _provider_error(step: ProviderErrorStep, language: Language | None) -> str:
    # Imported here: a run with the scripted provider loads no module of providers/ (tests/test_cli_run.py).
    from .provider_words import provider_error_text

    return provider_error_text(step.error, language)


def _correction_line(correction: str | None, max_chars: int, language: Language | None) -> str:
    if correction is None:
        return _("no correction sent: the run stops here", language)
    return _("correction sent: {text}", language, text=shorten_counted(correction, max_chars))
