"""A small, killable world for code nobody vouches for: a learner's files, a student's submission.

Why: a verdict must not be decided where the judged code runs. ``verify`` and the grader run it here (beside
``sandbox_io.py`` and the Kernel types, never the reference chapter), get back data only and judge it themselves.
``protections()`` says what isolation applies; the channel back is a pipe of its own, under deadlines and a byte cap.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import itertools
import json
import marshal
import math
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..display import error_reason
from . import sandbox_cgroup
from .words import N_, _

Status = Literal["ok", "timeout", "crashed", "too_big", "garbage"]
_Message = tuple[str, object, int | None]  # a channel message: kind, data, how many requests the child had read

REFERENCE_MODULES = frozenset(
    {"json_text_messages", "json_text_adapter", "json_action_parser", "strict_json", "diagnosis"}
)
"""The chapter's reference modules: never copied into a sandbox, whatever imports them."""

_KERNEL_ROOTS = ("kernel_types", "model_adapter", "display")  # display: the channel's codec (wire) cuts with it
_PACKAGE = "codeagent_lite"
_PACKAGE_DIR = Path(__file__).resolve().parent.parent
# the interpreter under any virtual environment: its prefix is all the child sees
_PYTHON = str(Path(getattr(sys, "_base_executable", "") or sys.executable).resolve())
_INSIDE = "/sandbox"  # the working directory's name inside bubblewrap
_DISK_BYTES = 64 * 2**20  # each of the run's two writable places (memory-backed tmpfs under bwrap)
_MAX_DEPTH = 64  # nesting of the channel's JSON; our programs send a few levels
_MAX_PARTS = 100_000
_FENCE_SECONDS = 2.0  # the killing at one fence, and the writing of one answer; both take milliseconds
_HAS_RLIMITS = importlib.util.find_spec("resource") is not None  # not on Windows
# -I leaves the working directory off sys.path; the program and its files are found there.
_BOOT = "import os, runpy, sys; sys.path.insert(0, os.getcwd()); runpy.run_path('__main__.py', run_name='__main__')"
# Not root: the process limit is set inside, because set before bwrap it would count all of this user's
# processes against bwrap's own forks. (As root it is set before exec, for the new uid.)
_NPROC = (
    "import resource\n"
    "try:\n    resource.setrlimit(resource.RLIMIT_NPROC, ({n}, {n}))\n"
    "except (ValueError, OSError):\n    pass\n"
)
_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0"}
# One JSON string, escapes included; one never closed runs to the end (the closing quote optional keeps the search
# linear: required, every quote of a hostile unclosed line would rescan the rest of it).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?')


@dataclass(frozen=True)
class Limits:
    """What one sandbox run may use; ``seconds`` is for the whole run, from start to answer."""

    seconds: float = 10.0
    memory_bytes: int = 512 * 2**20
    processes: int = 32
    open_files: int = 64
    output_bytes: int = 1_000_000


@dataclass(frozen=True)
class Answer:
    """What ``on_part`` writes back; ``fence``: first kill the run's other processes; ``progress``: a new clock."""

    data: object
    fence: bool = False
    progress: bool = True


_OnPart = Callable[[object], bool | Answer | None]  # sees each part: False is no progress, an Answer is written back


@dataclass(frozen=True)
class ChildOutcome:
    """What came back from one run: the final answer when ``status`` is "ok"; ``capped``: it had a cgroup."""

    status: Status
    data: object | None
    detail: str
    capped: bool = False


# --------------------------------------------------------------------------- the child's world
def kernel_closure(package_dir: Path = _PACKAGE_DIR) -> tuple[str, ...]:
    """The package modules the Kernel types import (read with ``ast``, so a new import is followed), no reference."""
    seen: list[str] = []
    todo = list(_KERNEL_ROOTS)
    while todo:
        name = todo.pop(0)
        path = package_dir / f"{name}.py"
        if name in seen or name in REFERENCE_MODULES or not path.is_file():
            continue
        seen.append(name)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                todo += [alias.name.split(".")[1] for alias in node.names if alias.name.startswith(_PACKAGE + ".")]
            elif isinstance(node, ast.ImportFrom):
                todo += _imported_from(node)
    return tuple(seen)


