"""OpenAICompatibleProvider at the edges: compressed, trickled and absurd replies, credentials, logs.

Every test runs against a real loopback server. The regressions are the attacks of issue 18
(a gzip bomb, credentials in the address, an echo of part of the key, a learner's DEBUG
logging, 4300-digit token counts, a duplicate ``usage``, headers one byte per half second);
the property tests then try each class of input: encodings, addresses, echoes, numbers.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import logging
import os
import subprocess
import sys
import threading
import time
import tracemalloc
import urllib.parse
import zlib
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeagent_lite import ProviderError

pytest.importorskip("openai", reason="the openai extra is not installed: pip install 'codeagent-lite[openai]'")

from loopback_server import REPLY, VALID, Answer, Server, complete, provider, refusal

from codeagent_lite.providers import openai_compatible
from codeagent_lite.providers.failure import FailureCode, ProviderFailure
from codeagent_lite.providers.openai_compatible import (
    KEY_CHARACTERS,
    MAX_TOKEN_COUNT,
    OpenAICompatibleProvider,
    strict_failure,
)
from codeagent_lite.providers.redaction import MASK, Redactor
from codeagent_lite.strict_json import too_deep

KEY = "sk-proj-Zq8/Wv+Rt=Lm_0123456789abcdefGHIJKLmnop"  # 46 characters, like a real key
PROPERTIES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


pytestmark = pytest.mark.usefixtures("key_in_env")


def encode(body: bytes, codings: list[str]) -> bytes:
    """``body`` with each content coding applied in order, computed with the stdlib alone."""
    for coding in codings:
        if coding == "gzip":
            body = gzip.compress(body)
        elif coding == "deflate":
            body = zlib.compress(body)
        elif coding == "raw-deflate":
            compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
            body = compressor.compress(body) + compressor.flush()
    return body


def encoded_answer(body: bytes, codings: list[str], status: int = 200) -> Answer:
    names = ["deflate" if coding == "raw-deflate" else coding for coding in codings]
    return Answer(status=status, body=encode(body, codings), headers=[("Content-Encoding", ", ".join(names))])


# --------------------------------------------------------------------------- compressed replies


@pytest.fixture(scope="module")
def gzip_bomb() -> bytes:
    """50 MB of spaces in front of a valid reply, about 50 KB once gzipped."""
    return gzip.compress(b" " * 50_000_000 + json.dumps(VALID).encode(), compresslevel=9)


def test_a_gzip_bomb_is_refused_at_the_cap_without_being_held(server: Server, gzip_bomb: bytes) -> None:
    assert len(gzip_bomb) < 100_000
    server.answer = Answer(body=gzip_bomb, headers=[("Content-Encoding", "gzip")])
    target = provider(server.base_url, timeout=20.0)
    tracemalloc.start()
    try:
        error = refusal(target)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(error, ProviderFailure) and error.code is FailureCode.BODY_TOO_LONG
    assert error.params == {"limit": str(openai_compatible.MAX_BODY_BYTES)}
    assert f"longer than {openai_compatible.MAX_BODY_BYTES} bytes" in str(error)
    assert peak < 30_000_000, f"{peak / 1e6:.0f} MB held while refusing a 50 MB bomb"


@pytest.mark.parametrize(
    "codings", [["gzip"], ["deflate"], ["raw-deflate"], ["gzip", "gzip"], ["deflate", "gzip"], ["identity"]]
)
def test_a_compressed_reply_is_decoded(server: Server, codings: list[str]) -> None:
    server.answer = encoded_answer(json.dumps(VALID).encode(), codings)
    assert complete(provider(server.base_url)).text == REPLY


def test_only_the_encodings_it_can_bound_are_asked_for(server: Server) -> None:
    server.answer = Answer()
    complete(provider(server.base_url))
    assert server.requests[-1]["Accept-Encoding"] == "gzip, deflate"


@pytest.mark.parametrize("header", ["br", "zstd", "compress", "gzip, br", "x-unknown"])
def test_an_encoding_not_asked_for_is_refused(server: Server, header: str) -> None:
    server.answer = Answer(body=b"\x8b\x00 whatever", headers=[("Content-Encoding", header)])
    error = refusal(provider(server.base_url))
    assert "this client asks for gzip, deflate" in str(error)


def test_more_than_five_nested_encodings_are_refused(server: Server) -> None:
    server.answer = encoded_answer(json.dumps(VALID).encode(), ["gzip"] * 6)
    error = refusal(provider(server.base_url))
    assert isinstance(error, ProviderFailure) and error.code is FailureCode.BAD_ENCODING
    assert error.params["found"] == repr(", ".join(["gzip"] * 6))


def test_broken_gzip_is_a_provider_error(server: Server) -> None:
    server.answer = Answer(body=gzip.compress(json.dumps(VALID).encode())[:-12], headers=[("Content-Encoding", "gzip")])
    assert "gzip" in str(refusal(provider(server.base_url)))


_CODINGS = st.lists(st.sampled_from(["gzip", "deflate", "raw-deflate", "identity"]), max_size=3)


@PROPERTIES
@given(codings=_CODINGS, padding=st.integers(0, 120_000))
def test_the_cap_counts_decoded_bytes_whatever_the_encoding(
    server: Server, monkeypatch: pytest.MonkeyPatch, codings: list[str], padding: int
) -> None:
    monkeypatch.setattr(openai_compatible, "MAX_BODY_BYTES", 60_000)
    body = b" " * padding + json.dumps(VALID).encode()
    server.answer = encoded_answer(body, codings)
    target = provider(server.base_url)
    if len(body) > 60_000:
        assert "longer than 60000 bytes" in str(refusal(target))
    else:
        assert complete(target).text == REPLY


# --------------------------------------------------------------------------- credentials in the address

_USERINFO_CHARS = st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="@/?#[]:%")


@PROPERTIES
@given(
    user=st.text(_USERINFO_CHARS, max_size=12),
    password=st.text(_USERINFO_CHARS, min_size=8, max_size=24),
    with_user=st.booleans(),
)
def test_any_credentials_in_the_address_are_refused_unrepeated(user: str, password: str, with_user: bool) -> None:
    userinfo = f"{user}:{password}" if with_user else password
    with pytest.raises(ValueError, match="must not contain a user name or password") as caught:
        provider(f"http://{userinfo}@127.0.0.1:9/v1")
    shown = str(caught.value) + repr(caught.value)
    assert password not in shown and urllib.parse.quote(password, safe="") not in shown
    assert base64.b64encode(f"{user}:{password}".encode()).decode()[:8] not in shown


_QUERY_SECRET = st.text(st.characters(min_codepoint=0x30, max_codepoint=0x7A), min_size=8, max_size=20)


@PROPERTIES
@given(
    scheme=st.sampled_from(["http", "https"]),
    host=st.sampled_from(["127.0.0.1", "localhost", "[::1]", "api.example.com"]),
    port=st.one_of(st.none(), st.integers(1, 65535)),
    path=st.sampled_from(["", "/v1", "/openai/deployments/x"]),
    query=st.lists(st.tuples(st.sampled_from(["api-key", "key", "token", "api-version"]), _QUERY_SECRET), max_size=3),
)
def test_any_address_is_shown_without_its_query_values(
    scheme: str, host: str, port: int | None, path: str, query: list[tuple[str, str]]
) -> None:
    address = f"{scheme}://{host}{'' if port is None else f':{port}'}{path}"
    if query:
        address += "?" + urllib.parse.urlencode(query)
    target = provider(address)
    shown = target.shown_url + repr(target)
    for _, value in query:
        assert value not in shown and urllib.parse.quote_plus(value) not in shown


# --------------------------------------------------------------------------- echoes of the key


def test_an_echo_of_40_of_46_key_characters_is_hidden(server: Server) -> None:
    server.answer = Answer(status=401, body=json.dumps({"error": f"Incorrect API key provided: {KEY[:40]}"}).encode())
    error = refusal(provider(server.base_url))
    assert "Incorrect API key provided: ***" in str(error)
    assert KEY[:8] not in str(error) and KEY[20:28] not in str(error)


@pytest.mark.parametrize("times", [2, 3])
def test_an_echo_percent_encoded_several_times_is_hidden(server: Server, times: int) -> None:
    echo = KEY
    for _ in range(times):
        echo = urllib.parse.quote(echo, safe="")
    server.answer = Answer(status=401, body=json.dumps({"error": f"bad key {echo}"}).encode())
    assert "bad key ***" in str(refusal(provider(server.base_url)))


def test_an_echo_of_the_authorization_header_in_base64_is_hidden(server: Server) -> None:
    echo = base64.b64encode(f"Bearer {KEY}".encode()).decode()
    server.answer = Answer(status=401, body=json.dumps({"error": f"header was {echo}"}).encode())
    shown = str(refusal(provider(server.base_url)))
    assert MASK in shown
    assert echo[12:30] not in shown


def _spell(char: str, how: str) -> str:
    """One character written the way ``how`` names, independently of the code under test."""
    if how == "json":
        return f"\\u{ord(char):04x}"
    if how == "percent":
        return urllib.parse.quote(char, safe="")
    if how == "percent2":
        return urllib.parse.quote(urllib.parse.quote(char, safe=""), safe="")
    if how == "html":
        return f"&#{ord(char)};"
    if how == "html-amp":
        return f"&amp;#x{ord(char):x};"
    return char


_HOW = st.sampled_from(["plain", "json", "percent", "percent2", "html", "html-amp"])
_KEYS = st.text(st.sampled_from(sorted(KEY_CHARACTERS)), min_size=8, max_size=64)  # what a key may hold
_NOISE = st.text(st.sampled_from(" :,;\n\t<>()[]{}é中"), max_size=20)


@pytest.mark.parametrize("mark", ["\\", "%", "&", '"', "'", "#", ";"])
def test_a_key_with_a_mark_no_key_holds_is_refused_unshown(monkeypatch: pytest.MonkeyPatch, mark: str) -> None:
    key = f"sk-secret{mark}value-1234567890"
    monkeypatch.setenv("CAL_EDGE_KEY", key)
    with pytest.raises(ProviderError) as raised:
        OpenAICompatibleProvider("http://127.0.0.1:9/v1", "m", api_key_env="CAL_EDGE_KEY")
    assert "punctuation mark no API key contains" in str(raised.value)
    assert "secret" not in str(raised.value)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), key=_KEYS)
def test_any_run_of_eight_key_characters_in_any_spelling_is_hidden(data: st.DataObject, key: str) -> None:
    start = data.draw(st.integers(0, len(key) - 8), label="start")
    end = data.draw(st.integers(start + 8, len(key)), label="end")
    run = key[start:end]
    echo = "".join(_spell(char, data.draw(_HOW, label="spelling")) for char in run)
    text = data.draw(_NOISE, label="before") + echo + data.draw(_NOISE, label="after")
    scrubbed = Redactor.for_secrets([key]).scrub(text)
    assert MASK in scrubbed
    for begin in range(len(run) - 7):
        assert run[begin : begin + 8] not in scrubbed


@settings(max_examples=200, deadline=None)
@given(key=_KEYS, prefix=st.binary(max_size=5), suffix=st.binary(max_size=5), urlsafe=st.booleans())
def test_the_key_in_base64_at_any_alignment_is_hidden(key: str, prefix: bytes, suffix: bytes, urlsafe: bool) -> None:
    encode64 = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    echo = encode64(prefix + key.encode() + suffix).decode()
    scrubbed = Redactor.for_secrets([key]).scrub(f"header: {echo}")
    assert MASK in scrubbed
    # What is left of the encoding is at most the few characters that mix in the neighbours.
    assert len(scrubbed) - len("header: ") - len(MASK) <= len(echo) - len(key) * 4 // 3 + 8


@pytest.mark.parametrize(("key", "echo"), [("sk-ABCDEFGH1234", "SK-abcdefgh1234"), ("ΚΑΛΟΣ1234", "καλος1234")])
def test_a_key_echoed_in_another_case_is_hidden(key: str, echo: str) -> None:
    assert Redactor.for_secrets([key]).scrub(f"bad key {echo}!") == f"bad key {MASK}!"


_BINARY_SPELLINGS = [
    (base64.b64encode, "utf-8"),
    (base64.b64encode, "utf-16-le"),
    (base64.b64encode, "utf-16-be"),
    (base64.b32encode, "utf-8"),
    (base64.b32encode, "utf-16-le"),
    (base64.b16encode, "utf-16-le"),
]


@settings(max_examples=40, deadline=None)
@pytest.mark.parametrize(("encode", "encoding"), _BINARY_SPELLINGS)
@given(key=_KEYS, prefix=st.binary(max_size=5), suffix=st.binary(max_size=5))
def test_the_keys_bytes_in_any_binary_spelling_are_hidden(
    encode: Callable[[bytes], bytes], encoding: str, key: str, prefix: bytes, suffix: bytes
) -> None:
    echo = encode(prefix + key.encode(encoding) + suffix).decode()
    scrubbed = Redactor.for_secrets([key]).scrub(f"header: {echo}")
    assert MASK in scrubbed
    assert all(echo[i : i + 16] not in scrubbed for i in range(len(echo) - 15)), scrubbed


@settings(max_examples=200, deadline=None)
@given(key=_KEYS, text=st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=80))
def test_text_without_the_key_is_left_alone(key: str, text: str) -> None:
    if any(key[i : i + 8].lower() in text.lower() for i in range(len(key) - 7)):
        return
    if "%" in text or "&" in text or "\\" in text:
        return  # escapes are read, so their text may change only where it spells a run of the key
    assert Redactor.for_secrets([key]).scrub(text) == text


# --------------------------------------------------------------------------- logs


@pytest.fixture
def debug_logs() -> Iterator[io.StringIO]:
    """What ``logging.basicConfig(level=logging.DEBUG)`` would show a learner."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)


