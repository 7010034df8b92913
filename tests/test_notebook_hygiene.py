"""Saved notebooks are clean: what a learner downloads and what nbval compares must be trustworthy.

``notebook_problems`` checks one saved notebook and returns every problem as a sentence.
It runs over every notebook in ``notebooks/`` (solutions folders included), and it is
itself tested on small broken notebooks written to ``tmp_path``, so each rule is known
to be able to fail.

The rules:
- valid nbformat 4, kernel name ``python3``;
- every code cell carries an execution count, and the counts read 1, 2, 3, ... top to
  bottom: the saved outputs come from one fresh run, which is what nbval compares against;
- no saved output holds a machine path, no output or source holds something that looks
  like a token or API key, and no output is an error unless the cell is tagged
  ``raises-exception``;
- no saved widget state (it holds random ids and is rebuilt on every run);
- ``NBVAL_IGNORE_OUTPUT`` only on cells that display a widget, and no ``NBVAL_SKIP``:
  everything else is compared;
- the markdown cites the blog chapter, and every ``##`` heading carries a Chinese title;
- the markdown renders as written: no bare web address runs into the Chinese after it (a renderer takes the
  Chinese into the link), and no line break inside a paragraph sits between two Chinese characters or beside
  full-width punctuation (a browser shows it as a stray space there).
"""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
BLOG_URL = "https://zhuanlan.zhihu.com/p/2077860124157277532"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

MACHINE_PATH = re.compile(
    r"(?<![\w.:/~-])/(?:work|root|home|tmp|Users|private/var|var/folders)(?=/|\b)"  # POSIX and macOS
    r"|(?<![\w])[A-Za-z]:\\"  # Windows drive paths
)
SECRET = re.compile(
    r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"  # OpenAI / Anthropic style keys
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"  # GitHub tokens
    r"|\bhf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
    r"|\bAIza[0-9A-Za-z_-]{35}"  # Google API key
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\bBearer\s+[A-Za-z0-9._~+/-]{16,}"
    r"|[?&]token=[A-Za-z0-9]{16,}"  # a Jupyter server URL with its token
    r"|\bapi[_-]?key\b\s*[=:]\s*['\"]?[A-Za-z0-9_-]{12,}",
    re.IGNORECASE,
)
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# A bare address (not in <...> or a [text](...) link) that goes on into non-ASCII text: autolinking takes it all.
RUN_ON_URL = re.compile(r"(?<![<(\w])https?://[^\s<>()]*?[^\x00-\x7f]")
FULL_WIDTH = re.compile(r"[\u3000-\u303f\uff00-\uffef“”‘’]")
BLOCK_START = re.compile(r"\s*(?:[-*+]\s|\d+\.\s|#|>|\||```|~~~)")
IGNORE_OUTPUT_MARK = re.compile(r"^\s*#\s*NBVAL_IGNORE_OUTPUT\b", re.MULTILINE)
SKIP_MARK = re.compile(r"^\s*#\s*NBVAL_SKIP\b", re.MULTILINE)


def find_notebooks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def _output_texts(output: dict[str, Any]) -> list[str]:
    """Every piece of text an output shows (binary images are skipped: they hold no readable text)."""
    if output.get("output_type") == "stream":
        return [str(output.get("text", ""))]
    if output.get("output_type") == "error":
        return [str(output.get("ename", "")), str(output.get("evalue", "")), *map(str, output.get("traceback", []))]
    texts = []
    for mime, value in output.get("data", {}).items():
        if mime.startswith("image/") and mime != "image/svg+xml":
            continue
        texts.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    return texts


def _headings(markdown: str, level: int) -> list[str]:
    """Markdown headings of exactly ``level``, ignoring lines inside fenced code blocks."""
    headings = []
    in_fence = False
    prefix = "#" * level + " "
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence and stripped.startswith(prefix):
            headings.append(stripped)
    return headings


def _shows_a_space(line: str, next_line: str) -> bool:
    """Whether the soft line break between two lines of one paragraph shows as a space that Chinese does not have."""
    if not line.strip() or not next_line.strip() or line.startswith("    ") or next_line.startswith("    "):
        return False
    if line.lstrip().startswith(("#", "|")) or BLOCK_START.match(next_line) or line.endswith(("  ", "\\")):
        return False
    before, after = line.rstrip("*_")[-1:], next_line.lstrip().lstrip("*_")[:1]
    if FULL_WIDTH.match(before) or FULL_WIDTH.match(after):
        return True
    return bool(CJK.match(before) and CJK.match(after))


