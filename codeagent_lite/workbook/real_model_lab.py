"""Notebook 06: a real model's raw replies beside their ladders, in plain text nbval can compare.

Raw model text is printed only on lines that start with ``RAW_PREFIX``, so a notebook test can mask exactly
those lines while the verdicts stay compared. ``TaskPlayground`` imports ipywidgets only when created.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agent.loop import StepKind, Transcript
from ..diagnosis import Diagnosis, diagnose
from ..display import display_width, escape_html, pad, shorten, shorten_counted
from ..json_text_adapter import ProviderError, TextProvider
from ..json_text_messages import build_provider_messages
from ..kernel_types import FinalAnswer, Message, MessageRole, ToolCall, ToolSpec
from ..model_adapter import TokenUsage
from ..providers.local_llama import MODEL_FILENAME
from ..providers.local_server import LocalModelServer, SharedReply
from ..providers.redaction import redact_url
from .ladder import format_ladder, layer_label
from .provider_words import provider_error_text
from .transcript_view import usage_words
from .widget_view import ShownAsWidget
from .words import N_, _

RAW_PREFIX = "raw │ "

DEMO_FILES: Mapping[str, str] = {
    "README.md": "# Demo project\nA tiny project for the agent to explore.\n",
    "notes.txt": "buy milk\nfix bug\nwrite docs\n",
    "src/main.py": 'print("hello from main")\n',
}


def write_demo_workspace(folder: str | os.PathLike[str], files: Mapping[str, str] = DEMO_FILES) -> Path:
    """Refuses a path outside ``folder``, so a mistyped mapping cannot write elsewhere on the machine."""
    root = Path(folder).resolve()
    for relative, text in files.items():
        target = (root / relative).resolve()
        if Path(relative).is_absolute() or not target.is_relative_to(root) or target == root:
            raise ValueError(f"demo file path must stay inside the folder: {relative!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def hide_folder(text: str, folder: str | os.PathLike[str], label: str = "<workspace>") -> str:
    """A temporary folder's path changes on every run and names the machine: never in a saved output."""
    spellings = {os.fspath(folder), os.fspath(Path(folder).resolve())}
    for spelling in sorted(spellings, key=len, reverse=True):
        if spelling:
            text = text.replace(spelling, label)
    return text


def server_line(server: LocalModelServer) -> str:
    """Without the port: it changes on every run."""
    if server.process is None:
        return _("Gemma 3 270M: the class's shared model server at {url}", url=redact_url(server.base_url))
    own = N_(
        "Gemma 3 270M ({name}) runs in a process of its own: {backend}'s server, an OpenAI-compatible API on 127.0.0.1"
    )
    return _(own, name=MODEL_FILENAME, backend=server.backend)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One task sent once. ``seconds`` (wall time) is the only way to see what constrained decoding costs;
    ``shared``: the class's reply cache answered it, so its seconds measure no model."""

    task: str
    label: str
    raw_text: str | None
    finish_reason: str | None
    usage: TokenUsage | None
    diagnosis: Diagnosis | None
    error: str | None = None
    seconds: float | None = None
    shared: bool = False

    @property
    def verdict(self) -> str:
        return verdict_text(self.diagnosis) if self.diagnosis is not None else _("provider error")

    @property
    def action(self) -> str:
        return action_text(self.diagnosis) if self.diagnosis is not None else "—"


def ask(
    provider: TextProvider, task: str, tools: Sequence[ToolSpec], *, label: str, max_output_tokens: int = 256
) -> Attempt:
    """The provider directly, not the adapter: the adapter keeps only the action or the error, and a learner
    also wants the exact text and the finish reason (``"length"`` explains most layer-1 failures)."""
    messages = build_provider_messages([Message(MessageRole.USER, task)])
    started = time.perf_counter()
    try:
        response = provider.complete(messages=messages, tools=tools, max_output_tokens=max_output_tokens)
    except ProviderError as error:
        shown = provider_error_text(error)
        return Attempt(task, label, None, None, None, None, error=shown, seconds=time.perf_counter() - started)
    seconds = time.perf_counter() - started
    usage = TokenUsage(response.input_tokens, response.output_tokens)
    shared = isinstance(response, SharedReply)
    diagnosis = diagnose(response.text)
    return Attempt(task, label, response.text, response.finish_reason, usage, diagnosis, seconds=seconds, shared=shared)


def verdict_text(diagnosis: Diagnosis) -> str:
    return _("accepted") if diagnosis.rejected_by is None else layer_label(diagnosis.rejected_by)


