"""What notebook 07 (the build-it-yourself assignment) needs beyond ``verify``: one step's verdict, and own-work checks.

``check_step`` never raises, so a learner may run it as often as they like; the graded cell asserts ``passed``. The
hidden tests use ``chapter_imports`` and ``package_calls`` to see whether the learner handed the work to the
package's own chapter modules, which behave exactly right and so pass every visible check.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType, ModuleType
from typing import Any

from .learner_dir import FOLDER_NAME, learner_dir
from .verify import VerifyReport, verify
from .verify_child import MAX_FILE_BYTES, load_package

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
    """``./my_json_text`` beside the notebook first (a release, a fetched copy, a submission being graded: grading
    judges only the submission's files), else ``learner_dir``'s; relative to ``cwd`` so verify names it as given."""
    here = Path.cwd() if cwd is None else cwd
    return FOLDER_NAME if (here / FOLDER_NAME).is_dir() else learner_dir(here, environ)


@dataclass(frozen=True, slots=True)
class StepCheck:
    """One verify step's checks for a folder: ``passed`` when every one of them passes."""

    step: int
    report: VerifyReport

    @property
    def passed(self) -> bool:
        return bool(self.report.results) and not self.report.failed

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
    return step_part(verify(directory, step=step, progress=False), step)


def step_part(report: VerifyReport, step: int) -> StepCheck:
    results = tuple(result for result in report.results if result.check.step == step)
    return StepCheck(step, VerifyReport(report.label, (step,), results, report.file_problems, report.notes))


def load_learner_file(directory: str | os.PathLike[str], file: str) -> ModuleType:
    """Import one of the learner's files in this process, as verify's child does (its siblings by relative import)."""
    folder = Path(directory).resolve()
    package = load_package(folder)
    # A folder of the same name loaded before under this package name (a test process judges many) must not stand
    # in for this one.
    for name, module in list(sys.modules.items()):
        if name.startswith(f"{package}.") and Path(getattr(module, "__file__", "") or "").parent != folder:
            del sys.modules[name]
    return importlib.import_module(f"{package}.{file}")


def _origin(name: str) -> str:
    """The module a name of ``codeagent_lite``'s top level comes from: the submodule of that name if there is one,
    else the module it is defined in (``codeagent_lite`` when unknown)."""
    import codeagent_lite

    if importlib.util.find_spec(f"codeagent_lite.{name}") is not None:
        return f"codeagent_lite.{name}"
    module = getattr(getattr(codeagent_lite, name, None), "__module__", None)
    return module if isinstance(module, str) and module.startswith("codeagent_lite") else "codeagent_lite"


def _imported(node: ast.AST) -> list[str]:
    """The modules an import statement reaches, one per imported name; for ``codeagent_lite.X`` after ``import
    codeagent_lite``, X's module."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and not node.level:
        return [_origin(alias.name) for alias in node.names] if node.module == "codeagent_lite" else [str(node.module)]
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "codeagent_lite":
        return [_origin(node.attr)]
    return []


def chapter_imports(directory: str | os.PathLike[str], file: str) -> list[str]:
    """The package modules ``file`` uses beyond the previous chapter's two, sorted; empty when it writes its own.

    Read from the source, so nothing of the learner's runs; ``package_calls`` catches imports in a string.
    """
    source = (Path(directory) / f"{file}.py").read_text(encoding="utf-8")
    if len(source) > MAX_FILE_BYTES:  # ast.parse costs about 600 bytes a character; verify refuses such a file too
        raise ValueError(f"{file}.py is longer than {MAX_FILE_BYTES // 2**20} MB")
    tree = ast.parse(source)
    used = {name for node in ast.walk(tree) for name in _imported(node)}
    return sorted(name for name in used if name.startswith("codeagent_lite.") and name not in ALLOWED_MODULES)


def _watched_code() -> dict[int, tuple[CodeType, str]]:
    """The code of every function and method the watched modules define, with the name a grader's message shows,
    by identity: code objects compare equal by content, and a learner's dataclass has the same ``__init__``."""
    found: dict[int, tuple[CodeType, str]] = {}
    for module_name in WATCHED_MODULES:
        for name, value in vars(importlib.import_module(module_name)).items():
            if getattr(value, "__module__", None) != module_name:
                continue
            members = vars(value).items() if isinstance(value, type) else [("", value)]
            for attr, member in members:
                code = getattr(getattr(member, "__func__", member), "__code__", None)
                if isinstance(code, CodeType) and (not attr.startswith("__") or attr in ("__init__", "__call__")):
                    found[id(code)] = (code, f"{module_name}.{name}.{attr}".rstrip("."))
    return found


TAMPERED = "sys.setprofile"
"""What ``package_calls`` names when the code it watched switched a profiler or tracer: it could hide any call."""
_SWITCHES = (sys.setprofile, sys.settrace)
_THREAD_SWITCHES = (threading.setprofile.__code__, threading.settrace.__code__)


def package_calls(run: Callable[[], object]) -> list[str]:
    """Run ``run()`` and return the package's chapter functions it called, in order (exceptions are swallowed).

    Empty means the learner's code did its own work. The calls are seen by the interpreter's profiler (in threads
    ``run`` starts too), not by replacing the package's functions, so no way of reaching them is missed: imported,
    renamed, through ``importlib``, by subclassing, from a table or a closure. Switching the profiler off is named
    as ``TAMPERED``. Not seen: work handed to a thread that was already running before ``run``.
    """
    watched, calls, watching = _watched_code(), [], [True]

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        switched = (event == "c_call" and arg in _SWITCHES) or (event == "call" and frame.f_code in _THREAD_SWITCHES)
        if switched and watching[0]:
            calls.append(TAMPERED)
        entry = watched.get(id(frame.f_code)) if event == "call" else None
        if entry is not None and entry[0] is frame.f_code:
            calls.append(entry[1])

    previous = sys.getprofile(), threading.getprofile()
    threading.setprofile(profile)  # first: once sys.setprofile is ours, a switch is the learner's
    sys.setprofile(profile)
    try:
        with contextlib.suppress(Exception):  # the learner's code may refuse the input: only what it called matters
            run()
    finally:
        watching[0] = False
        sys.setprofile(previous[0])
        threading.setprofile(previous[1])
    return calls
