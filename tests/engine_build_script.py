"""``scripts/engine_build.py`` as a module: scripts/ is no package, so its folder goes on ``sys.path``, last, where
it shadows nothing the tests import."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent / "scripts"))

import engine_build

__all__ = ["engine_build"]
