"""Project files agree with each other: environment.yml mirrors pyproject.toml, CI runs the README's command."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "codeagent-lite"


def pyproject_requirements() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    texts = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        texts.extend(extra)
    requirements = [Requirement(text) for text in texts]
    # "dev" only gathers the other extras by naming the package itself.
    return {canonicalize_name(r.name): r for r in requirements if canonicalize_name(r.name) != PACKAGE}


def environment_lists() -> tuple[list[str], list[str], list[str]]:
    """(channels, conda dependencies, pip entries) of environment.yml.

    A small reader for this file's plain layout, so the check needs no YAML library.
    """
    channels: list[str] = []
    conda: list[str] = []
    pip: list[str] = []
    section = None
    for raw_line in (ROOT / "environment.yml").read_text(encoding="utf-8").splitlines():
        line = raw_line.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            section = line.rstrip(":") if line.endswith(":") else None
            continue
        item = re.fullmatch(r"\s*-\s+(.+)", line)
        assert item is not None, f"unexpected line in environment.yml: {raw_line!r}"
        value = item.group(1).strip()
        if section == "channels":
            channels.append(value)
        elif section == "dependencies" and value == "pip:":
            section = "pip"
        elif section == "dependencies":
            conda.append(value)
        elif section == "pip":
            assert indent > 2, f"pip entry outside the pip: block: {raw_line!r}"
            pip.append(value)
    return channels, conda, pip


def conda_requirement(spec: str) -> tuple[str, SpecifierSet]:
    match = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(.*)", spec)
    assert match is not None, spec
    return canonicalize_name(match.group(1)), SpecifierSet(match.group(2).replace(" ", ""))


def test_environment_uses_conda_forge_and_python_3_11() -> None:
    channels, conda, _ = environment_lists()
    assert channels == ["conda-forge"]
    assert "python=3.11" in conda
    assert "pip" in conda


def test_every_pyproject_dependency_is_in_environment_yml_with_the_same_version() -> None:
    _, conda, pip = environment_lists()
    conda_specs = dict(conda_requirement(spec) for spec in conda if spec not in ("pip", "python=3.11"))
    pip_requirements = {canonicalize_name(r.name): r for r in (Requirement(p) for p in pip if not p.startswith("-e"))}
    for name, wanted in pyproject_requirements().items():
        if name in pip_requirements:
            found = pip_requirements[name]
            assert found.specifier == wanted.specifier, f"{name}: {found} in environment.yml, {wanted} in pyproject"
            assert found.extras == wanted.extras, f"{name}: extras differ"
        else:
            assert name in conda_specs, f"{name} from pyproject.toml is missing from environment.yml"
            assert conda_specs[name] == wanted.specifier, f"{name}: {conda_specs[name]} vs {wanted.specifier}"
            assert not wanted.extras, f"{name}[{','.join(wanted.extras)}] needs pip to get its extras"


def test_environment_yml_lists_nothing_that_pyproject_lacks() -> None:
    _, conda, pip = environment_lists()
    wanted = set(pyproject_requirements())
    conda_names = {conda_requirement(spec)[0] for spec in conda if spec not in ("pip", "python=3.11")}
    pip_names = {canonicalize_name(Requirement(p).name) for p in pip if not p.startswith("-e")}
    assert conda_names | pip_names == wanted
    assert not conda_names & pip_names, "a package is installed by both conda and pip"


def test_pip_section_installs_the_package_itself() -> None:
    _, _, pip = environment_lists()
    assert "-e ." in pip


def ci_commands() -> list[str]:
    commands = []
    for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        first_word = shlex.split(line)[0]
        if first_word in ("set", "cd", "export"):  # shell and environment set-up, not the test command
            continue
        commands.append(line)
    return commands


def test_ci_runs_the_readme_test_command() -> None:
    commands = ci_commands()
    assert commands, ".ci/run runs no command"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for command in commands:
        assert command in readme, f".ci/run runs {command!r}, which README.md does not show"


@pytest.mark.parametrize("name", ["pyproject.toml", "environment.yml", "README.md", ".ci/run"])
def test_project_files_exist(name: str) -> None:
    assert (ROOT / name).is_file()
