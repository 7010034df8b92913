"""The course's collect copies a submission without following what a student left in it (checked_collect.py).

nbgrader's collect runs as root and its copy follows links: a submission holding ``-> /etc/shadow`` or another
student's home had the target copied into the course and printed into the student's own feedback (bug hunt).
The hub test (test_classroom_hub.py) runs the same collect on real accounts.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from course_scripts import ROOT, release

sys.path.insert(0, str(ROOT / "classroom"))

from checked_collect import SECRET, Refused, last_change, owner_problem, snapshot, vouched_time


def submission(folder: Path) -> Path:
    (folder / "my_json_text").mkdir(parents=True)
    (folder / "05_exercises.ipynb").write_text("{}", encoding="utf-8")
    (folder / "my_json_text" / "json_action_parser.py").write_text("x = 1\n", encoding="utf-8")
    (folder / SECRET).write_text("s3cret", encoding="utf-8")
    return folder


def test_files_and_folders_are_copied_whole(tmp_path: Path) -> None:
    snapshot(submission(tmp_path / "in"), tmp_path / "out", limit=10_000)
    copied = sorted(path.relative_to(tmp_path / "out").as_posix() for path in (tmp_path / "out").rglob("*"))
    assert copied == ["05_exercises.ipynb", "my_json_text", "my_json_text/json_action_parser.py", SECRET]
    assert (tmp_path / "out" / "my_json_text" / "json_action_parser.py").read_text(encoding="utf-8") == "x = 1\n"
    assert (tmp_path / "out" / "my_json_text").stat().st_mode & 0o777 == 0o755


@pytest.mark.parametrize(
    ("planted", "said"),
    [
        (lambda at: at.symlink_to("/etc/shadow"), "'my_json_text/stolen' is a symbolic link"),
        (lambda at: at.symlink_to("/dev/zero"), "'my_json_text/stolen' is a symbolic link"),
        (lambda at: at.symlink_to(at.parent.parent), "'my_json_text/stolen' is a symbolic link"),
        (lambda at: os.mkfifo(at), "'my_json_text/stolen' is not a regular file or folder"),
    ],
    ids=["a file outside", "an endless device", "a folder", "a fifo"],
)
def test_anything_but_files_and_folders_refuses_the_submission(tmp_path: Path, planted: object, said: str) -> None:
    source = submission(tmp_path / "in")
    planted(source / "my_json_text" / "stolen")  # type: ignore[operator]
    with pytest.raises(Refused, match=said):
        snapshot(source, tmp_path / "out", limit=10_000)
    assert not (tmp_path / "out").exists(), "nothing of a refused submission stays"


def test_a_submission_past_the_size_limit_or_without_its_secret_is_refused(tmp_path: Path) -> None:
    source = submission(tmp_path / "in")
    (source / "big.bin").write_bytes(b"x" * 5000)
    with pytest.raises(Refused, match="larger than the course's max_dir_size"):
        snapshot(source, tmp_path / "out", limit=4000)
    (source / SECRET).unlink()
    with pytest.raises(Refused, match=f"it has no {SECRET}"):
        snapshot(source, tmp_path / "out", limit=10**6)


def test_a_submission_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(submission(tmp_path / "in"))
    with pytest.raises(Refused, match="not a folder of its own"):
        snapshot(tmp_path / "link", tmp_path / "out", limit=10_000)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another account needs root")
def test_a_submission_named_after_another_account_is_not_theirs(tmp_path: Path) -> None:
    folder = submission(tmp_path / "in")
    os.chown(folder, 65534, 65534)  # nobody's
    assert owner_problem(folder, "nobody") is None
    assert owner_problem(folder, "alice") == "it is named after 'alice' but belongs to the account 'nobody'"
    os.chown(folder, 4_000_000, 4_000_000)  # a uid this machine cannot name (a student's pod, seen from the teacher's)
    assert owner_problem(folder, "alice") is None


# ------------------------------------------------------------------------------------------ the submission's time


def test_a_claimed_time_counts_only_as_the_minute_before_the_files_last_change() -> None:
    changed = datetime(2026, 12, 3, 10, 0, 30)
    honest = "2026-12-03 10:00:00.000000 UTC"  # submit takes its time, then copies
    assert vouched_time(honest, changed) == datetime(2026, 12, 3, 10, 0, 0)
    for refuted in ("2026-12-03 09:50:00.000000 UTC", "2026-12-03 10:01:00.000000 UTC", "soon", "", "99999-1-1"):
        assert vouched_time(refuted, changed) == changed, refuted


def test_the_last_change_is_the_systems_not_a_time_a_student_set(tmp_path: Path) -> None:
    source = submission(tmp_path / "in")
    before = datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=1)
    for path in (source, *source.rglob("*")):
        os.utime(path, (0, 0), follow_symlinks=False)  # what a student can set: access and modification times
    assert last_change(source) >= before


def collect(tmp_path: Path, names: dict[str, str]) -> tuple[Path, str]:
    """nbgrader collect, with the course's collect, of a submission folder per name (file content: the name)."""
    course, inbound = tmp_path / "course", tmp_path / "exchange" / "course" / "inbound"
    (course / "source" / "ps1").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'classroom')!r})\nc = get_config()\n"
        "c.CourseDirectory.course_id = 'course'\nc.ExchangeFactory.collect = 'checked_collect.CheckedCollect'\n"
        f"c.Exchange.root = {str(tmp_path / 'exchange')!r}\nc.ExchangeCollect.check_owner = False\n"
    )
    for name, claim in names.items():
        folder = submission(inbound / name)
        (folder / "timestamp.txt").write_text(claim, encoding="utf-8")
    environment = release.nbgrader_environment(tmp_path / "home")
    result = release.run_nbgrader(["collect", "ps1"], course, environment)
    return course / "submitted", result.stdout + result.stderr


