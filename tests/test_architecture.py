"""The house rules of the package, read from the source with ``ast``.

The top level of ``codeagent_lite`` is the blog chapter; ``agent/``, ``providers/`` and
``workbook/`` are rooms beyond it. A learner holding the blog beside the code must be able to
trust that the chapter's files stand alone, so the rules are checked here rather than
left to review:

* the chapter imports only the standard library, pydantic and itself;
* ``providers/`` sees only the ``TextProvider`` protocol and what it carries;
* ``agent/`` sees only the chapter;
* nothing outside ``workbook/`` imports ``workbook/``, but the command line, lazily;
* nothing in the package imports classroom/ (the teacher's side: a learner's install has no such folder).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "codeagent_lite"
CLASSROOM_DIR = PACKAGE_DIR.parent / "classroom"
PACKAGE = "codeagent_lite"

CHAPTER_MODULES = (
    "kernel_types",
    "model_adapter",
    "json_text_messages",
    "json_text_adapter",
    "json_action_parser",
    "strict_json",
    "action_schema",
    "diagnosis",
    "scripted_provider",
    "display",
)
ENTRY_MODULES = ("__init__", "__main__", "cli")
ROOMS = ("agent", "providers", "workbook")

# What a provider may take from the chapter: the protocol's own types, the action
# contract it describes to its model, and the one way untrusted text is shown (display).
PROVIDER_ALLOWED_NAMES = {
    "display": {"N_", "error_text", "json_kind", "printable", "quote", "shorten", "shorten_counted"},
    "json_text_adapter": {"ProviderError", "ProviderResponse", "TextProvider"},
    "json_text_messages": {"ProviderMessage", "encode_json"},
    "kernel_types": {"ToolSpec"},
    "action_schema": {"action_json_schema"},
    "strict_json": {"DECODER"},  # a server's body is strict JSON too; its refusals are the chapter's error
    "model_adapter": {"InvalidModelOutputError", "require_count"},  # the Kernel's one count check, for the budget
}
JUPYTER_AND_MODEL_LIBRARIES = ("ipywidgets", "IPython", "ipykernel", "jupyter", "jupyterlab", "openai", "llama_cpp")


@dataclass(frozen=True)
class Import:
    """One imported module (absolute dotted name) and the names taken from it, where it said."""

    importer: str
    module: str
    names: frozenset[str]
    line: int
    lazy: bool  # inside a function: runs only when that function is called


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rsplit(".", 1)[0]


def imports_of(path: Path) -> list[Import]:
    module = module_name(path)
    base = package_of(module, path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lazy_lines = {
        inner.lineno
        for function in ast.walk(tree)
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        for inner in ast.walk(function)
        if isinstance(inner, (ast.Import, ast.ImportFrom))
    }
    found: list[Import] = []
    for node in ast.walk(tree):
        lazy = getattr(node, "lineno", 0) in lazy_lines
        if isinstance(node, ast.Import):
            found.extend(Import(module, alias.name, frozenset(), node.lineno, lazy) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                target = ".".join([*anchor, node.module] if node.module else anchor)
            else:
                target = node.module or ""
            found.append(Import(module, target, frozenset(a.name for a in node.names), node.lineno, lazy))
    return found


def all_sources() -> list[Path]:
    return sorted(PACKAGE_DIR.rglob("*.py"))


def top_package(name: str) -> str:
    return name.split(".", 1)[0]


def internal_part(name: str) -> str | None:
    """``codeagent_lite.agent.loop`` -> ``agent.loop``; None for an outside library."""
    if name == PACKAGE:
        return ""
    if name.startswith(PACKAGE + "."):
        return name[len(PACKAGE) + 1 :]
    return None


def describe(imp: Import) -> str:
    names = f" ({', '.join(sorted(imp.names))})" if imp.names else ""
    return f"{imp.importer}:{imp.line} imports {imp.module}{names}"


def room_imports(room: str) -> list[Import]:
    return [imp for path in sorted((PACKAGE_DIR / room).glob("*.py")) for imp in imports_of(path)]


def test_the_chapter_and_the_rooms_are_where_the_readme_says() -> None:
    top_level = {p.stem for p in PACKAGE_DIR.glob("*.py")}
    assert top_level == set(CHAPTER_MODULES) | set(ENTRY_MODULES), (
        "the top level of codeagent_lite holds the chapter only; move anything else into a room"
    )
    for room in ROOMS:
        init = PACKAGE_DIR / room / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and "may import" in doc, f"{room}/__init__.py must open with a docstring saying what it may import"


@pytest.mark.parametrize("name", (*CHAPTER_MODULES, "__init__"))
def test_chapter_modules_import_only_the_standard_library_pydantic_and_the_chapter(name: str) -> None:
    wrong = []
    for imp in imports_of(PACKAGE_DIR / f"{name}.py"):
        inside = internal_part(imp.module)
        if inside is None:
            if top_package(imp.module) not in sys.stdlib_module_names and top_package(imp.module) != "pydantic":
                wrong.append(describe(imp))
        elif inside and inside.split(".")[0] not in CHAPTER_MODULES:
            wrong.append(describe(imp))
    assert wrong == []


def test_the_chapter_has_no_import_circle_and_its_text_module_imports_nothing_of_the_package() -> None:
    """display is the one text module everyone uses, so it must stand below everything (type-only imports too)."""
    graph = {
        name: {
            inside.split(".")[0]
            for imp in imports_of(PACKAGE_DIR / f"{name}.py")
            if (inside := internal_part(imp.module)) and inside.split(".")[0] in CHAPTER_MODULES
        }
        - {name}
        for name in CHAPTER_MODULES
    }
    assert graph["display"] == set()

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph[start])

    assert [name for name in CHAPTER_MODULES if reaches(name, name, set())] == []


def test_providers_see_only_the_provider_protocol_and_what_it_carries() -> None:
    wrong = []
    for imp in room_imports("providers"):
        inside = internal_part(imp.module)
        if inside is None or inside.startswith("providers"):
            continue
        allowed = PROVIDER_ALLOWED_NAMES.get(inside)
        if allowed is None or not imp.names <= allowed:
            wrong.append(describe(imp))
    assert wrong == []


def test_the_agent_room_sees_only_the_chapter() -> None:
    wrong = []
    for imp in room_imports("agent"):
        inside = internal_part(imp.module)
        if inside is None:
            if top_package(imp.module) not in sys.stdlib_module_names and top_package(imp.module) != "pydantic":
                wrong.append(describe(imp))
        elif not (inside.startswith("agent") or inside.split(".")[0] in CHAPTER_MODULES):
            wrong.append(describe(imp))
    assert wrong == []


def test_only_the_workbook_imports_the_workbook() -> None:
    """The command line is the one exception, and only lazily: ``check`` must not load what ``verify`` needs."""
    wrong = [
        describe(imp)
        for path in all_sources()
        if not module_name(path).startswith(f"{PACKAGE}.workbook")
        for imp in imports_of(path)
        if (internal_part(imp.module) or "-").startswith("workbook")
        and not (imp.importer == f"{PACKAGE}.cli" and imp.lazy)
    ]
    assert wrong == []


def test_nothing_in_the_package_imports_the_classroom() -> None:
    """classroom/ is a folder of flat modules (on ``sys.path`` only in the teacher's processes), so an import of one
    of them by name is the thing to catch."""
    classroom = {path.stem for path in CLASSROOM_DIR.glob("*.py")}
    assert {"outside_grade", "reply_cache"} <= classroom
    wrong = [
        describe(imp) for path in all_sources() for imp in imports_of(path) if top_package(imp.module) in classroom
    ]
    assert wrong == []


def test_the_command_line_loads_providers_and_the_workbook_only_when_asked() -> None:
    eager = [
        describe(imp)
        for imp in imports_of(PACKAGE_DIR / "cli.py")
        if (internal_part(imp.module) or "-").split(".")[0] in ("providers", "workbook") and not imp.lazy
    ]
    assert eager == []


def test_the_rule_reader_sees_relative_imports() -> None:
    """The checks above are only as good as the import reader: make sure it resolves ``..``."""
    found = {imp.module for imp in imports_of(PACKAGE_DIR / "workbook" / "real_model_lab.py")}
    assert f"{PACKAGE}.agent.loop" in found
    assert f"{PACKAGE}.diagnosis" in found


def test_the_chapter_imports_without_the_jupyter_stack_or_model_libraries() -> None:
    modules = [PACKAGE, *(f"{PACKAGE}.{name}" for name in CHAPTER_MODULES), f"{PACKAGE}.agent", f"{PACKAGE}.providers"]
    blocked = repr(JUPYTER_AND_MODEL_LIBRARIES)
    script = textwrap.dedent(
        f"""
        import importlib, sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {blocked}:
                    raise ImportError(f"blocked for this test: {{name}}")
                return None

        sys.meta_path.insert(0, Block())
        for name in {modules!r}:
            importlib.import_module(name)
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
