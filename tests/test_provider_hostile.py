"""OpenAICompatibleProvider against hostile servers and careless options, on real loopback sockets.

Each regression below is one input that used to crash, hang or leak; the property tests
then try the whole class: arbitrary statuses and bodies from a real server, with the key
echoed in any spelling, and nothing but a ``ProviderError`` without the key may come out.
"""

from __future__ import annotations

import html
import json
import socket
import socketserver
import threading
import time
import traceback
import urllib.parse

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeagent_lite import ProviderError, ProviderMessage
from codeagent_lite.display import printable

pytest.importorskip("openai", reason="the openai extra is not installed: pip install 'codeagent-lite[openai]'")

from loopback_server import KEY_ENV, VALID, Answer, Server, complete, provider, refusal, serving

from codeagent_lite.providers import openai_compatible
from codeagent_lite.providers.openai_compatible import KEY_CHARACTERS, OpenAICompatibleProvider

KEY = "sk-live/DO+NOT=LEAK_0123456789abcdef"


def spellings(secret: str) -> set[str]:
    """Ways a server or proxy may write a secret back, computed independently of the code under test."""
    return {
        secret,
        json.dumps(secret)[1:-1],
        secret.replace("/", "\\/"),
        "".join(f"\\u{ord(char):04x}" for char in secret),
        "".join(f"\\u{ord(char):04X}" for char in secret),
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret),
        "".join(f"&#{ord(char)};" for char in secret),
        html.escape(secret),
        "\u200b".join(secret),  # a zero-width space after each character: invisible, still the key to a reader
        " ".join(secret),
        "\x00".join(secret),  # UTF-16-LE read as one byte a character: a NUL after each
        "\x1b".join(secret),
        "\u0301".join(secret),  # a combining accent on each character: the key, accented
        "\\u0000".join(secret),  # JSON's escaped NUL between the characters
        "".join(chr(ord(char) + 0xFEE0) if "!" <= char <= "~" else char for char in secret),  # fullwidth: ｓｋ
        "".join(f"\\{ord(char):03o}" for char in secret),  # C and Python octal escapes
    }


def assert_no_secret(text: str, secret: str = KEY) -> None:
    for spelling in spellings(secret):
        assert spelling not in text, f"the secret appears as {spelling!r}"


def assert_printable(text: str) -> None:
    assert printable(text) == text, f"raw control characters in {text!r}"


pytestmark = pytest.mark.usefixtures("key_in_env")


def everything_printed_about(error: BaseException) -> str:
    """The message, the repr and what a traceback says of every error in the chain: what a learner could ever see
    of this error. A traceback's frames are the source's paths and lines, not data: a drawn key such as
    'codeagent_li' is in them whatever the provider does, so they are left out."""
    said = [str(error), repr(error)]
    seen: BaseException | None = error
    while seen is not None:
        said.append("".join(traceback.format_exception_only(seen)))
        seen = seen.__cause__ or (None if seen.__suppress_context__ else seen.__context__)  # as a traceback goes
    return "\n".join(said)


# --------------------------------------------------------------------------- crashes


@pytest.mark.parametrize("text", ["\ud800", "a\udcffb", "ok \udfff"])
def test_a_lone_surrogate_in_a_message_is_refused_before_sending(server: Server, text: str) -> None:
    sent_before = len(server.authorizations)
    error = refusal(provider(server.base_url), [ProviderMessage("user", text)])
    assert "lone surrogate" in str(error) and "message 1" in str(error)
    assert len(server.authorizations) == sent_before  # nothing reached the server
    assert_printable(str(error))


def test_a_deeply_nested_200_body_is_a_provider_error(server: Server) -> None:
    server.answer = Answer(body=("[" * 100_000 + "]" * 100_000).encode())
    error = refusal(provider(server.base_url))
    assert "nests too deeply" in str(error)


def test_a_deeply_nested_error_body_is_a_provider_error(server: Server) -> None:
    server.answer = Answer(status=400, body=('{"error":' * 50_000 + "1" + "}" * 50_000).encode())
    error = refusal(provider(server.base_url))
    assert isinstance(error, ProviderError)


