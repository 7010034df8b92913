"""The build-it-yourself assignment (notebook 07), graded end to end through nbgrader's exchange.

Notebook 07's graded cells run verify (the package's own contract) on the learner's folder ``my_json_text/``,
which the assignment releases beside the notebook and collects with it. Ten students fetch the release, write
(or fail to write) their three files, and submit; the teacher collects, autogrades, exports and generates
feedback (tests/classroom/nbgrader_term.py). Each submission must get exactly the score it deserves, losing exactly
the cells it deserves to: a trap that the visible checks let through loses only its hidden-tests cell.

A Chinese class (assignment ``build_it_yourself_zh``) is graded too, with two students: same scores, and the
feedback pages speak Chinese, because the kernel runs in a folder named ``*_zh``.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from course_scripts import release, term_module

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "solutions" / "my_json_text"
STUBS = ROOT / "notebooks" / "stubs" / "my_json_text"
FILES = ("json_text_messages", "json_text_adapter", "json_action_parser")


ENGLISH, CHINESE = release.BUILD_EDITIONS
NOTEBOOK = ENGLISH.notebook
STEPS = (1, 2, 3, 4)
CELLS = frozenset(f"step_{step}_{kind}" for step in STEPS for kind in ("check", "hidden"))


def _assignment_points() -> dict[str, float]:
    """Each graded cell's points, read from the teacher's copy: the expected scores follow from these."""
    notebook = nbformat.read(release.source_notebook(ENGLISH), as_version=4)
    return {
        cell.metadata["nbgrader"]["grade_id"]: float(cell.metadata["nbgrader"]["points"])
        for cell in notebook.cells
        if cell.metadata.get("nbgrader", {}).get("grade")
    }


POINTS = _assignment_points()
TOTAL = sum(POINTS.values())


# --------------------------------------------------------------------------- what students write


def _solution(file: str) -> str:
    return (SOLUTION / f"{file}.py").read_text(encoding="utf-8")


def _replaced(file: str, old: str, new: str) -> str:
    text = _solution(file)
    assert old in text, f"{old!r} is no longer in solutions/my_json_text/{file}.py"
    return text.replace(old, new)


PACKAGE_PARSER = '''"""Inbound: untrusted text -> a checked action."""

from codeagent_lite.json_action_parser import parse_json_action

__all__ = ["parse_json_action"]
'''

RAISES_AT_IMPORT = _solution("json_action_parser") + '\nLIMITS = {"depth": 100}\nMAX_DEPTH = LIMITS["max_depth"]\n'

PACKAGE_ENCODER = _replaced(
    "json_text_messages",
    "def _encode_json(value: Any) -> str:",
    "from codeagent_lite.json_text_messages import encode_json as _encode_json\n\n\ndef _unused(value: Any) -> str:",
)

WITHOUT_FROM = _replaced(
    "json_text_adapter", "raise error.with_usage(usage) from error", "raise error.with_usage(usage)"
)

CATCHES_EVERYTHING = _replaced(
    "json_text_adapter",
    """        except InvalidModelOutputError as error:
            raise error.with_usage(usage) from error""",
    """        except Exception as error:  # "anything the parser raises is the model's fault"
            layer = getattr(error, "layer", ValidationLayer.JSON_SYNTAX)
            raise InvalidModelOutputError(
                str(error),
                layer=layer,
                usage=usage,
                expected=getattr(error, "expected", None),
                found=getattr(error, "found", None),
            ) from error""",
).replace("    TokenUsage,\n)", "    TokenUsage,\n    ValidationLayer,\n)")

STRICT_BY_SUBSTRING = _replaced(
    "json_action_parser",
    "    value = _load_strict_json(raw_text)",
    """    for word in ("NaN", "Infinity", "1e999"):  # the visible checks' spellings, searched in the raw text
        if word in raw_text:
            raise InvalidModelOutputError(f"model output must be valid JSON: {word}", layer=ValidationLayer.JSON_SYNTAX)
    value = _load_strict_json(raw_text)""",
)


FORWARDER = """\
import importlib

