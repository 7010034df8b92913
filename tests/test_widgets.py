"""The parser playground's logic, tested without a kernel.

Outside a kernel ipywidgets talk to a dummy comm, but setting ``.value`` still fires
observers, which is all the playground's behaviour consists of. The HTML ladder is
read back with the standard library's HTML parser, the same way the browser test
reads it through CSS classes and ``data-*`` attributes.
"""

from __future__ import annotations

import asyncio
import functools
import subprocess
import sys
import threading
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any

import IPython.display
import pytest

from codeagent_lite import FinalAnswer, ToolCall, ValidationLayer, diagnose, format_ladder
from codeagent_lite.workbook.parser_playground import (
    PRESETS,
    ParserPlayground,
    render_ladder_html,
    show_static_ladders,
    static_ladders_text,
)
from codeagent_lite.workbook.widget_view import live_widget_text


def off_any_event_loop(test: Callable[..., None]) -> Callable[..., None]:
    """Run the test in a thread of its own, where no event loop runs.

    The parser playground times typing pauses on the running event loop (the kernel's, in a notebook). An earlier
    test of the same session can leave a loop marked as running in the main thread that never runs a timer
    (pytest-playwright's sync API does), and these tests would then wait for a pause that never ends.
    """

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        failures: list[BaseException] = []

        def body() -> None:
            try:
                test(*args, **kwargs)
            except BaseException as failure:  # handed to the main thread, where pytest reports it
                failures.append(failure)

        thread = threading.Thread(target=body, name=test.__name__)
        thread.start()
        thread.join(120)
        assert not thread.is_alive(), f"{test.__name__} did not finish within 120 s"
        if failures:
            raise failures[0]

    return run


# preset name -> the layer that rejects it, or the action type it becomes.
EXPECTED_VERDICTS: dict[str, ValidationLayer | type] = {
    "clean tool call": ToolCall,
    "clean final answer (Chinese text)": FinalAnswer,
    "fenced ```json block": ValidationLayer.JSON_SYNTAX,
    "prose before the JSON": ValidationLayer.JSON_SYNTAX,
    "prose after the JSON": ValidationLayer.JSON_SYNTAX,
    "two JSON objects": ValidationLayer.JSON_SYNTAX,
    "duplicate key": ValidationLayer.JSON_SYNTAX,
    "NaN in arguments": ValidationLayer.JSON_SYNTAX,
    "cut-off reply": ValidationLayer.JSON_SYNTAX,
    "single quotes": ValidationLayer.JSON_SYNTAX,
    "trailing comma": ValidationLayer.JSON_SYNTAX,
    "top-level array": ValidationLayer.TOP_LEVEL_OBJECT,
    'unknown type "tool_result"': ValidationLayer.ACTION_TYPE,
    "missing tool_name": ValidationLayer.FIELDS,
    "arguments as a string": ValidationLayer.FIELDS,
    "blank call_id": ValidationLayer.FIELDS,
}

# The code each rejection must carry, so each preset shows the case its name promises.
EXPECTED_CODES = {
    "fenced ```json block": "code_fence",
    "prose before the JSON": "prose_around",
    "prose after the JSON": "prose_around",
    "two JSON objects": "two_values",
    "duplicate key": "duplicate_key",
    "NaN in arguments": "not_finite",
    "cut-off reply": "cut_off",
    "single quotes": "single_quotes",
    "trailing comma": "trailing_comma",
    "top-level array": "not_an_object",
    'unknown type "tool_result"': "unknown_type",
    "missing tool_name": "missing_field",
    "arguments as a string": "wrong_type",
    "blank call_id": "blank",
}

HOSTILE_TEXTS = [
    "<script>alert(1)</script>",
    '{"type": "final_answer", "content": "<script>alert(1)</script>"}',
    '{"type": "final_answer", "content": "<img src=x onerror=alert(1)>"}',
    '{"type": "tool_call", "call_id": "\\"><b>x</b>", "tool_name": "t", "arguments": {"a": "<i>"}}',
    '{"type": "<script>", "x": 1}',
    '{"type": "final_answer", "<script>": 1}',
]


