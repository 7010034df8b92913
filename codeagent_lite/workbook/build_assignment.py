"""What notebook 07 (the build-it-yourself assignment) needs beyond ``verify``: one step's verdict, and own-work checks.

Notebook 07 is an nbgrader assignment whose graded cells judge the learner's three files. The same notebook runs in
three places, and each keeps the learner's folder somewhere else, so ``learner_folder`` looks in order:

* ``./my_json_text`` beside the notebook: an nbgrader release, a student's fetched copy, a submission being graded;
* ``CAL_LEARNER_DIR``: the classroom server's students (classroom/jupyterhub_config.py sets it);
* ``../my_json_text``: the workbook itself (``notebooks/en`` and ``notebooks/zh`` beside ``notebooks/my_json_text``),
  made from the stubs on first use as ``learner_dir`` makes it for notebooks 02-04.

A submission's own folder comes first, so grading never judges anyone's files but the submission's.

``check_step`` is a self-check: it shows one step of ``verify``'s report and never raises, so a learner may run it
as often as they like; the graded cell asserts ``passed``. The hidden tests use ``load_learner_file``,
``chapter_imports`` and ``package_calls`` to see whether the learner wrote the chapter or handed the work to the
package's own chapter modules, which behave exactly right and so pass every visible check.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from .learner_dir import FOLDER_NAME, learner_dir
from .verify import VerifyReport, verify
from .verify_child import load_package

__all__ = [
    "ALLOWED_MODULES",
    "FOLDER_NAME",
    "StepCheck",
    "chapter_imports",
    "check_step",
    "learner_folder",
    "load_learner_file",
    "package_calls",
    "step_part",
]


ALLOWED_MODULES = ("codeagent_lite.kernel_types", "codeagent_lite.model_adapter")
"""The previous chapter, which the learner's files build on as the series' own files do; the rest is theirs."""

WATCHED_MODULES = (
    "codeagent_lite.json_text_messages",
    "codeagent_lite.json_text_adapter",
    "codeagent_lite.json_action_parser",
    "codeagent_lite.strict_json",
)
"""The package's own copies of what the learner writes: calling into them is not writing the chapter."""


