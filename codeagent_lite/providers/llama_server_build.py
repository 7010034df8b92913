"""llama.cpp's own ``llama-server``, compiled once from the source llama-cpp-python ships.

Why a second build at all: llama-cpp-python's Python server answers one request at a time
(one ``Llama`` object behind a lock), so a class of 20 running notebook 06 together queues
20 deep. ``llama-server`` decodes several requests in one batch (``--parallel`` slots,
continuous batching) and keeps each slot's prompt in its cache, which is what a shared
classroom model should want, so wherever this build is ready ``local_server`` serves with it
(its docstring has the measured figures).

The llama-cpp-python wheel holds only the shared libraries, no server executable, so the
executable is built with CMake from the ``vendor/llama.cpp`` folder of the same sdist (from
PyPI, the only thing downloaded). The build is optional and never blocks the lab: it runs
in the background like the wheel's, at low priority, and until it is there the server falls
back to llama-cpp-python's own.

The result lives in the user's cache under a folder named by a hash of the version and every
CMake flag, so a binary built with other flags (``-march=native`` on another CPU, say) is
never picked up, and a venv rebuilt from scratch does not compile it again. A build counts
only once a one-token smoke test in a separate process has passed.

Standard library only, like ``local_engine``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
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

__all__ = [
    "LLAMA_CPP_PYTHON_VERSION",
    "SERVER_CMAKE_ARGS",
    "ServerBuild",
    "build_llama_server",
    "llama_server_build",
    "start_background_server_build",
]

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
"""The sdist whose ``vendor/llama.cpp`` is compiled: the same llama.cpp as the wheel."""

SERVER_CMAKE_ARGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",  # -march=native dies with SIGILL on CPUs that advertise more than they run (AMX)
    "-DBUILD_SHARED_LIBS=OFF",  # one self-contained executable
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",  # it would download the web UI from Hugging Face
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
)
"""Every flag the executable is built with; all of them name its cache folder."""

BINARY_NAME = "llama-server"
RECORD_NAME = "build.json"
LOG_NAME = "build.log"

SmokeTest = Callable[[Path], "ProviderFailure | None"]
"""Given the built executable: None when one token came back, else how it failed."""
Tell = Callable[["ServerBuild", "Phase | None"], None]
"""Shows a build's state, or the step it is at (``workbook.engine_words.server_summary`` words it)."""


@dataclass(frozen=True, slots=True)
class ServerBuild:
    """Where the executable for these flags lives, and whether it was built and passed its smoke test."""

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
    def building(self) -> bool:
        return _build_running(self.directory)

    @property
    def state(self) -> EngineState:
        if self.ready:
            return EngineState.READY
        if self.building:
            return EngineState.BUILDING
        return EngineState.NOT_INSTALLED if self.reason is None else EngineState.FAILED


def _build_key(version: str, flags: Sequence[str]) -> str:
    material = json.dumps([version, sorted(flags), platform.machine(), sys.platform])
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


def llama_server_build(
    flags: Sequence[str] = SERVER_CMAKE_ARGS, version: str = LLAMA_CPP_PYTHON_VERSION, cache: Path | None = None
) -> ServerBuild:
    """The build for exactly these flags and version (read from its folder; nothing runs)."""
    root = (user_cache_dir() if cache is None else cache) / "llama-server"
    return _read(root / f"{version}-{_build_key(version, flags)}", flags)


def _read(folder: Path, flags: Sequence[str]) -> ServerBuild:
    return ServerBuild(folder, tuple(flags), read_record(folder / RECORD_NAME))


def build_llama_server(
    *,
    python: str = sys.executable,
    flags: Sequence[str] = SERVER_CMAKE_ARGS,
    version: str = LLAMA_CPP_PYTHON_VERSION,
    cache: Path | None = None,
    smoke_test: SmokeTest | None = None,
    tell: Tell = lambda build, phase: None,
) -> int:
    """Download the sdist (PyPI), compile ``llama-server`` and smoke-test it; 0 when it is ready.

    ``smoke_test(binary)`` returns None when one token came back, else the failure
    (``local_server.smoke_test`` of the llama-server backend by default). Held under a lock: a second build
    of the same flags waits for the first and then finds it done.
    """
    build = llama_server_build(flags, version, cache)
    build.directory.mkdir(parents=True, exist_ok=True)
    with _locked(build.directory / LOCK_NAME, exclusive=True, wait=True):
        build = llama_server_build(flags, version, cache)
        if build.ready:
            tell(build, None)
            return 0
        if smoke_test is None:
            from .local_server import smoke_test as engine_smoke_test

            def smoke_test(binary: Path) -> ProviderFailure | None:
                return engine_smoke_test(backend="llama-server", binary=binary)

        if build.record.get("built") and build.binary.is_file():
            # Compiled before, smoke test not passed (yet): the same flags would compile the same bytes.
            return _smoke(build, dict(build.record), smoke_test, tell)
        return _build(build, python, version, smoke_test, tell)


