"""The child's end of the sandbox's channel: read the payload once, send answers back.

This file is copied into every sandbox next to the program and imported from there, so it
uses the standard library only and nothing of the package. The parent (``sandbox``) trusts
none of what arrives: each message is one line of JSON on a pipe of its own (not standard
output, which a learner's ``print`` would fill), and the parent caps, times and parses it.

In a conversation (``sandbox.SandboxSession``) ``receive`` gives each request, and each is
answered with one ``send_part``. In a run with ``answers`` (verify's) it is the other way round: the
child asks with ``send_part`` and ``receive`` gives the parent's answer.

``send_part`` may be called any number of times (verify sends one part per check, so a
hang costs only the check that hung); ``send`` sends the one final answer. ``reap`` waits for
this process's children the parent killed before a fenced answer, so they are gone.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

__all__ = ["read_payload", "reap", "receive", "send", "send_part"]

PAYLOAD_FILE = "payload.json"


def _channel() -> int:
    """The write end's number, from the command line (``h<handle>`` on Windows)."""
    given = sys.argv[1] if len(sys.argv) > 1 else ""
    if sys.platform == "win32":  # pragma: no cover - Windows
        import msvcrt

        return msvcrt.open_osfhandle(int(given[1:]), 0) if given[1:].isdigit() else -1
    return int(given) if given.isdigit() else -1


def _request_channel() -> int:
    """The read end of a conversation's requests (``sandbox.SandboxSession``), or -1 in a one-shot run."""
    given = sys.argv[2] if len(sys.argv) > 2 else ""
    if sys.platform == "win32":  # pragma: no cover - Windows
        import msvcrt

        return msvcrt.open_osfhandle(int(given[1:]), os.O_RDONLY) if given[1:].isdigit() else -1
    return int(given) if given.isdigit() else -1


_channel_fd = _channel()
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


def reap() -> None:
    """This process's children the parent killed are zombies until waited for: wait for them, so they are gone
    (after an answer the parent fenced before giving it)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
