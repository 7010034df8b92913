"""One model for the class: loaded once, served to every student's notebook 06, by an account that only reads it.

The hub starts the package's model server (codeagent_lite.providers.local_server) once, as a JupyterHub service,
behind the class's reply cache (reply_cache.py, beside this file): twenty students running notebook 06 send the
same greedy requests, and each is decoded once for the class. The cache is the service's process and starts the model
server as its child, so both run as the same account.
Which engine: llama.cpp's llama-server where `make local-server` built it (parallel slots decoded together, a prompt
cache per slot: what a class needs), else llama-cpp-python's own server (one request at a time). Who runs it: not
root and not the teacher, but a system account of its own (CAL_HUB_MODEL_USER, default `codeagent-model`, made by
the hub like the students' accounts, with no home, no shell and no password, and removed with them). The engine
parses whatever 20 kernels send it and runs native code; if that ever goes wrong, it goes wrong as an account that
owns nothing. What it reads: root-owned copies of the model file, the llama-server executable and the reply cache's
program in a folder of their own (CAL_HUB_MODEL_DIR, default /var/lib/codeagent-lite-model, mode 0750, group the model
account's), since the originals sit in the teacher's cache and checkout where no other account may enter; it can read
them and change nothing.
The interpreter it runs is the students' shared read-only install, which has the package; llama-cpp-python is not
in it, so the fallback runs only where the account can import llama-cpp-python from an environment it may read
(checked as that account before the hub starts it), and otherwise the hub says why there is no class model.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import accounts

SERVICE_NAME = "class-model"
CACHE_FILE = "reply_cache.py"
CACHE = Path(__file__).resolve().with_name(CACHE_FILE)
"""The service: the class's reply cache, which starts the package's model server behind it (its docstring says why)."""
MODEL_FILE = "model.gguf"
BINARY_FILE = "llama-server"
MAX_SLOTS = 32
"""Slots: one per student up to this (each keeps a 2048-token context; Gemma 3 270M's is small)."""

PROBE = """
import os, sys
sys.path.insert(0, os.path.dirname(sys.argv[4]))
import reply_cache  # the cache's copy, and through it the package's model server
if sys.argv[3] == "llama-cpp-python":
    import llama_cpp.server
open(sys.argv[1], "rb").close()
if sys.argv[2] and not os.access(sys.argv[2], os.X_OK):
    raise SystemExit(sys.argv[2] + " is not executable for this account")
try:
    open(sys.argv[1], "r+b").close()
except PermissionError:
    pass
else:
    raise SystemExit(sys.argv[1] + " is writable by the model account; it must only read it")
"""
"""Run as the model account: it can start the server and read the files, and cannot change the model."""


@dataclass(frozen=True)
class Engine:
    """The files the model service reads: the GGUF model, llama-server where it is built, the reply cache's program."""

    model: Path
    binary: Path | None
    cache: Path = CACHE

    @property
    def backend(self) -> str:
        return "llama-server" if self.binary else "llama-cpp-python"

    def describe(self, slots: int) -> str:
        shared = "; in front, the class's reply cache: identical greedy requests decoded once"
        if self.binary:
            engine = f"llama.cpp's llama-server (built here): {slots} slots decoded together, a prompt cache per slot"
            return engine + shared
        return (
            "llama-cpp-python's server, because llama-server is not built (`make local-server`): "
            f"one request at a time, the class's requests queue{shared}"
        )


@dataclass(frozen=True)
class ModelService:
    """The hub service that serves the class's model, and the line the hub prints about it."""

    command: list[str]
    user: str  # empty: the hub's own account (the one-person rehearsal, never root)
    cwd: str
    url: str
    note: str

    def service(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": SERVICE_NAME, "command": self.command}
        if self.user:
            entry.update(user=self.user, cwd=self.cwd)
        return entry


def find_engine() -> Engine | str:
    """The teacher's model file and llama-server build, from the hub's environment; or why there is none."""
    try:
        from codeagent_lite.json_text_adapter import ProviderError
        from codeagent_lite.providers.llama_server_build import llama_server_build
        from codeagent_lite.providers.local_llama import ensure_model_file
    except ImportError as error:
        return f"the package's model server does not import in the hub's environment ({error})"
    try:
        model = ensure_model_file()
    except ProviderError as error:
        return str(error)
    build = llama_server_build()
    return Engine(model, build.binary if build.ready else None)


def _copy(source: Path, target: Path, mode: int, gid: int) -> Path:
    """A root-owned copy with mode (copied again only when the source changed), group gid."""
    fresh = source.stat()
    known = target.lstat() if target.exists() else None
    if known is None or (known.st_size, int(known.st_mtime)) != (fresh.st_size, int(fresh.st_mtime)):
        partial = target.with_name(target.name + ".partial")
        partial.unlink(missing_ok=True)
        os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))  # root's alone while it is written
        shutil.copyfile(source, partial)
        shutil.copystat(source, partial)  # the time that tells a later start whether the source changed
        os.chmod(partial, 0o600)
        os.chown(partial, 0, gid)
        os.chmod(partial, mode)
        os.replace(partial, target)
    os.chown(target, 0, gid)
    os.chmod(target, mode)
    return target


