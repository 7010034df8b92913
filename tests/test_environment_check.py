"""The environment check of notebook 00: it must say [FAIL] with a hint whenever a requirement is not met."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

import pytest

from codeagent_lite.workbook.environment_check import (
    INSTALL_HINT,
    PACKAGE_REQUIREMENTS,
    PackageRequirement,
    RequirementCheck,
    check_distribution,
    check_environment,
    check_importable,
    check_python,
    format_results,
    parse_version,
)


def test_this_environment_passes_every_check() -> None:
    results = check_environment()
    assert [r.requirement for r in results] == [
        "Python >= 3.11",
        "codeagent_lite importable",
        "pydantic >= 2.7",
        "ipywidgets >= 8.1",
        "jupyterlab >= 4.2",
    ]
    assert all(r.ok for r in results), format_results(results)


def test_missing_package_fails_with_a_hint() -> None:
    result = check_distribution(PackageRequirement("codeagent-lite-no-such-distribution", (1, 0)))
    assert result == RequirementCheck(
        "codeagent-lite-no-such-distribution >= 1.0", ok=False, detail="not installed", hint=INSTALL_HINT
    )
    text = format_results([result])
    assert text.splitlines()[0] == (
        f"[FAIL] codeagent-lite-no-such-distribution >= 1.0: not installed (hint: {INSTALL_HINT})"
    )
    assert "1 of 1 requirements failed" in text


def test_too_old_package_fails_and_names_the_version_found() -> None:
    def fake_version(name: str) -> str:
        assert name == "ipywidgets"
        return "7.8.1"

    result = check_distribution(PackageRequirement("ipywidgets", (8, 1)), version_of=fake_version)
    assert not result.ok
    assert result.detail == "found 7.8.1"
    assert result.hint == INSTALL_HINT


@pytest.mark.parametrize(
    ("installed", "ok"),
    [("8.1", True), ("8.1.0", True), ("8.10.2", True), ("9.0.0rc1", True), ("8.0.9", False), ("8", False)],
)
def test_versions_compare_as_numbers_not_strings(installed: str, ok: bool) -> None:
    result = check_distribution(PackageRequirement("ipywidgets", (8, 1)), version_of=lambda _name: installed)
    assert result.ok is ok


def test_unreadable_version_is_a_failure_not_a_crash() -> None:
    result = check_distribution(PackageRequirement("x", (1,)), version_of=lambda _name: "unknown")
    assert not result.ok
    assert result.detail == "unreadable version 'unknown'"


def test_real_installed_distribution_is_checked_against_its_metadata() -> None:
    installed = parse_version(metadata.version("pydantic"))
    assert installed is not None
    assert check_distribution(PackageRequirement("pydantic", installed)).ok
    newer = (installed[0] + 1,)
    assert not check_distribution(PackageRequirement("pydantic", newer)).ok


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("2.14.3", (2, 14, 3)), ("4.2.0rc1", (4, 2, 0)), ("v1.2", (1, 2)), ("10", (10,)), ("dev", None), ("", None)],
)
def test_parse_version(text: str, parsed: tuple[int, ...] | None) -> None:
    assert parse_version(text) == parsed


def test_old_python_fails_and_says_what_was_found() -> None:
    assert check_python((3, 11, 0)).ok
    assert check_python((3, 13, 1)).ok
    result = check_python((3, 10, 14))
    assert not result.ok
    assert result.detail == "found 3.10.14"
    assert "3.11" in result.hint


def test_current_python_is_what_the_default_checks() -> None:
    assert check_python().ok is (sys.version_info[:2] >= (3, 11))


def test_unimportable_module_fails_with_the_error() -> None:
    result = check_importable("codeagent_lite_no_such_module")
    assert not result.ok
    assert result.detail == "ModuleNotFoundError: No module named 'codeagent_lite_no_such_module'"
    assert check_importable("codeagent_lite").ok


def test_module_that_raises_on_import_is_reported_not_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "codeagent_lite_broken_module.py").write_text("raise RuntimeError('broken on purpose')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = check_importable("codeagent_lite_broken_module")
    assert not result.ok
    assert result.detail == "RuntimeError: broken on purpose"


def test_format_results_prints_no_versions_for_passing_checks() -> None:
    text = format_results([RequirementCheck("pydantic >= 2.7", ok=True), RequirementCheck("Python >= 3.11", ok=True)])
    assert text == "[OK]   pydantic >= 2.7\n[OK]   Python >= 3.11\nAll 2 requirements met."


def test_requirements_match_pyproject_lower_bounds() -> None:
    pyproject = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8")
    for requirement in PACKAGE_REQUIREMENTS:
        assert f'"{requirement.distribution}>={".".join(map(str, requirement.minimum))}' in pyproject
