"""Project files agree with each other: the install layout, environment.yml, the Makefile, CI and the README."""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from engine_build_script import engine_build
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "codeagent-lite"


def extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {name: list(texts) for name, texts in project["optional-dependencies"].items()}


def resolve(*extra_names: str, runtime: bool = True) -> dict[str, Requirement]:
    """The requirements a ``pip install ".[a,b]"`` pulls in, following ``codeagent-lite[x]`` self-references."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    texts = list(project["dependencies"]) if runtime else []
    pending, seen = list(extra_names), set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for text in extras()[name]:
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) == PACKAGE:
                pending.extend(requirement.extras)
            else:
                texts.append(text)
    requirements = [Requirement(text) for text in texts]
    return {canonicalize_name(r.name): r for r in requirements}


def pyproject_requirements() -> dict[str, Requirement]:
    """Everything: the runtime dependencies and every extra."""
    return resolve(*extras())


def learner_requirements() -> dict[str, Requirement]:
    """What `make lab` installs: the runtime dependencies and the ``lab`` extra."""
    return resolve("lab")


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


def test_every_learner_dependency_is_in_environment_yml_with_the_same_version() -> None:
    _, conda, pip = environment_lists()
    conda_specs = dict(conda_requirement(spec) for spec in conda if spec not in ("pip", "python=3.11"))
    pip_requirements = {canonicalize_name(r.name): r for r in (Requirement(p) for p in pip if not p.startswith("-e"))}
    for name, wanted in learner_requirements().items():
        if name in pip_requirements:
            found = pip_requirements[name]
            assert found.specifier == wanted.specifier, f"{name}: {found} in environment.yml, {wanted} in pyproject"
            assert found.extras == wanted.extras, f"{name}: extras differ"
        else:
            assert name in conda_specs, f"{name} from pyproject.toml is missing from environment.yml"
            assert conda_specs[name] == wanted.specifier, f"{name}: {conda_specs[name]} vs {wanted.specifier}"
            assert not wanted.extras, f"{name}[{','.join(wanted.extras)}] needs pip to get its extras"


def test_environment_yml_is_the_learner_set_and_the_classroom_and_nothing_else() -> None:
    """No test tools and no compiled engine: the conda/Binder lab must not depend on a compile.

    The classroom extra (JupyterHub, nbgrader) is there too: the same image serves a class through
    Zero to JupyterHub (classroom/z2jh), whose student servers need them.
    """
    _, conda, pip = environment_lists()
    conda_names = {conda_requirement(spec)[0] for spec in conda if spec not in ("pip", "python=3.11")}
    pip_names = {canonicalize_name(Requirement(p).name) for p in pip if not p.startswith("-e")}
    assert conda_names | pip_names == set(learner_requirements()) | set(resolve("classroom", runtime=False))
    assert not (conda_names | pip_names) & set(resolve("local", runtime=False)), "the engine is in environment.yml"
    assert not conda_names & pip_names, "a package is installed by both conda and pip"


def test_the_learner_install_has_no_test_tools_and_no_engine() -> None:
    learner = set(learner_requirements())
    assert learner >= {"pydantic", "jupyterlab", "ipywidgets", "openai"}
    assert not learner & set(resolve("test", runtime=False)), "a test tool is in the learner's install"
    assert not learner & set(resolve("local", runtime=False)), "the compiled engine is in the learner's install"


def test_dev_gathers_every_extra() -> None:
    assert set(resolve("dev")) == set(pyproject_requirements())


def test_the_engine_builder_installs_exactly_the_local_extra() -> None:
    assert sorted(engine_build.LOCAL_REQUIREMENTS) == sorted(extras()["local"])


def make_would_run(*goals: str, tmp_path: Path, dry: bool = True) -> list[str]:
    """What make itself would run for ``goals`` on a machine with no .venv yet (a dry run: nothing is run)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    command = ["make", "--no-print-directory", *(["-n"] if dry else []), f"VENV={tmp_path / 'venv'}", *goals]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout.splitlines()


