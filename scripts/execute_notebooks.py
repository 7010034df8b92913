"""Execute notebooks in a fresh kernel and save them with outputs, ready for nbval.

Usage: python scripts/execute_notebooks.py [NOTEBOOK ...]   (default: every notebooks/{en,zh}/NN_*.ipynb)

Each notebook runs top to bottom in a new ``python3`` kernel with its own folder
(``notebooks/en`` or ``notebooks/zh``) as the working directory, exactly as nbval will run
it. Saved widget state is dropped (it holds random model ids and is rebuilt on every run);
outputs and execution counts stay, because nbval compares them.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def _joined_streams(outputs: list[Any]) -> list[Any]:
    """Adjacent prints to the same stream as one output: how the kernel chunks them varies from run to run,
    and nbval joins them the same way before comparing, so saved notebooks stop changing for nothing."""
    joined: list[Any] = []
    for output in outputs:
        previous = joined[-1] if joined else None
        if (
            previous is not None
            and output.get("output_type") == "stream"
            and previous.get("output_type") == "stream"
            and previous.get("name") == output.get("name")
        ):
            previous["text"] = previous["text"] + output["text"]
        else:
            joined.append(output)
    return joined


def execute(path: Path) -> float:
    notebook = nbformat.read(path, as_version=4)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    started = time.perf_counter()
    NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=120,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    elapsed = time.perf_counter() - started
    notebook.metadata.pop("widgets", None)
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = _joined_streams(cell.outputs)
    nbformat.write(notebook, path)
    return elapsed


def main(argv: list[str]) -> int:
    paths = [Path(arg).resolve() for arg in argv] or sorted(NOTEBOOKS.glob("*/[0-9]*.ipynb"))
    for path in paths:
        print(f"{path.relative_to(ROOT)}: executed in {execute(path):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
