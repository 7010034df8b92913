"""One term per concept in the Chinese edition, and the English gloss once per notebook, at first use.

``notebooks/glossary.md`` names, for each concept, the Chinese term the workbook uses and the variants it does not
(its table "一个概念一个词"). The Chinese notebooks' prose is held to it: code, code font, link targets, English
glosses and quotations of the blog (in 「」) aside, no variant appears. A gloss, ``术语（English）``, comes once per
notebook and at the term's first use, as d2l-zh glosses a term where the reader first meets it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "notebooks" / "glossary.md"
ZH = ROOT / "notebooks" / "zh"
HAN = "\u4e00-\u9fff"
GLOSS = re.compile(r"（([A-Za-z][^（）\n]*)）")
"""An English gloss: full-width parentheses opening on a Latin letter."""


@dataclass(frozen=True)
class Term:
    concept: str
    chosen: str
    variants: tuple[str, ...]
    english: str


def terms() -> list[Term]:
    """The rows of the glossary's "one term per concept" table."""
    text = GLOSSARY.read_text(encoding="utf-8")
    section = text.split("## 一个概念一个词", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    found = []
    for row in rows[1:]:
        concept, chosen, variants, english = (cell.strip() for cell in row.strip().strip("|").split("|"))
        found.append(Term(concept, chosen, tuple(v.strip() for v in variants.split("、") if v.strip()), english))
    return found


def prose(markdown: str) -> str:
    """What a reader reads as the notebook's own words: code, addresses, glosses and blog quotations taken out."""
    text = without_code(markdown)
    text = re.sub(r"\]\([^)\s]*\)", "]", text)  # link targets
    text = re.sub(r"<[^>\n]*>", " ", text)  # autolinks and HTML
    text = re.sub(r"「[^」\n]*」", " ", text)  # the blog's own words
    return GLOSS.sub(" ", text)


FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,}).*?^[ \t]*\1", re.M | re.S)
INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)")


def without_code(markdown: str) -> str:
    """Fenced and indented code blocks and code spans blanked out, every other character kept where it was."""
    text = FENCE.sub(lambda match: re.sub(r"[^\n]", " ", match.group(0)), markdown)
    lines = text.split("\n")
    for index, line in enumerate(lines):
        # An indented code block: four spaces after a blank line (a blanked code line counts), not a list item.
        if index and not lines[index - 1].strip() and re.match(r"(?: {4}|\t)(?![-*+] |\d+\. )", line):
            lines[index] = " " * len(line)
    text = "\n".join(lines)
    return INLINE_CODE.sub(lambda match: " " * len(match.group(0)), text)


def markdown_of(notebook: Path) -> str:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return "\n\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")


def variant_uses(text: str, variant: str) -> int:
    """Latin variants count as whole words and case-sensitively ("agent", not "Agent"); Chinese ones anywhere."""
    if re.fullmatch(r"[A-Za-z ]+", variant):
        return len(re.findall(rf"(?<![A-Za-z_]){re.escape(variant)}(?![A-Za-z_])", text))
    return text.count(variant)


def notebooks() -> list[object]:
    return [pytest.param(path, id=path.stem) for path in sorted(ZH.glob("*.ipynb"))]


def test_the_glossary_table_is_well_formed() -> None:
    table = terms()
    assert len(table) >= 10
    chosen = [term.chosen for term in table]
    assert len(chosen) == len(set(chosen)), "a term is chosen for two concepts"
    for term in table:
        assert term.variants, f"{term.chosen}: no variant named"
        assert term.chosen not in term.variants, term
        for other in table:
            assert other.chosen not in term.variants, f"{other.chosen} is chosen and also a variant of {term.chosen}"
    # The blog's own words where it has them.
    blog = {term.english: term.chosen for term in table}
    assert blog["agent"] == "Agent" and blog["adapter"] == "Adapter" and blog["provider"] == "Provider"
    assert blog["final answer"] == "最终回答" and blog["action"] == "行动"


@pytest.mark.parametrize("notebook", notebooks())
def test_the_chinese_prose_uses_the_chosen_term(notebook: Path) -> None:
    text = prose(markdown_of(notebook))
    found = [
        f"{variant}×{count} (use {term.chosen})"
        for term in terms()
        for variant in term.variants
        if (count := variant_uses(text, variant))
    ]
    assert not found, f"{notebook.name}: " + "; ".join(found)


def glossed_term(before: str, known: list[str]) -> str | None:
    """The glossary term that ends right before a gloss, the longest one."""
    ending = [term for term in known if before.endswith(term)]
    return max(ending, key=len) if ending else None


def known_terms() -> list[str]:
    """Every Chinese term of the glossary's tables (first column), alternatives split."""
    words: list[str] = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if line.startswith("| ") and not line.startswith("| ---"):
            first = line.strip().strip("|").split("|")[0].strip()
            words += [w.strip() for w in re.split(r"[/（）]", first) if re.search(f"[{HAN}]", w)]
    return sorted(set(words))


@pytest.mark.parametrize("notebook", notebooks())
def test_each_gloss_comes_once_at_first_use(notebook: Path) -> None:
    markdown = markdown_of(notebook)
    text = without_code(markdown)
    glosses = [(match.start(), match.group(1).strip().lower()) for match in GLOSS.finditer(text)]
    repeated = [gloss for gloss, count in Counter(gloss for _, gloss in glosses).items() if count > 1]
    assert not repeated, f"{notebook.name}: glossed more than once: {repeated}"
    known = known_terms()
    late = []
    for start, gloss in glosses:
        term = glossed_term(text[:start].rstrip(), known)
        if term is not None and text.find(term) < start - len(term) - 1:
            late.append(f"{term}（{gloss}）")
    assert not late, f"{notebook.name}: glossed after its first use: {late}"


PACKAGE = ROOT / "codeagent_lite"
CHINESE_TEXT = re.compile(rf"[^\"'\n]*[{HAN}][^\"'\n]*")


def test_the_package_speaks_with_the_same_terms() -> None:
    """The Chinese the package prints (message tables today, the .po catalog later) uses the chosen terms."""
    sources = [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.po")]
    chinese_variants = [variant for term in terms() for variant in term.variants if re.search(f"[{HAN}]", variant)]
    found = [
        f"{path.relative_to(ROOT)}: {variant}"
        for path in sources
        for text in CHINESE_TEXT.findall(path.read_text(encoding="utf-8"))
        for variant in chinese_variants
        if variant in text
    ]
    assert not found, found


def test_the_chinese_catalog_uses_no_latin_variant() -> None:
    """The zh catalog's sentences are what the package prints in Chinese: "运行这个 notebook" is the variant the
    glossary rules out, as in the prose (names in code, such as notebooks/my_json_text, are other words)."""
    latin = [variant for term in terms() for variant in term.variants if re.fullmatch(r"[A-Za-z ]+", variant)]
    with (PACKAGE / "locale" / "zh" / "LC_MESSAGES" / "codeagent_lite.po").open("rb") as po:
        sentences = [text for message in read_po(po) if message.id for text in _strings(message.string)]
    found = [f"{variant}: {text}" for text in sentences for variant in latin if variant_uses(text, variant)]
    assert not found, found


def _strings(string: str | tuple[str, ...]) -> tuple[str, ...]:
    return string if isinstance(string, tuple) else (string,)