@pytest.mark.parametrize("status", [200, 401])
def test_debug_logs_never_show_the_key_or_a_query_secret(server: Server, debug_logs: io.StringIO, status: int) -> None:
    echo = f"Bearer {KEY}"
    server.answer = Answer(
        status=status,
        body=json.dumps({**VALID, "error": echo}).encode(),
        headers=[("X-Echo", echo), ("Set-Cookie", "session=cookie-secret-42"), ("X-Trace", "opaque-value-9876")],
    )
    target = provider(f"{server.base_url}?api-key=query-secret-123")
    with contextlib.suppress(ProviderError):
        complete(target)
    logged = debug_logs.getvalue()
    assert "httpcore2" in logged or "httpcore" in logged  # DEBUG really was on
    assert "HTTP Request: POST" in logged
    assert "(b'X-Trace', b'***')" in logged  # a header value not known as a secret is masked too
    secrets = (KEY, KEY[:8], KEY[-8:], "query-secret-123", "cookie-secret-42", "opaque-value-9876")
    for secret in (*secrets, urllib.parse.quote(KEY, safe="")):
        assert secret not in logged, f"{secret!r} was logged"


def test_a_log_line_with_an_exception_is_masked(debug_logs: io.StringIO, server: Server) -> None:
    target = provider(server.base_url)  # registers the key with the filter, for as long as it lives
    try:
        raise RuntimeError(f"echo {KEY}")
    except RuntimeError:
        logging.getLogger("httpx2").debug("failed", exc_info=True)
        logging.getLogger("httpcore.http11").debug("failed", exc_info=True)
    assert KEY[:8] not in debug_logs.getvalue()
    assert "RuntimeError: echo ***" in debug_logs.getvalue()
    del target


