"""The learner's own folder ``notebooks/my_json_text/``: made from the git-tracked stubs on first use, then never
touched, and ignored by git, so ``git pull`` never meets the learner's work. ``CAL_LEARNER_DIR`` names another (one
per student on the classroom server; the solutions in CI). The path comes back as given: verify prints it, and a
saved notebook output must not hold an absolute path."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

__all__ = ["FOLDER_NAME", "LEARNER_DIR_VARIABLE", "STUBS", "learner_dir"]

FOLDER_NAME = "my_json_text"
LEARNER_DIR_VARIABLE = "CAL_LEARNER_DIR"
STUBS = Path("stubs") / FOLDER_NAME
"""Inside ``notebooks/``: the one source for both editions and the assignment's release."""


def learner_dir(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The folder verify judges by default. Without folder and stubs the path still comes back: verify then says
    the folder is missing, the clearest thing to tell a learner who moved the notebook away from the workbook."""
    here = Path.cwd() if cwd is None else cwd
    environ = os.environ if environ is None else environ
    chosen = environ.get(LEARNER_DIR_VARIABLE, "").strip() or f"../{FOLDER_NAME}"
    _copy_stubs_once(here.parent / STUBS, here / chosen)
    return chosen


def _copy_stubs_once(stubs: Path, target: Path) -> None:
    """Never over a learner's file. Copied beside ``target`` and renamed into place, so two notebooks starting at
    once, or an interrupted copy, never leave a half-made folder: the second rename fails, the first stands."""
    if target.exists() or target.is_symlink() or not stubs.is_dir():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        copy = staging / target.name
        shutil.copytree(stubs, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints"))
        try:
            copy.rename(target)
        except OSError:
            if not target.exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
