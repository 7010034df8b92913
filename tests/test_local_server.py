"""The local model's engine runs in its own process: a crash there is a named ProviderError here.

These tests run a fake engine (tests/fake_engine.py) that kills itself with the signal a
native crash would bring, so they need neither llama.cpp nor a real crash, and they run
everywhere. The real engine's tests are in test_local_llama.py.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeagent_lite import Message, MessageRole, ProviderError, build_provider_messages
from codeagent_lite.action_schema import action_json_schema
from codeagent_lite.kernel_types import ToolSpec
from codeagent_lite.providers.failure import FailureCode, ProviderFailure, engine_end
from codeagent_lite.providers.llama_cpp_engine import MAX_REQUEST_BYTES, MODEL_ALIAS, SchemaToGrammar
from codeagent_lite.providers.local_llama import ensure_model_file
from codeagent_lite.providers.local_server import (
    SHARED_SERVER_VARIABLE,
    EngineStartError,
    GemmaProvider,
    LocalModelServer,
    SharedReply,
    connect_local_server,
    is_ready,
    local_model_server,
    start_local_server,
)
from codeagent_lite.providers.openai_completions import CompletionSettings

FAKE_ENGINE = Path(__file__).resolve().parent / "fake_engine.py"
TOOLS = [ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})]
MESSAGES = build_provider_messages([Message(MessageRole.USER, "Say hello.")])


def data(failure: object) -> tuple[object, dict[str, object]]:
    """A failure's code and parameters: what a program acts on."""
    assert isinstance(failure, ProviderFailure), failure
    return failure.code, dict(failure.params)


def fake(behaviour: str) -> list[str]:
    return [sys.executable, str(FAKE_ENGINE), "{port}", behaviour]


@pytest.fixture
def started() -> Iterator[list[LocalModelServer]]:
    servers: list[LocalModelServer] = []
    yield servers
    for server in servers:
        server.stop()


def start(servers: list[LocalModelServer], behaviour: str) -> LocalModelServer:
    server = start_local_server(fake(behaviour), startup_timeout=30)
    servers.append(server)
    return server


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers kill(0); it holds no memory and no port.
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "zombie" in status.read_text()


# --------------------------------------------------------------------------- crashes


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [
        (
            "sigill-on-completion",
            r"SIGILL: it was built for another CPU; `make local` rebuilds it",
        ),
        ("sigsegv-on-completion", r"SIGSEGV: a crash inside llama\.cpp"),
        ("sigkill-on-completion", r"SIGKILL: most often the system ran out of memory"),
    ],
)
def test_a_signal_in_the_engine_is_a_provider_error_that_names_it(
    started: list[LocalModelServer], behaviour: str, expected: str
) -> None:
    server = start(started, behaviour)
    provider = server.provider("free_text")
    with pytest.raises(ProviderError, match=expected):
        provider.complete(messages=MESSAGES, tools=TOOLS, max_output_tokens=16)
    assert server.process is not None
    assert server.process.returncode == -SIGNALS[behaviour.split("-")[0]]
    # This process, the caller, is still here and can go on: the next call says the same at once.
    started_at = time.monotonic()
    with pytest.raises(ProviderError, match=expected):
        provider.complete(messages=MESSAGES, tools=TOOLS, max_output_tokens=16)
    assert time.monotonic() - started_at < 1.0


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="a stopped process is seen in /proc")
@pytest.mark.parametrize(
    "behaviour",
    ["echo", "stop-on-completion"],
    ids=["stopped before the request", "stopped while answering"],  # the second took the whole timeout
)
def test_a_stopped_engine_is_named_at_once_and_answers_again_once_resumed(
    started: list[LocalModelServer], behaviour: str
) -> None:
    server = start(started, behaviour)
    assert server.process is not None
    provider = server.provider("free_text", timeout=30)
    if behaviour == "echo":
        os.kill(server.process.pid, signal.SIGSTOP)
    try:
        started_at = time.monotonic()
        with pytest.raises(ProviderFailure) as caught:
            provider.complete(messages=MESSAGES, tools=TOOLS, max_output_tokens=4)
        assert time.monotonic() - started_at < 5.0
        assert data(caught.value) == (FailureCode.ENGINE_STOPPED, {"pid": server.process.pid})
        assert f"`kill -CONT {server.process.pid}`" in str(caught.value)
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
    assert provider.complete(messages=MESSAGES, tools=TOOLS, max_output_tokens=4).text


