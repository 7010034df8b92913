"""A small, killable world for code nobody vouches for: a learner's files, a student's submission.

Why: a verdict must not be decided where the judged code runs. ``verify`` and the classroom's
grader run the untrusted code here and get back data only; they judge that data themselves.

The API (the grader builds on these names)::

    Limits(seconds=10.0, memory_bytes=512 MiB, processes=32, open_files=64, output_bytes=1_000_000)
    ChildOutcome(status, data, detail, parts=(), printed="")
        status: "ok" | "timeout" | "crashed" | "too_big" | "garbage"
        detail: one printable line, no paths of this machine
    run_in_sandbox(program, *, payload, files, limits=Limits(), kernel_types=True,
                   part_seconds=None, on_part=None, answers=False) -> ChildOutcome
        on_part(part) -> bool | Answer(data, fence=False, progress=True) | None   # answers: the child asks
    with SandboxSession(program, payload=..., files=..., limits=...) as session:
        session.ask(request, timeout=None) -> data     # raises SandboxStopped
    protections() -> tuple[str, ...]     # what isolation applies on this machine

``program`` is Python source run as ``__main__`` in the sandbox's working directory, which
holds ``files`` (relative path -> bytes), ``sandbox_io.py`` and, with ``kernel_types=True``,
a minimal ``codeagent_lite`` package: an empty ``__init__``, copies of ``kernel_types`` and
``model_adapter`` with the package modules they import, and ``workbook.wire`` (the codec for values
crossing the channel) (computed with ``ast`` at run time; the
reference chapter is never among them). The program reads ``payload`` with
``sandbox_io.read_payload()`` and answers with ``sandbox_io.send(data)`` (and, before that,
any number of ``sandbox_io.send_part(data)``, which land in ``ChildOutcome.parts``).
With ``answers`` the child may ask the parent (``sandbox_io.send_part`` then ``receive``), and an
answer may be fenced: the parent first kills every other process of the run, whatever the code so
far forked, so one session serves several of verify's steps and still no descendant of one step
lives into the next.

What the child gets, on Linux with bubblewrap (``bwrap``): the base interpreter run as
``python -I -S -B`` (no site-packages, no editable install of this package, no environment
variables read), read-only ``/usr`` and the interpreter's prefix with its site-packages
hidden, a private ``/tmp`` and the working directory as its only writable places (each a tmpfs
of 64 MiB, the run's files bound read-only into the latter), no network and
its own pid namespace (all namespaces but the user one unshared), an empty environment but
``PATH`` and ``LANG``, and, when the parent is root, a uid of its own (``setpriv``), so that
``RLIMIT_NPROC`` binds. Limits on address space, processes, open files, file size and core
dumps are set before the interpreter starts; as root, where a cgroup hierarchy is found
(``sandbox_cgroup``), the run also gets a memory and pids cgroup of its own, which caps it as a
whole (``memory_protection()`` says which cap applied). The whole session is killed when the answer is
in, at the deadline, or when the channel misbehaves; with its own pid namespace nothing it
forked survives that. At a fenced answer the parent finds the run's other processes in ``/proc``:
under bwrap all of its pid namespace but the program (pid 2 there) and bubblewrap's own two;
without it the program's descendants, its session and, with a uid of its own (root), every
process of that uid; the kill at the end of the run uses the same search. The request pipe
(answers, a conversation's requests) is the child's only way to hear from the parent.
Without bwrap (macOS, Windows, a Linux without it) the child is a plain
subprocess with the environment cleared, its own session, and the limits the OS has;
``protections()`` says which apply.

The channel back is a pipe of its own (standard output and error go to a bounded buffer,
``ChildOutcome.printed``): one JSON object per line, read with a deadline on every read,
at most ``output_bytes`` in all (counted as bytes arrive, so a huge message never grows the
parent), nesting checked without recursion before it is parsed.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import itertools
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from . import sandbox_cgroup
from .words import N_, _

__all__ = [
    "REFERENCE_MODULES",
    "Answer",
    "ChildOutcome",
    "Limits",
    "SandboxSession",
    "SandboxStopped",
    "bwrap_executable",
    "fresh_uid",
    "isolated",
    "kernel_closure",
    "memory_protection",
    "protections",
    "readable_bind",
    "run_in_sandbox",
    "system_binds",
    "unprivileged",
]

Status = Literal["ok", "timeout", "crashed", "too_big", "garbage"]

REFERENCE_MODULES = frozenset(
    {"json_text_messages", "json_text_adapter", "json_action_parser", "strict_json", "diagnosis"}
)
"""The chapter's reference modules: never copied into a sandbox, whatever imports them."""

_KERNEL_ROOTS = ("kernel_types", "model_adapter")
_PACKAGE = "codeagent_lite"
_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_INSIDE = "/sandbox"  # the working directory's name inside bubblewrap
_DISK_BYTES = 64 * 2**20  # each of the run's two writable places (memory-backed tmpfs under bwrap)
_MAX_DEPTH = 64  # nesting of the channel's JSON; our programs send a few levels
_MAX_PRINTED = 64 * 1024
_READ_CHUNK = 65536
# -I leaves the working directory off sys.path; the program and its files are found there.
_BOOT = "import os, runpy, sys; sys.path.insert(0, os.getcwd()); runpy.run_path('__main__.py', run_name='__main__')"
# Not root: the process limit is set here, inside, because set before bwrap it would count all of
# this user's processes against bwrap's own forks. (As root it is set before exec, for the new uid.)
_NPROC = (
    "import resource\n"
    "try:\n    resource.setrlimit(resource.RLIMIT_NPROC, ({n}, {n}))\n"
    "except (ValueError, OSError):\n    pass\n"
)
_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0"}


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
    """What ``on_part`` returns to answer a part on the child's request pipe (``sandbox_io.receive``).

    ``fence``: every other process of the run is killed before the answer is written, so what the
    answer carries (verify's next step) reaches no process the code run so far left behind.
    ``progress``: whether the part restarts the per-part clock.
    """

    data: object
    fence: bool = False
    progress: bool = True


