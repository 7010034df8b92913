"""One answer for the class: identical greedy requests to the class's model are decoded once.

Twenty students running notebook 06 send the class's model the same requests: the same worked-example prompt, the
same task, temperature 0. Decoded twenty times, that is twenty times the work for one answer, on cores the students'
own kernels need too. This server stands on the port the students' kernels are given, with the model server
(``local_server``) behind it on a loopback port of its own, and answers a request identical to one already answered
from the stored reply.

- **What is shared.** A ``POST`` to ``/v1/completions`` or ``/v1/chat/completions`` whose decoding is greedy:
  ``temperature`` given as 0. llama-server's default is 0.8 with a random seed (``llama-server --help``), so a
  request without it is sampled; it is passed through and never stored, as is any other temperature, mirostat, and
  ``stream`` (which the package's provider never asks for; a streamed request is refused, saying so).
- **What "identical" means.** The key is a hash of the path and the whole body with its keys sorted: every field
  (prompt or messages, grammar, json_schema, stop, max_tokens, seed, every sampling field) takes part. The body sent
  on is that same canonical text, so the model answers exactly what the key names (a duplicate key cannot mean one
  thing here and another there).
- **In flight.** The first of identical requests asks the model; the others wait for it, at most as long as that
  call may take. If it fails, each of them gets the same error, and nothing is stored: an error, a reply that is
  not a JSON object, a reply cut off on the way, never.
- **Marked.** A reply that cost this request no model call says so: ``"class_cache": "hit"`` (stored) or
  ``"joined"`` (waited for an identical request in flight) in its JSON body, and the header ``X-Class-Cache``
  (``miss`` for the request that did ask the model, ``bypass`` for one passed through). The package's provider reads
  the body field (``local_server.SharedReply``, where the field is named) and notebook 06 shows it.
- **Bounded.** At most ``--cache-mb`` of replies, the least recently used forgotten first; request bodies at most
  ``MAX_REQUEST_BYTES``; at most ``MAX_CONNECTIONS`` handled at once (more are refused with 503, not queued without
  end); a client that stops sending is dropped after ``CLIENT_TIMEOUT_SECONDS``, and one that sends its request
  slowly gets a 408 after ``REQUEST_DEADLINE_SECONDS``. A body that is not a JSON object gets a 400 that says what
  was expected and what came.

What it does not change: the model server behind it listens on the loopback, where any account of the machine can
still reach it directly, as before; the cache is for speed, not a wall. And a shared reply is the one the first of
identical requests got: with continuous batching llama-server's greedy text can depend on what else it decoded at
the time, so a class served from the cache sees one answer where it might have seen a few.

Run by the class's model service (``classroom/class_model.py``), as the model's own account, from a root-owned copy
of this file that account can read (the teacher's checkout is closed to it) and the students' interpreter, which has
the package: ``python reply_cache.py --host 127.0.0.1 --port P [--cache-mb M] [local_server options]`` starts
``local_server`` with the other options as its child, on a free loopback port, and serves in front of it until that
child ends or this process is stopped. ``GET /class-cache`` gives its counts: requests by how they were served,
replies stored and their bytes, and ``model_tokens``, what the model wrote (the benchmark reads them).
``SIGHUP`` empties the store (the benchmark starts each step from nothing that way); no request can.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import http.client
import json
import re
import signal
import socket
import sys
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from codeagent_lite.display import printable, shorten
from codeagent_lite.json_text_adapter import ProviderError
from codeagent_lite.model_adapter import InvalidModelOutputError
from codeagent_lite.providers.local_server import LOCAL_TIMEOUT_SECONDS, MARK_FIELD, serve, start_local_server
from codeagent_lite.providers.openai_compatible import MAX_BODY_BYTES
from codeagent_lite.strict_json import DECODER

__all__ = [
    "HEADER",
    "CacheServer",
    "Refused",
    "Reply",
    "ReplyCache",
    "cache_key",
    "main",
    "parse_request",
]

HEADER = "X-Class-Cache"
"""hit, joined, miss (this request asked the model) or bypass (not shareable: passed through)."""
Served = Literal["hit", "joined", "miss", "bypass"]

SHARED_PATHS = ("/v1/completions", "/v1/chat/completions")
PASSED_GETS = ("/v1/models", "/health")
STATS_PATH = "/class-cache"
MAX_REQUEST_BYTES = 1_000_000
"""A request of the workbook is a few kilobytes (a 2048-token context is about 8 KB of text)."""
MAX_CONNECTIONS = 256
"""Connections handled at once (a thread each): a class of 32 keeps a few each; more are refused, not queued."""
CLIENT_TIMEOUT_SECONDS = 30.0
REQUEST_DEADLINE_SECONDS = 30.0
"""How long a client has to send a whole request, headers and body (the model's time is not counted)."""
DEFAULT_CACHE_MB = 64


# --------------------------------------------------------------------------- the request


def error_reply(status: int, message: str) -> Reply:
    """An error in the shape llama-server and OpenAI give theirs, so the provider shows its message."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    return Reply.json(status, {"error": {"code": status, "type": kind, "message": message}})


class Refused(Exception):
    """A request this server will not pass on: the HTTP status and what was expected instead."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def reply(self) -> Reply:
        return error_reply(self.status, self.message)


def _excerpt(text: str) -> str:
    return printable(shorten(" ".join(text.split()), 80))


def parse_request(data: bytes) -> dict[str, Any]:
    """The request body as a JSON object, or ``Refused`` (400) saying what was expected and what came."""
    expected = "expected a JSON object (an OpenAI completions request)"
    try:
        text = data.decode("utf-8")
        body = DECODER.decode(text)  # the chapter's strict JSON: no duplicate key, no NaN, no endless number
    except UnicodeDecodeError as error:
        raise Refused(400, f"{expected}; byte {error.start + 1} of the body is not UTF-8") from None
    except RecursionError:
        raise Refused(400, f"{expected}; the body nests too deeply") from None
    except json.JSONDecodeError as error:
        found = _excerpt(text[max(error.pos - 20, 0) : error.pos + 20]) or "an empty body"
        raise Refused(400, f"{expected}; {error.msg} at character {error.pos + 1}, near {found!r}") from None
    except InvalidModelOutputError as refused:  # said from its data: its message is written for a model's reply
        found = _excerpt(str(refused.found))
        raise Refused(400, f"{expected}; {refused.code}: expected {refused.expected}, found {found}") from None
    except ValueError as error:  # any other refusal of the decoder's own
        raise Refused(400, f"{expected}; {_excerpt(str(error))}") from None
    if not isinstance(body, dict):
        raise Refused(400, f"{expected}; found a JSON {type(body).__name__}")
    return body


def canonical(body: Mapping[str, Any]) -> bytes:
    """The one spelling of a body: keys sorted, no spaces, ASCII (a lone surrogate stays an escape, never a crash).
    Hashed for the key, and what is sent on."""
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("ascii")


SHAREABLE_FIELDS = frozenset(
    {
        "model", "prompt", "max_tokens", "temperature", "stop", "seed", "grammar", "json_schema", "repeat_penalty",
        "frequency_penalty", "presence_penalty", "top_p", "top_k", "min_p", "n", "echo", "logprobs", "user", "stream",
    }
)  # fmt: skip
"""The fields a shared request may hold: each either leaves greedy decoding alone or is part of the key.

An allowlist, not a list of the samplers that add chance: llama-server keeps gaining fields (``dynatemp_range``,
``xtc_probability``, ``samplers``, ``t_max_predict_ms`` all change a reply even at temperature 0), and a field we do
not know sends the request to the model, which is slower, never wrong."""


def cache_key(path: str, body: Mapping[str, Any]) -> bytes | None:
    """The key of a request whose reply may be shared, or None when its decoding may not be greedy.

    Greedy only when ``temperature`` is given as 0 (llama-server samples at 0.8 without it) and every field is one
    of ``SHAREABLE_FIELDS``.
    """
    temperature = body.get("temperature")
    greedy = type(temperature) in (int, float) and temperature == 0
    if not greedy or not SHAREABLE_FIELDS.issuperset(body):
        return None
    return hashlib.sha256(path.encode("utf-8") + b"\0" + canonical(body)).digest()


# --------------------------------------------------------------------------- replies and the store


@dataclass(frozen=True, slots=True)
class Reply:
    """An answer as sent to a client: status, JSON body bytes."""

    status: int
    body: bytes
    content_type: str = "application/json"

    @classmethod
    def json(cls, status: int, body: Mapping[str, Any]) -> Reply:
        return cls(status, json.dumps(body).encode("ascii"))

    def marked(self, served: str) -> Reply | None:
        """This successful reply with the cache's mark in its body; None when it is no JSON object to keep."""
        if self.status != 200:
            return None
        try:
            body = json.loads(self.body)
        except (ValueError, RecursionError):
            return None
        if not isinstance(body, dict):
            return None
        return Reply.json(200, {**body, MARK_FIELD: served})


@dataclass
class _Flight:
    """An upstream call under way; identical requests wait on ``done`` for ``reply``."""

    done: threading.Event = field(default_factory=threading.Event)
    reply: Reply | None = None


@dataclass
class ReplyCache:
    """Stored replies by key, least recently used forgotten first once ``max_bytes`` is reached, and the calls in
    flight, so that identical requests wait for one upstream call instead of each making their own."""

    max_bytes: int
    wait_seconds: float = LOCAL_TIMEOUT_SECONDS + 30.0
    counts: Counter[str] = field(default_factory=Counter)
    _stored: OrderedDict[bytes, bytes] = field(default_factory=OrderedDict)
    _size: int = 0
    _flights: dict[bytes, _Flight] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, key: bytes, ask: Callable[[], Reply]) -> tuple[Reply, Served]:
        """The reply for key: stored, waited for, or asked for with ``ask`` (which returns errors as replies)."""
        with self._lock:
            stored = self._stored.get(key)
            if stored is not None:
                self._stored.move_to_end(key)
                self.counts["hit"] += 1
                return Reply(200, stored), "hit"
            flight = self._flights.get(key)
            leading = flight is None
            if flight is None:
                flight = self._flights[key] = _Flight()
            self.counts["miss" if leading else "joined"] += 1
        if not leading:
            return self._join(flight), "joined"
        return self._lead(key, flight, ask), "miss"

    def _join(self, flight: _Flight) -> Reply:
        if not flight.done.wait(self.wait_seconds) or flight.reply is None:
            message = f"an identical request asked the model and had no answer within {self.wait_seconds:g} s"
            return error_reply(504, message)
        return flight.reply.marked("joined") or flight.reply

    def _lead(self, key: bytes, flight: _Flight, ask: Callable[[], Reply]) -> Reply:
        reply = error_reply(502, "the reply cache failed while asking the model")
        try:
            reply = ask()
            self.generated(reply)
        finally:
            # Always: a waiter is never left without an answer, whatever happened here.
            flight.reply = reply
            with self._lock:
                del self._flights[key]
                kept = reply.marked("hit")
                if kept is not None:
                    self._store(key, kept.body)
            flight.done.set()
        return reply

    def _store(self, key: bytes, body: bytes) -> None:
        cost = len(key) + len(body)
        if cost > self.max_bytes:
            return
        self._stored[key] = body
        self._size += cost
        while self._size > self.max_bytes:
            old_key, old_body = self._stored.popitem(last=False)
            self._size -= len(old_key) + len(old_body)

    def passed(self, reply: Reply) -> None:
        """Count a request that was not shareable and went to the model as it is."""
        with self._lock:
            self.counts["bypass"] += 1
        self.generated(reply)

    def generated(self, reply: Reply) -> None:
        """Count the tokens the model wrote for a reply it was asked for (``model_tokens`` in the counts)."""
        with contextlib.suppress(ValueError, RecursionError, KeyError, TypeError):
            tokens = json.loads(reply.body)["usage"]["completion_tokens"] if reply.status == 200 else 0
            if type(tokens) is int and 0 < tokens < 1 << 40:
                with self._lock:
                    self.counts["model_tokens"] += tokens

    def clear(self) -> None:
        """Forget every stored reply (calls in flight finish as they are)."""
        with self._lock:
            self._stored.clear()
            self._size = 0

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {**self.counts, "stored": len(self._stored), "bytes": self._size, "max_bytes": self.max_bytes}


