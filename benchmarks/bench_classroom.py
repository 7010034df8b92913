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

- time per notebook (median and slowest), as a ratio to the baseline, and the model's output tokens per second
  for the whole class (every run's generated tokens over the slowest run's time);
- failures: runs that raised, timed out, did not reach the model (the notebook fell back to its recorded outputs),
  or had a model call fail (asked of the notebook's own variables in the same kernel afterwards, never read from
  its words);
- reported apart, not as failures: runs whose model text differs from the notebook saved in the repository (which
  was recorded through llama-cpp-python's server, while the class may be served by llama-server: another engine
  gives other greedy text) and from the student who ran alone (the same engine: batching changed the text);
- memory per student: PSS (proportional set size: shared pages split between the processes sharing them, so the
  figures add up) of the student's server plus kernel, and the machine's MemAvailable drop divided by the class.
"""

from __future__ import annotations

import argparse
import contextlib
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
    output_tokens: int
    differ_saved: int  # runs whose model text differs from the saved notebook (not failures)
    differ_alone: int  # runs whose model text differs from the student alone's (not failures)
    pss_per_student_mb: float
    available_drop_per_student_mb: float  # since before the hub started (the model step: since just before it)
    hub_pss_mb: float

    @property
    def tokens_per_s(self) -> float:
        return self.output_tokens / self.slowest_s if self.slowest_s else float("nan")


# Run in each student's kernel after notebook 06: how its model calls went, from the notebook's own variables.
AUDIT = """
import json
from codeagent_lite.agent.loop import StopReason
_attempts = [*globals().get("free_attempts", []), *globals().get("schema_attempts", [])]
if globals().get("cut_off") is not None:
    _attempts.append(cut_off)
_runs = globals().get("runs", {})
_failed = [str(a.error)[:300] for a in _attempts if a.error is not None]
_failed += [f"agent run {n}: {t.stop_reason}" for n, t in _runs.items() if t.stop_reason is StopReason.PROVIDER_ERROR]
_out = sum(a.usage.output_tokens for a in _attempts if a.usage is not None)
_out += sum(t.usage.output_tokens for t in _runs.values())
_calls = len(_attempts) + sum(t.model_calls for t in _runs.values())
print(json.dumps({"live": bool(globals().get("LIVE")), "calls": _calls, "output_tokens": _out, "failed": _failed}))
"""


def pss_mb(processes: list[psutil.Process]) -> float:
    total = 0
    for process in processes:
        try:
            total += process.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total / MB


@dataclass(frozen=True)
class ClassRun:
    """What the class's runs of the notebook gave: one line per failed run, and the text differences apart."""

    seconds: list[float]
    failures: list[str]
    output_tokens: int
    differ_saved: list[str]
    differ_alone: list[str]
    outputs: dict[int, str]  # the first finished run's outputs by cell: the baseline for the next steps


def learner_cells(notebook: str) -> set[int]:
    """Cells that verify the learner's own files: the saved notebook judged the teacher's solution there."""
    cells = json.loads((REPO / notebook).read_text(encoding="utf-8"))["cells"]
    return {index for index, cell in enumerate(cells) if "LEARNER_DIR" in "".join(cell["source"])}


def audit_failure(run: hub_client.NotebookRun, model: bool) -> str:
    """Why a finished run failed ('' when it did not): a cell raised, or (with a model) a model call went wrong."""
    if run.errors:
        return run.errors[0]
    if not model:
        return ""
    try:
        audit = json.loads(run.afterwards.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return f"the audit after the notebook printed {run.afterwards[-200:]!r}"
    if not audit["live"]:
        return "the notebook did not reach the model and showed its recorded outputs"
    return (
        f"{len(audit['failed'])} of {audit['calls']} model calls failed: {audit['failed'][0]}"
        if audit["failed"]
        else ""
    )


def run_class(
    hub: hub_client.RunningHub, students: list[str], notebook: str, timeout_s: float, alone: dict[int, str]
) -> ClassRun:
    """Every student runs the notebook at once; alone: the baseline's outputs (empty for the baseline itself)."""
    model = Path(notebook).stem.startswith("06")

    def one(student: str) -> hub_client.NotebookRun | str:
        try:
            then = AUDIT if model else ""
            return hub_client.run_notebook(
                hub, student, notebook, cell_timeout_s=timeout_s, keep_kernel=True, then=then
            )
        except hub_client.ClassroomError as error:
            return f"{student}: {error}"[:300]

    with ThreadPoolExecutor(max_workers=len(students)) as pool:
        results = list(pool.map(one, students))
    finished = [result for result in results if not isinstance(result, str)]
    failures = [result for result in results if isinstance(result, str)]
    skip = learner_cells(notebook)
    differ_saved, differ_alone, tokens = [], [], 0
    for result in finished:
        failure = audit_failure(result, model)
        if failure:
            failures.append(f"{result.student}: {failure}"[:300])
        if model and result.afterwards.strip():
            with contextlib.suppress(ValueError, IndexError, KeyError):
                tokens += int(json.loads(result.afterwards.strip().splitlines()[-1])["output_tokens"])
        saved = [
            d
            for d in hub_client.differences_from_saved(result, REPO / notebook)
            if not any(f" cell {i}:" in d for i in skip)
        ]
        if saved:
            differ_saved.append(saved[0][:300])
        outputs = hub_client.comparable_outputs(result)
        changed = [i for i, text in outputs.items() if alone and i not in skip and alone.get(i) != text]
        if changed:
            differ_alone.append(f"{result.student}: cells {changed}")
    baseline = hub_client.comparable_outputs(finished[0]) if finished else {}
    return ClassRun([r.seconds for r in finished], failures, tokens, differ_saved, differ_alone, alone or baseline)


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
    alone: dict[int, str],
) -> tuple[Step, dict[int, str]]:
    started = time.monotonic()
    if new_students:
        hub_client.start_servers(hub, new_students)
        hub_client.wait_until_ready(hub, new_students, timeout_s=600)
    spawn_s = time.monotonic() - started
    result = run_class(hub, students, notebook, timeout_s, alone)
    for kind, notes in (("failure", result.failures), ("differs from saved", result.differ_saved)):
        for note in notes[:3]:
            print(f"    {kind}: {note}", flush=True)
    for note in result.differ_alone[:3]:
        print(f"    differs from the student alone: {note}", flush=True)
    servers = hub_client.server_processes(hub)
    per_student = [pss_mb(servers.get(student, [])) for student in students]
    everything = hub_client.hub_processes(hub)
    student_pids = {process.pid for group in servers.values() for process in group}
    hub_pss = pss_mb([process for process in everything if process.pid not in student_pids])
    drop_mb = (available_before - psutil.virtual_memory().available) / MB
    shut_down_kernels(hub, students)
    step = Step(
        label=label,
        students=len(students),
        spawn_s=spawn_s,
        median_s=statistics.median(result.seconds) if result.seconds else float("nan"),
        slowest_s=max(result.seconds) if result.seconds else float("nan"),
        failures=len(result.failures),
        output_tokens=result.output_tokens,
        differ_saved=len(result.differ_saved),
        differ_alone=len(result.differ_alone),
        pss_per_student_mb=statistics.median(per_student),
        available_drop_per_student_mb=drop_mb / len(students),
        hub_pss_mb=hub_pss,
    )
    return step, result.outputs


