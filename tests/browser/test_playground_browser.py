"""The parser playground in a real browser: JupyterLab runs 04_action_parsing, chromium types into the widget.

The widget's logic is tested without a kernel elsewhere; this test checks what only a browser
can: that the notebook really shows the playground, that text typed into the page reaches the
kernel, and that the ladder the learner sees follows it (a rejected text stops at the right
layer, a valid one becomes the right action). It finds the widget through the CSS classes and
``data-*`` attributes that ``codeagent_lite/widgets.py`` promises for exactly this purpose.
A screenshot of the final state lands in pytest-playwright's output folder (``test-results/``).

The Chinese edition is also checked for what a Chinese learner sees around the widget: JupyterLab's
own menu bar in Chinese (its zh-CN language pack, set as ``make lab`` sets it), the notebook's
Chinese prose on the page, and Chinese characters drawn as glyphs, not as the empty boxes chromium
draws when the machine has no CJK font (``scripts/ensure_browser.py`` installs one).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from codeagent_lite.workbook.parser_playground import PRESETS
from codeagent_lite.workbook.words import _

pytestmark = pytest.mark.browser

NOTEBOOK = "04_action_parsing.ipynb"
EDITIONS = ("en", "zh")  # the same playground in both editions of the workbook
PLAYGROUND_INPUT = ".jp-OutputArea-output .widget-textarea.cal-playground-input textarea"
PLAYGROUND_LADDER = ".jp-OutputArea-output .widget-html.cal-playground-ladder .widget-html-content"
PLAYGROUND_PRESET = ".jp-OutputArea-output .widget-dropdown.cal-playground-preset select"

# Generous: the machine has 2 cores shared with other work; typical phases take 0.3-4 s.
APP_TIMEOUT_MS = 90_000
LADDER_TIMEOUT_MS = 20_000

BLANK_CALL_ID_PRESET = "blank call_id"
FENCED_REPLY = '```json\n{"type": "final_answer", "content": "42"}\n```'
VALID_TOOL_CALL = (
    '{"type": "tool_call", "call_id": "call_browser_7", "tool_name": "read_file", "arguments": {"path": "notes.md"}}'
)

NOTEBOOK_IS_OPEN = """(name) => {
    const widget = window.jupyterapp?.shell?.currentWidget;
    return !!(widget && widget.context && widget.context.path === name && widget.sessionContext);
}"""
WAIT_FOR_SESSION = """async () => {
    const widget = window.jupyterapp.shell.currentWidget;
    await widget.context.ready;
    await widget.sessionContext.ready;
}"""
KERNEL_IS_IDLE = "() => window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'"
KERNEL_STATE = """() => {
    const context = window.jupyterapp?.shell?.currentWidget?.sessionContext;
    const kernel = context?.session?.kernel;
    const dialogs = Array.from(document.querySelectorAll('.jp-Dialog')).map((d) => d.innerText);
    return {kernelName: kernel?.name ?? null, status: kernel?.status ?? null, dialogs: dialogs};
}"""
RUN_ALL_CELLS = "async () => await window.jupyterapp.commands.execute('notebook:run-all-cells')"
MENU_LABELS = (
    "() => Array.from(document.querySelectorAll('#jp-menu-panel .lm-MenuBar-itemLabel')).map((n) => n.innerText)"
)
MENUS = {"en": ("File", "Edit", "Kernel"), "zh": ("文件", "编辑", "内核")}
PROSE = {"en": "Action parsing", "zh": "四、行动解析"}
# Two different Han characters drawn in the page's own font: with a CJK font they differ; without one chromium
# draws the same empty box for both.
HAN_GLYPHS_DIFFER = """() => {
    const canvas = document.createElement('canvas');
    canvas.width = 64;
    canvas.height = 40;
    const context = canvas.getContext('2d');
    context.font = `28px ${getComputedStyle(document.body).fontFamily}`;
    const draw = (character) => {
        context.clearRect(0, 0, canvas.width, canvas.height);
        context.fillText(character, 4, 32);
        return Array.from(context.getImageData(0, 0, canvas.width, canvas.height).data).join(',');
    };
    return draw('中') !== draw('国');
}"""
# From the notebook's model, not the page: JupyterLab 4 renders only the cells in view, so an error further down
# has no DOM node to read.
ERROR_OUTPUTS = """() => {
    const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
    const found = [];
    for (let index = 0; index < cells.length; index++) {
        const cell = cells.get(index);
        if (cell.type !== 'code') continue;
        for (const output of cell.toJSON().outputs) {
            if (output.output_type === 'error') found.push(`cell ${index}: ${output.ename}: ${output.evalue}`);
            const stderr = output.output_type === 'stream' && output.name === 'stderr';
            if (stderr) found.push(`cell ${index}: ${output.text}`);
        }
    }
    return found;
}"""


def open_notebook_and_run_all(page: Any, lab: Any, notebook: str, timings: dict[str, float]) -> None:
    started = time.monotonic()
    page.goto(lab.url(f"/lab/tree/{notebook}"))
    page.wait_for_function(NOTEBOOK_IS_OPEN, arg=notebook, timeout=APP_TIMEOUT_MS)
    page.evaluate(WAIT_FOR_SESSION)
    timings["page to app"] = time.monotonic() - started

    started = time.monotonic()
    try:
        page.wait_for_function(KERNEL_IS_IDLE, timeout=APP_TIMEOUT_MS)
    except Exception as error:
        pytest.fail(f"the python3 kernel never became idle: {page.evaluate(KERNEL_STATE)} ({error})")
    timings["kernel idle"] = time.monotonic() - started

    started = time.monotonic()
    finished_cleanly = page.evaluate(RUN_ALL_CELLS)
    timings["run all"] = time.monotonic() - started
    assert finished_cleanly is True, f"a cell of {notebook} failed: {page.evaluate(ERROR_OUTPUTS)}"


def check_the_screen_speaks(page: Any, edition: str, skip_or_fail: Any) -> None:
    """JupyterLab's menus and the notebook's prose are in the edition's language, and Chinese is drawn as glyphs."""
    from playwright.sync_api import expect

    labels = page.evaluate(MENU_LABELS)
    for menu in MENUS[edition]:
        assert menu in labels, f"JupyterLab's menu bar shows {labels}, not {menu!r} ({edition} edition)"
    expect(page.locator(".jp-RenderedMarkdown").first).to_contain_text(PROSE[edition])
    if edition == "zh" and not page.evaluate(HAN_GLYPHS_DIFFER):
        skip_or_fail("no CJK font: chromium draws every Chinese character as the same empty box (fonts-wqy-microhei)")


