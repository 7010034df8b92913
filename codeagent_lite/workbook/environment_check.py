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

from .words import N_, _

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


INSTALL_HINT = N_('run `make lab`, or `pip install -e ".[lab]"`, in the repository root, then restart the kernel')
"""The one command that installs the package with everything the notebooks need (English: a message id)."""


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
        detail=_("found {version}", version=_dotted(current)),
        hint=_("start Jupyter from a Python {version} or newer environment", version=_dotted(MINIMUM_PYTHON)),
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
        return RequirementCheck(
            label,
            ok=False,
            detail=_("not installed"),
            hint=_(INSTALL_HINT),
        )
    parsed = parse_version(installed)
    if parsed is None:
        return RequirementCheck(
            label,
            ok=False,
            detail=_("unreadable version {version}", version=repr(installed)),
            hint=_(INSTALL_HINT),
        )
    if parsed < requirement.minimum:
        return RequirementCheck(
            label,
            ok=False,
            detail=_("found {version}", version=installed),
            hint=_(INSTALL_HINT),
        )
    return RequirementCheck(label, ok=True)


def check_importable(module_name: str) -> RequirementCheck:
    """The module must import, not merely be installed: this catches a broken or shadowed package."""
    label = _("{module} importable", module=module_name)
    try:
        importlib.import_module(module_name)
    except Exception as error:  # any failure to import is what this check reports, so none may escape
        return RequirementCheck(
            label,
            ok=False,
            detail=f"{type(error).__name__}: {error}",
            hint=_(INSTALL_HINT),
        )
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
            lines.append(_("[OK]   {requirement}", requirement=result.requirement))
            continue
        line = _("[FAIL] {requirement}", requirement=result.requirement)
        if result.detail:
            line += _(": {detail}", detail=result.detail)
        if result.hint:
            line += _(" (hint: {hint})", hint=result.hint)
        lines.append(line)
    failures = sum(not result.ok for result in results)
    if failures:
        lines.append(
            _(
                "{failures} of {total} requirements failed: fix them before running the notebooks.",
                failures=failures,
                total=len(results),
            )
        )
    else:
        lines.append(_("All {total} requirements met.", total=len(results)))
    return "\n".join(lines)