def action_text(diagnosis: Diagnosis, max_chars: int = 40) -> str:
    action = diagnosis.action
    if isinstance(action, ToolCall):
        arguments = ", ".join(f"{name}={value!r}" for name, value in action.arguments.items())
        return shorten(f"{action.tool_name}({arguments})", max_chars)
    if isinstance(action, FinalAnswer):
        return shorten(f"final: {action.content!r}", max_chars)
    return "—"


def raw_line(text: str | None, max_chars: int = 160) -> str:
    return RAW_PREFIX + ("(no reply)" if text is None else shorten_counted(repr(text), max_chars))


_FINISH_WORDS = {
    "length": N_("finish_reason 'length': the reply hit max_output_tokens and was cut off mid-way"),
    "stop": N_("finish_reason 'stop': the model ended the reply itself (here: at the newline)"),
    None: N_("finish_reason not reported by the provider"),
}


def finish_note(attempt: Attempt) -> str:
    reason = attempt.finish_reason
    return _(_FINISH_WORDS[reason]) if reason in _FINISH_WORDS else f"finish_reason {reason!r}"


def render_attempt(attempt: Attempt) -> str:
    task = _("task: {task}  [{label}]", task=attempt.task, label=attempt.label)
    if attempt.error is not None:
        return task + "\n" + _("✘ provider error: {error}", error=attempt.error)
    assert attempt.diagnosis is not None
    return "\n".join([task, raw_line(attempt.raw_text), *_cost_lines(attempt), format_ladder(attempt.diagnosis)])


_SHARED_REPLY = N_(
    "from the class's shared reply cache: an identical request was already answered, so no model call this time"
)


def _cost_lines(attempt: Attempt) -> list[str]:
    lines = [f"{finish_note(attempt)}; {usage_words(attempt.usage)}"]
    return [*lines, _(_SHARED_REPLY)] if attempt.shared else lines


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> str:
    # Padding counts display columns, so the zh edition's headers line up like the English ones.
    widths = [max(display_width(row[column]) for row in (header, *rows)) for column in range(len(header))]

    def cell(text: str, column: int) -> str:
        padding = " " * (widths[column] - display_width(text))
        return padding + text if column in right else text + padding

    def line(cells: Sequence[str]) -> str:
        return " | ".join(cell(text, column) for column, text in enumerate(cells)).rstrip()

    rule = "-+-".join("-" * width for width in widths)
    return "\n".join([line(header), rule, *(line(row) for row in rows)])


def comparison_table(attempts: Sequence[Attempt], task_width: int = 38) -> str:
    header = (_("task"), _("mode"), _("verdict"), _("action"), _("out"))
    rows = [
        (
            shorten(attempt.task, task_width),
            attempt.label,
            attempt.verdict,
            attempt.action,
            "?" if attempt.usage is None else str(attempt.usage.output_tokens),
        )
        for attempt in attempts
    ]
    return _table(header, rows)


def seconds_cell(seconds: float | None) -> str:
    """Fixed width, so a varying time never moves a column."""
    return "     ? s" if seconds is None else f"{seconds:6.2f} s"


def rate_cell(tokens: int | None, seconds: float | None) -> str:
    if tokens is None or not seconds:
        return "     ? tok/s"
    return f"{tokens / seconds:6.1f} tok/s"


def timing_table(attempts: Sequence[Attempt], task_width: int = 38) -> str:
    """Each call, then one total row per mode without its first call: llama.cpp reads each mode's whole prompt
    there and reuses it after, so only later calls measure the writing, where the grammar costs time. Tokens per
    second compare modes whose replies differ in length; a reply from the class's cache was written for someone
    else, so no speed counts it."""
    header = (_("task"), _("mode"), _("out"), _("seconds"), _("speed"))
    rows = [_timing_row(shorten(attempt.task, task_width), attempt.label, [attempt]) for attempt in attempts]
    rates: dict[str, float | None] = {}
    for label in dict.fromkeys(attempt.label for attempt in attempts):
        total_row, rates[label] = _mode_total([attempt for attempt in attempts if attempt.label == label])
        rows.append(total_row)
    return _table(header, rows, right=(2,)) + _speed_ratio(rates)


def _mode_total(group: Sequence[Attempt]) -> tuple[tuple[str, str, str, str, str], float | None]:
    """One mode's total row without its first call, and its speed over the calls the model wrote."""
    later = group[1:] or group
    first = len(group) - len(later) + 1
    task = _("calls {first}-{last}, prompt already read", first=first, last=len(group))
    tokens, seconds = _sums([attempt for attempt in later if not attempt.shared])
    return _timing_row(task, group[0].label, later), tokens / seconds if tokens is not None and seconds else None