@dataclass(frozen=True)
class ChildOutcome:
    """What came back from one sandbox run: the final answer (``data``) when ``status`` is "ok"."""

    status: Status
    data: object | None
    detail: str
    parts: tuple[object, ...] = field(default=())
    printed: str = ""


# --------------------------------------------------------------------------- the child's world


def kernel_closure(package_dir: Path = _PACKAGE_DIR) -> tuple[str, ...]:
    """The package modules ``kernel_types`` and ``model_adapter`` need, themselves included.

    Found by reading their imports with ``ast`` (relative ones and ``codeagent_lite.X``), so a
    new import in them is followed at once. A reference module is never part of it: it is left
    out, and the copy that imports it fails to load in the child, which a test would show.
    """
    seen: list[str] = []
    todo = list(_KERNEL_ROOTS)
    while todo:
        name = todo.pop(0)
        if name in seen or name in REFERENCE_MODULES:
            continue
        path = package_dir / f"{name}.py"
        if not path.is_file():
            continue
        seen.append(name)
        todo += _package_imports(ast.parse(path.read_text(encoding="utf-8")))
    return tuple(seen)


def _package_imports(tree: ast.Module) -> list[str]:
    """The package's modules a module imports, however the import is spelled (relative or absolute)."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found += _imported_from(node)
        elif isinstance(node, ast.Import):
            found += [a.name.split(".")[1] for a in node.names if a.name.startswith(_PACKAGE + ".")]
    return found


def _imported_from(node: ast.ImportFrom) -> list[str]:
    """``from .x import y`` and ``from codeagent_lite.x import y`` name x; ``from . import x`` and
    ``from codeagent_lite import x`` name x itself."""
    absolute = node.level == 0 and (node.module or "").split(".")[0] == _PACKAGE
    if node.level != 1 and not absolute:
        return []
    parts = (node.module or "").split(".")[1 if absolute else 0 :]
    return [parts[0]] if parts and parts[0] else [alias.name for alias in node.names]


# Read once, at import: the modules do not change under a running verify, and ``ast.parse`` in a process whose
# recursion limit a learner (or a test) has moved can fail inside CPython 3.11 itself ("AST constructor recursion
# depth mismatch"), which must not become verify's traceback.
_KERNEL_MODULES = kernel_closure()


def _write_world(folder: Path, program: str, payload: object, files: Mapping[str, bytes], kernel: bool) -> None:
    for relative, content in files.items():
        target = (folder / relative).resolve()
        if folder.resolve() not in target.parents:
            raise ValueError(f"a sandbox file must stay inside the sandbox: {relative!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    if kernel:
        package = folder / _PACKAGE
        package.mkdir(exist_ok=True)
        (package / "__init__.py").write_text('"""The Kernel types only: the sandbox\'s package."""\n')
        for name in _KERNEL_MODULES:
            _copy_compiled(_PACKAGE_DIR / f"{name}.py", package / f"{name}.py")
        # the channel's codec for values and exceptions (``wire``), shared by every program run here
        (package / "workbook").mkdir(exist_ok=True)
        (package / "workbook" / "__init__.py").write_text('"""The sandbox\'s codec only."""\n')
        _copy_compiled(Path(__file__).with_name("wire.py"), package / "workbook" / "wire.py")
    _copy_compiled(Path(__file__).with_name("sandbox_io.py"), folder / "sandbox_io.py")
    (folder / "payload.json").write_text(json.dumps(payload, ensure_ascii=True, allow_nan=False))
    (folder / "__main__.py").write_text(program, encoding="utf-8")


def _copy_compiled(source: Path, target: Path) -> None:
    """Copy a module of ours with its bytecode, compiled once per process (the child runs -B: without this
    each session would compile the Kernel types again). Only our own modules: untrusted source is never
    compiled here, where a compiler crash on it would take this process down."""
    content = source.read_bytes()
    target.write_bytes(content)
    _write_bytecode(target, _compiled_once(str(source), content))


@functools.lru_cache(maxsize=32)
def _compiled_once(name: str, content: bytes) -> bytes | None:
    return _compiled(Path(name), content)