SIGNALS = {"sigill": signal.SIGILL, "sigsegv": signal.SIGSEGV, "sigkill": signal.SIGKILL}


def test_an_engine_that_dies_while_loading_says_so_with_its_log() -> None:
    with pytest.raises(
        ProviderError, match=r"(?s)the local engine died with SIGILL.*before it was ready.*loading the model"
    ) as caught:
        start_local_server(fake("sigill-at-start"), startup_timeout=30)
    assert isinstance(caught.value, ProviderFailure) and caught.value.code is FailureCode.ENGINE_NOT_READY
    assert data(caught.value.params["ended"]) == (FailureCode.ENGINE_WRONG_CPU, {"signal": "SIGILL"})


def test_an_engine_that_cannot_start_is_a_start_failure_and_leaves_no_log(tmp_path: Path) -> None:
    logs = f"codeagent-lite-engine-{os.getpid()}-*.log"
    before = set(Path(tempfile.gettempdir()).glob(logs))
    with pytest.raises(EngineStartError, match="exited with code 127, before it was ready") as caught:
        start_local_server([str(tmp_path / "no-such-engine"), "{port}"], startup_timeout=30)
    assert data(caught.value.cause) == (FailureCode.ENGINE_EXITED, {"returncode": 127})
    assert "cannot start" in str(caught.value.params["log_tail"]) and "no-such-engine" in str(caught.value)
    assert set(Path(tempfile.gettempdir()).glob(logs)) == before


