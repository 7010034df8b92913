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

- time per notebook (median and slowest), as a ratio to the baseline, and output tokens per second for the whole
  class (every run's reply tokens over the slowest run's time);
- the class's reply cache (classroom/reply_cache.py, in front of the model): how many of the class's
  model calls reached the model and how many got a reply it had already written for an identical request
  ("shared"), and the tokens the model itself wrote per second (its own count, GET /class-cache); the cache is
  emptied before each step, so each measures a class that starts together with nothing stored;
- failures: runs that raised, timed out, did not reach the model (the notebook fell back to its recorded outputs),
  or had a model call fail (asked of the notebook's own variables in the same kernel afterwards, never read from
  its words);
- reported apart, not as failures: runs whose model text differs from the notebook saved in the repository (which
  was recorded through llama-cpp-python's server, while the class may be served by llama-server: another engine
  gives other greedy text) and from the student who ran alone (the same engine: batching changed the text);
- memory per student: PSS (proportional set size: shared pages split between the processes sharing them, so the
  figures add up) of the student's server plus kernel, and the machine's MemAvailable drop divided by the class.

A run killed outright (SIGKILL, or the machine's OOM killer) runs no clean-up, and its accounts, hub and folder would
stay. So the first thing a run does is write where its class lives to RECORD; the next run cleans up after a run
that is gone before it starts, and so can a teacher by hand: `classroom/accounts.py remove --roster ROSTER` (the
roster the record names), then delete the folder it names.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pwd
import shutil
import signal
import statistics
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psutil  # type: ignore[import-untyped]  # psutil ships no type hints

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "classroom"))

import accounts  # noqa: E402  (classroom/ is a folder of files, not a package)
import class_model  # noqa: E402
import hub_client  # noqa: E402

MODEL_NOTEBOOK = "notebooks/zh/06_real_model.ipynb"
MB = 1024 * 1024
# Memory kept free for the operating system, the hub and the teacher when extrapolating.
RESERVE_MB = 2048
MAX_STUDENTS = 200  # classroom/jupyterhub_config.py's limit
RECORD = Path("/var/tmp/codeagent-lite-bench-classroom.json")
"""Where the running benchmark's class lives (root's alone): what the next run cleans up if this one is killed."""


