"""The local model in a process of its own, behind an OpenAI-compatible API on 127.0.0.1.

llama.cpp is native code: an instruction this CPU lacks (a build for another machine), a
bad pointer or the kernel's out-of-memory killer ends the *process* it runs in. Loaded into
the learner's kernel, that was the kernel, with no message. So the model runs in an engine
process, and the notebook, the CLI and the tests talk to it over HTTP through the same
provider as a remote model (``OpenAICompletionsProvider``). When the engine dies, the next
call raises a ``ProviderFailure`` that names the signal and says what to do.

Two servers can be that engine, and ``--backend auto`` (the default) picks:

* **llama.cpp's ``llama-server``, where it is built** (``llama_server_build``, ``make
  local-server``): ``--parallel`` slots decoded together (continuous batching), each slot
  keeping its evaluated prompt (``cache_prompt``, on by default), so a class's requests share
  the CPU instead of queueing. Measured on this 2-core machine (Gemma 3 270M q4, 2 threads):
  one stream decodes 47-52 tokens/s, as llama-cpp-python's does; 20 concurrent requests with a
  shared 330-token prefix on ``-np 20`` gave about 62 tokens/s together. (An earlier note here
  said it decoded 10x slower; measured again, that did not hold.)
* **Otherwise llama-cpp-python's own server** (``llama_cpp_engine``, a thin wrapper of
  ``python -m llama_cpp.server``): it comes with the wheel the workbook builds anyway, starts
  in about a second, and answers one request at a time (one ``Llama`` object behind a lock),
  which is all one learner sends; it keeps the last request's prompt, so consecutive requests
  sharing the 740-token worked-example prefix read only their last few tokens.

The first line the server prints says which backend serves and why.

``python -m codeagent_lite.providers.local_server --host 127.0.0.1 --port P [--parallel N]
[--threads T] [--model FILE] [--llama-server BINARY]`` is the class's server (a JupyterHub
service runs exactly that, as an account of its own that only reads the files); a kernel
that finds ``CAL_LOCAL_MODEL_URL`` uses that server, otherwise ``local_model_server()``
starts a child for itself: in its own session (a Ctrl+C or a kernel interrupt does not
reach it), stopped at exit, and ended by the system when its parent dies, so no orphan
keeps 0.6 GB. ``--smoke-test`` asks one token in a separate process: what the engine build
runs before it says "ready".
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..action_schema import action_json_schema
from ..json_text_adapter import ProviderError, ProviderResponse
from ..json_text_messages import ProviderMessage
from ..kernel_types import ToolSpec
from .failure import FailureCode, ProviderFailure, engine_end
from .llama_cpp_engine import MODEL_ALIAS
from .local_engine import SHARED_SERVER_VARIABLE, cores, shared_server_url
from .openai_completions import CompletionSettings, OpenAICompletionsProvider
from .prompting import DEFAULT_EXAMPLES, SCHEMA_EXAMPLES, WorkedExample, render_completion_prompt

__all__ = [
    "SHARED_SERVER_VARIABLE",
    "Backend",
    "BackendChoice",
    "EngineGuard",
    "EngineStartError",
    "GemmaProvider",
    "LocalMode",
    "LocalModelServer",
    "connect_local_server",
    "llama_server",
    "local_model_server",
    "main",
    "serve",
    "start_local_server",
]


Backend = Literal["llama-cpp-python", "llama-server"]
LocalMode = Literal["free_text", "schema"]
MODES: tuple[LocalMode, ...] = ("free_text", "schema")

CONTEXT_PER_SLOT = 2048
"""The worked-example prompt alone is about 740 tokens; 2048 leaves room for a run's history."""

LOCAL_TIMEOUT_SECONDS = 600.0
"""A call's deadline. Generous on purpose: on a shared server a request may wait behind a
class's worth of others, and giving up on it would waste the place it waited for.
llama-server keeps a request beyond its slots in its own first-come queue and answers other
requests (``GET /models``) meanwhile; its socket timeout (default 3600 s) is longer than this."""


class EngineStartError(ProviderFailure):
    """The engine ended or stayed silent before it was ready; ``cause`` says which, without its log."""

    def __init__(self, cause: ProviderFailure, log_tail: str) -> None:
        super().__init__(FailureCode.ENGINE_NOT_READY, ended=cause, log_tail=log_tail)
        self.cause = cause


# --------------------------------------------------------------------------- the server process