def test_a_crash_in_the_engine_leaves_the_calling_process_alive(tmp_path: Path) -> None:
    # The whole story in a separate interpreter, as a kernel or the CLI would run it: it must
    # print the named error and exit normally, not die with the engine's signal.
    script = tmp_path / "caller.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            from codeagent_lite import Message, MessageRole, ProviderError, build_provider_messages
            from codeagent_lite.providers.local_server import start_local_server
            server = start_local_server({fake("sigill-on-completion")!r}, startup_timeout=30)
            try:
                server.provider().complete(
                    messages=build_provider_messages([Message(MessageRole.USER, "hi")]), tools=[], max_output_tokens=4
                )
            except ProviderError as error:
                print("caught:", error)
            print("still alive")
            """
        ),
        encoding="utf-8",
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert "caught: the local engine died with SIGILL" in result.stdout
    assert result.stdout.rstrip().endswith("still alive")


def test_an_engines_end_names_its_signal_or_exit_code_with_what_to_do() -> None:
    assert data(engine_end(3)) == (FailureCode.ENGINE_EXITED, {"returncode": 3})
    assert str(engine_end(3)) == "the local engine exited with code 3"
    assert str(engine_end(-signal.SIGABRT)).startswith("the local engine died with SIGABRT: llama.cpp stopped")
    assert str(engine_end(-signal.SIGUSR1)) == "the local engine died with SIGUSR1"


# --------------------------------------------------------------------------- its process


def test_the_engine_runs_in_its_own_session_and_stop_ends_it(started: list[LocalModelServer]) -> None:
    server = start(started, "echo")
    assert server.process is not None
    pid = server.process.pid
    assert os.getsid(pid) == pid  # a Ctrl+C or a kernel interrupt in this session does not reach it
    assert server.log_path is not None and server.log_path.exists()
    server.stop()
    assert server.process.poll() is not None
    assert gone(pid)
    assert not server.log_path.exists()  # a temporary log of ours goes with it


def test_an_engine_stops_when_the_process_that_started_it_exits(tmp_path: Path) -> None:
    # A kernel that shuts down (or restarts) exits normally: its engine goes with it, at exit.
    script = tmp_path / "kernel.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from codeagent_lite.providers.local_server import start_local_server
            server = start_local_server({fake("echo")!r}, startup_timeout=30)
            print(server.process.pid, flush=True)
            """
        ),
        encoding="utf-8",
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True)
    assert gone(int(result.stdout))


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_an_engine_whose_parent_is_killed_does_not_stay_behind(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import time
            from codeagent_lite.providers.local_server import start_local_server
            server = start_local_server({fake("echo")!r}, startup_timeout=30, log_path={str(tmp_path / "engine.log")!r})
            print(server.process.pid, flush=True)
            time.sleep(600)
            """
        ),
        encoding="utf-8",
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.kill()  # as the out-of-memory killer or a hard kernel restart would
    parent.wait()
    deadline = time.monotonic() + 10
    while not gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(child)


# --------------------------------------------------------------------------- what is sent


def sent(server: LocalModelServer, mode: str) -> dict[str, object]:
    provider = server.provider(mode)  # type: ignore[arg-type]
    response = provider.complete(messages=MESSAGES, tools=TOOLS, max_output_tokens=32)
    assert (response.input_tokens, response.output_tokens, response.finish_reason) == (700, 12, "stop")
    body: dict[str, object] = json.loads(response.text)
    return body


def test_free_text_mode_sends_a_completion_with_the_protocols_sampling(started: list[LocalModelServer]) -> None:
    body = sent(start(started, "echo"), "free_text")
    assert body["model"] == MODEL_ALIAS
    assert isinstance(body["prompt"], str) and body["prompt"].endswith("Task: Say hello.\nReply:")
    assert (body["max_tokens"], body["temperature"], body["stop"], body["repeat_penalty"]) == (32, 0.0, ["\n"], 1.0)
    assert "json_schema" not in body and "grammar" not in body


def test_schema_mode_sends_the_parsers_own_schema(started: list[LocalModelServer]) -> None:
    body = sent(start(started, "echo"), "schema")
    assert body["json_schema"] == action_json_schema()
    assert isinstance(body["prompt"], str) and '"type":"tool_call","call_id"' in body["prompt"]


def test_completion_settings_refuse_what_no_server_could_use() -> None:
    with pytest.raises(ValueError, match="not both"):
        CompletionSettings(grammar="root ::= x", json_schema={"type": "object"})
    with pytest.raises(ValueError, match="repeat_penalty must be a finite number >= 0"):
        CompletionSettings(repeat_penalty=float("nan"))
    with pytest.raises(ValueError, match="stop must be at most 4"):
        CompletionSettings(stop=("a", "b", "c", "d", "e"))
    assert CompletionSettings(grammar="root ::= x").extra_body() == {"repeat_penalty": 1.0, "grammar": "root ::= x"}


def test_the_engine_turns_a_json_schema_into_the_grammar_llama_cpp_python_takes() -> None:
    middleware = SchemaToGrammar(app=None, to_gbnf=lambda schema: f"grammar of {schema}")  # type: ignore[arg-type]
    rewritten = json.loads(middleware.rewrite(json.dumps({"prompt": "p", "json_schema": {"type": "object"}}).encode()))
    assert rewritten == {"prompt": "p", "grammar": 'grammar of {"type": "object"}'}
    untouched = json.dumps({"prompt": "p"}).encode()
    assert middleware.rewrite(untouched) == untouched
    assert middleware.rewrite(b"not json") == b"not json"


def test_the_engine_refuses_a_completion_request_longer_than_its_cap_with_413() -> None:
    called: list[object] = []
    sent: list[dict[str, object]] = []
    chunk = b"x" * (MAX_REQUEST_BYTES // 2 + 1)
    parts = [{"type": "http.request", "body": chunk, "more_body": True} for _ in range(3)]

    async def app(*_: object) -> None:
        called.append(_)

    async def receive() -> dict[str, object]:
        return parts.pop(0)

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    middleware = SchemaToGrammar(app, to_gbnf=str)
    scope = {"type": "http", "method": "POST", "path": "/v1/completions"}
    # A thread of its own: other tests of the session (playwright's) may leave an event loop running in this one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, middleware(scope, receive, send)).result()
    assert (called, len(parts), sent[0]["status"]) == ([], 1, 413)
    error = json.loads(sent[1]["body"])["error"]  # type: ignore[arg-type]
    assert error["message"] == f"the request is longer than {MAX_REQUEST_BYTES} bytes"


# --------------------------------------------------------------------------- smoke test and sharing


def test_a_class_shares_the_server_named_by_the_variable(
    started: list[LocalModelServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start(started, "echo")
    monkeypatch.setenv(SHARED_SERVER_VARIABLE, server.base_url)
    shared = local_model_server()
    assert shared.base_url == server.base_url and shared.process is None
    assert json.loads(shared.provider().complete(messages=MESSAGES, tools=TOOLS, max_output_tokens=4).text)
    server.stop()
    with pytest.raises(ProviderError, match=f"does not answer GET /models.*unset {SHARED_SERVER_VARIABLE}"):
        connect_local_server(server.base_url)


def serving(tmp_path: Path, behaviour: str) -> subprocess.Popen[str]:
    """The class's server command's waiting part (``serve``) over a fake engine, in its own interpreter."""
    script = tmp_path / "serve.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            from codeagent_lite.providers.local_server import serve, start_local_server
            server = start_local_server({fake(behaviour)!r}, startup_timeout=30)
            sys.exit(serve(server, f"{{server.base_url}} {{server.process.pid}}"))
            """
        ),
        encoding="utf-8",
    )
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_class_server_stops_its_engine_on_sigterm_and_exits_0(tmp_path: Path) -> None:
    service = serving(tmp_path, "echo")
    assert service.stdout is not None
    _base_url, pid = service.stdout.readline().split()
    service.send_signal(signal.SIGTERM)  # what JupyterHub does to a service it stops
    assert service.wait(timeout=20) == 0
    assert gone(int(pid))


