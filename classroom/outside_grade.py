"""A step of nbgrader's autograde: every graded cell of notebooks 05 and 07 re-judged outside the student's kernel.

nbgrader's ``Execute`` runs the submission in one kernel and ``SaveAutoGrades`` scores each graded cell from its
outputs (an error output means 0). Between the two, ``OutsideJudge`` asks ``outside_judge`` for the verdict of
each graded cell and rewrites the cell's outputs to it: a pass keeps no error (full points) and shows the judge's
report; a fail becomes one error line giving the judge's reason. So whatever the kernel printed or patched, the
score and the feedback page say what the outside judge decided, and never a ✔ beside 0 points.

It lives in classroom/, not in the package a learner installs: only the teacher's nbgrader runs it
(``nbgrader_config.py`` puts this folder on ``sys.path`` and lists it in ``Autograde.autograde_preprocessors``), in
its own process; the learner's code it needs runs in the judge's sandboxed children.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute  # type: ignore[import-untyped]
from outside_judge import Verdict, judge_build, judge_exercises

import codeagent_lite
from codeagent_lite.workbook.language import assignment_language
from codeagent_lite.workbook.sandbox import (
    Limits,
    bwrap_executable,
    fresh_uid,
    readable_bind,
    system_binds,
    unprivileged,
)

__all__ = ["JUDGED", "OutsideJudge", "SandboxedExecute", "judged_outputs"]

JUDGED = {"05_exercises": "exercises", "07_build_it_yourself": "build"}
"""The notebooks this judge decides (by notebook name, as nbgrader's gradebook knows them)."""

ENAME = "OutsideJudge"


def _nbgrader(cell: NotebookNode) -> dict[str, Any]:
    metadata = cell.get("metadata", {}).get("nbgrader", {})
    return metadata if isinstance(metadata, dict) else {}


def _output(**fields: Any) -> NotebookNode:
    return NotebookNode(**fields)  # type: ignore[no-untyped-call]


def judged_outputs(verdict: Verdict) -> list[NotebookNode]:
    """The outputs a graded cell gets: the judge's report, then (on a fail) one error line with its reason."""
    outputs = []
    lines = verdict.text.splitlines() or [""]
    if verdict.passed or len(lines) > 1:
        report = verdict.text if verdict.passed else "\n".join(lines[:-1])
        outputs.append(_output(output_type="stream", name="stdout", text=report + "\n"))
    if not verdict.passed:
        reason = lines[-1].strip() or "the outside judge found a problem"
        outputs.append(_output(output_type="error", ename=ENAME, evalue=reason, traceback=[f"{ENAME}: {reason}"]))
    return outputs


class OutsideJudge(Preprocessor):
    """Replace each graded cell's outputs of a judged notebook by the outside judge's verdict."""

    enabled = True  # nbconvert's preprocessors are off unless enabled; this one is the point of the pipeline

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        nbgrader = resources.get("nbgrader", {})
        kind = JUDGED.get(str(nbgrader.get("notebook", "")))
        if kind is None:
            return nb, resources
        verdicts = _verdicts(nb, resources, kind)
        for cell in nb.cells:
            metadata = _nbgrader(cell)
            if cell.cell_type != "code" or not metadata.get("grade"):
                continue
            verdict = verdicts.get(str(metadata.get("grade_id")))
            if verdict is None:
                verdict = Verdict(False, "the outside judge has no verdict for this cell")
            cell.outputs = judged_outputs(verdict)
            self.log.info("outside judge: %s %s", metadata.get("grade_id"), "passed" if verdict.passed else "failed")
        return nb, resources


def _verdicts(nb: NotebookNode, resources: Mapping[str, Any], kind: str) -> dict[str, Verdict]:
    """The judge's verdicts for a judged notebook: its answer cells' source (05), or its folder (07)."""
    language = assignment_language(str(resources.get("nbgrader", {}).get("assignment", ""))) or "en"
    if kind == "exercises":
        sources = [cell.source for cell in nb.cells if cell.cell_type == "code" and _nbgrader(cell).get("solution")]
        return judge_exercises(sources, language=language)
    folder = Path(str(resources.get("metadata", {}).get("path", ".")))
    return judge_build(folder / "my_json_text", language=language)


# --------------------------------------------------------------------------- the student's kernel, without rights


REPO = Path(codeagent_lite.__file__).resolve().parents[1]
PREFIX = Path(sys.prefix).resolve()
BASE_PREFIX = Path(sys.base_prefix).resolve()
"""The checkout the package runs from, and the interpreter's environment and its base installation."""

KERNEL_LIMITS = Limits(memory_bytes=4 * 2**30, processes=64, open_files=256, output_bytes=16_000_000)
"""The student's kernel as root: its own uid, and these bounds (threads count as processes; ipykernel runs a few)."""


_IGNORE_SIGINT = ["/bin/sh", "-c", 'trap "" INT && exec "$@"', "sh"]


def _kernel_sandbox(
    command: list[str],
    notebook_dir: Path,
    course: Path,
    connection_file: str,
    *,
    repo: Path = REPO,
    prefix: Path = PREFIX,
) -> list[str]:
    """``command`` (a kernel's argv) inside bubblewrap: the course and the repo's teacher-only folders hidden, only
    the notebook's own folder visible among the submissions, every capability dropped.

    As root (a classroom server, CI), the kernel sees a fresh root holding only the interpreter, the environment
    it runs from and the package, runs as a kernel uid of its own with the sandbox's limits (``sandbox``'s
    helpers, as verify's runs), and in a pid namespace of its own, so a fork bomb in an answer cell is bounded
    and dies with the kernel. Otherwise the machine is shown read-only. The network stays shared either way:
    the kernel talks to nbgrader over TCP on loopback.
    """
    bwrap = bwrap_executable()
    if bwrap is None:
        raise RuntimeError(
            "autograde runs each kernel in bubblewrap (bwrap); install it (Debian: apt-get install bubblewrap)"
        )
    hidden = [path.resolve() for path in (course, repo / "solutions", repo / "classroom") if path.is_dir()]
    uid = fresh_uid()
    # jupyter_client interrupts a cell with SIGINT to the kernel's process group, bwrap's included: bwrap dies of
    # it, and the kernel with it. Ignored here, SIGINT stays ignored through exec; ipykernel handles it itself.
    wrapped = [*_IGNORE_SIGINT, bwrap, *_kernel_world(repo, prefix, uid), "--dev", "/dev", "--proc", "/proc"]
    for path in hidden:
        wrapped += ["--tmpfs", str(path)]
    for path in (notebook_dir.resolve(), Path(connection_file).resolve()):
        wrapped += readable_bind(path)
    for path in hidden:  # an empty, read-only folder: nothing to read, nowhere to write
        wrapped += ["--remount-ro", str(path)]
    wrapped += ["--chdir", str(notebook_dir.resolve()), "--die-with-parent"]
    wrapped += ["--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--clearenv"]
    for name, value in _kernel_environment(os.environ).items():
        wrapped += ["--setenv", name, value]
    if uid is None:
        return [*wrapped, "--cap-drop", "ALL", "--", *command]
    # setpriv needs root's CAP_SETUID to change uid; it then drops every capability (bounding set included)
    os.chown(connection_file, uid, -1)  # the kernel's own key; the teacher's process (root) still reads it
    return [*wrapped, "--unshare-pid", "--", *unprivileged(uid, KERNEL_LIMITS), *command]


def _kernel_world(repo: Path, prefix: Path, uid: int | None) -> list[str]:
    """What the kernel's root holds: the whole machine read-only, or (with a uid of its own) only the interpreter,
    its environment and the package's folder, readable by any uid (their parents are made traversable).

    Never the checkout's root: a class hub's checkout is closed to other accounts (0700), and a bind keeps its real
    mode, so binding it would hide the environment inside it (``.venv``) from the kernel's uid again."""
    # An empty /tmp of its own comes before the folders the kernel needs: a checkout (or its .venv) that lies under
    # /tmp, as a CI clone may, is bound again on top of it instead of being hidden by it.
    if uid is None:
        world = ["--ro-bind", "/", "/", "--perms", "1777", "--tmpfs", "/tmp"]
        needed = [folder for folder in (prefix.resolve(), repo) if Path("/tmp") in folder.parents]
    else:
        world = [*system_binds(), "--perms", "1777", "--tmpfs", "/tmp"]
        needed = [folder for folder in (prefix.resolve(), repo / "codeagent_lite") if folder != BASE_PREFIX]
    for folder in needed:
        world += readable_bind(folder)
    return world


KERNEL_ENVIRONMENT = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "LC_CTYPE", "NBGRADER_EXECUTION", "CAL_LANG")
"""What the student's kernel keeps of nbgrader's environment: where Python and the package are, the language.
Nothing else: the teacher's API keys and tokens stay with the teacher."""


def _kernel_environment(environ: Mapping[str, str]) -> dict[str, str]:
    kept = {name: environ[name] for name in KERNEL_ENVIRONMENT if name in environ}
    return {**kept, "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel starts inside ``_kernel_sandbox``."""

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        command = super().format_kernel_cmd(extra_arguments)
        notebook_dir = Path(str((self._launch_args or {}).get("cwd") or Path.cwd()))
        # nbgrader runs in the course's root folder: that whole folder is what the kernel must not see.
        return _kernel_sandbox(command, notebook_dir, Path.cwd(), self.connection_file)


class SandboxedExecute(Execute):  # type: ignore[misc]
    """nbgrader's Execute, its kernel started without the teacher's rights (``_kernel_sandbox``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["kernel_manager_class"] = SandboxedKernelManager
        super().__init__(*args, **kwargs)
