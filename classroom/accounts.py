"""The class's people as accounts of this machine: one Unix user per student, each with a password of their own.

Why Unix users with passwords (checked by JupyterHub's PAMAuthenticator) rather than an authenticator's own
accounts: the hub starts each student's server as that student's Unix account, so the login and the account the
server runs as must be the same identity, and nbgrader names a submission after the account that makes it. This is
how The Littlest JupyterHub manages a class: the machine's accounts, passwords set with chpasswd, no extra service.
NativeAuthenticator keeps its own accounts beside the machine's (a second identity to keep in step, and students
sign themselves up); FirstUseAuthenticator lets whoever logs in first with a name set its password, so one student
can claim another's account before its owner arrives.

The roster (mode 0600, in the hub's state folder, owned by the account that started the hub) is the only place the
passwords are written; the teacher hands each student their line. Accounts made for the class carry a mark in
their comment field, so the class never takes over (or later removes) an account it did not create.

    python classroom/accounts.py remove --roster STATE/roster.csv   # after the term: the class's accounts and homes
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import pwd
import re
import secrets
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

MARK = "codeagent-lite class"
# What useradd accepts on every distribution without --badname: a lowercase letter or underscore, then up to 31
# lowercase letters, digits, underscores or hyphens.
ACCOUNT_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
ROSTER_FIELDS = ("account", "role", "first_name", "last_name", "email", "password")
CLASS_LIST_FIELDS = ("id", "first_name", "last_name", "email")
STUDENT = "student"
TEACHER = "teacher"
MODEL_SERVER = "model-server"  # the class model server's account: a roster line without a password, never a login


class AccountError(RuntimeError):
    """A class list, roster or account that cannot be used as asked; the message says what and why."""


@dataclass(frozen=True)
class Person:
    account: str
    role: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    # Empty for a teacher who logs in with an account the machine already had (their own password).
    password: str = ""


def check_account_name(name: str, where: str) -> str:
    if not ACCOUNT_NAME.fullmatch(name):
        raise AccountError(
            f"{where}: an account name is a lowercase letter or _ then up to 31 of a-z 0-9 _ -, found {name[:40]!r}"
        )
    return name


def numbered_students(count: int) -> list[Person]:
    return [Person(f"student{number:02d}", STUDENT) for number in range(1, count + 1)]


def read_class_list(path: Path) -> list[Person]:
    """The class list in nbgrader's own import format (id,first_name,last_name,email): `id` becomes the account.

    The same file then fills the gradebook (`nbgrader db student import`), so accounts and grades share one name.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise AccountError(f"class list {path}: cannot read it ({error})") from error
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None or "id" not in reader.fieldnames:
        found = ",".join(reader.fieldnames or [])[:80]
        raise AccountError(f"class list {path}: expected a header with {','.join(CLASS_LIST_FIELDS)}, found {found!r}")
    people: list[Person] = []
    for line, row in enumerate(reader, start=2):
        name = check_account_name((row.get("id") or "").strip(), f"class list {path} line {line}")
        people.append(
            Person(
                name,
                STUDENT,
                *((row.get(field) or "").strip() for field in CLASS_LIST_FIELDS[1:]),
            )
        )
    return people


def read_roster(path: Path) -> dict[str, Person]:
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8", newline="") as handle:
        return {
            row["account"]: Person(**{field: row[field] for field in ROSTER_FIELDS}) for row in csv.DictReader(handle)
        }


def write_roster(path: Path, people: Sequence[Person]) -> None:
    """Write the roster with mode 0600 from the first byte (never readable by anyone else, even for a moment)."""
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=ROSTER_FIELDS)
        writer.writeheader()
        for person in people:
            writer.writerow({field: getattr(person, field) for field in ROSTER_FIELDS})
    os.replace(partial, path)


def is_class_account(name: str) -> bool:
    try:
        return pwd.getpwnam(name).pw_gecos.split(",")[0] == MARK
    except KeyError:
        return False


