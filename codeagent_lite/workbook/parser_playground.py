"""Notebook 04's parser playground: type raw model text, watch the four-layer ladder react.

The ladder comes from ``diagnose``, as the ``check`` command's does, so the two cannot disagree. The CSS classes
and ``data-*`` attributes are a contract with the real-browser test: change them only together with it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import ipywidgets

from ..diagnosis import MARKS, Diagnosis, LayerOutcome, LayerStatus, describe_action, diagnose
from ..display import escape_html, shorten
from .error_words import expected_and_found
from .ladder import format_ladder, layer_label, status_word
from .widget_view import ShownAsWidget
from .words import N_, _

PRESETS: dict[str, str] = {
    # Accepted: the two shapes the contract allows.
    N_("clean tool call"): (
        '{"type": "tool_call", "call_id": "call_1", "tool_name": "read_file", "arguments": {"path": "README.md"}}'
    ),
    N_("clean final answer (Chinese text)"): (
        '{"type": "final_answer", "content": "README.md 的标题是「从零搭建 Code Agent」"}'
    ),
    # Layer 1: not exactly one strict JSON value.
    N_("fenced ```json block"): '```json\n{"type": "final_answer", "content": "42"}\n```',
    N_("prose before the JSON"): 'Sure! Here is the action:\n{"type": "final_answer", "content": "42"}',
    N_("prose after the JSON"): '{"type": "final_answer", "content": "42"}\nLet me know if you need anything else.',
    N_("two JSON objects"): (
        '{"type": "tool_call", "call_id": "call_1", "tool_name": "read_file", "arguments": {"path": "notes.md"}}\n'
        '{"type": "tool_call", "call_id": "call_2", "tool_name": "delete_file", "arguments": {"path": "notes.md"}}'
    ),
    N_("duplicate key"): (
        '{"type": "tool_call", "call_id": "call_1", "tool_name": "read_file", '
        '"tool_name": "delete_file", "arguments": {"path": "notes.md"}}'
    ),
    N_("NaN in arguments"): (
        '{"type": "tool_call", "call_id": "call_1", "tool_name": "sleep", "arguments": {"seconds": NaN}}'
    ),
    N_("cut-off reply"): (
        '{"type": "tool_call", "call_id": "call_1", "tool_name": "write_file", '
        '"arguments": {"path": "notes.md", "text": "First line'
    ),
    N_("single quotes"): "{'type': 'final_answer', 'content': '42'}",
    N_("trailing comma"): '{"type": "final_answer", "content": "42",}',
    # Layer 2: valid JSON, but not an object.
    N_("top-level array"): '[{"type": "final_answer", "content": "42"}]',
    # Layer 3: an object whose type is not one of the two actions.
    N_(
        'unknown type "tool_result"'
    ): '{"type": "tool_result", "call_id": "call_1", "content": "ok", "is_error": false}',
    # Layer 4: the right type, the wrong fields or field types.
    N_("missing tool_name"): '{"type": "tool_call", "call_id": "call_1", "arguments": {"path": "README.md"}}',
    N_("arguments as a string"): (
        '{"type": "tool_call", "call_id": "call_1", "tool_name": "read_file", '
        '"arguments": "{\\"path\\": \\"README.md\\"}"}'
    ),
    N_("blank call_id"): (
        '{"type": "tool_call", "call_id": "  ", "tool_name": "read_file", "arguments": {"path": "README.md"}}'
    ),
}
"""In ladder order. The names are catalog ids: the notebooks' identical code cells pass them as keys, and the
drop-down and the static ladders show them in the edition's language."""

# Inline styles, because the ladder is shown by an HTML widget without a stylesheet of its own.
_ROW_STYLES = {
    LayerStatus.PASSED: "color:#1a7f37",
    LayerStatus.FAILED: "color:#cf222e;font-weight:bold",
    LayerStatus.NOT_REACHED: "color:#8c959f",
}
_DETAIL_STYLE = "margin-left:2.2em;font-weight:normal;color:#24292f;white-space:pre-wrap"


def _layer_row_html(outcome: LayerOutcome) -> str:
    status = outcome.status
    css = status.value.replace(" ", "-")  # ``not reached``: a class name holds no space
    parts = [
        f'<div class="cal-layer cal-layer-{css}" data-layer="{int(outcome.layer)}" '
        f'data-status="{escape_html(status.value)}" style="{_ROW_STYLES[status]}">',
        f'<span class="cal-mark">{MARKS[status]}</span> ',
        f'<span class="cal-layer-title">{escape_html(layer_label(outcome.layer))}</span> ',
        f'<span class="cal-status">{escape_html(status_word(status))}</span>',
    ]
    if (error := outcome.error) is not None:
        expected, found, code = (escape_html(word) for word in (_("expected: "), _("found: "), _("code: ")))
        expected_text, found_text = expected_and_found(error)
        # ``duplicate_key (key='tool_name')``: what a program reads from the error
        params = ", ".join(f"{name}={shorten(repr(value), 40)}" for name, value in error.params.items())
        code_text = f"{error.code} ({params})" if params else error.code
        parts.append(f'<div class="cal-message" style="{_DETAIL_STYLE}">{escape_html(error.message)}</div>')
        parts.append(
            f'<div class="cal-expected-found" style="{_DETAIL_STYLE}">'
            f'{expected}<span class="cal-expected">{escape_html(expected_text)}</span><br>'
            f'{found}<span class="cal-found">{escape_html(found_text)}</span><br>'
            f'{code}<span class="cal-code" data-code="{escape_html(error.code)}">'
            f"{escape_html(code_text)}</span></div>"
        )
    parts.append("</div>")
    return "".join(parts)