def _imported_from(node: ast.ImportFrom) -> list[str]:
    """The package's modules a ``from`` import names, however spelled (``.x``, ``from . import x``, absolute)."""
    absolute = node.level == 0 and (node.module or "").split(".")[0] == _PACKAGE
    if node.level != 1 and not absolute:
        return []
    parts = (node.module or "").split(".")[1 if absolute else 0 :]
    return [parts[0]] if parts and parts[0] else [alias.name for alias in node.names]


# Read once, at import: ``ast.parse`` in a process whose recursion limit a learner (or a test) moved can fail
# inside CPython 3.11 itself ("AST constructor recursion depth mismatch"), which must not be verify's traceback.
_KERNEL_MODULES = kernel_closure()


def _world(program: str, payload: object, files: Mapping[str, bytes], kernel: bool) -> Path:
    """A fresh folder holding the run's files (the caller removes it)."""
    folder = Path(tempfile.mkdtemp(prefix="cal-sandbox-"))
    here, package = Path(__file__).parent, folder / _PACKAGE
    try:
        for relative, content in files.items():
            target = (folder / relative).resolve()
            if folder.resolve() not in target.parents:
                raise ValueError(f"a sandbox file must stay inside the sandbox: {relative!r}")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        if kernel:
            (package / "workbook").mkdir(parents=True, exist_ok=True)
            (package / "__init__.py").write_text('"""The Kernel types only."""\n')
            (package / "workbook" / "__init__.py").write_text('"""The channel\'s codec only."""\n')
            for name in _KERNEL_MODULES:
                _copy_compiled(_PACKAGE_DIR / f"{name}.py", package / f"{name}.py")
            _copy_compiled(here / "wire.py", package / "workbook" / "wire.py")
        _copy_compiled(here / "sandbox_io.py", folder / "sandbox_io.py")
        (folder / "payload.json").write_text(json.dumps(payload, ensure_ascii=True, allow_nan=False))
        (folder / "__main__.py").write_text(program, encoding="utf-8")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


def _copy_compiled(source: Path, target: Path) -> None:
    """Our module with its bytecode, or the child (-B) compiles it every run; never untrusted source (a crash here)."""
    content = source.read_bytes()
    target.write_bytes(content)
    cached = Path(importlib.util.cache_from_source(str(target)))
    cached.parent.mkdir(exist_ok=True)
    cached.write_bytes(_bytecode(content, source.name))


@functools.lru_cache(maxsize=32)
def _bytecode(content: bytes, name: str) -> bytes:
    """Unchecked hash-based bytecode (PEP 552): valid for the copy, whatever its modification time."""
    code = compile(content, name, "exec", dont_inherit=True)
    header = importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little") + importlib.util.source_hash(content)
    return header + marshal.dumps(code)


# --------------------------------------------------------------------------- the isolation
def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


_uids = itertools.count()


def _uid_range() -> range:
    """The uids of this process's runs (none an account's): drawn from its pid, so another process's are told apart."""
    base = 3_000_000 + (os.getpid() % 50_000) * 64
    return range(base, base + 64)


def _own_uid() -> int:
    return _uid_range()[next(_uids) % 64]  # a different one for runs that overlap: RLIMIT_NPROC counts per uid


def system_binds() -> list[str]:
    """bubblewrap's arguments: a fresh read-only root of ``/usr`` and the interpreter's prefix, site-packages hidden."""
    command = ["--ro-bind", "/usr", "/usr"]
    for link in ("lib", "lib64", "bin", "sbin"):
        if Path(f"/usr/{link}").is_dir():
            command += ["--symlink", f"usr/{link}", f"/{link}"]
    prefix = Path(sys.base_prefix).resolve()
    if prefix != Path("/usr") and Path("/usr") not in prefix.parents:
        command += readable_bind(prefix)  # a pyenv under /root (0700): else the loader would run another stdlib
    for site in prefix.glob("lib/python3*/site-packages"):
        command += ["--tmpfs", str(site)]
    return command


def readable_bind(path: Path) -> list[str]:
    """bubblewrap's arguments binding ``path`` read-only, its parents traversable for any uid (else 0700 as root)."""
    binds: list[str] = []
    for parent in reversed(path.parents[:-1]):
        binds += ["--perms", "0755", "--dir", str(parent)]
    return [*binds, "--ro-bind", str(path), str(path)]