# --------------------------------------------------------------------------- the upstream model server


@dataclass(frozen=True, slots=True)
class Upstream:
    """The model server behind the cache, on the loopback."""

    host: str
    port: int
    timeout: float = LOCAL_TIMEOUT_SECONDS

    def send(self, method: str, path: str, body: bytes | None = None) -> Reply:
        """The model server's answer, or a 502/504 reply saying why there is none (never an exception)."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read(MAX_BODY_BYTES + 1)
            if len(data) > MAX_BODY_BYTES:
                return error_reply(502, f"the model server's answer is longer than {MAX_BODY_BYTES} bytes")
            return Reply(response.status, data, response.getheader("Content-Type") or "application/json")
        except TimeoutError:
            return error_reply(504, f"the model server did not answer within {self.timeout:g} s")
        except (OSError, http.client.HTTPException) as error:
            detail = _excerpt(str(error)) or type(error).__name__
            return error_reply(502, f"the model server could not be asked: {type(error).__name__}: {detail}")
        finally:
            connection.close()


# --------------------------------------------------------------------------- the HTTP server


class CacheServer(ThreadingHTTPServer):
    """The reply cache on ``address``, in front of ``upstream``; at most ``MAX_CONNECTIONS`` handled at once."""

    daemon_threads = True
    request_queue_size = MAX_CONNECTIONS  # the listen backlog: a class connecting at once is not dropped at 5

    def __init__(self, address: tuple[str, int], upstream: Upstream, cache: ReplyCache) -> None:
        super().__init__(address, _Handler)
        self.upstream = upstream
        self.cache = cache
        self._room = threading.BoundedSemaphore(MAX_CONNECTIONS)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host.decode() if isinstance(host, bytes) else host}:{port}/v1"

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._room.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.sendall(b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._room.release()

    def handle_post(self, path: str, data: bytes) -> tuple[Reply, Served]:
        """What a POST to path with body data gets."""
        if path not in SHARED_PATHS:
            raise Refused(404, f"this server answers POST {' and '.join(SHARED_PATHS)}, not {_excerpt(path)!r}")
        body = parse_request(data)
        if body.get("stream") not in (None, False):
            raise Refused(400, "stream is not served here: ask without it (the workbook's provider never streams)")
        sent = canonical(body)
        key = cache_key(path, body)
        if key is None:
            reply = self.upstream.send("POST", path, sent)
            self.cache.passed(reply)
            return reply, "bypass"
        return self.cache.answer(key, lambda: self.upstream.send("POST", path, sent))


class _Handler(BaseHTTPRequestHandler):
    server: CacheServer
    timeout = CLIENT_TIMEOUT_SECONDS
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        try:
            reply, served = self.server.handle_post(self.path, self._body())
        except Refused as refused:
            self.close_connection = True
            reply, served = refused.reply(), "bypass"
        except Exception as error:  # a bug here must still answer, not drop the student's connection
            self.close_connection = True
            reply, served = error_reply(500, f"the class's reply cache failed: {type(error).__name__}"), "bypass"
        self._send(reply, served)

    def do_GET(self) -> None:
        if self.path == STATS_PATH:
            self._send(Reply.json(200, self.server.cache.stats()), "bypass")
        elif self.path in PASSED_GETS:
            self._send(self.server.upstream.send("GET", self.path), "bypass")
        else:
            paths = ", ".join((*PASSED_GETS, STATS_PATH))
            self._send(error_reply(404, f"this server answers GET {paths}, not {_excerpt(self.path)!r}"), "bypass")

    def handle_one_request(self) -> None:
        # One deadline for the whole request, headers and body: the socket's timeout bounds each read only, so a
        # client sending a byte every few seconds would otherwise hold its connection (and one of MAX_CONNECTIONS)
        # for as long as it likes. When it passes, reading stops (SHUT_RD) and the request is refused with a 408.
        self._deadline = threading.Timer(REQUEST_DEADLINE_SECONDS, self._stop_reading)
        self._deadline.daemon = True
        self._deadline.start()
        try:
            super().handle_one_request()
        finally:
            self._deadline.cancel()

    def _stop_reading(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RD)

    def _body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None:
            raise Refused(411, "expected a Content-Length header (a body of known length, not chunked)")
        if re.fullmatch(r"[0-9]{1,12}", length) is None:
            raise Refused(400, f"expected a Content-Length of digits, found {_excerpt(length)!r}")
        if int(length) > MAX_REQUEST_BYTES:
            raise Refused(413, f"a request body of at most {MAX_REQUEST_BYTES} bytes, found {length}")
        try:
            data = self.rfile.read(int(length))
            found = f"{len(data)} arrived"
        except OSError:  # the socket's own timeout: the client stopped sending for that long
            data, found = b"", f"nothing for {CLIENT_TIMEOUT_SECONDS:g} s"
        self._deadline.cancel()
        if len(data) != int(length):
            raise Refused(408, f"a body of {length} bytes within {REQUEST_DEADLINE_SECONDS:g} s, found {found}")
        return data

    def _send(self, reply: Reply, served: Served) -> None:
        with contextlib.suppress(OSError):  # the client gave up; the reply (if shareable) is stored anyway
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            self.send_header(HEADER, served)
            self.end_headers()
            self.wfile.write(reply.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per request would bury the hub's log; GET /class-cache has the counts


# --------------------------------------------------------------------------- the command line


def _arguments(argv: Sequence[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cache-mb", type=int, default=DEFAULT_CACHE_MB, help="most megabytes of replies kept")
    args, engine = parser.parse_known_args(argv)
    if args.cache_mb < 0:
        parser.error("--cache-mb must be at least 0")
    if {"--host", "--port"} & {part.split("=")[0] for part in engine}:
        parser.error("--host and --port are this server's; the model server behind it takes a free loopback port")
    return args, engine


def main(argv: Sequence[str] | None = None) -> int:
    args, engine_options = _arguments(argv)
    command = [sys.executable, "-m", "codeagent_lite.providers.local_server", "--host", "127.0.0.1"]
    try:
        # Bound first: a port already taken is said before the model is loaded. Requests wait in the backlog
        # until the model server is ready.
        server = CacheServer((args.host, args.port), Upstream("127.0.0.1", 0), ReplyCache(args.cache_mb << 20))
        # Only this account and root may signal it: emptying the store is theirs, never a request's. Set before the
        # model loads: a SIGHUP meanwhile must not end the service (its default action).
        signal.signal(signal.SIGHUP, lambda _number, _frame: server.cache.clear())
        engine = start_local_server([*command, "--port", "{port}", *engine_options], startup_timeout=300)
    except (OSError, ProviderError) as error:
        print(f"class reply cache: failed: {error}", file=sys.stderr, flush=True)
        return 1
    for line in (engine.log_path.read_text(encoding="utf-8").splitlines() if engine.log_path else [])[:3]:
        print(line, flush=True)  # the model server's own lines: which backend serves and why
    server.upstream = Upstream("127.0.0.1", engine.port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    announce = (
        f"class reply cache: ready at {server.base_url}, in front of the model server at {engine.base_url}; "
        f"identical greedy requests decoded once, at most {args.cache_mb} MB of replies kept (SIGHUP empties it)"
    )
    try:
        return serve(engine, announce)
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    sys.exit(main())
