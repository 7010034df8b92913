"""The child's end of the sandbox's channel: read the payload once, send answers back.

This file is copied into every sandbox next to the program and imported from there, so it
uses the standard library only and nothing of the package. The parent (``sandbox``) trusts
none of what arrives: each message is one line of JSON on a pipe of its own (not standard
output, which a learner's ``print`` would fill), and the parent caps, times and parses it.

In a conversation (``sandbox.SandboxSession``) ``receive`` gives each request, and each is
answered with one ``send_part``. In a run with ``answers`` (verify's) it is the other way round: the
child asks with ``send_part`` and ``receive`` gives the parent's answer.

``send_part`` may be called any number of times (verify sends one part per check, so a
hang costs only the check that hung); ``send`` sends the one final answer. ``fence`` asks
the parent to kill every other process of the run (what the code run so far forked and
left behind) and waits until it has: verify calls it between two steps.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

__all__ = ["fence", "read_payload", "reap", "receive", "send", "send_part"]

PAYLOAD_FILE = "payload.json"


def _channel() -> int:
    """The write end's number, from the command line (``h<handle>`` on Windows)."""
    given = sys.argv[1] if len(sys.argv) > 1 else ""
    if sys.platform == "win32":  # pragma: no cover - Windows
        import msvcrt

        return msvcrt.open_osfhandle(int(given[1:]), 0) if given[1:].isdigit() else -1
    return int(given) if given.isdigit() else -1


def _fence_channel() -> int:
    """The read end on which the parent answers a fence, or -1 where it does none (not Linux)."""
    given = sys.argv[2] if len(sys.argv) > 2 else ""
    return int(given) if given.isdigit() else -1


def _request_channel() -> int:
    """The read end of a conversation's requests (``sandbox.SandboxSession``), or -1 in a one-shot run."""
    given = sys.argv[3] if len(sys.argv) > 3 else ""
    return int(given) if given.isdigit() else -1


_channel_fd = _channel()
_fence_fd = _fence_channel()
_request_fd = _request_channel()
_pending = bytearray()


def read_payload() -> Any:
    """The JSON payload the parent wrote for this run."""
    with open(PAYLOAD_FILE, encoding="utf-8") as file:
        return json.load(file)


def receive() -> Any:
    """The parent's next request (JSON data), or None when it has no more (the conversation is over)."""
    global _pending
    while b"\n" not in _pending:
        chunk = os.read(_request_fd, 65536) if _request_fd >= 0 else b""
        if not chunk:
            return None
        _pending += chunk
    line, _, rest = bytes(_pending).partition(b"\n")
    _pending = bytearray(rest)
    return json.loads(line)


def _write(kind: str, data: object) -> None:
    line = json.dumps({"kind": kind, "data": data}, ensure_ascii=True, allow_nan=False) + "\n"
    payload = line.encode("ascii")
    while payload:
        written = os.write(_channel_fd, payload)
        payload = payload[written:]


def send_part(data: object) -> None:
    """One intermediate answer (JSON-able data); the parent keeps them in order."""
    _write("part", data)


def send(data: object) -> None:
    """The final answer (JSON-able data); the parent stops listening after it."""
    _write("final", data)


def fence() -> None:
    """Have the parent kill every other process of this run, and wait until it has (then reap them).

    Bytes left on the fence's channel by earlier fences nobody waited for (a forked copy of
    this process asked too) are dropped first, so that this one really waits.
    """
    if _fence_fd < 0:
        return
    _drop_stale_answers()
    _write("fence", None)
    try:
        os.read(_fence_fd, 1)
    except OSError:  # closed: the parent is gone, and this run with it
        return
    reap()


def _drop_stale_answers() -> None:
    os.set_blocking(_fence_fd, False)
    try:
        while os.read(_fence_fd, 4096):
            pass
    except OSError:  # BlockingIOError: nothing (more) waiting
        pass
    finally:
        os.set_blocking(_fence_fd, True)


def reap() -> None:
    """This process's children the parent killed are zombies until waited for: wait for them, so they are gone
    (after a fence, and after an answer the parent fenced before giving)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
