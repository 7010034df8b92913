"""JupyterHub for a class on one machine: each student a Unix account of their own, the course the teacher's.

Start it as root with `make classroom` (the teacher's guide: classroom/README.md). What it does:

- Each student is a Unix account made for the class (home folder mode 0700, a group of its own, a password of
  its own in the roster), logged in through PAM and served by a server running as that account. Where systemd
  runs as PID 1 and jupyterhub-systemdspawner is installed, SystemdSpawner starts the servers (systemd enforces
  the memory and task limits); elsewhere (containers, most CI machines, this one) LocalProcessSpawner does, with
  the limits of class_spawner.py. No server ever starts as root.
- The teacher's things stay out of reach: the hub's database, cookie secret and the roster are in the state folder
  (mode 0700); the checkout (solutions/, classroom/source, the gradebook) must not be reachable by other accounts,
  or the hub refuses to start. Students' servers run from the shared read-only install (classroom/class_env.py),
  with a copy of the workbook without solutions, made as the student in their own home.
- Plain HTTP on 127.0.0.1 only; any other address needs TLS (CAL_HUB_SSL_CERT and CAL_HUB_SSL_KEY).
- Services: jupyterhub-idle-culler stops idle servers; the class model server (class_model.py), where the model is
  there, serves every student's notebook 06 from one loaded model, as a system account of its own that only reads it.

Not started as root it stops and says how to start it, unless CAL_HUB_REHEARSAL=1: a one-person rehearsal
(the teacher alone, every server as the hub's own account) that isolates nobody and says so.

Settings come from the environment (the test, the benchmark and `make classroom` share this one file):

    CAL_HUB_STATE_DIR      the hub's database, cookie secret, roster (default: .classroom/ in the checkout)
    CAL_HUB_CLASS_LIST     the class list, nbgrader's CSV (id,first_name,last_name,email); id is the account
    CAL_HUB_STUDENTS       without a class list: student01 ... studentNN (default 3)
    CAL_HUB_TEACHER        the teacher's account (default: the user behind sudo, else a class account `teacher`)
    CAL_HUB_EDITION        zh or en: the notebooks the class opens (default zh)
    CAL_CLASS_ENV          the students' environment (default /opt/codeagent-lite-class)
    CAL_NBGRADER_EXCHANGE  nbgrader's exchange (default /srv/nbgrader/exchange, nbgrader's own default)
    CAL_HUB_HOME_ROOT      where class accounts' homes go (default /home)
    CAL_HUB_IP, CAL_HUB_PORT            the address students open (default 127.0.0.1:8000)
    CAL_HUB_SSL_CERT, CAL_HUB_SSL_KEY   TLS certificate and key (required for any non-loopback address)
    CAL_HUB_MEM_LIMIT_MB, CAL_HUB_PIDS_LIMIT   per student (default 2048 MB, 512 processes and threads)
    CAL_HUB_IDLE_TIMEOUT   seconds before an idle server is stopped (default 3600; 0 turns the culler off)
    CAL_HUB_MODEL          0: no class model server (default 1: one, where the engine is built)
    CAL_HUB_MODEL_PORT, CAL_HUB_MODEL_PARALLEL   the class model server's port and parallel slots (default: one
                           per student, at most 32)
    CAL_HUB_MODEL_USER     the model server's own system account (default codeagent-model)
    CAL_HUB_MODEL_DIR      its read-only copies of the model and llama-server (default /var/lib/codeagent-lite-model)
    CAL_HUB_API_TOKEN      optional: a service token with admin rights, for scripts that drive the hub
    CAL_HUB_PROXY          configurable-http-proxy (default: classroom/node_modules, `make classroom-proxy`)
    CAL_HUB_SPAWN_TIMEOUT  seconds a student's server may take to start (default 120)
    CAL_HUB_REHEARSAL      1: when not root, the one-person rehearsal instead of stopping
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import pwd
import secrets
import shutil
import socket
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

CLASSROOM = Path(__file__).resolve().parent
sys.path.insert(0, str(CLASSROOM))

import accounts  # noqa: E402  (classroom/ is a folder of files, not a package)
import class_model  # noqa: E402
import class_spawner  # noqa: E402

c = get_config()  # type: ignore[name-defined]  # noqa: F821  (JupyterHub provides get_config)

REPO = CLASSROOM.parent
LOOPBACK = "127.0.0.1"
MAX_STUDENTS = 200
EDITIONS = ("zh", "en")
# What a student's copy of the workbook leaves out, wherever it sits in notebooks/.
NOT_FOR_STUDENTS = ("solutions", ".ipynb_checkpoints", "__pycache__")


def _whole_number(name: str, default: int, low: int, high: int) -> int:
    """An environment setting as a bounded whole number, or a message saying what was expected."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or not low <= int(text) <= high:
        raise SystemExit(f"{name} must be a whole number from {low} to {high}, found {text[:40]!r}")
    return int(text)


