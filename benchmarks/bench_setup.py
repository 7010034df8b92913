"""How long from a fresh clone to a live JupyterLab, with an empty pip cache, with and without a compiler.

Usage: python benchmarks/bench_setup.py [--scenario NAME ...] [--engine-timeout SECONDS]
       (or `make bench-setup`; needs network access to PyPI, takes about 15 minutes on 2 cores)

Each scenario clones this repository's current commit into a temporary folder, points pip at a
new empty cache (PIP_CACHE_DIR; your own cache is never touched), runs `make lab` there and
times it until JupyterLab's /api/status answers HTTP 200. Then it runs notebooks 00-07 in that
learner install (nbconvert, a fresh kernel each) and follows the local engine's background build
until it is ready or has failed.

Scenarios:
- baseline:     no make, no project: a new venv, `pip install jupyterlab`, `jupyter lab`. The floor
                any setup pays; the others are given as a ratio to it, measured in the same run.
- no-compiler:  `make lab` with CC=/bin/false CXX=/bin/false, as on a machine without a C compiler.
- compiler:     `make lab` with the machine's compiler; the engine compiles in the background.

Timings vary with the network and with whatever else the machine is doing; compare a run's
figures with each other (the ratio), not with another day's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = os.environ.get("PYTHON", "python3")
TOKEN = "bench-setup-token"
EDITIONS = ("zh", "en")
NOTEBOOKS = {
    edition: [f"notebooks/{edition}/{p.name}" for p in sorted((ROOT / "notebooks" / edition).glob("0[0-9]_*.ipynb"))]
    for edition in EDITIONS
}
SCENARIOS = ("baseline", "no-compiler", "compiler")


@dataclass
class Result:
    scenario: str
    lab_seconds: float | None = None
    notebooks_ok: bool | None = None
    notebooks_seconds: float | None = None
    engine_state: str = ""
    engine_seconds: float | None = None
    engine_reason: str = ""
    load: float | None = None  # the 1-minute load average when the lab came up: other work on the machine
    notes: list[str] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def lab_is_live(port: int) -> bool:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/status", headers={"Authorization": f"token {TOKEN}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def lab_args(port: int) -> str:
    return f"--no-browser --port={port} --ServerApp.port_retries=0 --IdentityProvider.token={TOKEN}"


@contextlib.contextmanager
def running(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``command`` in its own process group, its output stamped with the seconds since it started.

    The whole group (and only it) is stopped afterwards.
    """
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )

    def copy() -> None:
        assert process.stdout is not None
        with log.open("w", encoding="utf-8") as out:
            for raw in process.stdout:
                out.write(f"{time.monotonic() - started:7.1f} | {raw.decode(errors='replace').rstrip()}\n")
                out.flush()

    copier = threading.Thread(target=copy, daemon=True)
    copier.start()
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        copier.join(timeout=5)


PHASES = (
    ("venv", "-m venv"),
    ("install", "pip install"),
    ("engine start", "scripts/local_engine.py start"),
    ("lab start", "jupyter lab"),
)


def phase_times(log: Path) -> str:
    """When each step of `make lab` began, read from the stamped log: where the time goes."""
    found = []
    with contextlib.suppress(OSError):
        lines = log.read_text(encoding="utf-8").splitlines()
        for name, sign in PHASES:
            stamp = next((line.split(" | ", 1)[0].strip() for line in lines if sign in line), None)
            if stamp is not None:
                found.append(f"{name} at {stamp} s")
    return "steps: " + ", ".join(found) if found else ""


def wait_for_lab(process: subprocess.Popen[bytes], port: int, started: float, timeout: float) -> float | None:
    while time.monotonic() - started < timeout:
        if lab_is_live(port):
            return time.monotonic() - started
        if process.poll() is not None:
            return None
        time.sleep(0.2)
    return None


def fresh_clone(target: Path) -> None:
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(target)], check=True)
    subprocess.run(["git", "-C", str(target), "checkout", "--quiet", commit], check=True)


