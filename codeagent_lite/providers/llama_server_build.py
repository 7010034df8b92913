"""llama.cpp's own ``llama-server``, compiled once from the source llama-cpp-python ships.

It batches requests over ``--parallel`` slots where llama-cpp-python's server answers one at a time, so
``local_server`` serves with it wherever it is built. The wheel has no server executable: CMake builds it
from the sdist's ``vendor/llama.cpp``, in the background, in the user's cache under a hash of the version
and every flag (a binary built with other flags, for another CPU, is never picked up). Like the engine, it
counts only once a one-token smoke test in a separate process has passed.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .local_engine import (
    LOCK_NAME,
    LOG_NAME,
    BuildLog,
    EngineState,
    Note,
    NoteCode,
    Phase,
    _build_running,
    _locked,
    cores,
    read_record,
    smoke_note,
    start_detached,
    user_cache_dir,
    write_record,
)

if TYPE_CHECKING:
    from .failure import ProviderFailure

LLAMA_CPP_PYTHON_VERSION = "0.3.36"  # the sdist's vendor/llama.cpp is the wheel's llama.cpp
# All of them name the cache folder. GGML_NATIVE=OFF: -march=native dies with SIGILL on CPUs that advertise
# more than they run (AMX); no shared libraries: one self-contained executable; no prebuilt UI: it would be
# downloaded from Hugging Face.
SERVER_CMAKE_ARGS = (
    "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF", "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
)  # fmt: skip
BINARY_NAME, RECORD_NAME = "llama-server", "build.json"

SmokeTest = Callable[[Path], "ProviderFailure | None"]  # given the executable: None once a token came back
Tell = Callable[["ServerBuild", "Phase | None"], None]  # a build's state or step (``engine_words.server_summary``)


@dataclass(frozen=True, slots=True)
class ServerBuild:
    directory: Path
    flags: tuple[str, ...]
    record: dict[str, object]

    @property
    def binary(self) -> Path:
        return self.directory / BINARY_NAME

    @property
    def log_path(self) -> Path:
        return self.directory / LOG_NAME

    @property
    def ready(self) -> bool:
        return self.record.get("smoke") == "ok" and self.binary.is_file() and os.access(self.binary, os.X_OK)

    @property
    def reason(self) -> Note | None:
        """Why the last build is not usable; None when it is ready or never ran."""
        return None if self.ready else Note.from_json(self.record.get("failure"))

    @property
    def state(self) -> EngineState:
        if self.ready:
            return EngineState.READY
        if _build_running(self.directory):
            return EngineState.BUILDING
        return EngineState.NOT_INSTALLED if self.reason is None else EngineState.FAILED


def llama_server_build(
    flags: Sequence[str] = SERVER_CMAKE_ARGS, version: str = LLAMA_CPP_PYTHON_VERSION, cache: Path | None = None
) -> ServerBuild:
    """The build for exactly these flags and version (read from its folder; nothing runs)."""
    material = json.dumps([version, sorted(flags), platform.machine(), sys.platform])
    key = hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]
    return _read((user_cache_dir() if cache is None else cache) / "llama-server" / f"{version}-{key}", flags)


def _read(folder: Path, flags: Sequence[str]) -> ServerBuild:
    return ServerBuild(folder, tuple(flags), read_record(folder / RECORD_NAME))


def _default_smoke_test(binary: Path) -> ProviderFailure | None:
    from .local_server import smoke_test

    return smoke_test(backend="llama-server", binary=binary)


def build_llama_server(
    *,
    python: str = sys.executable,
    flags: Sequence[str] = SERVER_CMAKE_ARGS,
    version: str = LLAMA_CPP_PYTHON_VERSION,
    cache: Path | None = None,
    smoke_test: SmokeTest = _default_smoke_test,
    tell: Tell = lambda build, phase: None,
) -> int:
    """Download the sdist (PyPI), compile ``llama-server`` and smoke-test it; 0 when it is ready.

    Under the lock, so a second build of the same flags waits for the first and then finds it done.
    """
    folder = llama_server_build(flags, version, cache).directory
    with _locked(folder / LOCK_NAME, exclusive=True, wait=True):
        build = _read(folder, flags)
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
        record.pop("smoke", None)
        record.update({"smoke": "ok"} if failure is None else {"failure": failure.as_json()}, finished=time.time())
        write_record(folder / RECORD_NAME, record)
    tell(_read(folder, flags), None)  # after the lock, which would read as a build still running
    return 0 if failure is None else 1


def _compile(
    build: ServerBuild, record: dict[str, object], log: BuildLog, python: str, version: str, tell: Tell
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
    return _read(build.directory, build.flags)
