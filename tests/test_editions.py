"""The two editions of the workbook are one workbook: same notebooks, same code, each in its readers' language.

``notebooks/en`` and ``notebooks/zh`` hold the same file names, and their code cells are identical
cell by cell (source, tags and nbgrader metadata), so a learner can switch editions mid-way and
nbval executes the same code twice. Only the prose differs, and the workbook's own printed
messages, which follow the edition's folder (``codeagent_lite.workbook.language``).
"""

from __future__ import annotations

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
