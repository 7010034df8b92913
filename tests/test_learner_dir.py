"""The learner's own folder: made from the stubs once, never overwritten, ignored by git, checked by default.

The last test runs the verify cells of notebooks 01-04 (the Chinese edition; ``test_editions`` holds the English
code cells identical) against ``solutions/my_json_text`` the way CI's ``CAL_LEARNER_DIR`` would, so a notebook whose
saved outputs show the untouched stubs failing still proves it passes on finished files. It runs the cells' own code,
not a copy of it, in the notebook's folder; verify's child processes make it take about a second.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from codeagent_lite.workbook.learner_dir import FOLDER_NAME, LEARNER_DIR_VARIABLE, STUBS, learner_dir
from codeagent_lite.workbook.verify import VerifyReport

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
STUB_FILES = ("__init__.py", "json_action_parser.py", "json_text_adapter.py", "json_text_messages.py")


def workbook(tmp_path: Path) -> Path:
    """A workbook's notebooks/ folder with the real stubs and an edition folder; returns the edition folder."""
    stubs = tmp_path / "notebooks" / STUBS
    stubs.mkdir(parents=True)
    for name in STUB_FILES:
        (stubs / name).write_bytes((NOTEBOOKS / STUBS / name).read_bytes())
    (stubs / "__pycache__").mkdir()
    (stubs / "__pycache__" / "x.pyc").write_bytes(b"stale")
    edition = tmp_path / "notebooks" / "zh"
    edition.mkdir()
    return edition


def test_first_use_copies_the_stubs_beside_the_editions(tmp_path: Path) -> None:
    edition = workbook(tmp_path)
    assert learner_dir(edition, {}) == f"../{FOLDER_NAME}"
    made = tmp_path / "notebooks" / FOLDER_NAME
    assert sorted(path.name for path in made.iterdir()) == sorted(STUB_FILES)
    for name in STUB_FILES:
        assert (made / name).read_bytes() == (NOTEBOOKS / STUBS / name).read_bytes()
    # No staging folder is left behind.
    assert sorted(path.name for path in made.parent.iterdir()) == sorted([FOLDER_NAME, "stubs", "zh"])


def test_the_learners_work_is_never_overwritten(tmp_path: Path) -> None:
    edition = workbook(tmp_path)
    mine = tmp_path / "notebooks" / FOLDER_NAME
    mine.mkdir()
    (mine / "json_text_messages.py").write_text("# my own work\n", encoding="utf-8")
    assert learner_dir(edition, {}) == f"../{FOLDER_NAME}"
    assert (mine / "json_text_messages.py").read_text(encoding="utf-8") == "# my own work\n"
    assert [path.name for path in mine.iterdir()] == ["json_text_messages.py"]
    # A file (or a dangling link) where the folder should be is left alone too: verify then says what is wrong.
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "notebooks" / "linked"
    link.symlink_to(tmp_path / "missing")
    assert learner_dir(edition, {LEARNER_DIR_VARIABLE: "../linked"}) == "../linked"
    assert link.is_symlink() and not link.exists()


def test_the_variable_names_another_folder_made_the_same_way(tmp_path: Path) -> None:
    edition = workbook(tmp_path)
    chosen = str(tmp_path / "home" / "student" / FOLDER_NAME)
    assert learner_dir(edition, {LEARNER_DIR_VARIABLE: f"  {chosen} "}) == chosen
    assert (Path(chosen) / "json_action_parser.py").is_file()
    assert not (tmp_path / "notebooks" / FOLDER_NAME).exists()
    # A blank variable is no choice.
    assert learner_dir(edition, {LEARNER_DIR_VARIABLE: "  "}) == f"../{FOLDER_NAME}"


def test_without_stubs_nothing_is_made(tmp_path: Path) -> None:
    edition = tmp_path / "somewhere"
    edition.mkdir()
    assert learner_dir(edition, {}) == f"../{FOLDER_NAME}"
    assert not (tmp_path / FOLDER_NAME).exists()


def test_git_tracks_the_stubs_and_ignores_the_learners_folder() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "notebooks"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert {f"notebooks/{STUBS.as_posix()}/{name}" for name in STUB_FILES} <= set(tracked)
    assert not [path for path in tracked if path.startswith(f"notebooks/{FOLDER_NAME}/")]
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", f"notebooks/{FOLDER_NAME}/json_action_parser.py"], cwd=ROOT, check=False
    )
    assert ignored.returncode == 0, "git must ignore the learner's folder"


def code_cells(notebook: Path) -> list[str]:
    cells: list[dict[str, Any]] = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


def verify_cells() -> list[tuple[str, str, list[str]]]:
    """(notebook, the cell that picks the folder, the code cells that follow it until the next such cell)."""
    found = []
    for name in ("02_message_conversion", "03_adapter_flow", "04_action_parsing"):
        cells = code_cells(NOTEBOOKS / "zh" / f"{name}.ipynb")
        setups = [index for index, source in enumerate(cells) if "_DIR = learner_dir()" in source]
        assert setups, f"{name}: no cell picks the learner's folder with learner_dir()"
        for position, start in enumerate(setups):
            end = setups[position + 1] if position + 1 < len(setups) else len(cells)
            found.append((name, cells[start], cells[start + 1 : end]))
    return found


def code_lines(source: str) -> list[str]:
    return [line for line in source.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_every_verify_cell_checks_the_learners_folder_by_default() -> None:
    for edition in ("zh", "en"):
        for notebook in sorted((NOTEBOOKS / edition).glob("0[0-4]_*.ipynb")):
            for line in (line for source in code_cells(notebook) for line in code_lines(source)):
                assert "solutions" not in line, (notebook.name, line)
                if "verify(" in line or "compare(" in line:
                    assert any(name in line for name in ("learner_dir()", "LEARNER_DIR", "BLOG_STAGE_DIR")), line


def test_the_notebooks_verify_cells_pass_on_the_solutions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(NOTEBOOKS / "zh")
    monkeypatch.setenv(LEARNER_DIR_VARIABLE, "../../solutions/my_json_text")
    steps = []
    for name, setup, following in verify_cells():
        namespace: dict[str, Any] = {}
        exec(compile(setup, f"{name}: folder cell", "exec"), namespace)
        for call in (source.strip() for source in following if source.startswith("verify(")):
            report = eval(compile(call, f"{name}: {call}", "eval"), namespace)
            assert isinstance(report, VerifyReport), (name, call)
            assert report.label == "../../solutions/my_json_text", report.label
            assert report.results and report.passed == len(report.results), (name, call, str(report))
            steps.append(report.steps[-1])
    assert steps == [1, 2, 3, 4]
    # Notebook 01 prints verify's overview of every step.
    overview = next(
        source for source in code_cells(NOTEBOOKS / "zh" / "01_file_relationships.ipynb") if ".overview()" in source
    )
    printed: list[str] = []
    namespace = {"print": lambda *args: printed.extend(str(arg) for arg in args)}
    exec(compile(overview, "01: overview", "exec"), namespace)
    lines = printed[0].splitlines()
    assert len(lines) == 4 and all(line.startswith("✔") for line in lines), printed