def _bwrap_command(folder: Path, uid: int | None) -> list[str]:
    command = [shutil.which("bwrap") or "bwrap", *system_binds(), "--proc", "/proc", "--dev", "/dev"]
    # RLIMIT_FSIZE caps one file, not how many: each writable place is a tmpfs of its own size
    for place in ("/tmp", _INSIDE):
        command += ["--size", str(_DISK_BYTES), "--perms", "1777", "--tmpfs", place]
    for entry in sorted(folder.iterdir()):
        command += ["--ro-bind", str(entry), f"{_INSIDE}/{entry.name}"]
    command += ["--chdir", _INSIDE, "--die-with-parent", "--new-session", "--clearenv"]
    for name, value in _ENV.items():
        command += ["--setenv", name, value]
    if uid is None:
        return [*command, "--unshare-all", "--", _PYTHON]
    # root: a user namespace would map our uid back to 0; a real uid of its own instead
    command += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try", "--"]
    return [*command, *_setpriv(uid), _PYTHON]


def unprivileged(uid: int, limits: Limits) -> list[str]:
    """A command prefix, run as root, setting ``limits`` (``prlimit``) and running the rest as ``uid`` with no
    capability. A prefix: jupyter_client starts the classroom's kernel, with no ``preexec_fn``."""
    caps = [f"--{name}={value}" for name, value in _rlimits(limits, processes=True).items()]
    return [shutil.which("prlimit") or "prlimit", *caps, "--", *_setpriv(uid)]


def _rlimits(limits: Limits, processes: bool) -> dict[str, int]:
    """By ``prlimit``'s names; the process limit only where it binds (a uid of the run's own)."""
    caps = {"as": limits.memory_bytes, "nofile": limits.open_files, "fsize": limits.output_bytes * 4 + 2**20, "core": 0}
    return {**caps, "nproc": limits.processes} if processes else caps


def fresh_uid() -> int | None:
    """A uid of its own for a program started as root (None when not root, or no ``setpriv``/``prlimit``)."""
    return _own_uid() if _is_root() and shutil.which("setpriv") and shutil.which("prlimit") else None


def bwrap_executable() -> str | None:
    """bubblewrap's path where it works here (as root, with ``setpriv`` beside it), else None."""
    return shutil.which("bwrap") if isolated() else None


