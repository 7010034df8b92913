"""``scripts/engine_build.py`` as a module: scripts/ is no package, so it is loaded from its path, once."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def _load() -> ModuleType:
    if "engine_build" in sys.modules:
        return sys.modules["engine_build"]
    path = Path(__file__).resolve().parent.parent / "scripts" / "engine_build.py"
    spec = importlib.util.spec_from_file_location("engine_build", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["engine_build"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


engine_build = _load()
