"""The class's reply cache against a fake model server that counts what reaches it (``loopback_server``).

Twenty students send the same greedy request: one upstream call, twenty equal replies, the later ones marked. What is
not greedy, what failed and what is hostile is never stored, and a hostile body gets a 4xx saying what was expected.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from loopback_server import Answer, Server, serving

from codeagent_lite import Message, MessageRole, build_provider_messages
from codeagent_lite.providers.local_server import MARK_FIELD, GemmaProvider, SharedReply
from codeagent_lite.workbook.real_model_lab import TaskPlayground, ask, render_attempt, timing_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "classroom"))

import reply_cache
from reply_cache import HEADER, CacheServer, Reply, ReplyCache, Upstream

COMPLETION = {
    "choices": [{"text": '{"type":"final_answer","content":"ok"}', "finish_reason": "stop", "index": 0}],
    "usage": {"prompt_tokens": 740, "completion_tokens": 12},
}
GREEDY = {"model": "gemma", "prompt": "Reply:", "max_tokens": 64, "temperature": 0.0, "seed": 0, "stop": ["\n"]}


@pytest.fixture
def upstream() -> Iterator[Server]:
    with Server(Answer(body=json.dumps(COMPLETION).encode())) as server:
        yield server


@pytest.fixture
def cache(upstream: Server) -> Iterator[CacheServer]:
    port = urllib.parse.urlsplit(upstream.base_url).port or 0
    server = CacheServer(("127.0.0.1", 0), Upstream("127.0.0.1", port, timeout=10), ReplyCache(1 << 20, 20))
    with serving(server):
        yield server


def post(
    cache: CacheServer, body: bytes | dict[str, Any], path: str = "/v1/completions"
) -> tuple[int, str, dict[str, Any]]:
    """Status, the X-Class-Cache header and the JSON body of one POST."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    connection = http.client.HTTPConnection(*cache.server_address[:2], timeout=20)
    try:
        connection.request("POST", path, body=data, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.getheader(HEADER, ""), json.loads(response.read())
    finally:
        connection.close()


def wait_for(condition: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def ask_together(cache: CacheServer, gate: threading.Event, count: int) -> list[tuple[int, str, dict[str, Any]]]:
    """``count`` identical greedy requests at once: the first held upstream by ``gate`` until the rest wait on it."""
    with ThreadPoolExecutor(max_workers=count) as pool:
        futures = [pool.submit(post, cache, GREEDY) for _ in range(count)]
        wait_for(lambda: cache.cache.stats().get("joined", 0) == count - 1)
        gate.set()
        return [future.result(timeout=30) for future in futures]


def test_twenty_identical_requests_at_once_make_one_upstream_call_and_twenty_equal_replies(
    upstream: Server, cache: CacheServer
) -> None:
    gate = threading.Event()
    upstream.answer.gate = gate  # the first call stays in flight until all twenty are in
    replies = ask_together(cache, gate, 20)
    assert len(upstream.requests) == 1
    assert sorted(served for _, served, _ in replies) == ["joined"] * 19 + ["miss"]
    assert all(status == 200 for status, _, _ in replies)
    assert {json.dumps({k: v for k, v in body.items() if k != MARK_FIELD}) for _, _, body in replies} == {
        json.dumps(COMPLETION)
    }
    assert [body.get(MARK_FIELD) for _, served, body in replies if served == "miss"] == [None]
    # What reached the model is the canonical body: the same request, keys sorted.
    assert json.loads(upstream.bodies[0]) == GREEDY
    # Later, the same request again: answered from the store, marked, no model call.
    status, served, body = post(cache, dict(reversed(GREEDY.items())))
    assert (status, served, body[MARK_FIELD], len(upstream.requests)) == (200, "hit", "hit", 1)
    counts = cache.cache.stats()
    assert (counts["miss"], counts["joined"], counts["hit"], counts["model_tokens"]) == (1, 19, 1, 12)


NOT_GREEDY = [
    {"temperature": 0.7},
    {"temperature": None},
    {"mirostat": 2},
    # each of these changes a reply even at temperature 0; any field outside the allowlist goes to the model
    {"dynatemp_range": 0.5},
    {"xtc_probability": 0.5},
    {"samplers": ["top_k", "dry"]},
    {"t_max_predict_ms": 10},
]


@pytest.mark.parametrize("change", NOT_GREEDY)
def test_a_request_that_is_not_greedy_is_never_shared(upstream: Server, cache: CacheServer, change: Any) -> None:
    sampled = {**GREEDY, **change}
    if change.get("temperature", 0) is None:
        del sampled["temperature"]  # llama-server samples at 0.8 when no temperature is given
    answers = [post(cache, sampled) for _ in range(3)]
    assert len(upstream.requests) == 3
    assert [(status, served, MARK_FIELD in body) for status, served, body in answers] == [(200, "bypass", False)] * 3


def test_any_field_that_differs_makes_another_request(upstream: Server, cache: CacheServer) -> None:
    for change in ({}, {"max_tokens": 6}, {"stop": ["}"]}, {"seed": 1}, {"json_schema": {"type": "object"}}):
        post(cache, {**GREEDY, **change})
    assert len(upstream.requests) == 5
    post(cache, {**GREEDY, "seed": 1})
    assert len(upstream.requests) == 5


def test_a_lone_surrogate_is_passed_on_escaped_and_shared_like_any_text(upstream: Server, cache: CacheServer) -> None:
    body = json.dumps({**GREEDY, "prompt": "\ud800 学生"}).encode()
    assert [post(cache, body)[:2] for _ in range(2)] == [(200, "miss"), (200, "hit")]
    assert upstream.bodies[0].isascii() and json.loads(upstream.bodies[0])["prompt"] == "\ud800 学生"


def test_an_upstream_error_reaches_every_waiter_and_is_never_stored(upstream: Server, cache: CacheServer) -> None:
    gate = threading.Event()
    failure = {"error": {"code": 500, "message": "the model broke"}}
    upstream.answer = Answer(status=500, body=json.dumps(failure).encode(), gate=gate)
    replies = ask_together(cache, gate, 5)
    assert len(upstream.requests) == 1
    assert [(status, body) for status, _, body in replies] == [(500, failure)] * 5
    upstream.answer = Answer(body=json.dumps(COMPLETION).encode())
    assert post(cache, GREEDY)[:2] == (200, "miss")  # the error was not kept: the model is asked again
    assert len(upstream.requests) == 2


def test_an_unreachable_model_server_is_a_clear_502_and_not_stored(upstream: Server, cache: CacheServer) -> None:
    cache.upstream = Upstream("127.0.0.1", 1, timeout=5)
    status, _, body = post(cache, GREEDY)
    assert status == 502 and "the model server could not be asked" in body["error"]["message"]
    assert cache.cache.stats()["stored"] == 0


def test_a_waiter_gives_up_within_its_bound_when_the_first_call_hangs() -> None:
    store = ReplyCache(1 << 20, wait_seconds=0.2)
    release = threading.Event()

    def slow() -> Reply:
        release.wait(10)
        return Reply(200, json.dumps(COMPLETION).encode())

    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(store.answer, b"k", slow)
        wait_for(lambda: store.stats().get("miss", 0) == 1)
        started = time.monotonic()
        reply, served = store.answer(b"k", slow)
        waited = time.monotonic() - started
        release.set()
        assert first.result(timeout=10)[1] == "miss"
    assert (reply.status, served) == (504, "joined") and waited < 5
    assert "no answer within 0.2 s" in json.loads(reply.body)["error"]["message"]


def test_the_store_is_bounded_by_bytes_least_recently_used_out_first() -> None:
    body = json.dumps(COMPLETION).encode()
    one = len(Reply(200, body).marked("hit").body) + 32  # type: ignore[union-attr]
    store = ReplyCache(max_bytes=2 * one)
    keys = [bytes([n]) * 32 for n in range(3)]
    for key in keys[:2]:
        store.answer(key, lambda: Reply(200, body))
    store.answer(keys[0], lambda: Reply(200, body))  # used again: keys[1] is now the least recent
    store.answer(keys[2], lambda: Reply(200, body))
    assert store.stats()["stored"] == 2 and store.stats()["bytes"] <= 2 * one
    assert store.answer(keys[0], lambda: Reply(500, b"{}"))[1] == "hit"
    assert store.answer(keys[1], lambda: Reply(200, body))[1] == "miss"
    store.clear()  # what SIGHUP does to the class's cache
    assert (store.stats()["stored"], store.stats()["bytes"]) == (0, 0)
    assert store.answer(keys[0], lambda: Reply(200, body))[1] == "miss"


@pytest.mark.parametrize(
    ("data", "headers", "status", "expected"),
    [
        (b"not json", None, 400, "expected a JSON object (an OpenAI completions request); Expecting value"),
        (b"[1, 2]", None, 400, "found a JSON list"),
        (
            b'{"prompt": "a", "prompt": "b"}',
            None,
            400,
            "duplicate_key: expected each key at most once per object, found a second 'prompt'",
        ),
        (b'{"temperature": NaN}', None, 400, "not_finite: expected a finite JSON number, found 'NaN'"),
        (b'{"max_tokens": 1' + b"0" * 5000 + b"}", None, 400, "expected at most 4300 digits, found 5001 digits"),
        (b"\xff\xfe{}", None, 400, "byte 1 of the body is not UTF-8"),
        (b"", {"Content-Length": "5000000"}, 413, "a request body of at most 1000000 bytes, found 5000000"),
        (b"[" * 10_000 + b"]" * 10_000, None, 400, "nests too deeply"),
        (json.dumps({**GREEDY, "stream": True}).encode(), None, 400, "stream is not served here"),
        (b"{}", {"Content-Type": "application/json"}, 411, "expected a Content-Length header"),
        (b"{}", {"Content-Length": "-1"}, 400, "expected a Content-Length of digits, found '-1'"),
        (b"{}", {"Content-Length": "\u00b2"}, 400, "expected a Content-Length of digits"),  # isdigit(), not int()
    ],
)
def test_a_hostile_body_gets_a_4xx_that_says_what_was_expected(
    upstream: Server, cache: CacheServer, data: bytes, headers: dict[str, str] | None, status: int, expected: str
) -> None:
    found = post(cache, data) if headers is None else post_raw(cache, data, headers)
    assert found[0] == status and expected in found[2]["error"]["message"], found
    assert upstream.requests == []
    assert post(cache, GREEDY)[0] == 200  # and it still serves


def post_raw(cache: CacheServer, data: bytes, headers: dict[str, str]) -> tuple[int, str, dict[str, Any]]:
    """A POST with exactly these headers (http.client would add a true Content-Length): written by hand."""
    connection = http.client.HTTPConnection(*cache.server_address[:2], timeout=20)
    try:
        connection.putrequest("POST", "/v1/completions")
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders(data)
        response = connection.getresponse()
        return response.status, response.getheader(HEADER, ""), json.loads(response.read())
    finally:
        connection.close()


def test_only_the_completions_endpoints_and_a_few_reads_are_served(upstream: Server, cache: CacheServer) -> None:
    status, _, body = post(cache, GREEDY, path="/slots")
    assert (
        status == 404
        and "this server answers POST /v1/completions and /v1/chat/completions" in body["error"]["message"]
    )
    connection = http.client.HTTPConnection(*cache.server_address[:2], timeout=20)
    connection.request("GET", "/slots")
    assert connection.getresponse().status == 404
    connection.close()


def test_the_package_provider_and_notebook_06_say_when_a_reply_came_from_the_class_cache(cache: CacheServer) -> None:
    provider = GemmaProvider(cache.base_url, "free_text", timeout=20)
    messages = build_provider_messages([Message(MessageRole.USER, "Say hello.")])
    first = provider.complete(messages=messages, tools=[], max_output_tokens=64)
    again = provider.complete(messages=messages, tools=[], max_output_tokens=64)
    assert not isinstance(first, SharedReply)
    assert isinstance(again, SharedReply) and (again.served, again.text) == ("hit", first.text)
    attempts = [ask(provider, "Say hello.", [], label="free_text", max_output_tokens=64) for _ in range(2)]
    assert [attempt.shared for attempt in attempts] == [True, True]
    assert "from the class's shared reply cache" in render_attempt(attempts[0])
    table = timing_table(attempts)
    assert table.count("class cache") == 3  # both calls, and the total row over them
    playground = TaskPlayground({"free_text": provider}, [], task="Say hello.")
    assert playground.run_once().shared and "shared reply cache" in playground.result.value


def test_a_fault_inside_the_cache_still_answers_and_leaves_no_call_in_flight(cache: CacheServer) -> None:
    class Broken(Upstream):
        def send(self, method: str, path: str, body: bytes | None = None) -> Reply:
            raise RuntimeError("a bug")

    cache.upstream = Broken("127.0.0.1", 1)
    for _ in range(2):  # the second is not left waiting for the first
        status, _, body = post(cache, GREEDY)
        assert (status, body["error"]["message"]) == (500, "the class's reply cache failed: RuntimeError")
    assert cache.cache.stats()["stored"] == 0


@pytest.mark.parametrize("pause", [None, 0.3], ids=["stops sending", "sends a byte at a time"])
def test_a_client_that_does_not_send_its_request_in_time_gets_a_408_at_the_deadline(
    upstream: Server, cache: CacheServer, monkeypatch: pytest.MonkeyPatch, pause: float | None
) -> None:
    """One deadline for the whole request: a per-read timeout alone lets a slow sender hold its connection."""
    monkeypatch.setattr(reply_cache, "REQUEST_DEADLINE_SECONDS", 1.0)
    started = time.monotonic()
    with socket.create_connection(cache.server_address[:2], timeout=20) as client:
        client.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{}")
        for _ in range(20 if pause else 0):
            time.sleep(pause or 0)
            with contextlib.suppress(OSError):
                client.sendall(b" ")
        answer = b"".join(iter(lambda: client.recv(65536), b"")).decode("latin-1")  # until the cache closes it
    assert answer.startswith("HTTP/1.1 408"), answer
    assert "a body of 100 bytes within 1 s" in answer
    assert time.monotonic() - started < (6.0 + 1.0 if pause else 5.0)
    assert upstream.requests == []
