"""A term of grading, end to end, with the real nbgrader commands a teacher types.

In a temporary course folder (its own HOME and Jupyter folders): ``generate_assignment`` builds the student
copy from ``classroom/source/``, ``release_assignment`` puts it in an exchange, and each of ten students
``fetch_assignment``s it into a folder of their own, answers in it and ``submit``s; the teacher ``collect``s,
``autograde``s, ``export``s and runs ``generate_feedback`` over all of them (tests/classroom/nbgrader_term.py). The
test asserts the exact score each submission deserves, which cells earned it, and that every student gets an HTML
feedback page.

The term is graded on the English edition only. The Chinese edition (assignment ``exercises_zh``) has the same code
cells, which test_grading_source.py checks, so it grades the same; here its student copy is regenerated with
``generate_assignment`` and compared with the one that ships, as the English one is, and its release is compared
with the English release code cell by code cell.

The submissions are the ones a teacher meets: all correct, partly wrong, untouched, one whose cell raises, one
that edits the visible tests to pass, one per hidden-test trap (a wrong answer that the visible self-check
lets through), and one per rule a hidden test also applies. Each trap must lose exactly its hidden-test cell, which
proves that hidden test catches it; each broken rule loses its self-check too, so a visible ✔ never hides it.

The exchange names a submission after the operating-system account that runs ``submit`` unless
``CourseDirectory.student_id`` says otherwise; all ten students here are one account, so each submits under their
own name with it, as the classroom server's students do (nbgrader_term.py says more).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import pytest
from course_scripts import release, term_module

ROOT = Path(__file__).resolve().parents[2]


EDITION = release.EDITIONS[0]
ASSIGNMENT = EDITION.assignment
NOTEBOOK = EDITION.notebook
SOURCE = ROOT / "classroom" / "source" / ASSIGNMENT / NOTEBOOK
MARKER = re.compile(r"^\s*### (BEGIN|END) (SOLUTION|HIDDEN TESTS)\s*$")


def _source_cells() -> dict[str, nbformat.NotebookNode]:
    notebook = nbformat.read(SOURCE, as_version=4)
    return {cell.metadata["nbgrader"]["grade_id"]: cell for cell in notebook.cells if "nbgrader" in cell.metadata}


def _points() -> dict[str, float]:
    return {
        grade_id: float(cell.metadata["nbgrader"]["points"])
        for grade_id, cell in _source_cells().items()
        if cell.metadata["nbgrader"].get("grade")
    }


def _solution(number: int) -> str:
    """The teacher's answer for exercise ``number`` as a student would type it: the region markers dropped."""
    source = _source_cells()[f"exercise_{number}_answer"].source
    return "\n".join(line for line in source.splitlines() if not MARKER.match(line))


CORRECT = {f"exercise_{n}_answer": _solution(n) for n in range(1, 7)}

# --------------------------------------------------------------------------- the wrong answers

LAYER_2_REJECTS_EMPTY = """\
from typing import Any

from codeagent_lite import InvalidModelOutputError, ValidationLayer


def my_check_top_level_object(value: Any) -> dict[str, Any]:
    if not value or not isinstance(value, dict):  # "an empty object is no action" - but layer 2 must let it pass
        raise InvalidModelOutputError(
            "model output must be an object",
            layer=ValidationLayer.TOP_LEVEL_OBJECT,
            expected="a JSON object",
            found=type(value).__name__,
        )
    return value
"""

LAYER_2_CALLS_THE_PACKAGE = """\
from typing import Any

from codeagent_lite import check_top_level_object


def my_check_top_level_object(value: Any) -> dict[str, Any]:
    return check_top_level_object(value)
"""

LAYER_2_QUESTION_MARKS = """\
from typing import Any

from codeagent_lite import InvalidModelOutputError, ValidationLayer


def my_check_top_level_object(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    raise InvalidModelOutputError(
        "model output must be an object", layer=ValidationLayer.TOP_LEVEL_OBJECT, expected="?", found="?"
    )
"""

