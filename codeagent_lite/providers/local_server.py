"""The local model in a process of its own, behind an OpenAI-compatible API on 127.0.0.1.

A crash in llama.cpp's native code (an instruction this CPU lacks, the out-of-memory killer) ends the process it
runs in: in the kernel, the kernel, silently. In an engine process asked over HTTP it is a ``ProviderFailure``
naming the signal. ``--backend auto`` serves with ``llama-server`` where built (``--parallel`` slots decoded
together: 2 cores give one stream 47-52 tokens/s, 20 at once about 62), else llama-cpp-python's server, one
request at a time, all one learner needs. A kernel's own engine runs in its own session (Ctrl+C does not reach
it) and dies with its parent: no orphan keeps 0.6 GB.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from ..action_schema import action_json_schema
from ..display import printable
from ..json_text_adapter import ProviderError, ProviderResponse
from ..json_text_messages import ProviderMessage
from ..kernel_types import ToolSpec
from .failure import FailureCode, ProviderFailure, engine_end
from .llama_cpp_engine import MODEL_ALIAS
from .llama_server_build import llama_server_build
from .local_engine import SHARED_SERVER_VARIABLE, cores, log_lines, shared_server_url
from .local_llama import ensure_model_file
from .openai_compatible import Completion, TextChoice
from .openai_completions import CompletionSettings, OpenAICompletionsProvider
from .prompting import DEFAULT_EXAMPLES, SCHEMA_EXAMPLES, WorkedExample, render_completion_prompt
from .redaction import redact_url

Backend = Literal["llama-cpp-python", "llama-server"]
LocalMode = Literal["free_text", "schema"]
CONTEXT_PER_SLOT = 2048  # the worked-example prompt alone is about 740 tokens
LOCAL_TIMEOUT_SECONDS = 600.0  # on a shared server a request may wait behind a class's worth of others
_LOG_PREFIX = "codeagent-lite-engine-"
# What a dying engine's dropped connection becomes; any other failure means it answered.
_DROPPED = (FailureCode.CONNECTION_FAILED, FailureCode.REQUEST_FAILED, FailureCode.TIMED_OUT)
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1 itself, never a proxy


class EngineStartError(ProviderFailure):
    """The engine ended or stayed silent before it was ready; ``cause`` says which, without its log."""

    def __init__(self, cause: ProviderFailure, log_tail: str) -> None:
        super().__init__(FailureCode.ENGINE_NOT_READY, ended=cause, log_tail=log_tail)
        self.cause = cause


@dataclass(frozen=True, slots=True)
class LocalModelServer:
    """A model server this process can ask: a child it started, or a shared one (``process`` None)."""

    base_url: str
    backend: str
    note: str = ""
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, compare=False)
    temporary_log: bool = False  # ours to delete when the server stops

    @property
    def port(self) -> int:
        return int(urllib.parse.urlsplit(self.base_url).port or 0)

    def exit_message(self, wait_seconds: float = 0.0) -> ProviderFailure | None:
        """How the engine ended (its signal or exit code, with what to do), or None while it runs."""
        if self.process is None:
            return None
        try:
            return engine_end(self.process.wait(timeout=wait_seconds))  # 0: a poll
        except subprocess.TimeoutExpired:
            return None

    def stopped_pid(self) -> int | None:
        """The engine's pid while it is stopped (state T in ``/proc``, Linux only): its port still accepts, so a
        request would wait for the whole timeout. None for a running or ended engine, or without ``/proc``."""
        if self.process is None:
            return None
        try:
            stat_line = Path(f"/proc/{self.process.pid}/stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            return None
        fields = stat_line.rpartition(")")[2].split()  # the name before ")" may hold spaces and parentheses
        return self.process.pid if fields and fields[0] in ("T", "t") else None

    def log_tail(self, lines: int = 8) -> str:
        return "" if self.log_path is None else printable("\n".join(log_lines(self.log_path)[-lines:]))

    def stop(self, grace_seconds: float = 5.0) -> None:
        """End the child (SIGTERM, then SIGKILL after the grace); a shared server is left alone."""
        process = self.process
        if process is not None and process.poll() is None:
            _signal(process, signal.SIGTERM)
            try:
                process.wait(timeout=grace_seconds)
            except subprocess.TimeoutExpired:
                _signal(process, signal.SIGKILL)
                process.wait()
        if process is not None and process.stdin is not None:
            process.stdin.close()  # nothing was ever written: nothing to flush
        if self.temporary_log and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)

    def provider(self, mode: LocalMode = "free_text", **options: object) -> GemmaProvider:
        """A child's engine crash becomes a named ``ProviderFailure`` (a shared server has no exit to name)."""
        return GemmaProvider(self.base_url, mode, engine=self, **options)  # type: ignore[arg-type]

    def __enter__(self) -> LocalModelServer:
        return self

    def __exit__(self, *_exception: object) -> None:
        self.stop()


