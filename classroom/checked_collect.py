"""nbgrader's collect, for an exchange whose inbound folder every student can write (classroom/GRADING.md).

A student's submission folder is theirs until the teacher collects it, and ``nbgrader collect`` runs as root: its
``shutil.copytree`` follows a symbolic link the student left there (``-> /etc/shadow``, another student's home,
the course's hidden tests) and copies the target into the course, where the submission's own kernel reads it and
prints it into the student's feedback; a link to ``/dev/zero`` fills the disk, a FIFO stops collect for the class.
nbgrader also collects a folder named after another student, with a warning only.

``CheckedCollect`` is nbgrader's own ``ExchangeCollect`` (``c.ExchangeFactory.collect`` in nbgrader_config.py)
with one step before its copy: each submission is first copied, through file descriptors that never follow a
link, into a private folder (regular files and folders only, at most nbgrader's ``max_dir_size`` in all), and
nbgrader copies from there with its own rules. A submission is refused, named in collect's log with the reason,
when it holds anything else, is larger, lacks nbgrader's ``submission_secret.txt`` (release_feedback would stop
for the class), or belongs to a known account other than the one it is named after; the others are collected.

The time in a submission's name is the student's own word: any student can make a folder named as if it came before
the due date. Each submission's time is therefore the one the system vouches for, the last change (``st_ctime``,
which no student can set) of anything in it, and the name's time only when it falls in the minute before that, as
nbgrader's own submit writes it. That time picks among a student's submissions and is what the collected
``timestamp.txt`` says, so autograde's lateness is the system's. A name with no readable time no longer stops
collect for the class.
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import stat
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from nbgrader.exchange.default.collect import ExchangeCollect  # type: ignore[import-untyped]
from nbgrader.utils import parse_utc  # type: ignore[import-untyped]

from codeagent_lite.display import printable

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
MAX_ENTRIES = 10_000  # files and folders in one submission: an assignment has a handful
MAX_DEPTH = 32
SECRET = "submission_secret.txt"  # nbgrader's submit writes it; release_feedback needs it
TIMESTAMP = "timestamp.txt"  # what autograde reads a submission's time from
SUBMIT_SLACK = timedelta(minutes=1)  # submit takes its time first and copies after: so long may the copy take


class Refused(Exception):
    """A submission that is not collected, and why."""


class CheckedCollect(ExchangeCollect):  # type: ignore[misc]
    def _path_to_record(self, path: str) -> dict[str, Any]:
        """nbgrader's record of a submission folder, with the time the system vouches for (module docstring)."""
        username, _assignment, claim = Path(path).name.rsplit("+", 3)[:3]
        changed = last_change(Path(path))
        return {"username": username, "filename": Path(path).name, "timestamp": vouched_time(claim, changed)}

    def init_src(self) -> None:
        super().init_src()
        # nbgrader picked the newest submission of each name: a refused one must not hide an older honest one.
        by_student: dict[str, list[dict[str, Any]]] = {}
        pattern = f"{self.coursedir.student_id or '*'}+{self.coursedir.assignment_id}+*"
        for path in sorted(Path(self.inbound_path).glob(pattern)):
            record = self._path_to_record(str(path))
            problem = name_problem(record["username"])
            if problem is None and self.check_owner:
                problem = owner_problem(path, record["username"])
            if problem is None:
                by_student.setdefault(record["username"], []).append(record)
            else:
                self.log.error("Not collected: %s: %s", printable(record["filename"]), problem)
        self.src_records = [self._chosen(records) for records in by_student.values()]

    def _chosen(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """nbgrader's choice among one student's submissions: the newest, or the newest before the due date."""
        newest_first: list[dict[str, Any]] = self._sort_by_timestamp(records)
        if self.duedate is not None and self.before_duedate:
            in_time = [record for record in newest_first if record["timestamp"] <= self.duedate]
            return in_time[0] if in_time else newest_first[0]
        return newest_first[0]

    def do_copy(self, src: str, dest: str, log: Any = None) -> None:
        limit = 1000 * self.coursedir.max_dir_size  # nbgrader's own bound, in bytes
        with tempfile.TemporaryDirectory(prefix="checked-collect-") as private:
            staged = Path(private) / "submission"
            try:
                snapshot(Path(src), staged, limit)
            except Refused as refused:
                self.log.error("Not collected: %s: %s", printable(Path(src).name), refused)
                return
            stamp = self._path_to_record(src)["timestamp"]
            (staged / TIMESTAMP).write_text(f"{stamp:%Y-%m-%d %H:%M:%S.%f} UTC", encoding="utf-8")
            super().do_copy(str(staged), dest, log)


def vouched_time(claim: str, changed: datetime) -> datetime:
    """The claimed time (naive UTC, as nbgrader keeps times) when it is the minute before the last change, else
    the last change: a claim earlier than that is refuted by the files themselves."""
    try:
        claimed: datetime = parse_utc(claim)
    except (ValueError, OverflowError):
        return changed
    return claimed if changed - SUBMIT_SLACK <= claimed <= changed else changed


def last_change(folder: Path) -> datetime:
    """The newest status change of the folder and what is under it, links not followed (naive UTC); past the
    entries and depth snapshot allows, nothing more is looked at (snapshot refuses such a submission)."""
    newest = max(map(_ctime_ns, itertools.islice(_entries(folder), MAX_ENTRIES + 1)), default=0)
    changed = datetime.fromtimestamp(newest / 1e9, UTC) if newest else datetime.now(UTC)
    return changed.replace(tzinfo=None)


def _entries(folder: Path) -> Iterator[str]:
    yield str(folder)
    for top, folders, files in os.walk(folder):
        yield from (os.path.join(top, name) for name in folders + files)
        if len(Path(top).relative_to(folder).parts) >= MAX_DEPTH:
            folders.clear()


def _ctime_ns(path: str) -> int:
    try:
        return os.lstat(path).st_ctime_ns
    except OSError:  # gone since it was listed
        return 0


def name_problem(student: str) -> str | None:
    """Why ``student`` (a submission's name up to its first ``+``) cannot be a folder of ``submitted/``, or None.
    nbgrader joins it to the path: ``..`` was collected beside ``submitted/``, an empty name into it, and a name
    with control characters was printed raw in collect's log, where no owner check stops it (Zero to JupyterHub's
    uids are unknown to the teacher's pod)."""
    if student.isprintable() and not student.startswith(".") and student.strip():
        return None
    return f"its student name {student!r} cannot be a folder of submitted/"


def owner_problem(path: Path, claimed: str) -> str | None:
    """Why ``path`` is not ``claimed``'s own submission, or None. A uid this machine cannot name (a student's pod,
    seen from the teacher's) says nothing either way: nbgrader's warning stands for it."""
    try:
        owner = pwd.getpwuid(os.lstat(path).st_uid).pw_name
    except KeyError:
        return None
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    return None if owner == claimed else f"it is named after {claimed!r} but belongs to the account {owner!r}"


def snapshot(source: Path, target: Path, limit: int) -> None:
    """Copy the folder ``source`` to ``target`` without following any link: Refused when it holds anything but
    regular files and folders, more than ``limit`` bytes, or no ``submission_secret.txt``."""
    try:
        top = os.open(source, _DIRECTORY_FLAGS)
    except OSError as error:
        raise Refused(f"the submission is not a folder of its own ({error.strerror})") from None
    budget = {"bytes": limit, "entries": MAX_ENTRIES}
    try:
        if not stat.S_ISREG(_entry_mode(top, SECRET)):
            raise Refused(f"it has no {SECRET} (a submission made by hand, not by nbgrader's submit)")
        if stat.S_ISDIR(_entry_mode(top, TIMESTAMP)):
            raise Refused(f"its {TIMESTAMP} is a folder; nbgrader's submit writes a file")
        _made_folder(target)
        _copy_folder(top, target, "", budget, 0)
    except Refused:
        shutil.rmtree(target, ignore_errors=True)
        raise
    finally:
        os.close(top)


def _entry_mode(folder: int, name: str) -> int:
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except OSError:
        return 0


def _copy_folder(folder: int, target: Path, shown: str, budget: dict[str, int], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise Refused(f"{shown} is nested more than {MAX_DEPTH} folders deep")
    for name in sorted(os.listdir(folder)):
        budget["entries"] -= 1
        if budget["entries"] < 0:
            raise Refused(f"it holds more than {MAX_ENTRIES} files and folders")
        where, mode = f"{shown}{name}", _entry_mode(folder, name)
        if stat.S_ISDIR(mode):
            inner = _opened(folder, name, _DIRECTORY_FLAGS, where)
            try:
                _made_folder(target / name)
                _copy_folder(inner, target / name, f"{where}/", budget, depth + 1)
            finally:
                os.close(inner)
        elif stat.S_ISREG(mode):
            _copy_file(folder, name, target / name, where, budget)
        else:
            kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file or folder"
            raise Refused(f"{where!r} is {kind}; a submission holds files and folders only")


def _made_folder(path: Path) -> None:
    path.mkdir()
    path.chmod(0o755)  # as a student's own folder is: the grading kernel's uid reads the submission's files


def _opened(folder: int, name: str, flags: int, where: str) -> int:
    try:
        return os.open(name, flags, dir_fd=folder)
    except OSError as error:  # swapped for a link since it was looked at: O_NOFOLLOW refuses it
        raise Refused(f"{where!r} cannot be opened as it was listed ({error.strerror})") from None


def _copy_file(folder: int, name: str, target: Path, where: str, budget: dict[str, int]) -> None:
    source = _opened(folder, name, _FILE_FLAGS, where)
    try:
        if not stat.S_ISREG(os.fstat(source).st_mode):
            raise Refused(f"{where!r} is not a regular file")
        with open(target, "xb") as copy:
            while chunk := os.read(source, min(1 << 20, budget["bytes"] + 1)):
                budget["bytes"] -= len(chunk)
                if budget["bytes"] < 0:
                    raise Refused("it is larger than the course's max_dir_size")
                copy.write(chunk)
        target.chmod(0o644)
    finally:
        os.close(source)