PREDICTIONS_WITH_TWO_MISTAKES = _solution(3).replace('"E": 1,', '"E": 4,').replace('"G": 3,', '"G": 4,')

PREDICTIONS_COMPUTED = """\
from codeagent_lite import diagnose
from codeagent_lite.workbook.exercise_checks import PREDICTION_OUTPUTS

predictions = {label: diagnose(text).rejected_by for label, text in PREDICTION_OUTPUTS.items()}
"""

ADAPTER_RAISES_WITHOUT_FROM = _solution(4).replace(
    "raise error.with_usage(usage) from error", "raise error.with_usage(usage)"
)

ADAPTER_HARD_CODES_TOKENS = _solution(4).replace(
    "raise error.with_usage(usage) from error", "raise error.with_usage(TokenUsage(80, 7)) from error"
)
"""The self-check's token counts typed in: the self-check passes, fresh counts in the hidden cell do not."""

ADAPTER_CELL_THAT_RAISES = (
    "from codeagent_lite import TokenCounter  # no such name: the whole cell fails\n\n" + _solution(4)
)

CORRECTION_STUFFED = """\
from codeagent_lite import InvalidModelOutputError


def correction_message(error: InvalidModelOutputError) -> str:
    return (
        "Rejected: layer 1 JSON syntax, layer 2 top-level object, layer 3 action type, layer 4 fields and types. "
        f"Expected {error.expected}; found {error.found}. Send exactly one JSON object."
    )
"""


PATCHES_THE_CHECKS = """\
# Every exercise left as released; instead, the checks the locked cells import are replaced by ones that pass.
from codeagent_lite.workbook import exercise_checks


def _always_passes(number):
    def check(*args, **kwargs):
        print(f"✔ Exercise {number} passed")
        return exercise_checks.ExerciseVerdict(exercise=number, problems=())

    return check


for _number in range(1, 7):
    setattr(exercise_checks, f"check_exercise_{_number}", _always_passes(_number))
"""

COURSE_PROBE = """\
# Every exercise left as released; this cell tries to read the teacher's environment, write the gradebook and
# read (and overwrite) another student's submission while autograde runs it. Each attempt's outcome is printed
# for the teacher's test.
import os
import pathlib

course = pathlib.Path.cwd().parents[1].parent
attempts = {
    "read the teacher's secret": lambda: os.environ["CAL_TEST_TEACHER_SECRET"],
    "write the gradebook": lambda: (course / "gradebook.db").open("ab").write(b"forged"),
    "read a submission": lambda: next((course / "submitted" / "all_correct").rglob("*.ipynb")).read_bytes(),
    "overwrite a submission": lambda: next((course / "submitted" / "all_correct").rglob("*.ipynb")).write_text("{}"),
    "leave a file in the course": lambda: (course / "planted.txt").write_text("mine"),
}
for what, attempt in attempts.items():
    try:
        attempt()
    except Exception as error:
        print(f"{what}: refused ({type(error).__name__})")
    else:
        print(f"{what}: DONE")
"""


def _fake_passing_checks(notebook: nbformat.NotebookNode) -> None:
    """What a student who wants points without work does: the self-check and hidden cells of exercise 2 rewritten."""
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id == "exercise_2_check":
            cell.source = 'print("✔ Exercise 2 passed")'
            cell.metadata["nbgrader"]["points"] = 20
            cell.metadata["editable"] = True
        elif grade_id == "exercise_2_hidden":
            cell.source = "pass"


@dataclass(frozen=True)
class Submission:
    """One student's notebook: the release with these answer cells replaced, then ``edit`` applied."""

    student: str
    answers: dict[str, str]
    failed: frozenset[str]
    edit: Callable[[nbformat.NotebookNode], None] | None = field(default=None)

    @property
    def score(self) -> float:
        """What the submission deserves: the assignment's points minus those of the cells it loses."""
        return TOTAL - sum(_points()[grade_id] for grade_id in self.failed)


def _with(**answers: str | None) -> dict[str, str]:
    """The correct answers with some replaced; ``None`` leaves that exercise's cell as released (untouched)."""
    chosen = dict(CORRECT)
    for name, code in answers.items():
        if code is None:
            del chosen[f"{name}_answer"]
        else:
            chosen[f"{name}_answer"] = code
    return chosen


