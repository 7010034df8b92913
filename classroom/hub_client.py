"""Drive a real classroom hub without a browser: start it, log students in, run notebooks in their servers, stop it.

The test in tests/classroom/ and benchmarks/bench_classroom.py both use this, so what the benchmark measures is
exactly what the test checks. Everything goes through the same doors a student's browser uses: the hub's login
form and REST API, each student's Jupyter server REST API, and the kernel's websocket (the Jupyter messaging
protocol, one execute_request per code cell). Every wait is bounded and every failure says what was expected.
"""

from __future__ import annotations

import configparser
import contextlib
import http.cookiejar
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]  # psutil ships no type hints
import websocket

from codeagent_lite.providers.local_engine import user_cache_dir

CLASSROOM = Path(__file__).resolve().parent
sys.path.insert(0, str(CLASSROOM))

import accounts  # noqa: E402  (classroom/ is a folder of files, not a package)
import class_env as class_env_module  # noqa: E402

REPO = CLASSROOM.parent
HUB_CONFIG = CLASSROOM / "jupyterhub_config.py"
# The students' environment the tests and the benchmark use, apart from a class's own /opt/codeagent-lite-class:
# one per version of the package (named by class_env.py's fingerprint), so checkouts testing side by side never
# rebuild the install another one's students are running from; built once, then reused.
TEST_CLASS_ENV_PREFIX = "/opt/codeagent-lite-class-test-"


def class_env_for_tests() -> Path:
    return Path(TEST_CLASS_ENV_PREFIX + class_env_module.fingerprint()[:12])


PROXY = CLASSROOM / "node_modules" / ".bin" / "configurable-http-proxy"
SANITIZE_CONFIG = REPO / "tests" / "nbval_sanitize.cfg"
LOOPBACK = "127.0.0.1"
LOG_TAIL_LINES = 40


class ClassroomError(RuntimeError):
    """Something in the classroom did not do what it should; the message says what and what came instead."""


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    headers: Mapping[str, str]

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError as error:
            raise ClassroomError(f"expected a JSON body, found {self.body[:200]!r}") from error


@dataclass(frozen=True)
class RunningHub:
    """A hub process started by start_hub, and what is needed to talk to it."""

    base_url: str
    api_token: str
    state_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes]
    class_env: Path
    ca_file: Path | None = None

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            return f"(no hub log: {error})"
        return "\n".join(text.splitlines()[-lines:])

    def roster(self) -> dict[str, accounts.Person]:
        """The class as the hub wrote it (state folder, mode 0600): who is a student, and each one's password."""
        return accounts.read_roster(self.state_dir / "roster.csv")

    @property
    def students(self) -> tuple[str, ...]:
        return tuple(name for name, person in self.roster().items() if person.role == accounts.STUDENT)

    @property
    def teacher(self) -> str:
        (name,) = [name for name, person in self.roster().items() if person.role == accounts.TEACHER]
        return name

    def ssl_context(self) -> ssl.SSLContext | None:
        return ssl.create_default_context(cafile=str(self.ca_file)) if self.ca_file else None

    def opener(self, *handlers: urllib.request.BaseHandler) -> urllib.request.OpenerDirector:
        return urllib.request.build_opener(urllib.request.HTTPSHandler(context=self.ssl_context()), *handlers)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        form: Mapping[str, str] | None = None,
        timeout: float = 30.0,
    ) -> Response:
        """One HTTP request with the service token; any status comes back (the caller decides what is wrong)."""
        headers = {"Authorization": f"token {self.api_token}"}
        data: bytes | None = None
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
        return _send(self.opener(), request, timeout)

    def expect(self, method: str, path: str, statuses: Sequence[int], body: Any = None, **kwargs: Any) -> Response:
        response = self.request(method, path, body, **kwargs)
        if response.status not in statuses:
            raise ClassroomError(
                f"{method} {path}: expected HTTP {' or '.join(map(str, statuses))}, "
                f"found {response.status}: {response.body[:300]!r}"
            )
        return response


def _send(opener: urllib.request.OpenerDirector, request: urllib.request.Request, timeout: float) -> Response:
    try:
        with opener.open(request, timeout=timeout) as reply:
            return Response(reply.status, reply.read(), dict(reply.headers))
    except urllib.error.HTTPError as error:
        return Response(error.code, error.read(), dict(error.headers))
    except (urllib.error.URLError, OSError) as error:
        raise ClassroomError(f"{request.get_method()} {request.full_url}: no answer ({error})") from error


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


