"""The package stays mypy --strict and ruff clean; each tool's own output is the failure message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_tool(*args: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"{' '.join(args)} failed (exit {result.returncode}):\n{result.stdout}\n{result.stderr}")


def test_mypy_strict() -> None:
    # The [tool.mypy] table in pyproject.toml sets strict = true and names the package and scripts/engine_build.py.
    run_tool("mypy", "--config-file", "pyproject.toml")


def test_ruff_check() -> None:
    run_tool("ruff", "check", "codeagent_lite")


def test_ruff_format() -> None:
    run_tool("ruff", "format", "--check", "codeagent_lite")
