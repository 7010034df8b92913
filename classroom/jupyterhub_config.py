"""JupyterHub for a class on one machine: the workbook for every student, nbgrader's exchange between them.

Start it with `make classroom STUDENTS=N` (or `jupyterhub -f classroom/jupyterhub_config.py` from the project's
.venv). This is a test and single-machine set-up, on purpose:

- DummyAuthenticator: any of the listed names logs in with one shared password. Fine on 127.0.0.1 for a
  rehearsal or a test; a real class uses its school's login (OAuthenticator, LDAP, or system accounts with PAM).
- SimpleLocalProcessSpawner: every student's server runs as the account that started the hub, in its own home
  folder. Students are not isolated from each other; a real class uses SystemdSpawner/DockerSpawner on one
  machine, or KubeSpawner through Zero to JupyterHub (classroom/z2jh/config.yaml).
- Everything listens on 127.0.0.1 only: the hub, its proxy, the proxy's API and every student's server.

Settings come from the environment, so the test, the benchmark and `make classroom` share this one file:

    CAL_HUB_STATE_DIR      hub database, cookie secret, students' homes, exchange (default: .classroom/)
    CAL_HUB_PORT           the port students open, on 127.0.0.1 (default 8000)
    CAL_HUB_STUDENTS       how many students: student01, student02, ... (default 3)
    CAL_HUB_PASSWORD       the shared password (default: generated once, kept in the state folder, printed)
    CAL_HUB_API_TOKEN      optional: a service token with admin rights, for scripts that drive the hub
    CAL_HUB_SPAWN_TIMEOUT  seconds a student's server may take to start (default 120)
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import sys
from pathlib import Path
from typing import Any

c = get_config()  # type: ignore[name-defined]  # noqa: F821  (JupyterHub provides get_config)

CLASSROOM = Path(__file__).resolve().parent
REPO = CLASSROOM.parent
NOTEBOOKS = REPO / "notebooks"
VENV_BIN = Path(sys.executable).parent
PROXY = CLASSROOM / "node_modules" / ".bin" / "configurable-http-proxy"
LOOPBACK = "127.0.0.1"
TEACHER = "teacher"
MAX_STUDENTS = 200


def _whole_number(name: str, default: int, low: int, high: int) -> int:
    """An environment setting as a bounded whole number, or a message saying what was expected."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or not low <= int(text) <= high:
        raise SystemExit(f"{name} must be a whole number from {low} to {high}, found {text[:40]!r}")
    return int(text)


