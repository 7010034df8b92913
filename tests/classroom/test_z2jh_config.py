"""classroom/z2jh/config.yaml is a valid Zero to JupyterHub configuration for this classroom.

There is no Kubernetes here, so nothing is deployed. What is checked: the file, merged over the chart's defaults
the way helm merges values, passes the chart's own values schema (tests/classroom/data/z2jh, see SOURCE.md);
the check itself rejects plausible mistakes; and the parts the schema cannot know about agree with the rest of
the repository: the nbgrader files are those of classroom/jupyter_config/, the exchange volume is where they say,
the hub's hook gives students and the teacher the right settings, the image is the one repo2docker builds, and
its JupyterHub has the major version of the chart's hub.
Not checked: that the chart's templates render (needs helm), that the cluster accepts the pods, the GitHub login.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

REPO = Path(__file__).resolve().parents[2]
Z2JH = REPO / "classroom" / "z2jh"
CHART = Path(__file__).resolve().parent / "data" / "z2jh"
JUPYTER_CONFIG = REPO / "classroom" / "jupyter_config"


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def helm_merge(defaults: Any, override: Any) -> Any:
    """Helm's coalescing of values: maps merge key by key, anything else replaces, null removes a default key."""
    if not isinstance(defaults, dict) or not isinstance(override, dict):
        return copy.deepcopy(override)
    merged = copy.deepcopy(defaults)
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = helm_merge(merged.get(key), value)
    return merged