def _compiled(path: Path, content: bytes) -> bytes | None:
    """Unchecked-hash bytecode for ``content``, or None when it does not compile (the child then compiles it)."""
    import importlib.util
    import marshal

    try:
        code = compile(content, path.name, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    source_hash = importlib.util.source_hash(content)
    return importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little") + source_hash + marshal.dumps(code)


def _write_bytecode(target: Path, bytecode: bytes | None) -> None:
    import importlib.util

    if bytecode is None:
        return
    cached = Path(importlib.util.cache_from_source(str(target)))
    cached.parent.mkdir(exist_ok=True)
    cached.write_bytes(bytecode)


# --------------------------------------------------------------------------- the isolation


def _base_python() -> str:
    """The interpreter under any virtual environment: its prefix is all the child may see."""
    base = getattr(sys, "_base_executable", "") or sys.executable
    return str(Path(base).resolve())


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


_uids = itertools.count()


def _own_uid() -> int:
    """A kernel uid no account uses, different for runs that overlap (RLIMIT_NPROC counts per uid)."""
    return 3_000_000 + (os.getpid() % 50_000) * 64 + next(_uids) % 64


def system_binds() -> list[str]:
    """bubblewrap's arguments for a fresh root holding ``/usr`` and the interpreter, read-only, nothing else.

    The base interpreter's site-packages are hidden; a virtual environment a caller binds keeps its own.
    """
    command = ["--ro-bind", "/usr", "/usr"]
    for link in ("lib", "lib64", "bin", "sbin"):
        if Path(f"/usr/{link}").is_dir():
            command += ["--symlink", f"usr/{link}", f"/{link}"]
    return [*command, *_prefix_binds(Path(sys.base_prefix).resolve())]


def readable_bind(path: Path) -> list[str]:
    """bubblewrap's arguments binding ``path`` read-only where it is, its parents made traversable for any uid
    (bubblewrap's own parent folders would be 0700 under root: a uid of the run's own could not reach it)."""
    binds: list[str] = []
    for parent in reversed(path.parents[:-1]):
        binds += ["--perms", "0755", "--dir", str(parent)]
    return [*binds, "--ro-bind", str(path), str(path)]


def _bwrap_command(folder: Path, uid: int | None) -> list[str]:
    command = [shutil.which("bwrap") or "bwrap", *system_binds()]
    command += ["--proc", "/proc", "--dev", "/dev", *_writable_places(folder)]
    command += ["--chdir", _INSIDE, "--die-with-parent", "--new-session", "--clearenv"]
    for name, value in _ENV.items():
        command += ["--setenv", name, value]
    if uid is None:
        return [*command, "--unshare-all", "--", _base_python()]
    # root: a user namespace would map our uid back to 0; a real uid of its own instead
    command += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try", "--"]
    return [*command, *_setpriv(uid), _base_python()]


def _writable_places(folder: Path) -> list[str]:
    """``/tmp`` and the working directory as tmpfs of ``_DISK_BYTES`` each (open to the run's uid), with the
    run's files bound read-only into the latter. Why: ``RLIMIT_FSIZE`` caps one file, not how many, and a
    bind of the host's temporary folder would let the run fill the host's disk."""
    places = ["--size", str(_DISK_BYTES), "--perms", "1777", "--tmpfs", "/tmp"]
    places += ["--size", str(_DISK_BYTES), "--perms", "1777", "--tmpfs", _INSIDE]
    for entry in sorted(folder.iterdir()):
        places += ["--ro-bind", str(entry), f"{_INSIDE}/{entry.name}"]
    return places


def _prefix_binds(prefix: Path) -> list[str]:
    """The interpreter's prefix, read-only, with its site-packages hidden behind empty folders."""
    binds: list[str] = []
    if prefix != Path("/usr") and Path("/usr") not in prefix.parents:
        # Its parent folders are made traversable (a pyenv under /root, which is 0700 outside): else the
        # dynamic loader misses the prefix's libpython and a system one with another stdlib would run.
        binds += readable_bind(prefix)
    for site in prefix.glob("lib/python3*/site-packages"):
        binds += ["--tmpfs", str(site)]
    return binds


def unprivileged(uid: int, limits: Limits) -> list[str]:
    """A command prefix, run as root, for a program that must not be: ``limits`` set (``prlimit``), then the
    rest run as ``uid`` with no capability (``setpriv``). The process limit binds there, as in a sandbox run.

    Why a prefix: the classroom's kernel is started by jupyter_client, where no ``preexec_fn`` can be given.
    """
    fsize = limits.output_bytes * 4 + 2**20
    prlimit = [shutil.which("prlimit") or "prlimit", f"--nproc={limits.processes}", f"--as={limits.memory_bytes}"]
    prlimit += [f"--nofile={limits.open_files}", f"--fsize={fsize}", "--core=0", "--"]
    return [*prlimit, *_setpriv(uid)]


def fresh_uid() -> int | None:
    """A kernel uid of its own for a program started as root (None when not root, or no ``setpriv``/``prlimit``)."""
    if not _is_root() or shutil.which("setpriv") is None or shutil.which("prlimit") is None:
        return None
    return _own_uid()


def bwrap_executable() -> str | None:
    """bubblewrap's path where it works here (as root, with ``setpriv`` beside it), else None."""
    return shutil.which("bwrap") if _bwrap_works() else None


def _setpriv(uid: int) -> list[str]:
    return [
        shutil.which("setpriv") or "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--no-new-privs",
        "--inh-caps=-all",
        "--bounding-set=-all",
    ]


@functools.cache
def _bwrap_works() -> bool:
    """bubblewrap is installed and may create its namespaces here (a container may forbid it)."""
    if not sys.platform.startswith("linux") or shutil.which("bwrap") is None:
        return False
    if _is_root() and shutil.which("setpriv") is None:
        return False
    folder = Path(tempfile.mkdtemp(prefix="cal-sandbox-probe-"))
    try:
        uid = _own_uid() if _is_root() else None
        if uid is not None:
            os.chown(folder, uid, uid)
        command = [*_bwrap_command(folder, uid), "-I", "-S", "-c", "pass"]
        done = subprocess.run(command, capture_output=True, timeout=30, check=False)
        return done.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def isolated() -> bool:
    """True where runs get bubblewrap's full isolation (the case ``protections`` need not be said)."""
    return _bwrap_works()


def protections() -> tuple[str, ...]:
    """What isolation a sandbox run gets on this machine, one short phrase each (an English id of
    the catalog: ``verify`` shows it in the learner's language)."""
    found = [N_("a fresh interpreter without site-packages"), N_("an empty environment"), N_("a session of its own")]
    if _bwrap_works():
        found += [
            N_("bubblewrap: only the interpreter and /usr visible, read-only"),
            N_("no network"),
            N_("its own pid namespace, killed as a whole"),
            N_("at most 64 MiB written in its working directory and in /tmp, its own files read-only"),
        ]
        if _is_root():
            found.append(N_("an unprivileged uid of its own"))
    else:
        found.append(N_("no bubblewrap: files and network of this user stay reachable"))
        found.append(N_("no cap on the disk it fills, only on one file's size"))
        if _drops_uid():
            found.append(N_("an unprivileged uid of its own"))
        elif _is_root():
            found.append(N_("run as root: no process limit binds"))
    if _has_rlimits():
        found.append(N_("limits on memory, processes, open files and file size"))
        found.append(memory_protection())
    return tuple(found)


def memory_protection() -> str:
    """How a run's memory is capped here, as a catalog id: for the run as a whole (a cgroup of its own: root
    on Linux with a memory hierarchy) or per process only (``RLIMIT_AS``). ``verify`` says it."""
    if sandbox_cgroup.available():
        return N_("memory and processes capped for the run as a whole: a cgroup of its own")
    return N_("memory capped per process (address space), not for the run as a whole: no memory cgroup")


def _has_rlimits() -> bool:
    try:
        import resource  # noqa: F401  (not on Windows)
    except ImportError:
        return False
    return True


def _limiter(
    limits: Limits, dropped_uid: bool, group: sandbox_cgroup.RunGroup | None = None
) -> Callable[[], None] | None:
    """The rlimits, set in the forked child before it execs (inherited by bwrap and Python), after it joined
    the run's cgroup when there is one (so nothing it starts is outside it)."""
    if not _has_rlimits():
        return None
    import resource

    wanted = [
        (resource.RLIMIT_AS, limits.memory_bytes),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_FSIZE, limits.output_bytes * 4 + 2**20),
        (resource.RLIMIT_CORE, 0),
    ]
    if dropped_uid:
        wanted.append((resource.RLIMIT_NPROC, limits.processes))

    def limit() -> None:
        if group is not None:
            group.join()
        for which, value in wanted:
            try:
                _soft, hard = resource.getrlimit(which)
                cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
                resource.setrlimit(which, (cap, hard))
            except (ValueError, OSError):
                pass  # macOS refuses some (RLIMIT_AS); the deadline still holds

    return limit