@dataclass(frozen=True, slots=True)
class LocalModelServer:
    """A model server this process can ask: a child it started, or a shared one (``process`` None)."""

    base_url: str
    backend: str
    note: str = ""
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, compare=False)
    temporary_log: bool = False
    """The log is a temporary file of ours: deleted when the server stops."""

    @property
    def port(self) -> int:
        return int(urllib.parse.urlsplit(self.base_url).port or 0)

    def exit_message(self, wait_seconds: float = 0.0) -> ProviderFailure | None:
        """How the engine ended (its signal or exit code, with what to do), or None while it runs."""
        if self.process is None:
            return None
        try:
            code = self.process.wait(timeout=wait_seconds) if wait_seconds > 0 else self.process.poll()
        except subprocess.TimeoutExpired:
            code = None
        return None if code is None else engine_end(code)

    def log_tail(self, lines: int = 8) -> str:
        if self.log_path is None:
            return ""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace_seconds: float = 5.0) -> None:
        """End the child (SIGTERM, then SIGKILL); a shared server is left alone."""
        if self.process is not None:
            _stop(self.process, grace_seconds)
        if self.temporary_log and self.log_path is not None:
            with contextlib.suppress(OSError):
                self.log_path.unlink()

    def provider(self, mode: LocalMode = "free_text", **options: object) -> GemmaProvider | EngineGuard:
        """A provider for this server in ``mode``; a child's engine crash becomes a named ``ProviderFailure``."""
        inner = GemmaProvider(self.base_url, mode, **options)  # type: ignore[arg-type]
        return inner if self.process is None else EngineGuard(inner, self)


def _signal(process: subprocess.Popen[bytes], number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, number)  # its own session: the group is the engine and nothing else


def _stop(process: subprocess.Popen[bytes], grace_seconds: float) -> None:
    if process.poll() is not None:
        return
    _signal(process, signal.SIGTERM)
    try:
        process.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        _signal(process, signal.SIGKILL)
        process.wait()
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    # Linux: the system sends SIGKILL to the engine when the process that started it dies,
    # even by SIGKILL, so a killed kernel leaves no model server behind.
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port(host: str = "127.0.0.1") -> int:
    # Free now; another process could take it before the engine binds, which then shows as a
    # clear startup error, not a silent mix-up.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
"""Asks 127.0.0.1 itself, never through an HTTP proxy the environment may name."""


def is_ready(base_url: str, timeout: float = 1.0) -> bool:
    """True when ``GET /v1/models`` answers 200."""
    try:
        with _DIRECT.open(f"{base_url}/models", timeout=timeout) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def engine_command(
    backend: Backend,
    model_path: Path,
    *,
    host: str,
    port: int,
    parallel: int = 1,
    threads: int | None = None,
    python: str = sys.executable,
    binary: Path | None = None,
) -> list[str]:
    """The command line of the engine process for ``backend``."""
    threads = threads or cores()
    if backend == "llama-server":
        if binary is None:
            raise ValueError("the llama-server backend needs the built binary")
        return [
            str(binary),
            "--model", str(model_path),
            "--host", host,
            "--port", str(port),
            "--alias", MODEL_ALIAS,
            "--parallel", str(parallel),
            "--ctx-size", str(CONTEXT_PER_SLOT * parallel),
            "--threads", str(threads),
            "--threads-batch", str(threads),
            "--cont-batching",
            "--cache-prompt",
            "--no-webui",
            "--no-slots",  # GET /slots shows what each slot is decoding: one student must not read another's
        ]  # fmt: skip
    return [
        python, "-m", "codeagent_lite.providers.llama_cpp_engine",
        "--model", str(model_path),
        "--host", host,
        "--port", str(port),
        "--threads", str(threads),
        "--n-ctx", str(CONTEXT_PER_SLOT),
        "--exit-with-parent",
    ]  # fmt: skip


_LOG_PREFIX = "codeagent-lite-engine-"


