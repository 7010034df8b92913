"""Make the learners' exercise book with nbgrader itself, then save it executed for nbval.

Usage: python scripts/release_exercises.py          (release and execute every edition)
       python scripts/release_exercises.py --stubs  (only copy the learner's stubs into the course)

Releases both assignments, in both editions: the exercise book (notebook 05) and build it yourself (notebook 07).

The nbgrader course lives in ``classroom/``: ``classroom/source/<assignment>/`` holds the teacher's notebook
(solution regions, points, hidden tests). For each edition below, this script copies the course into a
temporary folder, runs the real ``nbgrader generate_assignment`` there, copies the student release into
``notebooks/`` and executes it in a fresh kernel (``scripts/execute_notebooks.py``), so what learners open and
what a classroom's ``nbgrader release_assignment`` hands out are the same notebook.
``tests/classroom/test_grading_workflow.py`` regenerates the release and compares it cell by cell.

Each language edition is one ``Edition`` entry: its own source notebook under ``classroom/source/``
(``exercises/`` English, ``exercises_zh/`` Chinese) and the place its student copy goes (``notebooks/en/``,
``notebooks/zh/``). The kernel that saves a copy runs in that copy's folder, so the workbook's messages come
out in the edition's language.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "classroom"
NOTEBOOKS = ROOT / "notebooks"
STUB_SOURCE = NOTEBOOKS / "stubs" / "my_json_text"
"""The learner's stub folder, kept once. The build-it-yourself assignments release byte copies of it, which
``make_stub_copies`` writes into ``classroom/source/<assignment>/my_json_text/`` (git-ignored: generated)."""

# The bin folder of the environment running this script: nbgrader runs `alembic` from PATH when it opens the
# gradebook, so that folder must come first on PATH even when the environment is not activated.
ENV_BIN = Path(sys.executable).parent


@dataclass(frozen=True, slots=True)
class Edition:
    """One language edition of an assignment: where nbgrader finds it and where its student copy is kept."""

    assignment: str
    notebook: str
    student_copy: Path


# The Chinese edition is its own assignment (a class is handed one language), built from its own teacher's copy,
# whose code cells are the English copy's byte for byte: the same solutions, points and hidden tests, only the
# prose differs. tests/classroom/test_grading_source.py holds the two editions' code cells equal.
EDITIONS: tuple[Edition, ...] = (
    Edition("exercises", "05_exercises.ipynb", NOTEBOOKS / "en" / "05_exercises.ipynb"),
    Edition("exercises_zh", "05_exercises.ipynb", NOTEBOOKS / "zh" / "05_exercises.ipynb"),
)

# The second assignment: notebook 07, whose graded cells run verify on the learner's folder my_json_text/. The
# assignment releases that folder's stubs beside the notebook (copies of STUB_SOURCE that make_stub_copies writes,
# which tests/classroom/test_build_it_yourself_source.py checks) and collects the learner's files with it.
BUILD_EDITIONS: tuple[Edition, ...] = (
    Edition("build_it_yourself", "07_build_it_yourself.ipynb", NOTEBOOKS / "en" / "07_build_it_yourself.ipynb"),
    Edition("build_it_yourself_zh", "07_build_it_yourself.ipynb", NOTEBOOKS / "zh" / "07_build_it_yourself.ipynb"),
)

ASSIGNMENTS: tuple[tuple[Edition, ...], ...] = (EDITIONS, BUILD_EDITIONS)
"""Each assignment's editions, English first: the editions of one assignment share their code cells."""


def source_notebook(edition: Edition) -> Path:
    """The teacher's copy of ``edition``: ``classroom/source/<assignment>/<notebook>``."""
    return COURSE / "source" / edition.assignment / edition.notebook


def code_cells(path: Path) -> list[dict[str, object]]:
    """What must be the same in every edition: each code cell's id, source and metadata (tags, nbgrader)."""
    import nbformat  # imported here so that `--help` works without the course's dependencies

    notebook = nbformat.read(path, as_version=4)
    return [
        {"id": cell.get("id"), "source": cell.source, "metadata": dict(cell.metadata)}
        for cell in notebook.cells
        if cell.cell_type == "code"
    ]


def editions_that_differ(editions: Sequence[Edition] = EDITIONS) -> list[str]:
    """The editions whose teacher's copy has code cells other than the first edition's, as sentences."""
    reference = code_cells(source_notebook(editions[0]))
    problems = []
    for edition in editions[1:]:
        cells = code_cells(source_notebook(edition))
        if len(cells) != len(reference):
            problems.append(
                f"{edition.assignment}: {len(cells)} code cells, {editions[0].assignment} has {len(reference)}"
            )
            continue
        for number, (mine, theirs) in enumerate(zip(cells, reference, strict=True), start=1):
            if mine != theirs:
                problems.append(
                    f"{edition.assignment}: code cell {number} ({mine['id']}) differs from {editions[0].assignment}"
                )
    return problems