def _signal(process: subprocess.Popen[bytes], number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, number)  # its own session: the group is the engine and nothing else


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    # Linux sends the engine SIGKILL when its parent dies, even by SIGKILL: a killed kernel leaves no server.
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _stop_from(pid: int, server: LocalModelServer) -> None:
    """At exit, by the process that started the engine only: a forked child that exits (multiprocessing) would
    otherwise stop its parent's engine and delete the log its crash messages point to."""
    if os.getpid() == pid:
        server.stop()


def free_port(host: str = "127.0.0.1") -> int:
    # Another process could take it before the engine binds: that shows as a clear startup error.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def is_ready(base_url: str, timeout: float = 1.0) -> bool:
    """True when ``GET /v1/models`` answers 200; False for anything else on that port (another program's bytes)."""
    try:
        with DIRECT.open(f"{base_url}/models", timeout=timeout) as response:
            return bool(response.status == 200)
    except (OSError, ValueError, http.client.HTTPException):  # URLError is an OSError
        return False


def engine_command(
    backend: Backend,
    model_path: Path,
    binary: Path | None = None,  # llama-server's: default, the one built here
    *,
    host: str,
    port: int,
    parallel: int = 1,
    threads: int | None = None,
    python: str = sys.executable,
) -> list[str]:
    threads = threads or cores()
    where = ["--model", str(model_path), "--host", host, "--port", str(port), "--threads", str(threads)]
    if backend != "llama-server":
        own = ["--n-ctx", str(CONTEXT_PER_SLOT), "--exit-with-parent"]
        return [python, "-m", "codeagent_lite.providers.llama_cpp_engine", *where, *own]
    binary = llama_server_build().binary if binary is None else binary
    slots = ["--alias", MODEL_ALIAS, "--parallel", str(parallel), "--ctx-size", str(CONTEXT_PER_SLOT * parallel)]
    # --no-slots: GET /slots shows what each slot is decoding, and one student must not read another's.
    flags = ["--cont-batching", "--cache-prompt", "--no-webui", "--no-slots"]
    return [str(binary), *where, *slots, "--threads-batch", str(threads), *flags]