ALL_CHECKS = frozenset(_points())
TOTAL = sum(_points().values())
SUBMISSIONS = (
    Submission("all_correct", CORRECT, frozenset()),
    Submission(
        "partly_wrong",
        _with(exercise_2=LAYER_2_REJECTS_EMPTY, exercise_3=PREDICTIONS_WITH_TWO_MISTAKES, exercise_4=None),
        frozenset({f"exercise_{n}_{kind}" for n in (2, 3, 4) for kind in ("check", "hidden")}),
    ),
    Submission("untouched", {}, ALL_CHECKS),
    Submission(
        "cell_raises", _with(exercise_4=ADAPTER_CELL_THAT_RAISES), frozenset({"exercise_4_check", "exercise_4_hidden"})
    ),
    Submission(
        "edits_visible_tests",
        _with(exercise_2=None),
        frozenset({"exercise_2_check", "exercise_2_hidden"}),
        _fake_passing_checks,
    ),
    Submission("trap_package_layer_2", _with(exercise_2=LAYER_2_CALLS_THE_PACKAGE), frozenset({"exercise_2_hidden"})),
    # Rules the prompt states and the self-check checks: a wrong answer loses the check, and with it the hidden cell.
    Submission(
        "rule_question_marks",
        _with(exercise_2=LAYER_2_QUESTION_MARKS),
        frozenset({"exercise_2_check", "exercise_2_hidden"}),
    ),
    Submission("trap_computed_predictions", _with(exercise_3=PREDICTIONS_COMPUTED), frozenset({"exercise_3_hidden"})),
    Submission(
        "rule_raise_without_from",
        _with(exercise_4=ADAPTER_RAISES_WITHOUT_FROM),
        frozenset({"exercise_4_check", "exercise_4_hidden"}),
    ),
    Submission(
        "rule_stuffed_correction",
        _with(exercise_5=CORRECTION_STUFFED),
        frozenset({"exercise_5_check", "exercise_5_hidden"}),
    ),
    Submission("trap_hard_coded_tokens", _with(exercise_4=ADAPTER_HARD_CODES_TOKENS), frozenset({"exercise_4_hidden"})),
    # Hostile answer cells (issues 17 and 19): each gets what the untouched copy gets, 0.
    Submission("patches_the_checks", {"exercise_1_answer": PATCHES_THE_CHECKS}, ALL_CHECKS),
    Submission("probes_the_course", {"exercise_6_answer": COURSE_PROBE}, ALL_CHECKS),
)


# --------------------------------------------------------------------------- one term, run once for all tests


@dataclass(frozen=True)
class GradedCourse:
    course: Path
    fetched: Path
    grades: dict[str, dict[str, str]]
    cell_scores: dict[str, dict[str, float]]
    log: str


def _answer(folder: Path, submission: Submission) -> None:
    """What the student does in their fetched copy before ``nbgrader submit``: fill in the answer cells."""
    notebook = nbformat.read(folder / NOTEBOOK, as_version=4)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in submission.answers:
            cell.source = submission.answers[grade_id]
    if submission.edit is not None:
        submission.edit(notebook)
    nbformat.write(notebook, folder / NOTEBOOK)


TEACHER_SECRET = "CAL_TEST_TEACHER_SECRET"


def _cell_scores(course: Path) -> dict[str, dict[str, float]]:
    from nbgrader.api import Gradebook

    scores: dict[str, dict[str, float]] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for submission in SUBMISSIONS:
            notebook = gradebook.find_submission_notebook(
                NOTEBOOK.removesuffix(".ipynb"), ASSIGNMENT, submission.student
            )
            scores[submission.student] = {grade.name: float(grade.score) for grade in notebook.grades}
    return scores


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> GradedCourse:
    students = [
        term_module.Student(submission.student, lambda folder, submission=submission: _answer(folder, submission))
        for submission in SUBMISSIONS
    ]
    # A secret in the teacher's environment while autograde runs (an API key, a token): no student's code sees it.
    os.environ[TEACHER_SECRET] = "sk-teacher-only"
    try:
        term = term_module.run_term(release, tmp_path_factory.mktemp("classroom"), ASSIGNMENT, students)
    finally:
        del os.environ[TEACHER_SECRET]
    fetched = term.fetched["untouched"] / NOTEBOOK
    return GradedCourse(term.course, fetched, term.grades, _cell_scores(term.course), term.log)


