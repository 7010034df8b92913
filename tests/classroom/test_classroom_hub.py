"""A real classroom hub started as root: two students, each their own Unix account; the course stays the teacher's.

One hub for the module (starting it is the slow part), from a copy of the checkout inside pytest's private
temporary folder (the hub refuses a checkout other accounts can enter), serving TLS on 127.0.0.1 with a
self-signed certificate made here. Two students and a teacher are created as Unix accounts for the test and
removed after it; the fixture fails if an account, a home or a process is left. Each student's kernel runs as its
own uid and meets PermissionError on the hidden tests, the solutions, the gradebook, the hub's secrets and the other
student's home; submissions through nbgrader's exchange belong to the real account. The hub needs root (it starts
servers as other accounts): in CI (CI=true, which runs as root) these tests must run and fail if they cannot;
elsewhere they skip with the reason. The tests after the hub's need neither root nor a hub.
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import json
import os
import pwd
import secrets
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import nbformat
import psutil
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "classroom"))

import accounts  # noqa: E402  (classroom/ is a folder of files, not a package)
import class_model  # noqa: E402
import class_spawner  # noqa: E402
import hub_client  # noqa: E402

COURSE = "codeagent-lite"
ASSIGNMENT = "hello"
PIDS_LIMIT = 160
MEM_LIMIT_MB = 640
NOTEBOOK = "notebooks/zh/03_adapter_flow.ipynb"


def cannot_run_here() -> str | None:
    if os.geteuid() != 0:
        return "the classroom hub starts servers as other accounts, which needs root (CI runs as root)"
    missing = [tool for tool in ("useradd", "userdel", "chpasswd", "setpriv") if shutil.which(tool) is None]
    if missing:
        return f"missing {', '.join(missing)}"
    if not hub_client.PROXY.is_file():
        return f"{hub_client.PROXY} is missing: `make test` installs it (make classroom-proxy)"
    return None


def engine_here() -> bool:
    """The teacher's model file is there (make local), so the hub serves the class a model."""
    return isinstance(class_model.find_engine(), class_model.Engine)


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (the name a browser checks is the IP address) and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "hub.crt", folder / "hub.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_path.chmod(0o600)
    return cert_path, key_path


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[hub_client.RunningHub]:
    reason = cannot_run_here()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the classroom hub tests must run in CI: {reason}", pytrace=False)
        pytest.skip(reason)
    base = tmp_path_factory.mktemp("classroom")
    tag = secrets.token_hex(3)
    names = [f"cal{tag}a", f"cal{tag}b"]
    teacher = f"cal{tag}t"
    model_user = f"cal{tag}m"
    class_list = base / "students.csv"
    class_list.write_text(
        "id,first_name,last_name,email\n" + "".join(f"{name},Test,{name[-1].upper()},\n" for name in names),
        encoding="utf-8",
    )
    cert, key = self_signed(base)
    settings = {
        "CAL_HUB_CLASS_LIST": str(class_list),
        "CAL_HUB_TEACHER": teacher,
        "CAL_HUB_SSL_CERT": str(cert),
        "CAL_HUB_SSL_KEY": str(key),
        "CAL_HUB_PIDS_LIMIT": str(PIDS_LIMIT),
        "CAL_HUB_MEM_LIMIT_MB": str(MEM_LIMIT_MB),
        "CAL_HUB_EDITION": "zh",
        # The class model server, where the engine is built (make test builds it): started once as a hub service.
        "CAL_HUB_MODEL": "1" if engine_here() else "0",
        "CAL_HUB_MODEL_USER": model_user,
    }
    with hub_client.classroom(base, settings, ca_file=cert, ready_timeout_s=90) as (running, seen):
        gradebook = base / "checkout" / "classroom" / "gradebook.db"
        sqlite3.connect(gradebook).close()  # the teacher's gradebook, as nbgrader leaves it in the course folder
        assert sorted(running.students) == names
        hub_client.start_servers(running, running.students)
        hub_client.wait_until_ready(running, running.students, timeout_s=120)
        seen.extend(hub_client.hub_processes(running))
        yield running
    for name in (*names, teacher, model_user):
        with pytest.raises(KeyError):
            pwd.getpwnam(name)
        assert not (Path("/home") / name).exists(), f"{name}'s home is left"


def password(hub: hub_client.RunningHub, name: str) -> str:
    return hub.roster()[name].password


def account(name: str) -> pwd.struct_passwd:
    return pwd.getpwnam(name)