@pytest.mark.parametrize("key", ["sk-“quoted”-0123456789", "sk-with space-0123456789", "sk-\x1bescape-0123456789"])
def test_a_key_that_cannot_be_sent_is_refused_without_showing_it(monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    monkeypatch.setenv(KEY_ENV, key)
    with pytest.raises(ProviderError, match=r"cannot be sent: character \d+ of \d+ is") as caught:
        provider("http://127.0.0.1:9/v1")
    assert key not in everything_printed_about(caught.value)
    assert key.split("-")[1] not in str(caught.value)


@pytest.mark.parametrize(
    ("value", "error"),
    [(float("nan"), ValueError), (float("inf"), ValueError), (0, ValueError), (-1.0, ValueError), ("3", TypeError)],
)
def test_timeout_must_be_a_finite_positive_number(value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="timeout must be a"):
        provider("http://127.0.0.1:9/v1", timeout=value)


@pytest.mark.parametrize(("value", "error"), [(float("nan"), ValueError), (-0.5, ValueError), ("hot", TypeError)])
def test_temperature_must_be_a_finite_number(value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="temperature must be a"):
        provider("http://127.0.0.1:9/v1", temperature=value)


@pytest.mark.parametrize("base_url", ["http://[::1", "http://h:99999/v1", "ftp://host/v1", 42])
def test_a_broken_base_url_is_a_clear_error(base_url: object) -> None:
    with pytest.raises((ValueError, TypeError), match="base_url must be"):
        provider(base_url)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- secrets


def test_what_a_provider_holds_never_spells_its_key_in_a_repr(server: Server) -> None:
    """A variable inspector, ``vars(provider)`` or a traceback showing locals prints the reprs of its attributes: the
    redactor's pieces of the key must not be among them (folded to lower case, they still read as the key)."""
    shown = repr(vars(provider(server.base_url))).casefold()
    assert not any(KEY.casefold()[start : start + 8] in shown for start in range(len(KEY) - 7))


@pytest.mark.parametrize("ending", ["\r\n", "\n", "\r", "  "])
def test_a_key_with_a_line_ending_is_sent_and_scrubbed_without_it(
    server: Server, monkeypatch: pytest.MonkeyPatch, ending: str
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY + ending)
    server.answer = Answer(status=401, body=json.dumps({"error": f"bad key {KEY + ending}"}).encode())
    error = refusal(provider(server.base_url))
    assert server.authorizations[-1] == f"Bearer {KEY}"
    assert_no_secret(everything_printed_about(error))
    assert "bad key ***" in str(error)


@pytest.mark.parametrize("spelling", sorted(spellings(KEY)))
def test_an_echoed_key_is_scrubbed_in_every_spelling(server: Server, spelling: str) -> None:
    server.answer = Answer(status=401, body=('{"error": "Incorrect API key provided: ' + spelling + '"}').encode())
    error = refusal(provider(server.base_url))
    assert "Incorrect API key provided: ***" in str(error)
    assert_no_secret(everything_printed_about(error))


def test_no_raw_client_exception_is_chained(server: Server) -> None:
    server.answer = Answer(status=500, body=json.dumps({"echo": KEY}).encode())
    error = refusal(provider(server.base_url))
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)
    assert "APIStatusError" not in "".join(traceback.format_exception(error))


@pytest.mark.parametrize(
    ("query", "shown_query"),
    [("api-key=query-secret-123", "api-key=***"), ("query-secret-123", "***"), ("a=1&query%2Dsecret-123", "a=***&***")],
    ids=["named", "bare", "bare-escaped"],
)
def test_a_query_secret_in_the_base_url_is_never_shown(server: Server, query: str, shown_query: str) -> None:
    """A bare item (``?sk-...``, no "=") is a value too: most likely the key pasted onto the address."""
    port = server.base_url.split(":")[2].split("/")[0]
    server.answer = Answer(status=403, body=b'{"error": "query-secret-123 refused"}')
    target = provider(f"http://127.0.0.1:{port}/v1?{query}")
    error = refusal(target)
    shown = everything_printed_about(error) + repr(target) + target.shown_url
    assert "query-secret-123" not in shown
    assert target.shown_url == f"http://127.0.0.1:{port}/v1?{shown_query}"