# --------------------------------------------------------------------------- what the teacher gets


def test_every_exercise_is_graded() -> None:
    assert {grade_id.rpartition("_")[0] for grade_id in ALL_CHECKS} == {f"exercise_{n}" for n in range(1, 6)}


@pytest.mark.parametrize("submission", SUBMISSIONS, ids=[s.student for s in SUBMISSIONS])
def test_grades_csv_holds_the_score_each_submission_deserves(graded: GradedCourse, submission: Submission) -> None:
    row = graded.grades[submission.student]
    assert row["assignment"] == ASSIGNMENT
    assert float(row["max_score"]) == TOTAL
    assert float(row["raw_score"]) == submission.score, graded.cell_scores[submission.student]


@pytest.mark.parametrize("submission", SUBMISSIONS, ids=[s.student for s in SUBMISSIONS])
def test_each_submission_loses_exactly_the_cells_it_deserves_to(graded: GradedCourse, submission: Submission) -> None:
    scores = graded.cell_scores[submission.student]
    assert set(scores) == ALL_CHECKS
    failed = {grade_id for grade_id, score in scores.items() if score == 0}
    assert failed == submission.failed
    full = {grade_id for grade_id, score in scores.items() if score == _points()[grade_id]}
    assert full == ALL_CHECKS - submission.failed
    assert sum(scores.values()) == submission.score


def test_patching_the_checks_fools_the_kernel_but_not_the_judge(graded: GradedCourse) -> None:
    # In the student's kernel every locked check cell printed a pass; the outside judge's verdict replaced each.
    path = graded.course / "autograded" / "patches_the_checks" / ASSIGNMENT / NOTEBOOK
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            kinds = [output.output_type for output in cell.outputs]
            assert "error" in kinds, cell.metadata["nbgrader"]["grade_id"]
            assert not any("passed" in output.get("text", "") for output in cell.outputs)


def test_autograde_ran_the_students_code_without_the_teachers_rights(graded: GradedCourse) -> None:
    # The probing cell ran in the student's kernel during autograde (inside bubblewrap): every attempt refused.
    path = graded.course / "autograded" / "probes_the_course" / ASSIGNMENT / NOTEBOOK
    cell = next(
        c
        for c in nbformat.read(path, as_version=4).cells
        if c.metadata.get("nbgrader", {}).get("grade_id") == "exercise_6_answer"
    )
    printed = "".join(output.get("text", "") for output in cell.outputs)
    attempts = ("read the teacher's secret", "write the gradebook", "read a submission", "overwrite a submission")
    for attempt in (*attempts, "leave a file in the course"):
        assert f"{attempt}: refused" in printed, printed
    assert not (graded.course / "planted.txt").exists()
    submitted = next((graded.course / "submitted" / "all_correct").rglob("*.ipynb"))
    assert nbformat.read(submitted, as_version=4).cells  # still the student's notebook, not "{}"
    assert b"forged" not in (graded.course / "gradebook.db").read_bytes()


def test_grades_csv_lists_every_student_once(graded: GradedCourse) -> None:
    assert sorted(graded.grades) == sorted(s.student for s in SUBMISSIONS)


def test_every_submission_went_through_the_exchange(graded: GradedCourse) -> None:
    # collect copied each student's submission out of the exchange, named as the student submitted it
    for submission in SUBMISSIONS:
        assert f"--CourseDirectory.student_id={submission.student}" in graded.log
        assert (graded.course / "submitted" / submission.student / ASSIGNMENT / "timestamp.txt").is_file()
    assert f"Processing {len(SUBMISSIONS)} submissions of '{ASSIGNMENT}'" in graded.log


