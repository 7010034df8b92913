"""The build-it-yourself assignment's teacher's copy and its hidden tests, checked without nbgrader, in seconds.

test_build_it_yourself_grading.py grades a class through nbgrader; here the hidden cells run directly (check cell,
then hidden cell, in one namespace, as the kernel runs them) on right answers and on more variants of each trap,
and the helpers behind them (``codeagent_lite.workbook.build_assignment``) are held to what they promise.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import nbformat
import pytest
from course_scripts import release

from codeagent_lite.workbook.build_assignment import chapter_imports, learner_folder, load_learner_file, package_calls

ROOT = Path(__file__).resolve().parents[2]
STUBS = ROOT / "notebooks" / "stubs" / "my_json_text"
SOLUTION = ROOT / "solutions" / "my_json_text"
BLOG_SOLUTION = ROOT / "solutions" / "blog_json_text"
HIDDEN_REGION = re.compile(r"^\s*### BEGIN HIDDEN TESTS\s*$(.*?)^\s*### END HIDDEN TESTS\s*$", re.M | re.S)


EDITIONS = release.BUILD_EDITIONS


def _cells(edition: Any = EDITIONS[0]) -> dict[str, nbformat.NotebookNode]:
    notebook = nbformat.read(release.source_notebook(edition), as_version=4)
    return {cell.metadata["nbgrader"]["grade_id"]: cell for cell in notebook.cells if "nbgrader" in cell.metadata}


# --------------------------------------------------------------------------- the teacher's copy


@pytest.mark.parametrize("edition", EDITIONS, ids=[e.assignment for e in EDITIONS])
def test_one_check_and_one_hidden_cell_per_step_all_read_only(edition: Any) -> None:
    cells = _cells(edition)
    for step in (1, 2, 3, 4):
        check, hidden = cells[f"step_{step}_check"], cells[f"step_{step}_hidden"]
        for cell, points in ((check, 2), (hidden, 1)):
            meta = cell.metadata["nbgrader"]
            assert meta["grade"] is True and meta["locked"] is True and meta["solution"] is False
            assert meta["points"] == points
        assert f"check_step(LEARNER_DIR, {step})" in check.source
        assert [region.strip() for region in HIDDEN_REGION.findall(check.source)] == [
            f"assert step_{step}.passed, step_{step}.summary()"
        ]
        visible = HIDDEN_REGION.sub("", hidden.source)
        assert all(line.startswith("#") for line in visible.splitlines() if line.strip())
        (region,) = HIDDEN_REGION.findall(hidden.source)
        assert f"assert step_{step}.passed" in region, "a hidden test counts only after its step's checks pass"


def test_the_editions_share_their_code_cells() -> None:
    assert release.editions_that_differ(EDITIONS) == []
    assert release.code_cells(EDITIONS[0].student_copy) == release.code_cells(EDITIONS[1].student_copy)


@pytest.mark.parametrize("edition", EDITIONS, ids=[e.assignment for e in EDITIONS])
def test_the_student_copy_holds_no_hidden_test(edition: Any) -> None:
    student = "\n".join(cell.source for cell in nbformat.read(edition.student_copy, as_version=4).cells)
    assert "### BEGIN" not in student and "### END" not in student
    assert "package_calls" not in student and "STRICT_REPLIES" not in student


def _same_as_the_stubs(folder: Path) -> None:
    assert sorted(p.name for p in folder.iterdir() if p.is_file()) == sorted(p.name for p in STUBS.glob("*.py"))
    for path in STUBS.glob("*.py"):
        assert (folder / path.name).read_bytes() == path.read_bytes(), f"{folder}: {path.name} differs"


def test_the_stub_folder_is_kept_once() -> None:
    # The course's copies are made by the release script, never committed: one stub folder in the repository.
    assert release.STUB_SOURCE == STUBS
    listed = subprocess.run(
        ["git", "ls-files", "classroom/source"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.split()
    if listed:  # a git checkout (a source tarball has no index to ask)
        assert not [path for path in listed if "/my_json_text/" in path]


@pytest.mark.parametrize("edition", EDITIONS, ids=[e.assignment for e in EDITIONS])
def test_the_assignment_releases_the_workbooks_stubs(edition: Any, tmp_path: Path) -> None:
    # What every release and every test course gets: byte copies made by the release script.
    course = release.copy_course(tmp_path / "course")
    _same_as_the_stubs(course / "source" / edition.assignment / "my_json_text")
    # And the teacher's own course folder, once the script has made its copies there.
    release.make_stub_copies()
    _same_as_the_stubs(release.source_notebook(edition).parent / "my_json_text")


def test_autograde_is_told_to_keep_the_learners_files() -> None:
    from traitlets.config import Config

    config = Config()
    code = (ROOT / "classroom" / "nbgrader_config.py").read_text(encoding="utf-8")
    exec(
        compile(code, "nbgrader_config.py", "exec"),
        {"get_config": lambda: config, "__file__": str(ROOT / "classroom" / "nbgrader_config.py")},
    )
    for edition in EDITIONS:
        kept = set(config.Autograde.exclude_overwriting[edition.assignment])
        assert kept == {f"my_json_text/{path.name}" for path in STUBS.glob("*.py")}


# --------------------------------------------------------------------------- the hidden cells, run directly


def _verdicts(folder: Path) -> dict[str, str | None]:
    """Each graded cell's failure (None when it passed), running the notebook's cells in order in one namespace."""
    cells = _cells()
    namespace: dict[str, Any] = {"__name__": "__main__", "display": lambda value: None}
    exec(compile(cells["learner_folder"].source, "learner_folder", "exec"), namespace)
    namespace["LEARNER_DIR"] = str(folder)  # where the setup cell would find it in a release
    verdicts: dict[str, str | None] = {}
    for step in (1, 2, 3, 4):
        for kind in ("check", "hidden"):
            grade_id = f"step_{step}_{kind}"
            source = re.sub(r"^\s*### (BEGIN|END) HIDDEN TESTS\s*$", "", cells[grade_id].source, flags=re.M)
            try:
                exec(compile(source, grade_id, "exec"), namespace)
            except Exception as error:
                verdicts[grade_id] = f"{type(error).__name__}: {error}"
            else:
                verdicts[grade_id] = None
    return verdicts


def _folder(tmp_path: Path, name: str, **files: str) -> Path:
    """A learner folder (a fresh name each time: one process may load many) from the solution, some files replaced."""
    folder = tmp_path / name / "my_json_text"
    shutil.copytree(SOLUTION, folder)
    for file, text in files.items():
        (folder / f"{file}.py").write_text(text, encoding="utf-8")
    return folder


def _failed(verdicts: dict[str, str | None]) -> set[str]:
    return {grade_id for grade_id, verdict in verdicts.items() if verdict is not None}


def test_the_solution_passes_every_cell() -> None:
    assert _failed(_verdicts(SOLUTION)) == set()


def test_the_blog_stage_passes_steps_1_to_3() -> None:
    assert _failed(_verdicts(BLOG_SOLUTION)) == {"step_4_check", "step_4_hidden"}


def test_the_stubs_pass_nothing() -> None:
    assert _failed(_verdicts(STUBS)) == {f"step_{s}_{k}" for s in (1, 2, 3, 4) for k in ("check", "hidden")}


PARSER_TRAPS = {
    "imported": "from codeagent_lite.json_action_parser import parse_json_action\n",
    "from the top level": "from codeagent_lite import parse_json_action\n",
    "through the package name": "import codeagent_lite\n\n\ndef parse_json_action(raw_text):\n"
    "    return codeagent_lite.parse_json_action(raw_text)\n",
    "through importlib": "import importlib\n\n"
    '_theirs = importlib.import_module("codeagent_lite." + "json_action_parser")\n\n\n'
    "def parse_json_action(raw_text):\n    return _theirs.parse_json_action(raw_text)\n",
}


def _cells_of(*steps: int) -> set[str]:
    return {f"step_{step}_{kind}" for step in steps for kind in ("check", "hidden")}


# Traps that reach the package's parser while the file loads: the adapter, which imports the learner's parser, then
# fails to load as well, so step 2 fails beside steps 3 and 4 (the two steps that judge the parser).
LOADS_THE_PACKAGE_AT_IMPORT = {"imported", "from the top level", "through importlib"}


@pytest.mark.parametrize("trap", PARSER_TRAPS, ids=list(PARSER_TRAPS))
def test_handing_the_parser_to_the_package_fails_the_parsers_steps_check_cells_included(
    tmp_path: Path, trap: str
) -> None:
    """verify runs the learner's files where the package's reference is not (issue 17): a parser that hands the
    work to it fails the visible checks of its steps too, not only their hidden cells."""
    folder = _folder(tmp_path, re.sub(r"\W", "_", trap), json_action_parser=PARSER_TRAPS[trap])
    expected = _cells_of(3, 4) | (_cells_of(2) if trap in LOADS_THE_PACKAGE_AT_IMPORT else set())
    assert _failed(_verdicts(folder)) == expected


def test_the_packages_strict_loader_is_not_the_learners_either(tmp_path: Path) -> None:
    text = (SOLUTION / "json_action_parser.py").read_text(encoding="utf-8")
    text = text.replace(
        "    value = _load_strict_json(raw_text)",
        "    from codeagent_lite.strict_json import check_json_syntax\n\n    value = check_json_syntax(raw_text)",
    )
    assert "check_json_syntax" in text
    assert _failed(_verdicts(_folder(tmp_path, "strict", json_action_parser=text))) == _cells_of(3, 4)


def test_the_packages_encoder_renamed_is_still_the_packages(tmp_path: Path) -> None:
    text = (SOLUTION / "json_text_messages.py").read_text(encoding="utf-8")
    text = text.replace("def _encode_json(value: Any) -> str:", "def _unused(value: Any) -> str:")
    text += "\n\nfrom codeagent_lite.json_text_messages import encode_json as _encode_json  # noqa: E402\n"
    verdicts = _verdicts(_folder(tmp_path, "encoder", json_text_messages=text))
    assert _failed(verdicts) == _cells_of(1, 2)  # the adapter imports the learner's messages module


def test_an_adapter_importing_the_packages_parser_fails_step_2(tmp_path: Path) -> None:
    text = (SOLUTION / "json_text_adapter.py").read_text(encoding="utf-8")
    text = text.replace("from .json_action_parser import", "from codeagent_lite.json_action_parser import")
    verdicts = _verdicts(_folder(tmp_path, "adapter", json_text_adapter=text))
    assert _failed(verdicts) == _cells_of(2)


@pytest.mark.parametrize(
    "raised",
    [
        "raise InvalidModelOutputError(str(error), layer=error.layer, usage=usage) from error",
        "raise error.with_usage(usage)",
    ],
    ids=["drops expected and found", "without from"],
)
def test_step_2_takes_no_hidden_point_for_what_its_checks_never_check(tmp_path: Path, raised: str) -> None:
    # expected/found and the cause are suggested in step 2's prompt, not checked by its visible checks: a step whose
    # checks all show ✔ keeps its hidden point.
    text = (SOLUTION / "json_text_adapter.py").read_text(encoding="utf-8")
    text = text.replace("raise error.with_usage(usage) from error", raised)
    verdicts = _verdicts(_folder(tmp_path, "rebuilt", json_text_adapter=text))
    assert _failed(verdicts) == set()


# --------------------------------------------------------------------------- the helpers


def test_the_learner_folder_is_the_submissions_own_first(tmp_path: Path) -> None:
    (tmp_path / "release").mkdir()
    (tmp_path / "release" / "my_json_text").mkdir()
    hub = {"CAL_LEARNER_DIR": "/home/student/notebooks/my_json_text"}
    assert learner_folder(tmp_path / "release", hub) == "my_json_text"
    assert learner_folder(tmp_path, hub) == "/home/student/notebooks/my_json_text"
    assert learner_folder(tmp_path, {}) == "../my_json_text"
    assert learner_folder(tmp_path, {"CAL_LEARNER_DIR": "  "}) == "../my_json_text"


def test_chapter_imports_refuses_a_file_too_long_to_parse(tmp_path: Path) -> None:
    """ast.parse costs about 600 bytes a character in the process that reads it: a 3 MB file is refused first."""
    (tmp_path / "big.py").write_text("x = 1\n" * 500_000, encoding="utf-8")
    with pytest.raises(ValueError, match=r"^big\.py is longer than 2 MB$"):
        chapter_imports(tmp_path, "big")


def test_chapter_imports_names_each_way_into_the_package(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "import codeagent_lite.strict_json\n"
        "from codeagent_lite import build_provider_messages, ToolCall, InvalidModelOutputError\n"
        "from codeagent_lite.kernel_types import Message\n"
        "from codeagent_lite.model_adapter import TokenUsage\n"
        "import codeagent_lite\n"
        "x = codeagent_lite.check_fields\n",
        encoding="utf-8",
    )
    assert chapter_imports(tmp_path, "a") == [
        "codeagent_lite.json_action_parser",
        "codeagent_lite.json_text_messages",
        "codeagent_lite.strict_json",
    ]
    for file in ("json_text_messages", "json_text_adapter", "json_action_parser"):
        assert chapter_imports(SOLUTION, file) == [], file


def test_package_calls_sees_the_package_however_it_is_reached() -> None:
    import codeagent_lite
    from codeagent_lite import json_action_parser

    text = '{"type": "final_answer", "content": "42"}'
    assert "codeagent_lite.json_action_parser.parse_json_action" in package_calls(
        lambda: codeagent_lite.parse_json_action(text)
    )
    assert package_calls(lambda: json_action_parser.parse_json_action("not json"))  # a refusal is still a call
    own = load_learner_file(SOLUTION, "json_action_parser")
    assert package_calls(lambda: own.parse_json_action(text)) == []
    # the package is left as it was, and so is the interpreter's profiler
    assert codeagent_lite.parse_json_action is json_action_parser.parse_json_action
    assert json_action_parser.parse_json_action.__module__ == "codeagent_lite.json_action_parser"
    assert not hasattr(json_action_parser.parse_json_action, "__wrapped__")
    assert sys.getprofile() is None and threading.getprofile() is None


def test_package_calls_sees_a_call_held_in_a_table_or_made_in_a_thread() -> None:
    from codeagent_lite import json_action_parser, json_text_messages

    text = '{"type": "final_answer", "content": "42"}'
    table = {"parse": json_action_parser.parse_json_action}  # a reference no module attribute holds
    assert package_calls(lambda: table["parse"](text))[0] == "codeagent_lite.json_action_parser.parse_json_action"

    def in_a_thread() -> None:
        worker = threading.Thread(target=json_text_messages.encode_json, args=({"a": 1},))
        worker.start()
        worker.join()

    assert package_calls(in_a_thread) == ["codeagent_lite.json_text_messages.encode_json"]
    # the package's dataclass is named as the class's own, not by the code that dataclasses generated for it
    assert package_calls(lambda: json_text_messages.ProviderMessage("user", "hi")) == [
        "codeagent_lite.json_text_messages.ProviderMessage.__init__"
    ]


def test_package_calls_names_code_that_switches_its_profiler_off() -> None:
    from codeagent_lite import json_action_parser
    from codeagent_lite.workbook.build_assignment import TAMPERED

    text = '{"type": "final_answer", "content": "42"}'

    def hidden() -> None:  # off, a hand-off the profiler cannot see, on again
        profiler = sys.getprofile()
        sys.setprofile(None)
        json_action_parser.parse_json_action(text)
        sys.setprofile(profiler)

    def in_an_unwatched_thread() -> None:
        threading.setprofile(None)
        worker = threading.Thread(target=json_action_parser.parse_json_action, args=(text,))
        worker.start()
        worker.join()

    assert package_calls(hidden) == [TAMPERED]
    assert package_calls(in_an_unwatched_thread) == [TAMPERED]
    assert package_calls(lambda: None) == []  # package_calls' own switching is not counted
    assert sys.getprofile() is None and threading.getprofile() is None
