"""Check that this machine can run the workbook, one line per requirement.

The first notebook runs this before anything else, so a learner with a missing package
sees "[FAIL] ipywidgets >= 8.1 ... hint: ..." instead of a traceback three notebooks later.
Only the standard library is used: the check must work even when everything else is missing.

Versions are compared but never printed for passing checks: saved notebook outputs are
compared by nbval on other machines, where the exact patch versions differ.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata

from .language import Messages

__all__ = [
    "INSTALL_HINT",
    "MINIMUM_PYTHON",
    "PACKAGE_REQUIREMENTS",
    "PackageRequirement",
    "RequirementCheck",
    "check_distribution",
    "check_environment",
    "check_importable",
    "check_python",
    "format_results",
    "parse_version",
]

MINIMUM_PYTHON = (3, 11)

# The check's words in both languages (see language.py for why a small catalog).
MESSAGES = Messages(
    {
        "install_hint": {
            "en": 'run `make lab`, or `pip install -e ".[lab]"`, in the repository root, then restart the kernel',
            "zh": '在仓库根目录运行 `make lab` 或 `pip install -e ".[lab]"`，然后重启内核',
        },
        "python_hint": {
            "en": "start Jupyter from a Python {version} or newer environment",
            "zh": "请在 Python {version} 或更新版本的环境里启动 Jupyter",
        },
        "found": {"en": "found {version}", "zh": "实际是 {version}"},
        "not_installed": {"en": "not installed", "zh": "没有安装"},
        "unreadable_version": {"en": "unreadable version {version}", "zh": "读不懂的版本号 {version}"},
        "importable": {"en": "{module} importable", "zh": "{module} 可以导入"},
        "ok_line": {"en": "[OK]   {requirement}", "zh": "[OK]   {requirement}"},
        "fail_line": {"en": "[FAIL] {requirement}", "zh": "[FAIL] {requirement}"},
        "detail": {"en": ": {detail}", "zh": "：{detail}"},
        "hint": {"en": " (hint: {hint})", "zh": "（提示：{hint}）"},
        "failed": {
            "en": "{failures} of {total} requirements failed: fix them before running the notebooks.",
            "zh": "{total} 项要求中有 {failures} 项没有满足：请先修好，再运行 notebook。",
        },
        "all_met": {"en": "All {total} requirements met.", "zh": "{total} 项要求全部满足。"},
    }
)
say = MESSAGES.say

INSTALL_HINT = MESSAGES.say("install_hint", language="en")
"""The one command that installs the package with everything the notebooks need (the English hint)."""


@dataclass(frozen=True, slots=True)
class RequirementCheck:
    """The outcome of one requirement; ``hint`` says what to do when ``ok`` is False."""

    requirement: str
    ok: bool
    detail: str = ""
    hint: str = ""


@dataclass(frozen=True, slots=True)
class PackageRequirement:
    """An installed distribution (the name pip knows) with a minimum version."""

    distribution: str
    minimum: tuple[int, ...]

    @property
    def label(self) -> str:
        return f"{self.distribution} >= {_dotted(self.minimum)}"


# The same lower bounds as pyproject.toml, so the check and the install agree.
PACKAGE_REQUIREMENTS = (
    PackageRequirement("pydantic", (2, 7)),
    PackageRequirement("ipywidgets", (8, 1)),
    PackageRequirement("jupyterlab", (4, 2)),
)


def _dotted(parts: Sequence[int]) -> str:
    return ".".join(str(part) for part in parts)


def parse_version(text: str) -> tuple[int, ...] | None:
    """The leading numeric release of a version string ("4.2.0rc1" -> (4, 2, 0)), or None.

    A pre-release counts as its release: good enough for a lower bound, and it keeps
    this module free of the ``packaging`` dependency.
    """
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    if match is None:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def check_python(version_info: Sequence[int] | None = None) -> RequirementCheck:
    """Python must be new enough for ``StrEnum`` and the typing the package uses."""
    current = tuple(sys.version_info[:3]) if version_info is None else tuple(version_info)
    label = f"Python >= {_dotted(MINIMUM_PYTHON)}"
    if current[: len(MINIMUM_PYTHON)] >= MINIMUM_PYTHON:
        return RequirementCheck(label, ok=True)
    return RequirementCheck(
        label,
        ok=False,
        detail=say("found", version=_dotted(current)),
        hint=say("python_hint", version=_dotted(MINIMUM_PYTHON)),
    )


def check_distribution(
    requirement: PackageRequirement,
    version_of: Callable[[str], str] = metadata.version,
) -> RequirementCheck:
    """Look the distribution up in the installed metadata; never import it (importing JupyterLab is slow)."""
    label = requirement.label
    try:
        installed = version_of(requirement.distribution)
    except metadata.PackageNotFoundError:
        return RequirementCheck(label, ok=False, detail=say("not_installed"), hint=say("install_hint"))
    parsed = parse_version(installed)
    if parsed is None:
        return RequirementCheck(
            label, ok=False, detail=say("unreadable_version", version=repr(installed)), hint=say("install_hint")
        )
    if parsed < requirement.minimum:
        return RequirementCheck(label, ok=False, detail=say("found", version=installed), hint=say("install_hint"))
    return RequirementCheck(label, ok=True)


def check_importable(module_name: str) -> RequirementCheck:
    """The module must import, not merely be installed: this catches a broken or shadowed package."""
    label = say("importable", module=module_name)
    try:
        importlib.import_module(module_name)
    except Exception as error:  # any failure to import is what this check reports, so none may escape
        return RequirementCheck(label, ok=False, detail=f"{type(error).__name__}: {error}", hint=say("install_hint"))
    return RequirementCheck(label, ok=True)


def check_environment() -> list[RequirementCheck]:
    """Every requirement of the workbook, in the order a learner would fix them."""
    results = [check_python(), check_importable("codeagent_lite")]
    results.extend(check_distribution(requirement) for requirement in PACKAGE_REQUIREMENTS)
    return results


def format_results(results: Sequence[RequirementCheck]) -> str:
    """One line per result; a failing line also says what was found and how to fix it."""
    lines = []
    for result in results:
        if result.ok:
            lines.append(say("ok_line", requirement=result.requirement))
            continue
        line = say("fail_line", requirement=result.requirement)
        if result.detail:
            line += say("detail", detail=result.detail)
        if result.hint:
            line += say("hint", hint=result.hint)
        lines.append(line)
    failures = sum(not result.ok for result in results)
    if failures:
        lines.append(say("failed", failures=failures, total=len(results)))
    else:
        lines.append(say("all_met", total=len(results)))
    return "\n".join(lines)
