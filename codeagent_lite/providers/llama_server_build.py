"""llama.cpp's own ``llama-server``, compiled once from the source llama-cpp-python ships.

It batches requests over ``--parallel`` slots where llama-cpp-python's server answers one at a time. The wheel has
no server executable, so ``scripts/engine_build.py`` builds it into the user's cache under a hash of the version and
every flag: a binary built with other flags, for another CPU, is never picked up. It counts once its smoke test passed.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .local_engine import LOG_NAME, EngineState, Note, build_running, read_record, user_cache_dir

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
        if build_running(self.directory):
            return EngineState.BUILDING
        return EngineState.NOT_INSTALLED if self.reason is None else EngineState.FAILED


def llama_server_build(
    flags: Sequence[str] = SERVER_CMAKE_ARGS, version: str = LLAMA_CPP_PYTHON_VERSION, cache: Path | None = None
) -> ServerBuild:
    """The build for exactly these flags and version (read from its folder; nothing runs)."""
    material = json.dumps([version, sorted(flags), platform.machine(), sys.platform])
    key = hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]
    folder = (user_cache_dir() if cache is None else cache) / "llama-server" / f"{version}-{key}"
    return ServerBuild(folder, tuple(flags), read_record(folder / RECORD_NAME))


def server_record(record: Mapping[str, object], failure: Note | None) -> dict[str, object]:
    """``build.json`` once the smoke test ran: "smoke" "ok" is what ``ready`` reads, else the failed step's note."""
    kept = {key: value for key, value in record.items() if key != "smoke"}
    return {**kept, **({"smoke": "ok"} if failure is None else {"failure": failure.as_json()}), "finished": time.time()}
