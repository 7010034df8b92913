"""The child's end of the sandbox's channel: read the payload once, send answers back, hear the parent.

Copied into every sandbox, so standard library only. Each message is one JSON line on a pipe of its own (standard
output is the learner's ``print``'s). ``send_part`` any number of times (so a hang costs only one part), ``send``
once, at the end; ``receive`` gives the parent's next request.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

__all__ = ["read_payload", "reap", "receive", "send", "send_part"]


def _descriptor(index: int, mode: int) -> int:
    """A pipe end named on the command line (``h<handle>`` on Windows), or -1 when there is none."""
    given = sys.argv[index] if len(sys.argv) > index else ""
    if sys.platform == "win32":  # pragma: no cover - Windows
        import msvcrt

        return msvcrt.open_osfhandle(int(given[1:]), mode) if given[1:].isdigit() else -1
    return int(given) if given.isdigit() else -1


_channel_fd = _descriptor(1, 0)
_request_fd = _descriptor(2, os.O_RDONLY)
# Bound now, before learner code runs: a learner's ``json.dumps = ...`` of their own must not break the channel.
_dumps, _loads = json.dumps, json.loads
_pending = bytearray()
_asked = 0  # requests read so far: each message names it, so a late part is never taken for a later answer


def read_payload() -> Any:
    with open("payload.json", encoding="utf-8") as file:
        return json.load(file)


def receive() -> Any:
    """The parent's next request (JSON data), or None when it has no more."""
    global _pending, _asked
    while b"\n" not in _pending:
        chunk = os.read(_request_fd, 65536) if _request_fd >= 0 else b""
        if not chunk:
            return None
        _pending += chunk
    line, _, rest = bytes(_pending).partition(b"\n")
    _pending = bytearray(rest)
    _asked += 1
    return _loads(line)


def _write(kind: str, data: object) -> None:
    message = {"kind": kind, "data": data, "asked": _asked}
    payload = (_dumps(message, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")
    while payload:
        payload = payload[os.write(_channel_fd, payload) :]


def send_part(data: object) -> None:
    _write("part", data)


def send(data: object) -> None:
    """The final answer: the parent stops listening after it."""
    _write("final", data)


def reap() -> None:
    """Wait for this process's children that the parent killed at a fence: until then they are zombies."""
    try:
        while hasattr(os, "WNOHANG") and os.waitpid(-1, os.WNOHANG)[0] != 0:
            pass
    except ChildProcessError:
        return