# --------------------------------------------------------------------------- one run


def run_in_sandbox(
    program: str,
    *,
    payload: object,
    files: Mapping[str, bytes],
    limits: Limits = Limits(),
    kernel_types: bool = True,
    part_seconds: float | None = None,
    on_part: Callable[[object], bool | Answer | None] | None = None,
    answers: bool = False,
) -> ChildOutcome:
    """Run ``program`` in a fresh sandbox and return what it sent, never raising for what it did.

    ``part_seconds`` (verify's per-check limit) bounds the wait for each next message as well
    as ``limits.seconds`` the whole run; ``on_part`` sees each part as it arrives (progress) and
    may return False for a part that is no progress (it then restarts no clock). With ``answers``
    the child gets a request pipe, and ``on_part`` may return an ``Answer`` to a part: verify
    hands out each step's probes and answers its stand-ins' calls that way, as they are asked for.
    """
    folder = Path(tempfile.mkdtemp(prefix="cal-sandbox-"))
    try:
        _write_world(folder, program, payload, files, kernel_types)
        return _run(folder, limits, part_seconds, on_part, answers)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class SandboxStopped(RuntimeError):
    """A conversation broke off: the child hung, crashed, or sent what is not an answer (said once, then for good)."""


class SandboxSession:
    """A conversation with one sandboxed child: the grader asks, case after case, and judges the answers.

    Why not one ``run_in_sandbox`` per case: loading a submission once and asking it many questions keeps a
    whole notebook's judging to one child, and its cases can be drawn as the judging goes. The child gets the
    same world, limits and channel as ``run_in_sandbox``; its program reads each request with
    ``sandbox_io.receive()`` and answers with one ``sandbox_io.send_part(data)``. ``ask`` waits at most
    ``timeout`` (``limits.seconds`` by default) for that answer, a half-written one included; anything but a
    well-formed answer in time stops the session, kills every process of the run, and raises ``SandboxStopped``
    from then on. Leaving the ``with`` block kills them all as well. On Windows a thread writes each request
    (no ``select`` on pipes there).
    """

    def __init__(
        self,
        program: str,
        *,
        payload: object,
        files: Mapping[str, bytes],
        limits: Limits = Limits(),
        kernel_types: bool = True,
    ) -> None:
        self._world = (program, payload, files, kernel_types)
        self.limits = limits
        self.stopped: str | None = None
        self._folder: Path | None = None
        self._live: _Live | None = None

    def __enter__(self) -> SandboxSession:
        program, payload, files, kernel_types = self._world
        self._folder = Path(tempfile.mkdtemp(prefix="cal-session-"))
        try:
            _write_world(self._folder, program, payload, files, kernel_types)
            live = _launch(self._folder, self.limits, conversation=True)
        except BaseException:
            self.close()
            raise
        if isinstance(live, ChildOutcome):
            self.stopped = live.detail
        else:
            self._live = live
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The run's first process (tests look for it after the end)."""
        return self._live.run.process.pid if self._live is not None else None

    def ask(self, request: object, timeout: float | None = None) -> object:
        """The child's answer to ``request`` (JSON data), or ``SandboxStopped`` saying what went wrong."""
        if self.stopped is not None or self._live is None:
            raise SandboxStopped(self.stopped or "the session is closed")
        live = self._live
        deadline = time.monotonic() + (self.limits.seconds if timeout is None else timeout)
        live.listener.parts.clear()  # answers nobody asked for yet are not this request's answer
        line = json.dumps(request, ensure_ascii=True, allow_nan=False).encode("ascii") + b"\n"
        outcome = _send_request(live.request_writer, line, deadline) or _await_answer(live, self.limits, deadline)
        if outcome.status == "ok":
            return outcome.data
        self.stopped = outcome.detail
        self.close()
        raise SandboxStopped(outcome.detail)

    def close(self) -> None:
        """Kill every process of the run and remove its folder (idempotent)."""
        live, self._live = self._live, None
        if live is not None:
            _shutdown(live)
            self.stopped = self.stopped or "the session is closed"
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def _send_request(writer: int, line: bytes, deadline: float) -> ChildOutcome | None:
    """Write one request line before the deadline (a child that stops reading cannot block the parent)."""
    write = _write_in_a_thread if sys.platform == "win32" else _write_when_writable
    problem = write(writer, line, deadline)
    if problem == "timeout":
        return ChildOutcome("timeout", None, _("the checking process stopped reading its requests"))
    if problem == "closed":
        return ChildOutcome("crashed", None, _("the checking process closed its requests"))
    return None


