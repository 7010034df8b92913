"""The engine process for one learner: llama-cpp-python's own server, with two additions.

It takes ``json_schema`` on ``/v1/completions`` as ``llama-server`` does (made a GBNF grammar here, so the kernel
never imports ``llama_cpp``), and it exits when the process that started it goes away (its stdin ends), on any system.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MODEL_ALIAS", "SchemaToGrammar", "main"]

MODEL_ALIAS = "gemma-3-270m"  # the model name both servers answer to (``--alias`` of llama-server)
MAX_REQUEST_BYTES = 1_000_000  # a prompt and its schema are a few kilobytes; more is read into memory whole

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class SchemaToGrammar:
    """ASGI middleware: a completion request's ``json_schema`` becomes the ``grammar`` llama-cpp-python takes."""

    app: App
    to_gbnf: Callable[[str], str]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST" or scope.get("path") != "/v1/completions":
            await self.app(scope, receive, send)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > MAX_REQUEST_BYTES:  # a running count: a stream of tiny chunks costs no more than one
                await _refuse(send, 413, f"the request is longer than {MAX_REQUEST_BYTES} bytes")
                return
            if not message.get("more_body", False):
                break
        body = self.rewrite(b"".join(chunks))
        pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

        async def replay() -> Message:  # the rewritten body once, then whatever the client sends next
            return pending.pop() if pending else await receive()

        headers = [(name, value) for name, value in scope.get("headers", []) if name.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode("ascii")))
        await self.app({**scope, "headers": headers}, replay, send)

    def rewrite(self, body: bytes) -> bytes:
        """The body with ``json_schema`` replaced by its grammar; anything else passes unchanged."""
        try:
            request = json.loads(body)
        except ValueError:
            return body  # the server's own validation answers 422
        if not isinstance(request, dict) or "json_schema" not in request:
            return body
        schema = request.pop("json_schema")
        if schema is not None and request.get("grammar") is None:
            request["grammar"] = self.to_gbnf(json.dumps(schema))
        return json.dumps(request).encode("utf-8")


async def _refuse(send: Send, status: int, message: str) -> None:
    """An error in the shape the server gives its own, so the provider shows its message."""
    body = json.dumps({"error": {"code": status, "type": "invalid_request_error", "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii"))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _exit_with_parent() -> None:
    # The parent holds the write end of our stdin and never writes: end of file means it is gone.
    with contextlib.suppress(OSError, ValueError):
        while sys.stdin.buffer.read(4096):
            pass
    os._exit(0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--exit-with-parent", action="store_true", help="exit when stdin reaches end of file")
    args = parser.parse_args(argv)
    if args.exit_with_parent:
        threading.Thread(target=_exit_with_parent, name="exit-with-parent", daemon=True).start()

    import uvicorn
    from llama_cpp.llama_grammar import json_schema_to_gbnf
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    threads = args.threads or (os.cpu_count() or 1)
    sizes = {"n_ctx": args.n_ctx, "n_threads": threads, "n_threads_batch": threads}
    model = ModelSettings(model=args.model, model_alias=MODEL_ALIAS, seed=0, verbose=False, **sizes)
    app = create_app(server_settings=ServerSettings(host=args.host, port=args.port), model_settings=[model])
    uvicorn.run(SchemaToGrammar(app, json_schema_to_gbnf), host=args.host, port=args.port, log_level="warning")
    return 0


def _run(argv: Sequence[str] | None = None) -> int:
    """``main``'s exit status, a failure's traceback on stderr (the engine log) first."""
    try:
        return main(argv)
    except SystemExit as stop:  # argparse, and uvicorn when it cannot bind its port
        return stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


if __name__ == "__main__":
    # os._exit: the exit-with-parent thread is blocked reading stdin, and an interpreter shutting down around it
    # aborts (SIGABRT, which would read as a failed check inside llama.cpp instead of the real reason).
    os._exit(_run())
