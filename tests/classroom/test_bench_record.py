"""The classroom benchmark records where its class lives before making it, and a later run cleans up after one that
was killed outright (SIGKILL runs no clean-up): its hub, its accounts and their processes, its folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil  # type: ignore[import-untyped]  # psutil ships no type hints
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "classroom"))

import accounts  # noqa: E402
import bench_classroom  # noqa: E402

ROOT = os.geteuid() == 0


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "record.json"
    monkeypatch.setattr(bench_classroom, "RECORD", path)
    return path


def sleeper(*words: str) -> subprocess.Popen[bytes]:
    """A process whose command line holds words (as a hub's or a benchmark's would), until it is killed."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", *words])


def test_the_run_records_its_roster_before_it_makes_anything(
    tmp_path: Path, record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[str, object]] = []

    def run(folder: Path, *_: object) -> list[object]:
        seen.append(json.loads(record.read_text(encoding="utf-8")))  # as the class is about to be made
        raise RuntimeError("the class fails to start")

    monkeypatch.setattr(bench_classroom, "run", run)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(sys, "argv", ["bench_classroom.py", "--sizes", "2"])
    with pytest.raises(RuntimeError):
        bench_classroom.main()
    (found,) = seen
    assert found["pid"] == os.getpid()
    assert found["roster"] == str(Path(str(found["folder"])) / "state" / "roster.csv")
    assert not record.exists(), "a run that ended by itself cleaned up its class and leaves no record"


def test_a_killed_runs_hub_and_folder_are_cleaned_up_by_the_next_run(tmp_path: Path, record: Path) -> None:
    folder = tmp_path / "cal-bench-classroom-x"
    (folder / "state").mkdir(parents=True)
    hub = sleeper("jupyterhub", "-f", "jupyterhub_config.py")
    stranger = sleeper("not-a-hub")
    try:
        (folder / "state" / "jupyterhub.pid").write_text(str(hub.pid), encoding="ascii")
        (folder / "state" / "proxy.pid").write_text(str(stranger.pid), encoding="ascii")  # not the proxy: kept
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        killed = {"pid": int(gone.stdout), "folder": str(folder), "roster": str(folder / "state" / "roster.csv")}
        record.write_text(json.dumps(killed), encoding="utf-8")
        said = bench_classroom.clean_up_killed_run()
        assert said.startswith(f"cleaned up after a killed run (pid {killed['pid']})"), said
        assert hub.wait(timeout=10) == -9
        assert stranger.poll() is None, "a pid file naming another program is not obeyed"
        assert not folder.exists() and not record.exists()
        assert bench_classroom.clean_up_killed_run() == ""  # nothing left
    finally:
        for process in (hub, stranger):
            process.kill()
            process.wait()


def test_a_run_still_going_is_never_cleaned_up(tmp_path: Path, record: Path) -> None:
    running = sleeper("benchmarks/bench_classroom.py")
    try:
        time.sleep(0.2)
        record.write_text(json.dumps({"pid": running.pid, "folder": str(tmp_path), "roster": "r.csv"}), "utf-8")
        with pytest.raises(SystemExit, match=f"another benchmark \\(pid {running.pid}\\) is running its class"):
            bench_classroom.clean_up_killed_run()
        assert record.exists() and tmp_path.exists()
    finally:
        running.kill()
        running.wait()


@pytest.mark.skipif(not ROOT, reason="making a class account needs root (CI runs as root)")
def test_a_killed_runs_accounts_and_their_processes_are_removed(tmp_path: Path, record: Path) -> None:
    folder = tmp_path / "run"
    (folder / "state").mkdir(parents=True)
    student = accounts.Person("calbenchleft", accounts.STUDENT, password="Left-behind-1")
    roster = folder / "state" / "roster.csv"
    accounts.write_roster(roster, [student, accounts.Person("root", accounts.TEACHER)])
    accounts.create_accounts([student], tmp_path / "home")
    tmp_path.chmod(0o755)
    leftover = subprocess.Popen(
        ["setpriv", "--reuid=calbenchleft", "--regid=calbenchleft", "--init-groups", "sleep", "120"]
    )
    try:
        time.sleep(0.3)
        record.write_text(json.dumps({"pid": 2**22 + 1, "folder": str(folder), "roster": str(roster)}), "utf-8")
        said = bench_classroom.clean_up_killed_run()
        assert "1 class accounts removed" in said, said
        assert leftover.wait(timeout=10) == -9
        assert not accounts.is_class_account("calbenchleft")
        assert psutil.Process(1).is_running()  # root, on the roster as the teacher, is never touched
    finally:
        leftover.kill()
        leftover.wait()
        accounts.remove_accounts([student])