def publish(engine: Engine, folder: Path, gid: int) -> Engine:
    """Copies of the engine's files that the model account (group gid) may read and nobody but root may change."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chown(folder, 0, gid)
    os.chmod(folder, 0o750)
    binary = _copy(engine.binary, folder / BINARY_FILE, 0o750, gid) if engine.binary else None
    cache = _copy(engine.cache, folder / CACHE_FILE, 0o640, gid)
    return Engine(_copy(engine.model, folder / MODEL_FILE, 0o640, gid), binary, cache)


def check_as(account: str, python: Path, engine: Engine, cwd: Path) -> str:
    """'' when account can run the server with python and read (not write) the files; else what failed.

    Started exactly as the hub starts the service (JupyterHub's own set_user_setuid, the same folder), so what
    passes here is what will run.
    """
    from jupyterhub.spawner import set_user_setuid  # type: ignore[import-untyped]  # no type hints

    try:
        result = subprocess.run(
            [str(python), "-c", PROBE, str(engine.model), str(engine.binary or ""), engine.backend, str(engine.cache)],
            capture_output=True,
            text=True,
            cwd=cwd,
            env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
            preexec_fn=set_user_setuid(account, chdir=False),
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"{type(error).__name__}: {error}"[:300]
    if result.returncode == 0:
        return ""
    return (result.stderr.strip().splitlines() or [f"exit code {result.returncode}"])[-1][:300]


def server_command(python: Path, engine: Engine, port: int, slots: int, threads: int) -> list[str]:
    command = [str(python), str(engine.cache), "--host", "127.0.0.1", "--port", str(port)]
    command += ["--threads", str(threads), "--parallel", str(slots)]
    command += ["--model", str(engine.model)]
    if engine.binary:
        return [*command, "--llama-server", str(engine.binary)]
    return [*command, "--backend", "llama-cpp-python"]


def plan(
    *,
    account: str,
    folder: Path,
    pythons: list[Path],
    port: int,
    slots: int,
    threads: int,
) -> ModelService | str:
    """The class's model service, run as account (made here if needed) from the first of pythons that works.

    An empty account is the rehearsal: the hub's own account (not root) with the teacher's files as they are.
    Returns why there is no class model instead when the engine is not there or the account cannot run it.
    """
    engine = find_engine()
    if isinstance(engine, str):
        return engine
    url = f"http://127.0.0.1:{port}/v1"
    words = engine.describe(slots)
    if not account:
        command = server_command(pythons[0], engine, port, slots, threads)
        return ModelService(command, "", "", url, f"{url}: {words}; {threads} threads, as the hub's own account")
    try:
        entry = accounts.create_service_account(account)
        copies = publish(engine, folder, entry.pw_gid)
    except (accounts.AccountError, OSError) as error:
        return f"the model server's account or files could not be prepared: {error}"
    failures = []
    for python in pythons:
        failure = check_as(account, python, copies, folder)
        if not failure:
            command = server_command(python, copies, port, slots, threads)
            who = f"as {account} (uid {entry.pw_uid}), reading {folder} and changing nothing"
            return ModelService(command, account, str(folder), url, f"{url}: {words}; {threads} threads, {who}")
        failures.append(f"{python}: {failure}")
    hint = "; `make local-server` builds llama-server, which it can run" if engine.binary is None else ""
    return f"the account {account} cannot run the {engine.backend} server ({'; '.join(failures)}){hint}"
