"""A memory and pids cgroup of its own for one sandbox run, where the machine lets us make one.

Why: ``RLIMIT_AS`` caps each process, so a run of 16 processes may still take 16 times that;
``RLIMIT_NPROC`` counts a uid's processes, not a run's. A cgroup caps the run as a whole: every
process the learner's code forks is in it, and the kernel refuses memory (the OOM killer ends the
run) and forks past its caps. Only root may make one here (an unprivileged user has no delegated
hierarchy we could count on), so elsewhere the per-process limits stay the only ones, and
``sandbox.protections()`` says which applied. The group is made under the cgroup this process is
in (never above it: a run stays inside whatever caps this process has), joined by the child
before it execs, and removed after the run was killed.

cgroup v1 (one hierarchy per controller: ``/sys/fs/cgroup/memory``, ``/sys/fs/cgroup/pids``) and
v2 (one unified hierarchy with ``memory.max`` and ``pids.max``) are both handled.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RunGroup", "available", "make"]

_ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count()


@dataclass(frozen=True)
class RunGroup:
    """The folders of one run's cgroup (one per v1 controller, one in v2); the child joins each."""

    folders: tuple[Path, ...]

    def join(self) -> None:
        """Put the calling process in the group. The forked child does this before it execs, in a parent that
        may run threads (a Jupyter kernel), so only plain system calls here: no Python file objects, no locks."""
        for folder in self.folders:
            procs = os.open(os.fsencode(folder / "cgroup.procs"), os.O_WRONLY)
            try:
                os.write(procs, str(os.getpid()).encode("ascii"))
            finally:
                os.close(procs)

    def pids(self) -> set[int]:
        found: set[int] = set()
        for folder in self.folders:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(word) for word in (folder / "cgroup.procs").read_text().split())
        return found

    def remove(self) -> None:
        """Kill whatever is still in the group, then remove it (a group with a process in it cannot be);
        each folder gets its own two seconds."""
        for folder in self.folders:
            deadline = time.monotonic() + 2.0
            while folder.exists():
                for pid in self.pids():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                try:
                    folder.rmdir()
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.005)


def _own_path(controller: str) -> str | None:
    """This process's cgroup in ``controller``'s v1 hierarchy ("" for the v2 one), from /proc/self/cgroup."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _number, controllers, path = line.split(":", 2)
            if controller in controllers.split(",") or (controller == "" and controllers == ""):
                return path
    return None


def _v1_parents() -> tuple[Path, ...] | None:
    parents = []
    for controller in ("memory", "pids"):
        own = _own_path(controller)
        if own is None or not (_ROOT / controller / "cgroup.procs").exists():
            return None
        parents.append(_ROOT / controller / own.lstrip("/"))
    return tuple(parents)


def _v2_parent() -> Path | None:
    if not (_ROOT / "cgroup.controllers").exists():
        return None
    own = _own_path("")
    if own is None:
        return None
    parent = _ROOT / own.lstrip("/")
    with contextlib.suppress(OSError):
        if {"memory", "pids"} <= set((parent / "cgroup.subtree_control").read_text().split()):
            return parent
    return None


def available() -> bool:
    """Whether a run here gets a cgroup of its own: root, Linux, and a hierarchy with memory and pids."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return False
    v2 = _v2_parent()
    parents = _v1_parents() or ((v2,) if v2 is not None else ())
    return bool(parents) and all(os.access(parent, os.W_OK) for parent in parents)


def make(memory_bytes: int, processes: int) -> RunGroup | None:
    """A fresh group capped at ``memory_bytes`` (swap included where the kernel counts it) and ``processes``,
    or None where none can be made (then the per-process limits are all there is)."""
    if not available():
        return None
    name = f"cal-sandbox-{os.getpid()}-{next(_counter)}"
    v1 = _v1_parents()
    made: list[Path] = []
    try:
        if v1 is not None:
            memory, pids = (parent / name for parent in v1)
            made += [memory, pids]
            memory.mkdir()
            pids.mkdir()
            (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):  # absent when the kernel does not account swap
                (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
            (pids / "pids.max").write_text(str(processes))
        else:
            parent = _v2_parent()
            assert parent is not None
            group = parent / name
            made.append(group)
            group.mkdir()
            (group / "memory.max").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):
                (group / "memory.swap.max").write_text("0")
            (group / "pids.max").write_text(str(processes))
    except OSError:
        RunGroup(tuple(folder for folder in made if folder.exists())).remove()
        return None
    return RunGroup(tuple(made))
