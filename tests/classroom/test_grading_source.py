"""The teacher's copy is a well-formed nbgrader assignment, and the student copy gives nothing away.

Fast checks on the files alone; test_grading_workflow.py runs the real nbgrader commands on them.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from course_scripts import release
from traitlets.config import Config

ROOT = Path(__file__).resolve().parents[2]
COURSE = ROOT / "classroom"


EDITIONS = release.EDITIONS
HIDDEN_REGION = re.compile(r"^\s*### BEGIN HIDDEN TESTS\s*$(.*?)^\s*### END HIDDEN TESTS\s*$", re.M | re.S)
SOLUTION_REGION = re.compile(r"^\s*### BEGIN SOLUTION\s*$(.*?)^\s*### END SOLUTION\s*$", re.M | re.S)


def _source_path(edition: Any) -> Path:
    path: Path = release.source_notebook(edition)
    return path


def _by_grade_id(path: Path) -> dict[str, nbformat.NotebookNode]:
    cells = nbformat.read(path, as_version=4).cells
    ids = [cell.metadata["nbgrader"]["grade_id"] for cell in cells if "nbgrader" in cell.metadata]
    assert len(ids) == len(set(ids)), f"duplicate grade ids in {path.name}"
    return {cell.metadata["nbgrader"]["grade_id"]: cell for cell in cells if "nbgrader" in cell.metadata}


def _meta(cell: nbformat.NotebookNode) -> dict[str, Any]:
    meta: dict[str, Any] = cell.metadata["nbgrader"]
    return meta


@pytest.fixture(params=EDITIONS, ids=[edition.assignment for edition in EDITIONS])
def edition(request: pytest.FixtureRequest) -> Any:
    return request.param


def test_every_edition_has_a_teachers_copy_and_a_student_copy(edition: Any) -> None:
    assert _source_path(edition).is_file()
    assert edition.student_copy.is_file()


@pytest.mark.parametrize("number", range(1, 7))
def test_every_exercise_cell_is_a_solution_cell_with_its_solution_region(edition: Any, number: int) -> None:
    cell = _by_grade_id(_source_path(edition))[f"exercise_{number}_answer"]
    assert _meta(cell)["solution"] is True and _meta(cell)["grade"] is False and _meta(cell)["locked"] is False
    regions = SOLUTION_REGION.findall(cell.source)
    assert regions and all(region.strip() for region in regions)
    # The stub after the region is what a learner sees; it must still say "not implemented" or show placeholders.
    after = cell.source.rsplit("### END SOLUTION", 1)[1]
    before = cell.source.split("### BEGIN SOLUTION", 1)[0]
    assert "raise NotImplementedError" in after or "...," in before


@pytest.mark.parametrize("number", range(1, 6))
def test_a_self_check_earns_two_points_only_when_it_passes(edition: Any, number: int) -> None:
    cell = _by_grade_id(_source_path(edition))[f"exercise_{number}_check"]
    assert _meta(cell)["grade"] is True and _meta(cell)["locked"] is True and _meta(cell)["points"] == 2
    assert [region.strip() for region in HIDDEN_REGION.findall(cell.source)] == [
        "assert result.passed, result.summary()"
    ]


def test_the_optional_exercise_is_not_graded(edition: Any) -> None:
    cell = _by_grade_id(_source_path(edition))["exercise_6_check"]
    assert _meta(cell)["grade"] is False and _meta(cell)["locked"] is True


@pytest.mark.parametrize(("number", "points"), [(2, 2), (3, 1), (4, 1), (5, 1)])
def test_hidden_test_cells_hold_nothing_visible_but_a_comment(edition: Any, number: int, points: int) -> None:
    cell = _by_grade_id(_source_path(edition))[f"exercise_{number}_hidden"]
    assert _meta(cell)["grade"] is True and _meta(cell)["locked"] is True and _meta(cell)["points"] == points
    visible = HIDDEN_REGION.sub("", cell.source)
    assert all(line.startswith("#") for line in visible.splitlines() if line.strip())
    (region,) = HIDDEN_REGION.findall(cell.source)
    assert f"check_exercise_{number}(" in region, "a hidden test counts only after its self-check passes"


def test_the_points_add_up_to_15(edition: Any) -> None:
    cells = _by_grade_id(_source_path(edition)).values()
    assert sum(_meta(cell).get("points", 0) for cell in cells if _meta(cell)["grade"]) == 15


def test_cells_that_grading_relies_on_are_read_only(edition: Any) -> None:
    for grade_id, cell in _by_grade_id(_source_path(edition)).items():
        if cell.cell_type == "code" and not _meta(cell)["solution"]:
            assert _meta(cell)["locked"] is True, grade_id


def test_the_student_copy_holds_no_solution_and_no_hidden_test(edition: Any) -> None:
    student = nbformat.read(edition.student_copy, as_version=4)
    text = "\n".join(cell.source for cell in student.cells)
    assert "### BEGIN" not in text and "### END" not in text
    region_lines, open_lines = set(), set()
    for cell in nbformat.read(_source_path(edition), as_version=4).cells:
        regions = SOLUTION_REGION.findall(cell.source) + HIDDEN_REGION.findall(cell.source)
        region_lines |= {line.strip() for region in regions for line in region.splitlines() if line.strip()}
        outside = HIDDEN_REGION.sub("", SOLUTION_REGION.sub("", cell.source))
        open_lines |= {line.strip() for line in outside.splitlines()}
    secret_lines = region_lines - open_lines  # lines such as `return value` or an import may be in both
    assert len(secret_lines) > 100
    student_lines = {line.strip() for line in text.splitlines()}
    leaked = sorted(secret_lines & student_lines)
    assert leaked == []


def test_the_student_copys_cells_are_the_teachers_cells_in_the_same_order(edition: Any) -> None:
    source = nbformat.read(_source_path(edition), as_version=4)
    student = nbformat.read(edition.student_copy, as_version=4)
    assert [cell.get("id") for cell in student.cells] == [cell.get("id") for cell in source.cells]
    assert [cell.cell_type for cell in student.cells] == [cell.cell_type for cell in source.cells]


# --------------------------------------------------------------------------- the two language editions

BLOG_URL = "https://zhuanlan.zhihu.com/p/2077860124157277532"


def test_there_is_an_english_and_a_chinese_edition() -> None:
    assert [edition.student_copy.parent.name for edition in EDITIONS] == ["en", "zh"]
    assert len({_source_path(edition) for edition in EDITIONS}) == len(EDITIONS)
    assert len({edition.assignment for edition in EDITIONS}) == len(EDITIONS)


def test_every_editions_teachers_copy_has_the_english_code_cells() -> None:
    # Same solutions, points and hidden tests in every language: grading the Chinese edition is grading the
    # English one (test_grading_workflow.py runs the whole term on the English edition only).
    assert release.editions_that_differ() == []


def test_every_editions_student_copy_has_the_english_code_cells(edition: Any) -> None:
    assert release.code_cells(edition.student_copy) == release.code_cells(EDITIONS[0].student_copy)


def test_a_code_cell_that_differs_between_editions_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    english, chinese = EDITIONS[0], EDITIONS[1]
    for edition in (english, chinese):
        (tmp_path / "source" / edition.assignment).mkdir(parents=True)
        notebook = nbformat.read(_source_path(edition), as_version=4)
        if edition is chinese:
            cell = next(c for c in notebook.cells if c.get("id") == "exercise_2_hidden")
            cell.metadata["nbgrader"]["points"] = 1
        nbformat.write(notebook, tmp_path / "source" / edition.assignment / edition.notebook)
    monkeypatch.setattr(release, "COURSE", tmp_path)
    code_cells = [cell for cell in nbformat.read(_source_path(english), as_version=4).cells if cell.cell_type == "code"]
    number = next(n for n, cell in enumerate(code_cells, start=1) if cell.get("id") == "exercise_2_hidden")
    assert release.editions_that_differ() == [
        f"{chinese.assignment}: code cell {number} (exercise_2_hidden) differs from {english.assignment}"
    ]


def test_each_student_copy_opens_with_the_blog_the_glossary_and_the_other_edition(edition: Any) -> None:
    opening = nbformat.read(edition.student_copy, as_version=4).cells[0].source
    other = "zh" if edition.student_copy.parent.name == "en" else "en"
    assert BLOG_URL in opening
    assert "../glossary.md" in opening
    assert f"../{other}/{edition.notebook}" in opening


def test_the_chinese_student_copy_is_written_in_chinese() -> None:
    (chinese,) = [edition for edition in EDITIONS if edition.student_copy.parent.name == "zh"]
    markdown = [c.source for c in nbformat.read(chinese.student_copy, as_version=4).cells if c.cell_type == "markdown"]
    for text in markdown:
        han = len(re.findall(r"[\u4e00-\u9fff]", text))
        latin_words = len(re.findall(r"\b[A-Za-z]{4,}\b", re.sub(r"`[^`]*`|\([^)]*\)|<[^>]*>", "", text)))
        assert han > 2 * latin_words, f"mostly not Chinese: {text[:80]!r}"


def test_the_config_keeps_each_stubs_own_raise() -> None:
    # A comment-only stub: exercise 3's cell (a dict at the top level) must not raise when a learner runs it.
    config = Config()
    code = (COURSE / "nbgrader_config.py").read_text(encoding="utf-8")
    exec(
        compile(code, "nbgrader_config.py", "exec"),
        {"get_config": lambda: config, "__file__": str(COURSE / "nbgrader_config.py")},
    )
    assert config.CourseDirectory.course_id == "codeagent-lite"
    stub = config.ClearSolutions.code_stub["python"]
    assert all(line.lstrip().startswith("#") for line in stub.splitlines())


def test_nbgrader_runs_with_this_environment_first_on_path_and_a_private_home(tmp_path: Path) -> None:
    environment = release.nbgrader_environment(tmp_path / "home", {"PATH": "/usr/bin", "JUPYTER_PATH": "/elsewhere"})
    assert environment["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert (Path(environment["PATH"].split(":")[0]) / "alembic").exists()
    for name in ("HOME", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR"):
        assert environment[name].startswith(str(tmp_path / "home")), name
    assert "JUPYTER_PATH" not in environment