def _write_when_writable(writer: int, line: bytes, deadline: float) -> str | None:
    """POSIX: non-blocking writes, each after ``select`` says the pipe has room; "timeout", "closed" or None."""
    import select

    os.set_blocking(writer, False)
    view = memoryview(line)
    while view:
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        if not select.select([], [writer], [], left)[1]:
            continue
        try:
            view = view[os.write(writer, view) :]
        except BlockingIOError:
            continue
        except OSError:
            return "closed"
    return None


def _write_in_a_thread(writer: int, line: bytes, deadline: float) -> str | None:  # pragma: no cover - Windows
    """Windows (no ``select`` on pipes): a blocking write in a thread of its own, waited for until the deadline."""
    failed: list[OSError] = []

    def write() -> None:
        view = memoryview(line)
        try:
            while view:
                view = view[os.write(writer, view) :]
        except OSError as error:
            failed.append(error)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    thread.join(max(0.0, deadline - time.monotonic()))
    if thread.is_alive():
        return "timeout"
    return "closed" if failed else None


def _await_answer(live: _Live, limits: Limits, deadline: float) -> ChildOutcome:
    """The next part on the channel, as an "ok" outcome; or what ended the wait instead."""
    state = live.listener
    while not state.parts:
        now = time.monotonic()
        if now >= deadline:
            if state.buffer:
                return _outcome("timeout", None, _("the checking process began an answer and never finished it"), state)
            return _outcome("timeout", None, _("the checking process gave no answer in time"), state)
        outcome = _receive(live.run.process, state, limits, deadline - now, None)[0]
        if outcome is not None and outcome.status == "ok":
            return _outcome("garbage", None, _("the checking process ended the conversation"), state)
        if outcome is not None:
            return outcome
    return ChildOutcome("ok", state.parts.pop(0), "")


@functools.cache
def _prefix_open_to_all() -> bool:
    """Whether any uid may run the interpreter where it is (a pyenv under /root, mode 0700, is not)."""
    prefix = Path(sys.base_prefix).resolve()
    for folder in [*reversed(prefix.parents), prefix]:
        try:
            if not folder.stat().st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


def _drops_uid() -> bool:
    """Root gives the child a uid of its own: inside bwrap always, without it only where that uid can run Python."""
    if not _is_root() or shutil.which("setpriv") is None:
        return False
    return _bwrap_works() or _prefix_open_to_all()


def _command(folder: Path, limits: Limits) -> tuple[list[str], int | None, bool]:
    """The command line, the uid the child runs as (None: ours), and whether bwrap is used."""
    uid = _own_uid() if _drops_uid() else None
    boot = _BOOT if uid is not None or not _has_rlimits() else _NPROC.format(n=limits.processes) + _BOOT
    python_args = ["-I", "-S", "-B", "-u", "-X", "utf8", "-c", boot, "channel-fd", "request-fd"]
    if _bwrap_works():
        return [*_bwrap_command(folder, uid), *python_args], uid, True
    python = [_base_python(), *python_args]
    return ([*_setpriv(uid), *python] if uid is not None else python), uid, False