@pytest.mark.parametrize(
    ("ending", "shown_ending"),
    [(";key=path-secret-123/", ";key=***/"), ("#access_token=fragment-secret-123", "#***")],
    ids=["path-parameter", "fragment"],
)
def test_a_path_parameter_or_fragment_secret_in_the_base_url_is_never_shown(
    server: Server, ending: str, shown_ending: str
) -> None:
    port = server.base_url.split(":")[2].split("/")[0]
    secret = ending.split("=")[1].rstrip("/")
    server.answer = Answer(status=403, body=json.dumps({"error": f"{secret} refused"}).encode())
    target = provider(f"http://127.0.0.1:{port}/v1{ending}")
    shown = everything_printed_about(refusal(target)) + repr(target) + target.shown_url
    assert secret not in shown
    assert target.shown_url == f"http://127.0.0.1:{port}/v1{shown_ending}"


@pytest.mark.parametrize(
    "userinfo", ["learner:hunter2-password@", "learner@", ":hunter2-password@", "le%40rner:hunter2%3Apassword@"]
)
def test_credentials_in_the_base_url_are_refused_without_repeating_them(server: Server, userinfo: str) -> None:
    """The HTTP library would send them as Basic auth instead of the key, and an echoing server would show them."""
    port = server.base_url.split(":")[2].split("/")[0]
    sent_before = len(server.authorizations)
    with pytest.raises(ValueError, match="must not contain a user name or password") as caught:
        provider(f"http://{userinfo}127.0.0.1:{port}/v1")
    shown = everything_printed_about(caught.value)
    for part in ("learner", "le%40rner", "hunter2", "aHVudGVyMi", "bGVhcm5lcj"):
        assert part not in shown
    assert f"***@127.0.0.1:{port}" in shown
    assert len(server.authorizations) == sent_before


@pytest.mark.parametrize("pasted", [KEY, "sk-proj-abc123", "ghp_MixedCaseToken123456789"])
def test_a_key_given_as_the_variable_name_is_not_echoed(monkeypatch: pytest.MonkeyPatch, pasted: str) -> None:
    monkeypatch.delenv(pasted, raising=False)
    with pytest.raises((ValueError, ProviderError)) as caught:
        OpenAICompatibleProvider("http://127.0.0.1:9/v1", "m", api_key_env=pasted)
    assert pasted not in everything_printed_about(caught.value)


def test_a_conventional_variable_name_is_still_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_SERVICE_KEY", raising=False)
    with pytest.raises(ProviderError, match="environment variable MY_SERVICE_KEY is not set"):
        OpenAICompatibleProvider("http://127.0.0.1:9/v1", "m", api_key_env="MY_SERVICE_KEY")


# --------------------------------------------------------------------------- hangs and memory


def test_a_trickling_server_is_stopped_at_the_deadline(server: Server) -> None:
    body = json.dumps(VALID).encode()
    server.answer = Answer(body=body, trickle_seconds=0.05)  # about 8 s for the whole body
    while server.handled.acquire(blocking=False):
        pass
    started = time.monotonic()
    error = refusal(provider(server.base_url, timeout=1.0))
    elapsed = time.monotonic() - started
    assert "timed out" in str(error)
    assert elapsed < 3.0, f"a 1 s deadline took {elapsed:.1f} s"
    # The call given up does not read on in the background: the transport drops the connection.
    assert server.handled.acquire(timeout=4.0), "the abandoned request kept reading"


