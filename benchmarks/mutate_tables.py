"""Mutation testing of the chapter's module-level tables, which mutmut never mutates (it mutates function bodies).

Run it from the repository root after ``mutmut run`` (``make mutation`` runs both)::

    .venv/bin/python benchmarks/mutate_tables.py [MODULE_GLOB]

Each top-level assignment of the modules in ``[tool.mutmut] only_mutate`` (pyproject.toml) is a table when it
holds literals: a dict, set, tuple or list (CONTRACTS, HINTS, the partial literals, the shapes), a string
(WHITESPACE) or a number (MAX_NESTING_DEPTH). Its mutants: each entry left out, each string constant changed
(a short set of characters loses each in turn, any other string gets ``XX`` around it), each number one up and one down.
A mutant is written into a copy of the package and the mutmut test selection runs against it, stopping at the
first failure; a failure kills it. What survives is printed, so each can be killed or shown to be equivalent.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
TIMEOUT = 300  # seconds; a mutant that makes the tests hang counts as caught, as mutmut counts it
OWN_TESTS = {"strict_json": "json_action_parser"}  # a module's own tests, where not test_<module>.py
Mutant = tuple[str, str]  # (what changed, the module's mutated source)


def _lines_offset(source: str) -> list[int]:
    starts, total = [0], 0
    for line in source.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


def _span(node: ast.AST, starts: list[int]) -> tuple[int, int]:
    start = starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
    return start, starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]


def _entries(value: ast.AST) -> list[tuple[ast.AST, ...]]:
    """The removable entries of a literal container: a dict's key with its value, another container's items."""
    if isinstance(value, ast.Dict):
        return [(key, item) for key, item in zip(value.keys, value.values, strict=True) if key is not None]
    if isinstance(value, (ast.Set, ast.Tuple, ast.List)):
        return [(item,) for item in value.elts]
    return []


def _without(source: str, entry: tuple[ast.AST, ...], starts: list[int]) -> str:
    start, end = _span(entry[0], starts)[0], _span(entry[-1], starts)[1]
    rest = source[end:]
    comma = len(rest) - len(rest.lstrip(" \t\n")) if rest.lstrip(" \t\n").startswith(",") else None
    cut_to = end + comma + 1 if comma is not None else end
    return source[:start] + source[cut_to:]


def _string_changes(text: str) -> Iterator[tuple[str, str]]:
    if 0 < len(text) <= 8 and not text.isidentifier():  # a set of characters, such as WHITESPACE
        for index in range(len(text)):
            yield f"{text!r} without {text[index]!r}", text[:index] + text[index + 1 :]
    else:
        yield f"{text!r} -> 'XX...XX'", "XX" + text + "XX"


def _constant_mutants(source: str, node: ast.Constant, starts: list[int]) -> Iterator[tuple[str, str]]:
    start, end = _span(node, starts)
    try:  # a piece of an f-string has no literal of its own
        if ast.literal_eval(source[start:end]) != node.value:
            return
    except (ValueError, SyntaxError):
        return
    if isinstance(node.value, str):
        for what, changed in _string_changes(node.value):
            yield what, source[:start] + repr(changed) + source[end:]
    elif isinstance(node.value, int) and not isinstance(node.value, bool):
        for step in (1, -1):
            yield f"{node.value} -> {node.value + step}", source[:start] + str(node.value + step) + source[end:]


def mutants(source: str) -> Iterator[tuple[str, Mutant]]:
    """(table name, (what changed, mutated source)) for every table of one module."""
    starts = _lines_offset(source)
    for statement in ast.parse(source).body:
        target, value = _assignment(statement)
        if target is None or value is None or target == "__all__" or isinstance(value, ast.Subscript):
            continue  # __all__ and type aliases (Literal[...]) are no tables
        # The table's own entries, and those of a table inside a dict (a contract's fields); an entry left out of
        # a pair such as a hint's (correction, instead) would only break the unpacking.
        inner = (
            [item for item in value.values if isinstance(item, (ast.Dict, ast.Set))]
            if isinstance(value, ast.Dict)
            else []
        )
        for container in [value, *inner] if not target.startswith("(") else []:
            for entry in _entries(container):
                yield target, (f"left out: {ast.unparse(entry[0])[:40]}", _without(source, entry, starts))
        for node in ast.walk(value):
            if isinstance(node, ast.Constant):
                for what, mutated in _constant_mutants(source, node, starts):
                    yield target, (what, mutated)


def _assignment(statement: ast.stmt) -> tuple[str | None, ast.AST | None]:
    if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], (ast.Name, ast.Tuple)):
        return ast.unparse(statement.targets[0]), statement.value
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return statement.target.id, statement.value
    return None, None


def _fails(tests: list[str], package_copy: Path) -> bool:
    environment = {**os.environ, "PYTHONPATH": str(package_copy), "MUTANT_UNDER_TEST": "table"}
    command = [sys.executable, "-P", "-m", "pytest", *CONFIG["pytest_add_cli_args"], "-p", "no:cacheprovider", *tests]
    try:  # -P: the checkout is not put first on sys.path, so the mutated copy is the one imported
        return subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, timeout=TIMEOUT).returncode != 0
    except subprocess.TimeoutExpired:
        return True


def killed(module: Path, mutated: str, package_copy: Path) -> bool:
    """Whether the tests fail on the mutant: first the module's own test file (most mutants fail there, sooner),
    then, if it passes, the whole selection."""
    target = package_copy / module.relative_to(ROOT)
    original = target.read_text(encoding="utf-8")
    target.write_text(mutated, encoding="utf-8")
    selection = CONFIG["pytest_add_cli_args_test_selection"]
    own = [test for test in selection if Path(test).stem == f"test_{OWN_TESTS.get(module.stem, module.stem)}"]
    try:
        return (bool(own) and _fails(own, package_copy)) or _fails(selection, package_copy)
    finally:
        target.write_text(original, encoding="utf-8")


def main(pattern: str = "*") -> int:
    started, survivors, counts = time.monotonic(), [], {}
    with tempfile.TemporaryDirectory() as scratch:
        package_copy = Path(scratch)
        shutil.copytree(ROOT / "codeagent_lite", package_copy / "codeagent_lite")
        for name in CONFIG["only_mutate"]:
            module = ROOT / name
            if not fnmatch.fnmatch(module.stem, pattern):
                continue
            total = caught = 0
            for table, (what, mutated) in mutants(module.read_text(encoding="utf-8")):
                total += 1
                if killed(module, mutated, package_copy):
                    caught += 1
                else:
                    survivors.append(f"{module.stem}.{table}: {what}")
            counts[module.stem] = (total, caught)
            print(f"{module.stem:20} {total:4} table mutants, {caught:4} killed", flush=True)
    print(f"\n{sum(c for _, c in counts.values())} of {sum(t for t, _ in counts.values())} killed", end="")
    print(f" in {time.monotonic() - started:.0f} s; survivors:" if survivors else " (no survivors)")
    for survivor in survivors:
        print("  " + survivor)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
