"""The llama-server builder, run for real against a fake pip and a fake cmake (the edges, nothing else).

The fake pip writes an sdist holding ``vendor/llama.cpp``; the fake cmake configures (or fails to, when told)
and "compiles" a stand-in executable. The lock, the log, the record and the smoke-test logic are the real ones.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
from engine_build_script import engine_build

from codeagent_lite.providers.failure import FailureCode, ProviderFailure
from codeagent_lite.providers.llama_server_build import ServerBuild, llama_server_build
from codeagent_lite.providers.local_engine import EngineState, Note, NoteCode, Phase

FAKE_PIP = """
import io, sys, tarfile
folder, spec = sys.argv[sys.argv.index("-d") + 1], sys.argv[-1]
name = "llama_cpp_python-" + spec.split("==")[1]
with tarfile.open(f"{folder}/{name}.tar.gz", "w:gz") as archive:
    body = b"project(llama)\\n"
    member = tarfile.TarInfo(f"{name}/vendor/llama.cpp/CMakeLists.txt")
    member.size = len(body)
    archive.addfile(member, io.BytesIO(body))
print("Saved", spec)
"""
FAKE_CMAKE = """
import os, pathlib, sys
if os.environ.get("FAKE_CMAKE_FAILS") == "configure" and "-S" in sys.argv:
    print("CMake Error: no compiler")
    sys.exit(4)
if "--build" in sys.argv:
    binary = pathlib.Path(sys.argv[sys.argv.index("--build") + 1]) / "bin" / "llama-server"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\\n")
    binary.chmod(0o755)
print("cmake", *sys.argv[1:])
"""


def executable(path: Path, body: str) -> str:
    path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fake cmake first on PATH; returns the fake interpreter whose ``-m pip download`` writes the sdist."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    executable(bin_dir / "cmake", FAKE_CMAKE)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return executable(tmp_path / "fake-python", FAKE_PIP)


def build(tools: str, cache: Path, smoke: ProviderFailure | None = None) -> tuple[int, list[object]]:
    told: list[object] = []

    def tell(found: ServerBuild, phase: Phase | None) -> None:
        told.append(phase if phase is not None else found.state)

    code = engine_build.build_llama_server(python=tools, cache=cache, smoke_test=lambda binary: smoke, tell=tell)
    return code, told


def test_a_build_compiles_smoke_tests_and_is_then_ready_without_compiling_again(tools: str, tmp_path: Path) -> None:
    code, told = build(tools, tmp_path)
    assert (code, told) == (0, [Phase.COMPILING, Phase.SMOKE_TEST, EngineState.READY])
    found = llama_server_build(cache=tmp_path)
    assert found.ready and found.record["built"] is True and found.record["smoke"] == "ok"
    log = found.log_path.read_text(encoding="utf-8")
    assert " | $ cmake --build " in log and " | cmake -S " in log and log.rstrip().endswith("smoke test: ok")
    assert build(tools, tmp_path) == (0, [EngineState.READY])


def test_a_failed_step_is_recorded_as_data_and_the_build_reads_as_failed(
    tools: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CMAKE_FAILS", "configure")
    assert build(tools, tmp_path) == (1, [Phase.COMPILING, EngineState.FAILED])
    found = llama_server_build(cache=tmp_path)
    assert found.reason == Note.of(NoteCode.SERVER_CONFIGURE, returncode=4)
    assert "built" not in found.record and not found.binary.exists()


def test_without_cmake_the_build_fails_with_a_reason_instead_of_a_traceback(
    tools: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert build(tools, tmp_path)[0] == 1
    assert llama_server_build(cache=tmp_path).reason == Note.of(NoteCode.SERVER_CONFIGURE, returncode=127)


def test_a_binary_that_fails_its_smoke_test_is_not_ready_and_is_not_compiled_again(tools: str, tmp_path: Path) -> None:
    crash = ProviderFailure(FailureCode.ENGINE_WRONG_CPU, signal="SIGILL")
    assert build(tools, tmp_path, smoke=crash)[0] == 1
    found = llama_server_build(cache=tmp_path)
    assert found.state is EngineState.FAILED and found.record["built"] is True
    assert found.reason == Note.of(NoteCode.SMOKE_FAILED, failure="engine-wrong-cpu", signal="SIGILL")
    found.log_path.write_text("", encoding="utf-8")
    assert build(tools, tmp_path) == (0, [Phase.SMOKE_TEST, EngineState.READY])  # the same bytes, tested again
    assert "cmake" not in found.log_path.read_text(encoding="utf-8")
    assert json.loads((found.directory / "build.json").read_text(encoding="utf-8"))["smoke"] == "ok"