def _remove_orphaned_logs() -> None:
    """Delete the temporary engine logs of processes that are gone (a kernel killed before its exit handlers ran)."""
    for path in Path(tempfile.gettempdir()).glob(f"{_LOG_PREFIX}*-*.log"):
        owner = path.name[len(_LOG_PREFIX) :].split("-", 1)[0]
        if not owner.isdigit():
            continue
        try:
            os.kill(int(owner), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                path.unlink()
        except OSError:  # alive, but not ours to signal
            continue


def _engine_files(backend: Backend, model: str | Path | None, binary: Path | None) -> tuple[Path, Path | None]:
    """The model file and, for llama-server, its executable.

    Given explicitly (the class's server runs as an account of its own, with copies it may only
    read), a file is used as it is; left out, the user's own are found (and the model assembled).
    """
    from .llama_server_build import llama_server_build
    from .local_llama import ensure_model_file

    path = Path(model) if model is not None and Path(model).is_file() else ensure_model_file(model)
    if backend != "llama-server":
        return path, None
    return path, binary if binary is not None else llama_server_build().binary


def start_local_server(
    command: Sequence[str] | None = None,
    *,
    backend: Backend = "llama-cpp-python",
    host: str = "127.0.0.1",
    port: int | None = None,
    parallel: int = 1,
    threads: int | None = None,
    model_path: str | Path | None = None,
    binary: Path | None = None,
    startup_timeout: float = 120.0,
    log_path: str | Path | None = None,
    note: str = "",
    python: str = sys.executable,
) -> LocalModelServer:
    """Start an engine process and return once ``GET /v1/models`` answers 200.

    ``command`` replaces the engine's command line (the tests run a fake engine that way);
    ``{port}`` in it is filled in. Raises ``ProviderError`` when the engine dies or stays
    silent before it is ready, naming the signal and quoting its log.
    """
    chosen_port = free_port(host) if port is None else port
    base_url = f"http://{host}:{chosen_port}/v1"
    if command is None:
        model, executable = _engine_files(backend, model_path, binary)
        command = engine_command(
            backend,
            model,
            host=host,
            port=chosen_port,
            parallel=parallel,
            threads=threads,
            python=python,
            binary=executable,
        )
    else:
        command = [part.replace("{port}", str(chosen_port)) for part in command]
    temporary = log_path is None
    if log_path is None:
        _remove_orphaned_logs()
        handle, name = tempfile.mkstemp(prefix=f"{_LOG_PREFIX}{os.getpid()}-", suffix=".log")
        os.close(handle)
        log_path = name
    log_file_path = Path(log_path)
    with log_file_path.open("wb") as log_file:
        process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,  # never written: its end of file tells the engine we are gone
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
    note = note or f"{backend} in a process of its own"
    server = LocalModelServer(base_url, backend, note, log_file_path, process, temporary_log=temporary)
    atexit.register(server.stop)
    deadline = time.monotonic() + startup_timeout
    while not is_ready(base_url):
        ended = server.exit_message()
        if ended is not None:
            tail = server.log_tail()
            server.stop()
            raise EngineStartError(ended, tail)
        if time.monotonic() > deadline:
            tail = server.log_tail()
            server.stop()
            raise EngineStartError(
                ProviderFailure(FailureCode.ENGINE_SILENT, seconds=format(startup_timeout, "g")), tail
            )
        time.sleep(0.1)
    return server


def connect_local_server(base_url: str, backend: str = "shared") -> LocalModelServer:
    """A server started elsewhere (the class's); ``ProviderFailure`` when it does not answer."""
    url = base_url.rstrip("/")
    if not is_ready(url, timeout=5.0):
        raise ProviderFailure(FailureCode.SHARED_SERVER_DOWN, url=url, variable=SHARED_SERVER_VARIABLE)
    return LocalModelServer(url, backend, note=f"the shared model server at {url}")


_OWN: list[LocalModelServer] = []


def local_model_server(**options: object) -> LocalModelServer:
    """The model server for this process: the class's when ``CAL_LOCAL_MODEL_URL`` names one,
    else a child of this process, started once and reused (a dead one is replaced)."""
    shared = shared_server_url()
    if shared:
        return connect_local_server(shared)
    if _OWN and _OWN[0].exit_message() is None:
        return _OWN[0]
    _OWN.clear()
    _OWN.append(start_local_server(**options))  # type: ignore[arg-type]
    return _OWN[0]


# --------------------------------------------------------------------------- providers


MARK_FIELD = "class_cache"
"""The body field of a reply the class's reply cache (classroom/reply_cache.py) served with no model call for this
request: "hit" (stored) or "joined" (an identical request was in flight)."""


@dataclass(frozen=True, slots=True)
class SharedReply(ProviderResponse):
    """A reply the class's reply cache answered without a model call for this request: ``served`` hit or joined."""

    served: str = "hit"


class GemmaProvider(OpenAICompletionsProvider):
    """Gemma 3 270M on a local server: worked examples, greedy, repeat_penalty 1.0, stop at newline.

    ``"schema"`` constrains decoding with the parser's own ``action_json_schema()`` and uses
    the examples written ``type`` first, the order that grammar forces.
    """

    def __init__(
        self,
        base_url: str,
        mode: LocalMode = "free_text",
        *,
        examples: Sequence[WorkedExample] | None = None,
        timeout: float = LOCAL_TIMEOUT_SECONDS,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.mode: LocalMode = mode
        self.examples = (
            tuple(examples) if examples is not None else SCHEMA_EXAMPLES if mode == "schema" else DEFAULT_EXAMPLES
        )
        settings = CompletionSettings(json_schema=action_json_schema() if mode == "schema" else None)
        super().__init__(base_url, MODEL_ALIAS, self._render, settings, timeout=timeout)

    def _render(self, messages: Sequence[ProviderMessage], tools: Sequence[ToolSpec]) -> str:
        return render_completion_prompt(messages, tools, self.examples)

    def read_completion(self, body_text: str) -> ProviderResponse:
        """The reply, as a ``SharedReply`` when the class's reply cache answered it without a model call."""
        response = super().read_completion(body_text)
        served = json.loads(body_text).get(MARK_FIELD) if MARK_FIELD in body_text else None
        if served not in ("hit", "joined"):
            return response
        return SharedReply(response.text, response.input_tokens, response.output_tokens, response.finish_reason, served)


@dataclass(frozen=True, slots=True)
class EngineGuard:
    """A provider whose engine is a child of this process: a failed call first asks whether it died.

    A crash shows up at the client as a dropped connection; the process's exit status says
    why (SIGILL, SIGSEGV, SIGKILL...), and that is the error the learner gets.
    """

    inner: GemmaProvider
    server: LocalModelServer

    @property
    def mode(self) -> LocalMode:
        return self.inner.mode

    def build_prompt(self, messages: Sequence[ProviderMessage], tools: Sequence[ToolSpec]) -> str:
        return self.inner.build_prompt(messages, tools)

    def complete(
        self, *, messages: Sequence[ProviderMessage], tools: Sequence[ToolSpec], max_output_tokens: int
    ) -> ProviderResponse:
        ended = self.server.exit_message()
        if ended is None:
            try:
                return self.inner.complete(messages=messages, tools=tools, max_output_tokens=max_output_tokens)
            except ProviderError:
                # The socket closes as the process dies; its exit status follows a moment later.
                ended = self.server.exit_message(wait_seconds=2.0)
                if ended is None:
                    raise
        raise ProviderFailure(FailureCode.ENGINE_GONE, ended=ended)


@contextlib.contextmanager
def llama_server(
    model_path: str | Path | None = None,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    startup_timeout: float = 120.0,
    extra_args: Sequence[str] = (),
    log_path: str | Path | None = None,
) -> Iterator[LocalModelServer]:
    """llama-cpp-python's stock server (``python -m llama_cpp.server``) for a ``with`` block.

    For chat-completions tests of ``OpenAICompatibleProvider``; the workbook's own engine is
    ``llama_cpp_engine``. Note its default ``repeat_penalty`` is 1.1, not the workbook's 1.0.
    """
    from .local_llama import ensure_model_file

    path = ensure_model_file(model_path)
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host", host, "--port", "{port}"]
    server = start_local_server(
        [*command, *extra_args], host=host, port=port, startup_timeout=startup_timeout, log_path=log_path
    )
    try:
        yield server
    finally:
        server.stop()


# --------------------------------------------------------------------------- smoke test


def _one_token(base_url: str) -> ProviderFailure | None:
    """None when the server returned one completion token, else what went wrong."""
    request = urllib.request.Request(
        f"{base_url}/completions",
        data=json.dumps({"model": MODEL_ALIAS, "prompt": "Hello", "max_tokens": 1, "temperature": 0}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with _DIRECT.open(request, timeout=120) as response:
            body = json.loads(response.read(1_000_000))
        usage = body["usage"]["completion_tokens"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        return ProviderFailure(FailureCode.ONE_TOKEN_FAILED, kind=type(error).__name__, detail=str(error)[:300])
    return None if usage == 1 else ProviderFailure(FailureCode.ONE_TOKEN_COUNT, count=repr(usage)[:40])


def smoke_test(command: Sequence[str] | None = None, **options: object) -> ProviderFailure | None:
    """Start an engine, ask one token, stop it: None when that worked, else the failure."""
    try:
        server = start_local_server(command, **options)  # type: ignore[arg-type]
    except EngineStartError as error:
        return error.cause
    except ProviderFailure as error:  # e.g. the weights package is missing
        return error
    try:
        failure = _one_token(server.base_url)
        return None if failure is None else server.exit_message(wait_seconds=2.0) or failure
    finally:
        server.stop()


# --------------------------------------------------------------------------- the command line


@dataclass(frozen=True, slots=True)
class BackendChoice:
    """The backend to serve with, the llama-server executable when that is it, and a line saying why."""

    backend: Backend
    binary: Path | None
    note: str


def _runnable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _llama_server_choice(requested: str, parallel: int, binary: Path | None) -> BackendChoice | str:
    """llama-server when given, or built and not declined; else why not (ProviderError when it was asked for)."""
    from .llama_server_build import llama_server_build

    if requested == "llama-cpp-python":
        return "asked for (--backend llama-cpp-python)"
    build = llama_server_build()
    found = binary if binary is not None else build.binary if build.ready else None
    if found is None or not _runnable(found):
        if requested == "llama-server":
            raise ProviderFailure(FailureCode.NOT_EXECUTABLE, path=binary if binary is not None else build.binary)
        return f"llama-server is {build.state.value}"
    why = (
        "given: --llama-server" if binary is not None else "asked for" if requested == "llama-server" else "built here"
    )
    return BackendChoice(
        "llama-server",
        found,
        f"llama.cpp's llama-server ({why}): {parallel} parallel slot(s), continuous batching, "
        "each slot keeping its prompt (cache_prompt)",
    )


def _choose_backend(requested: str, parallel: int, binary: Path | None = None) -> BackendChoice:
    """Which backend serves (see this module's docstring): llama-server when built (or given), else llama-cpp-python."""
    choice = _llama_server_choice(requested, parallel, binary)
    if isinstance(choice, BackendChoice):
        return choice
    ignored = f"; --parallel {parallel} applies to llama-server only" if parallel > 1 else ""
    return BackendChoice(
        "llama-cpp-python",
        None,
        f"llama-cpp-python's server, because {choice}: one request at a time, the shared prompt prefix kept "
        f"between them{ignored}",
    )


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=None, help="default: a free port")
    parser.add_argument("--parallel", type=int, default=1, help="requests decoded together (llama-server only)")
    parser.add_argument("--threads", type=int, default=None, help="default: the cores this process may use")
    parser.add_argument("--backend", choices=("auto", "llama-server", "llama-cpp-python"), default="auto")
    parser.add_argument("--model", type=Path, default=None, help="the GGUF file (default: the user's cache)")
    parser.add_argument("--llama-server", type=Path, default=None, help="the llama-server executable to run")
    parser.add_argument("--smoke-test", action="store_true", help="ask one token in a separate engine, then exit")
    args = parser.parse_args(argv)
    if args.parallel < 1 or (args.threads is not None and args.threads < 1):
        parser.error("--parallel and --threads must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    try:
        choice = _choose_backend(args.backend, args.parallel, args.llama_server)
        threads = args.threads or cores()
        print(f"local model server: {choice.note}; {threads} thread(s)", flush=True)
        options = {"backend": choice.backend, "threads": threads, "model_path": args.model, "binary": choice.binary}
        if args.smoke_test:
            failure = smoke_test(**options)
            print(f"smoke test: failed: {failure}" if failure else "smoke test: ok (one token)", flush=True)
            return 0 if failure is None else 1
        server = start_local_server(host=args.host, port=args.port, parallel=args.parallel, note=choice.note, **options)
    except ProviderError as error:
        print(f"local model server: failed: {error}", file=sys.stderr, flush=True)
        return 1
    return serve(server, f"local model server: ready at {server.base_url}; log: {server.log_path}")


def serve(server: LocalModelServer, announce: str = "", grace_seconds: float = 5.0) -> int:
    """Wait on a child engine until it ends; SIGTERM or Ctrl+C here stops it (SIGKILL after the grace).

    ``announce`` is printed once the signals are handled, so whoever waits for it may stop us
    at once. The signal handler only passes the signal on: waiting and reaping stay in the main loop.
    """
    process = server.process
    if process is None:
        raise ValueError("serve() needs a server this process started")
    asked: list[float] = []

    def stop(number: int, _frame: object) -> None:
        asked.append(time.monotonic())
        _signal(process, signal.SIGTERM)

    previous = {number: signal.signal(number, stop) for number in (signal.SIGTERM, signal.SIGINT)}
    if announce:
        print(announce, flush=True)
    try:
        while (code := process.poll()) is None:
            if asked and time.monotonic() - asked[0] > grace_seconds:
                _signal(process, signal.SIGKILL)
            time.sleep(0.1)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        server.stop()
    if asked:
        print("local model server: stopped", file=sys.stderr, flush=True)
        return 0
    print(f"local model server: failed: {engine_end(code)}", file=sys.stderr, flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
