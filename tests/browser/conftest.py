"""Fixtures for the real-browser test: Debian's chromium driven by Playwright, and a private JupyterLab.

Nothing here touches the user's home or the repository: the browser and the server get their
own config, cache, runtime and temp folders, and the server serves a temporary copy of
``notebooks/`` (with autosave off as well), so a test run can never rewrite a saved notebook.
JupyterLab's display language is set for the test's edition exactly as ``make lab EDITION=...``
sets it (``codeagent_lite.workbook.lab_language``), so the Chinese edition opens with Chinese menus.

When chromium is missing or cannot start, the test is skipped with the reason (set
``CAL_REQUIRE_BROWSER=1`` to make that a failure instead, e.g. in CI where the browser is
known to be installed). A server that does not come up is a failure, with its log.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from codeagent_lite.workbook.lab_language import write_lab_language
from codeagent_lite.workbook.learner_dir import FOLDER_NAME

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
CHROMIUM = Path("/usr/bin/chromium")
REQUIRE_BROWSER_ENV = "CAL_REQUIRE_BROWSER"
INSTALL_HINT = "run `python scripts/ensure_browser.py` as root, or `apt-get install chromium`"

SERVER_START_TIMEOUT_S = 60.0
SERVER_STOP_TIMEOUT_S = 20.0
LOG_TAIL_LINES = 60

# User settings written before the server starts: no news pop-up or update check covering
# the page, and no autosave (belt and braces: the served notebooks are copies anyway).
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}


def skip_or_fail(reason: str) -> None:
    """Skip with the reason, or fail when the environment says the browser must be there."""
    if os.environ.get(REQUIRE_BROWSER_ENV) == "1":
        message = f"real-browser test cannot run: {reason} ({REQUIRE_BROWSER_ENV}=1 makes this a failure)"
        pytest.fail(message, pytrace=False)
    pytest.skip(f"real-browser test skipped: {reason}")


@pytest.fixture
def browser_skip_or_fail() -> Callable[[str], None]:
    """``skip_or_fail`` for a test that finds mid-way that the machine cannot show what it must check."""
    return skip_or_fail


@pytest.fixture(scope="session")
def browser_type_launch_args(
    browser_type_launch_args: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """pytest-playwright's launch options plus Debian's chromium (``playwright install`` is never used)."""
    if not CHROMIUM.exists():
        skip_or_fail(f"{CHROMIUM} is not installed ({INSTALL_HINT})")
    home = tmp_path_factory.mktemp("chromium-home")
    environment = dict(os.environ)
    for variable in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "TMPDIR"):
        folder = home / variable.lower()
        folder.mkdir()
        environment[variable] = str(folder)
    return {
        **browser_type_launch_args,
        "executable_path": str(CHROMIUM),
        "env": environment,
        "timeout": 60_000,
        "args": [
            "--no-sandbox",  # as root chromium refuses to start without it
            "--disable-gpu",
            "--disable-dev-shm-usage",  # containers often have a tiny /dev/shm
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-sync",
            "--no-first-run",
            "--metrics-recording-only",
        ],
    }


@pytest.fixture(scope="session")
def browser(launch_browser: Callable[[], Any]) -> Generator[Any, None, None]:
    """pytest-playwright's browser, but a chromium that cannot start is a skip with its error."""
    from playwright.sync_api import Error as PlaywrightError

    try:
        launched = launch_browser()
    except PlaywrightError as error:
        skip_or_fail(f"{CHROMIUM} could not start: {error}")
    yield launched
    launched.close()


@dataclass(frozen=True)
class LabServer:
    base_url: str
    token: str
    root_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes]

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}?token={self.token}"

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            return f"(no server log: {error})"
        return "\n".join(text.splitlines()[-lines:])


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def server_is_ready(base_url: str, token: str) -> bool:
    request = urllib.request.Request(f"{base_url}/api/status", headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            status: int = response.status
            return status == 200
    except (urllib.error.URLError, OSError):
        return False


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the server shuts its kernels down), then SIGKILL whatever is left of its process group."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=SERVER_STOP_TIMEOUT_S)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=SERVER_STOP_TIMEOUT_S)