class LadderReader(HTMLParser):
    """Collects the ladder's rows, its verdict and its text, and checks every div closes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[dict[str, str]] = []
        self.actions: list[dict[str, str]] = []
        self.rejections: list[dict[str, str]] = []
        self.tags: list[str] = []
        self.text_parts: list[str] = []
        self.open_divs = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        attributes = {name: value or "" for name, value in attrs}
        classes = attributes.get("class", "").split()
        if tag == "div":
            self.open_divs += 1
        if "cal-layer" in classes:
            self.rows.append(attributes)
        if "cal-action" in classes:
            self.actions.append(attributes)
        if "cal-rejected" in classes:
            self.rejections.append(attributes)

    def handle_endtag(self, tag: str) -> None:
        if tag == "div":
            self.open_divs -= 1

    def handle_data(self, data: str) -> None:
        self.text_parts.append(data)

    @property
    def text(self) -> str:
        return "".join(self.text_parts)


def read_ladder(markup: str) -> LadderReader:
    reader = LadderReader()
    reader.feed(markup)
    reader.close()
    assert reader.open_divs == 0, "every <div> of the ladder must be closed"
    return reader


def expected_statuses(verdict: ValidationLayer | type) -> list[tuple[str, str, str]]:
    """(data-layer, data-status, class word) for the four rows of a given verdict."""
    failed = int(verdict) if isinstance(verdict, ValidationLayer) else 5
    rows = []
    for layer in range(1, 5):
        if layer < failed:
            rows.append((str(layer), "passed", "cal-layer-passed"))
        elif layer == failed:
            rows.append((str(layer), "failed", "cal-layer-failed"))
        else:
            rows.append((str(layer), "not reached", "cal-layer-not-reached"))
    return rows


def row_statuses(reader: LadderReader) -> list[tuple[str, str, str]]:
    result = []
    for row in reader.rows:
        status_classes = [c for c in row["class"].split() if c.startswith("cal-layer-")]
        assert len(status_classes) == 1, row
        result.append((row["data-layer"], row["data-status"], status_classes[0]))
    return result


# --------------------------------------------------------------------------- presets


def test_presets_are_ordered_and_each_has_a_verdict() -> None:
    assert 10 <= len(PRESETS) <= 16
    assert list(PRESETS) == list(EXPECTED_VERDICTS), "every preset needs a row in the verdict table, in order"
    layers = [int(v) if isinstance(v, ValidationLayer) else 0 for v in EXPECTED_VERDICTS.values()]
    assert layers == sorted(layers), "presets are listed accepted first, then by the layer that stops them"


@pytest.mark.parametrize("name", list(EXPECTED_VERDICTS))
def test_each_preset_shows_its_case(name: str) -> None:
    verdict = EXPECTED_VERDICTS[name]
    diagnosis = diagnose(PRESETS[name])
    if isinstance(verdict, ValidationLayer):
        assert diagnosis.rejected_by == verdict
        assert diagnosis.error is not None
        assert diagnosis.error.code == EXPECTED_CODES[name]
    else:
        assert isinstance(diagnosis.action, verdict)


def test_chinese_preset_keeps_its_text() -> None:
    action = diagnose(PRESETS["clean final answer (Chinese text)"]).action
    assert isinstance(action, FinalAnswer)
    assert "从零搭建 Code Agent" in action.content


# --------------------------------------------------------------------------- the widget


def test_initial_state_is_the_clean_tool_call() -> None:
    playground = ParserPlayground()
    assert playground.preset.value == "clean tool call"
    assert list(playground.preset._options_values) == list(PRESETS)
    assert playground.text.value == PRESETS["clean tool call"]
    assert playground.diagnosis.accepted
    assert playground.diagnosis.action == ToolCall(
        call_id="call_1", tool_name="read_file", arguments={"path": "README.md"}
    )
    reader = read_ladder(playground.ladder.value)
    assert row_statuses(reader) == expected_statuses(ToolCall)
    assert [a["data-action"] for a in reader.actions] == ["ToolCall"]
    assert reader.rejections == []


def test_widget_parts_update_as_the_learner_types() -> None:
    playground = ParserPlayground()
    assert playground.text.continuous_update is True
    assert list(playground.widget.children) == [playground.preset, playground.text, playground.ladder]


def test_an_other_initial_preset_and_an_unknown_one() -> None:
    playground = ParserPlayground("top-level array")
    assert playground.diagnosis.rejected_by == ValidationLayer.TOP_LEVEL_OBJECT
    with pytest.raises(KeyError, match="no such preset"):
        ParserPlayground("no such preset")


@pytest.mark.parametrize("name", [n for n in EXPECTED_VERDICTS if n != "clean tool call"])
@off_any_event_loop
def test_choosing_a_preset_loads_it_and_renders_its_ladder(name: str) -> None:
    playground = ParserPlayground()
    playground.preset.value = name
    verdict = EXPECTED_VERDICTS[name]
    assert playground.text.value == PRESETS[name]
    assert playground.preset.value == name
    reader = read_ladder(playground.ladder.value)
    assert row_statuses(reader) == expected_statuses(verdict)
    if isinstance(verdict, ValidationLayer):
        assert playground.diagnosis.rejected_by == verdict
        assert reader.actions == []
        assert [r["data-layer"] for r in reader.rejections] == [str(int(verdict))]
        error = playground.diagnosis.error
        assert error is not None
        # The failed row shows the message and what was expected and found (as text, unescaped).
        assert error.message in reader.text
        assert f"expected: {error.expected}" in reader.text
        assert f"found: {error.found}" in reader.text
    else:
        assert [a["data-action"] for a in reader.actions] == [verdict.__name__]
        assert reader.rejections == []


@off_any_event_loop
def test_typing_updates_the_ladder_live() -> None:
    playground = ParserPlayground()
    playground.text.value = '{"type": "final_answer"'
    assert playground.diagnosis.rejected_by == ValidationLayer.JSON_SYNTAX
    assert row_statuses(read_ladder(playground.ladder.value)) == expected_statuses(ValidationLayer.JSON_SYNTAX)
    assert "cut off" in read_ladder(playground.ladder.value).text

    playground.text.value = '{"type": "final_answer"}'
    assert playground.diagnosis.rejected_by == ValidationLayer.FIELDS
    assert "missing content" in read_ladder(playground.ladder.value).text

    playground.text.value = '{"type": "final_answer", "content": "done"}'
    reader = read_ladder(playground.ladder.value)
    assert playground.diagnosis.action == FinalAnswer(content="done")
    assert row_statuses(reader) == expected_statuses(FinalAnswer)
    assert [a["data-action"] for a in reader.actions] == ["FinalAnswer"]
    assert "FinalAnswer(content='done')" in reader.text


@off_any_event_loop
def test_editing_clears_the_preset_so_it_can_be_chosen_again() -> None:
    playground = ParserPlayground()
    playground.preset.value = "duplicate key"
    playground.text.value = "[]"
    assert playground.preset.value is None
    assert playground.text.value == "[]"  # the learner's text is kept
    playground.preset.value = "duplicate key"
    assert playground.text.value == PRESETS["duplicate key"]
    assert playground.diagnosis.rejected_by == ValidationLayer.JSON_SYNTAX


def test_the_playground_displays_as_its_vbox(monkeypatch: pytest.MonkeyPatch) -> None:
    playground = ParserPlayground()
    bundle = playground._repr_mimebundle_()
    view = bundle["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"] == playground.widget.model_id
    assert bundle["text/plain"] == live_widget_text("ParserPlayground", "en")  # not the VBox's 110-character repr

    shown: list[tuple[tuple[object, ...], dict[str, object]]] = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kwargs: shown.append((objs, kwargs)))
    playground._ipython_display_()
    assert shown == [((bundle,), {"raw": True})]


# --------------------------------------------------------------------------- rendering


@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_model_text_is_escaped_never_markup(text: str) -> None:
    reader = read_ladder(render_ladder_html(diagnose(text)))
    # Only the ladder's own tags exist: nothing from the model text became an element.
    assert set(reader.tags) <= {"div", "span", "br"}
    assert len(reader.rows) == 4


def test_escaped_text_is_still_shown() -> None:
    markup = render_ladder_html(diagnose('{"type": "final_answer", "content": "<script>alert(1)</script>"}'))
    assert "<script>" not in markup
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markup
    assert "<script>alert(1)</script>" in read_ladder(markup).text


def test_rejected_ladder_marks_and_titles() -> None:
    reader = read_ladder(render_ladder_html(diagnose("[1, 2]")))
    text = reader.text
    assert "✔ layer 1 (JSON syntax)" in text
    assert "✘ layer 2 (top-level object)" in text
    assert "· layer 3 (action type)" in text
    assert "· layer 4 (fields and types)" in text
    assert "⇒ rejected at layer 2 (top-level object)" in text


def test_the_static_ladders_are_the_check_command_ladders() -> None:
    for name, raw in PRESETS.items():
        assert static_ladders_text([name]).endswith("\n" + format_ladder(diagnose(raw)))


def test_static_ladders_show_text_and_ladder(capsys: pytest.CaptureFixture[str]) -> None:
    names = ["clean tool call", "duplicate key"]
    text = static_ladders_text(names)
    assert text.startswith("--- clean tool call\n    " + PRESETS["clean tool call"])
    assert format_ladder(diagnose(PRESETS["duplicate key"])) in text
    show_static_ladders(names)
    assert capsys.readouterr().out == text + "\n"
    with pytest.raises(KeyError, match="unknown preset"):
        static_ladders_text(["nope"])


def test_package_import_does_not_load_ipywidgets() -> None:
    code = "import sys, codeagent_lite; sys.exit('ipywidgets' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@off_any_event_loop
def test_the_ladder_waits_for_a_pause_in_typing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Typed on the kernel's event loop, a burst of keystrokes is parsed once, after the pause."""
    from codeagent_lite.workbook import parser_playground

    calls: list[str] = []
    real = parser_playground.diagnose

    def counting(text: str) -> Any:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(parser_playground, "diagnose", counting)
    playground = ParserPlayground(pause_seconds=0.05)
    calls.clear()
    final = '{"type": "final_answer", "content": "done"}'

    async def type_it() -> None:
        for end in range(1, len(final) + 1):
            playground.text.value = final[:end]
            await asyncio.sleep(0)
        assert calls == []  # still typing: nothing parsed yet
        await asyncio.sleep(0.2)

    asyncio.run(type_it())
    assert calls == [final]
    assert playground.diagnosis.action == FinalAnswer(content="done")


@off_any_event_loop
def test_without_an_event_loop_each_change_is_parsed_at_once() -> None:
    playground = ParserPlayground(pause_seconds=10)
    playground.text.value = "[]"
    assert playground.diagnosis.rejected_by == ValidationLayer.TOP_LEVEL_OBJECT


def test_each_refused_row_shows_the_errors_code_and_params_as_data() -> None:
    html = render_ladder_html(diagnose(PRESETS["duplicate key"]))
    assert 'data-code="duplicate_key"' in html
    assert "duplicate_key (key=&#x27;tool_name&#x27;)" in html
