"""Gemma 3 270M through its engine process, and the server helpers, with the real model.

The model runs in a process of its own (``local_server``); these tests ask it over HTTP
exactly as the notebook and the CLI do. The same behaviour with a fake engine, crashes
included, is in test_local_server.py.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from local_model import requires_local_model, shared_server

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
    TextProvider,
    ToolSpec,
    ValidationLayer,
)
from codeagent_lite.providers import (
    GemmaProvider,
    default_model_path,
    llama_server,
    render_completion_prompt,
)
from codeagent_lite.providers.local_llama import MODEL_FILENAME
from codeagent_lite.providers.local_server import EngineStartError

TOOLS = (
    ToolSpec(
        name="read_file",
        description="Read a text file in the workspace.",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    ToolSpec(
        name="list_files",
        description="List the files in a workspace folder.",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
    ),
)
HISTORY = [Message(MessageRole.USER, "Show me the file main.py.")]
# The same task everywhere: llama.cpp reuses the evaluated prompt prefix, which keeps these tests quick.
TASK = [ProviderMessage("user", HISTORY[0].content)]
BUDGET = ModelCallBudget(max_output_tokens=64)

local_model = pytest.mark.local_model


def run_adapter(provider: TextProvider) -> ModelResponse | InvalidModelOutputError:
    """Either outcome is legitimate for a 270M base model; any other exception is a bug."""
    try:
        return JsonTextModelAdapter(provider).complete(HISTORY, TOOLS, BUDGET)
    except InvalidModelOutputError as error:
        return error


def assert_usage_counted(outcome: ModelResponse | InvalidModelOutputError, min_input_tokens: int = 300) -> None:
    usage = outcome.usage
    assert usage is not None
    # The worked-example prompt is about 450 tokens (130 without examples); a reply is at least one.
    assert usage.input_tokens > min_input_tokens
    assert 1 <= usage.output_tokens <= BUDGET.max_output_tokens


# --------------------------------------------------------------------------- no model needed


def test_default_model_path_is_in_the_user_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_model_path() == tmp_path / "codeagent-lite" / MODEL_FILENAME
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # not absolute: ignored, as the XDG spec says
    assert default_model_path() == Path.home() / ".cache" / "codeagent-lite" / MODEL_FILENAME
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_model_path() == Path.home() / ".cache" / "codeagent-lite" / MODEL_FILENAME


def test_unknown_mode_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="mode must be one of free_text, schema, got 'json'"):
        GemmaProvider("http://127.0.0.1:9/v1", "json")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the real model


@requires_local_model
@local_model
def test_starting_the_engine_prints_nothing_here(capsys: pytest.CaptureFixture[str]) -> None:
    # A notebook shows whatever lands on stdout/stderr under the cell; the engine's notes go to its log.
    server = shared_server()
    assert capsys.readouterr() == ("", "")
    assert server.process is not None and server.process.poll() is None
    assert default_model_path().is_file()


@requires_local_model
@local_model
def test_free_text_reply_goes_through_the_adapter() -> None:
    outcome = run_adapter(shared_server().provider("free_text"))
    assert isinstance(outcome, (ModelResponse, InvalidModelOutputError))
    assert_usage_counted(outcome)
    if isinstance(outcome, InvalidModelOutputError):
        assert outcome.layer is not None and outcome.raw_text is not None


@requires_local_model
@local_model
def test_free_text_is_deterministic_at_temperature_zero() -> None:
    provider = shared_server().provider("free_text")
    first = provider.complete(messages=TASK, tools=TOOLS, max_output_tokens=48)
    second = provider.complete(messages=TASK, tools=TOOLS, max_output_tokens=48)
    assert first.text.strip()
    assert "\n" not in first.text  # generation stops at the end of the reply line
    assert first == second


@requires_local_model
@local_model
def test_cut_off_reply_reports_length() -> None:
    provider = shared_server().provider("free_text")
    response = provider.complete(messages=TASK, tools=TOOLS, max_output_tokens=3)
    assert response.finish_reason == "length"
    assert response.output_tokens == 3


@requires_local_model
@local_model
def test_schema_mode_gives_an_action_shape_even_without_examples() -> None:
    # Without worked examples this base model answers prose or nothing in free text (measured:
    # '' and ' 2 + 2 = 4'); only the grammar built from action_json_schema() can make it JSON.
    provider = shared_server().provider("schema", examples=())
    assert provider.mode == "schema"
    outcome = run_adapter(provider)
    assert_usage_counted(outcome, min_input_tokens=100)
    if isinstance(outcome, InvalidModelOutputError):
        # Layers 1-3 cannot refuse a finished grammar-constrained reply; layer 4 still can (blank strings).
        assert outcome.layer is ValidationLayer.FIELDS, outcome
        assert outcome.raw_text is not None
        assert json.loads(outcome.raw_text)["type"] in ("tool_call", "final_answer")


@requires_local_model
@local_model
def test_history_longer_than_the_context_is_a_provider_error() -> None:
    provider = shared_server().provider("free_text")
    huge = [ProviderMessage("user", "word " * 3000)]
    assert len(render_completion_prompt(huge, TOOLS)) > 15000
    with pytest.raises(ProviderError, match=r"server answered HTTP 400: .*maximum context length is 2048 tokens"):
        provider.complete(messages=huge, tools=TOOLS, max_output_tokens=16)
    adapter = JsonTextModelAdapter(provider)
    with pytest.raises(ModelProviderError, match="maximum context length"):
        adapter.complete([Message(MessageRole.USER, "word " * 3000)], TOOLS, BUDGET)


# --------------------------------------------------------------------------- the server helper


@requires_local_model
@local_model
def test_server_that_cannot_start_reports_its_log() -> None:
    with (
        pytest.raises(EngineStartError, match=r"exited with code \d+, before it was ready(.|\n)*n_ctx"),
        llama_server(extra_args=["--n_ctx", "not-a-number"], startup_timeout=60),
    ):
        pytest.fail("the with block must not run when the server did not start")


@requires_local_model
@local_model
def test_server_stops_and_frees_its_port(tmp_path: Path) -> None:
    log_path = tmp_path / "server.log"
    with llama_server(log_path=log_path) as server:
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        assert server.process is not None and server.process.poll() is None
    assert server.process.returncode is not None
    assert log_path.read_text(encoding="utf-8").strip()  # the log is kept where we asked
    with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
        probe.connect(("127.0.0.1", server.port))
