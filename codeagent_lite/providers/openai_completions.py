"""The same OpenAI-compatible provider, asking ``/completions`` instead of ``/chat/completions``.

A *base* model such as Gemma 3 270M has no chat template and ignores instructions: through
chat it gave 0 of 8 protocol replies, through plain completion of a prompt of worked
examples about 7 of 8. So the local model is asked the old way: here is the start of a
document (``prompting.render_completion_prompt``), write the rest. Three more things make
that work, all measured on this model:

* a grammar (GBNF) or a JSON Schema that constrains decoding, sent as llama.cpp's own
  request fields ``grammar`` / ``json_schema`` (``extra_body`` of the official client);
* ``repeat_penalty`` 1.0: llama-cpp-python's server defaults to 1.1, which penalises the
  braces and quotes JSON repeats and gives other text than the in-process default;
* a stop at the first newline, since one reply is one line in the examples.

Everything else is ``OpenAICompatibleProvider``'s: the official ``openai`` client, the
bounded transport, one deadline for the whole call, secrets redacted from every message.
Only the request and the shape of the answer differ, so this is a subclass of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..json_text_messages import ProviderMessage
from ..kernel_types import ToolSpec
from .openai_compatible import Completion, OpenAICompatibleProvider, TextChoice, check_number

__all__ = ["CompletionSettings", "OpenAICompletionsProvider", "PromptRenderer"]

PromptRenderer = Callable[[Sequence[ProviderMessage], Sequence[ToolSpec]], str]
"""Turns the conversation and the tools into the text the model continues."""


@dataclass(frozen=True, slots=True)
class CompletionSettings:
    """Sampling and constraint of a completion request.

    ``temperature`` 0 is greedy decoding: the same prompt gives the same reply on the same
    build. Give at most one of ``grammar`` (GBNF text) and ``json_schema``; the server turns
    a schema into a grammar itself.
    """

    temperature: float = 0.0
    repeat_penalty: float = 1.0
    stop: tuple[str, ...] = ("\n",)
    seed: int | None = 0
    grammar: str | None = None
    json_schema: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        for name in ("temperature", "repeat_penalty"):
            check_number(name, getattr(self, name))
        if self.grammar is not None and self.json_schema is not None:
            raise ValueError("give a grammar or a JSON schema, not both")
        if not all(isinstance(item, str) and item for item in self.stop) or len(self.stop) > 4:
            raise ValueError(f"stop must be at most 4 non-empty strings, found {self.stop!r}")

    def extra_body(self) -> dict[str, Any]:
        """llama.cpp's request fields that the OpenAI API does not have."""
        body: dict[str, Any] = {"repeat_penalty": self.repeat_penalty}
        if self.grammar is not None:
            body["grammar"] = self.grammar
        if self.json_schema is not None:
            body["json_schema"] = dict(self.json_schema)
        return body


class OpenAICompletionsProvider(OpenAICompatibleProvider):
    """Sends a rendered prompt to an OpenAI-compatible ``/completions`` endpoint.

    ``render_prompt`` builds the text (for the local base model:
    ``prompting.render_completion_prompt`` with its worked examples); ``settings`` holds
    sampling and the grammar or schema. ``api_key_env`` defaults to None: the servers that
    still serve ``/completions`` for base models are local ones.
    """

    answer = Completion[TextChoice]

    def __init__(
        self,
        base_url: str,
        model: str,
        render_prompt: PromptRenderer,
        settings: CompletionSettings | None = None,
        *,
        api_key_env: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        chosen = CompletionSettings() if settings is None else settings
        super().__init__(base_url, model, api_key_env, timeout, temperature=chosen.temperature, seed=chosen.seed)
        self.render_prompt = render_prompt
        self.settings = chosen

    def __repr__(self) -> str:
        constraint = "grammar" if self.settings.grammar else "json_schema" if self.settings.json_schema else "none"
        return f"{type(self).__name__}(base_url={self.shown_url!r}, model={self.model!r}, constraint={constraint!r})"

    def build_prompt(self, messages: Sequence[ProviderMessage], tools: Sequence[ToolSpec]) -> str:
        """The exact text the model continues."""
        return self.render_prompt(messages, tools)

    def build_request(
        self, messages: Sequence[ProviderMessage], tools: Sequence[ToolSpec], max_output_tokens: int
    ) -> dict[str, Any]:
        """The keyword arguments of ``client.completions.create``, exactly as sent."""
        request: dict[str, Any] = {
            "model": self.model,
            "prompt": self.build_prompt(messages, tools),
            "max_tokens": max_output_tokens,
            "temperature": self.settings.temperature,
            "stop": list(self.settings.stop),
            "extra_body": self.settings.extra_body(),
        }
        if self.settings.seed is not None:
            request["seed"] = self.settings.seed
        return request

    def _raw_create(self, request: dict[str, Any]) -> Any:
        return self._client.completions.with_raw_response.create(**request)