def _markdown_rendering_problems(index: int, markdown: str) -> list[str]:
    """Where one markdown cell would not render as written (see the module's rules)."""
    problems = [
        f"cell {index}: the bare address {match.group()!r}... runs into the text after it; write it as <address>"
        for match in RUN_ON_URL.finditer(markdown)
    ]
    lines = markdown.split("\n")
    in_fence = False
    for line, next_line in pairwise(lines):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        if not in_fence and _shows_a_space(line, next_line):
            problems.append(
                f"cell {index}: the line break after {line[-12:]!r} shows as a space in Chinese; join the lines"
            )
    return problems


def _cell_tags(cell: dict[str, Any]) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def notebook_problems(path: Path) -> list[str]:
    """Every hygiene problem of one saved notebook, as readable sentences; empty when it is clean."""
    try:
        text = path.read_text(encoding="utf-8")
        first_look = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        return [f"cannot be read as a JSON notebook: {error}"]
    if not isinstance(first_look, dict) or first_look.get("nbformat") != 4:
        found = first_look.get("nbformat") if isinstance(first_look, dict) else type(first_look).__name__
        return [f"is not nbformat 4 (found {found!r})"]
    problems: list[str] = []
    # Reading through nbformat joins the multi-line strings that .ipynb files store as lists of lines.
    raw = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    try:
        nbformat.validate(raw)
    except nbformat.ValidationError as error:
        problems.append(f"is not a valid nbformat 4 notebook: {error.message}")

    metadata = raw.get("metadata", {})
    kernel_name = metadata.get("kernelspec", {}).get("name")
    if kernel_name != "python3":
        problems.append(f"kernelspec name is {kernel_name!r}, not 'python3'")
    if "widgets" in metadata:
        problems.append("saves widget state in its metadata ('widgets'); drop it (it changes on every run)")

    cells = raw.get("cells", [])
    code_cells = [(index, cell) for index, cell in enumerate(cells) if cell.get("cell_type") == "code"]
    counts = [cell.get("execution_count") for _, cell in code_cells]
    for (index, _), count in zip(code_cells, counts, strict=True):
        if count is None:
            problems.append(f"cell {index}: code cell has no execution count (run the notebook and save it)")
    if None not in counts and counts != list(range(1, len(counts) + 1)):
        problems.append(f"execution counts are {counts}, not 1..{len(counts)} from one fresh top-to-bottom run")

    for index, cell in code_cells:
        source = str(cell.get("source", ""))
        tags = _cell_tags(cell)
        outputs = cell.get("outputs", [])
        if SECRET.search(source):
            problems.append(f"cell {index}: source contains something that looks like a token or API key")
        if SKIP_MARK.search(source) or "nbval-skip" in tags:
            problems.append(f"cell {index}: is skipped by nbval; every cell must run")
        ignores_output = bool(IGNORE_OUTPUT_MARK.search(source)) or "nbval-ignore-output" in tags
        shows_widget = any(WIDGET_VIEW in output.get("data", {}) for output in outputs)
        if ignores_output and not shows_widget:
            problems.append(f"cell {index}: ignores its output under nbval but displays no widget")
        for output in outputs:
            if output.get("output_type") == "error" and "raises-exception" not in tags:
                problems.append(
                    f"cell {index}: saved an error output ({output.get('ename')}); catch it, "
                    "or tag the cell raises-exception if the error is the lesson"
                )
            if WIDGET_STATE in output.get("data", {}):
                problems.append(f"cell {index}: an output saves widget state")
            for text in _output_texts(output):
                path_match = MACHINE_PATH.search(text)
                if path_match:
                    problems.append(f"cell {index}: an output shows a machine path ({path_match.group()!r}...)")
                if SECRET.search(text):
                    problems.append(f"cell {index}: an output contains something that looks like a token or API key")

    for index, cell in enumerate(cells):
        if cell.get("cell_type") == "markdown":
            problems.extend(_markdown_rendering_problems(index, str(cell.get("source", ""))))
    markdown = "\n\n".join(str(cell.get("source", "")) for cell in cells if cell.get("cell_type") == "markdown")
    if BLOG_URL not in markdown:
        problems.append(f"markdown does not cite the blog chapter ({BLOG_URL})")
    for heading in _headings(markdown, level=2):
        if not CJK.search(heading):
            problems.append(f"heading {heading!r} has no Chinese section title")
    return problems


# --------------------------------------------------------------------------- the real notebooks

NOTEBOOKS = find_notebooks(NOTEBOOK_DIR)


def test_the_workbook_has_notebooks() -> None:
    names = [path.name for path in NOTEBOOKS]
    assert "04_action_parsing.ipynb" in names, names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.relative_to(NOTEBOOK_DIR).as_posix() for p in NOTEBOOKS])
def test_saved_notebook_is_clean(path: Path) -> None:
    assert notebook_problems(path) == []


