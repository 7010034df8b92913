"""JupyterLab's own language follows the workbook's edition: Chinese menus for ``notebooks/zh``, English for ``en``.

JupyterLab keeps its display language as a user setting (the ``locale`` of ``@jupyterlab/translation-extension``),
and shows Chinese only with its zh-CN language pack installed (the ``lab`` extra installs it). ``make lab
EDITION=...`` writes that one setting into the workbook's own settings folder (``JUPYTERLAB_SETTINGS_DIR``, inside
``.venv``) before JupyterLab starts, so the learner's own ``~/.jupyter`` is never touched, and the other settings
kept in that folder (a theme, say) stay as the learner left them. The real-browser test writes it the same way.

Usage: ``python -m codeagent_lite.workbook.lab_language EDITION SETTINGS_DIR`` (exit 2 for an unknown edition).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["LOCALES", "SETTINGS_FILE", "main", "write_lab_language"]

LOCALES = {"zh": "zh_CN", "en": "en"}
"""The edition's folder name -> JupyterLab's locale (``en`` is JupyterLab's own, always there)."""

SETTINGS_FILE = Path("@jupyterlab") / "translation-extension" / "plugin.jupyterlab-settings"


def write_lab_language(edition: str, settings_dir: Path) -> Path:
    """Set JupyterLab's display language for ``edition`` in ``settings_dir``; returns the file written.

    Only ``locale`` changes: other keys already in the file are kept. A file JupyterLab cannot have written (not a
    JSON object) is replaced, since JupyterLab would ignore it anyway.
    """
    locale = LOCALES[edition]
    target = settings_dir / SETTINGS_FILE
    settings: dict[str, object] = {}
    try:
        existing = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        existing = None
    if isinstance(existing, dict):
        settings.update(existing)
    settings["locale"] = locale
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