class NbgraderFailed(RuntimeError):
    """An nbgrader command exited non-zero; the message holds the command and what it printed."""


def nbgrader_environment(home: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for nbgrader commands: this environment's bin first on PATH, and a private HOME.

    HOME and the Jupyter config, data and runtime folders point inside ``home`` so that a run neither reads a
    teacher's own nbgrader settings nor leaves files in their home folder.
    """
    environment = dict(os.environ if base is None else base)
    environment["PATH"] = os.pathsep.join([str(ENV_BIN), environment.get("PATH", "")])
    environment["HOME"] = str(home)
    environment["JUPYTER_CONFIG_DIR"] = str(home / ".jupyter")
    environment["JUPYTER_DATA_DIR"] = str(home / ".local" / "share" / "jupyter")
    environment["JUPYTER_RUNTIME_DIR"] = str(home / ".local" / "share" / "jupyter" / "runtime")
    environment.pop("JUPYTER_PATH", None)
    environment.pop("JUPYTER_CONFIG_PATH", None)
    home.mkdir(parents=True, exist_ok=True)
    return environment


def run_nbgrader(
    arguments: Sequence[str], course: Path, environment: Mapping[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``nbgrader ARGUMENTS`` inside ``course`` and return what it printed; a failure raises with its log."""
    command = [str(ENV_BIN / "nbgrader"), *arguments]
    result = subprocess.run(
        command, cwd=course, env=dict(environment), capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        raise NbgraderFailed(
            f"`nbgrader {' '.join(arguments)}` exited with {result.returncode}:\n{result.stdout}\n{result.stderr}"
        )
    return result


def make_stub_copies(course: Path = COURSE) -> list[Path]:
    """Write the stubs (``STUB_SOURCE``'s ``*.py``, byte for byte) into each build assignment's source folder."""
    folders = []
    for edition in BUILD_EDITIONS:
        folder = course / "source" / edition.assignment / STUB_SOURCE.name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for path in sorted(STUB_SOURCE.glob("*.py")):
            shutil.copyfile(path, folder / path.name)
        folders.append(folder)
    return folders


def copy_course(destination: Path) -> Path:
    """A working copy of the course (config, source notebooks, the stubs), so nbgrader never writes into the repo."""
    destination.mkdir(parents=True, exist_ok=True)
    # the config and the steps it loads from its own folder (outside_grade.py and what that imports, the collect)
    for path in (COURSE / "nbgrader_config.py", COURSE / "checked_collect.py", *sorted(COURSE.glob("outside_*.py"))):
        shutil.copy2(path, destination / path.name)
    ignored = shutil.ignore_patterns(".ipynb_checkpoints", STUB_SOURCE.name)
    shutil.copytree(COURSE / "source", destination / "source", ignore=ignored)
    make_stub_copies(destination)
    return destination


def generate_release(edition: Edition, workdir: Path) -> Path:
    """Run ``nbgrader generate_assignment`` on a copy of the course in ``workdir``; return the release notebook."""
    course = copy_course(workdir / "course")
    environment = nbgrader_environment(workdir / "home")
    run_nbgrader(["generate_assignment", edition.assignment, "--force"], course, environment)
    return course / "release" / edition.assignment / edition.notebook


def main(argv: Sequence[str]) -> int:
    if list(argv) == ["--stubs"]:
        for folder in make_stub_copies():
            print(f"{folder.relative_to(ROOT)}: the stubs of {STUB_SOURCE.relative_to(ROOT)}")
        return 0
    if argv:
        print(__doc__)
        return 2
    make_stub_copies()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from execute_notebooks import execute

    differ = [problem for editions in ASSIGNMENTS for problem in editions_that_differ(editions)]
    if differ:
        print("The editions' code cells must be identical (edit both teacher's copies):", *differ, sep="\n  ")
        return 1
    for edition in (edition for editions in ASSIGNMENTS for edition in editions):
        with tempfile.TemporaryDirectory(prefix="codeagent-release-") as workdir:
            release = generate_release(edition, Path(workdir))
            edition.student_copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(release, edition.student_copy)
        seconds = execute(edition.student_copy)
        print(f"{edition.student_copy.relative_to(ROOT)}: released by nbgrader, executed in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