def prepare_folders(base: Path, edition: str) -> tuple[Path, dict[str, str]]:
    """A private copy of the notebooks and private Jupyter folders; returns (root_dir, environment).

    The learner's own folder is left out of the copy: the notebooks make it from the stubs, as on a first run.
    """
    root_dir = base / "notebooks"
    skipped = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")

    def ignore(folder: str, names: list[str]) -> set[str]:
        learners = {FOLDER_NAME} if Path(folder) == NOTEBOOKS else set()
        return set(skipped(folder, names)) | (learners & set(names))

    shutil.copytree(NOTEBOOKS, root_dir, ignore=ignore)
    environment = dict(os.environ)
    environment.pop("JUPYTER_TOKEN", None)
    # Only the user-level folders move; the venv's own share/jupyter (the python3 kernelspec,
    # the widgets extension) and etc/jupyter (enabled server extensions) are still found.
    for variable in (
        "JUPYTER_CONFIG_DIR",
        "JUPYTER_DATA_DIR",
        "JUPYTER_RUNTIME_DIR",
        "JUPYTERLAB_SETTINGS_DIR",
        "JUPYTERLAB_WORKSPACES_DIR",
        "IPYTHONDIR",
        "TMPDIR",
    ):
        folder = base / variable.lower()
        folder.mkdir()
        environment[variable] = str(folder)
    settings_dir = Path(environment["JUPYTERLAB_SETTINGS_DIR"])
    for relative, values in LAB_SETTINGS.items():
        target = settings_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values), encoding="utf-8")
    write_lab_language(edition, settings_dir)
    return root_dir, environment


def start_server(base: Path, edition: str, attempts: int = 3) -> LabServer:
    root_dir, environment = prepare_folders(base, edition)
    failures = []
    for attempt in range(1, attempts + 1):
        port = free_port()
        token = secrets.token_hex(24)
        log_path = base / f"jupyter-server-{attempt}.log"
        command = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root_dir}",
            "--ServerApp.terminals_enabled=False",
            "--LabApp.expose_app_in_browser=True",
        ]
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=environment,
                cwd=root_dir,
                start_new_session=True,
            )
        server = LabServer(f"http://127.0.0.1:{port}", token, root_dir, log_path, process)
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if server_is_ready(server.base_url, token):
                return server
            if process.poll() is not None:
                break
            time.sleep(0.2)
        stop_server(process)
        tail = server.log_tail()
        failures.append(f"attempt {attempt} (port {port}, exit code {process.returncode}):\n{tail}")
        # Another program may have taken the free port between the probe and the bind: try a new one.
        if "already in use" not in tail:
            break
    pytest.fail("JupyterLab did not answer /api/status.\n\n" + "\n\n".join(failures), pytrace=False)


@pytest.fixture
def jupyter_lab(tmp_path: Path, request: pytest.FixtureRequest) -> Generator[LabServer, None, None]:
    """A private JupyterLab on 127.0.0.1 with a random token, stopped (and its kernels) even on failure.

    Its display language is the one of the test's ``edition`` parameter (English when the test has none).
    """
    callspec = getattr(request.node, "callspec", None)
    edition = callspec.params.get("edition", "en") if callspec is not None else "en"
    server = start_server(tmp_path, edition)
    request.node.stash[LAB_SERVER_KEY] = server
    try:
        yield server
    finally:
        stop_server(server.process)


LAB_SERVER_KEY = pytest.StashKey[LabServer]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Attach the server's log to a failing browser test's report: that is where kernel errors show."""
    report = yield
    server = item.stash.get(LAB_SERVER_KEY, None)
    if server is not None and report.failed:
        report.sections.append(("jupyter server log (tail)", server.log_tail()))
    return report
