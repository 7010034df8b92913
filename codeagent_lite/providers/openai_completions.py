"""The OpenAI-compatible provider asking ``/completions`` instead of ``/chat/completions``.

A *base* model such as Gemma 3 270M has no chat template and ignores instructions: through chat it gave 0 of 8
protocol replies, through completion of a prompt of worked examples about 7 of 8. Measured on this model too: a
grammar or JSON Schema constraining decoding (llama.cpp's own request fields, sent as ``extra_body``),
``repeat_penalty`` 1.0 (the server's 1.1 penalises the braces and quotes JSON repeats), and a stop at the first
newline, as one reply is one line in the examples. The rest (client, bounded transport, deadline, redaction) is
``OpenAICompatibleProvider``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..json_text_messages import ProviderMessage
from ..kernel_types import ToolSpec
from .openai_compatible import Completion, OpenAICompatibleProvider, TextChoice, check_number

__all__ = ["CompletionSettings", "OpenAICompletionsProvider", "PromptRenderer"]

PromptRenderer = Callable[[Sequence[ProviderMessage], Sequence[ToolSpec]], str]  # the text the model continues


@dataclass(frozen=True, slots=True)
class CompletionSettings:
    """Sampling and constraint of a completion request: ``temperature`` 0 is greedy, the same reply on the same
    build; at most one of ``grammar`` (GBNF) and ``json_schema`` (the server makes it a grammar)."""

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
        body: dict[str, Any] = {"repeat_penalty": self.repeat_penalty, "grammar": self.grammar}
        body["json_schema"] = None if self.json_schema is None else dict(self.json_schema)
        return {name: value for name, value in body.items() if value is not None}


class OpenAICompletionsProvider(OpenAICompatibleProvider):
    """Sends the text ``render_prompt`` makes (``prompting.render_completion_prompt``) to ``/completions``;
    ``api_key_env`` defaults to None, as the servers still serving base models there are local ones."""

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

    def build_request(
        self, messages: Sequence[ProviderMessage], tools: Sequence[ToolSpec], max_output_tokens: int
    ) -> dict[str, Any]:
        """The keyword arguments of ``client.completions.create``, exactly as sent."""
        chosen = self.settings
        request = {"model": self.model, "prompt": self.render_prompt(messages, tools), "max_tokens": max_output_tokens}
        request |= {"temperature": chosen.temperature, "stop": list(chosen.stop), "extra_body": chosen.extra_body()}
        return request if chosen.seed is None else request | {"seed": chosen.seed}

    def _raw_create(self, request: dict[str, Any]) -> Any:
        return self._client.completions.with_raw_response.create(**request)