def in_kernel(hub: hub_client.RunningHub, student: str, code: str, timeout_s: float = 60.0) -> object:
    """Run code in the student's kernel; its last line prints one JSON value, returned here."""
    run = hub_client.run_code(hub, student, code, timeout_s)
    assert run.status == "ok", run.outputs
    return json.loads(hub_client.printed(run).strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------------ logging in


def test_each_student_logs_in_with_their_own_password(hub: hub_client.RunningHub) -> None:
    for student in hub.students:
        cookies = hub_client.log_in(hub, student, password(hub, student))
        assert hub_client.whoami(hub, cookies) == student


def test_no_password_opens_another_account_and_the_teachers_login_refuses_a_students(
    hub: hub_client.RunningHub,
) -> None:
    first, second = hub.students
    assert password(hub, first) != password(hub, second) != password(hub, hub.teacher)
    for name, wrong in [(hub.teacher, password(hub, first)), (second, password(hub, first)), ("intruder", "x")]:
        with pytest.raises(hub_client.ClassroomError, match="expected a redirect"):
            hub_client.log_in(hub, name, wrong)
    cookies = hub_client.log_in(hub, hub.teacher, password(hub, hub.teacher))
    assert hub_client.whoami(hub, cookies) == hub.teacher
    assert hub.expect("GET", f"/hub/api/users/{hub.teacher}", (200,)).json()["admin"] is True
    assert hub.expect("GET", f"/hub/api/users/{first}", (200,)).json()["admin"] is False


def test_the_roster_is_the_teachers_alone(hub: hub_client.RunningHub) -> None:
    roster = hub.state_dir / "roster.csv"
    assert roster.stat().st_mode & 0o777 == 0o600
    assert hub.state_dir.stat().st_mode & 0o777 == 0o700
    log = hub.log_path.read_text(encoding="utf-8", errors="replace")
    assert "passwords: one per person, in" in log
    assert not [person.account for person in hub.roster().values() if person.password and person.password in log]


# ------------------------------------------------------------------------------------------- who runs what


def test_each_students_server_and_kernel_run_as_their_own_account(hub: hub_client.RunningHub) -> None:
    servers = hub_client.server_processes(hub)
    for student in hub.students:
        entry = account(student)
        assert entry.pw_uid != 0 and entry.pw_dir == f"/home/{student}"
        assert Path(entry.pw_dir).stat().st_mode & 0o777 == 0o700
        assert {process.uids().real for process in servers[student]} == {entry.pw_uid}
        identity = in_kernel(hub, student, "import os, sys; print(__import__('json').dumps([os.getuid(), sys.prefix]))")
        assert identity == [entry.pw_uid, str(hub.class_env)]


def test_students_run_from_the_shared_read_only_install(hub: hub_client.RunningHub) -> None:
    student = hub.students[0]
    found = in_kernel(
        hub,
        student,
        "import json, codeagent_lite, pathlib\n"
        "package = pathlib.Path(codeagent_lite.__file__)\n"
        "try:\n    open(package, 'a'); result = 'writable'\n"
        "except OSError as error:\n    result = type(error).__name__\n"
        "print(json.dumps([str(package), result]))",
    )
    assert isinstance(found, list)
    assert found[0].startswith(str(hub.class_env) + "/lib/"), found
    assert found[1] == "PermissionError"


def test_a_student_cannot_read_the_course_the_secrets_or_another_students_home(hub: hub_client.RunningHub) -> None:
    checkout = hub.state_dir.parent / "checkout"
    solutions = sorted(path for path in (checkout / "solutions").rglob("*") if path.is_file())
    first, second = hub.students
    guarded = [
        checkout / "classroom" / "source" / "exercises" / "05_exercises.ipynb",
        solutions[0],
        checkout / "classroom" / "gradebook.db",
        hub.state_dir / "jupyterhub_cookie_secret",
        hub.state_dir / "jupyterhub.sqlite",
        hub.state_dir / "roster.csv",
    ]
    for reader, other in [(first, second), (second, first)]:
        other_home = Path(account(other).pw_dir)
        paths = [*guarded, other_home / "notebooks" / "zh" / "00_start_here.ipynb", other_home]
        assert all(path.exists() for path in paths), [path for path in paths if not path.exists()]
        code = (
            "import json, os\nresults = []\n"
            f"for path in {[str(path) for path in paths]!r}:\n"
            "    try:\n"
            "        os.listdir(path) if os.path.isdir(path) else open(path, 'rb').read(1)\n"
            "        results.append('read')\n"
            "    except OSError as error:\n"
            "        results.append(type(error).__name__)\n"
            "print(json.dumps(results))"
        )
        assert in_kernel(hub, reader, code) == ["PermissionError"] * len(paths), reader


def test_the_workbook_in_a_home_has_no_solutions_and_the_class_opens_zh(hub: hub_client.RunningHub) -> None:
    student = hub.students[0]
    listing = hub.expect("GET", f"/user/{student}/api/contents/notebooks", (200,)).json()
    names = {entry["name"] for entry in listing["content"]}
    assert {"zh", "en", "stubs", "glossary.md"} <= names and "solutions" not in names
    home = Path(account(student).pw_dir)
    assert not [path for path in home.rglob("*") if "solutions" in path.parts]
    assert {path.stat().st_uid for path in (home / "notebooks").rglob("*")} == {account(student).pw_uid}
    server = hub_client.server_processes(hub)[student][0]
    assert server.environ()["JUPYTERHUB_DEFAULT_URL"] == "/lab/tree/notebooks/zh/00_start_here.ipynb"


def test_a_student_runs_notebook_03_in_their_server(hub: hub_client.RunningHub) -> None:
    run = hub_client.run_notebook(hub, hub.students[1], NOTEBOOK)
    assert run.cells and all(cell.status == "ok" for cell in run.cells), [(c.index, c.status) for c in run.cells]
    assert run.errors == []


# ------------------------------------------------------------------------------------------ nbgrader's exchange


def teacher_nbgrader(hub: hub_client.RunningHub, course: Path, *args: str) -> str:
    environment = hub_client.private_environment(course.parent / "teacher-home")
    environment["JUPYTER_CONFIG_PATH"] = str(REPO / "classroom" / "jupyter_config" / "exchange")
    environment["CAL_NBGRADER_EXCHANGE"] = str(exchange_root(hub))
    result = subprocess.run(
        [str(Path(sys.executable).parent / "nbgrader"), *args],
        cwd=course,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


def exchange_root(hub: hub_client.RunningHub) -> Path:
    server = hub_client.server_processes(hub)[hub.students[0]][0]
    return Path(server.environ()["CAL_NBGRADER_EXCHANGE"])


def graded_cell(source: str, grade_id: str, *, solution: bool) -> nbformat.NotebookNode:
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {
        "schema_version": 3,
        "grade_id": grade_id,
        "solution": solution,
        "grade": not solution,
        "locked": not solution,
        "task": False,
        **({} if solution else {"points": 1}),
    }
    return cell


def write_course(course: Path, assignment: str = ASSIGNMENT) -> None:
    """A one-answer, one-test assignment in the teacher's form (issue 10's own assignments are graded elsewhere)."""
    (course / "source" / assignment).mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(
        f"import sys\nsys.path.insert(0, {str(REPO / 'classroom')!r})\n"
        f"c = get_config()\nc.CourseDirectory.course_id = {COURSE!r}\n"
        'c.ExchangeFactory.collect = "checked_collect.CheckedCollect"\n'  # as the course's own nbgrader_config.py
    )
    notebook = new_notebook(
        cells=[
            new_markdown_cell("Write `hello()`."),
            graded_cell(
                "def hello():\n    ### BEGIN SOLUTION\n    return 'hi'\n    ### END SOLUTION", "answer", solution=True
            ),
            graded_cell("assert hello() == 'hi'", "check", solution=False),
        ]
    )
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, course / "source" / assignment / f"{assignment}.ipynb")


def listing_in_kernel(hub: hub_client.RunningHub, student: str, folder: Path) -> object:
    code = f"import json, os\ntry:\n    os.listdir({str(folder)!r}); print(json.dumps('listed'))\n"
    code += "except OSError as error:\n    print(json.dumps(type(error).__name__))"
    return in_kernel(hub, student, code)


def test_submissions_and_feedback_belong_to_the_real_account_and_no_student_sees_another(
    hub: hub_client.RunningHub, tmp_path: Path
) -> None:
    course = tmp_path / "course"
    write_course(course)
    teacher_nbgrader(hub, course, "generate_assignment", ASSIGNMENT)
    teacher_nbgrader(hub, course, "release_assignment", ASSIGNMENT)
    assert exchange_root(hub).stat().st_mode & 0o7777 == 0o1777

    form = {"course_id": COURSE, "assignment_id": ASSIGNMENT}
    for student in hub.students:
        # The same requests JupyterLab's Assignments tab sends.
        fetched = hub.expect("POST", f"/user/{student}/assignments/fetch", (200,), form=form).json()
        assert fetched["success"], fetched
        submitted = hub.expect("POST", f"/user/{student}/assignments/submit", (200,), form=form).json()
        assert submitted["success"], submitted

    inbound = exchange_root(hub) / COURSE / "inbound"
    owners = {path.name.split("+")[0]: pwd.getpwuid(path.stat().st_uid).pw_name for path in inbound.iterdir()}
    assert owners == {student: student for student in hub.students}, "each submission is its student's own"
    assert listing_in_kernel(hub, hub.students[1], inbound) == "PermissionError"

    for step in ("collect", "autograde", "generate_feedback", "release_feedback"):
        teacher_nbgrader(hub, course, step, ASSIGNMENT)
    for student in hub.students:
        assert (course / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()
        answer = hub.expect("POST", f"/user/{student}/assignments/fetch_feedback", (200,), form=form).json()
        assert answer["success"], answer
        pages = list((Path(account(student).pw_dir) / ASSIGNMENT / "feedback").rglob("*.html"))
        assert len(pages) == 1, pages
        assert pages[0].stat().st_uid == account(student).pw_uid
    assert listing_in_kernel(hub, hub.students[1], exchange_root(hub) / COURSE / "feedback") == "PermissionError"


PLANT = """
import json, os
inbound, later = {inbound!r}, "+{assignment}+2099-01-01 00:00:00.000000 UTC+"
for name, extra in (({other!r}, "forged"), ({me!r}, "linked")):
    folder = os.path.join(inbound, name + later + extra)
    os.mkdir(folder)
    for file in ("{assignment}.ipynb", "submission_secret.txt"):
        with open(os.path.join(folder, file), "w") as written:
            written.write(extra)
os.symlink({other_home!r}, os.path.join(inbound, {me!r} + later + "linked", "stolen"))
print(json.dumps("planted"))
"""


def test_collect_refuses_a_submission_in_another_students_name_or_holding_a_link(
    hub: hub_client.RunningHub, tmp_path: Path
) -> None:
    """nbgrader's own collect took a forged submission over the real one (with a warning) and, as root, copied
    what a student's link pointed at into the course, where the grading kernel printed it into her feedback."""
    course, assignment = tmp_path / "course", "planted"  # an assignment of its own: the exchange is the hub's
    write_course(course, assignment)
    teacher_nbgrader(hub, course, "generate_assignment", assignment)
    teacher_nbgrader(hub, course, "release_assignment", assignment)
    me, other = hub.students[0], hub.students[1]
    form = {"course_id": COURSE, "assignment_id": assignment}
    for student in (me, other):
        assert hub.expect("POST", f"/user/{student}/assignments/fetch", (200,), form=form).json()["success"]
        assert hub.expect("POST", f"/user/{student}/assignments/submit", (200,), form=form).json()["success"]
    inbound = exchange_root(hub) / COURSE / "inbound"
    fields = {"inbound": str(inbound), "assignment": assignment, "me": me, "other": other}
    assert in_kernel(hub, me, PLANT.format(**fields, other_home=account(other).pw_dir)) == "planted"

    said = teacher_nbgrader(hub, course, "collect", assignment)
    assert f"it is named after {other!r} but belongs to the account {me!r}" in said, said
    assert "'stolen' is a symbolic link" in said, said
    notebook = course / "submitted" / other / assignment / f"{assignment}.ipynb"
    assert notebook.is_file() and "forged" not in notebook.read_text(encoding="utf-8"), "the real one is collected"
    assert not list((course / "submitted").rglob("stolen"))


def test_students_servers_do_not_offer_the_teachers_formgrader(hub: hub_client.RunningHub) -> None:
    student = hub.students[0]
    assert hub.request("GET", f"/user/{student}/formgrader").status == 404
    assert hub.request("GET", f"/user/{student}/assignments?course_id={COURSE}").status == 200


# ------------------------------------------------------------------------------------- one student, not the class


def test_one_student_cannot_exhaust_processes_and_the_others_carry_on(hub: hub_client.RunningHub) -> None:
    first, second = hub.students
    server = hub_client.server_processes(hub)[first][0]
    groups = Path(f"/proc/{server.pid}/cgroup").read_text(encoding="ascii")
    if class_spawner.cgroups_usable(class_spawner.CGROUP_V1):
        assert f"/codeagent-lite/{first}" in groups, groups
        limit = class_spawner.cgroup_folders(class_spawner.CGROUP_V1, first)["memory"] / "memory.limit_in_bytes"
        assert int(limit.read_text(encoding="ascii")) == MEM_LIMIT_MB * 1024 * 1024
    started = in_kernel(
        hub,
        first,
        "import json, threading\nstop = threading.Event(); threads = []\n"
        "try:\n    for _ in range(400):\n        t = threading.Thread(target=stop.wait); t.start(); threads.append(t)\n"
        "except RuntimeError:\n    pass\nstop.set()\nprint(json.dumps(len(threads)))",
    )
    assert isinstance(started, int) and 0 < started < PIDS_LIMIT
    assert in_kernel(hub, second, "print(1 + 1)") == 2


def test_a_process_that_takes_too_much_memory_is_stopped_and_the_kernel_carries_on(hub: hub_client.RunningHub) -> None:
    first = hub.students[0]
    hog = f"x = b'x' * ({MEM_LIMIT_MB + 200} * 2**20)"
    code = (
        "import json, subprocess, sys\n"
        f"hog = subprocess.run([sys.executable, '-c', {hog!r}], capture_output=True)\n"
        "print(json.dumps([hog.returncode, hog.stderr.decode(errors='replace')[-300:]]))"
    )
    found = in_kernel(hub, first, code)
    assert isinstance(found, list)
    if class_spawner.cgroups_usable(class_spawner.CGROUP_V1):
        assert found[0] == -9, found  # the kernel's OOM killer, inside the student's own memory group
    else:
        assert "MemoryError" in found[1], found
    assert in_kernel(hub, first, "print(3)") == 3


def command_lines(hub: hub_client.RunningHub) -> list[str]:
    lines = []
    for process in hub_client.hub_processes(hub):
        try:
            lines.append(" ".join(process.cmdline()))
        except psutil.NoSuchProcess:
            continue
    return lines


def model_processes(hub: hub_client.RunningHub) -> list[psutil.Process]:
    """The class model service (the reply cache), the package's model server behind it and its engine."""
    for process in hub_client.hub_processes(hub):
        try:
            if f"/{class_model.CACHE_FILE} " in " ".join(process.cmdline()):
                return [process, *process.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
    return []


def class_model_or_skip(hub: hub_client.RunningHub) -> None:
    """Skip, saying why, where the hub serves no class model (no model file, or the account cannot run it)."""
    if not engine_here():
        pytest.skip("no model file here (make local); the hub serves no class model")
    said = [line.strip() for line in hub.log_path.read_text(encoding="utf-8").splitlines() if "  model: " in line]
    if not said or "no class model server" in said[0]:
        pytest.skip(f"the hub said: {said[0] if said else 'nothing about the model'}")


def test_every_student_reaches_the_one_class_model_server(hub: hub_client.RunningHub) -> None:
    class_model_or_skip(hub)
    code = (
        "import json, os, time, urllib.request\nurl = os.environ['CAL_LOCAL_MODEL_URL']\nstatus = None\n"
        "for _ in range(180):\n    try:\n"
        "        status = urllib.request.urlopen(url + '/models', timeout=5).status\n        break\n"
        "    except OSError as error:\n        status = str(error)\n        time.sleep(1)\n"
        "print(json.dumps([url, status]))"
    )
    urls = {student: in_kernel(hub, student, code, timeout_s=240) for student in hub.students}
    assert {tuple(found) for found in urls.values()} == {(urls[hub.students[0]][0], 200)}, urls  # type: ignore[index]
    for program in (f"/{class_model.CACHE_FILE} ", "-m codeagent_lite.providers.local_server "):
        servers = [line for line in command_lines(hub) if program in line]
        assert len(servers) == 1, f"one {program.strip()} for the class"


def test_the_second_student_asking_the_same_greedy_question_gets_the_class_cache_reply(
    hub: hub_client.RunningHub,
) -> None:
    class_model_or_skip(hub)
    code = (
        "import json, os, urllib.request\nurl = os.environ['CAL_LOCAL_MODEL_URL'] + '/completions'\n"
        "body = json.dumps({'model': 'gemma-3-270m', 'prompt': 'The class asks:', 'max_tokens': 2, "
        "'temperature': 0}).encode()\n"
        "request = urllib.request.Request(url, data=body, headers={'Content-Type': 'application/json'})\n"
        "answer = urllib.request.urlopen(request, timeout=240)\nreply = json.loads(answer.read())\n"
        "print(json.dumps([answer.headers['X-Class-Cache'], reply['choices'][0]['text'], reply.get('class_cache')]))"
    )
    first, second = (in_kernel(hub, student, code, timeout_s=300) for student in hub.students[:2])
    assert (first[0], first[2]) == ("miss", None), first  # type: ignore[index]
    assert second == ["hit", first[1], "hit"], (first, second)  # type: ignore[index]


def test_the_class_model_server_runs_as_its_own_account_and_only_reads_the_model(hub: hub_client.RunningHub) -> None:
    class_model_or_skip(hub)
    (account,) = [name for name, person in hub.roster().items() if person.role == accounts.MODEL_SERVER]
    entry = pwd.getpwnam(account)
    assert entry.pw_uid != 0 and accounts.is_class_account(account)
    processes = model_processes(hub)
    assert len(processes) >= 3, "the reply cache, the model server behind it and its engine"
    for process in processes:
        assert set(process.uids()) == {entry.pw_uid}, (process.cmdline(), process.uids())
        assert set(process.gids()) == {entry.pw_gid}, (process.cmdline(), process.gids())
    wrapper = processes[0].cmdline()
    model = Path(wrapper[wrapper.index("--model") + 1])
    program = Path(wrapper[1])  # the reply cache runs from root's copy beside the model: the checkout is closed to it
    assert program.parent == model.parent and program.name == class_model.CACHE_FILE
    for copy in (model, program):
        info = copy.stat()
        assert (info.st_uid, info.st_mode & 0o777) == (0, 0o640), "root's copy, readable by the model's group only"
    if shutil.which("llama-server", path=str(model.parent)):
        assert any("llama-server" in " ".join(p.cmdline()) for p in processes[1:]), "llama-server serves where built"
    probe = "import sys\ntry:\n    open(sys.argv[1], 'r+b')\nexcept PermissionError:\n    print('read-only')"
    become = ["setpriv", f"--reuid={account}", f"--regid={account}", "--init-groups"]
    for copy in (model, program):
        as_model = subprocess.run(
            [*become, str(hub.class_env / "bin" / "python"), "-c", probe, str(copy)],
            capture_output=True,
            text=True,
            cwd="/",
            check=False,
        )
        assert as_model.stdout.strip() == "read-only", as_model
    log = hub.log_path.read_text(encoding="utf-8")
    assert "local model server: llama" in log, "the server's first line says which backend serves and why"


def test_the_idle_culler_runs_as_a_hub_service(hub: hub_client.RunningHub) -> None:
    commands = command_lines(hub)
    assert any("jupyterhub_idle_culler --timeout=3600" in command for command in commands), commands


# -------------------------------------------------------------------------------------------------- network


def test_the_hub_serves_tls_and_nothing_listens_beyond_loopback(hub: hub_client.RunningHub) -> None:
    assert hub.base_url.startswith("https://127.0.0.1:")
    with pytest.raises(hub_client.ClassroomError):
        dataclasses.replace(hub, base_url=hub.base_url.replace("https", "http"), ca_file=None).expect(
            "GET", "/hub/api/users", (200,)
        )
    listening = []
    for process in hub_client.hub_processes(hub):
        try:
            connections = process.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        listening += [(process.name(), c.laddr.ip) for c in connections if c.status == psutil.CONN_LISTEN]
    assert len(listening) >= 3 + len(hub.students), listening
    assert {ip for _, ip in listening} == {"127.0.0.1"}, listening


# ------------------------------------------------------------------------------- the config file, without a hub


def load_hub_config() -> Config:
    """The config file read the way JupyterHub reads it (traitlets), without starting a hub."""
    return PyFileConfigLoader(hub_client.HUB_CONFIG.name, path=str(hub_client.HUB_CONFIG.parent)).load_config()


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for variable in [name for name in os.environ if name.startswith(("CAL_HUB_", "CAL_CLASS_", "CAL_NBGRADER_"))]:
        monkeypatch.delenv(variable)
    proxy = tmp_path / "proxy"
    proxy.write_text("", encoding="utf-8")
    monkeypatch.setenv("CAL_HUB_PROXY", str(proxy))
    monkeypatch.setenv("CAL_HUB_STATE_DIR", str(tmp_path / "state"))
    return tmp_path


def test_not_started_as_root_it_says_how_to_start(settings: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit, match=r"Start it as root: `sudo make classroom`.*CAL_HUB_REHEARSAL=1"):
        load_hub_config()
    assert not (settings / "state").exists()


def test_the_rehearsal_is_one_person_and_says_it_isolates_nobody(
    settings: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("CAL_HUB_REHEARSAL", "1")
    monkeypatch.setenv("CAL_HUB_TEACHER", "teacher")
    config = load_hub_config()
    printed = capsys.readouterr().out
    assert "REHEARSAL, NOT A CLASS" in printed and "This isolates nobody" in printed
    assert config.JupyterHub.spawner_class == "simple"
    assert config.Authenticator.allowed_users == {"teacher"}
    assert (settings / "state" / "rehearsal-password").stat().st_mode & 0o777 == 0o600
    # The hook refuses anyone but the one person, root first of all.
    with pytest.raises(RuntimeError, match="refusing to start a server for 'root'"):
        config.Spawner.pre_spawn_hook(SimpleNamespace(user=SimpleNamespace(name="root")))


def test_the_class_spawner_refuses_root() -> None:
    with pytest.raises(RuntimeError, match="refusing to start a server for 'root': its account is root"):
        class_spawner.ClassSpawner.make_preexec_fn(SimpleNamespace(), "root")


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"CAL_HUB_IP": "192.0.2.10"}, "CAL_HUB_IP=192.0.2.10: plain HTTP stays on 127.0.0.1"),
        ({"CAL_HUB_IP": "0.0.0.0"}, "CAL_HUB_IP=0.0.0.0: plain HTTP stays on 127.0.0.1"),
        ({"CAL_HUB_IP": "localhost"}, "CAL_HUB_IP must be an IP address such as 192.0.2.10, found 'localhost'"),
        ({"CAL_HUB_SSL_CERT": "/x.crt"}, "CAL_HUB_SSL_CERT and CAL_HUB_SSL_KEY go together"),
        ({"CAL_HUB_STUDENTS": "thirty"}, "CAL_HUB_STUDENTS must be a whole number from 1 to 200, found 'thirty'"),
        ({"CAL_HUB_PORT": "80000"}, "CAL_HUB_PORT must be a whole number from 1 to 65535, found '80000'"),
        ({"CAL_HUB_EDITION": "fr"}, "CAL_HUB_EDITION must be one of zh, en, found 'fr'"),
        ({"CAL_HUB_TEACHER": "Teacher!"}, "CAL_HUB_TEACHER: an account name is a lowercase letter"),
    ],
)
def test_a_bad_setting_stops_the_hub_with_a_message_before_writing_anything(
    settings: Path, monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], message: str
) -> None:
    monkeypatch.setenv("CAL_HUB_REHEARSAL", "1")
    for variable, value in variables.items():
        monkeypatch.setenv(variable, value)
    with pytest.raises(SystemExit) as stopped:
        load_hub_config()
    assert str(stopped.value).startswith(message)
    assert not (settings / "state").exists(), "a refused setting must leave nothing behind"


