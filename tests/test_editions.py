"""The two editions of the workbook are one workbook: same notebooks, same code, each in its readers' language.

``notebooks/en`` and ``notebooks/zh`` hold the same file names, and their code cells are identical
cell by cell (source, tags and nbgrader metadata), so a learner can switch editions mid-way and
nbval executes the same code twice. Only the prose differs, and the workbook's own printed
messages, which follow the edition's folder (``codeagent_lite.workbook.language``).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
EN = ROOT / "notebooks" / "en"
ZH = ROOT / "notebooks" / "zh"
BLOG_URL = "https://zhuanlan.zhihu.com/p/2077860124157277532"


def names(folder: Path) -> set[str]:
    return {path.name for path in folder.glob("*.ipynb")}


def code_cells(path: Path) -> list[dict[str, Any]]:
    notebook = nbformat.read(path, as_version=4)
    return [
        {
            "source": cell.source,
            "tags": sorted(cell.metadata.get("tags", [])),
            "nbgrader": cell.metadata.get("nbgrader"),
        }
        for cell in notebook.cells
        if cell.cell_type == "code"
    ]


def first_markdown(path: Path) -> str:
    notebook = nbformat.read(path, as_version=4)
    return next(cell.source for cell in notebook.cells if cell.cell_type == "markdown")


def test_every_notebook_exists_in_both_editions() -> None:
    assert names(EN), "the English edition has no notebooks"
    assert names(EN) == names(ZH), f"only in en: {names(EN) - names(ZH)}; only in zh: {names(ZH) - names(EN)}"


SHARED = sorted(names(EN) & names(ZH))


@pytest.mark.parametrize("name", SHARED)
def test_code_cells_are_identical_between_editions(name: str) -> None:
    english, chinese = code_cells(EN / name), code_cells(ZH / name)
    assert len(english) == len(chinese), f"{name}: {len(english)} code cells in en, {len(chinese)} in zh"
    for number, (left, right) in enumerate(zip(english, chinese, strict=True), start=1):
        assert left == right, f"{name}: code cell {number} differs between the editions"


@pytest.mark.parametrize("name", SHARED)
def test_each_edition_links_the_other_the_glossary_and_the_blog(name: str) -> None:
    for folder, other in ((EN, "zh"), (ZH, "en")):
        opening = first_markdown(folder / name)
        assert BLOG_URL in opening, f"{folder.name}/{name}: the first cell cites the blog"
        assert "../glossary.md" in opening, f"{folder.name}/{name}: the first cell links the glossary"
        assert f"../{other}/{name}" in opening, f"{folder.name}/{name}: the first cell links the other edition"


# --------------------------------------------------------------------------- JupyterLab's own language
def test_lab_language_writes_the_editions_locale_and_keeps_the_rest(tmp_path: Path) -> None:
    from codeagent_lite.workbook.lab_language import SETTINGS_FILE, write_lab_language

    target = write_lab_language("zh", tmp_path)
    assert target == tmp_path / SETTINGS_FILE
    assert json.loads(target.read_text(encoding="utf-8")) == {"locale": "zh_CN"}
    target.write_text(json.dumps({"locale": "zh_CN", "stringsPrefix": "!"}), encoding="utf-8")
    write_lab_language("en", tmp_path)
    assert json.loads(target.read_text(encoding="utf-8")) == {"locale": "en", "stringsPrefix": "!"}
    target.write_text("not json", encoding="utf-8")
    write_lab_language("zh", tmp_path)
    assert json.loads(target.read_text(encoding="utf-8")) == {"locale": "zh_CN"}


def test_lab_language_refuses_an_unknown_edition(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from codeagent_lite.workbook.lab_language import main

    assert main(["fr", str(tmp_path)]) == 2
    assert main(["zh"]) == 2
    assert "usage:" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
    assert main(["zh", str(tmp_path)]) == 0


def test_the_chinese_locale_is_one_jupyterlab_has_a_language_pack_for() -> None:
    from jupyterlab_server.translation_utils import get_language_packs

    from codeagent_lite.workbook.lab_language import LOCALES

    installed, _ = get_language_packs("en")
    assert set(LOCALES.values()) <= set(installed), f"installed language packs: {sorted(installed)}"


@pytest.mark.parametrize(("edition", "locale"), [("zh", "zh_CN"), ("en", "en")])
def test_make_lab_sets_the_language_in_the_settings_folder_jupyterlab_reads(edition: str, locale: str) -> None:
    """``make -n`` prints the lab target's commands: the language is written where JupyterLab is told to look."""
    printed = subprocess.run(
        ["make", "-n", "--always-make", "lab", f"EDITION={edition}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    written = re.search(rf"-m codeagent_lite\.workbook\.lab_language {edition} \"([^\"]+)\"", printed)
    started = re.search(r"JUPYTERLAB_SETTINGS_DIR=\"([^\"]+)\" \S*jupyter lab .*notebooks/(\w+)/00_start_here", printed)
    assert written and started, printed
    assert written.group(1) == started.group(1)
    assert started.group(2) == edition
    assert not written.group(1).startswith(str(Path.home() / ".jupyter"))
    from codeagent_lite.workbook.lab_language import LOCALES

    assert LOCALES[edition] == locale
