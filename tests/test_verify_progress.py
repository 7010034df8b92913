"""verify shows progress while it runs, and a notebook's saved outputs keep no trace of it.

The notebook test runs a real kernel (nbclient), watches what the kernel sends on iopub while the
cell runs, and reads the outputs the cell keeps: what the cell printed before verify is left alone,
and verify's only output is its report.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "my_json_text"


class _Watching(NotebookClient):  # type: ignore[misc]
    """Keeps every iopub message of the run (the progress a learner sees comes and goes there)."""

    seen: list[dict[str, Any]]

    def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
        self.seen.append(msg)
        return super().process_message(msg, cell, cell_index)


def _run_cell(source: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[dict[str, Any]]]:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("CAL_LANG", "en")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    client = _Watching(notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}})
    client.seen = []
    client.execute()
    return notebook.cells[0].outputs, client.seen


def _progress_texts(seen: list[dict[str, Any]]) -> list[str]:
    return [
        msg["content"]["data"].get("text/plain", "")
        for msg in seen
        if msg["msg_type"] in ("display_data", "update_display_data")
        and "verify: step" in msg["content"]["data"].get("text/plain", "")
    ]


SOURCE = (
    "print('before verify')\n"
    "from codeagent_lite.workbook.verify import verify\n"
    f"verify({str(SOLUTION)!r}, time_limit=20)"
)


def test_a_notebook_sees_progress_on_iopub_and_keeps_only_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    outputs, seen = _run_cell(SOURCE, monkeypatch)
    progress = _progress_texts(seen)
    assert {text.split(" · ")[0] for text in progress} >= {f"verify: step {n} of 4" for n in (1, 2, 3, 4)}, progress
    # what the cell printed first is untouched; the report is the cell's result; verify's own display is empty
    assert [output["output_type"] for output in outputs] == ["stream", "display_data", "execute_result"], outputs
    assert outputs[0]["text"] == "before verify\n"
    assert outputs[1]["data"] == {} and outputs[1]["metadata"] == {}
    assert outputs[2]["data"]["text/plain"].startswith("VerifyReport(")
    assert "verify: step" not in str(outputs) and "<progress" not in str(outputs)
    # the display was created empty (nbval records a display as created, and ignores its updates)
    created = [msg for msg in seen if msg["msg_type"] == "display_data"]
    assert [msg["content"]["data"] for msg in created] == [{}]


def test_a_notebook_whose_cell_runs_verify_passes_nbval_run_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import subprocess

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("CAL_LANG", "en")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SOURCE.replace("time_limit=20", "step=1"))])
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    path = tmp_path / "runs_verify.ipynb"
    nbformat.write(notebook, path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider", "-q", "--nbval", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:]


def test_a_notebook_that_asks_for_no_progress_gets_its_result_only(monkeypatch: pytest.MonkeyPatch) -> None:
    source = (
        "from codeagent_lite.workbook.verify import verify\n"
        f"print(verify({str(SOLUTION)!r}, step=1, time_limit=20, progress=False).overview())"
    )
    outputs, seen = _run_cell(source, monkeypatch)
    assert _progress_texts(seen) == []
    assert [output["output_type"] for output in outputs] == ["stream"], outputs


def test_a_terminal_sees_a_line_per_step_while_verify_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from codeagent_lite.workbook.verify import verify

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("CAL_LANG", "en")
    verify(SOLUTION)
    lines = terminal.getvalue().splitlines()
    assert [line.split(" · ")[0] for line in lines] == [f"verify: step {step} of 4" for step in (1, 2, 3, 4)]


def test_no_terminal_no_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from codeagent_lite.workbook.verify import verify

    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    verify(SOLUTION, step=1)
    assert pipe.getvalue() == ""
