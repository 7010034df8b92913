"""OpenAICompatibleProvider against real sockets: small local HTTP servers for the failure
paths, and llama-cpp-python's own OpenAI-compatible server running Gemma for the real thing."""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from local_model import requires_local_model
from loopback_server import serving

from codeagent_lite import (
    InvalidModelOutputError,
    JsonTextModelAdapter,
    Message,
    MessageRole,
    ModelCallBudget,
    ModelProviderError,
    ModelResponse,
    ProviderError,
    ProviderMessage,
    TokenUsage,
    ToolSpec,
    ValidationLayer,
    action_json_schema,
)
from codeagent_lite.agent import StopReason, run_agent
from codeagent_lite.providers import PLACEHOLDER_API_KEY, OpenAICompatibleProvider, llama_server, render_system_prompt
from codeagent_lite.providers.failure import FailureCode, ProviderFailure

# The providers package imports openai only when a provider is created, so this check is enough.
pytest.importorskip("openai", reason="the openai extra is not installed: pip install 'codeagent-lite[openai]'")


KEY_ENV = "CODEAGENT_LITE_TEST_KEY"
FAKE_KEY = "sk-test-DO-NOT-LEAK-0123456789abcdef"
TOOLS = (
    ToolSpec(
        name="read_file",
        description="Read a text file in the workspace.",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
)
TASK = [ProviderMessage("user", "Read the file README.md.")]

VALID_COMPLETION: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "fake",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": '{"type":"final_answer","content":"done"}'},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129},
}


# --------------------------------------------------------------------------- tiny real servers


@dataclass
class FakeChatServer:
    """A real HTTP server on 127.0.0.1 that answers every POST with a fixed status and body."""

    status: int = 200
    body: str = json.dumps(VALID_COMPLETION)
    requests: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)
    echo_authorization: bool = False
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


