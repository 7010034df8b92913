"""Which sandboxed processes of this test session are still alive: the tests' one way to see a survivor."""

from __future__ import annotations

import os
import time

import psutil  # type: ignore[import-untyped]

from codeagent_lite.workbook import sandbox


def _of_this_session(process: psutil.Process) -> bool:
    """As root each run has a uid of its own drawn from this process's pid (``sandbox._uid_range``), so another test
    session's runs on the same machine are told apart; otherwise every run counts."""
    if os.geteuid() != 0 or not sandbox._drops_uid():
        return True
    try:
        return bool(process.uids().real in sandbox._uid_range())
    except psutil.Error:
        return False


def sandbox_processes(wait: float = 5.0) -> list[psutil.Process]:
    """Sandboxed processes still alive (zombies aside), after up to ``wait`` s for the kernel to finish killing."""
    deadline = time.monotonic() + wait
    while True:
        found = [
            process
            for process in psutil.process_iter(["cmdline", "status"])
            if "runpy.run_path('__main__.py'" in " ".join(process.info.get("cmdline") or [])
            and process.info.get("status") != psutil.STATUS_ZOMBIE
            and _of_this_session(process)
        ]
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)