# --------------------------------------------------------------------------- numbers and duplicate keys


def test_token_counts_of_4300_digits_are_refused(server: Server) -> None:
    huge = "9" * 4300
    body = (
        json.dumps(VALID)
        .replace('"prompt_tokens": 5', f'"prompt_tokens": {huge}')
        .replace('"completion_tokens": 2', f'"completion_tokens": {huge}')
    )
    server.answer = Answer(body=body.encode())
    error = refusal(provider(server.base_url))
    assert "usage.prompt_tokens: fails the check less_than_equal" in str(error)  # past strict JSON, not a count


@pytest.mark.parametrize("digits", [4301, 10_000])
def test_an_integer_too_long_to_use_is_refused(server: Server, digits: int) -> None:
    server.answer = Answer(
        body=json.dumps(VALID).replace('"prompt_tokens": 5', f'"prompt_tokens": {"7" * digits}').encode()
    )
    error = str(refusal(provider(server.base_url)))
    assert f"an integer with {digits} digits; expected at most 4300" in error and len(error) < 400


@pytest.mark.parametrize(
    ("location", "said"),
    [
        ("http://elsewhere.example/v1/completions?key=x", "HTTP 307, a redirect to elsewhere.example; redirects are"),
        ("http://[::1", "server answered HTTP 307: "),  # no address: said as any other status
        ("/v1/elsewhere", "server answered HTTP 307: "),  # the same server: no host to name
    ],
)
def test_a_redirect_is_named_with_its_host_only(server: Server, location: str, said: str) -> None:
    server.answer = Answer(status=307, body=b"", headers=[("Location", location)])
    error = str(refusal(provider(server.base_url)))
    assert said in error and "key=x" not in error, error