# --------------------------------------------------------------------------- the checker itself


def clean_notebook() -> nbformat.NotebookNode:
    """A small notebook that obeys every rule; each test below breaks one rule of a copy."""
    notebook = new_notebook(
        cells=[
            new_markdown_cell(f"# 4. Demo · 四、演示\n\nFrom [the blog]({BLOG_URL})."),
            new_markdown_cell("## Layer 1 · 必须是合法 JSON\n\n```text\n## not a heading, inside a fence\n```"),
            new_code_cell(
                "print('hello')",
                execution_count=1,
                outputs=[new_output("stream", name="stdout", text="hello\n")],
            ),
            new_code_cell(
                "# NBVAL_IGNORE_OUTPUT\nParserPlayground()",
                execution_count=2,
                outputs=[
                    new_output(
                        "display_data",
                        data={"text/plain": "ParserPlayground", WIDGET_VIEW: {"model_id": "ab" * 16}},
                    )
                ],
            ),
            new_code_cell(
                "1 + 1",
                execution_count=3,
                outputs=[new_output("execute_result", {"text/plain": "2"}, execution_count=3)],
            ),
        ]
    )
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return notebook


def save(notebook: nbformat.NotebookNode, tmp_path: Path) -> Path:
    path = tmp_path / "notebook.ipynb"
    nbformat.write(notebook, path)
    return path


def stdout_cell(text: str, count: int = 3) -> nbformat.NotebookNode:
    return new_code_cell("print(x)", execution_count=count, outputs=[new_output("stream", name="stdout", text=text)])


def test_the_clean_notebook_passes(tmp_path: Path) -> None:
    assert notebook_problems(save(clean_notebook(), tmp_path)) == []


def _set_kernel(nb: nbformat.NotebookNode) -> None:
    nb.metadata["kernelspec"]["name"] = "python3.11"


def _drop_count(nb: nbformat.NotebookNode) -> None:
    nb.cells[2].execution_count = None


def _swap_counts(nb: nbformat.NotebookNode) -> None:
    nb.cells[2].execution_count, nb.cells[3].execution_count = 2, 1


def _counts_from_five(nb: nbformat.NotebookNode) -> None:
    for offset, index in enumerate((2, 3, 4)):
        nb.cells[index].execution_count = 5 + offset


def _output(text: str) -> Any:
    def mutate(nb: nbformat.NotebookNode) -> None:
        nb.cells[4] = stdout_cell(text)

    return mutate


def _html_output_path(nb: nbformat.NotebookNode) -> None:
    nb.cells[4].outputs = [new_output("display_data", {"text/html": "<code>/root/.cache/x</code>"})]


def _error_output(nb: nbformat.NotebookNode) -> None:
    nb.cells[4].outputs = [new_output("error", ename="ValueError", evalue="boom", traceback=["ValueError: boom"])]


def _widget_state(nb: nbformat.NotebookNode) -> None:
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": {}, "version_major": 2, "version_minor": 0}}


def _no_blog(nb: nbformat.NotebookNode) -> None:
    nb.cells[0].source = "# 4. Demo · 四、演示"


def _english_heading(nb: nbformat.NotebookNode) -> None:
    nb.cells[1].source = "## Layer 1: JSON syntax"


def _run_on_address(nb: nbformat.NotebookNode) -> None:
    nb.cells[0].source = f"# 4. Demo · 四、演示\n\n这一章（{BLOG_URL}）讲三个文件。"


def _chinese_line_break(nb: nbformat.NotebookNode) -> None:
    nb.cells[0].source = f"# 4. Demo · 四、演示\n\n[博客]({BLOG_URL})的这一节讲\n三个文件。"


def _ignored_print(nb: nbformat.NotebookNode) -> None:
    nb.cells[2].source = "# NBVAL_IGNORE_OUTPUT\nprint('hello')"


def _skipped(nb: nbformat.NotebookNode) -> None:
    nb.cells[2].source = "# NBVAL_SKIP\nprint('hello')"


def _secret_in_source(nb: nbformat.NotebookNode) -> None:
    nb.cells[2].source = 'client = OpenAI(api_key="sk-proj-abcdefghijklmnopqrstuvwx")'