HEADER = (
    f"{'step':<22} {'students':>8} {'spawn s':>8} {'median s':>9} {'slowest s':>9} {'vs alone':>8} "
    f"{'failures':>8} {'tok/s':>6} {'≠saved':>6} {'≠alone':>6} {'PSS MB/st':>9} {'drop MB/st':>9} {'hub MB':>7}"
)


def print_first(hub: hub_client.RunningHub, mark: str) -> None:
    said = [line.strip() for line in hub.log_path.read_text(encoding="utf-8").splitlines() if mark in line]
    print(said[0] if said else f"{mark.strip()} (the hub's log does not say)", flush=True)


def print_step(step: Step, baseline_s: float) -> None:
    ratio = step.median_s / baseline_s if baseline_s else float("nan")
    print(
        f"{step.label:<22} {step.students:>8} {step.spawn_s:>8.1f} {step.median_s:>9.2f} {step.slowest_s:>9.2f} "
        f"{ratio:>7.1f}x {step.failures:>8} {step.tokens_per_s:>6.1f} {step.differ_saved:>6} {step.differ_alone:>6} "
        f"{step.pss_per_student_mb:>9.0f} {step.available_drop_per_student_mb:>9.0f} {step.hub_pss_mb:>7.0f}",
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
    label = Path(arguments.notebook).stem[:2]
    with tempfile.TemporaryDirectory(prefix="cal-bench-classroom-") as folder:
        available_before = psutil.virtual_memory().available
        settings = {"CAL_HUB_STUDENTS": str(sizes[-1]), "CAL_HUB_SPAWN_TIMEOUT": "600", "CAL_HUB_MODEL": "1"}
        with hub_client.classroom(Path(folder), settings, ready_timeout_s=180) as (hub, seen):
            print_first(hub, "  model:")
            print(HEADER, flush=True)
            everyone = sorted(hub.students)
            measure = (arguments.notebook, available_before, arguments.cell_timeout)
            baseline, alone = measure_step(hub, "alone (baseline)", everyone[:1], everyone[:1], *measure, {})
            print_step(baseline, baseline.median_s)
            print_first(hub, "local model server:")  # the service's own first line, written once it started
            steps = []
            running = 1
            for size in sizes:
                fresh = everyone[running:size]
                step, _ = measure_step(hub, f"notebook {label} x{size}", everyone[:size], fresh, *measure, alone)
                running = max(running, size)
                steps.append(step)
                print_step(step, baseline.median_s)
                seen.extend(hub_client.hub_processes(hub))
        print(f"load average {' '.join(f'{value:.1f}' for value in os.getloadavg())} at the end", flush=True)
        summarize(memory.total / MB, steps)
    return 0


GOAL_S = 180.0  # issue 19: 20 students all done within 3 minutes


def summarize(total_mb: float, steps: list[Step]) -> None:
    """Plain extrapolation: usable memory divided by the measured cost per student; the model's rate the goal needs."""
    usable = total_mb - RESERVE_MB
    largest = steps[-1]
    per_student = largest.pss_per_student_mb + largest.hub_pss_mb / largest.students
    print(
        f"{largest.students} students at once: {largest.failures} failures, median notebook {largest.median_s:.1f} s, "
        f"slowest {largest.slowest_s:.1f} s; {per_student:.0f} MB per student (server + kernel PSS plus a share of "
        f"the hub and its services); {usable / 1024:.1f} GB usable holds about {int(usable // per_student)} by memory."
    )
    if largest.output_tokens:
        print(
            f"the model generated {largest.output_tokens} tokens for them at {largest.tokens_per_s:.1f} tokens/s; "
            f"all done within {GOAL_S:.0f} s needs at least {largest.output_tokens / GOAL_S:.0f} tokens/s "
            "(before reading any prompt)."
        )


if __name__ == "__main__":
    raise SystemExit(main())
