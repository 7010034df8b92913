"""classroom/z2jh/config.yaml is a valid Zero to JupyterHub configuration for this classroom.

There is no Kubernetes here, so nothing is deployed. What is checked: the file, merged over the chart's defaults
the way helm merges values, passes the chart's own values schema (tests/classroom/data/z2jh, see SOURCE.md);
the check itself rejects plausible mistakes; and the parts the schema cannot know about agree with the rest of
the repository: the nbgrader files are those of classroom/jupyter_config/, the exchange volume is where they say,
the hub's hook gives students and the teacher the right settings and each student's pod a uid of its own, the
image's build context (classroom/z2jh/Dockerfile with its Dockerfile.dockerignore) holds no solutions and no
hidden tests, and its JupyterHub has the major version of the chart's hub.
Not checked: that the chart's templates render (needs helm), that the cluster accepts the pods, the GitHub login.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
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
        f"/etc/codeagent-lite/{folder}/{name}": JUPYTER_CONFIG / folder / name
        for folder, name in [
            ("exchange", "nbgrader_config.py"),
            ("student", "jupyter_server_config.py"),
            ("pod_student", "nbgrader_config.py"),
        ]
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


def hub_config(config: dict[str, Any]) -> Config:
    """The hub's extraConfig run as the chart runs it (exec with c)."""
    c = Config()
    for code in config["hub"]["extraConfig"].values():
        exec(compile(code, "extraConfig", "exec"), {"c": c})
    return c


def run_hub_hook(config: dict[str, Any], *, admin: bool) -> str:
    spawner = SimpleNamespace(user=SimpleNamespace(name="someone", admin=admin, id=7), environment={"KEPT": "1"})
    hub_config(config).KubeSpawner.pre_spawn_hook(spawner)
    assert spawner.environment["KEPT"] == "1", "the hook must keep the environment it was given"
    value: str = spawner.environment["JUPYTER_CONFIG_PATH"]
    return value


def test_students_get_the_student_settings_and_the_teacher_keeps_the_formgrader(config: dict[str, Any]) -> None:
    assert run_hub_hook(config, admin=False) == (
        "/etc/codeagent-lite/student:/etc/codeagent-lite/pod_student:/etc/codeagent-lite/exchange"
    )
    assert run_hub_hook(config, admin=True) == "/etc/codeagent-lite/exchange"


def test_each_students_pod_runs_as_a_uid_of_its_own_never_root(config: dict[str, Any]) -> None:
    uid = hub_config(config).KubeSpawner.uid
    uids = [uid(SimpleNamespace(user=SimpleNamespace(name=f"s{n}", id=n, admin=False))) for n in range(1, 200)]
    assert len(set(uids)) == len(uids) and min(uids) >= 1000


# ------------------------------------------------------------------------------------ the students' image


def dockerignore_rules(text: str) -> list[tuple[bool, str]]:
    rules = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            rules.append((line.startswith("!"), line.lstrip("!").strip("/")))
    return rules


def build_context(rules: list[tuple[bool, str]]) -> list[str]:
    """The repository's files docker sends for these rules: the last matching rule wins, and a rule matching a
    folder covers everything inside it (Docker's own semantics, `**` as any number of folders)."""
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    kept = []
    for path in listed.splitlines():
        parts = path.split("/")
        prefixes = ["/".join(parts[: index + 1]) for index in range(len(parts))]
        included = True
        for allow, pattern in rules:
            expression = re.escape(pattern).replace(r"\*\*/", "(.*/)?").replace(r"\*", "[^/]*")
            if any(re.fullmatch(expression, prefix) for prefix in prefixes):
                included = allow
        if included:
            kept.append(path)
    return kept


IGNORE = Z2JH / "Dockerfile.dockerignore"


def test_the_images_build_context_holds_no_solutions_and_no_hidden_tests() -> None:
    context = build_context(dockerignore_rules(IGNORE.read_text(encoding="utf-8")))
    assert not [path for path in context if path.startswith(("solutions/", "classroom/", "tests/"))]
    assert not [path for path in context if "/solutions/" in path or "__pycache__" in path]
    assert {"pyproject.toml", "README.md", "codeagent_lite/__init__.py", "notebooks/zh/00_start_here.ipynb"} <= set(
        context
    )


@pytest.mark.parametrize("dropped", ["*"])
def test_the_build_context_check_catches_an_open_context(dropped: str) -> None:
    rules = [rule for rule in dockerignore_rules(IGNORE.read_text(encoding="utf-8")) if rule != (False, dropped)]
    context = build_context(rules)
    assert any(path.startswith("solutions/") for path in context)
    assert any(path.startswith("classroom/source/") for path in context)


def test_the_image_is_built_from_the_dockerfile_and_copies_the_workbook_from_where_it_puts_it(
    config: dict[str, Any],
) -> None:
    defaults = load_yaml(CHART / "values.yaml")
    image = config["singleuser"]["image"]
    assert image["name"] != defaults["singleuser"]["image"]["name"]
    assert isinstance(image["tag"], str) and image["tag"]
    dockerfile = (Z2JH / "Dockerfile").read_text(encoding="utf-8")
    copied = re.search(r"^COPY \. (\S+)$", dockerfile, re.MULTILINE)
    assert copied is not None
    assert f'"{copied.group(1)}[lab,classroom]"' in dockerfile, "the package is installed, not editable"
    command = " ".join(config["singleuser"]["lifecycleHooks"]["postStart"]["exec"]["command"])
    assert f"{copied.group(1)}/notebooks" in command, "postStart copies the workbook from where the image put it"
    assert "docker build -f classroom/z2jh/Dockerfile" in (Z2JH / "config.yaml").read_text(encoding="utf-8")
    assert "docker build -f classroom/z2jh/Dockerfile" in (REPO / "classroom" / "README.md").read_text(encoding="utf-8")


def test_conda_and_binder_get_jupyterhub_and_nbgrader_from_environment_yml() -> None:
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