@pytest.fixture
def fake_server() -> Iterator[FakeChatServer]:
    state = FakeChatServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            state.requests.append(json.loads(self.rfile.read(length)))
            authorization = self.headers.get("Authorization", "")
            state.authorizations.append(authorization)
            body = state.body
            if state.echo_authorization:
                # Some servers quote the key they refused; the provider must not pass it on.
                body = json.dumps({"error": {"message": f"Incorrect API key provided: {authorization}"}})
            payload = body.encode()
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    with serving(server):
        yield state


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections, reads the request and never answers, until the test ends."""
    release = threading.Event()

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            release.wait(timeout=30)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with serving(server):
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/v1"
        finally:
            release.set()  # before the shutdown: the handlers still waiting end first


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    return KEY_ENV


def provider_for(base_url: str, key_env: str | None, **options: Any) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(base_url, "fake-model", api_key_env=key_env, **options)


def complete(provider: OpenAICompatibleProvider, max_output_tokens: int = 64) -> Any:
    return provider.complete(messages=TASK, tools=TOOLS, max_output_tokens=max_output_tokens)


# --------------------------------------------------------------------------- request and response


def test_request_carries_system_prompt_history_and_options(fake_server: FakeChatServer, key_env: str) -> None:
    provider = provider_for(fake_server.base_url, key_env, temperature=0.0, seed=7)
    complete(provider, max_output_tokens=33)
    (request,) = fake_server.requests
    assert request["model"] == "fake-model"
    assert request["messages"] == [
        {"role": "system", "content": render_system_prompt(TOOLS)},
        {"role": "user", "content": "Read the file README.md."},
    ]
    assert request["max_tokens"] == 33
    assert request["temperature"] == 0.0
    assert request["seed"] == 7
    assert "response_format" not in request
    assert fake_server.authorizations == [f"Bearer {FAKE_KEY}"]


def test_json_mode_asks_for_a_json_object(fake_server: FakeChatServer) -> None:
    complete(provider_for(fake_server.base_url, None, json_mode=True))
    complete(provider_for(fake_server.base_url, None, json_mode=True, send_action_schema=True))
    assert fake_server.requests[0]["response_format"] == {"type": "json_object"}
    assert fake_server.requests[1]["response_format"] == {"type": "json_object", "schema": action_json_schema()}


def test_openai_preset_uses_max_completion_tokens(fake_server: FakeChatServer, key_env: str) -> None:
    provider = OpenAICompatibleProvider(
        fake_server.base_url, "fake-model", key_env, max_tokens_field="max_completion_tokens"
    )
    complete(provider, max_output_tokens=21)
    assert fake_server.requests[0]["max_completion_tokens"] == 21
    assert "max_tokens" not in fake_server.requests[0]


def test_response_maps_text_usage_and_finish_reason(fake_server: FakeChatServer, key_env: str) -> None:
    response = complete(provider_for(fake_server.base_url, key_env))
    assert response.text == '{"type":"final_answer","content":"done"}'
    assert (response.input_tokens, response.output_tokens) == (120, 9)
    assert response.finish_reason == "stop"


def test_no_key_needed_sends_the_placeholder(fake_server: FakeChatServer) -> None:
    complete(provider_for(fake_server.base_url, None))
    assert fake_server.authorizations == [f"Bearer {PLACEHOLDER_API_KEY}"]


def test_missing_key_variable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ProviderError, match=f"environment variable {KEY_ENV} is not set"):
        provider_for("http://127.0.0.1:9/v1", KEY_ENV)


def test_key_is_not_in_repr_str_or_attributes(key_env: str) -> None:
    provider = provider_for("http://127.0.0.1:9/v1", key_env)
    assert FAKE_KEY not in repr(provider)
    assert FAKE_KEY not in str(provider)
    assert all(FAKE_KEY not in repr(value) for name, value in vars(provider).items() if name != "_client")


@pytest.mark.parametrize("base_url", ["localhost:8080", "http://", "ftp://example.com/v1", "http://256.1.1.1/v1"])
def test_unusable_base_url_is_refused_up_front(base_url: str) -> None:
    with pytest.raises(ValueError, match="base_url"):
        provider_for(base_url, None)


def test_ollama_and_openai_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    ollama = OpenAICompatibleProvider.ollama("qwen2.5-coder")
    assert (ollama.base_url, ollama.model, ollama.api_key_env) == ("http://localhost:11434/v1", "qwen2.5-coder", None)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    openai_provider = OpenAICompatibleProvider.openai()
    assert (openai_provider.base_url, openai_provider.api_key_env) == ("https://api.openai.com/v1", "OPENAI_API_KEY")
    assert openai_provider.max_tokens_field == "max_completion_tokens"


def test_deepseek_preset_reads_its_own_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", FAKE_KEY)
    provider = OpenAICompatibleProvider.deepseek()
    assert (provider.base_url, provider.model, provider.api_key_env) == (
        "https://api.deepseek.com",
        "deepseek-chat",
        "DEEPSEEK_API_KEY",
    )
    monkeypatch.delenv("DEEPSEEK_API_KEY")
    with pytest.raises(ProviderError, match="DEEPSEEK_API_KEY"):
        OpenAICompatibleProvider.deepseek()


# --------------------------------------------------------------------------- failures on real sockets


def test_server_down_is_a_connection_error(key_env: str) -> None:
    provider = provider_for(f"http://127.0.0.1:{unused_port()}/v1", key_env, timeout=5.0)
    with pytest.raises(ProviderError, match=r"connection to http://127\.0\.0\.1:\d+/v1 failed") as caught:
        complete(provider)
    assert FAKE_KEY not in str(caught.value)


def test_silent_server_is_a_timeout(silent_server: str, key_env: str) -> None:
    provider = provider_for(silent_server, key_env, timeout=0.5)
    with pytest.raises(ProviderError, match=r"timed out: no answer within 0\.5 s") as caught:
        complete(provider)
    assert FAKE_KEY not in str(caught.value)


def test_http_500_reports_the_status(fake_server: FakeChatServer, key_env: str) -> None:
    fake_server.status = 500
    fake_server.body = json.dumps({"detail": "Input should be 'text' or 'json_object'"})
    with pytest.raises(ProviderError, match=r"server answered HTTP 500: .*Input should be 'text' or 'json_object'"):
        complete(provider_for(fake_server.base_url, key_env))
    assert len(fake_server.requests) == 1  # retries are off


def test_http_error_never_repeats_the_key(fake_server: FakeChatServer, key_env: str) -> None:
    fake_server.status = 401
    fake_server.echo_authorization = True
    with pytest.raises(ProviderError, match="server answered HTTP 401") as caught:
        complete(provider_for(fake_server.base_url, key_env))
    assert FAKE_KEY not in str(caught.value)
    assert "Incorrect API key provided: Bearer ***" in str(caught.value)


@pytest.mark.parametrize(
    ("body", "code", "params"),
    [
        ("<html>gateway error</html>", FailureCode.NOT_JSON, {"excerpt": "<html>gateway error</html>"}),
        ("", FailureCode.NOT_JSON, {"excerpt": "''"}),
        (json.dumps({"object": "chat.completion"}), FailureCode.BAD_FIELD, {"where": "choices", "check": "missing"}),
        (json.dumps({**VALID_COMPLETION, "choices": []}), FailureCode.NO_CHOICES, {}),
        (json.dumps([1, 2]), FailureCode.BAD_FIELD, {"where": "$", "check": "model_type"}),
        (
            json.dumps({**VALID_COMPLETION, "choices": [{"message": {"content": None}, "finish_reason": "stop"}]}),
            FailureCode.NO_TEXT,
            {"finish_reason": "'stop'"},
        ),
        (
            json.dumps({**VALID_COMPLETION, "usage": {"prompt_tokens": "12", "completion_tokens": 3}}),
            FailureCode.BAD_FIELD,
            {"where": "usage.prompt_tokens", "check": "int_type"},
        ),
        (json.dumps({"choices": VALID_COMPLETION["choices"]}), FailureCode.NO_USAGE, {}),
    ],
    ids=["html", "empty", "no-choices", "empty-choices", "array", "null-content", "string-usage", "no-usage"],
)
def test_malformed_responses(
    fake_server: FakeChatServer, key_env: str, body: str, code: FailureCode, params: dict[str, str]
) -> None:
    fake_server.body = body
    with pytest.raises(ProviderFailure) as caught:
        complete(provider_for(fake_server.base_url, key_env))
    assert (caught.value.code, dict(caught.value.params)) == (code, params)
    assert str(caught.value).startswith(("malformed response: ", "server reported no token usage"))


SPENT = {"prompt_tokens": 1200, "completion_tokens": 256}
NO_TEXT_CHOICE = {"message": {"role": "assistant", "content": None}, "finish_reason": "length"}


@pytest.mark.parametrize(
    "body",
    [
        {**VALID_COMPLETION, "choices": [NO_TEXT_CHOICE], "usage": SPENT},  # a reasoning model spent its budget
        {**VALID_COMPLETION, "choices": [], "usage": SPENT},
        {**VALID_COMPLETION, "choices": [{**NO_TEXT_CHOICE, "finish_reason": 3}], "usage": SPENT},
    ],
    ids=["null-content", "empty-choices", "bad-finish-reason"],
)
def test_a_refused_reply_keeps_the_tokens_the_server_counted(
    fake_server: FakeChatServer, key_env: str, body: dict[str, Any]
) -> None:
    fake_server.body = json.dumps(body)
    adapter = JsonTextModelAdapter(provider_for(fake_server.base_url, key_env))
    transcript = run_agent(adapter, (), "Read the file README.md.")
    assert transcript.stop_reason is StopReason.PROVIDER_ERROR
    assert transcript.steps[-1].usage == transcript.usage == TokenUsage(1200, 256)


def test_a_refused_reply_with_no_valid_counts_has_no_usage(fake_server: FakeChatServer, key_env: str) -> None:
    fake_server.body = json.dumps({**VALID_COMPLETION, "choices": [], "usage": {**SPENT, "prompt_tokens": -1}})
    with pytest.raises(ProviderFailure) as caught:
        complete(provider_for(fake_server.base_url, key_env))
    assert (caught.value.input_tokens, caught.value.output_tokens) == (None, None)


def test_adapter_turns_provider_errors_into_model_provider_errors(fake_server: FakeChatServer) -> None:
    fake_server.status = 503
    adapter = JsonTextModelAdapter(provider_for(fake_server.base_url, None))
    with pytest.raises(ModelProviderError, match="provider request failed: server answered HTTP 503"):
        adapter.complete([Message(MessageRole.USER, "hi")], TOOLS, ModelCallBudget(max_output_tokens=16))


# --------------------------------------------------------------------------- the real llama.cpp server


@pytest.fixture(scope="module")
def gemma_server_url() -> Iterator[str]:
    with llama_server() as server:
        yield server.base_url
    assert server.process.returncode is not None


@requires_local_model
@pytest.mark.local_model
def test_real_server_full_round_trip(gemma_server_url: str) -> None:
    provider = provider_for(gemma_server_url, None)
    response = complete(provider, max_output_tokens=12)
    # The system prompt alone is several hundred tokens; the counts come from the server.
    assert response.input_tokens > 300
    assert 1 <= response.output_tokens <= 12
    assert response.finish_reason in ("stop", "length")
    assert isinstance(response.text, str)

    adapter = JsonTextModelAdapter(provider)
    try:
        outcome: ModelResponse | InvalidModelOutputError = adapter.complete(
            [Message(MessageRole.USER, "Read the file README.md.")], TOOLS, ModelCallBudget(max_output_tokens=12)
        )
    except InvalidModelOutputError as error:
        outcome = error
    if isinstance(outcome, InvalidModelOutputError):
        assert outcome.layer is not None
        assert outcome.usage is not None and outcome.usage.input_tokens > 300
    else:
        assert outcome.usage.input_tokens > 300


@requires_local_model
@pytest.mark.local_model
def test_real_server_cut_off_reply_is_a_layer_1_rejection(gemma_server_url: str) -> None:
    # With the schema grammar the reply must start '{"type":', so 4 tokens always cut it off.
    provider = provider_for(gemma_server_url, None, json_mode=True, send_action_schema=True)
    response = complete(provider, max_output_tokens=4)
    assert response.finish_reason == "length"
    assert response.output_tokens == 4

    adapter = JsonTextModelAdapter(provider)
    with pytest.raises(InvalidModelOutputError) as caught:
        adapter.complete(
            [Message(MessageRole.USER, "Read the file README.md.")], TOOLS, ModelCallBudget(max_output_tokens=4)
        )
    assert caught.value.layer is ValidationLayer.JSON_SYNTAX
    assert "cut off" in str(caught.value)
    assert caught.value.usage is not None and caught.value.usage.output_tokens == 4


@requires_local_model
@pytest.mark.local_model
def test_real_server_json_mode_starts_a_json_object(gemma_server_url: str) -> None:
    response = complete(provider_for(gemma_server_url, None, json_mode=True), max_output_tokens=8)
    assert response.text.lstrip().startswith("{")
