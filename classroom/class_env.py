"""The students' environment: a shared, read-only install outside the teacher's checkout.

    python classroom/class_env.py --prefix /opt/codeagent-lite-class      # what `make classroom` runs, as root

Students' servers must not run from the teacher's editable .venv: an editable install imports the package from
the checkout (where the solutions and the hidden tests are), and a venv its users can write is code the next
student runs. So this builds a venv of its own with a non-editable install of the package and its `lab` and
`classroom` extras (JupyterLab, jupyterhub-singleuser, nbgrader, ipykernel): prebuilt wheels, no compiler, no
test tools. Everything in it belongs to root and is readable by everyone, writable by nobody else. The build is
checked the way a student would use it: `import codeagent_lite, nbgrader, jupyterhub` as the `nobody` account.

It is rebuilt only when the package's files change (a fingerprint is kept in the prefix). The interpreter must be
one every account can run: a Python under /root (pyenv) is not, so /usr/bin/python3 is used then.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FINGERPRINT = ".codeagent-lite-class"
SYSTEM_PYTHON = Path("/usr/bin/python3")
CHECK = "import codeagent_lite, nbgrader, jupyterhub, jupyterlab, ipykernel"


class ClassEnvError(RuntimeError):
    """The students' environment could not be built; the message says what was expected."""


def reachable_by_everyone(path: Path) -> bool:
    """Every folder above path lets others through, and path itself is readable by others."""
    resolved = path.resolve()
    for folder in resolved.parents:
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return False
    return bool(os.stat(resolved).st_mode & stat.S_IROTH)


def base_prefix(python: Path) -> Path:
    result = subprocess.run(
        [str(python), "-c", "import sys; print(sys.base_prefix)"], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise ClassEnvError(f"{python} does not run: {result.stderr.strip()[:200]}")
    return Path(result.stdout.strip())


def new_enough(python: Path) -> bool:
    result = subprocess.run(
        [str(python), "-c", "import sys; print(sys.version_info >= (3, 11))"],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() == "True"


def choose_python(given: Path | None) -> Path:
    candidates = [given] if given else [Path(sys.executable), SYSTEM_PYTHON]
    for python in candidates:
        if python is None or not python.exists():
            continue
        prefix = base_prefix(python)
        if (
            new_enough(python)
            and reachable_by_everyone(prefix / "lib")
            and reachable_by_everyone(Path(os.path.realpath(python)))
        ):
            return python
    raise ClassEnvError(
        f"expected a Python 3.11+ every account can run; {', '.join(map(str, filter(None, candidates)))} "
        "are not readable by others (a Python under /root, for example): pass --python /usr/bin/python3"
    )


def fingerprint() -> str:
    digest = hashlib.sha256()
    for path in sorted([REPO / "pyproject.toml", *(REPO / "codeagent_lite").rglob("*")]):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def make_read_only_for_others(prefix: Path) -> None:
    for folder, directories, files in os.walk(prefix):
        for name in directories:
            if not os.path.islink(os.path.join(folder, name)):
                os.chmod(os.path.join(folder, name), 0o755)
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                mode = os.stat(path).st_mode
                os.chmod(path, 0o755 if mode & stat.S_IXUSR else 0o644)
    os.chmod(prefix, 0o755)


def owned_by_root_alone(prefix: Path) -> bool:
    """The prefix and its bin belong to root and nobody else may write them (else rebuild, never reuse)."""
    for folder in (prefix, prefix / "bin"):
        info = os.stat(folder)
        if info.st_uid != 0 or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
    return True


def check_as_nobody(prefix: Path) -> None:
    result = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", str(prefix / "bin" / "python"), "-c", CHECK],
        capture_output=True,
        text=True,
        cwd="/",
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
        check=False,
    )
    if result.returncode != 0:
        raise ClassEnvError(f"the students' environment does not work for another account: {result.stderr[-400:]}")


def build(prefix: Path, python: Path | None) -> str:
    if os.geteuid() != 0:
        raise ClassEnvError(f"building {prefix} for the class needs root (it belongs to root, read-only for students)")
    wanted = fingerprint()
    marker = prefix / FINGERPRINT
    if marker.is_file() and marker.read_text(encoding="ascii").strip() == wanted and owned_by_root_alone(prefix):
        return f"{prefix}: up to date"
    interpreter = choose_python(python)
    if prefix.exists():
        shutil.rmtree(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(interpreter), "-m", "venv", str(prefix)], check=True)
    install = [str(prefix / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile"]
    result = subprocess.run(
        [*install, "--disable-pip-version-check", f"{REPO}[lab,classroom]"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise ClassEnvError(f"pip could not install the package into {prefix}:\n{result.stderr[-1500:]}")
    make_read_only_for_others(prefix)
    check_as_nobody(prefix)
    marker.write_text(wanted + "\n", encoding="ascii")
    marker.chmod(0o644)
    return f"{prefix}: built with {interpreter}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", type=Path, default=Path("/opt/codeagent-lite-class"))
    parser.add_argument(
        "--python", type=Path, default=None, help="the interpreter (default: this one, or the system's)"
    )
    arguments = parser.parse_args()
    try:
        print(build(arguments.prefix.resolve(), arguments.python), flush=True)
    except (ClassEnvError, subprocess.CalledProcessError, OSError) as error:
        print(f"class environment: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
