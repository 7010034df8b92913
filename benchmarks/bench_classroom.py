"""How a class of N students runs notebook 06 together against one model for the class, through the real hub.

    make bench-classroom                                       # 1 alone, then 10 and 20 at once, notebook 06
    .venv/bin/python benchmarks/bench_classroom.py --sizes 10,20 --notebook notebooks/zh/03_adapter_flow.ipynb

Needs root, as a class does (each student a Unix account, made for the run and removed after it). One hub
(classroom/jupyterhub_config.py, the real proxy, the real login, the students' shared install) from a private copy
of the checkout; where the engine is built the hub starts the class model server once as a service and every
student's notebook 06 reaches it through CAL_LOCAL_MODEL_URL (the first line says whether it did). The baseline is
one student alone, measured in the same run; then the class grows to each size (the new servers start together),
every student runs the notebook at the same moment over the kernel websocket, and while all kernels still hold
their state the script measures:

- time per notebook (median and slowest), as a ratio to the baseline;
- failures: runs that raised, timed out, or whose outputs differ from the notebook saved in the repository;
- memory per student: PSS (proportional set size: shared pages split between the processes sharing them, so the
  figures add up) of the student's server plus kernel, and the machine's MemAvailable drop divided by the class.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psutil  # type: ignore[import-untyped]  # psutil ships no type hints

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "classroom"))

import hub_client  # noqa: E402  (classroom/ is a folder of files, not a package)

MODEL_NOTEBOOK = "notebooks/zh/06_real_model.ipynb"
MB = 1024 * 1024
# Memory kept free for the operating system, the hub and the teacher when extrapolating.
RESERVE_MB = 2048
MAX_STUDENTS = 200  # classroom/jupyterhub_config.py's limit


@dataclass(frozen=True)
class Step:
    label: str
    students: int
    spawn_s: float
    median_s: float
    slowest_s: float
    failures: int
    pss_per_student_mb: float
    available_drop_per_student_mb: float  # since before the hub started (the model step: since just before it)
    hub_pss_mb: float


def pss_mb(processes: list[psutil.Process]) -> float:
    total = 0
    for process in processes:
        try:
            total += process.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total / MB


def run_class(
    hub: hub_client.RunningHub, students: list[str], notebook: str, timeout_s: float
) -> tuple[list[float], list[str]]:
    """Every student runs the notebook at once; returns (seconds per finished run, one note per failed run)."""

    def one(student: str) -> hub_client.NotebookRun | str:
        try:
            return hub_client.run_notebook(hub, student, notebook, cell_timeout_s=timeout_s, keep_kernel=True)
        except hub_client.ClassroomError as error:
            return f"{student}: {error}"[:300]

    with ThreadPoolExecutor(max_workers=len(students)) as pool:
        results = list(pool.map(one, students))
    seconds, notes = [], []
    for result in results:
        if isinstance(result, str):
            notes.append(result)
            continue
        seconds.append(result.seconds)
        # The saved notebook verifies the teacher's solution; in class, verify judges the student's own stubs.
        learner_cells = {
            index
            for index, cell in enumerate(json.loads((REPO / notebook).read_text(encoding="utf-8"))["cells"])
            if "LEARNER_DIR" in "".join(cell["source"])
        }
        differences = hub_client.differences_from_saved(result, REPO / notebook)
        problems = result.errors + [d for d in differences if not any(f" cell {i}:" in d for i in learner_cells)]
        if problems:
            notes.append(f"{result.student}: {problems[0][:300]}")
    return seconds, notes


def shut_down_kernels(hub: hub_client.RunningHub, students: list[str]) -> None:
    for student in students:
        sessions = hub.request("GET", f"/user/{student}/api/sessions")
        if sessions.status == 200:
            for session in sessions.json():
                hub.request("DELETE", f"/user/{student}/api/sessions/{session['id']}")


def measure_step(
    hub: hub_client.RunningHub,
    label: str,
    students: list[str],
    new_students: list[str],
    notebook: str,
    available_before: int,
    timeout_s: float,
) -> Step:
    started = time.monotonic()
    if new_students:
        hub_client.start_servers(hub, new_students)
        hub_client.wait_until_ready(hub, new_students, timeout_s=600)
    spawn_s = time.monotonic() - started
    seconds, notes = run_class(hub, students, notebook, timeout_s)
    for note in notes[:5]:
        print(f"    failure: {note}", flush=True)
    servers = hub_client.server_processes(hub)
    per_student = [pss_mb(servers.get(student, [])) for student in students]
    everything = hub_client.hub_processes(hub)
    student_pids = {process.pid for group in servers.values() for process in group}
    hub_pss = pss_mb([process for process in everything if process.pid not in student_pids])
    drop_mb = (available_before - psutil.virtual_memory().available) / MB
    shut_down_kernels(hub, students)
    return Step(
        label=label,
        students=len(students),
        spawn_s=spawn_s,
        median_s=statistics.median(seconds) if seconds else float("nan"),
        slowest_s=max(seconds) if seconds else float("nan"),
        failures=len(notes),
        pss_per_student_mb=statistics.median(per_student),
        available_drop_per_student_mb=drop_mb / len(students),
        hub_pss_mb=hub_pss,
    )


def print_step(step: Step, baseline_s: float) -> None:
    ratio = step.median_s / baseline_s if baseline_s else float("nan")
    print(
        f"{step.label:<22} {step.students:>8} {step.spawn_s:>8.1f} {step.median_s:>9.2f} {step.slowest_s:>9.2f} "
        f"{ratio:>7.1f}x {step.failures:>8} {step.pss_per_student_mb:>9.0f} {step.available_drop_per_student_mb:>9.0f} "
        f"{step.hub_pss_mb:>7.0f}",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="10,20", help="class sizes, comma-separated (default 10,20)")
    parser.add_argument("--notebook", default=MODEL_NOTEBOOK, help=f"the notebook (default {MODEL_NOTEBOOK})")
    parser.add_argument("--cell-timeout", type=float, default=600.0, help="seconds one cell may take")
    arguments = parser.parse_args()
    try:
        sizes = sorted({int(text) for text in arguments.sizes.split(",")})
    except ValueError:
        parser.error(f"--sizes expects whole numbers separated by commas, found {arguments.sizes!r}")
    if not sizes or sizes[0] < 1 or sizes[-1] > MAX_STUDENTS:
        parser.error(f"--sizes must be between 1 and {MAX_STUDENTS}, found {arguments.sizes!r}")
    if os.geteuid() != 0:
        parser.error("a class needs root: each student is a Unix account of their own (sudo make bench-classroom)")

    memory = psutil.virtual_memory()
    print(
        f"machine: {psutil.cpu_count()} cores, {memory.total / MB / 1024:.1f} GB memory, "
        f"load average {' '.join(f'{value:.1f}' for value in os.getloadavg())} at the start",
        flush=True,
    )
    header = (
        f"{'step':<22} {'students':>8} {'spawn s':>8} {'median s':>9} {'slowest s':>9} {'vs alone':>8} "
        f"{'failures':>8} {'PSS MB/st':>9} {'drop MB/st':>9} {'hub MB':>7}"
    )
    label = Path(arguments.notebook).stem[:2]
    with tempfile.TemporaryDirectory(prefix="cal-bench-classroom-") as folder:
        available_before = psutil.virtual_memory().available
        settings = {"CAL_HUB_STUDENTS": str(sizes[-1]), "CAL_HUB_SPAWN_TIMEOUT": "600", "CAL_HUB_MODEL": "1"}
        with hub_client.classroom(Path(folder), settings, ready_timeout_s=180) as (hub, seen):
            model_line = [line for line in hub.log_tail(200).splitlines() if "model:" in line]
            print(model_line[-1].strip() if model_line else "model: (the hub did not say)", flush=True)
            print(header, flush=True)
            everyone = sorted(hub.students)
            baseline = measure_step(
                hub,
                "alone (baseline)",
                everyone[:1],
                everyone[:1],
                arguments.notebook,
                available_before,
                arguments.cell_timeout,
            )
            print_step(baseline, baseline.median_s)
            steps = []
            running = 1
            for size in sizes:
                step = measure_step(
                    hub,
                    f"notebook {label} x{size}",
                    everyone[:size],
                    everyone[running:size],
                    arguments.notebook,
                    available_before,
                    arguments.cell_timeout,
                )
                running = max(running, size)
                steps.append(step)
                print_step(step, baseline.median_s)
                seen.extend(hub_client.hub_processes(hub))
        print(f"load average {' '.join(f'{value:.1f}' for value in os.getloadavg())} at the end", flush=True)
        summarize(memory.total / MB, steps)
    return 0


def summarize(total_mb: float, steps: list[Step]) -> None:
    """Plain extrapolation: usable memory divided by the measured cost per student; CPU is stated, not modelled."""
    usable = total_mb - RESERVE_MB
    largest = steps[-1]
    per_student = largest.pss_per_student_mb + largest.hub_pss_mb / largest.students
    print(
        f"{largest.students} students at once: {largest.failures} failures, median notebook {largest.median_s:.1f} s, "
        f"slowest {largest.slowest_s:.1f} s; {per_student:.0f} MB per student (server + kernel PSS plus a share of "
        f"the hub and its services); {usable / 1024:.1f} GB usable holds about {int(usable // per_student)} by memory."
    )


if __name__ == "__main__":
    raise SystemExit(main())
