"""The learner's own folder ``notebooks/my_json_text/``: made from the stubs on first use, then never touched again.

The stubs (``notebooks/stubs/my_json_text/``) are tracked by git and never edited by the learner; the learner's copy
is ignored by git. So ``git pull`` of a newer workbook updates the stubs and never meets the learner's work, and
verify's default is the learner's own files, never the teacher's solution.

The copy is made beside the edition folders, where notebooks 00-04 (run from ``notebooks/zh`` or ``notebooks/en``)
find it as ``../my_json_text``. ``CAL_LEARNER_DIR`` names another folder (the classroom server sets it for each
student; CI points it at ``solutions/my_json_text``); a folder it names that does not exist yet is made from the
stubs the same way. The path comes back as given (relative when it is), because verify prints it in its report,
and a saved notebook output must not hold an absolute path.
"""

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
"""Where the stubs sit inside ``notebooks/``: the one source for both editions (and the assignment's release)."""


def learner_dir(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The folder verify judges by default, made from the stubs if it is not there yet.

    ``cwd`` is the notebook's folder (``notebooks/zh`` or ``notebooks/en``); the stubs are found from it, one level
    up. When neither the folder nor the stubs exist, the path still comes back: verify then says the folder is
    missing, which is the clearest thing to tell a learner who moved the notebook away from the workbook.
    """
    here = Path.cwd() if cwd is None else cwd
    environ = os.environ if environ is None else environ
    chosen = environ.get(LEARNER_DIR_VARIABLE, "").strip() or f"../{FOLDER_NAME}"
    _copy_stubs_once(here.parent / STUBS, here / chosen)
    return chosen


def _copy_stubs_once(stubs: Path, target: Path) -> None:
    """Copy ``stubs`` to ``target`` unless ``target`` exists in any form: a learner's file is never overwritten.

    The copy is made in a temporary folder beside ``target`` and renamed into place, so two notebooks starting at
    once, or an interrupted copy, never leave a half-made folder: the second rename fails and the first one stands.
    """
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