def schema_errors(values: dict[str, Any]) -> list[str]:
    schema = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(schema)
    merged = helm_merge(load_yaml(CHART / "values.yaml"), values)
    return [f"{'.'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(merged)]


@pytest.fixture
def config() -> dict[str, Any]:
    loaded: dict[str, Any] = load_yaml(Z2JH / "config.yaml")
    return loaded


def test_config_passes_the_charts_values_schema(config: dict[str, Any]) -> None:
    assert schema_errors(config) == []


def test_the_charts_own_defaults_pass_the_schema() -> None:
    assert schema_errors({}) == []


@pytest.mark.parametrize(
    ("mutate", "found"),
    [
        (lambda c: c["singleuser"].update(imag=c["singleuser"].pop("image")), "Additional properties"),
        (lambda c: c["singleuser"]["storage"].update(type="nfs"), "is not one of"),
        (lambda c: c["singleuser"]["extraFiles"]["nbgrader-exchange"].pop("mountPath"), "'mountPath' is a required"),
        (lambda c: c["cull"].update(timeout="an hour"), "is not of type"),
    ],
    ids=["misspelt key", "unknown storage type", "file without mount path", "timeout as text"],
)
def test_the_schema_check_rejects_plausible_mistakes(config: dict[str, Any], mutate: Any, found: str) -> None:
    mutate(config)
    errors = schema_errors(config)
    assert errors, "the broken configuration passed"
    assert any(found in error for error in errors), errors


def test_the_nbgrader_files_are_those_of_the_single_machine_hub(config: dict[str, Any]) -> None:
    files = config["singleuser"]["extraFiles"]
    by_mount = {entry["mountPath"]: entry["stringData"] for entry in files.values()}
    expected = {
        "/etc/codeagent-lite/exchange/nbgrader_config.py": JUPYTER_CONFIG / "exchange" / "nbgrader_config.py",
        "/etc/codeagent-lite/student/nbgrader_config.py": JUPYTER_CONFIG / "student" / "nbgrader_config.py",
        "/etc/codeagent-lite/student/jupyter_server_config.py": JUPYTER_CONFIG / "student" / "jupyter_server_config.py",
    }
    assert set(by_mount) == set(expected)
    for mount, source in expected.items():
        assert by_mount[mount] == source.read_text(encoding="utf-8"), f"{mount} differs from {source.name}"


def test_the_exchange_volume_is_mounted_where_nbgrader_looks(
    config: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CAL_NBGRADER_EXCHANGE", raising=False)
    exchange = PyFileConfigLoader("nbgrader_config.py", path=str(JUPYTER_CONFIG / "exchange")).load_config()
    storage = config["singleuser"]["storage"]
    mounts = {mount["name"]: mount["mountPath"] for mount in storage["extraVolumeMounts"]}
    volumes = {volume["name"]: volume for volume in storage["extraVolumes"]}
    assert mounts["nbgrader-exchange"] == exchange.Exchange.root
    claim = volumes["nbgrader-exchange"]["persistentVolumeClaim"]["claimName"]
    pvc = load_yaml(Z2JH / "exchange-pvc.yaml")
    assert (pvc["kind"], pvc["metadata"]["name"]) == ("PersistentVolumeClaim", claim)
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"], "every student's pod mounts the exchange at once"


def run_hub_hook(config: dict[str, Any], *, admin: bool) -> str:
    """Run the hub's extraConfig as the chart does (exec with c), then its hook on a stand-in spawner."""
    c = Config()
    for code in config["hub"]["extraConfig"].values():
        exec(compile(code, "extraConfig", "exec"), {"c": c})
    spawner = SimpleNamespace(user=SimpleNamespace(name="someone", admin=admin), environment={"KEPT": "1"})
    c.KubeSpawner.pre_spawn_hook(spawner)
    assert spawner.environment["KEPT"] == "1", "the hook must keep the environment it was given"
    value: str = spawner.environment["JUPYTER_CONFIG_PATH"]
    return value


def test_students_get_the_student_settings_and_the_teacher_keeps_the_formgrader(config: dict[str, Any]) -> None:
    assert run_hub_hook(config, admin=False) == "/etc/codeagent-lite/student:/etc/codeagent-lite/exchange"
    assert run_hub_hook(config, admin=True) == "/etc/codeagent-lite/exchange"


def test_the_image_is_built_by_repo2docker_from_this_repository(config: dict[str, Any]) -> None:
    defaults = load_yaml(CHART / "values.yaml")
    image = config["singleuser"]["image"]
    assert image["name"] != defaults["singleuser"]["image"]["name"]
    assert isinstance(image["tag"], str) and image["tag"]
    text = (Z2JH / "config.yaml").read_text(encoding="utf-8")
    build = re.search(r"repo2docker [^\n]*--target-repo-dir (\S+)", text)
    assert build is not None, "config.yaml shows the repo2docker command that builds the image"
    command = " ".join(config["singleuser"]["lifecycleHooks"]["postStart"]["exec"]["command"])
    assert f"{build.group(1)}/notebooks" in command, "postStart copies the workbook from where repo2docker put it"
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"--target-repo-dir {build.group(1)}" in readme


def test_the_image_gets_jupyterhub_and_nbgrader_from_environment_yml() -> None:
    # repo2docker installs environment.yml; KubeSpawner runs jupyterhub-singleuser from it.
    lines = (REPO / "environment.yml").read_text(encoding="utf-8").splitlines()
    names = {re.split(r"[<>=\s\[]", line.strip()[2:], maxsplit=1)[0] for line in lines if line.strip().startswith("- ")}
    assert {"jupyterhub", "nbgrader", "jupyterlab"} <= names


def test_the_chart_data_names_its_source_and_licence() -> None:
    source = (CHART / "SOURCE.md").read_text(encoding="utf-8")
    assert re.search(r"zero-to-jupyterhub-k8s.*commit `[0-9a-f]{40}`", source, re.DOTALL)
    assert "BSD 3-Clause" in source
    assert "BSD 3-Clause" in (CHART / "LICENSE").read_text(encoding="utf-8")


# --------------------------------------------------------------------------- the hub's version and the image's


def _chart_hub_version() -> Version:
    """The JupyterHub the chart's hub image runs: its pinned requirement, which the chart's appVersion names too."""
    pins = [
        line.split("==", 1)[1].strip()
        for line in (CHART / "hub-image-requirements.txt").read_text(encoding="utf-8").splitlines()
        if line.startswith("jupyterhub==")
    ]
    assert len(pins) == 1, pins
    app_version = load_yaml(CHART / "Chart.yaml")["appVersion"]
    assert Version(pins[0]) == Version(str(app_version)), "the chart's appVersion is its hub's JupyterHub"
    return Version(pins[0])


def _classroom_jupyterhub_pins() -> dict[str, SpecifierSet]:
    """The jupyterhub requirement of the classroom extra (pyproject.toml) and of the image (environment.yml)."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    (extra,) = [Requirement(spec) for spec in extras["classroom"] if Requirement(spec).name == "jupyterhub"]
    lines = (REPO / "environment.yml").read_text(encoding="utf-8").splitlines()
    (conda,) = [line.strip()[2:] for line in lines if re.match(r"\s*- jupyterhub[<>=!\s]", line)]
    return {"pyproject.toml": extra.specifier, "environment.yml": SpecifierSet(conda.removeprefix("jupyterhub"))}


def test_the_images_jupyterhub_has_the_major_version_of_the_charts_hub() -> None:
    # KubeSpawner starts jupyterhub-singleuser from the image (environment.yml); the chart's hub talks to it.
    # A major version apart, the two disagree on the hub's API, so each pin must admit the chart's hub version
    # and nothing of another major version.
    hub = _chart_hub_version()
    for where, specifier in _classroom_jupyterhub_pins().items():
        assert hub in specifier, f"{where} pins jupyterhub{specifier}, which excludes the chart's hub {hub}"
        for other_major in (Version(f"{hub.major - 1}.99"), Version(f"{hub.major + 1}.0")):
            assert other_major not in specifier, f"{where} admits jupyterhub {other_major} beside the chart's {hub}"


def test_the_pins_agree_between_pyproject_and_environment_yml() -> None:
    pins = _classroom_jupyterhub_pins()
    assert pins["pyproject.toml"] == pins["environment.yml"]


def test_the_local_hub_is_the_version_the_chart_runs() -> None:
    # The hub tests (test_classroom_hub.py) and `make classroom` use the same major version as the chart's hub.
    import jupyterhub

    assert Version(jupyterhub.__version__).major == _chart_hub_version().major