def _free_loopback_port() -> int:
    """A port for the hub's internal API and the proxy's API, so several hubs (tests, benchmark) can coexist."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


def _password(state: Path) -> str:
    """The shared password: given, or generated once and kept (mode 600) so a restart keeps it."""
    given = os.environ.get("CAL_HUB_PASSWORD", "")
    if given:
        return given
    saved = state / "password"
    if saved.is_file():
        return saved.read_text(encoding="utf-8").strip()
    password = secrets.token_urlsafe(12)
    saved.touch(mode=0o600)
    saved.write_text(password + "\n", encoding="utf-8")
    return password


def _prepare_shared_model(cache: Path) -> str:
    """Put the local model's file into the class's shared cache before any student starts.

    Notebook 06 assembles the 253 MB file on first use. Students share one copy (one file on disk, and the
    operating system keeps one copy of its pages in memory for every kernel that maps it); if two kernels
    assembled it at the same moment, one would find the other's half-written file and fail. So the hub does it
    once, into a temporary name that is renamed when complete.
    """
    try:
        from codeagent_lite.json_text_adapter import ProviderError
        from codeagent_lite.providers.local_llama import MODEL_FILENAME, ensure_model_file
    except ImportError:
        return "not installed"
    target = cache / "codeagent-lite" / MODEL_FILENAME
    if target.is_file():
        return "ready"
    partial = target.with_name(f"{MODEL_FILENAME}.partial")
    partial.unlink(missing_ok=True)
    try:
        ensure_model_file(partial)
    except ProviderError as error:
        partial.unlink(missing_ok=True)
        return f"not prepared ({error})"
    os.replace(partial, target)
    return "prepared"


if not PROXY.is_file():
    raise SystemExit(f"JupyterHub's proxy is not installed at {PROXY}: run `make classroom-proxy` (npm ci)")

port = _whole_number("CAL_HUB_PORT", 8000, 1, 65535)
student_count = _whole_number("CAL_HUB_STUDENTS", 3, 1, MAX_STUDENTS)
spawn_timeout = _whole_number("CAL_HUB_SPAWN_TIMEOUT", 120, 10, 3600)
students = [f"student{number:02d}" for number in range(1, student_count + 1)]

# Settings are checked before anything is written.
state = Path(os.environ.get("CAL_HUB_STATE_DIR", "") or REPO / ".classroom").resolve()
homes = state / "home"
exchange = state / "exchange"
cache = state / "cache"
for folder in (state, homes, cache):
    folder.mkdir(parents=True, exist_ok=True)
state.chmod(0o700)
# nbgrader insists on a world-writable exchange root (it would chmod it so itself on the first release).
exchange.mkdir(exist_ok=True)
exchange.chmod(0o777)


# Network: loopback only, everywhere.
c.JupyterHub.ip = LOOPBACK
c.JupyterHub.port = port
c.JupyterHub.hub_ip = LOOPBACK
c.JupyterHub.hub_port = _free_loopback_port()
c.ConfigurableHTTPProxy.command = [str(PROXY)]
c.ConfigurableHTTPProxy.api_url = f"http://{LOOPBACK}:{_free_loopback_port()}"
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")
c.Spawner.ip = LOOPBACK

# The hub's own files stay in the state folder, never in the current directory.
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(state / "jupyterhub.pid")

# Who may log in: the students and one teacher (an admin, who also sees nbgrader's formgrader).
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = _password(state)
c.Authenticator.allowed_users = {*students, TEACHER}
c.Authenticator.admin_users = {TEACHER}

# Each student's server: this environment's jupyterhub-singleuser (so the kernels import codeagent_lite),
# a home folder of its own, JupyterLab on open.
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(homes / "{username}")
c.Spawner.cmd = [str(VENV_BIN / "jupyterhub-singleuser")]
c.Spawner.args = ["--allow-root"] if os.geteuid() == 0 else []
c.Spawner.default_url = "/lab/tree/notebooks/en/00_start_here.ipynb"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = spawn_timeout
c.Spawner.http_timeout = spawn_timeout
c.JupyterHub.concurrent_spawn_limit = MAX_STUDENTS


def _copy_unless_present(source: str, destination: str) -> None:
    if not os.path.exists(destination):
        shutil.copy2(source, destination)


def copy_workbook(spawner: Any) -> None:
    """Before a server starts: give its student the workbook (never the solutions) and nbgrader's settings.

    Notebooks already in the student's folder are left alone, so a restart keeps the student's work.
    """
    home = Path(spawner.home_dir_template.format(username=spawner.user.name))
    target = home / "notebooks"
    # Both editions (en/, zh/), the learner's stub package and the glossary, in the same layout as the repository,
    # so the notebooks' relative links work.
    shutil.copytree(
        NOTEBOOKS,
        target,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("solutions", ".ipynb_checkpoints", "__pycache__"),
        copy_function=_copy_unless_present,
    )
    config_path = [CLASSROOM / "jupyter_config" / "exchange"]
    if spawner.user.name != TEACHER:
        config_path.insert(0, CLASSROOM / "jupyter_config" / "student")
    spawner.environment = {
        **spawner.environment,
        "JUPYTER_CONFIG_PATH": os.pathsep.join(str(folder) for folder in config_path),
        # The notebooks' verify cells judge this student's own files, not the teacher's solutions (not served).
        "CAL_LEARNER_DIR": str(target / "my_json_text"),
    }


c.Spawner.pre_spawn_hook = copy_workbook
c.Spawner.environment = {
    # nbgrader runs `alembic` from PATH; this environment's bin comes first.
    "PATH": os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "/usr/bin:/bin")]),
    "CAL_NBGRADER_EXCHANGE": str(exchange),
    # One copy of the local model's 253 MB file for the class, not one per student.
    "XDG_CACHE_HOME": str(cache),
}

model_status = _prepare_shared_model(cache)

# A token for scripts (the test, the benchmark): create students, start and stop their servers, reach them.
api_token = os.environ.get("CAL_HUB_API_TOKEN", "")
if api_token:
    c.JupyterHub.services = [{"name": "classroom-driver", "api_token": api_token}]
    c.JupyterHub.load_roles = [
        {
            "name": "classroom-driver",
            "scopes": ["admin:users", "admin:servers", "access:servers", "list:users", "read:users"],
            "services": ["classroom-driver"],
        }
    ]

# A password the user chose is not echoed; a generated one must be, or nobody could log in.
password_note = "the one in CAL_HUB_PASSWORD" if os.environ.get("CAL_HUB_PASSWORD") else c.DummyAuthenticator.password
print(
    f"\nClassroom hub (test/single-machine set-up) on http://{LOOPBACK}:{port}/\n"
    f"  students: {', '.join(students[:3])}{' ... ' + students[-1] if len(students) > 3 else ''}"
    f" ({len(students)}), teacher: {TEACHER}\n"
    f"  password for everyone: {password_note}\n"
    f"  state folder: {state}\n"
    f"  local model for notebook 06: {model_status}\n",
    flush=True,
)