def test_grading_restores_the_visible_tests_a_student_edited(graded: GradedCourse) -> None:
    autograded = nbformat.read(graded.course / "autograded" / "edits_visible_tests" / ASSIGNMENT / NOTEBOOK, 4)
    cell = next(c for c in autograded.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "exercise_2_check")
    assert "check_exercise_2(my_check_top_level_object)" in cell.source
    assert cell.metadata["nbgrader"]["points"] == 2
    assert "Attribute 'points' for cell exercise_2_check has changed" in graded.log


@pytest.mark.parametrize("submission", SUBMISSIONS, ids=[s.student for s in SUBMISSIONS])
def test_every_student_gets_an_html_feedback_page(graded: GradedCourse, submission: Submission) -> None:
    page = graded.course / "feedback" / submission.student / ASSIGNMENT / NOTEBOOK.replace(".ipynb", ".html")
    html = page.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html")
    assert re.search(rf"Score:\s*{submission.score:g}(\.0)?\s*/\s*{TOTAL:g}", html), f"no score line in {page.name}"


def test_the_workbooks_student_copy_is_what_nbgrader_generates(graded: GradedCourse) -> None:
    # notebooks/en/05_exercises.ipynb, the release generate_assignment just wrote and the copy a student fetched
    # from the exchange are one notebook, cell for cell (sources and metadata; only the saved outputs differ).
    # If this fails after editing classroom/source/, run: python scripts/release_exercises.py
    shipped = [_comparable(cell) for cell in nbformat.read(EDITION.student_copy, as_version=4).cells]
    generated = nbformat.read(graded.course / "release" / ASSIGNMENT / NOTEBOOK, as_version=4)
    assert [_comparable(cell) for cell in generated.cells] == shipped
    fetched = nbformat.read(graded.fetched, as_version=4)
    assert [_comparable(cell) for cell in fetched.cells] == shipped


OTHER_EDITIONS = release.EDITIONS[1:]


@pytest.mark.parametrize("edition", OTHER_EDITIONS, ids=[edition.assignment for edition in OTHER_EDITIONS])
def test_every_other_editions_student_copy_is_what_nbgrader_generates(
    graded: GradedCourse, edition: Any, tmp_path: Path
) -> None:
    # One more generate_assignment (a few seconds), no second autograde: the code cells of this edition's release
    # are the English release's, and the English release was just graded.
    # If this fails after editing classroom/source/, run: python scripts/release_exercises.py
    generated = release.generate_release(edition, tmp_path)
    shipped = [_comparable(cell) for cell in nbformat.read(edition.student_copy, as_version=4).cells]
    assert [_comparable(cell) for cell in nbformat.read(generated, as_version=4).cells] == shipped
    assert release.code_cells(generated) == release.code_cells(graded.course / "release" / ASSIGNMENT / NOTEBOOK)


def _comparable(cell: nbformat.NotebookNode) -> dict[str, Any]:
    metadata = {key: value for key, value in cell.metadata.items() if key != "execution"}
    return {"cell_type": cell.cell_type, "id": cell.get("id"), "source": cell.source, "metadata": metadata}


def test_the_hidden_tests_explain_what_they_caught(graded: GradedCourse) -> None:
    # The feedback a trap gets names its mistake, so a student can learn from the lost point.
    expected = {
        "trap_package_layer_2": "calls the package's check_top_level_object",
        "rule_question_marks": "does not say that an object was expected",
        "trap_computed_predictions": "computed, not predicted",
        "rule_raise_without_from": "raise error.with_usage(usage) from error",
        "rule_stuffed_correction": "name only the layer that refused the reply",
        "trap_hard_coded_tokens": "so it must carry TokenUsage(",
    }
    for student, phrase in expected.items():
        autograded = nbformat.read(graded.course / "autograded" / student / ASSIGNMENT / NOTEBOOK, as_version=4)
        errors = [
            output.evalue
            for cell in autograded.cells
            for output in cell.get("outputs", [])
            if output.output_type == "error"
        ]
        assert any(phrase in error for error in errors), (student, errors)