def render_ladder_html(diagnosis: Diagnosis) -> str:
    """The ladder as HTML; every piece of model text in it is escaped, because model text is untrusted."""
    rows = [_layer_row_html(outcome) for outcome in diagnosis.outcomes]
    if (action := diagnosis.action) is not None:
        rows.append(
            f'<div class="cal-action" data-action="{escape_html(type(action).__name__)}" '
            f'style="margin-top:0.4em;color:#0969da">⇒ {escape_html(describe_action(action))}</div>'
        )
    elif (layer := diagnosis.rejected_by) is not None:
        rejected = N_("⇒ rejected at {layer}: the Kernel would get InvalidModelOutputError, not an action")
        said = _(rejected, layer=layer_label(layer))
        rows.append(
            f'<div class="cal-rejected" data-layer="{int(layer)}" style="margin-top:0.4em;color:#cf222e">'
            f"{escape_html(said)}</div>"
        )
    style = "font-family:var(--jp-code-font-family, monospace);line-height:1.5"
    return f'<div class="cal-ladder" style="{style}">' + "".join(rows) + "</div>"


def preset_names() -> str:
    """One line a preset: its key, which code uses in both editions, and beside it the name the drop-down shows
    when that is another (the Chinese edition's)."""
    return "\n".join(name if _(name) == name else f"{name}  ·  {_(name)}" for name in PRESETS)


def static_ladders_text(names: Iterable[str]) -> str:
    """For places where widgets cannot run: plain text reads well on GitHub and diffs cleanly under nbval."""
    blocks = []
    for name in names:
        if name not in PRESETS:
            raise KeyError(f"unknown preset {name!r}; known presets: {', '.join(PRESETS)}")
        raw = PRESETS[name]
        indented = "\n".join("    " + line for line in raw.split("\n"))
        blocks.append("--- " + _(name) + f"\n{indented}\n{format_ladder(diagnose(raw))}")
    return "\n\n".join(blocks)


def show_static_ladders(names: Iterable[str]) -> None:
    print(static_ladders_text(names))


class ParserPlayground(ShownAsWidget):
    """A preset drop-down, a text box and the live ladder of whatever the box holds.

    The ladder follows typing once it pauses for ``pause_seconds``, so a pasted megabyte is parsed once, not per
    keystroke; where no event loop runs (a script, a test), each change is parsed at once.
    """

    _pending: asyncio.TimerHandle | None = None

    def __init__(self, initial_preset: str = "clean tool call", *, pause_seconds: float = 0.3) -> None:
        if initial_preset not in PRESETS:
            raise KeyError(f"unknown preset {initial_preset!r}")
        self.preset = ipywidgets.Dropdown(
            options=[(_(name), name) for name in PRESETS],
            value=initial_preset,
            description=_("Preset:"),
            layout=ipywidgets.Layout(width="32em"),
        ).add_class("cal-playground-preset")
        self.text = ipywidgets.Textarea(
            value=PRESETS[initial_preset],
            placeholder=_("Paste or type a raw model reply here"),
            continuous_update=True,
            rows=6,
            layout=ipywidgets.Layout(width="100%"),
        ).add_class("cal-playground-input")
        self.ladder = ipywidgets.HTML().add_class("cal-playground-ladder")
        self.widget = ipywidgets.VBox([self.preset, self.text, self.ladder]).add_class("cal-playground")
        self.pause_seconds = pause_seconds
        self.refresh()
        self.preset.observe(self._on_preset_change, names="value")
        self.text.observe(self._on_text_change, names="value")

    def refresh(self) -> None:
        self._pending = None
        self.diagnosis = diagnose(self.text.value)
        self.ladder.value = render_ladder_html(self.diagnosis)

    def _on_preset_change(self, change: dict[str, Any]) -> None:
        if change["new"] is not None:  # None: the text was edited away from any preset; keep the learner's text
            self.text.value = PRESETS[change["new"]]

    def _on_text_change(self, change: dict[str, Any]) -> None:
        if self._pending is not None:
            self._pending.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or self.pause_seconds <= 0:
            self.refresh()
        else:
            self._pending = loop.call_later(self.pause_seconds, self.refresh)
        if self.preset.value is not None and PRESETS[self.preset.value] != change["new"]:
            self.preset.value = None  # cleared, so choosing the same preset again reloads it
