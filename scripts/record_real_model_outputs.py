"""Record notebook 06's model outputs from a real run, for machines without the local engine.

Usage: python scripts/record_real_model_outputs.py      (needs the local engine: `make local`)

Runs notebooks/en/06_real_model.ipynb and notebooks/zh/06_real_model.ipynb top to bottom, each
in a fresh kernel with the real model (exactly as ``scripts/execute_notebooks.py`` does, and saves
them the same way), checks that each run was live, then writes the standard output of every
cell that calls ``recorded("key")``, per edition, to
codeagent_lite/workbook/recorded/06_real_model.json, with the engine's version and the date.
Both editions are recorded because their code cells print labels in their own language.
Nothing in that file is written by hand; tests/test_engine_panel.py checks that it equals the
saved live outputs of the notebooks.
"""

from __future__ import annotations

import datetime
import json
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_NAME = "06_real_model.ipynb"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from execute_notebooks import execute  # noqa: E402

from codeagent_lite.providers.local_engine import engine_status  # noqa: E402
from codeagent_lite.providers.local_llama import MODEL_FILENAME  # noqa: E402
from codeagent_lite.workbook.engine_panel import RECORDED_PATH, RECORDED_TOP, recorded_cells_of  # noqa: E402
from codeagent_lite.workbook.language import LANGUAGES  # noqa: E402
from codeagent_lite.workbook.words import _  # noqa: E402


def main() -> int:
    if not engine_status().ready:
        print("refused: the local engine is not ready here, so the run would not be live; build it first")
        return 1
    editions = {}
    for language in LANGUAGES:
        path = ROOT / "notebooks" / language / NOTEBOOK_NAME
        print(f"{path.relative_to(ROOT)}: executed in {execute(path):.1f} s")
        notebook = json.loads(path.read_text(encoding="utf-8"))
        editions[language] = recorded_cells_of(notebook)
        if any(_(RECORDED_TOP, language) in text for text in editions[language].values()):
            print(f"refused: {path.name} showed recorded outputs, so the model server did not start")
            return 1
    data = {
        "source": {
            "notebooks": f"notebooks/{{{','.join(LANGUAGES)}}}/{NOTEBOOK_NAME}",
            "llama-cpp-python": metadata.version("llama-cpp-python"),
            "model": MODEL_FILENAME,
            "recorded on": datetime.date.today().isoformat(),
        },
        "editions": editions,
    }
    RECORDED_PATH.parent.mkdir(parents=True, exist_ok=True)
    RECORDED_PATH.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    counts = ", ".join(f"{language} {len(cells)}" for language, cells in editions.items())
    print(f"{RECORDED_PATH.relative_to(ROOT)}: recorded cells per edition: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