BROKEN = {
    "kernel name": (_set_kernel, "kernelspec name is 'python3.11'"),
    "missing execution count": (_drop_count, "cell 2: code cell has no execution count"),
    "counts out of order": (_swap_counts, "execution counts are [2, 1, 3]"),
    "counts not from 1": (_counts_from_five, "execution counts are [5, 6, 7]"),
    "home path": (_output("saved to /home/alice/work/out.txt\n"), "machine path ('/home'"),
    "work path": (_output("FileNotFoundError: '/work/main/x'\n"), "machine path ('/work'"),
    "tmp path": (_output("tmp dir: /tmp\n"), "machine path ('/tmp'"),
    "macOS path": (_output("/Users/bob/notes\n"), "machine path ('/Users'"),
    "windows path": (_output("C:\\Users\\bob\\notes\n"), "machine path ('C:\\\\'"),
    "path in html": (_html_output_path, "machine path ('/root'"),
    "api key output": (_output("key: sk-abcdefghijklmnopqrstuvwxyz123456\n"), "looks like a token or API key"),
    "github token": (_output("ghp_" + "a1B2" * 9 + "\n"), "looks like a token or API key"),
    "jupyter token url": (_output("http://127.0.0.1:8888/lab?token=" + "0f" * 24 + "\n"), "looks like a token"),
    "secret in source": (_secret_in_source, "source contains something that looks like a token"),
    "error output": (_error_output, "cell 4: saved an error output (ValueError)"),
    "widget state": (_widget_state, "saves widget state"),
    "no blog address": (_no_blog, "does not cite the blog chapter"),
    "heading without Chinese": (_english_heading, "heading '## Layer 1: JSON syntax' has no Chinese section title"),
    "bare address into Chinese": (_run_on_address, "cell 0: the bare address 'https://zhuanlan"),
    "line break between Chinese": (_chinese_line_break, "shows as a space in Chinese"),
    "ignored non-widget cell": (_ignored_print, "cell 2: ignores its output under nbval but displays no widget"),
    "skipped cell": (_skipped, "cell 2: is skipped by nbval"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_the_checker_finds_each_broken_rule(case: str, tmp_path: Path) -> None:
    mutate, expected = BROKEN[case]
    notebook = clean_notebook()
    mutate(notebook)
    problems = notebook_problems(save(notebook, tmp_path))
    assert len(problems) == 1, problems
    assert expected in problems[0]


def test_an_error_is_allowed_where_it_is_the_lesson(tmp_path: Path) -> None:
    notebook = clean_notebook()
    _error_output(notebook)
    notebook.cells[4].metadata["tags"] = ["raises-exception"]
    assert notebook_problems(save(notebook, tmp_path)) == []


def test_ordinary_text_is_not_mistaken_for_paths_or_keys(tmp_path: Path) -> None:
    notebook = clean_notebook()
    harmless = (
        "see https://example.com/home/page and notes/tmp/x, and/or a task-list; model_id " + "ab" * 16 + "\n"
        "api_key=os.environ['OPENAI_API_KEY'] is read from the environment\n"
    )
    notebook.cells[4] = stdout_cell(harmless)
    assert notebook_problems(save(notebook, tmp_path)) == []


def test_unreadable_and_old_notebooks_are_reported_not_crashed(tmp_path: Path) -> None:
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json", encoding="utf-8")
    assert notebook_problems(broken)[0].startswith("cannot be read as a JSON notebook")
    old = tmp_path / "old.ipynb"
    old.write_text(json.dumps({"nbformat": 3, "nbformat_minor": 0, "worksheets": [], "metadata": {}}))
    assert notebook_problems(old) == ["is not nbformat 4 (found 3)"]


def test_an_invalid_notebook_structure_is_reported(tmp_path: Path) -> None:
    path = save(clean_notebook(), tmp_path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    del raw["cells"][4]["outputs"]
    path.write_text(json.dumps(raw), encoding="utf-8")
    assert any(p.startswith("is not a valid nbformat 4 notebook") for p in notebook_problems(path))


def test_notebooks_in_subfolders_are_found(tmp_path: Path) -> None:
    (tmp_path / "solutions").mkdir()
    (tmp_path / ".ipynb_checkpoints").mkdir()
    for name in ("00_a.ipynb", "solutions/05_b.ipynb", ".ipynb_checkpoints/00_a-checkpoint.ipynb"):
        (tmp_path / name).write_text("{}", encoding="utf-8")
    assert [p.relative_to(tmp_path).as_posix() for p in find_notebooks(tmp_path)] == [
        "00_a.ipynb",
        "solutions/05_b.ipynb",
    ]


def test_a_broken_copy_of_a_real_notebook_is_caught(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK_DIR / "en" / "04_action_parsing.ipynb", as_version=4)
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    code_cells[0].outputs.append(new_output("stream", name="stdout", text="/home/learner/codeagent-lite\n"))
    code_cells[1].execution_count = None
    problems = notebook_problems(save(notebook, tmp_path))
    assert len(problems) == 2, problems
    assert any("no execution count" in problem for problem in problems)
    assert any("machine path ('/home'" in problem for problem in problems)