def test_the_class_server_says_how_its_engine_died_and_exits_1(tmp_path: Path) -> None:
    service = serving(tmp_path, "sigsegv-on-completion")
    assert service.stdout is not None and service.stderr is not None
    base_url, _pid = service.stdout.readline().split()
    with contextlib.suppress(ProviderError):
        connect_local_server(base_url).provider().complete(messages=MESSAGES, tools=TOOLS, max_output_tokens=4)
    assert service.wait(timeout=20) == 1
    said = service.stderr.read()
    assert "local model server: failed: the local engine died with SIGSEGV: a crash inside llama.cpp" in said


def test_run_with_the_local_provider_survives_a_crash_of_the_model_server(
    started: list[LocalModelServer], tmp_path: Path
) -> None:
    # The CLI in its own interpreter, on the class's server, which dies with SIGILL at the first request.
    server = start(started, "sigill-on-completion")
    (tmp_path / "notes.txt").write_text("x\n", encoding="utf-8")
    env = {**os.environ, SHARED_SERVER_VARIABLE: server.base_url}
    command = [sys.executable, "-m", "codeagent_lite", "run", "Read notes.txt.", "--provider", "local"]
    result = subprocess.run(
        [*command, "--workspace", str(tmp_path)], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert result.returncode > 0, result  # an exit code of its own, not a signal
    assert "Traceback" not in result.stderr
    assert f"shared model server at {server.base_url}" in result.stdout
    assert "provider error" in result.stdout.lower() or "connection" in result.stdout.lower(), result.stdout


def built_llama_server(cache: Path) -> Path:
    """A llama-server build record in cache that says "ready" (the executable is a stand-in: nothing runs it)."""
    from codeagent_lite.providers.llama_server_build import llama_server_build

    build = llama_server_build(cache=cache / "codeagent-lite")
    build.directory.mkdir(parents=True)
    build.binary.write_text("#!/bin/sh\n", encoding="ascii")
    build.binary.chmod(0o755)
    (build.directory / "build.json").write_text(json.dumps({"version": "0.3.36", "smoke": "ok"}), encoding="utf-8")
    return build.binary


def test_the_class_server_serves_with_llama_server_where_built_else_llama_cpp_python_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codeagent_lite.providers.local_server import _choose_backend

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no llama-server built in this cache
    fallback = _choose_backend("auto", 4)
    assert (fallback.backend, fallback.binary) == ("llama-cpp-python", None)
    assert fallback.note.startswith("llama-cpp-python's server, because llama-server is not installed")
    assert fallback.note.endswith(
        "one request at a time, the shared prompt prefix kept between them; --parallel 4 applies to llama-server only"
    )
    with pytest.raises(
        ProviderError, match=r"llama-server is not an executable file \(`make local-server` builds llama-server\)"
    ):
        _choose_backend("llama-server", 4)
    with pytest.raises(ProviderError, match="is not an executable file"):
        _choose_backend("llama-server", 4, tmp_path / "nothing")
    binary = built_llama_server(tmp_path)
    built = _choose_backend("auto", 20)
    assert (built.backend, built.binary) == ("llama-server", binary)
    assert built.note == (
        "llama.cpp's llama-server (built here): 20 parallel slot(s), continuous batching, "
        "each slot keeping its prompt (cache_prompt)"
    )
    assert _choose_backend("llama-cpp-python", 1).note.startswith("llama-cpp-python's server, because asked for")
    given = _choose_backend("auto", 2, binary)
    assert given.binary == binary and "(given: --llama-server)" in given.note


def test_the_class_servers_first_line_says_which_backend_serves_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from codeagent_lite.providers import local_server

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    asked: list[dict[str, object]] = []

    def refuse(**options: object) -> LocalModelServer:
        asked.append(options)
        raise ProviderError("not started in this test")

    monkeypatch.setattr(local_server, "start_local_server", refuse)
    assert local_server.main(["--threads", "2", "--parallel", "3"]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("local model server: llama-cpp-python's server, because llama-server is not installed")
    assert first.endswith("; 2 thread(s)")
    binary = built_llama_server(tmp_path)
    assert local_server.main(["--parallel", "20", "--model", str(tmp_path / "m.gguf")]) == 1
    assert capsys.readouterr().out.startswith("local model server: llama.cpp's llama-server (built here): 20 parallel")
    assert asked[-1]["backend"] == "llama-server" and asked[-1]["binary"] == binary
    assert (asked[-1]["parallel"], asked[-1]["model_path"]) == (20, tmp_path / "m.gguf")


def test_llama_server_runs_with_slots_continuous_batching_and_the_prompt_cache() -> None:
    from codeagent_lite.providers.local_server import engine_command

    command = engine_command(
        "llama-server", Path("m.gguf"), host="127.0.0.1", port=9, parallel=20, threads=2, binary=Path("ls")
    )
    options = dict(zip(command[1::2], command[2::2], strict=False))
    assert command[0] == "ls" and {"--cont-batching", "--cache-prompt", "--no-webui"} <= set(command)
    assert (options["--parallel"], options["--ctx-size"], options["--threads"]) == ("20", str(20 * 2048), "2")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            '{"choices":[{"text":"x"}],"usage":{"prompt_tokens":700,"completion_tokens":9},'
            '"usage":{"prompt_tokens":0,"completion_tokens":0}}',
            "duplicate key 'usage'",
        ),
        ('{"choices":[{"text":"x"}],"usage":{"prompt_tokens":' + "9" * 5000 + ',"completion_tokens":1}}', "digits"),
        ('{"choices":[{"text":"x"}],"usage":{"prompt_tokens":2000000000,"completion_tokens":1}}', "usage.prompt"),
        ('{"choices":[{"text":"x"}]}', "no token usage"),
        ('{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}', "text"),
    ],
)
def test_a_completion_body_is_read_as_strictly_as_a_chat_answer(body: str, expected: str) -> None:
    provider = GemmaProvider("http://127.0.0.1:9/v1")
    with pytest.raises(ProviderError, match=expected):
        provider.read_completion(body)


