"""The sandboxed child the outside judge talks to: a fresh Python that holds the learner's code and no rights.

Where ``bwrap`` (bubblewrap, a Debian package) is installed, the child sees a read-only interpreter, the few
files it is handed and an empty ``/tmp``; no network, no other process, no environment but ``CAL_LANG``, none of
the course (gradebook, other submissions, hidden tests). Without bwrap (macOS, Windows, a machine without the
package) it still gets an empty environment, a temporary working folder, its own session and resource limits,
and ``isolation`` says so. Every answer it sends is untrusted: one line of JSON at most ``MAX_MESSAGE`` bytes,
read with a deadline (a half-written line included), its nesting bounded by ``outside_wire``.

This is a thin stand-in with the shape of the workbook's sandbox (``sandbox.run_in_sandbox``) until that lands:
the judge needs a conversation (one request per case), which is why it keeps the child alive between requests.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["KERNEL_TYPES", "MAX_MESSAGE", "ChildStopped", "SandboxedChild", "bwrap_path", "sandboxed"]

MAX_MESSAGE = 4_000_000
"""Bytes in one answer: the chapter's values are small; a learner's 600 MB reply is cut off here."""

PACKAGE = Path(__file__).resolve().parents[1]
KERNEL_TYPES = ("kernel_types", "model_adapter")
"""The previous chapter, all a learner's folder may import from the package (and what these import in turn)."""

_MEMORY = 1 << 30
_FILE_SIZE = 16 << 20
_OPEN_FILES = 128
_CPU_SECONDS = 300


class ChildStopped(RuntimeError):
    """The child broke the conversation: it died, went silent past the deadline, or sent what is not an answer."""