@dataclass(frozen=True)
class _Live:
    """A started run: its processes, the listener and its reader threads, and the parent's pipe ends."""

    run: _Run
    listener: _Listener
    pumps: tuple[threading.Thread, threading.Thread]
    reader: int
    request_writer: int


def _launch(folder: Path, limits: Limits, conversation: bool) -> _Live | ChildOutcome:
    """Start the child on ``folder`` (with a request pipe for a conversation), or say why it could not start."""
    command, uid, bwrap = _command(folder, limits)
    if uid is not None:
        for path in [folder, *folder.rglob("*")]:
            os.chown(path, uid, uid)
    reader, writer = os.pipe()
    request_reader, request_writer = os.pipe() if conversation else (-1, -1)
    group = sandbox_cgroup.make(limits.memory_bytes, limits.processes)
    started = False
    try:
        limiter = _limiter(limits, uid is not None, group)
        process = _start(command, folder, (writer, request_reader), limiter)
        started = True
    except (OSError, subprocess.SubprocessError) as error:
        _close(reader, request_writer)
        return ChildOutcome("crashed", None, _("the sandbox could not start ({error})", error=type(error).__name__))
    finally:
        _close(writer, request_reader)
        if not started and group is not None:
            group.remove()
    run = _Run(process, bwrap, uid, group)
    listener = _Listener()
    pumps = _pumps(process, reader, listener, limits.output_bytes)
    return _Live(run, listener, pumps, reader, request_writer)


def _shutdown(live: _Live) -> None:
    """Kill every process of the run, then close what the parent held of it."""
    _kill(live.run)
    for pump in live.pumps:
        pump.join(timeout=5)
    _close(live.reader, live.request_writer)
    if live.run.process.stdout is not None:
        live.run.process.stdout.close()


def _run(
    folder: Path,
    limits: Limits,
    part_seconds: float | None,
    on_part: Callable[[object], bool | Answer | None] | None,
    answers: bool,
) -> ChildOutcome:
    live = _launch(folder, limits, conversation=answers)
    if isinstance(live, ChildOutcome):
        return live
    if answers:
        live.listener.answer = _answerer(live)
    try:
        return _listen(live.run.process, live.listener, limits, part_seconds, on_part)
    finally:
        _shutdown(live)


def _answerer(live: _Live) -> Callable[[Answer], ChildOutcome | None]:
    """How an ``Answer`` is given: a fence first when asked, then one line on the request pipe, written
    within ``_FENCE_SECONDS`` (a child that stops reading its requests cannot block the parent)."""

    def answer(given: Answer) -> ChildOutcome | None:
        if given.fence and not _kill_all_but_the_program(live.run):
            return ChildOutcome("crashed", None, _("a process of the checking run outlived the fence between steps"))
        line = json.dumps(given.data, ensure_ascii=True, allow_nan=False).encode("ascii") + b"\n"
        return _send_request(live.request_writer, line, time.monotonic() + _FENCE_SECONDS)

    return answer


def _close(*descriptors: int) -> None:
    for descriptor in descriptors:
        if descriptor >= 0:
            os.close(descriptor)


def _start(
    command: list[str], folder: Path, ends: tuple[int, int], limiter: Callable[[], None] | None
) -> subprocess.Popen[bytes]:
    """The child, with the channel's write end and the requests' read end (-1: none here) as its only extra
    inherited descriptors (handles on Windows)."""
    writer, request_reader = ends
    common: dict[str, Any] = {
        "cwd": folder,
        "env": dict(_ENV),
        "stdin": subprocess.DEVNULL,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.STDOUT,
    }
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        import msvcrt

        handles = [msvcrt.get_osfhandle(end) for end in (writer, request_reader) if end >= 0]
        for handle in handles:
            os.set_handle_inheritable(handle, True)
        command[-2:] = [f"h{handles[0]}", f"h{handles[1]}" if len(handles) > 1 else "-"]
        startup = subprocess.STARTUPINFO(lpAttributeList={"handle_list": handles})
        flags = subprocess.CREATE_NEW_PROCESS_GROUP
        return subprocess.Popen(command, startupinfo=startup, creationflags=flags, **common)
    # the descriptors' numbers in the child are the ones they have here
    command[-2:] = [str(writer), str(request_reader) if request_reader >= 0 else "-"]
    passed = tuple(end for end in (writer, request_reader) if end >= 0)
    return subprocess.Popen(  # the command is ours; only its files are untrusted
        command, pass_fds=passed, start_new_session=True, preexec_fn=limiter, **common
    )


def _pumps(
    process: subprocess.Popen[bytes], reader: int, listener: _Listener, cap: int
) -> tuple[threading.Thread, threading.Thread]:
    """Two reader threads (portable: no select on pipes): the channel's bytes to a queue, stopping past
    ``cap`` so a huge message never grows this process; the child's printed output to a bounded buffer."""
    assert process.stdout is not None
    output = process.stdout.fileno()

    def channel() -> None:
        received = 0
        while True:
            try:
                chunk = os.read(reader, _READ_CHUNK)
            except OSError:
                chunk = b""
            listener.chunks.put(chunk)
            received += len(chunk)
            if not chunk or received > cap:
                return

    def printed() -> None:
        while True:
            try:
                chunk = os.read(output, _READ_CHUNK)
            except OSError:
                return
            if not chunk:
                return
            with listener.lock:
                room = _MAX_PRINTED - len(listener.printed)
                if room > 0:
                    listener.printed += chunk[:room]

    threads = (threading.Thread(target=channel, daemon=True), threading.Thread(target=printed, daemon=True))
    for thread in threads:
        thread.start()
    return threads