def test_a_temporary_log_left_by_a_killed_process_is_removed_by_the_next_start(
    started: list[LocalModelServer], tmp_path: Path
) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = Path(tempfile.gettempdir()) / f"codeagent-lite-engine-{int(dead.stdout)}-abc.log"
    left.write_text("old log", encoding="utf-8")
    mine = Path(tempfile.gettempdir()) / f"codeagent-lite-engine-{os.getpid()}-abc.log"
    mine.write_text("a live process's log", encoding="utf-8")
    # Another program's names: no process id (a superscript digit, one too large for the system) is no owner.
    strange = [Path(tempfile.gettempdir()) / f"codeagent-lite-engine-{owner}-abc.log" for owner in ("²", "9" * 30)]
    for path in strange:
        path.write_text("not ours", encoding="utf-8")
    try:
        start(started, "echo")
        assert not left.exists()
        assert mine.exists() and all(path.exists() for path in strange)
    finally:
        for path in (mine, left, *strange):
            path.unlink(missing_ok=True)


def test_another_program_answering_on_the_port_is_not_a_ready_engine() -> None:
    """A port taken between ``free_port`` and the engine's bind may answer in another protocol (a kernel's ZMQ
    greeting, here): the readiness probe says "not ready" and the start goes on to its own clear error."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()

        def greet() -> None:
            connection, _ = listener.accept()
            with connection:
                connection.recv(4096)
                connection.sendall(b"\xff\x00\x00\x00\x00\x00\x00\x00\x01\x7f")

        thread = threading.Thread(target=greet, daemon=True)
        thread.start()
        assert not is_ready(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", timeout=5.0)
        thread.join(timeout=5.0)


def test_a_reply_from_the_class_cache_is_decoded_once_and_strictly(monkeypatch: pytest.MonkeyPatch) -> None:
    decodes: list[str] = []
    original = json.JSONDecoder.decode

    def counted(self: json.JSONDecoder, text: str, *args: object, **kwargs: object) -> object:
        decodes.append(text)
        return original(self, text)

    monkeypatch.setattr(json.JSONDecoder, "decode", counted)
    provider = GemmaProvider("http://127.0.0.1:9/v1")
    usage = '"usage":{"prompt_tokens":7,"completion_tokens":2}'
    shared = provider.read_completion('{"choices":[{"text":"x"}],' + usage + ',"class_cache":"hit"}')
    assert isinstance(shared, SharedReply) and (shared.served, shared.text, shared.input_tokens) == ("hit", "x", 7)
    own = provider.read_completion('{"choices":[{"text":"class_cache"}],' + usage + ',"class_cache":"other"}')
    assert not isinstance(own, SharedReply) and own.text == "class_cache"
    assert len(decodes) == 2  # one decode per body


def test_an_engine_started_from_a_worker_thread_outlives_the_thread(started: list[LocalModelServer]) -> None:
    """Linux's death signal follows the thread that forked: it was SIGKILLed as its thread ended (said: no memory)."""
    worker = threading.Thread(target=lambda: started.append(start_local_server(fake("echo"), startup_timeout=30)))
    worker.start()
    worker.join(timeout=60)
    time.sleep(0.5)  # the death signal, when sent, arrives at once
    assert started and started[0].exit_message() is None
    assert started[0].provider().complete(messages=MESSAGES, tools=TOOLS, max_output_tokens=4).text


