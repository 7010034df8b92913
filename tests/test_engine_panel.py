"""Notebook 06 without a live model: the state report, the progress bar, and the recorded outputs.

The recorded outputs must come from a real run of the notebook, never from a hand: the test
below holds the data file to the notebook's saved outputs, which nbval in turn holds to a fresh
live run. The notebook itself is run here in the states a learner meets (build failed, build
running), with the engine's modules made missing in the kernel by a ``sitecustomize`` file.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from engine_build_script import engine_build
from nbclient import NotebookClient
from test_local_engine import HOLD_LOCK, fake_pip

from codeagent_lite.providers.local_engine import ENGINE_MODULES, EngineState, engine_status
from codeagent_lite.workbook.engine_panel import (
    RECORDED_BOTTOM,
    RECORDED_PATH,
    RECORDED_TOP,
    EngineMonitor,
    RecordedRun,
    engine_report,
    load_recorded,
    recorded,
    recorded_cells_of,
)
from codeagent_lite.workbook.language import Language

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "en" / "06_real_model.ipynb"
SAMPLE = RecordedRun(
    source={"notebooks": "n.ipynb", "engine": "1.0"},
    editions={"en": {"table": "a | b\n1 | 2\n"}, "zh": {"table": "甲 | 乙\n1 | 2\n"}},
)
TIMING_CELL = re.compile(r"^.*\| *(#\.## s|\d+\.\d\d s) \| *(##\.# tok/s|\d+\.\d tok/s)$", re.MULTILINE)


def sanitize(text: str) -> str:
    """The same masking nbval applies (tests/nbval_sanitize.cfg)."""
    config = configparser.ConfigParser()
    config.read(ROOT / "tests" / "nbval_sanitize.cfg", encoding="utf-8")
    for section in config.sections():
        text = re.sub(config[section]["regex"], config[section]["replace"], text)
    return text


def stdout_of(cell: Any) -> str:
    texts = [output.get("text", "") for output in cell.get("outputs", []) if output.get("name") == "stdout"]
    return "".join(text if isinstance(text, str) else "".join(text) for text in texts)


@pytest.fixture
def blocked_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Kernels started from now on cannot import the engine; the engine folder is ``tmp_path/engine``."""
    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in ENGINE_MODULES), encoding="utf-8"
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(block), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("CAL_ENGINE_DIR", str(tmp_path / "engine"))
    for name in ENGINE_MODULES:
        monkeypatch.setitem(sys.modules, name, None)
    return tmp_path / "engine"


def run_notebook(path: Path = NOTEBOOK) -> Any:
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return notebook


# --------------------------------------------------------------------------- recorded outputs


def test_a_recorded_output_is_framed_and_labelled() -> None:
    lines = recorded("table", SAMPLE).splitlines()
    assert lines[0] == f"{RECORDED_TOP}: from a real run of this notebook (engine 1.0)"
    assert lines[1:3] == ["│ a | b", "│ 1 | 2"]
    assert lines[-1] == RECORDED_BOTTOM


def test_each_edition_shows_its_own_recording(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAL_LANG", "zh")
    assert recorded("table", SAMPLE).splitlines()[1] == "│ 甲 | 乙"


def test_an_unknown_key_names_the_recorded_ones() -> None:
    with pytest.raises(KeyError, match="no recorded output named 'tabel'; recorded: table"):
        recorded("tabel", SAMPLE)


@pytest.mark.parametrize(("language", "ready"), [("en", "local engine: ready"), ("zh", "本地引擎：已就绪")])
def test_the_recording_is_the_notebooks_saved_live_run(language: Language, ready: str) -> None:
    """Re-record with scripts/record_real_model_outputs.py when this fails; never edit the file by hand."""
    path = ROOT / "notebooks" / language / NOTEBOOK.name
    notebook = json.loads(path.read_text(encoding="utf-8"))
    assert ready in stdout_of(notebook["cells"][2]), f"the saved {language} notebook 06 must be a live run"
    saved = recorded_cells_of(notebook)
    run = load_recorded()
    cells = run.cells(language)
    assert set(cells) == set(saved), "every recorded(...) cell has a recording, and only those"
    for key, text in saved.items():
        assert sanitize(cells[key]) == sanitize(text), f"recorded {key!r} differs from the saved live output"
    assert run.source["llama-cpp-python"] == "0.3.36"
    assert RECORDED_PATH.is_relative_to(ROOT / "codeagent_lite")  # shipped with the package


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_timing_table_is_live_and_recorded_with_masked_seconds_only(language: Language) -> None:
    notebook = json.loads((ROOT / "notebooks" / language / NOTEBOOK.name).read_text(encoding="utf-8"))
    live = recorded_cells_of(notebook)["timing"]
    kept = load_recorded().cells(language)["timing"]
    for text in (live, kept):
        rows = TIMING_CELL.findall(text)
        assert len(rows) == 10, text  # 4 tasks x 2 modes, then a total row per mode
        masked = sanitize(text)
        assert len(TIMING_CELL.findall(masked)) == 10 and not re.search(r"\d\.\d\d s|\d\.\d tok/s", masked)
        *table, ratio = text.splitlines()
        out_tokens = [line.split(" | ")[2].strip() for line in table[2:]]
        assert [line.split(" | ")[2].strip() for line in masked.splitlines()[2:-1]] == out_tokens  # still compared
        assert re.search(r"×\d\.\d\d", ratio) and "×#.##" in masked.splitlines()[-1]  # the speeds' ratio, masked


def test_recorded_cells_are_read_from_the_cells_that_ask_for_them() -> None:
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": 'recorded("prose")'},
            {
                "cell_type": "code",
                "source": ["if LIVE:\n", "    print(2)\n", "else:\n", '    print(recorded("two"))'],
                "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": ["2\n"]},
                    {"output_type": "stream", "name": "stderr", "text": "noise"},
                ],
            },
            {"cell_type": "code", "source": "print(1)", "outputs": []},
        ]
    }
    assert recorded_cells_of(notebook) == {"two": "2\n"}