def record_run(folder: Path) -> Path:
    """Write, before anything is made, where this run's class will be: the roster names its accounts."""
    record = RECORD
    roster = folder / "state" / "roster.csv"
    text = json.dumps({"pid": os.getpid(), "folder": str(folder), "roster": str(roster)})
    partial = record.with_name(record.name + ".partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(partial, record)
    print(f"this run's class: {folder}, roster {roster} (recorded in {record} for a clean-up if it is killed)")
    return roster


def _kill_tree(pid_file: Path, name: str) -> None:
    """End a process the killed run left (by its pid file), and everything it started, if it is still that one."""
    with contextlib.suppress(OSError, ValueError, psutil.Error):
        process = psutil.Process(int(pid_file.read_text(encoding="ascii").strip()))
        if name in " ".join(process.cmdline()):
            for child in [*process.children(recursive=True), process]:
                with contextlib.suppress(psutil.Error):
                    child.send_signal(signal.SIGKILL)


def clean_up_killed_run() -> str:
    """Remove what a killed run left (its hub, its accounts and their processes, its folder); '' when none."""
    record = RECORD
    try:
        found = json.loads(record.read_text(encoding="utf-8"))
        pid, folder, roster = int(found["pid"]), Path(found["folder"]), Path(found["roster"])
    except FileNotFoundError:
        return ""
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise SystemExit(f"{record} is not a benchmark's record ({error}); look at it and delete it") from None
    with contextlib.suppress(psutil.Error):
        if "bench_classroom" in " ".join(psutil.Process(pid).cmdline()):
            raise SystemExit(f"another benchmark (pid {pid}) is running its class in {folder}; one at a time")
    state = roster.parent
    _kill_tree(state / "jupyterhub.pid", "jupyterhub")
    _kill_tree(state / "proxy.pid", "configurable-http-proxy")
    people = list(accounts.read_roster(roster).values()) if roster.is_file() else []
    uids = {pwd.getpwnam(person.account).pw_uid for person in people if accounts.is_class_account(person.account)}
    for process in psutil.process_iter(["uids"]):
        with contextlib.suppress(psutil.Error):
            if process.info["uids"] and process.info["uids"].real in uids:
                process.send_signal(signal.SIGKILL)
    removed = accounts.remove_accounts(people)
    shutil.rmtree(folder, ignore_errors=True)
    record.unlink()
    return f"cleaned up after a killed run (pid {pid}): {len(removed)} class accounts removed, {folder} deleted"


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
    cache: dict[str, int]  # the reply cache's counts over this step: miss, bypass, hit, joined, model_tokens

    @property
    def tokens_per_s(self) -> float:
        return self.output_tokens / self.slowest_s if self.slowest_s else float("nan")

    @property
    def model_tokens_per_s(self) -> float:
        return self.cache.get("model_tokens", 0) / self.slowest_s if self.slowest_s else float("nan")

    @property
    def shared(self) -> str:
        """Calls answered by the reply cache out of all the class's calls, e.g. '456/480'."""
        shared = self.cache.get("hit", 0) + self.cache.get("joined", 0)
        return f"{shared}/{shared + self.cache.get('miss', 0) + self.cache.get('bypass', 0)}"


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


def empty_reply_cache(hub: hub_client.RunningHub) -> None:
    """Each step starts with nothing stored, as a class does that starts together: SIGHUP empties the store."""
    for process in hub_client.hub_processes(hub):
        with contextlib.suppress(psutil.Error):
            if f"/{class_model.CACHE_FILE} " in " ".join(process.cmdline()):
                process.send_signal(signal.SIGHUP)


def wait_for_the_model(port: int, timeout_s: float = 600.0) -> None:
    """The class starts once the class model answers, as a teacher would wait for it (the hub says when)."""
    started = time.monotonic()
    while not cache_counts(port) and time.monotonic() - started < timeout_s:
        time.sleep(1)
    waited = time.monotonic() - started
    print(f"class model: {'answering' if cache_counts(port) else 'NOT answering'} after {waited:.0f} s", flush=True)


def cache_counts(port: int) -> dict[str, int]:
    """The class reply cache's counts now (empty when it does not answer: no class model, or another engine)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/class-cache", timeout=10) as answer:
            counts = json.loads(answer.read(100_000))
    except (OSError, ValueError):
        return {}
    return {name: value for name, value in counts.items() if isinstance(value, int)}


def measure_step(
    hub: hub_client.RunningHub,
    label: str,
    students: list[str],
    new_students: list[str],
    notebook: str,
    available_before: int,
    timeout_s: float,
    alone: dict[int, str],
    model_port: int,
) -> tuple[Step, dict[int, str]]:
    started = time.monotonic()
    if new_students:
        hub_client.start_servers(hub, new_students)
        hub_client.wait_until_ready(hub, new_students, timeout_s=600)
    spawn_s = time.monotonic() - started
    empty_reply_cache(hub)
    counted = cache_counts(model_port)
    result = run_class(hub, students, notebook, timeout_s, alone)
    cache = {name: value - counted.get(name, 0) for name, value in cache_counts(model_port).items()}
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
        cache=cache,
    )
    return step, result.outputs


HEADER = (
    f"{'step':<22} {'students':>8} {'spawn s':>8} {'median s':>9} {'slowest s':>9} {'vs alone':>8} "
    f"{'failures':>8} {'tok/s':>6} {'shared':>9} {'model tok/s':>11} {'≠saved':>6} {'≠alone':>6} {'PSS MB/st':>9} "
    f"{'drop MB/st':>9} {'hub MB':>7}"
)


def print_first(hub: hub_client.RunningHub, mark: str) -> None:
    said = [line.strip() for line in hub.log_path.read_text(encoding="utf-8").splitlines() if mark in line]
    print(said[0] if said else f"{mark.strip()} (the hub's log does not say)", flush=True)


def print_step(step: Step, baseline_s: float) -> None:
    ratio = step.median_s / baseline_s if baseline_s else float("nan")
    print(
        f"{step.label:<22} {step.students:>8} {step.spawn_s:>8.1f} {step.median_s:>9.2f} {step.slowest_s:>9.2f} "
        f"{ratio:>7.1f}x {step.failures:>8} {step.tokens_per_s:>6.1f} {step.shared:>9} "
        f"{step.model_tokens_per_s:>11.1f} {step.differ_saved:>6} {step.differ_alone:>6} "
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
    print(clean_up_killed_run() or f"no class left by a killed run ({RECORD})", flush=True)
    try:
        with tempfile.TemporaryDirectory(prefix="cal-bench-classroom-") as folder:
            record_run(Path(folder))
            steps = run(Path(folder), sizes, arguments.notebook, arguments.cell_timeout)
    finally:
        RECORD.unlink(missing_ok=True)  # the class's own clean-up ran: nothing is left for the next run
    print(f"load average {' '.join(f'{value:.1f}' for value in os.getloadavg())} at the end", flush=True)
    summarize(memory.total / MB, steps)
    return 0


def run(folder: Path, sizes: list[int], notebook: str, cell_timeout: float) -> list[Step]:
    """The baseline, then each class size, in one class made in folder (and removed after)."""
    label = Path(notebook).stem[:2]
    available_before = psutil.virtual_memory().available
    model_port = hub_client.free_port()
    settings = {
        "CAL_HUB_STUDENTS": str(sizes[-1]),
        "CAL_HUB_SPAWN_TIMEOUT": "600",
        "CAL_HUB_MODEL": "1",
        "CAL_HUB_MODEL_PORT": str(model_port),
    }
    with hub_client.classroom(folder, settings, ready_timeout_s=180) as (hub, seen):
        print_first(hub, "  model:")
        wait_for_the_model(model_port)
        print(HEADER, flush=True)
        everyone = sorted(hub.students)
        measure = (notebook, available_before, cell_timeout)
        baseline, alone = measure_step(hub, "alone (baseline)", everyone[:1], everyone[:1], *measure, {}, model_port)
        print_step(baseline, baseline.median_s)
        print_first(hub, "local model server:")  # the service's own first line, written once it started
        print_first(hub, "class reply cache:")
        steps = []
        running = 1
        for size in sizes:
            fresh = everyone[running:size]
            label_size = f"notebook {label} x{size}"
            step, _ = measure_step(hub, label_size, everyone[:size], fresh, *measure, alone, model_port)
            running = max(running, size)
            steps.append(step)
            print_step(step, baseline.median_s)
            seen.extend(hub_client.hub_processes(hub))
    return steps


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
            f"their replies held {largest.output_tokens} tokens, {largest.tokens_per_s:.1f} tokens/s for the class; "
            f"each generated separately, all done within {GOAL_S:.0f} s would need at least "
            f"{largest.output_tokens / GOAL_S:.0f} tokens/s (before reading any prompt)."
        )
    if largest.cache:
        print(
            f"the class's reply cache answered {largest.shared} of their model calls with a reply already written "
            f"for an identical request; the model itself wrote {largest.cache.get('model_tokens', 0)} tokens, "
            f"{largest.model_tokens_per_s:.1f} tokens/s."
        )


if __name__ == "__main__":
    raise SystemExit(main())
