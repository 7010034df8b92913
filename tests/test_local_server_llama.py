"""The package's completions provider against the real llama.cpp ``llama-server``, where it is built.

The class's model server runs llama-server when ``make local-server`` built it; the provider
was written against llama-cpp-python's server. These tests check that llama-server honours
every request field the provider sends (``grammar``, ``json_schema``, ``repeat_penalty``,
``stop``, ``max_tokens``), and that requests beyond its slots wait their turn without failing
while a health check still gets through. Without a build they skip and say how to get one.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest
from local_model import MISSING_LOCAL_MODEL

from codeagent_lite import Message, MessageRole, build_provider_messages
from codeagent_lite.json_action_parser import parse_json_action
from codeagent_lite.json_text_adapter import ProviderResponse
from codeagent_lite.json_text_messages import ProviderMessage
from codeagent_lite.kernel_types import ToolSpec
from codeagent_lite.providers.llama_cpp_engine import MODEL_ALIAS
from codeagent_lite.providers.llama_server_build import llama_server_build
from codeagent_lite.providers.local_server import GemmaProvider, LocalModelServer, is_ready, start_local_server
from codeagent_lite.providers.openai_completions import CompletionSettings, OpenAICompletionsProvider

BUILD = llama_server_build()
SLOTS = 2
CLIENTS = 6

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(not BUILD.ready, reason=f"llama-server is {BUILD.state.value}; these tests need it"),
    pytest.mark.skipif(bool(MISSING_LOCAL_MODEL), reason=f"no model file ({', '.join(MISSING_LOCAL_MODEL)})"),
]

TOOLS = [ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})]
MESSAGES = build_provider_messages([Message(MessageRole.USER, "Read notes.txt.")])


@pytest.fixture(scope="module")
def server() -> Iterator[LocalModelServer]:
    started = start_local_server(backend="llama-server", parallel=SLOTS, threads=2)
    try:
        yield started
    finally:
        started.stop()


def ask(server: LocalModelServer, prompt: str, settings: CompletionSettings, tokens: int = 16) -> ProviderResponse:
    def render(_messages: Sequence[ProviderMessage], _tools: Sequence[ToolSpec]) -> str:
        return prompt

    provider = OpenAICompletionsProvider(server.base_url, MODEL_ALIAS, render, settings, timeout=120)
    return provider.complete(messages=MESSAGES, tools=TOOLS, max_output_tokens=tokens)


def test_a_grammar_decides_the_text_and_a_stop_string_ends_it(server: LocalModelServer) -> None:
    grammar = 'root ::= "ab" "cd" "ef"'
    forced = ask(server, "Q: name a fruit.\nA:", CompletionSettings(grammar=grammar))
    assert (forced.text, forced.finish_reason) == ("abcdef", "stop")
    stopped = ask(server, "Q: name a fruit.\nA:", CompletionSettings(grammar=grammar, stop=("cd",)))
    assert (stopped.text, stopped.finish_reason) == ("ab", "stop")


def test_a_json_schema_constrains_the_reply(server: LocalModelServer) -> None:
    schema = {
        "type": "object",
        "properties": {"word": {"enum": ["zebra"]}},
        "required": ["word"],
        "additionalProperties": False,
    }
    # No stop at a newline here: the grammar a schema becomes allows one between the braces.
    settings = CompletionSettings(json_schema=schema, stop=("\u0007",))
    reply = ask(server, "Q: name a fruit.\nA:", settings, tokens=24)
    assert json.loads(reply.text) == {"word": "zebra"}


def test_schema_mode_gives_an_action_the_parser_accepts(server: LocalModelServer) -> None:
    reply = GemmaProvider(server.base_url, "schema").complete(messages=MESSAGES, tools=TOOLS, max_output_tokens=96)
    assert reply.input_tokens > 500 and reply.output_tokens > 0
    parse_json_action(reply.text)  # raises when the constrained reply is not a protocol action


def test_repeat_penalty_is_applied_not_ignored(server: LocalModelServer) -> None:
    prompt = " ".join(["red"] * 12)
    plain = ask(server, prompt, CompletionSettings(repeat_penalty=1.0), tokens=8)
    penalised = ask(server, prompt, CompletionSettings(repeat_penalty=1.8), tokens=8)
    assert plain.text.split()[:3] == ["red", "red", "red"]
    assert penalised.text != plain.text


def test_max_tokens_and_usage_come_back(server: LocalModelServer) -> None:
    reply = ask(server, "Once upon a time", CompletionSettings(stop=("\u0007",)), tokens=5)
    assert (reply.output_tokens, reply.finish_reason) == (5, "length")
    assert reply.input_tokens >= 4


def test_requests_beyond_the_slots_wait_their_turn_while_a_health_check_gets_through(
    server: LocalModelServer,
) -> None:
    settings = CompletionSettings(grammar='root ::= "x"{24}', stop=("\u0007",))
    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        replies = [pool.submit(ask, server, f"Student {n} asks:", settings, 24) for n in range(CLIENTS)]
        time.sleep(0.5)  # every slot busy, the rest queued inside llama-server
        started = time.monotonic()
        assert is_ready(server.base_url, timeout=5.0)
        health_s = time.monotonic() - started
        texts = [future.result(timeout=300).text for future in replies]
    assert texts == ["x" * 24] * CLIENTS
    assert health_s < 2.0, f"GET /models waited {health_s:.1f} s behind the completions"
    with urllib.request.urlopen(server.base_url.removesuffix("/v1") + "/props", timeout=5) as response:
        assert json.loads(response.read())["total_slots"] == SLOTS


def test_no_one_reads_what_the_other_slots_are_decoding(server: LocalModelServer) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(server.base_url.removesuffix("/v1") + "/slots", timeout=5)
    assert refused.value.code in (404, 501)
