"""Notebook 00's "is this machine ready?" table: a missing package is a [FAIL] with a hint, not a traceback later.

Only the standard library: the check must work when everything else is missing. Versions of passing checks are
never printed, because nbval compares saved outputs on machines whose patch versions differ.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata

from .words import N_, _

MINIMUM_PYTHON = (3, 11)
INSTALL_HINT = N_('run `make lab`, or `pip install -e ".[lab]"`, in the repository root, then restart the kernel')


@dataclass(frozen=True, slots=True)
class RequirementCheck:
    requirement: str
    ok: bool
    detail: str = ""
    hint: str = ""


@dataclass(frozen=True, slots=True)
class PackageRequirement:
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
    """``4.2.0rc1`` -> (4, 2, 0): a pre-release counts as its release, enough for a lower bound."""
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    return None if match is None else tuple(int(part) for part in match.group(1).split("."))


def check_python(version_info: Sequence[int] | None = None) -> RequirementCheck:
    """Python must be new enough for ``StrEnum`` and the typing the package uses."""
    current = tuple(sys.version_info[:3]) if version_info is None else tuple(version_info)
    label = f"Python >= {_dotted(MINIMUM_PYTHON)}"
    if current[: len(MINIMUM_PYTHON)] >= MINIMUM_PYTHON:
        return RequirementCheck(label, ok=True)
    return RequirementCheck(
        label,
        ok=False,
        detail=_("found {version}", version=_dotted(current)),
        hint=_("start Jupyter from a Python {version} or newer environment", version=_dotted(MINIMUM_PYTHON)),
    )


def check_distribution(
    requirement: PackageRequirement, version_of: Callable[[str], str] = metadata.version
) -> RequirementCheck:
    """The installed metadata, never an import (importing JupyterLab is slow)."""
    try:
        installed = version_of(requirement.distribution)
    except metadata.PackageNotFoundError:
        detail = _("not installed")
    else:
        parsed = parse_version(installed)
        if parsed is not None and parsed >= requirement.minimum:
            return RequirementCheck(requirement.label, ok=True)
        if parsed is None:
            detail = _("unreadable version {version}", version=repr(installed))
        else:
            detail = _("found {version}", version=installed)
    return RequirementCheck(requirement.label, ok=False, detail=detail, hint=_(INSTALL_HINT))


def check_importable(module_name: str) -> RequirementCheck:
    """Importing, not merely installed: this catches a broken or shadowed package."""
    label = _("{module} importable", module=module_name)
    try:
        importlib.import_module(module_name)
    except Exception as error:  # any failure to import is what this check reports, so none may escape
        return RequirementCheck(label, ok=False, detail=f"{type(error).__name__}: {error}", hint=_(INSTALL_HINT))
    return RequirementCheck(label, ok=True)


def check_environment() -> list[RequirementCheck]:
    """In the order a learner would fix them."""
    return [check_python(), check_importable("codeagent_lite"), *map(check_distribution, PACKAGE_REQUIREMENTS)]


def format_results(results: Sequence[RequirementCheck]) -> str:
    lines = []
    for result in results:
        if result.ok:
            lines.append(_("[OK]   {requirement}", requirement=result.requirement))
            continue
        line = _("[FAIL] {requirement}", requirement=result.requirement)
        if result.detail:
            line += _(": {detail}", detail=result.detail)
        if result.hint:
            line += _(" (hint: {hint})", hint=result.hint)
        lines.append(line)
    failures, total = sum(not result.ok for result in results), len(results)
    if failures:
        said = N_("{failures} of {total} requirements failed: fix them before running the notebooks.")
        lines.append(_(said, failures=failures, total=total))
    else:
        lines.append(_("All {total} requirements met.", total=total))
    return "\n".join(lines)
