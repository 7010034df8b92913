"""One term of an nbgrader course, through the exchange, as the grading tests run it (not a test file itself).

The teacher generates and releases; every student fetches the release into a folder of their own, changes it and
submits; the teacher collects, autogrades, exports grades.csv and generates feedback. Every step is the real
nbgrader command, run by ``scripts/release_exercises.py``'s ``run_nbgrader`` (this environment's bin first on PATH,
a private HOME per person).

Who a submission belongs to: nbgrader 0.9.6 names it after ``nbgrader.utils.get_username()``, which is
``pwd.getpwuid(os.getuid())`` (the OS account; it does not read $USER or $LOGNAME, and only the account ``jovyan``
defers to JUPYTERHUB_USER), unless ``CourseDirectory.student_id`` is set. Here every student is the same OS account,
so each submits with ``--CourseDirectory.student_id=<name>``, as Zero to JupyterHub's pods do from JUPYTERHUB_USER
(classroom/jupyter_config/pod_student/nbgrader_config.py; the one-machine class gives each student an OS account of
their own instead). For the same reason collect runs with ``--ExchangeCollect.check_owner=False``: its owner check
would call every submission but the account's own a possible cheat.

Students fetch and submit four at a time (each command is a Python start-up of about a second).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

COURSE_ID = "codeagent-lite"


@dataclass(frozen=True)
class Student:
    """One student: a name, and what they do to their fetched copy (the assignment's folder) before submitting."""

    name: str
    work: Callable[[Path], None]


@dataclass(frozen=True)
class Term:
    course: Path
    fetched: dict[str, Path]
    grades: dict[str, dict[str, str]]
    log: str


def run_term(release: ModuleType, workdir: Path, assignment: str, students: Sequence[Student]) -> Term:
    """Generate, release, fetch/work/submit for each student, collect, autograde, export and generate feedback."""
    course = release.copy_course(workdir / "course")
    teacher = release.nbgrader_environment(workdir / "teacher-home")
    exchange = f"--Exchange.root={workdir / 'exchange'}"
    log: list[str] = []

    def nbgrader(*arguments: str, cwd: Path = course, environment: dict[str, str] = teacher) -> None:
        result = release.run_nbgrader(arguments, cwd, environment)
        log.append(f"$ nbgrader {' '.join(arguments)}\n{result.stdout}{result.stderr}")

    nbgrader("generate_assignment", assignment, "--force")
    nbgrader("release_assignment", assignment, exchange, "--force")

    def take_part(student: Student) -> Path:
        home = workdir / "students" / student.name
        desk = home / "work"
        desk.mkdir(parents=True)
        environment = release.nbgrader_environment(home / "home")
        course_flag = f"--course={COURSE_ID}"
        nbgrader("fetch_assignment", assignment, course_flag, exchange, cwd=desk, environment=environment)
        student.work(desk / assignment)
        nbgrader(
            "submit",
            assignment,
            course_flag,
            exchange,
            f"--CourseDirectory.student_id={student.name}",
            cwd=desk,
            environment=environment,
        )
        return desk / assignment

    with ThreadPoolExecutor(max_workers=4) as pool:
        fetched = dict(zip((s.name for s in students), pool.map(take_part, students), strict=True))
    nbgrader("collect", assignment, exchange, "--ExchangeCollect.check_owner=False")
    nbgrader("autograde", assignment, "--force")
    nbgrader("export", "--to", "grades.csv")
    nbgrader("generate_feedback", assignment, "--force")
    with (course / "grades.csv").open(encoding="utf-8", newline="") as handle:
        grades = {row["student_id"]: row for row in csv.DictReader(handle) if row["assignment"] == assignment}
    return Term(course, fetched, grades, "\n".join(log))