def as_root_with_a_students_environment(settings: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a class's config needs before it reaches its own checks: root, and the students' install."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    env = settings / "env" / "bin"
    env.mkdir(parents=True)
    (env / "jupyterhub-singleuser").write_text("", encoding="utf-8")
    monkeypatch.setenv("CAL_CLASS_ENV", str(settings / "env"))


def test_a_class_refuses_a_checkout_other_accounts_can_enter(settings: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    as_root_with_a_students_environment(settings, monkeypatch)
    real = os.stat

    def everyone_may_enter(path: object, *args: object, **kwargs: object) -> os.stat_result:
        result = real(path, *args, **kwargs)  # type: ignore[arg-type]
        return os.stat_result((result.st_mode | 0o005, *tuple(result)[1:]))

    monkeypatch.setattr(os, "stat", everyone_may_enter)
    with pytest.raises(SystemExit, match="students could read the solutions, the hidden tests and the gradebook"):
        load_hub_config()


def test_the_model_servers_account_is_never_a_person_of_the_class(
    settings: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    as_root_with_a_students_environment(settings, monkeypatch)
    real = os.stat

    def nobody_else_may_enter(path: object, *args: object, **kwargs: object) -> os.stat_result:
        result = real(path, *args, **kwargs)  # type: ignore[arg-type]
        if not isinstance(path, (str, os.PathLike)) or Path(path) != hub_client.HUB_CONFIG.parent.parent:
            return result
        return os.stat_result((result.st_mode & ~0o007, *tuple(result)[1:]))

    monkeypatch.setattr(os, "stat", nobody_else_may_enter)
    monkeypatch.setenv("CAL_HUB_STUDENTS", "2")
    monkeypatch.setenv("CAL_HUB_TEACHER", "teacher")
    for person in ("student02", "teacher"):
        monkeypatch.setenv("CAL_HUB_MODEL_USER", person)
        with pytest.raises(SystemExit, match=f"CAL_HUB_MODEL_USER='{person}' is a person of this class"):
            load_hub_config()
    assert not (settings / "state" / "roster.csv").exists(), "refused before the roster is written"


# ------------------------------------------------------------------------------------------------ the roster


def test_the_roster_keeps_handed_out_passwords_and_is_written_0600(tmp_path: Path) -> None:
    students = [accounts.Person("s2026001", accounts.STUDENT, "Li", "Hua"), accounts.Person("s2026002", "student")]
    first = accounts.plan_class(students, "nosuchteacher", {})
    assert len({person.password for person in first}) == 3 and all(person.password for person in first)
    path = tmp_path / "roster.csv"
    accounts.write_roster(path, first)
    assert path.stat().st_mode & 0o777 == 0o600
    again = accounts.plan_class([*students, accounts.Person("s2026003", "student")], "nosuchteacher", {})
    kept = accounts.plan_class(
        [*students, accounts.Person("s2026003", "student")], "nosuchteacher", accounts.read_roster(path)
    )
    assert [person.password for person in kept[:3]] == [person.password for person in first]
    assert kept[3].password and again[0].password != first[0].password


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name,email\nx,y\n", "expected a header with id,first_name,last_name,email, found 'name,email'"),
        ("id,first_name,last_name,email\nRoot Admin,,,\n", "line 2: an account name is a lowercase letter"),
    ],
)
def test_a_class_list_that_cannot_be_used_says_why(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "students.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(accounts.AccountError, match=message):
        accounts.read_class_list(path)


def test_an_account_the_class_did_not_make_is_never_taken_over(tmp_path: Path) -> None:
    for name in ("root", "nobody"):
        with pytest.raises(
            accounts.AccountError, match="already exists on this machine and was not made for the class"
        ):
            accounts.create_accounts([accounts.Person(name, accounts.STUDENT, password="x")], tmp_path)
    with pytest.raises(accounts.AccountError, match="is the teacher's account, not a student's"):
        accounts.plan_class([accounts.Person("teacher", accounts.STUDENT)], "teacher", {})


def test_the_class_model_server_is_one_hub_service_and_every_server_is_told_where(
    settings: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Where the teacher built llama-server, the hub starts the package's server once, on it (the rehearsal: as the
    # hub's own account, with the teacher's own files).
    engine = class_model.Engine(settings / "model.gguf", settings / "llama-server")
    monkeypatch.setattr(class_model, "find_engine", lambda: engine)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("CAL_HUB_REHEARSAL", "1")
    monkeypatch.setenv("CAL_HUB_MODEL_PORT", "8765")
    monkeypatch.setenv("CAL_HUB_MODEL_PARALLEL", "4")
    config = load_hub_config()
    (model,) = [service for service in config.JupyterHub.services if service["name"] == "class-model"]
    assert model["command"] == [
        sys.executable,
        str(REPO / "classroom" / "reply_cache.py"),
        "--host",
        "127.0.0.1",
        "--port",
        "8765",
        "--threads",
        str(len(os.sched_getaffinity(0))),
        "--parallel",
        "4",
        "--model",
        str(settings / "model.gguf"),
        "--llama-server",
        str(settings / "llama-server"),
    ]
    assert "user" not in model  # the rehearsal's hub is not root
    spawner = SimpleNamespace(
        user=SimpleNamespace(name=config.Authenticator.admin_users.pop()),
        home_dir_template=str(settings / "home" / "{username}"),
        environment={},
    )
    config.Spawner.pre_spawn_hook(spawner)
    assert spawner.environment["CAL_LOCAL_MODEL_URL"] == "http://127.0.0.1:8765/v1"
    # Without llama-server: llama-cpp-python's server, and the hub says why.
    monkeypatch.setattr(class_model, "find_engine", lambda: class_model.Engine(settings / "model.gguf", None))
    (model,) = [s for s in load_hub_config().JupyterHub.services if s["name"] == "class-model"]
    assert model["command"][-2:] == ["--backend", "llama-cpp-python"]
    monkeypatch.setattr(class_model, "find_engine", lambda: "the Gemma weights package is not installed")
    assert [s["name"] for s in load_hub_config().JupyterHub.services] == ["idle-culler"]
    monkeypatch.setenv("CAL_HUB_MODEL", "0")
    assert [s["name"] for s in load_hub_config().JupyterHub.services] == ["idle-culler"]