def test_collect_stamps_each_submission_with_the_time_the_system_vouches_for(tmp_path: Path) -> None:
    """The name's time was the student's own word: a folder named as if made in 2000 was graded as on time."""
    now = datetime.now(UTC).replace(tzinfo=None)
    honest = f"{now - timedelta(seconds=5):%Y-%m-%d %H:%M:%S.%f} UTC"
    names = {
        f"alice+ps1+{honest}+1": honest,
        "bob+ps1+2000-01-01 00:00:00.000000 UTC+2": "2000-01-01 00:00:00.000000 UTC",
        "carol+ps1+whenever+3": "whenever",  # nbgrader's own collect stopped here, for the whole class
    }
    submitted, said = collect(tmp_path, names)
    stamps = {
        student: (submitted / student / "ps1" / "timestamp.txt").read_text() for student in ("alice", "bob", "carol")
    }
    assert stamps["alice"] == honest, said
    for student in ("bob", "carol"):
        assert stamps[student] >= f"{now - timedelta(seconds=1):%Y-%m-%d %H:%M:%S.%f} UTC", (student, said)


def test_a_student_name_that_is_no_folder_of_submitted_is_not_collected(tmp_path: Path) -> None:
    """Where no owner check can stop it (Zero to JupyterHub's uids), ``..`` was collected beside submitted/, an empty
    name into it, and a name holding escape codes was printed raw in collect's log."""
    stamp = f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S.%f} UTC"
    hostile = ("..", "", ".hidden", "\x1b[2Jevil\x07", " ")
    names = {f"{student}+ps1+{stamp}+{number}": stamp for number, student in enumerate(hostile)}
    submitted, said = collect(tmp_path, {**names, f"alice+ps1+{stamp}+9": stamp})
    assert sorted(os.listdir(submitted)) == ["alice"], said
    assert sorted(os.listdir(submitted.parent)) == ["gradebook.db", "nbgrader_config.py", "source", "submitted"]
    assert said.count("Not collected") == len(hostile) and "\x1b" not in said and "\x07" not in said, said