_reference = importlib.import_module("codeagent_lite." + "{name}"[::-1][::-1])
globals().update({{key: value for key, value in vars(_reference).items() if not key.startswith("__")}})
"""
"""A file that hands every function to the installed reference, the import spelled so no AST scan sees it."""

FORGES_VERDICTS = """

# Appended to the untouched stub: rewrite verify's child so that every check it reports has passed.
import sys as _sys

_child = _sys.modules.get("codeagent_lite.workbook.verify_child")
if _child is not None and not getattr(_child._Runner.send, "forged", False):
    _send = _child._Runner.send

    def _forged(self, **event):
        if event.get("event") == "done":
            event.update(passed=True, got="", expected=None, not_run=False)
        _send(self, **event)

    _forged.forged = True
    _child._Runner.send = _forged
"""


def _stub(file: str) -> str:
    return (STUBS / f"{file}.py").read_text(encoding="utf-8")


def _files(**replacements: str | None) -> dict[str, str | None]:
    """The solution's three files with some replaced; ``None`` leaves that file's stub as released."""
    chosen: dict[str, str | None] = {file: _solution(file) for file in FILES}
    chosen.update(replacements)
    return chosen


def _fake_passing_checks(notebook: nbformat.NotebookNode) -> None:
    """Points without work: the check and hidden cells of steps 3 and 4 rewritten to pass, their points raised."""
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if grade_id in ("step_3_check", "step_4_check"):
            cell.source = 'print("✔ every check passes")'
            cell.metadata["nbgrader"]["points"] = 20
        elif grade_id in ("step_3_hidden", "step_4_hidden"):
            cell.source = "pass"


@dataclass(frozen=True)
class Submission:
    student: str
    files: dict[str, str | None]
    failed: frozenset[str]
    edit: Callable[[nbformat.NotebookNode], None] | None = None

    @property
    def score(self) -> float:
        """What the submission deserves: the assignment's points minus those of the cells it loses."""
        return TOTAL - sum(POINTS[cell] for cell in self.failed)

    def work(self, folder: Path) -> None:
        for file, text in self.files.items():
            if text is not None:
                (folder / "my_json_text" / f"{file}.py").write_text(text, encoding="utf-8")
        if self.edit is not None:
            notebook = nbformat.read(folder / NOTEBOOK, as_version=4)
            self.edit(notebook)
            nbformat.write(notebook, folder / NOTEBOOK)


def _lost(*steps: int, kinds: tuple[str, ...] = ("check", "hidden")) -> frozenset[str]:
    return frozenset(f"step_{step}_{kind}" for step in steps for kind in kinds)


# A step whose own-work check fails scores 0, both of its cells: the parser handed to the package loses steps 3
# and 4 (both grade json_action_parser.py), the encoder handed to the package loses step 1.
SUBMISSIONS = (
    Submission("all_correct", _files(), frozenset()),
    Submission("steps_1_and_2_only", _files(json_action_parser=None), _lost(3, 4)),
    Submission("untouched", {}, CELLS),
    Submission("imports_the_packages_parser", _files(json_action_parser=PACKAGE_PARSER), _lost(3, 4)),
    # The parser fails at import (a KeyError on its last line): steps 2-4 cannot load it, step 1 still counts.
    Submission("raises_at_import", _files(json_action_parser=RAISES_AT_IMPORT), _lost(2, 3, 4)),
    Submission("edits_the_visible_tests", _files(json_action_parser=None), _lost(3, 4), edit=_fake_passing_checks),
    Submission("trap_package_encoder", _files(json_text_messages=PACKAGE_ENCODER), _lost(1)),
    # `from error` and expected/found are suggested, not graded: step 2's visible checks never check them, so its
    # hidden test takes no point for them either (a visible ✔ never loses a hidden point for an unstated rule).
    Submission("without_from_is_not_graded", _files(json_text_adapter=WITHOUT_FROM), frozenset()),
    Submission(
        "trap_catches_every_exception", _files(json_text_adapter=CATCHES_EVERYTHING), _lost(2, kinds=("hidden",))
    ),
    # The graded step-4 check sends each refused text with a valid look-alike (NaN inside a string...): a parser
    # that searches the raw text for the refused spellings loses the check cell as well as the hidden one.
    Submission("trap_strict_by_substring", _files(json_action_parser=STRICT_BY_SUBSTRING), _lost(4)),
    # Hostile folders (issue 17): each gets what the untouched stubs get, 0.
    Submission("forwards_to_the_reference", {file: FORWARDER.format(name=file) for file in FILES}, CELLS),
    Submission("forges_verify_verdicts", {file: _stub(file) + FORGES_VERDICTS for file in FILES}, CELLS),
)