def plan_class(students: Sequence[Person], teacher: str, roster: dict[str, Person]) -> list[Person]:
    """Everyone's line of the roster: passwords already handed out are kept, new people get a new one.

    The teacher's own machine account (one that exists and was not made for the class) keeps its own password and
    no line of the roster holds it; otherwise the teacher gets a class account with a password of its own.
    """
    check_account_name(teacher, "the teacher's account (CAL_HUB_TEACHER)")
    seen: set[str] = set()
    for person in students:
        if person.account in seen:
            raise AccountError(f"class list: the account {person.account!r} appears twice")
        if person.account == teacher:
            raise AccountError(f"class list: {person.account!r} is the teacher's account, not a student's")
        seen.add(person.account)
    teacher_owns_account = _exists(teacher) and not is_class_account(teacher)
    people = [Person(teacher, TEACHER), *students]
    planned = []
    for person in people:
        if person.role == TEACHER and teacher_owns_account:
            planned.append(person)
            continue
        kept = roster.get(person.account)
        password = kept.password if kept and kept.password else secrets.token_urlsafe(9)
        planned.append(replace(person, password=password))
    return planned


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def create_accounts(people: Iterable[Person], home_root: Path) -> None:
    """Each person without an account gets one (home mode 0700, a group of its own); every class password is set.

    An existing account is used only when the class made it; anything else (root, a system account, someone's
    own login) is refused, so a class list can never hand out a password for it.
    """
    with_password = [person for person in people if person.password]
    for person in with_password:
        home = home_root / person.account
        if _exists(person.account):
            if not is_class_account(person.account):
                raise AccountError(
                    f"the account {person.account!r} already exists on this machine and was not made for the class; "
                    "choose another name in the class list"
                )
        else:
            _run(
                [
                    "useradd",
                    "--create-home",
                    "--home-dir",
                    str(home),
                    "--shell",
                    "/bin/bash",
                    "--user-group",
                    "--comment",
                    MARK,
                    person.account,
                ]
            )
        entry = pwd.getpwnam(person.account)
        if entry.pw_uid == 0:
            raise AccountError(f"the account {person.account!r} has uid 0; a class account is never root")
        os.chmod(entry.pw_dir, 0o700)
    if with_password:
        lines = "".join(f"{person.account}:{person.password}\n" for person in with_password)
        _run(["chpasswd"], stdin=lines)


def create_service_account(name: str) -> pwd.struct_passwd:
    """A system account for a service of the class (the model server): no home, no shell, no password, marked.

    Like a student's, an account of that name the class did not make is refused, never taken over.
    """
    check_account_name(name, "the model server's account (CAL_HUB_MODEL_USER)")
    if not _exists(name):
        _run(
            [
                "useradd",
                "--system",
                "--user-group",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                "--comment",
                MARK,
                name,
            ]
        )
    elif not is_class_account(name):
        raise AccountError(
            f"the account {name!r} already exists on this machine and was not made for the class; "
            "set CAL_HUB_MODEL_USER to another name"
        )
    entry = pwd.getpwnam(name)
    if entry.pw_uid == 0:
        raise AccountError(f"the account {name!r} has uid 0; a class account is never root")
    return entry


def remove_accounts(people: Iterable[Person]) -> list[str]:
    """Remove the class's accounts and their homes (never one the class did not make); returns the names removed."""
    removed = []
    for person in people:
        if is_class_account(person.account):
            _run(["userdel", "--remove", person.account], allowed=(0, 12))  # 12: the home was already gone
            removed.append(person.account)
    return removed


def _run(command: list[str], stdin: str | None = None, allowed: tuple[int, ...] = (0,)) -> None:
    try:
        result = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise AccountError(f"{command[0]}: could not run ({error})") from error
    if result.returncode not in allowed:
        # chpasswd's stdin holds passwords; only its stderr is shown, and never the input.
        raise AccountError(f"{command[0]} {command[-1] if stdin is None else ''}: {result.stderr.strip()[:300]}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The class's Unix accounts.")
    parser.add_argument("action", choices=["remove"])
    parser.add_argument("--roster", type=Path, required=True, help="the hub's roster.csv")
    arguments = parser.parse_args(argv)
    roster = read_roster(arguments.roster)
    if not roster:
        parser.error(f"no roster at {arguments.roster}")
    removed = remove_accounts(roster.values())
    print(f"removed {len(removed)} class accounts and their homes: {', '.join(removed) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