def test_a_strict_refusal_the_hooks_never_make_is_still_worded() -> None:
    """strict_failure reads the decoder's refusals by code; any other code is a body that is not JSON, not a crash."""
    failure = strict_failure(too_deep(), lambda text: text)
    assert failure.code is FailureCode.NOT_JSON and "nesting is deeper than 100 levels" in str(failure)


def test_a_duplicate_usage_key_is_refused(server: Server) -> None:
    body = json.dumps(VALID)[:-1] + ', "usage": {"prompt_tokens": 0, "completion_tokens": 0}}'
    server.answer = Answer(body=body.encode())
    error = refusal(provider(server.base_url))
    assert "duplicate key 'usage' in one object; expected each key at most once" in str(error)


@PROPERTIES
@given(key=st.sampled_from(["choices", "usage", "message", "content", "prompt_tokens", "finish_reason"]))
def test_any_duplicate_key_in_the_reply_is_refused(server: Server, key: str) -> None:
    text = json.dumps(VALID)
    place = text.index(f'"{key}"')
    server.answer = Answer(body=(text[:place] + f'"{key}": null, ' + text[place:]).encode())
    assert f"duplicate key {key!r} in one object" in str(refusal(provider(server.base_url)))


@PROPERTIES
@given(tokens=st.one_of(st.integers(-(10**30), 10**30), st.integers(0, 2 * MAX_TOKEN_COUNT)))
def test_any_token_count_is_used_exactly_or_refused(server: Server, tokens: int) -> None:
    server.answer = Answer(
        body=json.dumps({**VALID, "usage": {"prompt_tokens": tokens, "completion_tokens": 1}}).encode()
    )
    target = provider(server.base_url)
    if 0 <= tokens <= MAX_TOKEN_COUNT:
        assert complete(target).input_tokens == tokens
    else:
        assert "usage.prompt_tokens" in str(refusal(target))