def _choice(name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = os.environ.get(name, "").strip() or default
    if value not in allowed:
        raise SystemExit(f"{name} must be one of {', '.join(allowed)}, found {value[:40]!r}")
    return value


def _free_loopback_port() -> int:
    """A port for the hub's internal API and the proxy's API, so several hubs (tests, benchmark) can coexist."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


def _address() -> tuple[str, str, str]:
    """The students' address and its TLS files: plain HTTP only on loopback, TLS for anything else."""
    ip = os.environ.get("CAL_HUB_IP", "").strip() or LOOPBACK
    try:
        loopback = ipaddress.ip_address(ip).is_loopback
    except ValueError:
        raise SystemExit(f"CAL_HUB_IP must be an IP address such as 192.0.2.10, found {ip[:40]!r}") from None
    cert, key = (os.environ.get(name, "").strip() for name in ("CAL_HUB_SSL_CERT", "CAL_HUB_SSL_KEY"))
    if bool(cert) != bool(key):
        raise SystemExit("CAL_HUB_SSL_CERT and CAL_HUB_SSL_KEY go together: give both files, or neither")
    for path in filter(None, (cert, key)):
        if not Path(path).is_file():
            raise SystemExit(f"TLS file not found: {path}")
    if not loopback and not cert:
        raise SystemExit(
            f"CAL_HUB_IP={ip}: plain HTTP stays on 127.0.0.1, so students' passwords never cross the network "
            "unencrypted; give CAL_HUB_SSL_CERT and CAL_HUB_SSL_KEY (a certificate for this address) to serve on it"
        )
    return ip, cert, key


def _reachable_by_others(path: Path) -> bool:
    """Whether another account can get into path: every folder from / down to it lets others through."""
    return all(os.stat(folder).st_mode & stat.S_IXOTH for folder in [*reversed(path.parents), path])


def _rehearsal_password(state: Path) -> str:
    """The rehearsal's one password: generated once, kept with mode 0600, never printed."""
    saved = state / "rehearsal-password"
    if not saved.is_file():
        descriptor = os.open(saved, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(secrets.token_urlsafe(12) + "\n")
    return saved.read_text(encoding="utf-8").strip()


def _account_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _default_teacher() -> str:
    behind_sudo = os.environ.get("SUDO_USER", "")
    return behind_sudo if behind_sudo and behind_sudo != "root" else "teacher"


# ---------------------------------------------------------------------------------------------- settings, checked
# Every setting is checked before anything is written.
ip, ssl_cert, ssl_key = _address()
port = _whole_number("CAL_HUB_PORT", 8000, 1, 65535)
spawn_timeout = _whole_number("CAL_HUB_SPAWN_TIMEOUT", 120, 10, 3600)
mem_limit_mb = _whole_number("CAL_HUB_MEM_LIMIT_MB", 2048, 256, 1 << 20)
pids_limit = _whole_number("CAL_HUB_PIDS_LIMIT", 512, 64, 1 << 22)
idle_timeout = _whole_number("CAL_HUB_IDLE_TIMEOUT", 3600, 0, 7 * 24 * 3600)
edition = _choice("CAL_HUB_EDITION", "zh", EDITIONS)
rehearsal = os.geteuid() != 0
if rehearsal and os.environ.get("CAL_HUB_REHEARSAL", "") != "1":
    raise SystemExit(
        "The classroom hub gives each student a Unix account of their own, and only root can start servers as "
        "other accounts. Start it as root: `sudo make classroom` (see classroom/README.md). To try the class alone "
        "first, CAL_HUB_REHEARSAL=1 starts a one-person rehearsal that isolates nobody."
    )
proxy = Path(os.environ.get("CAL_HUB_PROXY", "") or CLASSROOM / "node_modules" / ".bin" / "configurable-http-proxy")
if not proxy.is_file():
    raise SystemExit(f"JupyterHub's proxy is not installed at {proxy}: run `make classroom-proxy` (npm ci)")
class_env = Path(os.environ.get("CAL_CLASS_ENV", "") or "/opt/codeagent-lite-class")
exchange = Path(os.environ.get("CAL_NBGRADER_EXCHANGE", "") or "/srv/nbgrader/exchange")
COURSE_ID = "codeagent-lite"  # nbgrader_config.py's course_id
home_root = Path(os.environ.get("CAL_HUB_HOME_ROOT", "") or "/home")
teacher = os.environ.get("CAL_HUB_TEACHER", "").strip() or _default_teacher()
try:
    class_list = os.environ.get("CAL_HUB_CLASS_LIST", "").strip()
    if class_list:
        students = accounts.read_class_list(Path(class_list))
    else:
        students = accounts.numbered_students(_whole_number("CAL_HUB_STUDENTS", 3, 1, MAX_STUDENTS))
    accounts.check_account_name(teacher, "CAL_HUB_TEACHER")
except accounts.AccountError as error:
    raise SystemExit(str(error)) from None
if not students or len(students) > MAX_STUDENTS:
    raise SystemExit(f"a class has 1 to {MAX_STUDENTS} students, found {len(students)}")
if not rehearsal:
    if not (class_env / "bin" / "jupyterhub-singleuser").is_file():
        raise SystemExit(f"the students' environment is missing at {class_env}: `make classroom` builds it")
    if _reachable_by_others(REPO):
        raise SystemExit(
            f"students could read the solutions, the hidden tests and the gradebook in {REPO}: keep the checkout "
            f"where other accounts cannot enter (`chmod o-rwx {REPO}`), then start again"
        )

model_wanted = os.environ.get("CAL_HUB_MODEL", "1").strip() != "0"
model_account = "" if rehearsal else os.environ.get("CAL_HUB_MODEL_USER", "").strip() or "codeagent-model"
MODEL_ROLE = accounts.MODEL_SERVER

state = Path(os.environ.get("CAL_HUB_STATE_DIR", "") or REPO / ".classroom").resolve()
state.mkdir(parents=True, exist_ok=True)
state.chmod(0o700)
roster_path = state / "roster.csv"

# ---------------------------------------------------------------------------------------------------- network
c.JupyterHub.ip = ip
c.JupyterHub.port = port
if ssl_cert:
    c.JupyterHub.ssl_cert = ssl_cert
    c.JupyterHub.ssl_key = ssl_key
c.JupyterHub.hub_ip = LOOPBACK
c.JupyterHub.hub_port = _free_loopback_port()
c.ConfigurableHTTPProxy.command = [str(proxy)]
c.ConfigurableHTTPProxy.api_url = f"http://{LOOPBACK}:{_free_loopback_port()}"
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")
c.Spawner.ip = LOOPBACK

# The hub's own files stay in the state folder, never in the current directory.
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(state / "jupyterhub.pid")
c.JupyterHub.concurrent_spawn_limit = MAX_STUDENTS
c.Spawner.start_timeout = spawn_timeout
c.Spawner.http_timeout = spawn_timeout
c.Spawner.default_url = f"/lab/tree/notebooks/{edition}/00_start_here.ipynb"
c.Spawner.notebook_dir = "~"
c.Spawner.mem_limit = mem_limit_mb * 1024 * 1024

# ------------------------------------------------------------------------------------------ the shared copies
# What students' servers read: the workbook without solutions and the Jupyter settings, copied out of the checkout
# (which they cannot enter) into the students' environment, owned by root and read-only for everyone else.
share = (class_env if not rehearsal else state) / "share" / "codeagent-lite"
workbook = share / "notebooks"
jupyter_config = share / "jupyter_config"


def _not_for_students(source: Path) -> Callable[[str, list[str]], set[str]]:
    """Leave out NOT_FOR_STUDENTS at any depth, and the teacher's own learner folder (notebooks/my_json_text, made
    from the stubs when the teacher ran notebooks 01-04): every student gets the stubs and makes their own."""
    patterns = shutil.ignore_patterns(*NOT_FOR_STUDENTS)

    def ignore(folder: str, names: list[str]) -> set[str]:
        left_out = set(patterns(folder, names))
        if Path(folder) == source:
            left_out |= {name for name in names if name == "my_json_text"}
        return left_out

    return ignore


def _publish(source: Path, target: Path) -> None:
    """Replace target with a read-only copy of source, leaving out what students must not have."""
    fresh = target.with_name(target.name + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.copytree(source, fresh, ignore=_not_for_students(source))
    for folder, _, files in os.walk(fresh):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(fresh, target)


share.mkdir(parents=True, exist_ok=True)
_publish(REPO / "notebooks", workbook)
_publish(CLASSROOM / "jupyter_config", jupyter_config)

# ------------------------------------------------------------------------------------------------ who logs in
if rehearsal:
    # One person, one password, every server as the hub's own account: the class's isolation is not here.
    c.JupyterHub.authenticator_class = "dummy"
    c.DummyAuthenticator.password = _rehearsal_password(state)
    c.Authenticator.allowed_users = {teacher}
    c.Authenticator.admin_users = {teacher}
    c.JupyterHub.spawner_class = "simple"
    c.SimpleLocalProcessSpawner.home_dir_template = str(state / "home" / "{username}")
    c.Spawner.cmd = [str(Path(sys.executable).parent / "jupyterhub-singleuser")]
    people: list[accounts.Person] = [accounts.Person(teacher, accounts.TEACHER)]
    kept_services: list[accounts.Person] = []
else:
    try:
        known = accounts.read_roster(roster_path)
        people = accounts.plan_class(students, teacher, known)
        # The model server's account stays on the roster (no password: never a login), so `remove` finds it;
        # it goes on before it is made, so a start that fails half-way leaves nothing `remove` cannot find.
        kept_services = [person for person in known.values() if person.role == MODEL_ROLE]
        if model_account and model_wanted:
            accounts.check_account_name(model_account, "CAL_HUB_MODEL_USER")
            if model_account in {person.account for person in people}:
                raise accounts.AccountError(
                    f"CAL_HUB_MODEL_USER={model_account!r} is a person of this class; the model server needs an "
                    "account of its own"
                )
            if model_account not in {person.account for person in kept_services}:
                kept_services.append(accounts.Person(model_account, MODEL_ROLE))
        accounts.write_roster(roster_path, [*people, *kept_services])
        accounts.create_accounts(people, home_root)
    except accounts.AccountError as error:
        raise SystemExit(str(error)) from None
    c.JupyterHub.authenticator_class = "pam"
    # A PAM session per login is for interactive logins (it fails in most containers and adds nothing here).
    c.PAMAuthenticator.open_sessions = False
    c.Authenticator.allowed_users = {person.account for person in people}
    c.Authenticator.admin_users = {teacher}
    c.Spawner.cmd = [str(class_env / "bin" / "jupyterhub-singleuser")]
    # Nothing of the hub's own environment reaches a student: JupyterHub would pass on PYTHONPATH and VIRTUAL_ENV
    # by default, and with them imports from the teacher's checkout.
    c.Spawner.env_keep = ["LANG", "LC_ALL"]
    systemd_here = Path("/proc/1/comm").read_text(encoding="ascii").strip() == "systemd"
    if systemd_here and importlib.util.find_spec("systemdspawner") is not None:
        c.JupyterHub.spawner_class = "systemdspawner.SystemdSpawner"
        c.SystemdSpawner.dynamic_users = False
        c.SystemdSpawner.mem_limit = c.Spawner.mem_limit
        c.SystemdSpawner.unit_extra_properties = {"TasksMax": str(pids_limit)}
        spawner_note = "SystemdSpawner (systemd runs as PID 1): systemd enforces the memory and task limits"
    else:
        c.JupyterHub.spawner_class = class_spawner.ClassSpawner
        c.ClassSpawner.pids_limit = pids_limit
        spawner_note = f"LocalProcessSpawner, each server as its student; limits: {class_spawner.limits_in_force()}"

roles = {person.account: person.role for person in people}


def _account(name: str) -> pwd.struct_passwd:
    entry = pwd.getpwnam(name)
    if entry.pw_uid == 0:
        raise RuntimeError(f"refusing to start a server for {name!r}: its account is root (uid 0)")
    return entry


# The student copies the workbook into their own home as themselves: root never writes inside a folder a student
# controls (a link planted there would send root's writes anywhere). Files already there are kept, so a restart
# keeps the student's work.
COPY_WORKBOOK = """
import os, shutil, sys
def keep(source, target):
    if not os.path.lexists(target):
        shutil.copy2(source, target)
shutil.copytree(sys.argv[1], sys.argv[2], dirs_exist_ok=True, copy_function=keep)
"""


def prepare_server(spawner: Any) -> None:
    """Before a server starts: refuse root and strangers; give a student the workbook and the student settings."""
    name = spawner.user.name
    if name not in roles:
        raise RuntimeError(f"refusing to start a server for {name!r}: not on the class's roster")
    role = roles[name]
    config_path = [jupyter_config / "exchange"]
    environment = {
        "CAL_NBGRADER_EXCHANGE": str(exchange),
        "CAL_NBGRADER_COURSE": COURSE_ID,
    }
    if role == accounts.STUDENT:
        config_path.insert(0, jupyter_config / "student")
    if rehearsal:
        home = Path(spawner.home_dir_template.format(username=name))
        shutil.copytree(workbook, home / "notebooks", dirs_exist_ok=True)
        config_path.insert(0, jupyter_config / "rehearsal")
    else:
        entry = _account(name)
        home = Path(entry.pw_dir)
        subprocess.run(
            [
                "setpriv",
                f"--reuid={entry.pw_uid}",
                f"--regid={entry.pw_gid}",
                "--init-groups",
                str(class_env / "bin" / "python"),
                "-c",
                COPY_WORKBOOK,
                str(workbook),
                str(home / "notebooks"),
            ],
            cwd=home,
            env={"PATH": "/usr/bin:/bin", "HOME": str(home)},
            capture_output=True,
            timeout=120,
            check=True,
        )
        environment["PATH"] = os.pathsep.join([str(class_env / "bin"), "/usr/local/bin:/usr/bin:/bin"])
    environment["JUPYTER_CONFIG_PATH"] = os.pathsep.join(map(str, config_path))
    # The notebooks' verify cells judge this student's own files (the solutions are not served).
    environment["CAL_LEARNER_DIR"] = str(home / "notebooks" / "my_json_text")
    environment.update(model_environment)
    spawner.environment = {**spawner.environment, **environment}


c.Spawner.pre_spawn_hook = prepare_server

# nbgrader's exchange, with nbgrader's own permission model: the root writable by all, with the sticky bit so no
# one removes another's course folder; nbgrader makes inbound write-only for students (they cannot list each
# other's submissions) and the feedback folder unlistable (each student's feedback is under a secret name).
if not rehearsal:
    exchange.mkdir(parents=True, exist_ok=True)
    exchange.chmod(0o1777)
    for folder in exchange.parents:
        if folder == Path("/"):
            break
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            raise SystemExit(f"nbgrader's exchange {exchange} is inside {folder}, which other accounts cannot enter")
    # The course's own folders, made here at nbgrader's modes: a student who made them first would own them, and
    # the teacher's release_assignment would stop ("You don't own the directory").
    course_folders = {"": 0o755, "inbound": 0o2733, "outbound": 0o755, "feedback": 0o711}  # "": the course's own
    for name, mode in course_folders.items():
        made = exchange / COURSE_ID / name
        made.mkdir(exist_ok=True)
        if made.is_symlink() or os.lstat(made).st_uid != 0:
            raise SystemExit(f"{made} was made by another account: remove it, then start the hub again")
        made.chmod(mode)

# -------------------------------------------------------------------------------------------------- services
services: list[dict[str, Any]] = []
load_roles: list[dict[str, Any]] = []

if idle_timeout:
    services.append(
        {
            "name": "idle-culler",
            "command": [
                sys.executable,
                "-m",
                "jupyterhub_idle_culler",
                f"--timeout={idle_timeout}",
                f"--cull-every={max(60, min(600, idle_timeout // 2))}",
            ],
        }
    )
    load_roles.append(
        {
            "name": "idle-culler",
            "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
            "services": ["idle-culler"],
        }
    )

# One model for the class (classroom/class_model.py): the package's model server, started once by the hub as a
# service, loaded once, shared by every student's notebook 06 through CAL_LOCAL_MODEL_URL; llama-server where it is
# built, run as an account of its own that only reads its files.
model_environment: dict[str, str] = {}
if model_wanted:
    model_service = class_model.plan(
        account=model_account,
        folder=Path(os.environ.get("CAL_HUB_MODEL_DIR", "") or "/var/lib/codeagent-lite-model"),
        pythons=[Path(sys.executable)] if rehearsal else [class_env / "bin" / "python", Path(sys.executable)],
        port=_whole_number("CAL_HUB_MODEL_PORT", 0, 0, 65535) or _free_loopback_port(),
        slots=_whole_number("CAL_HUB_MODEL_PARALLEL", min(len(students), class_model.MAX_SLOTS), 1, 256),
        threads=len(os.sched_getaffinity(0)),
    )
    if isinstance(model_service, str):
        model_note = f"no class model server: {model_service}; notebook 06 shows its recorded outputs"
    else:
        services.append(model_service.service())
        model_environment["CAL_LOCAL_MODEL_URL"] = model_service.url
        model_note = f"one model for the class on {model_service.note}"
else:
    model_note = "no class model server (CAL_HUB_MODEL=0)"

# A token for scripts (the test, the benchmark): create students, start and stop their servers, reach them.
api_token = os.environ.get("CAL_HUB_API_TOKEN", "")
if api_token:
    services.append({"name": "classroom-driver", "api_token": api_token})
    load_roles.append(
        {
            "name": "classroom-driver",
            "scopes": ["admin:users", "admin:servers", "access:servers", "list:users", "read:users"],
            "services": ["classroom-driver"],
        }
    )
c.JupyterHub.services = services
c.JupyterHub.load_roles = load_roles

scheme = "https" if ssl_cert else "http"
if rehearsal:
    print(
        f"\nREHEARSAL, NOT A CLASS: one person ({teacher}) on {scheme}://{ip}:{port}/, every server runs as "
        f"{_account_name(os.geteuid())}. This isolates nobody; for a class start the hub as root.\n"
        f"  password: in {state / 'rehearsal-password'}\n",
        flush=True,
    )
else:
    named = [person.account for person in people if person.role == accounts.STUDENT]
    print(
        f"\nClassroom hub on {scheme}://{ip}:{port}/ (edition: notebooks/{edition})\n"
        f"  students: {', '.join(named[:3])}{' ... ' + named[-1] if len(named) > 3 else ''} ({len(named)}),"
        f" teacher (admin): {teacher}\n"
        f"  passwords: one per person, in {roster_path} (mode 0600); hand each student their own line\n"
        f"  servers: {spawner_note}\n"
        f"  exchange: {exchange}; students' environment: {class_env}\n"
        f"  idle servers stopped after: {f'{idle_timeout} s' if idle_timeout else 'never (CAL_HUB_IDLE_TIMEOUT=0)'}\n"
        f"  model: {model_note}\n",
        flush=True,
    )
