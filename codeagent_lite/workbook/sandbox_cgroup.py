"""A memory and pids cgroup of its own for one sandbox run, where the machine lets us make one.

Why: ``RLIMIT_AS`` caps each process and ``RLIMIT_NPROC`` a uid, not a run; a cgroup caps the run as a whole. Made
under this process's own group, joined by the child before exec, removed after the run is killed. Only cgroup v1, as
root: on v2 a group holding processes cannot give its children controllers, and verify's group's processes (the
notebook server) are not verify's to move; there the per-process limits are all a run gets, and verify says so.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RunGroup", "available", "make", "unified_only"]

_ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count()
_PREFIX = "cal-sandbox-"  # then the pid of the process that made the group, and its count


@dataclass(frozen=True)
class RunGroup:
    """The folders of one run's cgroup (memory, pids); the child joins each."""

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
        """Kill what is still in the group, then remove it (a group holding a process cannot be), two seconds each."""
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


def _parents() -> tuple[Path, Path] | None:
    """This process's own memory and pids groups (v1), from /proc/self/cgroup; None without both."""
    own: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _number, controllers, path = line.split(":", 2)
            own.update((controller, path) for controller in controllers.split(",") if controller)
    if not all(name in own and (_ROOT / name / "cgroup.procs").exists() for name in ("memory", "pids")):
        return None
    return _ROOT / "memory" / own["memory"].lstrip("/"), _ROOT / "pids" / own["pids"].lstrip("/")


def unified_only() -> bool:
    """Whether this machine mounts cgroup v2 alone (``/sys/fs/cgroup`` is the unified hierarchy)."""
    return (_ROOT / "cgroup.controllers").exists()


def available() -> bool:
    """Whether a run here gets a cgroup of its own: root on Linux with a v1 memory and pids hierarchy."""
    parents = _parents() if hasattr(os, "geteuid") and os.geteuid() == 0 else None
    return parents is not None and all(os.access(parent, os.W_OK) for parent in parents)


def make(memory_bytes: int, processes: int) -> RunGroup | None:
    """A fresh group capped at ``memory_bytes`` (swap too where counted) and ``processes``; None where none can be."""
    parents = _parents() if available() else None
    if parents is None:
        return None
    _remove_orphans(parents)
    memory, pids = (parent / f"{_PREFIX}{os.getpid()}-{next(_counter)}" for parent in parents)
    made: list[Path] = []
    try:
        for folder in (memory, pids):
            folder.mkdir()
            made.append(folder)
        (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):  # absent when the kernel does not account swap
            (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        (pids / "pids.max").write_text(str(processes))
    except OSError:
        RunGroup(tuple(made)).remove()
        return None
    return RunGroup((memory, pids))


def _remove_orphans(parents: tuple[Path, Path]) -> None:
    """Remove the empty groups of a maker that is gone (killed with ``kill -9`` mid-run, it ran no ``finally``); a group
    holding a process is left alone (``rmdir`` refuses it), and so is one whose maker is alive."""
    for parent in parents:
        with contextlib.suppress(OSError):
            for folder in parent.glob(f"{_PREFIX}*-*"):
                maker = folder.name.removeprefix(_PREFIX).partition("-")[0]
                if maker.isdigit() and not Path(f"/proc/{maker}").exists():
                    with contextlib.suppress(OSError):
                        folder.rmdir()