def bwrap_path() -> str | None:
    """bubblewrap's executable when it is installed and works here (a container may forbid its namespaces)."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    probe = subprocess.run(
        [found, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
        capture_output=True,
        timeout=20,
        check=False,
    )
    return found if probe.returncode == 0 else None


def _limits() -> None:
    """In the child before it starts: bounds that hold for the whole session (root included, except processes)."""
    import resource

    for limit, value in (
        (resource.RLIMIT_AS, _MEMORY),
        (resource.RLIMIT_FSIZE, _FILE_SIZE),
        (resource.RLIMIT_NOFILE, _OPEN_FILES),
        (resource.RLIMIT_CPU, _CPU_SECONDS),
        (resource.RLIMIT_CORE, 0),
    ):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(limit, (value, value))


def _kernel_types_files(destination: Path) -> None:
    """``codeagent_lite`` with only the previous chapter: the modules in KERNEL_TYPES and their relative imports."""
    package = destination / "codeagent_lite"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""The previous chapter only (outside judge)."""\n', encoding="utf-8")
    wanted, seen = list(KERNEL_TYPES), set()
    while wanted:
        name = wanted.pop()
        if name in seen:
            continue
        seen.add(name)
        source = (PACKAGE / f"{name}.py").read_text(encoding="utf-8")
        (package / f"{name}.py").write_text(source, encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                wanted.append(node.module.split(".")[0])


def _layout(root: Path, full_package: bool, folder: Path | None) -> None:
    """What the child sees under /judge: its program, the codec, a package, and a copy of the learner's folder."""
    here = Path(__file__).resolve().parent
    shutil.copyfile(here / "outside_child.py", root / "outside_child.py")
    shutil.copyfile(here / "outside_wire.py", root / "outside_wire.py")
    lib = root / "lib"
    lib.mkdir()
    if full_package:
        shutil.copytree(PACKAGE, lib / "codeagent_lite", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    else:
        _kernel_types_files(lib)
    if folder is not None:
        work = root / "work" / "my_json_text"
        work.mkdir(parents=True)
        for path in sorted(folder.glob("*.py")):
            if path.is_file() and not path.is_symlink():
                shutil.copyfile(path, work / path.name)


def _bwrap_command(bwrap: str, root: Path, python: Path) -> list[str]:
    command = [bwrap, "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/lib", "/lib64", "/sbin", "/lib32"):
        path = Path(top)
        if path.is_symlink():
            command += ["--symlink", os.readlink(top), top]
        elif path.is_dir():
            command += ["--ro-bind", top, top]
    prefix = Path(sys.base_prefix).resolve()
    if not str(prefix).startswith("/usr/"):
        command += ["--ro-bind", str(prefix), str(prefix)]
    command += ["--ro-bind", str(root), "/judge", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    command += ["--chdir", "/tmp", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]
    return [*command, "--", str(python)]


class SandboxedChild:
    """One conversation with a sandboxed child: ``ask(request)`` sends a line and waits for the answer line."""

    def __init__(self, process: subprocess.Popen[bytes], isolation: str, deadline: float) -> None:
        self._process = process
        self.isolation = isolation
        self._deadline = deadline
        self._buffer = b""
        self.stopped: str | None = None

    def _write(self, data: bytes, until: float) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        fd = stdin.fileno()
        os.set_blocking(fd, False)
        view = memoryview(data)
        while view:
            left = until - time.monotonic()
            if left <= 0:
                raise ChildStopped("it stopped reading its input")
            _, writable, _ = select.select([], [fd], [], left)
            if writable:
                try:
                    view = view[os.write(fd, view) :]
                except BrokenPipeError:
                    raise ChildStopped("it exited") from None

    def _read_line(self, until: float) -> bytes:
        stdout = self._process.stdout
        assert stdout is not None
        fd = stdout.fileno()
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_MESSAGE:
                raise ChildStopped(f"its answer is longer than {MAX_MESSAGE} bytes")
            left = until - time.monotonic()
            if left <= 0:
                raise ChildStopped("no answer within the time limit" + (" (half an answer came)" * bool(self._buffer)))
            readable, _, _ = select.select([fd], [], [], left)
            if readable:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise ChildStopped("it exited")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        if len(line) > MAX_MESSAGE:
            raise ChildStopped(f"its answer is longer than {MAX_MESSAGE} bytes")
        return line

    def ask(self, request: Mapping[str, Any], timeout: float | None = None) -> Any:
        """The child's answer to ``request`` as JSON data; ``ChildStopped`` when it cannot give one (then for good)."""
        if self.stopped is not None:
            raise ChildStopped(self.stopped)
        until = time.monotonic() + (self._deadline if timeout is None else timeout)
        try:
            self._write((json.dumps(request) + "\n").encode("utf-8"), until)
            line = self._read_line(until)
            try:
                return json.loads(line)
            except (ValueError, RecursionError):
                raise ChildStopped("its answer is not readable data") from None
        except ChildStopped as error:
            self.stopped = str(error)
            self.close()
            raise

    def close(self) -> None:
        """End the child and everything it started (its own session)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self._process.kill()
        for stream in (self._process.stdin, self._process.stdout):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.close()
        with contextlib.suppress(Exception):
            self._process.wait(timeout=10)


@contextlib.contextmanager
def sandboxed(
    config: Mapping[str, Any],
    *,
    full_package: bool,
    folder: Path | None = None,
    language: str = "en",
    deadline: float = 10.0,
) -> Iterator[SandboxedChild]:
    """A child loaded with ``config`` (outside_child.py's first line), killed with its session on leaving."""
    python = Path(os.path.realpath(sys.executable))
    with tempfile.TemporaryDirectory(prefix="outside-judge-") as temporary:
        root = Path(temporary)
        _layout(root, full_package, folder)
        bwrap = bwrap_path()
        environment = {"CAL_LANG": language, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
        if bwrap is not None:
            base, judge, isolation = _bwrap_command(bwrap, root, python), "/judge", "bubblewrap"
            for key, value in environment.items():
                base[-2:-2] = ["--setenv", key, value]
            cwd = None
        else:
            base, judge, isolation = [str(python)], str(root), "a plain child process (bwrap is not installed)"
            cwd = str(root / "lib")
        paths = [judge, f"{judge}/lib", f"{judge}/work"]
        first = dict(config, paths=paths, folder=f"{judge}/work/my_json_text")
        process = subprocess.Popen(
            [*base, "-I", "-S", f"{judge}/outside_child.py"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=environment,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_limits,  # no threads run in the judge while it starts a child
        )
        child = SandboxedChild(process, isolation, deadline)
        try:
            try:
                child._write((json.dumps(first) + "\n").encode("utf-8"), time.monotonic() + deadline)
            except ChildStopped as error:
                child.stopped = str(error)
            yield child
        finally:
            child.close()