def _build(build: ServerBuild, python: str, version: str, smoke_test: SmokeTest, tell: Tell) -> int:
    started = time.time()
    record: dict[str, object] = {"version": version, "flags": list(build.flags), "started": started}
    with build.log_path.open("w", encoding="utf-8") as log, tempfile.TemporaryDirectory(prefix="llama-server-") as tmp:

        def run(*command: str) -> int:
            log.write(f"{time.time() - started:7.1f} | $ {shlex.join(command)}\n")
            log.flush()
            return subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode

        scratch, out = Path(tmp), str(Path(tmp) / "build")
        tell(build, Phase.COMPILING)
        source = f"llama-cpp-python=={version}"
        steps: list[tuple[NoteCode, Callable[[], int]]] = [
            (
                NoteCode.SERVER_DOWNLOAD,
                lambda: run(python, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", tmp, source),
            ),
            (NoteCode.SERVER_UNPACK, lambda: _unpack(scratch, version)),
            (
                NoteCode.SERVER_CONFIGURE,
                lambda: run("cmake", "-S", str(_source(scratch, version)), "-B", out, *build.flags),
            ),
            (
                NoteCode.SERVER_COMPILE,
                lambda: run("cmake", "--build", out, "--target", BINARY_NAME, "-j", str(cores())),
            ),
        ]
        for failed, step in steps:
            code = step()
            if code != 0:
                return _record(build, record, Note.of(failed, returncode=code), tell)
        built = scratch / "build" / "bin" / BINARY_NAME
        if not built.is_file():
            return _record(build, record, Note.of(NoteCode.SERVER_NO_BINARY), tell)
        shutil.copy2(built, build.binary)
    record["built"] = True
    record["seconds"] = round(time.time() - started, 1)
    return _smoke(build, record, smoke_test, tell)


def _smoke(build: ServerBuild, record: dict[str, object], smoke_test: SmokeTest, tell: Tell) -> int:
    tell(build, Phase.SMOKE_TEST)
    failure = smoke_test(build.binary)
    if failure is not None:
        return _record(build, record, smoke_note(failure), tell)
    record["smoke"] = "ok"
    return _record(build, record, None, tell)


def _source(scratch: Path, version: str) -> Path:
    return scratch / f"llama_cpp_python-{version}" / "vendor" / "llama.cpp"


def _unpack(scratch: Path, version: str) -> int:
    archive = scratch / f"llama_cpp_python-{version}.tar.gz"
    prefix = f"llama_cpp_python-{version}/vendor/llama.cpp/"
    try:
        with tarfile.open(archive) as source:
            members = [member for member in source.getmembers() if member.name.startswith(prefix)]
            source.extractall(scratch, members=members, filter="data")
    except (OSError, tarfile.TarError):
        return 1
    return 0


def _record(build: ServerBuild, record: dict[str, object], failure: Note | None, tell: Tell) -> int:
    if failure is not None:
        record["failure"] = failure.as_json()
        record.pop("smoke", None)
    record["finished"] = time.time()
    write_record(build.directory / RECORD_NAME, record)
    tell(_read(build.directory, build.flags), None)
    return 1 if failure is not None else 0


def start_background_server_build(builder_command: Sequence[str], build: ServerBuild | None = None) -> ServerBuild:
    """Start ``builder_command`` (``scripts/local_engine.py build-server --nice``) detached; the build as it then is.

    Like the wheel's background build (``local_engine.start_detached``): its own session, so closing the terminal
    does not stop it, and nothing waits for it past the moment it holds its lock.
    """
    chosen = llama_server_build() if build is None else build
    if not (chosen.ready or chosen.building):
        start_detached(builder_command, chosen.directory)
    return _read(chosen.directory, chosen.flags)