@PROPERTIES
@given(number=st.one_of(st.floats(allow_nan=False), st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-0"])))
def test_any_number_where_a_count_belongs_is_refused_cleanly(server: Server, number: float | str) -> None:
    text = number if isinstance(number, str) else json.dumps(number)
    server.answer = Answer(body=json.dumps(VALID).replace('"prompt_tokens": 5', f'"prompt_tokens": {text}').encode())
    try:
        response = complete(provider(server.base_url))
    except ProviderError as error:
        assert len(str(error)) < 700
    else:
        assert response.input_tokens == 0 and text == "-0"


# --------------------------------------------------------------------------- trickled headers

_TRICKLER = r"""
import socket, sys, threading, time
listener = socket.create_server(("127.0.0.1", 0))
print(listener.getsockname()[1], flush=True)
def serve(conn):
    conn.recv(65536)
    try:
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        while True:
            conn.sendall(b"X")
            time.sleep(0.5)
    except OSError:
        print("hung up", flush=True)
while True:
    conn, _ = listener.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""


def _open_sockets() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor is gone by now
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return count


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts sockets through /proc")
def test_trickled_headers_end_at_the_deadline_leaving_no_thread_or_socket() -> None:
    """A server in another process sends the headers one byte per half second, for ever."""
    trickler = subprocess.Popen([sys.executable, "-c", _TRICKLER], stdout=subprocess.PIPE, text=True)
    try:
        assert trickler.stdout is not None
        port = int(trickler.stdout.readline())
        target = provider(f"http://127.0.0.1:{port}/v1", timeout=1.5)
        threads, sockets = threading.active_count(), _open_sockets()
        for _ in range(3):
            started = time.monotonic()
            error = refusal(target)
            elapsed = time.monotonic() - started
            assert "timed out" in str(error)
            assert elapsed < 3.0, f"a 1.5 s deadline took {elapsed:.1f} s"
            assert threading.active_count() == threads, "a reader thread is still running"
            assert _open_sockets() == sockets, "a socket is still open"
        for _ in range(3):  # and the server saw each connection closed
            assert trickler.stdout.readline().strip() == "hung up"
    finally:
        trickler.kill()
        trickler.wait()
