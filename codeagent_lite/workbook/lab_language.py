"""JupyterLab's own menus follow the edition: ``make lab EDITION=...`` runs ``python -m
codeagent_lite.workbook.lab_language EDITION SETTINGS_DIR``, which writes the one ``locale`` setting into the
settings folder inside ``.venv``, so the learner's ``~/.jupyter`` is never touched."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["LOCALES", "SETTINGS_FILE", "main", "write_lab_language"]

LOCALES = {"zh": "zh_CN", "en": "en"}

SETTINGS_FILE = Path("@jupyterlab") / "translation-extension" / "plugin.jupyterlab-settings"


def write_lab_language(edition: str, settings_dir: Path) -> Path:
    """Other keys in the file (a theme) are kept; a file that is not a JSON object is replaced, as JupyterLab
    would ignore it anyway."""
    locale = LOCALES[edition]
    target = settings_dir / SETTINGS_FILE
    try:
        existing = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        existing = None
    settings = {**(existing if isinstance(existing, dict) else {}), "locale": locale}
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return target


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if len(arguments) != 2 or arguments[0] not in LOCALES:
        editions = " or ".join(sorted(LOCALES))
        print(f"usage: python -m codeagent_lite.workbook.lab_language {{{editions}}} SETTINGS_DIR", file=sys.stderr)
        return 2
    write_lab_language(arguments[0], Path(arguments[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
