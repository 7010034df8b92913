"""JupyterHub's LocalProcessSpawner with the limits it leaves out, so one student cannot take the class down.

LocalProcessSpawner starts each server as the student's Unix account but ignores `mem_limit`. This spawner puts
each student's server (and so every kernel and process it starts) in a memory cgroup and a pids cgroup of its
own, made before the server starts and joined in the child before it becomes the student, so nothing the student
runs escapes them: a kernel that allocates without end is killed by the kernel's OOM killer inside its own cgroup,
a fork bomb gets EAGAIN at the pids limit, and the other students carry on. Where cgroup v1's memory and pids
hierarchies are not writable (a container without them, cgroup v2 only), it falls back to setrlimit: RLIMIT_NPROC,
counted per uid (each student has their own), and RLIMIT_AS per process. `limits_in_force` says which applies.

Never root: the spawner refuses to start a server whose account has uid 0, whatever the hooks do.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import resource
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jupyterhub.spawner import LocalProcessSpawner  # type: ignore[import-untyped]  # JupyterHub ships no hints
from traitlets import Integer, Unicode

CGROUP_V1 = Path("/sys/fs/cgroup")
GROUP = "codeagent-lite"


def cgroup_folders(root: Path, user: str) -> dict[str, Path]:
    return {controller: root / controller / GROUP / user for controller in ("memory", "pids")}


def cgroups_usable(root: Path) -> bool:
    """cgroup v1 memory and pids hierarchies this process may create groups in."""
    for controller in ("memory", "pids"):
        parent = root / controller
        if not (parent / "cgroup.procs").is_file() or not os.access(parent, os.W_OK):
            return False
    return True


def limits_in_force(root: Path = CGROUP_V1) -> str:
    if os.geteuid() == 0 and cgroups_usable(root):
        return "cgroup v1 memory and pids groups per student"
    return "setrlimit per student (RLIMIT_NPROC per uid, RLIMIT_AS per process): no writable cgroup v1 here"


class ClassSpawner(LocalProcessSpawner):  # type: ignore[misc]  # an untyped base class
    """Each student's server as the student's account, inside memory and pids limits of its own."""

    pids_limit = Integer(
        512, config=True, help="Processes and threads one student's server and kernels may hold together."
    )
    cgroup_root = Unicode(str(CGROUP_V1), config=True, help="Where the cgroup v1 hierarchies are mounted.")

    def make_preexec_fn(self, name: str) -> Callable[[], None]:
        entry = pwd.getpwnam(name)
        if entry.pw_uid == 0:
            raise RuntimeError(f"refusing to start a server for {name!r}: its account is root (uid 0)")
        become_user: Callable[[], None] = super().make_preexec_fn(name)
        memory = int(self.mem_limit or 0)
        pids = int(self.pids_limit)
        joins = self._make_cgroups(name, memory, pids)

        def limit_then_become_user() -> None:
            # Runs in the child between fork and exec, still as root: join the groups, set the limits, then drop.
            for procs in joins:
                with open(procs, "w", encoding="ascii") as handle:
                    handle.write(str(os.getpid()))
            if not joins:
                resource.setrlimit(resource.RLIMIT_NPROC, (pids, pids))
                if memory:
                    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            become_user()

        return limit_then_become_user

    def _make_cgroups(self, name: str, memory: int, pids: int) -> list[Path]:
        root = Path(self.cgroup_root)
        if os.geteuid() != 0 or not cgroups_usable(root):
            return []
        folders = cgroup_folders(root, name)
        for folder in folders.values():
            folder.mkdir(parents=True, exist_ok=True)
        if memory:
            (folders["memory"] / "memory.limit_in_bytes").write_text(str(memory), encoding="ascii")
        (folders["pids"] / "pids.max").write_text(str(pids), encoding="ascii")
        return [folder / "cgroup.procs" for folder in folders.values()]

    async def stop(self, now: bool = False) -> Any:
        result = await super().stop(now=now)
        # A group still holding a process (a kernel that outlived its server) stays; rmdir refuses it.
        for folder in cgroup_folders(Path(self.cgroup_root), self.user.name).values():
            with contextlib.suppress(OSError):
                folder.rmdir()
        return result