def _timing_row(task: str, label: str, group: Sequence[Attempt]) -> tuple[str, str, str, str, str]:
    tokens, seconds = _sums(group)
    generated = [attempt for attempt in group if not attempt.shared]
    rate = rate_cell(*_sums(generated)) if generated else _("class cache")
    return (task, label, "?" if tokens is None else str(tokens), seconds_cell(seconds), rate)


def _sums(group: Sequence[Attempt]) -> tuple[int | None, float | None]:
    """A number not known for every call is None, never a partial sum."""
    usages = [attempt.usage for attempt in group if attempt.usage is not None]
    times = [attempt.seconds for attempt in group if attempt.seconds is not None]
    tokens = sum(usage.output_tokens for usage in usages) if len(usages) == len(group) else None
    return tokens, sum(times) if len(times) == len(group) else None


def _speed_ratio(rates: Mapping[str, float | None]) -> str:
    """The notebook's prose points here instead of quoting figures, which change from run to run."""
    if len(rates) != 2:
        return ""
    (first, first_rate), (second, second_rate) = rates.items()
    if not first_rate or second_rate is None:
        return ""
    said = N_("{second} wrote ×{ratio} as many tokens per second as {first} once the prompt was read")
    return "\n" + _(said, first=first, second=second, ratio=format(second_rate / first_rate, ".2f"))


def failure_costs(transcript: Transcript) -> str:
    lines = []
    wasted = TokenUsage(0, 0)
    for step in transcript.steps:
        if step.model_call is None:
            continue
        if step.kind is StepKind.REJECTION:
            where = step.layer
            outcome = _("rejected by the loop") if where is None else _("rejected by layer {layer}", layer=int(where))
            if step.usage is not None:
                wasted += step.usage
        elif step.kind is StepKind.PROVIDER_ERROR:
            outcome = _("provider error")
        else:
            outcome = _("accepted")
        fields = {"number": step.model_call, "outcome": pad(outcome, 20), "usage": usage_words(step.usage)}
        lines.append(_("call {number}: {outcome} {usage}", None, **fields))
    total = transcript.usage.total_tokens
    share = 0 if total == 0 else round(100 * wasted.total_tokens / total)
    counts = {"wasted": wasted.total_tokens, "rejected": transcript.rejections, "calls": transcript.model_calls}
    said = N_("rejected calls cost {wasted} of {total} tokens ({share}%), over {rejected} of {calls} calls")
    lines.append(_(said, None, total=total, share=share, **counts))
    return "\n".join(lines)


class TaskPlayground(ShownAsWidget):
    """Type a task, press Ask: one model call through ``ask``, its raw reply and the parser playground's ladder."""

    def __init__(
        self,
        providers: Mapping[str, TextProvider],
        tools: Sequence[ToolSpec],
        task: str = "What does src/main.py print?",
        max_output_tokens: int = 64,
    ) -> None:
        if not providers:
            raise ValueError("TaskPlayground needs at least one provider")
        import ipywidgets

        self.providers = dict(providers)
        self.tools = tuple(tools)
        self.max_output_tokens = max_output_tokens
        self.task = ipywidgets.Text(value=task, description=_("Task:"), layout=ipywidgets.Layout(width="100%"))
        self.mode = ipywidgets.ToggleButtons(options=list(self.providers), description=_("Mode:"))
        self.button = ipywidgets.Button(description=_("Ask the model"), button_style="primary")
        self.result = ipywidgets.HTML(value=_("<i>Press the button: one model call.</i>"))
        self.widget = ipywidgets.VBox([self.task, self.mode, self.button, self.result])
        self.last_attempt: Attempt | None = None
        self.button.on_click(self._on_click)

    def run_once(self) -> Attempt:
        from .parser_playground import render_ladder_html

        label = str(self.mode.value)
        attempt = ask(
            self.providers[label], self.task.value, self.tools, label=label, max_output_tokens=self.max_output_tokens
        )
        self.last_attempt = attempt
        if attempt.error is not None or attempt.diagnosis is None:
            self.result.value = f"<pre>{escape_html(render_attempt(attempt))}</pre>"
        else:
            header = "\n".join([raw_line(attempt.raw_text, max_chars=400), *_cost_lines(attempt)])
            self.result.value = f"<pre>{escape_html(header)}</pre>" + render_ladder_html(attempt.diagnosis)
        return attempt

    def _on_click(self, _button: Any) -> None:
        self.result.value = _("<i>asking the model…</i>")
        self.run_once()