def test_the_shared_servers_address_is_never_shown_with_its_credentials() -> None:
    with pytest.raises(ProviderFailure) as caught:
        connect_local_server("http://alice:s3cr3t-PASS@127.0.0.1:9/v1?token=sk-abcdef123456\x1b[31m")
    assert "s3cr3t-PASS" not in str(caught.value) and "sk-abcdef" not in str(caught.value)
    assert "\x1b" not in str(caught.value) and "http://***@127.0.0.1:9/v1?token=***" in str(caught.value)


def test_a_model_path_that_is_no_regular_file_is_refused_not_read_forever(tmp_path: Path) -> None:
    fifo = tmp_path / "model\x1b[31m.gguf"
    os.mkfifo(fifo)
    with pytest.raises(ProviderFailure) as caught:
        ensure_model_file(fifo)
    assert caught.value.code is FailureCode.MODEL_FILE and "not a regular file" in str(caught.value)
    assert "\x1b" not in str(caught.value)


@pytest.mark.parametrize("name", ["gema-3.gguf", "x" * 300, "folder"])
def test_a_model_path_given_that_is_no_file_is_refused_not_assembled(tmp_path: Path, name: str) -> None:
    (tmp_path / "folder").mkdir()
    with pytest.raises(ProviderFailure) as caught:
        start_local_server(model_path=tmp_path / name, startup_timeout=1)
    assert caught.value.code is FailureCode.MODEL_FILE and "no such regular file" in str(caught.value)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["folder"]