def base_env(pip_cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PIP_CACHE_DIR"] = str(pip_cache)
    for name in ("VIRTUAL_ENV", "CAL_ENGINE_DIR", "CMAKE_ARGS", "CC", "CXX"):
        env.pop(name, None)
    return env


def run_notebooks(clone: Path, env: dict[str, str], out_dir: Path) -> tuple[bool, float, str]:
    """Execute both editions' notebooks 00-07 (a fresh kernel each).

    The editions share file names, so each gets its own output folder.
    """
    started = time.monotonic()
    errors = ""
    for edition, notebooks in NOTEBOOKS.items():
        if not notebooks:
            return False, time.monotonic() - started, f"no notebooks found in notebooks/{edition}"
        result = subprocess.run(
            [
                str(clone / ".venv/bin/jupyter"),
                "nbconvert",
                "--to",
                "notebook",
                "--execute",
                "--ExecutePreprocessor.timeout=300",
                "--output-dir",
                str(out_dir / edition),
                *notebooks,
            ],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            errors += result.stderr[-2000:]
    return not errors, time.monotonic() - started, errors


def engine_status(clone: Path, env: dict[str, str]) -> dict[str, str]:
    result = subprocess.run(
        [str(clone / ".venv/bin/python"), "scripts/local_engine.py", "status", "--json"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        data = json.loads(result.stdout)
    except ValueError:
        return {"state": "unknown", "reason": result.stdout[-300:] + result.stderr[-300:]}
    return data if isinstance(data, dict) else {"state": "unknown"}


def stop_builder(clone: Path) -> None:
    """End the background build this benchmark's `make lab` started (its pid is in state.json)."""
    state_file = clone / ".venv" / "codeagent-lite-engine" / "state.json"
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        state = json.loads(state_file.read_text(encoding="utf-8"))
        if state.get("returncode") is None:
            os.killpg(int(state["pid"]), signal.SIGTERM)


def bench_make_lab(scenario: str, work: Path, engine_timeout: float) -> Result:
    result = Result(scenario)
    clone, cache, outputs = work / "clone", work / "pip-cache", work / "executed"
    cache.mkdir()
    outputs.mkdir()
    fresh_clone(clone)
    env = base_env(cache)
    if scenario == "no-compiler":
        env.update(CC="/bin/false", CXX="/bin/false")
    port = free_port()
    started = time.monotonic()
    try:
        with running(["make", "lab", f"LAB_ARGS={lab_args(port)}"], clone, env, work / "make-lab.log") as lab:
            result.lab_seconds = wait_for_lab(lab, port, started, timeout=600)
            result.load = os.getloadavg()[0]
            if result.lab_seconds is None:
                result.notes.append(
                    "lab never answered; end of its log:\n" + (work / "make-lab.log").read_text()[-1500:]
                )
                return result
            print(f"  {scenario}: lab live after {result.lab_seconds:.1f} s", flush=True)
            result.notes.append(phase_times(work / "make-lab.log") + f", lab live at {result.lab_seconds:.1f} s")
            ok, seconds, errors = run_notebooks(clone, env, outputs)
            result.notebooks_ok, result.notebooks_seconds = ok, seconds
            if not ok:
                result.notes.append("notebook run failed:\n" + errors)
            print(f"  {scenario}: notebooks 00-07 (zh, en) {'ran' if ok else 'FAILED'} in {seconds:.1f} s", flush=True)
            while True:
                status = engine_status(clone, env)
                elapsed = time.monotonic() - started
                if status.get("state") not in ("building", "not installed") or elapsed > engine_timeout:
                    break
                time.sleep(5)
            result.engine_state = str(status.get("state"))
            result.engine_reason = str(status.get("reason") or "")
            result.engine_seconds = elapsed
            print(f"  {scenario}: engine {result.engine_state} after {elapsed:.0f} s", flush=True)
    finally:
        stop_builder(clone)
    return result


def bench_baseline(work: Path) -> Result:
    result = Result("baseline")
    cache = work / "pip-cache"
    cache.mkdir()
    env = base_env(cache)
    venv = work / "venv"
    port = free_port()
    started = time.monotonic()
    subprocess.run([PYTHON, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "--quiet", "jupyterlab"], env=env, check=True)
    command = [str(venv / "bin/jupyter"), "lab", *lab_args(port).split()]
    if os.geteuid() == 0:
        command.append("--allow-root")
    with running(command, work, env, work / "lab.log") as lab:
        result.lab_seconds = wait_for_lab(lab, port, started, timeout=600)
        result.load = os.getloadavg()[0]
    return result


def report(results: list[Result]) -> None:
    baseline = next((r.lab_seconds for r in results if r.scenario == "baseline"), None)
    print(f"\nfresh clone -> JupyterLab /api/status 200, empty pip cache, {os.cpu_count()} cores")
    print(
        f"{'scenario':<12} {'lab live':>9} {'vs baseline':>12} {'load':>5} {'notebooks 00-07':>16} {'local engine':>30}"
    )
    for r in results:
        lab = "-" if r.lab_seconds is None else f"{r.lab_seconds:.1f} s"
        ratio = "-" if r.lab_seconds is None or not baseline else f"{r.lab_seconds / baseline:.2f}x"
        books = "-" if r.notebooks_ok is None else f"{'ok' if r.notebooks_ok else 'FAILED'} {r.notebooks_seconds:.0f} s"
        engine = "-" if not r.engine_state else f"{r.engine_state} after {r.engine_seconds:.0f} s"
        load = "-" if r.load is None else f"{r.load:.1f}"
        print(f"{r.scenario:<12} {lab:>9} {ratio:>12} {load:>5} {books:>16} {engine:>30}")
        if r.engine_reason:
            print(f"{'':<12} engine: {r.engine_reason}")
        for note in r.notes:
            print(f"{'':<12} {note}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", action="append", choices=SCENARIOS, help="run only these (repeatable)")
    parser.add_argument("--engine-timeout", type=float, default=1800.0, help="stop following the engine after this")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders")
    args = parser.parse_args(argv)
    results = []
    for scenario in args.scenario or SCENARIOS:
        work = Path(tempfile.mkdtemp(prefix=f"bench-setup-{scenario}-"))
        print(f"{scenario}: in {work}", flush=True)
        try:
            if scenario == "baseline":
                results.append(bench_baseline(work))
            else:
                results.append(bench_make_lab(scenario, work, args.engine_timeout))
        finally:
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
    report(results)
    return 0 if all(r.lab_seconds is not None and r.notebooks_ok is not False for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