def _setpriv(uid: int) -> list[str]:
    drop = ["--clear-groups", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"]
    return [shutil.which("setpriv") or "setpriv", f"--reuid={uid}", f"--regid={uid}", *drop]


@functools.cache
def isolated() -> bool:
    """Whether runs get bubblewrap: installed, allowed its namespaces (a container may forbid them), ``setpriv``."""
    if not (sys.platform.startswith("linux") and shutil.which("bwrap")) or (_is_root() and not shutil.which("setpriv")):
        return False
    folder = Path(tempfile.mkdtemp(prefix="cal-sandbox-probe-"))
    try:
        uid = _own_uid() if _is_root() else None
        if uid is not None:
            os.chown(folder, uid, uid)
        command = [*_bwrap_command(folder, uid), "-I", "-S", "-c", "pass"]
        return subprocess.run(command, capture_output=True, timeout=30, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@functools.cache
def _prefix_open_to_all() -> bool:
    """Whether any uid may run the interpreter where it is (a pyenv under /root, mode 0700, may not)."""
    prefix = Path(sys.base_prefix).resolve()
    try:
        return all(folder.stat().st_mode & 0o001 for folder in [*prefix.parents, prefix])
    except OSError:
        return False


def _drops_uid() -> bool:
    """Root gives the child a uid of its own: under bwrap always, without it where that uid can run Python."""
    return _is_root() and shutil.which("setpriv") is not None and (isolated() or _prefix_open_to_all())


def protections() -> tuple[str, ...]:
    """What isolation a run gets here, one catalog id each (``verify`` shows them translated)."""
    found = [N_("a fresh interpreter without site-packages"), N_("an empty environment"), N_("a session of its own")]
    if isolated():
        found += [
            N_("bubblewrap: only the interpreter and /usr visible, read-only"),
            N_("no network"),
            N_("its own pid namespace, killed as a whole"),
            N_("at most 64 MiB written in its working directory and in /tmp, its own files read-only"),
        ]
    else:
        found.append(N_("no bubblewrap: files and network of this user stay reachable"))
        found.append(N_("no cap on the disk it fills, only on one file's size"))
        if _subreaper():
            found.append(N_("what it leaves running is re-parented to this process and killed with the run"))
        else:
            found.append(N_("no child subreaper: a process of the run that calls setsid can outlive it"))
    if _drops_uid():
        found.append(N_("an unprivileged uid of its own"))
    elif _is_root():
        found.append(N_("run as root: no process limit binds"))
    if _HAS_RLIMITS:
        found.append(N_("limits on memory, processes, open files and file size"))
        found.append(memory_protection(sandbox_cgroup.available()))
    return tuple(found)


def memory_protection(capped: bool) -> str:
    """How a run's memory was capped, as a catalog id: for the run as a whole (a cgroup), or per process and why."""
    if capped:
        return N_("memory and processes capped for the run as a whole: a cgroup of its own")
    if sandbox_cgroup.unified_only():
        return N_(
            "memory capped per process (address space), not for the run as a whole: "
            "this machine has cgroup v2 only, where verify makes no cgroup"
        )
    return N_("memory capped per process (address space), not for the run as a whole: no memory cgroup")


@functools.cache
def _subreaper() -> bool:
    """Become a child subreaper, once: without bwrap an orphan of the run (``setsid``) comes here, not to init."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return int(ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _limiter(limits: Limits, own_uid: bool, group: sandbox_cgroup.RunGroup | None) -> Callable[[], None] | None:
    """What the forked child does before exec: join the run's cgroup, then set the rlimits bwrap and Python inherit."""
    if not _HAS_RLIMITS:
        return None
    import resource

    wanted = [(getattr(resource, f"RLIMIT_{name.upper()}"), value) for name, value in _rlimits(limits, own_uid).items()]

    def limit() -> None:
        if group is not None:
            group.join()
        for which, value in wanted:
            try:
                hard = resource.getrlimit(which)[1]
                resource.setrlimit(which, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))
            except (ValueError, OSError):
                pass  # macOS refuses some (RLIMIT_AS); the deadline still holds

    return limit


def _command(folder: Path, limits: Limits) -> tuple[list[str], int | None, bool]:
    uid = _own_uid() if _drops_uid() else None
    boot = _BOOT if uid is not None or not _HAS_RLIMITS else _NPROC.format(n=limits.processes) + _BOOT
    python_args = ["-I", "-S", "-B", "-u", "-X", "utf8", "-c", boot, "channel-fd", "request-fd"]
    if isolated():
        return [*_bwrap_command(folder, uid), *python_args], uid, True
    return (_setpriv(uid) if uid is not None else []) + [_PYTHON, *python_args], uid, False


# --------------------------------------------------------------------------- one run
def run_in_sandbox(
    program: str,
    *,
    payload: object,
    files: Mapping[str, bytes],
    limits: Limits = Limits(),
    kernel_types: bool = True,
    part_seconds: float | None = None,
    on_part: _OnPart | None = None,
    answers: bool = False,
) -> ChildOutcome:
    """Run ``program`` in a fresh sandbox and return what it sent, never raising for what it did.

    ``part_seconds`` bounds the wait for each next message, ``limits.seconds`` the whole run. ``on_part`` sees each
    part and returns False for no progress, or (with ``answers``: a request pipe) an ``Answer`` to write back."""
    folder = _world(program, payload, files, kernel_types)
    try:
        live = _launch(folder, limits, requests=answers)
        if isinstance(live, ChildOutcome):
            return live
        try:
            return _listen(live, limits, part_seconds, on_part)
        finally:
            _shutdown(live)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class SandboxStopped(RuntimeError):
    """A conversation broke off: the child hung, crashed, or sent what is not an answer (said once, then for good)."""


class SandboxSession:
    """A conversation with one sandboxed child: a submission loaded once answers the grader's cases one by one.

    The child reads each request with ``sandbox_io.receive()`` and answers with one ``sandbox_io.send_part``; anything
    else within ``timeout`` kills the run and raises ``SandboxStopped`` from then on, as leaving the ``with`` does.
    ``total_seconds``: the whole conversation's time from its start, however many requests share it."""

    def __init__(
        self,
        program: str,
        *,
        payload: object,
        files: Mapping[str, bytes],
        limits: Limits = Limits(),
        kernel_types: bool = True,
        total_seconds: float | None = None,
    ) -> None:
        self._world = (program, payload, files, kernel_types)
        self.limits, self.total_seconds, self._until = limits, total_seconds, math.inf
        self.stopped: str | None = None
        self._folder: Path | None = None
        self._live: _Live | None = None

    def __enter__(self) -> SandboxSession:
        self._until = math.inf if self.total_seconds is None else time.monotonic() + self.total_seconds
        self._folder = _world(*self._world)
        try:
            live = _launch(self._folder, self.limits, requests=True)
        except BaseException:
            self.close()
            raise
        self.stopped, self._live = (live.detail, None) if isinstance(live, ChildOutcome) else (None, live)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The run's first process (tests look for it after the end)."""
        return self._live.process.pid if self._live is not None else None

    def ask(self, request: object, timeout: float | None = None) -> object:
        """The child's answer to ``request`` (JSON data), or ``SandboxStopped`` saying what went wrong."""
        live = self._live
        if self.stopped is not None or live is None:
            raise SandboxStopped(self.stopped or _("the session is closed"))
        own = time.monotonic() + (self.limits.seconds if timeout is None else timeout)
        live.asked += 1  # the child's answer names this request; a part naming an earlier one is not it
        deadline = min(own, self._until)
        outcome = _write_request(live, request, deadline) or _listen(live, self.limits, None, None, until=deadline)
        if outcome.status == "ok":
            return outcome.data
        self.stopped = outcome.detail
        if outcome.status == "timeout" and self._until < own:  # the whole conversation's time, not this request's
            self.stopped = _("the conversation took its {seconds} s", seconds=format(self.total_seconds, "g"))
        self.close()
        raise SandboxStopped(self.stopped)

    def close(self) -> None:
        """Kill every process of the run and remove its folder (idempotent)."""
        live, self._live = self._live, None
        if live is not None:
            _shutdown(live)
            self.stopped = self.stopped or _("the session is closed")
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


@dataclass
class _Live:
    """A started run: its processes (``bwrap``, ``uid``: how to find them), cgroup, pipe ends, channel so far."""

    process: subprocess.Popen[bytes]
    bwrap: bool
    uid: int | None
    group: sandbox_cgroup.RunGroup | None
    reader: int
    request_writer: int  # -1: a run without requests
    chunks: queue.Queue[bytes] = field(default_factory=queue.Queue)
    buffer: bytearray = field(default_factory=bytearray)
    received: int = 0
    parts: int = 0
    asked: int = 0  # a conversation's requests written so far
    started: int = 0  # the first process's start (clock ticks since boot): what this process adopts after it


def _launch(folder: Path, limits: Limits, requests: bool) -> _Live | ChildOutcome:
    command, uid, bwrap = _command(folder, limits)
    if uid is not None:
        for path in [folder, *folder.rglob("*")]:
            os.chown(path, uid, uid)
    reader, writer = os.pipe()
    request_reader, request_writer = os.pipe() if requests else (-1, -1)
    group = sandbox_cgroup.make(limits.memory_bytes, limits.processes)
    try:
        process = _start(command, folder, (writer, request_reader), _limiter(limits, uid is not None, group))
    except BaseException as error:
        _close(reader, request_writer)
        if group is not None:
            group.remove()
        if not isinstance(error, OSError | subprocess.SubprocessError):
            raise
        return ChildOutcome("crashed", None, _("the sandbox could not start ({error})", error=error_reason(error)))
    finally:
        _close(writer, request_reader)
    live = _Live(process, bwrap, uid, group, reader, request_writer)
    if not bwrap and _subreaper():  # the orphans this process adopts after the run's start are the run's
        live.started = int((_stat_fields(process.pid) or ["0"] * 20)[19])
        _FIRSTS.add(process.pid)
    _pump(live, limits.output_bytes)
    return live


def _start(
    command: list[str], folder: Path, ends: tuple[int, int], limiter: Callable[[], None] | None
) -> subprocess.Popen[bytes]:
    """The child, with the channel's write end and the requests' read end (-1: none) as its only extra descriptors
    (handles on Windows), named on its command line."""
    writer, request_reader = ends
    common: dict[str, Any] = {"cwd": folder, "env": dict(_ENV), "stdin": subprocess.DEVNULL}
    common.update(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        import msvcrt

        handles = [msvcrt.get_osfhandle(end) for end in (writer, request_reader) if end >= 0]
        for handle in handles:
            os.set_handle_inheritable(handle, True)
        command[-2:] = [f"h{handles[0]}", f"h{handles[1]}" if len(handles) > 1 else "-"]
        startup = subprocess.STARTUPINFO(lpAttributeList={"handle_list": handles})
        flags = subprocess.CREATE_NEW_PROCESS_GROUP
        return subprocess.Popen(command, startupinfo=startup, creationflags=flags, **common)
    command[-2:] = [str(writer), str(request_reader) if request_reader >= 0 else "-"]
    passed = tuple(end for end in (writer, request_reader) if end >= 0)
    return subprocess.Popen(  # the command is ours; only its files are untrusted
        command, pass_fds=passed, start_new_session=True, preexec_fn=limiter, **common
    )


def _pump(live: _Live, cap: int) -> None:
    """A reader thread (no portable select on pipes) queueing the chunks, the empty last one too, stopping past
    ``cap``; on a duplicate of the end, so a survivor holding the pipe never makes it read a reused number."""
    own = os.dup(live.reader)

    def pump() -> None:
        received = 0
        try:
            while received <= cap:
                try:
                    chunk = os.read(own, 65536)
                except OSError:
                    chunk = b""
                live.chunks.put(chunk)
                received += len(chunk)
                if not chunk:
                    return
        finally:
            os.close(own)

    threading.Thread(target=pump, daemon=True).start()


def _shutdown(live: _Live) -> None:
    """Kill every process of the run, close the parent's ends and remove its cgroup, on every path."""
    try:
        _kill(_run_pids(live))
        if hasattr(os, "killpg"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(live.process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            live.process.kill()
        live.process.wait()
        # the orphans this process adopted from the run (some only as their parent died just now): else each
        # lives on, or stays a zombie here
        _kill_until_gone(lambda: [pid for pid in _children(os.getpid()) if _adopted(pid, live)])
    finally:
        _FIRSTS.discard(live.process.pid)
        if live.group is not None:
            live.group.remove()
    _close(live.reader, live.request_writer)


def _close(*descriptors: int) -> None:
    for descriptor in descriptors:
        if descriptor >= 0:
            os.close(descriptor)


# --------------------------------------------------------------------------- the channel
def _listen(
    live: _Live, limits: Limits, part_seconds: float | None, on_part: _OnPart | None, until: float | None = None
) -> ChildOutcome:
    """Read the channel until the final answer, a deadline or a misbehaviour; in a conversation (``until``) until the
    part that answers. The per-part clock starts at the first message (before it the sandbox is starting) and restarts
    only at a complete message ``on_part`` calls progress."""
    start = last = time.monotonic()
    end = start + limits.seconds if until is None else until
    while True:
        now = time.monotonic()
        deadline = end if part_seconds is None or not live.parts else min(end, last + part_seconds)
        if now >= deadline:
            return _timed_out(live, now < end, end - start, part_seconds)
        messages, ended = _messages(live, limits, deadline - now)
        for message in messages:
            stopped, progress = _take(live, message, on_part, conversation=until is not None)
            if stopped is not None:
                return stopped
            last = time.monotonic() if progress else last
        if ended is not None:
            return ended


def _take(
    live: _Live, message: _Message, on_part: _OnPart | None, conversation: bool
) -> tuple[ChildOutcome | None, bool]:
    """A run's final answer ends it; a conversation's answer is the first part naming this request."""
    kind, data, asked = message
    if conversation and kind == "part" and asked != live.asked:
        return None, False
    if kind == "final":
        ended = _("the checking process ended the conversation")
        return (_outcome(live, "garbage", ended) if conversation else _outcome(live, "ok", "", data)), False
    if conversation:
        return ChildOutcome("ok", data, ""), False
    return _take_part(live, data, on_part)


def _timed_out(live: _Live, early: bool, whole: float, part_seconds: float | None) -> ChildOutcome:
    """A deadline passed: the part's (``early``: before the whole wait's end), else the whole's."""
    if live.buffer:
        return _outcome(live, "timeout", _("the checking process began a message and never finished it"))
    seconds = part_seconds if part_seconds is not None and early else whole
    return _outcome(live, "timeout", _("no answer within {seconds} s", seconds=format(seconds, "g")))


def _messages(live: _Live, limits: Limits, wait: float) -> tuple[list[_Message], ChildOutcome | None]:
    """The messages the next chunk completes (waiting at most ``wait``), and what ends the run after them."""
    try:
        chunk = live.chunks.get(timeout=wait)
    except queue.Empty:
        return [], None
    if not chunk:
        return [], _ended(live)
    live.received += len(chunk)
    if live.received > limits.output_bytes:
        return [], _outcome(
            live, "too_big", _("the checking process sent more than {limit} bytes", limit=limits.output_bytes)
        )
    live.buffer += chunk
    messages: list[_Message] = []
    while b"\n" in live.buffer and not (messages and messages[-1][0] == "final"):
        line, _newline, rest = bytes(live.buffer).partition(b"\n")
        live.buffer = bytearray(rest)
        message = decode_message(line)
        if isinstance(message, str):
            return messages, _outcome(live, "garbage", message)
        messages.append(message)
    return messages, None


def _take_part(live: _Live, data: object, on_part: _OnPart | None) -> tuple[ChildOutcome | None, bool]:
    """Count a part, show it to ``on_part``, write its ``Answer``: what ends the run (None: go on), and progress."""
    live.parts += 1
    if live.parts > _MAX_PARTS:
        return _outcome(live, "too_big", _("the checking process sent too many messages")), False
    said = on_part(data) if on_part is not None else None
    if not isinstance(said, Answer):
        return None, said is not False
    if live.request_writer < 0:
        return _outcome(live, "garbage", _("the checking process asked what this run answers nothing to")), False
    if said.fence and not _fence(live):
        return _outcome(live, "crashed", _("a process of the checking run outlived the fence between steps")), False
    failed = _write_request(live, said.data, time.monotonic() + _FENCE_SECONDS)
    return (None if failed is None else _outcome(live, failed.status, failed.detail)), said.progress


def _write_request(live: _Live, data: object, deadline: float) -> ChildOutcome | None:
    """Write one request line before the deadline, or say why not: a thread of its own writes (Windows has no ``select``
    on pipes), on a duplicate of the end, so a write blocked when the run closes never reaches a reused number."""
    line = json.dumps(data, ensure_ascii=True, allow_nan=False).encode("ascii") + b"\n"
    descriptor = os.dup(live.request_writer)
    failed: list[OSError] = []

    def write() -> None:
        view = memoryview(line)
        try:
            while view:
                view = view[os.write(descriptor, view) :]
        except OSError as error:
            failed.append(error)
        finally:
            os.close(descriptor)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    thread.join(max(0.0, deadline - time.monotonic()))
    if thread.is_alive():
        return ChildOutcome("timeout", None, _("the checking process stopped reading its requests"))
    return ChildOutcome("crashed", None, _("the checking process closed its requests")) if failed else None


def _ended(live: _Live) -> ChildOutcome:
    try:
        code = live.process.wait(timeout=2)
    except subprocess.TimeoutExpired:
        code = None
    if live.buffer:
        return _outcome(live, "garbage", _("the checking process ended in the middle of a message"))
    if code is None:
        why = _("it closed its channel without answering")
    elif code < 0:
        why = _("it was killed by signal {signal}", signal=-code)
    else:
        why = _("it ended with exit status {code} without answering", code=code)
    return _outcome(live, "crashed", _("the checking process stopped: {why}", why=why))


def _outcome(live: _Live, status: Status, detail: str, data: object | None = None) -> ChildOutcome:
    """``detail`` is always our own words: nothing of the child's is in it."""
    return ChildOutcome(status, data, detail, capped=live.group is not None)


def decode_message(line: bytes) -> _Message | str:
    """One channel line as (kind, data, requests the child had read), or why it is not a message of ours."""
    try:
        text = line.decode("ascii")
    except UnicodeDecodeError:
        return _("the checking process sent bytes that are not a message")
    if nesting_depth(text) > _MAX_DEPTH:
        return _("the checking process sent a message nested more than {depth} deep", depth=_MAX_DEPTH)
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return _("the checking process sent a message that is not JSON")
    known = (
        isinstance(value, dict) and set(value) - {"asked"} == {"kind", "data"} and value["kind"] in ("part", "final")
    )
    if not known or type(value.get("asked", 0)) is not int:
        return _("the checking process sent a message of an unknown shape")
    return str(value["kind"]), value["data"], value.get("asked")


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting, strings left out, counted without recursion (``json`` recurses per level)."""
    steps = [1 if char in "[{" else -1 for char in _STRING.sub("", text) if char in "[]{}"]
    return max(itertools.accumulate(steps, initial=0))


# --------------------------------------------------------------------------- the run's processes
def _kill(pids: Iterable[int]) -> None:
    """SIGKILL each (gone, or not ours: nothing to do), reaping it if it is our child."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, os.WNOHANG)


def _kill_until_gone(find: Callable[[], list[int]]) -> bool:
    """Kill what ``find`` lists until none left (a fork meanwhile is found next pass); False past the fence's time."""
    deadline = time.monotonic() + _FENCE_SECONDS
    while time.monotonic() < deadline:
        if not (alive := find()):
            return True
        _kill(alive)
        time.sleep(0.001)
    return False


def _fence(live: _Live) -> bool:
    """Kill the run's processes but the program and its bubblewrap parents; False when the program cannot be told apart
    or something outlived the fence. Where ``/proc`` cannot list the run (macOS, Windows) only the end's kill holds."""
    spared = _spared(live)
    return spared is not None and _kill_until_gone(
        lambda: [pid for pid in _run_pids(live) if pid not in spared and _alive(pid)]
    )


def _spared(live: _Live) -> set[int] | None:
    """The program and, under bwrap, bubblewrap and the namespace's init. The program is pid 2 there (init's first
    child): nothing it forks can take that number while it lives."""
    pid = live.process.pid
    if not live.bwrap:
        return {pid}
    for init in _children(pid):
        depth = len(_namespace_pids(init))
        for child in _children(init):
            inside = _namespace_pids(child)
            if len(inside) == depth and inside[-1] == 2:
                return {pid, init, child}
    return None


def _run_pids(live: _Live) -> set[int]:
    """Every process of the run but its first: descendants and cgroup; under bwrap that is its pid namespace (orphans go
    to its init); without, also its session, its uid, and the orphans this process adopted."""
    found = set(_descendants(live.process.pid))
    if live.group is not None:
        found |= live.group.pids()
    if not live.bwrap and sys.platform.startswith("linux") and os.path.isdir("/proc/self/task"):
        found |= {int(entry) for entry in os.listdir("/proc") if entry.isdigit() and _belongs(int(entry), live)}
    found.discard(live.process.pid)
    return found


def _belongs(pid: int, live: _Live) -> bool:
    """A process of a run without bwrap: in its session, or (with a uid of its own) of that uid, or adopted."""
    in_session = (_stat_fields(pid) or [])[3:4] == [str(live.process.pid)]
    return (live.uid is not None and _uid(pid) == live.uid) or in_session or _adopted(pid, live)


_FIRSTS: set[int] = set()  # the first processes of the runs under way here: never another run's orphans


def _adopted(pid: int, live: _Live) -> bool:
    """An orphan re-parented to this process: our child, of the run's uid, started after the run's first process and not
    another run's first. (Anything else adopted meanwhile would be taken for the run's: verify runs nothing else.)"""
    fields = _stat_fields(pid) or []
    if not live.started or len(fields) <= 19 or fields[1] != str(os.getpid()) or pid in _FIRSTS:
        return False
    return int(fields[19]) >= live.started and _uid(pid) == (live.uid or os.getuid())


def _uid(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command's name (which may hold spaces): state, ppid, pgrp, session, ..."""
    try:
        return Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace").rpartition(")")[2].split()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    """Neither gone nor a zombie (a killed process's pid stays until its parent reaps it)."""
    return (_stat_fields(pid) or ["X"])[0] not in ("Z", "X")


def _children(pid: int) -> list[int]:
    """From /proc (Linux); elsewhere [] and the session's kill must do."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                found += [int(word) for word in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    return found


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    todo = [pid]
    while todo and len(found) < 10_000:
        children = _children(todo.pop())
        found += children
        todo += children
    return found


def _namespace_pids(pid: int) -> list[int]:
    """The process's pid in each pid namespace, outermost first (``NSpid``)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("NSpid:"):
                return [int(word) for word in line.split()[1:] if word.isdigit()]
    return []