def private_environment(base: Path) -> dict[str, str]:
    """The hub's environment with its own HOME, Jupyter folders and TMPDIR under base, so nothing lands in ~."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("JUPYTER", "CAL_HUB_"))}
    for variable in ("HOME", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "TMPDIR"):
        folder = base / variable.lower()
        folder.mkdir(parents=True, exist_ok=True)
        environment[variable] = str(folder)
    # The workbook's cache stays the real one, as for a teacher: the model file and the llama-server build live there.
    environment["XDG_CACHE_HOME"] = str(user_cache_dir().parent)
    # nbgrader runs alembic from PATH: this environment's bin first.
    environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), environment.get("PATH", "")])
    return environment


# A class somewhere it can run: the hub refuses a checkout other accounts can enter, and students need a shared
# install and an exchange they can reach. Tests and the benchmark build both, and remove the class afterwards.

CHECKOUT_PARTS = ("notebooks", "classroom", "solutions", "pyproject.toml")
NOT_COPIED = ("node_modules", "__pycache__", ".ipynb_checkpoints", "release", "submitted", "autograded", "feedback")


@dataclass(frozen=True)
class ClassSite:
    checkout: Path  # a copy of the teacher's checkout, inside a folder only root can enter
    public: Path  # readable by everyone: nbgrader's exchange lives here
    class_env: Path
    exchange: Path

    def settings(self, state_dir: Path) -> dict[str, str]:
        return {
            "CAL_HUB_STATE_DIR": str(state_dir),
            "CAL_CLASS_ENV": str(self.class_env),
            "CAL_NBGRADER_EXCHANGE": str(self.exchange),
            "CAL_HUB_PROXY": str(PROXY),
            # The model server's read-only copies, removed with the rest of the site.
            "CAL_HUB_MODEL_DIR": str(self.public / "model"),
        }


def prepare_site(private: Path, class_env: Path | None = None) -> ClassSite:
    """A private copy of the checkout (what the hub guards), the students' environment and a public exchange."""
    if all(os.stat(folder).st_mode & stat.S_IXOTH for folder in (private, *private.parents)):
        raise ClassroomError(f"{private} must be a folder other accounts cannot enter")
    checkout = private / "checkout"
    checkout.mkdir()
    for part in CHECKOUT_PARTS:
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, checkout / part, ignore=shutil.ignore_patterns(*NOT_COPIED))
        else:
            shutil.copy2(source, checkout / part)
    class_env = class_env or class_env_for_tests()
    for stale in Path(TEST_CLASS_ENV_PREFIX).parent.glob(Path(TEST_CLASS_ENV_PREFIX).name + "*"):
        # Other versions' test installs, untouched for a day (380 MB each); a recent one may be in use.
        if stale != class_env and time.time() - stale.stat().st_mtime > 24 * 3600:
            shutil.rmtree(stale, ignore_errors=True)
    print(class_env_module.build(class_env, None), flush=True)
    public = Path(tempfile.mkdtemp(prefix="cal-class-", dir="/tmp"))
    public.chmod(0o755)
    return ClassSite(checkout, public, class_env, public / "exchange")


def start_hub(
    base: Path,
    settings: Mapping[str, str],
    *,
    config: Path = HUB_CONFIG,
    ca_file: Path | None = None,
    ready_timeout_s: float = 60.0,
) -> RunningHub:
    """Start a hub from config in a private folder with these CAL_HUB_ settings and wait until its API answers."""
    if not PROXY.is_file():
        raise ClassroomError(f"expected JupyterHub's proxy at {PROXY}; run `make classroom-proxy` (npm ci)")
    environment = private_environment(base)
    api_token = secrets.token_hex(32)
    port = free_port()
    environment.update(settings)
    environment.update({"CAL_HUB_PORT": str(port), "CAL_HUB_API_TOKEN": api_token})
    environment.setdefault("CAL_HUB_MODEL", "0")
    log_path = base / "jupyterhub.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "jupyterhub"), "-f", str(config)],
            cwd=base,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    hub = RunningHub(
        base_url=f"{'https' if ca_file else 'http'}://{LOOPBACK}:{port}",
        api_token=api_token,
        state_dir=Path(settings["CAL_HUB_STATE_DIR"]),
        log_path=log_path,
        process=process,
        class_env=Path(environment.get("CAL_CLASS_ENV", "") or "/opt/codeagent-lite-class"),
        ca_file=ca_file,
    )
    deadline = time.monotonic() + ready_timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ClassroomError(f"the hub exited with status {process.returncode} while starting:\n{hub.log_tail()}")
        with contextlib.suppress(ClassroomError):
            if hub.request("GET", "/hub/api/users", timeout=3).status == 200:
                return hub
        time.sleep(0.3)
    stop_hub(hub, [])
    raise ClassroomError(f"the hub did not answer within {ready_timeout_s:.0f} s:\n{hub.log_tail()}")