def test_the_engine_log_is_read_at_its_end_and_shown_escaped(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    log.write_bytes(b"x" * (6 * 2**20) + b"\nthe end \x1b[2J\n")
    server = LocalModelServer("http://127.0.0.1:9/v1", "llama-cpp-python", log_path=log)
    tail = server.log_tail()
    assert tail.endswith("the end \\x1b[2J") and len(tail) < 1000, tail[-200:]


def test_an_engine_path_that_cannot_run_is_named_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A binary's name is the teacher's argv or a folder's: printed raw, an escape in it would clear the screen."""
    from codeagent_lite.providers.local_server import _choose_backend

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(ProviderFailure) as missing:
        _choose_backend("llama-server", 1, tmp_path / "no\x1b[2Jserver")
    not_a_program = tmp_path / "not\x1b[2Ja-program"
    not_a_program.write_bytes(b"\x7fELF garbage")
    not_a_program.chmod(0o755)
    with pytest.raises(EngineStartError) as unstartable:
        start_local_server([str(not_a_program), "{port}"], startup_timeout=30)
    for error in (missing.value, unstartable.value):
        assert "\x1b" not in str(error) and "\\x1b[2J" in str(error), str(error)


def test_an_engine_that_fails_before_serving_exits_1_not_sigabrt(tmp_path: Path) -> None:
    """With --exit-with-parent a thread reads stdin; a failing start shut the interpreter down around it: SIGABRT,
    said as "llama.cpp stopped on a failed check" over a corrupt model file or a taken port."""
    (tmp_path / "garbage.gguf").write_bytes(b"not a model")
    engine_args = ["--model", str(tmp_path / "garbage.gguf"), "--port", "9", "--exit-with-parent"]
    with (tmp_path / "engine.log").open("wb") as log:
        engine = subprocess.Popen(
            [sys.executable, "-m", "codeagent_lite.providers.llama_cpp_engine", *engine_args],
            stdin=subprocess.PIPE,  # held open, never written, as the kernel does
            stderr=log,
        )
        try:
            returncode = engine.wait(timeout=120)
        finally:
            engine.kill()
            assert engine.stdin is not None
            engine.stdin.close()
    said = (tmp_path / "engine.log").read_text(encoding="utf-8", errors="replace")
    assert returncode == 1 and "Traceback" in said, said[-2000:]


def test_a_forked_child_that_exits_leaves_its_parents_engine_and_log(
    started: list[LocalModelServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stop registered to run at exit ran in a forked child too (os.fork, then a normal exit): it stopped the
    parent's engine and deleted the log the parent's crash messages point to."""
    at_exit: list[tuple[Any, tuple[Any, ...]]] = []
    monkeypatch.setattr(atexit, "register", lambda function, *args: at_exit.append((function, args)))
    server = start(started, "echo")
    monkeypatch.undo()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child runs what its exit would run, and nothing of pytest's
        try:
            for function, args in at_exit:
                function(*args)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    assert server.exit_message() is None and server.log_path is not None and server.log_path.exists()