def _temporary_log() -> str:
    """Named by this process: the logs of engines whose parent is gone (killed before its exit handlers) go first."""
    for path in Path(tempfile.gettempdir()).glob(f"{_LOG_PREFIX}*-*.log"):
        try:
            os.kill(int(path.name[len(_LOG_PREFIX) :].split("-", 1)[0]), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                path.unlink()
        except (OSError, ValueError, OverflowError):  # alive but not ours to signal, or no process id at all
            continue
    handle, name = tempfile.mkstemp(prefix=f"{_LOG_PREFIX}{os.getpid()}-", suffix=".log")
    os.close(handle)
    return name


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
    """Start an engine and return once ``GET /v1/models`` answers 200; ``EngineStartError`` if it ends first.

    ``command`` (with ``{port}`` filled in) replaces the engine's command line: the tests' fake engine. A model
    file given is used as it is (the class's server may only read its copies), else the user's own is assembled.
    """
    chosen_port = free_port(host) if port is None else port
    base_url = f"http://{host}:{chosen_port}/v1"
    if command is None:
        model = _model_file(model_path)
        command = engine_command(
            backend, model, binary, host=host, port=chosen_port, parallel=parallel, threads=threads, python=python
        )
    else:
        command = [part.replace("{port}", str(chosen_port)) for part in command]
    temporary = log_path is None
    log_path = _temporary_log() if log_path is None else log_path
    process = _spawn(command, Path(log_path), temporary)
    note = note or f"{backend} in a process of its own"
    server = LocalModelServer(base_url, backend, note, Path(log_path), process, temporary_log=temporary)
    atexit.register(_stop_from, os.getpid(), server)
    _wait_until_ready(server, startup_timeout)
    return server


def _spawn(command: Sequence[str], log_path: Path, temporary: bool) -> subprocess.Popen[bytes]:
    # Linux's death signal follows the thread that forked, not the process: an engine started from a worker thread
    # would be killed when that thread ends (and read as out of memory). There, stdin's end stops the engine instead.
    dies_with_parent = sys.platform == "linux" and threading.current_thread() is threading.main_thread()
    try:
        with log_path.open("wb") as log_file:
            process = subprocess.Popen(
                list(command),
                stdin=subprocess.PIPE,  # never written: its end of file tells the engine we are gone
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent if dies_with_parent else None,
            )
    except OSError as error:  # a missing or non-executable binary: 127, as a shell says it
        if temporary:
            log_path.unlink(missing_ok=True)
        raise EngineStartError(engine_end(127), printable(f"cannot start {command[0]}: {error}")) from None
    return process


def _wait_until_ready(server: LocalModelServer, startup_timeout: float) -> None:
    deadline = time.monotonic() + startup_timeout
    while not is_ready(server.base_url):
        ended = server.exit_message()
        if ended is None and time.monotonic() > deadline:
            ended = ProviderFailure(FailureCode.ENGINE_SILENT, seconds=format(startup_timeout, "g"))
        if ended is not None:
            tail = server.log_tail()
            server.stop()
            raise EngineStartError(ended, tail)
        time.sleep(0.1)


def connect_local_server(base_url: str) -> LocalModelServer:
    """A server started elsewhere (the class's); ``ProviderFailure`` when it does not answer."""
    url = base_url.rstrip("/")
    if not is_ready(url, timeout=5.0):
        raise ProviderFailure(FailureCode.SHARED_SERVER_DOWN, url=redact_url(url), variable=SHARED_SERVER_VARIABLE)
    return LocalModelServer(url, "shared", note=f"the shared model server at {redact_url(url)}")


_OWN: list[LocalModelServer] = []


def local_model_server(**options: object) -> LocalModelServer:
    """The class's server when ``CAL_LOCAL_MODEL_URL`` names one, else one child, started once (again if it died)."""
    if shared := shared_server_url():
        return connect_local_server(shared)
    if not _OWN or _OWN[0].exit_message() is not None:
        _OWN[:] = [start_local_server(**options)]  # type: ignore[arg-type]
    return _OWN[0]


MARK_FIELD = "class_cache"
"""The body field of a reply the class's reply cache (classroom/reply_cache.py) served with no model call for this
request: "hit" (stored) or "joined" (an identical request was in flight)."""


class _MarkedCompletion(Completion[TextChoice]):
    class_cache: object = None  # MARK_FIELD, read from the one strict decode of the body


@dataclass(frozen=True, slots=True)
class SharedReply(ProviderResponse):
    """A reply the class's reply cache answered without a model call for this request: ``served`` hit or joined."""

    served: str = "hit"


class GemmaProvider(OpenAICompletionsProvider):
    """Gemma 3 270M: worked examples, greedy, stop at newline; ``"schema"`` constrains decoding with the
    parser's own ``action_json_schema()`` and shows the examples ``type`` first, the order that grammar forces."""

    answer = _MarkedCompletion  # the class cache's mark is read in the body's one strict decode

    def __init__(
        self,
        base_url: str,
        mode: LocalMode = "free_text",
        *,
        examples: Sequence[WorkedExample] | None = None,
        timeout: float = LOCAL_TIMEOUT_SECONDS,
        engine: LocalModelServer | None = None,
    ) -> None:
        if mode not in get_args(LocalMode):
            raise ValueError(f"mode must be one of {', '.join(get_args(LocalMode))}, got {mode!r}")
        self.mode: LocalMode = mode
        self.engine = engine  # asked how it ended when a call fails (a shared server never says)
        schema = mode == "schema"
        self.examples = tuple(examples) if examples is not None else SCHEMA_EXAMPLES if schema else DEFAULT_EXAMPLES
        settings = CompletionSettings(json_schema=action_json_schema() if schema else None)
        super().__init__(base_url, MODEL_ALIAS, self._render, settings, timeout=timeout)

    def _render(self, messages: Sequence[ProviderMessage], tools: Sequence[ToolSpec]) -> str:
        return render_completion_prompt(messages, tools, self.examples)

    def complete(
        self, *, messages: Sequence[ProviderMessage], tools: Sequence[ToolSpec], max_output_tokens: int
    ) -> ProviderResponse:
        """A child engine's crash reaches us as a dropped connection; its exit status says why (SIGILL...)."""
        if (stopped := self.failure_while_waiting()) is not None:
            raise stopped
        ended = None if self.engine is None else self.engine.exit_message()
        if ended is None:
            try:
                return super().complete(messages=messages, tools=tools, max_output_tokens=max_output_tokens)
            except ProviderError as error:
                # The engine answered (an HTTP error, a body refused): it is alive.
                if isinstance(error, ProviderFailure) and error.code not in _DROPPED:
                    raise
                # The socket closes as the process dies; its exit status follows a moment later.
                ended = None if self.engine is None else self.engine.exit_message(wait_seconds=2.0)
                if ended is None:
                    raise
        raise ProviderFailure(FailureCode.ENGINE_GONE, ended=ended)

    def failure_while_waiting(self) -> ProviderFailure | None:
        """A stopped engine (Ctrl-Z, SIGSTOP) answers nothing until resumed: named at once, before a request and
        while one waits, not after the whole timeout."""
        if self.engine is None or self.engine.exit_message() is not None:  # an ended one's pid may be reused
            return None
        stopped = self.engine.stopped_pid()
        return None if stopped is None else ProviderFailure(FailureCode.ENGINE_STOPPED, pid=stopped)

    def _response_of(self, completion: Completion[Any]) -> ProviderResponse:
        """The reply, as a ``SharedReply`` when the class's reply cache answered it without a model call."""
        response = super()._response_of(completion)
        served = getattr(completion, MARK_FIELD)
        if served not in ("hit", "joined"):
            return response
        return SharedReply(response.text, response.input_tokens, response.output_tokens, response.finish_reason, served)


def _model_file(model_path: str | Path | None) -> Path:
    """The user's own model, assembled once; a file given is never assembled: a mistyped ``--model`` would
    otherwise become a new 253 MB copy at the typo's name."""
    if model_path is None:
        return ensure_model_file()
    path = Path(model_path)
    try:
        found = path.is_file()
    except (OSError, ValueError):  # a name too long, a NUL in it
        found = False
    if not found:
        detail = "no such regular file (leave the model out to use the workbook's own)"
        raise ProviderFailure(FailureCode.MODEL_FILE, path=printable(str(path)), detail=detail)
    return path


def llama_server(
    model_path: str | Path | None = None, extra_args: Sequence[str] = (), **options: Any
) -> LocalModelServer:
    """llama-cpp-python's stock server (``repeat_penalty`` 1.1), for chat-completions tests of
    ``OpenAICompatibleProvider``; ``options`` are ``start_local_server``'s."""
    where = ["--model", str(_model_file(model_path)), "--host", options.get("host", "127.0.0.1")]
    return start_local_server(
        [sys.executable, "-m", "llama_cpp.server", *where, "--port", "{port}", *extra_args], **options
    )


@dataclass(frozen=True, slots=True)
class BackendChoice:
    backend: Backend
    binary: Path | None  # the llama-server executable, when that serves
    note: str  # why this backend


def _choose_backend(requested: str, parallel: int, binary: Path | None = None) -> BackendChoice:
    """llama-server where given or built and executable, else llama-cpp-python's server, saying why; a
    ``ProviderFailure`` when llama-server was asked for and is not there."""
    build = llama_server_build()
    found = binary if binary is not None else build.binary if build.ready else None
    if requested != "llama-cpp-python" and found is not None and found.is_file() and os.access(found, os.X_OK):
        why = "given: --llama-server" if binary else {"llama-server": "asked for"}.get(requested, "built here")
        slots = f"{parallel} parallel slot(s), continuous batching, each slot keeping its prompt (cache_prompt)"
        return BackendChoice("llama-server", found, f"llama.cpp's llama-server ({why}): {slots}")
    if requested == "llama-server":
        raise ProviderFailure(FailureCode.NOT_EXECUTABLE, path=printable(str(binary or build.binary)))
    return _python_backend(requested, parallel, build.state.value)


def _python_backend(requested: str, parallel: int, build_state: str) -> BackendChoice:
    asked = requested == "llama-cpp-python"
    because = "asked for (--backend llama-cpp-python)" if asked else f"llama-server is {build_state}"
    ignored = f"; --parallel {parallel} applies to llama-server only" if parallel > 1 else ""
    kept = f"one request at a time, the shared prompt prefix kept between them{ignored}"
    return BackendChoice("llama-cpp-python", None, f"llama-cpp-python's server, because {because}: {kept}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=None, help="default: a free port")
    parser.add_argument("--parallel", type=int, default=1, help="requests decoded together (llama-server only)")
    parser.add_argument("--threads", type=int, default=None, help="default: the cores this process may use")
    parser.add_argument("--backend", choices=("auto", "llama-server", "llama-cpp-python"), default="auto")
    parser.add_argument("--model", type=Path, default=None, help="the GGUF file (default: the user's cache)")
    parser.add_argument("--llama-server", type=Path, default=None, help="the llama-server executable to run")
    args = parser.parse_args(argv)
    if args.parallel < 1 or (args.threads is not None and args.threads < 1):
        parser.error("--parallel and --threads must be at least 1")
    try:
        choice = _choose_backend(args.backend, args.parallel, args.llama_server)
        threads = args.threads or cores()
        print(f"local model server: {choice.note}; {threads} thread(s)", flush=True)
        where = {"host": args.host, "port": args.port, "parallel": args.parallel, "threads": threads}
        server = start_local_server(
            backend=choice.backend, model_path=args.model, binary=choice.binary, note=choice.note, **where
        )
    except ProviderError as error:
        print(f"local model server: failed: {error}", file=sys.stderr, flush=True)
        return 1
    return serve(server, f"local model server: ready at {server.base_url}; log: {server.log_path}")


def serve(server: LocalModelServer, announce: str, grace_seconds: float = 5.0) -> int:
    """Wait on a child engine until it ends; SIGTERM or Ctrl+C stops it (SIGKILL after the grace). ``announce``
    comes once the handler (which only notes the signal: the loop stops the engine) is in place, so whoever waits
    for it may stop us."""
    process = server.process
    if process is None:
        raise ValueError("serve() needs a server this process started")
    asked: list[int] = []
    previous = {
        number: signal.signal(number, lambda got, _: asked.append(got)) for number in (signal.SIGTERM, signal.SIGINT)
    }
    print(announce, flush=True)
    try:
        while (code := process.poll()) is None and not asked:
            time.sleep(0.1)
    finally:
        server.stop(grace_seconds)
        for number, handler in previous.items():
            signal.signal(number, handler)
    if asked or code is None:
        print("local model server: stopped", file=sys.stderr, flush=True)
        return 0
    print(f"local model server: failed: {engine_end(code)}", file=sys.stderr, flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
