"""Notebook 02's encoder playground: build a short Kernel history, watch it become provider messages. Every
conversion goes through the package's own ``build_provider_messages``, so it cannot teach another encoding."""

from __future__ import annotations

import json
from collections.abc import Sequence

import ipywidgets as widgets

from ..display import escape_html, json_kind, shorten_counted
from ..json_text_messages import ProviderMessage, build_provider_messages
from ..kernel_types import HistoryItem, Message, MessageRole, ToolCall, ToolResult
from .widget_view import ShownAsWidget
from .words import N_, _

ITEM_KINDS = ("Message", "ToolCall", "ToolResult")
EMPTY_HISTORY_TEXT = N_("(the history is empty: pick an item type, fill in its fields and press “Add to history”)")


SHOWN_CHARS = 2000
"""Of each item and each message: a pasted file of megabytes would otherwise be sent to the browser whole, twice."""


def format_conversion(history: Sequence[HistoryItem]) -> str:
    """Each history item (its ``repr``, which the Kernel types keep readable), then the provider message it became."""
    if not history:
        return _(EMPTY_HISTORY_TEXT)
    messages = build_provider_messages(history)  # refuses what is not a history item
    pairs = enumerate(zip(history, messages, strict=True), start=1)
    return "\n".join(
        f"#{number} {shorten_counted(repr(item), SHOWN_CHARS)}\n   -> {shorten_counted(repr(message), SHOWN_CHARS)}"
        for number, (item, message) in pairs
    )


def _parse_arguments(text: str) -> dict[str, object]:
    # Learner input: every way it can be wrong becomes a ValueError with a readable message.
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        said = N_("arguments is not valid JSON: {reason} (line {line}, column {column})")
        raise ValueError(_(said, reason=error.msg, line=error.lineno, column=error.colno)) from error
    except RecursionError:  # json recurses per level: a hundred thousand brackets are no arguments
        raise ValueError(_("arguments nest too deeply to be read")) from None
    if not isinstance(value, dict):
        raise ValueError(_("arguments must be a JSON object {{...}}, found {kind}", kind=json_kind(value)))
    return value


class EncoderPlayground(ShownAsWidget):
    """The widgets are public so tests (and curious learners) can set values and ``.click()`` without a browser."""

    def __init__(self, history: Sequence[HistoryItem] = ()) -> None:
        self._history: list[HistoryItem] = list(history)
        build_provider_messages(self._history)  # refuse an unencodable starting history here, not on first render

        self.kind = widgets.ToggleButtons(options=list(ITEM_KINDS), value="Message", description=_("Item type"))

        self.role = widgets.Dropdown(options=[role.value for role in MessageRole], value="user", description="role")
        self.message_content = widgets.Textarea(value="", description="content", placeholder=_("Read README.md"))
        self.message_fields = widgets.VBox([self.role, self.message_content])

        self.call_id = widgets.Text(value="call_1", description="call_id")
        self.tool_name = widgets.Text(value="read_file", description="tool_name")
        self.arguments = widgets.Textarea(value='{"path": "README.md"}', description="arguments")
        self.call_fields = widgets.VBox([self.call_id, self.tool_name, self.arguments])

        self.result_call_id = widgets.Text(value="call_1", description="call_id")
        self.result_content = widgets.Textarea(value="", description="content", placeholder="# codeagent-lite")
        self.is_error = widgets.Checkbox(value=False, description="is_error")
        self.result_fields = widgets.VBox([self.result_call_id, self.result_content, self.is_error])

        self.add_button = widgets.Button(description=_("Add to history"), button_style="primary")
        self.remove_button = widgets.Button(description=_("Remove last"))
        self.clear_button = widgets.Button(description=_("Clear"))
        self.status = widgets.Label(value="")
        self.view = widgets.HTML(value="")

        self.kind.observe(lambda change: self._show_fields_for(str(change["new"])), names="value")
        self.add_button.on_click(lambda _button: self.add())
        self.remove_button.on_click(lambda _button: self.remove_last())
        self.clear_button.on_click(lambda _button: self.clear())

        self._fields = {"Message": self.message_fields, "ToolCall": self.call_fields, "ToolResult": self.result_fields}
        buttons = widgets.HBox([self.add_button, self.remove_button, self.clear_button])
        self.widget = widgets.VBox([self.kind, *self._fields.values(), buttons, self.status, self.view])
        self._show_fields_for(ITEM_KINDS[0])
        self._refresh()

    @property
    def history(self) -> tuple[HistoryItem, ...]:
        return tuple(self._history)

    @property
    def messages(self) -> tuple[ProviderMessage, ...]:
        return build_provider_messages(self._history)

    @property
    def shown_text(self) -> str:
        return format_conversion(self._history)

    def build_item(self) -> HistoryItem:
        """ValueError with a learner-readable message if the form is invalid."""
        kind = str(self.kind.value)
        if kind == "Message":
            return Message(role=MessageRole(str(self.role.value)), content=str(self.message_content.value))
        if kind == "ToolCall":
            return ToolCall(
                call_id=str(self.call_id.value),
                tool_name=str(self.tool_name.value),
                arguments=_parse_arguments(str(self.arguments.value)),
            )
        return ToolResult(
            call_id=str(self.result_call_id.value),
            content=str(self.result_content.value),
            is_error=bool(self.is_error.value),
        )

    def add(self) -> bool:
        """The status line says what happened either way."""
        try:
            item = self.build_item()
        except ValueError as error:
            self.status.value = _("✘ Not added: {error}", error=error)
            return False
        try:
            build_provider_messages([item])
        except ValueError as error:
            # json.dumps(allow_nan=False) refuses NaN and Infinity: show the refusal instead of crashing.
            self.status.value = _(
                "✘ Not added: the encoder refuses it ({error}; NaN and Infinity are not JSON)", error=error
            )
            return False
        self._history.append(item)
        self.status.value = _("✔ Added {kind} as item #{number}.", kind=type(item).__name__, number=len(self._history))
        self._refresh()
        return True

    def remove_last(self) -> None:
        if not self._history:
            self.status.value = _("Nothing to remove: the history is empty.")
            return
        removed = self._history.pop()
        self.status.value = _(
            "Removed {kind} (was item #{number}).", kind=type(removed).__name__, number=len(self._history) + 1
        )
        self._refresh()

    def clear(self) -> None:
        self._history.clear()
        self.status.value = _("History cleared.")
        self._refresh()

    def _show_fields_for(self, kind: str) -> None:
        for box_kind, box in self._fields.items():
            box.layout.display = "" if box_kind == kind else "none"

    def _refresh(self) -> None:
        self.view.value = f"<pre style='white-space: pre-wrap'>{escape_html(self.shown_text)}</pre>"
