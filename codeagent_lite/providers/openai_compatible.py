"""A ``TextProvider`` for any server that speaks OpenAI's chat completions API.

One class serves OpenAI, DeepSeek, Ollama, vLLM and llama.cpp's server: they differ
only in ``base_url``, model name and where the API key comes from. The official
``openai`` client does the transport; this module adds what a JSON-text model needs
around it: the system prompt with the tools and the two action shapes, honest token
usage, the finish reason, and one error type (``ProviderError``) whose message says
what went wrong (connection, timeout, HTTP status or malformed answer) and never
contains the API key.

``openai`` is imported only when a provider is created, so the core package works
without it (install the ``openai`` extra).
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, NonNegativeInt, ValidationError

from ..json_action_parser import action_json_schema
from ..json_text_adapter import ProviderError, ProviderResponse
from ..json_text_messages import ProviderMessage
from ..kernel_types import ToolSpec
from .prompting import render_system_prompt

if TYPE_CHECKING:
    import openai

__all__ = ["PLACEHOLDER_API_KEY", "OpenAICompatibleProvider"]

PLACEHOLDER_API_KEY = "no-key-needed"
"""Sent when ``api_key_env`` is None: local servers (Ollama, llama.cpp, vLLM) accept any key,
but the client refuses to send a request without one."""

_EXCERPT_CHARS = 300


# The part of a chat completion this provider relies on. Checked field by field so a
# malformed answer becomes a ProviderError that names the missing piece, instead of an
# AttributeError deep inside the adapter. Extra fields are ignored: servers add their own.
class _Usage(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    prompt_tokens: NonNegativeInt
    completion_tokens: NonNegativeInt


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    content: str | None = None


class _Choice(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    message: _Message
    finish_reason: str | None = None


class _Completion(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    choices: list[_Choice]
    usage: _Usage | None = None


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as error:
        raise ProviderError(
            "the 'openai' package is not installed; install it with: pip install 'codeagent-lite[openai]'"
        ) from error
    return openai


class OpenAICompatibleProvider:
    """Sends provider messages to an OpenAI-compatible ``/chat/completions`` endpoint.

    ``api_key_env`` names the environment variable that holds the key; the key is read
    once, handed to the client and never kept in an attribute of this object. Pass
    ``api_key_env=None`` for a local server that needs no key.

    ``json_mode`` asks the server for ``response_format={"type": "json_object"}``;
    ``json_schema`` additionally sends the action schema inside it, an extension that
    llama.cpp's server uses for grammar-constrained decoding (OpenAI rejects it).
    ``max_tokens_field`` is ``"max_tokens"`` for most servers; OpenAI's newer models
    want ``"max_completion_tokens"``. ``temperature=None`` leaves it to the server.

    The client's automatic retries are off: a retry would hide a failure from the
    learner and spend tokens twice.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        temperature: float | None = 0.0,
        json_mode: bool = False,
        *,
        json_schema: bool = False,
        max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens",
        seed: int | None = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"base_url must be an http:// or https:// address with a host, got {base_url!r}")
        if not model.strip():
            raise ValueError("model must not be blank")
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        if json_schema and not json_mode:
            raise ValueError("json_schema=True only makes sense with json_mode=True")
        self.base_url = base_url
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.temperature = temperature
        self.json_mode = json_mode
        self.json_schema = json_schema
        self.max_tokens_field = max_tokens_field
        self.seed = seed

        if api_key_env is None:
            key = PLACEHOLDER_API_KEY
        else:
            key = os.environ.get(api_key_env, "")
            if not key.strip():
                raise ProviderError(
                    f"environment variable {api_key_env} is not set; put the API key there "
                    "(or pass api_key_env=None for a local server that needs no key)"
                )
        # The client keeps the only copy (it must send it as a header); nothing here stores it.
        openai_module = _import_openai()
        try:
            self._client: openai.OpenAI = openai_module.OpenAI(
                api_key=key, base_url=base_url, timeout=timeout, max_retries=0
            )
        except Exception as error:
            # The HTTP library's InvalidURL (e.g. host 256.1.1.1) is not a ValueError; say what it is about.
            raise ValueError(f"invalid base_url {base_url!r}: {error}") from error

    # ------------------------------------------------------------------ presets

    @classmethod
    def openai(cls, model: str = "gpt-4o-mini", **options: Any) -> OpenAICompatibleProvider:
        """OpenAI's own API; the key comes from OPENAI_API_KEY."""
        options.setdefault("max_tokens_field", "max_completion_tokens")
        return cls("https://api.openai.com/v1", model, "OPENAI_API_KEY", **options)

    @classmethod
    def deepseek(cls, model: str = "deepseek-chat", **options: Any) -> OpenAICompatibleProvider:
        """DeepSeek, the model the blog series uses; the key comes from DEEPSEEK_API_KEY."""
        return cls("https://api.deepseek.com", model, "DEEPSEEK_API_KEY", **options)

    @classmethod
    def ollama(
        cls, model: str, base_url: str = "http://localhost:11434/v1", **options: Any
    ) -> OpenAICompatibleProvider:
        """A local Ollama server, which needs no key."""
        return cls(base_url, model, None, **options)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r}, "
            f"api_key_env={self.api_key_env!r}, json_mode={self.json_mode!r})"
        )

    # ------------------------------------------------------------------ the call

    def build_chat_messages(
        self, messages: Sequence[ProviderMessage], tools: Sequence[ToolSpec]
    ) -> list[dict[str, str]]:
        """The exact chat messages sent: the rendered system prompt, then the history in order."""
        return [
            {"role": "system", "content": render_system_prompt(tools)},
            *({"role": message.role, "content": message.content} for message in messages),
        ]

    def complete(
        self,
        *,
        messages: Sequence[ProviderMessage],
        tools: Sequence[ToolSpec],
        max_output_tokens: int,
    ) -> ProviderResponse:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": self.build_chat_messages(messages, tools),
            self.max_tokens_field: max_output_tokens,
        }
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.seed is not None:
            request["seed"] = self.seed
        if self.json_mode:
            response_format: dict[str, Any] = {"type": "json_object"}
            if self.json_schema:
                response_format["schema"] = action_json_schema()
            request["response_format"] = response_format

        body_text = self._send(request)
        return self._read_completion(body_text)

    def _send(self, request: dict[str, Any]) -> str:
        openai_module = _import_openai()
        try:
            raw = self._client.chat.completions.with_raw_response.create(**request)
            return raw.http_response.text
        # APITimeoutError is a subclass of APIConnectionError, so it must come first.
        except openai_module.APITimeoutError as error:
            raise ProviderError(f"request to {self.base_url} timed out: no answer within {self.timeout} s") from error
        except openai_module.APIConnectionError as error:
            cause = error.__cause__ if error.__cause__ is not None else error
            raise ProviderError(
                f"connection to {self.base_url} failed: {self._scrub(str(cause) or type(cause).__name__)}"
            ) from error
        except openai_module.APIStatusError as error:
            raise ProviderError(
                f"server answered HTTP {error.status_code}: {self._scrub(error.response.text)}"
            ) from error
        except openai_module.APIError as error:
            raise ProviderError(f"request to {self.base_url} failed: {self._scrub(str(error))}") from error

    def _read_completion(self, body_text: str) -> ProviderResponse:
        try:
            body = json.loads(body_text)
        except ValueError as error:
            raise ProviderError(
                f"malformed response: the body is not JSON: {self._scrub(body_text) or 'empty body'}"
            ) from error
        try:
            completion = _Completion.model_validate(body)
        except ValidationError as error:
            detail = error.errors(include_url=False)[0]
            where = ".".join(str(part) for part in detail["loc"]) or "the body"
            raise ProviderError(f"malformed response: {where}: {detail['msg']}") from error
        if not completion.choices:
            raise ProviderError("malformed response: 'choices' is empty")
        choice = completion.choices[0]
        if choice.message.content is None:
            raise ProviderError(
                f"malformed response: the reply has no text content (finish_reason={choice.finish_reason!r})"
            )
        if completion.usage is None:
            # Zeros would be a lie in the token accounting, so the call fails instead.
            raise ProviderError("server reported no token usage; refusing to invent zero token counts")
        return ProviderResponse(
            text=choice.message.content,
            input_tokens=completion.usage.prompt_tokens,
            output_tokens=completion.usage.completion_tokens,
            finish_reason=choice.finish_reason,
        )

    def _scrub(self, text: str) -> str:
        """A short excerpt of server text with the API key removed, in case a server echoes it."""
        if self.api_key_env is not None:
            text = text.replace(self._client.api_key, "***")
        text = " ".join(text.split())
        if len(text) > _EXCERPT_CHARS:
            text = text[:_EXCERPT_CHARS] + "..."
        return text