def test_make_lab_installs_the_learner_set_and_starts_the_engine_in_the_background(tmp_path: Path) -> None:
    commands = make_would_run("lab", tmp_path=tmp_path)
    installs = [command for command in commands if " install " in command]
    assert len(installs) == 1 and installs[0].endswith('-e ".[lab]"'), installs
    assert "--no-compile" in installs[0]  # byte-compiling everything cost a third of the first minute
    assert commands[-2].endswith("scripts/local_engine.py start") and "/jupyter lab " in commands[-1], commands
    exported = make_would_run("--eval=_env: ; @echo $$CMAKE_ARGS", "-s", "_env", tmp_path=tmp_path, dry=False)
    assert exported == ["-DGGML_NATIVE=OFF"]  # so the engine built here runs on other CPUs too


def test_make_test_builds_the_engine_and_installs_everything(tmp_path: Path) -> None:
    commands = make_would_run("test", tmp_path=tmp_path)
    build = next(i for i, command in enumerate(commands) if command.endswith("scripts/local_engine.py build"))
    dev = next(i for i, command in enumerate(commands) if command.endswith('install --quiet -e ".[dev]"'))
    assert build < dev < len(commands) - 1 and commands[-1].endswith("-m pytest"), commands


def test_binder_builds_the_engine_as_an_optional_step() -> None:
    post_build = (ROOT / "postBuild").read_text(encoding="utf-8")
    assert "scripts/local_engine.py build --optional" in post_build
    assert (ROOT / "postBuild").stat().st_mode & 0o111, "Binder runs postBuild only when it is executable"


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


READMES = ("README.md", "README.zh-CN.md")


def bash_blocks(text: str) -> list[list[str]]:
    """The commands of each ```bash block, comments and blank lines left out."""
    blocks = [block.split("```", 1)[0] for block in text.split("```bash\n")[1:]]
    return [
        [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]
        for block in blocks
    ]


@pytest.mark.parametrize("name", READMES)
def test_a_learner_reads_the_readme_in_one_screen(name: str) -> None:
    """Issue 21: at most 150 lines; git clone and make lab first; make test for contributors only."""
    text = (ROOT / name).read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150, f"{name} has {len(text.splitlines())} lines"
    first = bash_blocks(text)[0]
    assert first[0].startswith("git clone ") and first[-1] == "make lab", first
    assert not any("make test" in command for command in first)
    contributors = "## For contributors" if name == "README.md" else "## 给贡献者"
    section = text.split(contributors, 1)[1].split("\n## ", 1)[0]
    assert ["make test"] in bash_blocks(section), "make test is shown under the contributors' heading"
    assert text.count("make test") == section.count("make test"), "make test appears outside the contributors' part"


@pytest.mark.parametrize("name", READMES)
def test_the_readme_shows_the_layer_ladder_and_the_blog_table(name: str) -> None:
    text = (ROOT / name).read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", text)
    assert images and all((ROOT / image).is_file() for image in images), images
    for section in ("一、文件关系", "二、消息转换", "三、Adapter 调度", "四、行动解析"):
        assert section in text
    for notebook in sorted(path.stem for path in (ROOT / "notebooks" / "zh").glob("*.ipynb")):
        assert f"`{notebook}`" in text, f"{name} does not list {notebook}"
    for moved in ("benchmarks/README.md", "classroom/README.md"):
        assert f"({moved})" in text, f"{name} links {moved}"


def test_the_chinese_readme_gives_paths_that_work_and_the_chinese_mark() -> None:
    text = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    assert "[ours]" not in text and "[工作簿规则]" in text
    assert 'verify("my_json_text"' not in text and 'compare("my_json_text"' not in text
    assert "verify(learner_dir()" in text


def test_the_ladder_picture_is_the_parsers_own() -> None:
    """docs/layer-ladder.svg is what docs/make_layer_ladder.py draws from the parser today."""
    spec = importlib.util.spec_from_file_location("make_layer_ladder", ROOT / "docs" / "make_layer_ladder.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    drawn = module.draw()
    assert (ROOT / "docs" / "layer-ladder.svg").read_text(encoding="utf-8") == drawn, (
        "run python docs/make_layer_ladder.py"
    )
    for title in ("JSON 语法", "顶层对象", "行动类型", "字段集合与类型"):
        assert title in drawn


@pytest.mark.parametrize("name", ["pyproject.toml", "environment.yml", "postBuild", "README.md", ".ci/run"])
def test_project_files_exist(name: str) -> None:
    assert (ROOT / name).is_file()