def layer_row(ladder: Any, layer: int, status: str) -> Any:
    return ladder.locator(f'.cal-layer[data-layer="{layer}"][data-status="{status}"]')


def expect_rejected_at(ladder: Any, layer: int, message_part: str) -> None:
    """The ladder shows ``layer`` failed with a message, the layers before it passed, the ones after not reached."""
    from playwright.sync_api import expect

    expect(layer_row(ladder, layer, "failed")).to_have_count(1, timeout=LADDER_TIMEOUT_MS)
    expect(layer_row(ladder, layer, "failed")).to_contain_text(message_part)
    for earlier in range(1, layer):
        expect(layer_row(ladder, earlier, "passed")).to_have_count(1)
    for later in range(layer + 1, 5):
        expect(layer_row(ladder, later, "not reached")).to_have_count(1)
    expect(ladder.locator(".cal-action")).to_have_count(0)


@pytest.mark.parametrize("edition", EDITIONS)
def test_playground_ladder_follows_what_the_learner_types(
    page: Any, jupyter_lab: Any, output_path: str, edition: str, browser_skip_or_fail: Any
) -> None:
    from playwright.sync_api import expect

    timings: dict[str, float] = {}
    screenshot_dir = Path(output_path)
    screenshot_dir.mkdir(parents=True, exist_ok=True)
    try:
        open_notebook_and_run_all(page, jupyter_lab, f"{edition}/{NOTEBOOK}", timings)
        check_the_screen_speaks(page, edition, browser_skip_or_fail)

        text_box = page.locator(PLAYGROUND_INPUT)
        ladder = page.locator(PLAYGROUND_LADDER)
        expect(text_box).to_have_count(1, timeout=APP_TIMEOUT_MS)
        expect(ladder).to_have_count(1)
        text_box.scroll_into_view_if_needed()

        started = time.monotonic()
        # Layer 1: a fenced block is not bare JSON.
        text_box.fill(FENCED_REPLY)
        expect_rejected_at(ladder, 1, "code fence")

        # Layer 2: JSON, but an array; typed key by key, as a learner would.
        text_box.fill("")
        text_box.press_sequentially("[1, 2]")
        expect_rejected_at(ladder, 2, "array")

        # Layer 4, through the preset drop-down rather than typing.
        assert BLANK_CALL_ID_PRESET in PRESETS, (
            f"preset {BLANK_CALL_ID_PRESET!r} is gone from codeagent_lite.workbook.parser_playground"
        )
        # The drop-down names each preset in the edition's language (空白的 call_id in the Chinese one).
        page.locator(PLAYGROUND_PRESET).select_option(label=_(BLANK_CALL_ID_PRESET, edition))
        expect_rejected_at(ladder, 4, "call_id")

        # All four layers pass: the ladder names the ToolCall with its call_id.
        text_box.fill(VALID_TOOL_CALL)
        action = ladder.locator('.cal-action[data-action="ToolCall"]')
        expect(action).to_have_count(1, timeout=LADDER_TIMEOUT_MS)
        expect(action).to_contain_text("call_browser_7")
        expect(action).to_contain_text("read_file")
        for layer in range(1, 5):
            expect(layer_row(ladder, layer, "passed")).to_have_count(1)
        timings["type to verdicts"] = time.monotonic() - started
    except BaseException:
        page.screenshot(path=str(screenshot_dir / f"playground-{edition}-failure.png"), full_page=True)
        print(f"screenshot: {screenshot_dir / f'playground-{edition}-failure.png'}")
        ladders = page.locator(PLAYGROUND_LADDER)
        if ladders.count() == 1:
            print(f"the ladder showed:\n{ladders.inner_text(timeout=5_000)}")
        raise
    ladder.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot_dir / f"playground-{edition}.png"))
    print("phase times: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in timings.items()))
