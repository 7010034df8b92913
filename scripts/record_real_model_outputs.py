"""Record notebook 06's model outputs from a real run, for machines without the local engine.

Usage: python scripts/record_real_model_outputs.py      (needs the local engine: `make local`)

Runs notebooks/en/06_real_model.ipynb top to bottom in a fresh kernel with the real model
(exactly as ``scripts/execute_notebooks.py`` does, and saves it the same way), checks that the
run was live, then writes the standard output of every cell that calls ``recorded("key")``
to codeagent_lite/workbook/recorded/06_real_model.json, with the engine's version and the
date. Nothing in that file is written by hand; tests/test_engine_panel.py checks that it
equals the saved live outputs of the notebook.
"""

from __future__ import annotations

import datetime
import json
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "en" / "06_real_model.ipynb"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from execute_notebooks import execute  # noqa: E402

from codeagent_lite.providers.local_llama import MODEL_FILENAME  # noqa: E402
from codeagent_lite.workbook.engine_panel import RECORDED_PATH, recorded_cells_of  # noqa: E402

LIVE_MARK = "local engine: ready"


def main() -> int:
    print(f"{NOTEBOOK.relative_to(ROOT)}: executed in {execute(NOTEBOOK):.1f} s")
    notebook = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    outputs = json.dumps(notebook["cells"][2].get("outputs", []))
    if LIVE_MARK not in outputs:
        print(f"refused: the run was not live (no {LIVE_MARK!r} in the setup cell); build the engine first")
        return 1
    cells = recorded_cells_of(notebook)
    data = {
        "source": {
            "notebook": NOTEBOOK.relative_to(ROOT).as_posix(),
            "llama-cpp-python": metadata.version("llama-cpp-python"),
            "model": MODEL_FILENAME,
            "recorded on": datetime.date.today().isoformat(),
        },
        "cells": cells,
    }
    RECORDED_PATH.parent.mkdir(parents=True, exist_ok=True)
    RECORDED_PATH.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{RECORDED_PATH.relative_to(ROOT)}: {len(cells)} recorded cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