def learner_folder(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The learner's folder, as a path relative to ``cwd`` when it is one (verify then names it as given)."""
    here = Path.cwd() if cwd is None else cwd
    if (here / FOLDER_NAME).is_dir():
        return FOLDER_NAME
    return learner_dir(here, environ)


@dataclass(frozen=True, slots=True)
class StepCheck:
    """One verify step's checks for a folder: ``passed`` when every one of them passes."""

    step: int
    report: VerifyReport

    @property
    def passed(self) -> bool:
        return bool(self.report.results) and all(result.passed for result in self.report.results)

    def summary(self) -> str:
        return self.report.summary()

    def __str__(self) -> str:
        return str(self.report)

    def __repr__(self) -> str:
        return f"StepCheck(step {self.step}, {self.report.passed} of {len(self.report.results)} checks pass)"

    def _repr_html_(self) -> str:
        return self.report._repr_html_()


def check_step(directory: str | os.PathLike[str], step: int) -> StepCheck:
    """Run verify up to ``step`` and keep that step's checks: the earlier steps are graded in their own cells."""
    return step_part(verify(directory, step=step, progress=False), step)  # a graded cell shows its StepCheck only


def step_part(report: VerifyReport, step: int) -> StepCheck:
    """The part of a verify report that is about ``step``."""
    results = tuple(result for result in report.results if result.check.step == step)
    return StepCheck(step, VerifyReport(report.label, (step,), results, report.file_problems, report.notes))


def load_learner_file(directory: str | os.PathLike[str], file: str) -> ModuleType:
    """Import one of the learner's files in this process, as verify's child does (its siblings by relative import)."""
    folder = Path(directory).resolve()
    package = load_package(folder)
    # Another folder of the same name may have been loaded under this package name before (a test process judges
    # many): its files must not stand in for this folder's.
    for name, module in list(sys.modules.items()):
        if name.startswith(f"{package}.") and Path(getattr(module, "__file__", "") or "").parent != folder:
            del sys.modules[name]
    return importlib.import_module(f"{package}.{file}")


def _origin(name: str) -> str:
    """The module a name of ``codeagent_lite``'s top level is defined in (``codeagent_lite`` when unknown)."""
    import codeagent_lite

    value = getattr(codeagent_lite, name, None)
    module = getattr(value, "__module__", None)
    return module if isinstance(module, str) and module.startswith("codeagent_lite") else "codeagent_lite"


def _is_package(name: str) -> bool:
    return name == "codeagent_lite" or name.startswith("codeagent_lite.")


def _from_the_top_level(alias: ast.alias) -> str:
    """``from codeagent_lite import X``: X's own module when X is a submodule, else the module X is defined in."""
    submodule = f"codeagent_lite.{alias.name}"
    return submodule if importlib.util.find_spec(submodule) is not None else _origin(alias.name)


def _imported(node: ast.AST) -> Iterator[str]:
    """The package modules an import statement reaches, one per imported name."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names if _is_package(alias.name))
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _is_package(node.module):
        if node.module == "codeagent_lite":
            yield from (_from_the_top_level(alias) for alias in node.names)
        else:
            yield node.module


def _attributes_of_the_package(tree: ast.AST) -> Iterator[str]:
    """``codeagent_lite.parse_json_action(...)`` after ``import codeagent_lite``: the module each such name is from."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "codeagent_lite":
            yield _origin(node.attr)


def chapter_imports(directory: str | os.PathLike[str], file: str) -> list[str]:
    """The package modules ``file`` uses beyond the previous chapter's two, sorted; empty when it writes its own.

    Read from the source, so nothing of the learner's runs. Imports in a string (``importlib``) are not seen here;
    ``package_calls`` catches those when the code runs.
    """
    tree = ast.parse((Path(directory) / f"{file}.py").read_text(encoding="utf-8"))
    used = {name for node in ast.walk(tree) for name in _imported(node)} | set(_attributes_of_the_package(tree))
    return sorted(name for name in used if name not in ALLOWED_MODULES and name != "codeagent_lite")


def _spy(original: Callable[..., Any], name: str, calls: list[str]) -> Callable[..., Any]:
    @functools.wraps(original)
    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return original(*args, **kwargs)

    return spy


def _watched_functions() -> dict[int, tuple[str, Callable[..., Any]]]:
    """Every function and method the watched modules define, by identity (classes' methods included)."""
    found: dict[int, tuple[str, Callable[..., Any]]] = {}
    for module_name in WATCHED_MODULES:
        for name, value in vars(importlib.import_module(module_name)).items():
            if getattr(value, "__module__", None) != module_name:
                continue
            members = vars(value).items() if isinstance(value, type) else [("", value)]
            for attribute, member in members:
                if callable(member) and (not attribute.startswith("__") or attribute in ("__init__", "__call__")):
                    found[id(member)] = (f"{module_name}.{name}.{attribute}".rstrip("."), member)
    return found


def _references(watched: dict[int, tuple[str, Callable[..., Any]]]) -> list[tuple[ModuleType | type, str, Any]]:
    """Every (holder, name, function) whose value is one of the watched functions: a holder is a loaded module or
    a class of a watched module."""
    holders: list[ModuleType | type] = [
        module for module in list(sys.modules.values()) if isinstance(module, ModuleType)
    ]
    holders += [
        value for name in WATCHED_MODULES for value in vars(sys.modules[name]).values() if isinstance(value, type)
    ]
    return [
        (holder, name, value)
        for holder in holders
        for name, value in list(vars(holder).items())
        if (entry := watched.get(id(value))) is not None and entry[1] is value
    ]


@contextlib.contextmanager
def _spying(calls: list[str]) -> Iterator[None]:
    """Replace every reference to a watched function, in every loaded module and class, by a recording spy."""
    watched = _watched_functions()
    replaced = _references(watched)
    try:
        for holder, name, value in replaced:
            setattr(holder, name, _spy(value, watched[id(value)][0], calls))
        yield
    finally:
        for holder, name, value in reversed(replaced):
            setattr(holder, name, value)


def package_calls(run: Callable[[], object]) -> list[str]:
    """Run ``run()`` and return the package's chapter functions it called, in order (exceptions are swallowed).

    Empty means the learner's code did its own work: it did not call the package's messages, adapter, parser or
    strict JSON loader, however it reached them (imported, renamed, through ``importlib``, by subclassing).
    """
    calls: list[str] = []
    # The learner's code may refuse the input: only what it called matters here.
    with _spying(calls), contextlib.suppress(Exception):
        run()
    return calls