# --------------------------------------------------------------------------- the report and the monitor


def test_the_report_of_a_failed_build_names_cause_fix_retry_and_recordings(
    blocked_kernel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", "/bin/false")
    monkeypatch.setenv("CXX", "/bin/false")
    engine_build.build_engine(blocked_kernel, python=fake_pip(tmp_path, ["ERROR: Failed building wheel"], 1))
    text = engine_report(engine_status(blocked_kernel))
    assert text.startswith("local engine: impossible on this machine for now: no working C/C++ compiler")
    assert "Then retry with `make local`" in text
    assert "    ERROR: Failed building wheel" in text
    assert text.endswith("every model cell below shows RECORDED output from a real run of this notebook.")


def test_the_monitor_follows_a_build_to_its_end(
    blocked_kernel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked_kernel.mkdir()
    (blocked_kernel / "state.json").write_text('{"started": 0, "returncode": null}', encoding="utf-8")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(blocked_kernel / "build.lock"), "60"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        monitor = EngineMonitor(blocked_kernel)
        assert monitor.status.state is EngineState.BUILDING
        assert monitor.bar.bar_style == "info" and "building in the background" in monitor.label.value
    finally:
        holder.kill()
        holder.wait()
    (blocked_kernel / "state.json").write_text('{"started": 0, "finished": 5, "returncode": 0}', encoding="utf-8")
    site = tmp_path / "site"  # the build installed the packages (stand-ins: found, never imported)
    for name in ENGINE_MODULES:
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text("", encoding="utf-8")
        del sys.modules[name]
    monkeypatch.syspath_prepend(str(site))
    assert monitor.refresh().ready
    assert monitor.bar.value == 1.0 and monitor.bar.bar_style == "success"
    assert "Run the cells again (no restart needed)" in monitor.label.value


# --------------------------------------------------------------------------- the notebook in each state


@pytest.mark.parametrize(
    ("language", "failed", "cause"),
    [
        ("en", "impossible on this machine", "no working C/C++ compiler"),
        ("zh", "这台机器暂时用不了", "没有能用的 C/C++ 编译器"),
    ],
)
def test_notebook_06_teaches_with_recordings_when_the_build_failed(
    blocked_kernel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, language: Language, failed: str, cause: str
) -> None:
    monkeypatch.setenv("CC", "/bin/false")
    monkeypatch.setenv("CXX", "/bin/false")
    monkeypatch.setenv("CAL_LANG", language)  # for recorded() below; the kernel reads its folder the same way
    engine_build.build_engine(blocked_kernel, python=fake_pip(tmp_path, ["ERROR: Failed building wheel"], 1))
    notebook = run_notebook(ROOT / "notebooks" / language / NOTEBOOK.name)
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    setup = stdout_of(notebook.cells[2])
    assert failed in setup and cause in setup
    assert "make local" in setup
    run = load_recorded()
    shown = {}
    for cell in notebook.cells:
        for key in recorded_cells_of({"cells": [cell]}):
            shown[key] = stdout_of(cell)
    assert set(shown) == set(run.cells(language))
    assert "timing" in shown
    for key, text in shown.items():
        assert text == recorded(key, run) + "\n", key


def test_notebook_06_shows_a_running_build(blocked_kernel: Path) -> None:
    blocked_kernel.mkdir()
    (blocked_kernel / "state.json").write_text('{"started": 0, "returncode": null}', encoding="utf-8")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(blocked_kernel / "build.lock"), "120"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        notebook = run_notebook()
    finally:
        holder.kill()
        holder.wait()
    setup = stdout_of(notebook.cells[2])
    assert setup.startswith("local engine: building in the background")
    assert "no restart is needed" in setup
    monitor_outputs = notebook.cells[4].outputs
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in monitor_outputs)
    assert RECORDED_TOP in stdout_of(notebook.cells[16])