def _descendants(pid: int) -> list[int]:
    """Children of children, read from /proc (Linux); elsewhere [] and the session kill must do."""
    found: list[int] = []
    todo = [pid]
    while todo and len(found) < 10_000:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                text = Path(f"/proc/{parent}/task/{task}/children").read_text()
            except OSError:
                continue
            children = [int(word) for word in text.split()]
            found += children
            todo += children
    return found


@dataclass(frozen=True)
class _Run:
    """One running sandbox: how to find its processes (bwrap's pid namespace, else session and uid)."""

    process: subprocess.Popen[bytes]
    bwrap: bool
    uid: int | None
    group: sandbox_cgroup.RunGroup | None = None
    """The run's own memory and pids cgroup (root on Linux), removed when the run is killed."""


def _kill(run: _Run) -> None:
    """The whole session at once: every process of the run by pid (bwrap's pid namespace dies with its
    first process, taking what was forked inside along), then the session's process group."""
    process = run.process
    for pid in _run_pids(run):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    if hasattr(os, "killpg"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    try:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait()
    finally:
        if run.group is not None:
            run.group.remove()


# --------------------------------------------------------------------------- fences


_FENCE_SECONDS = 2.0  # the killing at one fence; it takes a few milliseconds


def _can_fence() -> bool:
    """Fences need the run's processes listed, which ``/proc`` does (Linux); elsewhere the child goes on at once."""
    return sys.platform.startswith("linux") and os.path.isdir("/proc/self/task")


def _kill_all_but_the_program(run: _Run) -> bool:
    """Kill the run's processes but the program and its bubblewrap parents, until none is left alive
    (a process that forks while it is being killed is found again on the next pass). False when the
    program cannot be told apart or something outlived the fence: the caller then ends the run."""
    spared = _spared(run)
    if spared is None:
        return False
    deadline = time.monotonic() + _FENCE_SECONDS
    while time.monotonic() < deadline:
        alive = [pid for pid in _run_pids(run) if pid not in spared and _alive(pid)]
        if not alive:
            return True
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.001)
    return False


def _spared(run: _Run) -> set[int] | None:
    """The processes a fence leaves: the program, and under bwrap bubblewrap and its pid namespace's init.

    The program is the one process there with pid 2 in that namespace (the first its init forked):
    nothing the program forks can take that number while it lives. None when it is not found.
    """
    pid = run.process.pid
    if not run.bwrap:
        return {pid}
    for init in _children(pid):
        depth = len(_namespace_pids(init))
        for child in _children(init):
            inside = _namespace_pids(child)
            if len(inside) == depth and inside[-1] == 2:
                return {pid, init, child}
    return None


def _run_pids(run: _Run) -> set[int]:
    """Every process of the run but its first: under bwrap, all of its pid namespace (orphans there are
    re-parented to its init, inside the run); without it, the descendants, the session, and, when the run
    has a uid of its own, every process of that uid (a setsid'd grandchild, re-parented outside)."""
    found = set(_descendants(run.process.pid))
    if run.group is not None:
        found |= run.group.pids()
    if run.bwrap or not _can_fence():
        return found
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _belongs(int(entry), run):
            found.add(int(entry))
    found.discard(run.process.pid)
    return found


