"""One real HTTP server on the loopback for the provider and CLI tests: a test sets its next answer (a hostile
server's included: compressed, trickled, without a length, echoing the key) and reads back what was sent to it."""

from __future__ import annotations

import contextlib
import json
import socketserver
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@contextlib.contextmanager
def serving(server: socketserver.BaseServer) -> Iterator[None]:
    """``server`` answering in a thread of its own until the block ends; then shut down, closed and joined."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def chat_completion(content: str) -> dict[str, Any]:
    """The least of an OpenAI chat completion that the provider reads, its one choice saying ``content``."""
    return {
        "choices": [{"message": {"content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2},
    }


REPLY = '{"type":"final_answer","content":"ok"}'
VALID = chat_completion(REPLY)


@dataclass
class Answer:
    status: int = 200
    body: bytes = json.dumps(VALID).encode()
    headers: list[tuple[str, str]] = field(default_factory=list)
    trickle_seconds: float = 0.0  # > 0: the body one byte at a time, this far apart
    content_length: bool = True
    gate: threading.Event | None = None  # set: answer only once it is set (at most 30 s), to hold requests in flight


class Server:
    """Answers every POST with ``answer`` while its ``with`` block lasts; ``requests`` holds each request's headers
    (names title-cased); ``bodies`` each request's body; ``handled`` is released each time an answer is done or
    abandoned by the client."""

    def __init__(self, answer: Answer | None = None) -> None:
        self.answer = answer or Answer()
        self.requests: list[dict[str, str]] = []
        self.bodies: list[bytes] = []
        self.handled = threading.Semaphore(0)
        state = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                state.bodies.append(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                state.requests.append({name.title(): value for name, value in self.headers.items()})
                answer = state.answer
                if answer.gate is not None:
                    answer.gate.wait(30)
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                for name, value in answer.headers:
                    self.send_header(name, value)
                if answer.content_length:
                    self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up, as it should
                    self._write(answer)
                state.handled.release()

            def _write(self, answer: Answer) -> None:
                pieces = [answer.body] if answer.trickle_seconds <= 0 else [bytes([b]) for b in answer.body]
                for piece in pieces:
                    self.wfile.write(piece)
                    if answer.trickle_seconds > 0:
                        self.wfile.flush()
                        time.sleep(answer.trickle_seconds)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._serving = contextlib.ExitStack()

    @property
    def authorizations(self) -> list[str]:
        return [headers.get("Authorization", "") for headers in self.requests]

    def __enter__(self) -> Server:
        self._serving.enter_context(serving(self._server))
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._serving.close()


# --------------------------------------------------------------------------- a provider asking it

KEY_ENV = "CODEAGENT_LITE_TEST_KEY"
"""Where the provider tests put their key (``conftest.key_in_env``)."""


def provider(base_url: str, **options: Any) -> Any:
    """An ``OpenAICompatibleProvider`` for ``base_url``, its key read from ``KEY_ENV``."""
    from codeagent_lite.providers.openai_compatible import OpenAICompatibleProvider

    return OpenAICompatibleProvider(base_url, "fake-model", api_key_env=KEY_ENV, **options)


def complete(target: Any, messages: list[Any] | None = None) -> Any:
    from codeagent_lite import ProviderMessage, ToolSpec

    tools = (ToolSpec(name="read_file", description="Read a file."),)
    return target.complete(
        messages=messages or [ProviderMessage("user", "Read README.md.")], tools=tools, max_output_tokens=16
    )


def refusal(target: Any, messages: list[Any] | None = None) -> Any:
    """The ``ProviderError`` a call raises (the test fails when it raises none)."""
    import pytest

    from codeagent_lite import ProviderError

    with pytest.raises(ProviderError) as caught:
        complete(target, messages)
    return caught.value