def test_the_call_keeps_its_deadline_even_when_one_read_blocks_longer(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a transport whose reads may block for 30 s, the call still ends at its own deadline."""
    from codeagent_lite.providers.bounded_http import http_library

    monkeypatch.setattr(
        openai_compatible, "bounded_http_client", lambda seconds, max_body_bytes: http_library().Client(timeout=30.0)
    )
    server.answer = Answer(body=b"{" + b" " * 50, trickle_seconds=0.5)
    started = time.monotonic()
    error = refusal(provider(server.base_url, timeout=1.0))
    assert "timed out: no answer within 1 s" in str(error)
    assert time.monotonic() - started < 5.0


def test_a_silent_server_is_stopped_at_the_deadline() -> None:
    release = threading.Event()

    class Silent(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            release.wait(timeout=30)

    silent = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Silent)
    silent.daemon_threads = True
    with serving(silent):
        try:
            started = time.monotonic()
            error = refusal(provider(f"http://127.0.0.1:{silent.server_address[1]}/v1", timeout=0.5))
            assert "timed out: no answer within 0.5 s" in str(error)
            assert time.monotonic() - started < 2.5
        finally:
            release.set()


@pytest.mark.parametrize("status", [200, 500])
@pytest.mark.parametrize("content_length", [True, False])
def test_a_body_past_the_cap_is_refused(
    server: Server, monkeypatch: pytest.MonkeyPatch, status: int, content_length: bool
) -> None:
    monkeypatch.setattr(openai_compatible, "MAX_BODY_BYTES", 50_000)
    server.answer = Answer(
        status=status, body=b" " * 200_000 + json.dumps(VALID).encode(), content_length=content_length
    )
    error = refusal(provider(server.base_url))
    assert "longer than 50000 bytes" in str(error)


# --------------------------------------------------------------------------- the classes, as properties

_KEY_CHARS = st.sampled_from(sorted(KEY_CHARACTERS))  # what the provider lets a key hold
_NOISE = st.text(max_size=40)


@st.composite
def body_with_echoes(draw: st.DrawFn, key: str) -> bytes:
    """Arbitrary text or bytes, with the key dropped in here and there in any spelling."""
    pieces: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        pieces.append(draw(_NOISE))
        pieces.append(draw(st.sampled_from(sorted(spellings(key)))))
    pieces.append(draw(_NOISE))
    text = "".join(pieces)
    shape = draw(st.sampled_from(["raw", "json-error", "completion", "bytes"]))
    if shape == "json-error":
        text = json.dumps({"error": {"message": text}})
    elif shape == "completion":
        text = json.dumps({**VALID, "choices": [{"message": {"content": text}, "finish_reason": text[:5]}]})
    encoded = text.encode("utf-8", "surrogatepass")
    if shape == "bytes":
        encoded = draw(st.binary(max_size=40)) + encoded + draw(st.binary(max_size=40))
    return encoded


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), status=st.integers(200, 599))
def test_any_status_and_body_gives_a_response_or_a_clean_provider_error(
    server: Server, monkeypatch: pytest.MonkeyPatch, data: st.DataObject, status: int
) -> None:
    key = data.draw(st.text(_KEY_CHARS, min_size=12, max_size=40), label="key")
    monkeypatch.setenv(KEY_ENV, key)
    server.answer = Answer(status=status, body=data.draw(body_with_echoes(key), label="body"))
    target = provider(server.base_url, timeout=5.0)
    try:
        response = complete(target)
    except ProviderError as error:
        shown = everything_printed_about(error)
        assert_no_secret(shown, key)
        assert_printable(str(error))
        assert len(str(error)) < 600
    else:
        assert status < 300 and isinstance(response.text, str)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=60))
def test_any_message_text_is_sent_or_refused_cleanly(server: Server, text: str) -> None:
    server.answer = Answer()
    try:
        response = complete(provider(server.base_url, timeout=5.0), [ProviderMessage("user", text or "x")])
    except ProviderError as error:
        assert "lone surrogate" in str(error)
        assert_printable(str(error))
    else:
        assert response.text == '{"type":"final_answer","content":"ok"}'


def test_the_property_server_really_is_loopback(server: Server) -> None:
    host = urllib.parse.urlsplit(server.base_url).hostname
    assert host == "127.0.0.1"
    with socket.create_connection((host, int(server.base_url.split(":")[2].split("/")[0])), timeout=2):
        pass


def test_the_key_echoed_in_a_refused_content_encoding_never_reaches_the_error(server: Server) -> None:
    server.answer = Answer(headers=[("Content-Encoding", f"br-{KEY}")])
    error = refusal(provider(server.base_url))
    assert "Content-Encoding" in str(error)
    shown = everything_printed_about(error)
    assert_no_secret(shown)
    assert_no_secret(shown.lower(), KEY.lower())  # the client reads the header's codings in lower case
    assert_printable(str(error))


@pytest.mark.parametrize(("budget", "error"), [(0, ValueError), (-1, ValueError), (None, TypeError), (True, TypeError)])
def test_a_budget_that_is_no_positive_count_is_refused_before_sending(
    server: Server, budget: object, error: type[Exception]
) -> None:
    """0 and None mean "no limit" to a server, and -1 came back as HTTP 500 quoting the server's traceback."""
    sent = len(server.authorizations)
    with pytest.raises(error, match="max_output_tokens must"):
        provider(server.base_url).complete(
            messages=[ProviderMessage("user", "Read README.md.")], tools=(), max_output_tokens=budget
        )
    assert len(server.authorizations) == sent