def _belongs(pid: int, run: _Run) -> bool:
    """A process of the run without bwrap: in its session, or (with a uid of its own) of that uid."""
    if run.uid is not None:
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{pid}").st_uid == run.uid:
                return True
    fields = _stat_fields(pid)
    return fields is not None and fields[3] == str(run.process.pid)


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command's name (which may hold spaces): state, ppid, pgrp, session, ..."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def _alive(pid: int) -> bool:
    """Still running: neither gone nor a zombie (a killed process's pid stays until its parent reaps it)."""
    fields = _stat_fields(pid)
    return fields is not None and bool(fields) and fields[0] not in ("Z", "X")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                found += [int(word) for word in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    return found


def _namespace_pids(pid: int) -> list[int]:
    """The process's pid in each pid namespace it is in, outermost first (``NSpid`` of /proc/PID/status)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace")
    except OSError:
        return []
    for line in text.splitlines():
        if line.startswith("NSpid:"):
            return [int(word) for word in line.split()[1:] if word.isdigit()]
    return []


@dataclass
class _Listener:
    answer: Callable[[Answer], ChildOutcome | None] | None = None
    chunks: queue.Queue[bytes] = field(default_factory=queue.Queue)
    parts: list[object] = field(default_factory=list)
    buffer: bytearray = field(default_factory=bytearray)
    printed: bytearray = field(default_factory=bytearray)
    lock: threading.Lock = field(default_factory=threading.Lock)
    received: int = 0


def _listen(
    process: subprocess.Popen[bytes],
    state: _Listener,
    limits: Limits,
    part_seconds: float | None,
    on_part: Callable[[object], bool | Answer | None] | None,
) -> ChildOutcome:
    """Read the channel until the final answer, a deadline, or a misbehaviour.

    Two deadlines: ``limits.seconds`` for the whole run, and ``part_seconds`` for each next
    message, restarted only by a message that is complete and (when ``on_part`` says so) new:
    half a message, or the same one sent again and again, does not buy time.
    """
    start = last = time.monotonic()
    while True:
        now = time.monotonic()
        deadline = start + limits.seconds
        if part_seconds is not None:
            deadline = min(deadline, last + part_seconds)
        if now >= deadline:
            return _outcome("timeout", None, _timeout_detail(state, start, now, limits, part_seconds), state)
        outcome, advanced = _receive(process, state, limits, deadline - now, on_part)
        if outcome is not None:
            return outcome
        if advanced:
            last = time.monotonic()


def _receive(
    process: subprocess.Popen[bytes],
    state: _Listener,
    limits: Limits,
    wait: float,
    on_part: Callable[[object], bool | Answer | None] | None,
) -> tuple[ChildOutcome | None, bool]:
    """Take the next chunk of the channel (waiting at most ``wait``) and the messages it completes.

    Returns the outcome that ends the run (None: go on) and whether any part advanced it.
    """
    try:
        chunk = state.chunks.get(timeout=wait)
    except queue.Empty:
        return None, False
    if not chunk:
        return _ended(process, state, ""), False
    state.received += len(chunk)
    if state.received > limits.output_bytes:
        too_big = _("the checking process sent more than {limit} bytes", limit=limits.output_bytes)
        return _outcome("too_big", None, too_big, state), False
    state.buffer += chunk
    return _take_lines(state, on_part)


def _timeout_detail(state: _Listener, start: float, now: float, limits: Limits, part: float | None) -> str:
    if state.buffer:
        return _("the checking process began a message and never finished it")
    if part is not None and now - start < limits.seconds:
        return _("no answer within {seconds} s", seconds=format(part, "g"))
    return _("no answer within {seconds} s", seconds=format(limits.seconds, "g"))


OnPart = Callable[[object], "bool | Answer | None"]


def _take_lines(state: _Listener, on_part: OnPart | None) -> tuple[ChildOutcome | None, bool]:
    """Parse each complete line; a final answer or a broken message ends the run.

    Returns the outcome (None: go on) and whether any part advanced the run.
    """
    advanced = False
    while b"\n" in state.buffer:
        line, _newline, rest = bytes(state.buffer).partition(b"\n")
        state.buffer = bytearray(rest)
        message = decode_message(line)
        if isinstance(message, str):
            return _outcome("garbage", None, message, state), advanced
        kind, data = message
        if kind == "final":
            return _outcome("ok", data, "", state), advanced  # prints after the answer are not waited for
        ended, progress = _take_part(state, data, on_part)
        if ended is not None:
            return ended, advanced
        advanced = advanced or progress
    return None, advanced


def _take_part(state: _Listener, data: object, on_part: OnPart | None) -> tuple[ChildOutcome | None, bool]:
    """One part: kept, shown to ``on_part``, and answered when it returns an ``Answer`` (a run without a request
    pipe answers nothing). Returns what ended the run instead (None: go on) and whether it was progress."""
    state.parts.append(data)
    if len(state.parts) > 100_000:
        return _outcome("too_big", None, _("the checking process sent too many messages"), state), False
    said = on_part(data) if on_part is not None else None
    if not isinstance(said, Answer):
        return None, said is not False
    if state.answer is None:
        refused = _("the checking process asked what this run answers nothing to")
        return _outcome("garbage", None, refused, state), False
    failed = state.answer(said)
    if failed is not None:
        return _outcome(failed.status, None, failed.detail, state), False
    return None, said.progress


def _ended(process: subprocess.Popen[bytes], state: _Listener, detail: str) -> ChildOutcome:
    try:
        code = process.wait(timeout=2)
    except subprocess.TimeoutExpired:
        code = None
    if state.buffer:
        return _outcome("garbage", None, _("the checking process ended in the middle of a message"), state)
    if code is None:
        why = _("it closed its channel without answering")
    elif code < 0:
        why = _("it was killed by signal {signal}", signal=-code)
    else:
        why = _("it ended with exit status {code} without answering", code=code)
    return _outcome("crashed", None, detail or _("the checking process stopped: {why}", why=why), state)


def _outcome(status: Status, data: object | None, detail: str, state: _Listener) -> ChildOutcome:
    with state.lock:
        printed = state.printed.decode("utf-8", "replace")
    return ChildOutcome(status, data, printable_line(detail), tuple(state.parts), printed)


def decode_message(line: bytes) -> tuple[str, object] | str:
    """One channel line as (kind, data), or a sentence saying why it is not a message of ours."""
    try:
        text = line.decode("ascii")
    except UnicodeDecodeError:
        return "the checking process sent bytes that are not a message"
    depth = nesting_depth(text)
    if depth > _MAX_DEPTH:
        return f"the checking process sent a message nested more than {_MAX_DEPTH} deep"
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return "the checking process sent a message that is not JSON"
    if not isinstance(value, dict) or set(value) != {"kind", "data"} or value["kind"] not in ("part", "final"):
        return "the checking process sent a message of an unknown shape"
    return str(value["kind"]), value["data"]


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text, counted in one loop (no recursion, strings skipped)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > _MAX_DEPTH:
                return deepest
        elif char in "]}":
            depth -= 1
    return deepest


def printable_line(text: str, limit: int = 300) -> str:
    """One line without control characters, cut to ``limit``."""
    out = [char if char.isprintable() else f"\\x{ord(char):02x}" if ord(char) < 0x100 else "?" for char in text]
    line = "".join(out)
    return line if len(line) <= limit else line[: limit - 1] + "…"