def hub_processes(hub: RunningHub) -> list[psutil.Process]:
    """The hub and everything it started: the proxy, the students' servers, their kernels."""
    try:
        root = psutil.Process(hub.process.pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def server_processes(hub: RunningHub) -> dict[str, list[psutil.Process]]:
    """Each student's server and its kernels, found by the JUPYTERHUB_USER the hub gave the server."""
    found: dict[str, list[psutil.Process]] = {}
    with contextlib.suppress(psutil.NoSuchProcess):
        for child in psutil.Process(hub.process.pid).children():
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                user = child.environ().get("JUPYTERHUB_USER")
                if user:
                    found[user] = [child, *child.children(recursive=True)]
    return found


def stop_hub(hub: RunningHub, known: Sequence[psutil.Process], timeout_s: float = 30.0) -> list[str]:
    """Stop every server through the API, then the hub; returns what had to be killed (empty when clean).

    known: processes seen while the hub ran (hub_processes), checked afterwards, since the students' servers
    run in sessions of their own and would survive a signal to the hub's process group.
    """
    if hub.process.poll() is None:
        with contextlib.suppress(ClassroomError):
            users = hub.request("GET", "/hub/api/users", timeout=5)
            running = [user["name"] for user in users.json() if user.get("servers")] if users.status == 200 else []
            with ThreadPoolExecutor(max_workers=max(1, min(len(running), 50))) as pool:
                for name in running:
                    pool.submit(hub.request, "DELETE", f"/hub/api/users/{name}/server", timeout=timeout_s)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(hub.process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            hub.process.wait(timeout=timeout_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(hub.process.pid, signal.SIGKILL)
    hub.process.wait(timeout=timeout_s)
    leftovers = []
    for process in known:
        with contextlib.suppress(psutil.NoSuchProcess):
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                leftovers.append(f"pid {process.pid} ({' '.join(process.cmdline())[:120]})")
                process.kill()
    return leftovers


# Students: the login form, their servers.


def log_in(hub: RunningHub, name: str, password: str) -> http.cookiejar.CookieJar:
    """Log in through the hub's login form, as a browser does; returns the session cookies.

    Raises ClassroomError when the hub refuses the name or password.
    """
    jar = http.cookiejar.CookieJar()
    opener = hub.opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect())
    page = _send(opener, urllib.request.Request(hub.base_url + "/hub/login"), 30.0)
    xsrf = next((cookie.value for cookie in jar if cookie.name == "_xsrf"), None)
    if page.status != 200 or xsrf is None:
        raise ClassroomError(f"GET /hub/login: expected 200 with an _xsrf cookie, found {page.status}")
    form = urllib.parse.urlencode({"username": name, "password": password, "_xsrf": xsrf}).encode()
    answer = _send(opener, urllib.request.Request(hub.base_url + "/hub/login", data=form, method="POST"), 30.0)
    logged_in = any(cookie.name.startswith("jupyterhub-session") for cookie in jar)
    if answer.status != 302 or not logged_in:
        raise ClassroomError(f"login as {name}: expected a redirect with a session cookie, found HTTP {answer.status}")
    return jar


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def whoami(hub: RunningHub, jar: http.cookiejar.CookieJar) -> str:
    """The name the hub gives the holder of these cookies (what a student's browser would be)."""
    opener = hub.opener(urllib.request.HTTPCookieProcessor(jar))
    response = _send(opener, urllib.request.Request(hub.base_url + "/hub/api/user"), 30.0)
    if response.status != 200:
        raise ClassroomError(f"GET /hub/api/user with a student's cookies: expected 200, found {response.status}")
    name: str = response.json()["name"]
    return name


def start_servers(hub: RunningHub, names: Sequence[str]) -> None:
    """Ask for every server at once, as a class arriving together does (each request waits for its spawn)."""
    with ThreadPoolExecutor(max_workers=max(1, min(len(names), 50))) as pool:
        for future in [pool.submit(hub.expect, "POST", f"/hub/api/users/{name}/server", (201, 202)) for name in names]:
            future.result()


def wait_until_ready(hub: RunningHub, names: Sequence[str], timeout_s: float) -> dict[str, float]:
    """Wait until every named server is ready; returns seconds from the call to each one's readiness."""
    started = time.monotonic()
    ready: dict[str, float] = {}
    while len(ready) < len(names):
        for name in names:
            if name in ready:
                continue
            user = hub.expect("GET", f"/hub/api/users/{name}", (200,)).json()
            server = user.get("servers", {}).get("")
            if server and server.get("ready"):
                ready[name] = time.monotonic() - started
            elif not server and not user.get("pending"):
                raise ClassroomError(f"{name}'s server stopped while starting:\n{hub.log_tail()}")
        if time.monotonic() - started > timeout_s:
            missing = sorted(set(names) - set(ready))
            raise ClassroomError(f"servers not ready within {timeout_s:.0f} s: {missing}\n{hub.log_tail()}")
        time.sleep(0.5)
    return ready


# Notebooks: one kernel per student, one execute_request per code cell.


@dataclass(frozen=True)
class CellRun:
    index: int
    outputs: tuple[dict[str, Any], ...]
    status: str  # the execute_reply's status: "ok", "error" or "aborted"


@dataclass(frozen=True)
class NotebookRun:
    student: str
    notebook: str
    cells: tuple[CellRun, ...]
    seconds: float
    kernel_id: str = field(default="")
    afterwards: str = ""  # what the code run after the notebook printed, in the same kernel (run_notebook's then)

    @property
    def errors(self) -> list[str]:
        return [
            f"cell {cell.index}: {output.get('ename')}: {output.get('evalue')}"
            for cell in self.cells
            for output in cell.outputs
            if output["output_type"] == "error"
        ]


def run_notebook(
    hub: RunningHub,
    student: str,
    notebook_path: str,
    *,
    cell_timeout_s: float = 120.0,
    keep_kernel: bool = False,
    then: str = "",
) -> NotebookRun:
    """Open a session on notebook_path (relative to the student's home) and run its code cells in order.

    The notebook is read through the student's server (GET /api/contents), as JupyterLab reads it, so what runs is
    the student's copy. The kernel is shut down afterwards unless keep_kernel (the benchmark keeps it to measure).
    then: code run in the same kernel after the notebook, not timed (the benchmark asks the notebook's own
    variables how its model calls went); what it prints is the run's afterwards.
    """
    user_api = f"/user/{student}/api"
    quoted = urllib.parse.quote(notebook_path)
    content = hub.expect("GET", f"{user_api}/contents/{quoted}?content=1&type=notebook", (200,)).json()["content"]
    started = time.monotonic()
    session = hub.expect(
        "POST",
        f"{user_api}/sessions",
        (201,),
        {"path": notebook_path, "type": "notebook", "name": Path(notebook_path).name, "kernel": {"name": "python3"}},
    ).json()
    kernel_id: str = session["kernel"]["id"]
    channel = _open_channel(hub, student, kernel_id)
    cells: list[CellRun] = []
    try:
        for index, cell in enumerate(content["cells"]):
            if cell["cell_type"] != "code":
                continue
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            cells.append(_execute(channel, index, source, cell_timeout_s))
        seconds = time.monotonic() - started
        afterwards = printed(_execute(channel, len(content["cells"]), then, cell_timeout_s)) if then else ""
    finally:
        channel.close()
        if not keep_kernel:
            hub.request("DELETE", f"{user_api}/sessions/{session['id']}")
    return NotebookRun(student, notebook_path, tuple(cells), seconds, kernel_id, afterwards)


def _open_channel(hub: RunningHub, student: str, kernel_id: str, timeout_s: float = 120.0) -> websocket.WebSocket:
    """Connect to the kernel's websocket, retrying as JupyterLab does while a busy machine is slow to answer."""
    url = re.sub(r"^http", "ws", hub.base_url) + f"/user/{student}/api/kernels/{kernel_id}/channels"
    tls = {"ca_certs": str(hub.ca_file)} if hub.ca_file else None
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return websocket.create_connection(
                url,
                header=[f"Authorization: token {hub.api_token}"],
                timeout=max(1.0, min(30.0, deadline - time.monotonic())),
                suppress_origin=True,
                sslopt=tls,
            )
        except (websocket.WebSocketException, OSError) as error:
            refused = isinstance(error, websocket.WebSocketBadStatusException) and 400 <= error.status_code < 500
            if refused or time.monotonic() >= deadline:
                state = _kernel_state(hub, student, kernel_id)
                reason = str(error).split(" -+-+- ")[0]  # websocket-client appends the headers (cookies) after this
                waited = "refused" if refused else f"no connection within {timeout_s:.0f} s"
                raise ClassroomError(
                    f"kernel websocket for {student}: {waited} ({reason}); the kernel itself: {state}"
                ) from error
            time.sleep(1.0)


def _kernel_state(hub: RunningHub, student: str, kernel_id: str) -> str:
    """The kernel's execution state as its server reports it, for failure messages."""
    try:
        kernel = hub.request("GET", f"/user/{student}/api/kernels/{kernel_id}", timeout=10)
        return str(kernel.json().get("execution_state")) if kernel.status == 200 else f"HTTP {kernel.status}"
    except ClassroomError as error:
        return f"unknown ({error})"


def _execute(channel: websocket.WebSocket, index: int, source: str, timeout_s: float) -> CellRun:
    msg_id = uuid.uuid4().hex
    channel.send(
        json.dumps(
            {
                "header": {
                    "msg_id": msg_id,
                    "msg_type": "execute_request",
                    "username": "classroom",
                    "session": uuid.uuid4().hex,
                    "version": "5.3",
                    "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                },
                "parent_header": {},
                "metadata": {},
                "content": {
                    "code": source,
                    "silent": False,
                    "store_history": True,
                    "user_expressions": {},
                    "allow_stdin": False,
                    "stop_on_error": True,
                },
                "channel": "shell",
                "buffers": [],
            }
        )
    )
    outputs: list[dict[str, Any]] = []
    status: str | None = None
    idle = False
    deadline = time.monotonic() + timeout_s
    while status is None or not idle:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ClassroomError(f"cell {index}: no result within {timeout_s:.0f} s (outputs so far: {outputs})")
        channel.settimeout(remaining)
        try:
            message = json.loads(channel.recv())
        except (websocket.WebSocketException, OSError, ValueError) as error:
            raise ClassroomError(f"cell {index}: the kernel channel failed ({error})") from error
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = message["header"]["msg_type"]
        content = message["content"]
        if kind == "execute_reply":
            status = content["status"]
        elif kind == "status" and content["execution_state"] == "idle":
            idle = True
        elif kind == "stream":
            outputs.append({"output_type": "stream", "name": content["name"], "text": content["text"]})
        elif kind in ("execute_result", "display_data"):
            outputs.append({"output_type": kind, "data": content["data"]})
        elif kind == "error":
            outputs.append({"output_type": "error", "ename": content["ename"], "evalue": content["evalue"]})
    return CellRun(index, tuple(outputs), status)


# Comparing with the saved notebook, the way nbval does.


def _sanitizers() -> list[tuple[re.Pattern[str], str]]:
    parser = configparser.ConfigParser()
    parser.read(SANITIZE_CONFIG, encoding="utf-8")
    return [(re.compile(parser[name]["regex"]), parser[name]["replace"]) for name in parser.sections()]


def _comparable_text(outputs: Sequence[Mapping[str, Any]]) -> str:
    """What nbval compares: stream text (consecutive pieces joined, as Jupyter saves them) and text/plain results,
    with the same varying parts masked."""
    pieces: list[tuple[str, str]] = []
    for output in outputs:
        if output["output_type"] == "stream":
            label, text = output["name"], output["text"]
        elif output["output_type"] in ("execute_result", "display_data") and "text/plain" in output["data"]:
            label, text = "result", output["data"]["text/plain"]
        elif output["output_type"] == "error":
            label, text = "error", output["ename"]
        else:
            continue
        text = text if isinstance(text, str) else "".join(text)
        if pieces and pieces[-1][0] == label and label in ("stdout", "stderr"):
            pieces[-1] = (label, pieces[-1][1] + text)
        else:
            pieces.append((label, text))
    joined = "".join(f"[{label}] {text}" for label, text in pieces)
    for pattern, replacement in _sanitizers():
        joined = pattern.sub(replacement, joined)
    return joined


def comparable_outputs(run: NotebookRun) -> dict[int, str]:
    """Each code cell's outputs as nbval compares them (varying parts masked), by cell index."""
    return {cell.index: _comparable_text(cell.outputs) for cell in run.cells}


def differences_from_saved(run: NotebookRun, saved_notebook: Path) -> list[str]:
    """Every code cell whose fresh outputs differ from the outputs saved in the repository's notebook."""
    saved = json.loads(saved_notebook.read_text(encoding="utf-8"))
    saved_cells = {index: cell for index, cell in enumerate(saved["cells"]) if cell["cell_type"] == "code"}
    problems = []
    if sorted(saved_cells) != [cell.index for cell in run.cells]:
        problems.append(f"{run.student}: ran cells {[c.index for c in run.cells]}, saved has {sorted(saved_cells)}")
    for cell in run.cells:
        expected = _comparable_text(saved_cells.get(cell.index, {}).get("outputs", []))
        found = _comparable_text(cell.outputs)
        if expected != found:
            problems.append(f"{run.student} cell {cell.index}: expected {expected[:300]!r}, found {found[:300]!r}")
    return problems


def run_code(hub: RunningHub, student: str, code: str, timeout_s: float = 60.0) -> CellRun:
    """Run one piece of code in a fresh kernel of the student's server (as the student would), then shut it down."""
    kernel_id: str = hub.expect("POST", f"/user/{student}/api/kernels", (201,), {"name": "python3"}).json()["id"]
    try:
        channel = _open_channel(hub, student, kernel_id)
        try:
            return _execute(channel, 0, code, timeout_s)
        finally:
            channel.close()
    finally:
        hub.request("DELETE", f"/user/{student}/api/kernels/{kernel_id}")


def printed(run: CellRun) -> str:
    return "".join(str(output.get("text", "")) for output in run.outputs if output["output_type"] == "stream")


@contextlib.contextmanager
def classroom(
    base: Path,
    settings: Mapping[str, str],
    *,
    class_env: Path | None = None,
    ca_file: Path | None = None,
    ready_timeout_s: float = 60.0,
) -> Iterator[tuple[RunningHub, list[psutil.Process]]]:
    """A real class for the duration of a with-block: accounts made, hub running; afterwards all of it gone.

    base must be a folder only root can enter (pytest's tmp_path is). The list collects processes as the caller
    sees them (call hub_processes after starting servers); whatever survives the stop is killed and reported by
    raising ClassroomError, and so is a class account that could not be removed.
    """
    site = prepare_site(base, class_env)
    state_dir = base / "state"
    hub: RunningHub | None = None
    seen: list[psutil.Process] = []
    leftovers: list[str] = []
    try:
        hub = start_hub(
            base,
            {**site.settings(state_dir), **settings},
            config=site.checkout / "classroom" / HUB_CONFIG.name,
            ca_file=ca_file,
            ready_timeout_s=ready_timeout_s,
        )
        seen.extend(hub_processes(hub))
        yield hub, seen
    finally:
        if hub is not None:
            seen.extend(hub_processes(hub))
            leftovers = stop_hub(hub, seen)
        people = accounts.read_roster(state_dir / "roster.csv").values()
        accounts.remove_accounts(people)
        still_there = [person.account for person in people if accounts.is_class_account(person.account)]
        shutil.rmtree(site.public, ignore_errors=True)
    # Reached only when the block itself succeeded, so a leftover never hides the block's own error.
    if leftovers:
        raise ClassroomError(f"processes left after stopping the hub (killed now): {leftovers}")
    if still_there:
        raise ClassroomError(f"class accounts left after the class: {still_there}")