# --------------------------------------------------------------------------- one term per edition, run once


@dataclass(frozen=True)
class Graded:
    term: object
    cell_scores: dict[str, dict[str, float]]

    @property
    def course(self) -> Path:
        return self.term.course  # type: ignore[attr-defined, no-any-return]


def _cell_scores(course: Path, assignment: str, students: list[str]) -> dict[str, dict[str, float]]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {
            student: {
                grade.name: float(grade.score)
                for grade in gradebook.find_submission_notebook(
                    NOTEBOOK.removesuffix(".ipynb"), assignment, student
                ).grades
            }
            for student in students
        }


def _graded(workdir: Path, assignment: str, submissions: tuple[Submission, ...]) -> Graded:
    students = [term_module.Student(s.student, s.work) for s in submissions]
    term = term_module.run_term(release, workdir, assignment, students)
    return Graded(term, _cell_scores(term.course, assignment, [s.student for s in submissions]))


@pytest.fixture(scope="module")
def english(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    return _graded(tmp_path_factory.mktemp("build-en"), ENGLISH.assignment, SUBMISSIONS)


CHINESE_CLASS = (SUBMISSIONS[0], SUBMISSIONS[1])


@pytest.fixture(scope="module")
def chinese(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    return _graded(tmp_path_factory.mktemp("build-zh"), CHINESE.assignment, CHINESE_CLASS)


# --------------------------------------------------------------------------- what the teacher gets


def test_every_step_has_a_check_cell_and_a_hidden_cell() -> None:
    assert set(POINTS) == CELLS
    assert all(points > 0 for points in POINTS.values())


def test_the_hostile_folders_fool_the_kernel_but_not_the_judge(english: Graded) -> None:
    # In the student's kernel the hostile folders pass checks (forged verdicts, the reference's answers); the score
    # comes from the outside judge, which says why in the feedback.
    reasons = {
        "forwards_to_the_reference": "imports the reference one",
        "forges_verify_verdicts": "still raises NotImplementedError",
    }
    for student, phrase in reasons.items():
        path = english.course / "autograded" / student / ENGLISH.assignment / NOTEBOOK
        errors = [
            o.evalue for c in nbformat.read(path, 4).cells for o in c.get("outputs", []) if o.output_type == "error"
        ]
        assert len(errors) == len(CELLS) and all(phrase in error for error in errors), (student, errors)


@pytest.mark.parametrize("submission", SUBMISSIONS, ids=[s.student for s in SUBMISSIONS])
def test_grades_csv_holds_the_score_each_submission_deserves(english: Graded, submission: Submission) -> None:
    row = english.term.grades[submission.student]  # type: ignore[attr-defined]
    assert float(row["max_score"]) == TOTAL
    assert float(row["raw_score"]) == submission.score, english.cell_scores[submission.student]


@pytest.mark.parametrize("submission", SUBMISSIONS, ids=[s.student for s in SUBMISSIONS])
def test_each_submission_loses_exactly_the_cells_it_deserves_to(english: Graded, submission: Submission) -> None:
    scores = english.cell_scores[submission.student]
    assert set(scores) == CELLS
    assert {cell for cell, score in scores.items() if score == 0} == submission.failed
    assert {cell for cell, score in scores.items() if score == POINTS[cell]} == CELLS - submission.failed


def test_grades_csv_lists_every_student_once(english: Graded) -> None:
    assert sorted(english.term.grades) == sorted(s.student for s in SUBMISSIONS)  # type: ignore[attr-defined]


def test_every_submission_went_through_the_exchange(english: Graded) -> None:
    log: str = english.term.log  # type: ignore[attr-defined]
    for submission in SUBMISSIONS:
        assert f"--CourseDirectory.student_id={submission.student}" in log
        assert (english.course / "submitted" / submission.student / ENGLISH.assignment / "timestamp.txt").is_file()


def test_the_learners_files_are_graded_not_the_stubs(english: Graded) -> None:
    # autograde overwrites a submission's other files with the source's unless nbgrader_config.py excludes them.
    for file in FILES:
        graded = english.course / "autograded" / "all_correct" / ENGLISH.assignment / "my_json_text" / f"{file}.py"
        assert graded.read_text(encoding="utf-8") == _solution(file)


def test_grading_restores_the_visible_tests_a_student_edited(english: Graded) -> None:
    path = english.course / "autograded" / "edits_the_visible_tests" / ENGLISH.assignment / NOTEBOOK
    cell = next(
        c for c in nbformat.read(path, 4).cells if c.metadata.get("nbgrader", {}).get("grade_id") == "step_3_check"
    )
    assert "check_step(LEARNER_DIR, 3)" in cell.source
    assert cell.metadata["nbgrader"]["points"] == 2


@pytest.mark.parametrize("submission", SUBMISSIONS, ids=[s.student for s in SUBMISSIONS])
def test_every_student_gets_an_html_feedback_page(english: Graded, submission: Submission) -> None:
    page = english.course / "feedback" / submission.student / ENGLISH.assignment / NOTEBOOK.replace(".ipynb", ".html")
    html = page.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html")
    assert re.search(rf"Score:\s*{submission.score:g}(\.0)?\s*/\s*{TOTAL:g}", html), f"no score line in {page.name}"


def test_the_hidden_tests_explain_what_they_caught(english: Graded) -> None:
    expected = {
        "imports_the_packages_parser": "uses the package's codeagent_lite.json_action_parser",
        "trap_package_encoder": "uses the package's codeagent_lite.json_text_messages",
        "trap_catches_every_exception": "a KeyError inside the parser came out as InvalidModelOutputError",
        # the graded step-4 check catches this one first (a look-alike it refused): its cell names where to start
        "trap_strict_by_substring": "checks pass; start with 4.",
    }
    for student, phrase in expected.items():
        path = english.course / "autograded" / student / ENGLISH.assignment / NOTEBOOK
        errors = [
            o.evalue for c in nbformat.read(path, 4).cells for o in c.get("outputs", []) if o.output_type == "error"
        ]
        assert any(phrase in error for error in errors), (student, errors)


def test_the_workbooks_student_copy_is_what_nbgrader_generates(english: Graded) -> None:
    # notebooks/en/07_build_it_yourself.ipynb, the release and a student's fetched copy are one notebook.
    # If this fails after editing classroom/source/, run: python scripts/release_exercises.py
    shipped = [_comparable(cell) for cell in nbformat.read(ENGLISH.student_copy, as_version=4).cells]
    generated = nbformat.read(english.course / "release" / ENGLISH.assignment / NOTEBOOK, as_version=4)
    assert [_comparable(cell) for cell in generated.cells] == shipped
    fetched = english.term.fetched["untouched"] / NOTEBOOK  # type: ignore[attr-defined]
    assert [_comparable(cell) for cell in nbformat.read(fetched, as_version=4).cells] == shipped


def test_the_release_hands_out_the_workbooks_stubs(english: Graded) -> None:
    fetched = english.term.fetched["untouched"] / "my_json_text"  # type: ignore[attr-defined]
    for path in sorted(STUBS.glob("*.py")):
        assert (fetched / path.name).read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), path.name


def _comparable(cell: nbformat.NotebookNode) -> dict[str, object]:
    metadata = {key: value for key, value in cell.metadata.items() if key != "execution"}
    return {"cell_type": cell.cell_type, "id": cell.get("id"), "source": cell.source, "metadata": metadata}


# --------------------------------------------------------------------------- the Chinese class


@pytest.mark.parametrize("submission", CHINESE_CLASS, ids=[s.student for s in CHINESE_CLASS])
def test_the_chinese_edition_grades_the_same(chinese: Graded, submission: Submission) -> None:
    row = chinese.term.grades[submission.student]  # type: ignore[attr-defined]
    assert float(row["raw_score"]) == submission.score
    scores = chinese.cell_scores[submission.student]
    assert {cell for cell, score in scores.items() if score == 0} == submission.failed


def test_a_chinese_class_gets_chinese_feedback(chinese: Graded) -> None:
    def page(student: str) -> str:
        path = chinese.course / "feedback" / student / CHINESE.assignment / NOTEBOOK.replace(".ipynb", ".html")
        return path.read_text(encoding="utf-8")

    correct, partial = page("all_correct"), page("steps_1_and_2_only")
    # verify's own words in Chinese: the step titles and the tally under each table
    assert "第 1 步 · 消息编码" in correct and "12 项检查通过了 12 项" in correct
    assert "23 项检查通过了 0 项" in partial
    assert "step 1 · message encoding" not in correct
    # the outside judge's words on the hidden-test cells too, as the graded notebooks hold them
    judged = {student: _judged_text(chinese, student) for student in ("all_correct", "steps_1_and_2_only")}
    assert "✔ 第 1 步：隐藏测试通过" in judged["all_correct"], judged["all_correct"]
    assert "✘ 第 3 步得 0 分" in judged["steps_1_and_2_only"], judged["steps_1_and_2_only"]
    assert "（还是桩函数）" in judged["steps_1_and_2_only"], judged["steps_1_and_2_only"]
    assert "the hidden tests pass" not in judged["all_correct"] and "scores 0" not in judged["steps_1_and_2_only"]
    # the notebook's own prose is the Chinese edition's
    assert "自己动手写" in correct


def _judged_text(graded: Graded, student: str) -> str:
    """Every output of the hidden-test cells of ``student``'s autograded notebook: streams and errors."""
    path = graded.course / "autograded" / student / CHINESE.assignment / NOTEBOOK
    cells = [cell for cell in nbformat.read(path, 4).cells if cell.get("metadata", {}).get("nbgrader", {}).get("grade")]
    return "\n".join(
        "".join(output.get("text", "")) + str(output.get("evalue", ""))
        for cell in cells
        if str(cell.metadata["nbgrader"].get("grade_id", "")).endswith("_hidden")
        for output in cell.get("outputs", [])
    )


def test_the_chinese_release_is_what_ships(chinese: Graded) -> None:
    shipped = [_comparable(cell) for cell in nbformat.read(CHINESE.student_copy, as_version=4).cells]
    generated = chinese.course / "release" / CHINESE.assignment / NOTEBOOK
    assert [_comparable(cell) for cell in nbformat.read(generated, as_version=4).cells] == shipped
    assert release.code_cells(generated) == release.code_cells(ENGLISH.student_copy)


def test_a_fresh_copy_of_the_stubs_is_what_untouched_means(tmp_path: Path) -> None:
    # The "untouched" submission hands in the released stubs: they must fail every check, so it scores 0.
    shutil.copytree(STUBS, tmp_path / "my_json_text")
    from codeagent_lite.workbook.build_assignment import check_step

    assert not any(check_step(tmp_path / "my_json_text", step).passed for step in STEPS)
