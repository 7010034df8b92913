"""A ``TextProvider`` for any server speaking OpenAI's chat completions API (OpenAI, DeepSeek, Ollama, vLLM,
llama.cpp): they differ only in address, model and key. The official ``openai`` client (the ``openai`` extra,
imported when a provider is created) sends; around it: the system prompt, honest token usage, and
``ProviderFailure``s whose parameters never contain the key.
"""

from __future__ import annotations

import math
import os
import queue
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..action_schema import action_json_schema
from ..display import error_text, printable, shorten
from ..json_text_adapter import ProviderResponse
from ..json_text_messages import ProviderMessage
from ..kernel_types import ToolSpec
from ..model_adapter import InvalidModelOutputError, require_count
from ..strict_json import DECODER
from .bounded_http import bounded_http_client
from .failure import FailureCode, ProviderFailure, SetupFailure
from .prompting import render_system_prompt
from .redaction import Redactor, protect_library_logs, redact_url, url_secrets

if TYPE_CHECKING:
    import openai

__all__ = ["KEY_CHARACTERS", "MAX_BODY_BYTES", "MAX_TOKEN_COUNT", "PLACEHOLDER_API_KEY", "OpenAICompatibleProvider"]
__all__ += ["ChatChoice", "Completion", "TextChoice", "Usage", "check_number", "check_sendable", "strict_failure"]

PLACEHOLDER_API_KEY = "no-key-needed"  # local servers accept any key, but the client sends nothing without one
MAX_BODY_BYTES = 8_000_000  # a completion is a few kilobytes; a longer body would cost the learner's memory
MAX_TOKEN_COUNT = 1_000_000_000  # no call spends a billion; a larger count is a server's bug
# What an API key may hold (base64, URL-safe base64, JWT, sk-proj-…): with a backslash, % or & in it, the key's
# escaped spellings would be ambiguous and redaction could miss one.
KEY_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~+/=:")

_EXCERPT_CHARS = 300
_SCRUBBED_CHARS = 20 * _EXCERPT_CHARS  # searched for secrets: more than an excerpt can show, however escaped
_WAIT_GRACE_SECONDS = 1.0  # past the deadline, for the transport, which stops itself at the deadline
_POLL_SECONDS = 0.5  # how often a request in flight asks ``failure_while_waiting``
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_CONVENTIONAL_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,63}")


# The part of an answer this provider relies on, checked field by field so a malformed answer becomes a
# ProviderFailure naming the missing piece. Extra fields are ignored: servers add their own.
class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class Usage(_Answer):
    prompt_tokens: int = Field(ge=0, le=MAX_TOKEN_COUNT)
    completion_tokens: int = Field(ge=0, le=MAX_TOKEN_COUNT)


class ChatMessage(_Answer):
    content: str | None = None


class ChatChoice(_Answer):
    message: ChatMessage
    finish_reason: str | None = None

    @property
    def text(self) -> str | None:
        return self.message.content


class TextChoice(_Answer):  # a choice of /completions: the continuation itself
    text: str
    finish_reason: str | None = None


Choice = TypeVar("Choice", ChatChoice, TextChoice)


class Completion(_Answer, Generic[Choice]):
    choices: list[Choice]
    usage: Usage | None = None


def _check_base_url(base_url: object) -> str:
    if not isinstance(base_url, str):
        raise TypeError(f"base_url must be a string, found {type(base_url).__name__}")
    try:
        parsed = urllib.parse.urlsplit(base_url)
        port_is_valid = parsed.port is None or parsed.port >= 0
    except ValueError:
        port_is_valid = False
    try:
        found = repr(printable(shorten(redact_url(base_url), 120)))
    except ValueError:  # too broken to parse: shown by its length only
        found = repr(f"<{len(base_url)} characters>")
    if not port_is_valid or parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise SetupFailure(FailureCode.BAD_BASE_URL, found=found)
    if "@" in parsed.netloc:
        # The HTTP library would send them as Basic auth in place of the key, and an echoing server would show them.
        raise SetupFailure(FailureCode.URL_CREDENTIALS, found=found)
    return base_url


def _check_variable_name(api_key_env: object) -> None:
    if api_key_env is not None and not isinstance(api_key_env, str):
        raise TypeError(f"api_key_env must be a string or None, found {type(api_key_env).__name__}")
    if api_key_env is not None and not _VARIABLE_NAME.fullmatch(api_key_env):
        # Most often the key itself was pasted here: never repeat it.
        raise SetupFailure(FailureCode.BAD_VARIABLE_NAME, length=len(api_key_env))


def check_number(name: str, value: object, *, above_zero: bool = False) -> float:
    """A finite number, at least 0 (above 0 with ``above_zero``): TypeError for what is no number, else ValueError."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, found {type(value).__name__}")
    if not math.isfinite(value) or value < 0 or (above_zero and value == 0):
        raise ValueError(f"{name} must be a finite number {'>' if above_zero else '>='} 0, found {value!r}")
    return float(value)


def _read_api_key(api_key_env: str) -> str:
    """The key from the environment, without the line ending a CRLF ``.env`` file leaves on it."""
    key = os.environ.get(api_key_env, "").strip()
    # Variables are named in capitals; a mixed-case "name" may be a key pasted in: its length only.
    shown = api_key_env if _CONVENTIONAL_NAME.fullmatch(api_key_env) else f"<{len(api_key_env)} characters, not shown>"
    if not key:
        raise ProviderFailure(FailureCode.KEY_NOT_SET, variable=shown)
    for position, char in enumerate(key, start=1):
        where = {"variable": shown, "position": position, "length": len(key)}
        if char == " " or not (char.isascii() and char.isprintable()):
            raise ProviderFailure(FailureCode.KEY_UNPRINTABLE, char=f"U+{ord(char):04X}", **where)
        if char not in KEY_CHARACTERS:
            raise ProviderFailure(FailureCode.KEY_PUNCTUATION, **where)
    return key


def check_sendable(texts: Iterable[str]) -> None:
    """Refuse text that has no UTF-8 encoding (a lone surrogate) before the client crashes on it."""
    for number, content in enumerate(texts):
        try:
            content.encode("utf-8")
        except UnicodeEncodeError as error:
            char = f"\\u{ord(content[error.start]):04x}"
            raise ProviderFailure(
                FailureCode.LONE_SURROGATE, message=number, position=error.start + 1, char=char
            ) from None


class OpenAICompatibleProvider:
    """Sends provider messages to an OpenAI-compatible ``/chat/completions`` endpoint.

    The key is read once from the variable ``api_key_env`` names (None: a local server needs none); only the
    client keeps it. ``send_action_schema`` adds the action schema to json mode (llama.cpp's constrained decoding).
    ``timeout`` bounds the whole call and ``MAX_BODY_BYTES`` the decompressed body, so a slow, endless or bomb
    server costs no more; no retries, as a retry would hide a failure and spend tokens twice.
    """

    answer: ClassVar[type[Completion[Any]]] = Completion[ChatChoice]  # openai_completions: Completion[TextChoice]

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        temperature: float | None = 0.0,
        json_mode: bool = False,
        *,
        send_action_schema: bool = False,
        max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens",
        seed: int | None = None,
    ) -> None:
        self.base_url = _check_base_url(base_url)
        if not isinstance(model, str):
            raise TypeError(f"model must be a string, found {type(model).__name__}")
        if not model.strip():
            raise SetupFailure(FailureCode.BLANK_MODEL, found=repr(shorten(model, 40)))
        if send_action_schema and not json_mode:
            raise ValueError("send_action_schema=True only makes sense with json_mode=True")
        _check_variable_name(api_key_env)
        self.shown_url = redact_url(base_url)  # the address as it may be printed
        self.model, self.api_key_env, self.json_mode, self.seed = model, api_key_env, json_mode, seed
        self.timeout = check_number("timeout", timeout, above_zero=True)
        self.temperature = None if temperature is None else check_number("temperature", temperature)
        self.send_action_schema, self.max_tokens_field = send_action_schema, max_tokens_field

        key = PLACEHOLDER_API_KEY if api_key_env is None else _read_api_key(api_key_env)
        self._redactor = Redactor.for_secrets(url_secrets(base_url) + ([] if api_key_env is None else [key]))
        try:
            import openai
        except ImportError:
            raise ProviderFailure(FailureCode.NO_OPENAI) from None
        self._openai: Any = openai
        bounded = bounded_http_client(seconds=self.timeout, max_body_bytes=MAX_BODY_BYTES)
        try:  # the client keeps the only copy of the key: it must send it
            self._client: openai.OpenAI = self._openai.OpenAI(
                api_key=key, base_url=base_url, timeout=self.timeout, max_retries=0, http_client=bounded
            )
        except Exception as error:  # the HTTP library's InvalidURL (host 256.1.1.1) is no ValueError
            raise SetupFailure(
                FailureCode.INVALID_URL, url=repr(self.shown_url), detail=self._excerpt(str(error))
            ) from None
        _ = self._client.chat.completions  # loads lazily: now, so its loggers exist before the filter goes on
        protect_library_logs(self, self._redactor)

    def scrub(self, text: str) -> str:
        """``text`` with this provider's secrets masked: a hostile server can put the key into the model's reply."""
        return self._redactor.scrub(text)

    @classmethod
    def openai(cls, model: str = "gpt-4o-mini", **options: Any) -> OpenAICompatibleProvider:
        options.setdefault("max_tokens_field", "max_completion_tokens")
        return cls("https://api.openai.com/v1", model, "OPENAI_API_KEY", **options)

    @classmethod
    def deepseek(cls, model: str = "deepseek-chat", **options: Any) -> OpenAICompatibleProvider:
        return cls("https://api.deepseek.com", model, "DEEPSEEK_API_KEY", **options)

    @classmethod
    def ollama(
        cls, model: str, base_url: str = "http://localhost:11434/v1", **options: Any
    ) -> OpenAICompatibleProvider:
        return cls(base_url, model, None, **options)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(base_url={self.shown_url!r}, model={self.model!r}, "
            f"api_key_env={self.api_key_env!r}, json_mode={self.json_mode!r})"
        )

    def build_request(
        self, messages: Sequence[ProviderMessage], tools: Sequence[ToolSpec], max_output_tokens: int
    ) -> dict[str, Any]:
        """The keyword arguments of the chat completions call, exactly as sent."""
        system = {"role": "system", "content": render_system_prompt(tools)}
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [system, *({"role": m.role, "content": m.content} for m in messages)],
            self.max_tokens_field: max_output_tokens,
        }
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.seed is not None:
            request["seed"] = self.seed
        if self.json_mode:
            request["response_format"] = {"type": "json_object"}
            if self.send_action_schema:
                request["response_format"]["schema"] = action_json_schema()
        return request

    def complete(
        self, *, messages: Sequence[ProviderMessage], tools: Sequence[ToolSpec], max_output_tokens: int
    ) -> ProviderResponse:
        require_count("max_output_tokens", max_output_tokens, 1)  # 0 or None would mean "no limit" to a server
        request = self.build_request(messages, tools, max_output_tokens)
        check_sendable([message["content"] for message in request.get("messages", [])] + [request.get("prompt", "")])
        return self.read_completion(self._send(request))

    def _send(self, request: dict[str, Any]) -> str:
        """The body of a successful answer within ``timeout`` seconds in all: in a thread, so that a blocked read
        cannot hold this call past its deadline (the transport stops at the same one)."""
        outcome: queue.Queue[str | ProviderFailure] = queue.Queue(maxsize=1)
        worker = threading.Thread(target=lambda: outcome.put(self._attempt(request)), daemon=True)
        worker.start()
        deadline = time.monotonic() + self.timeout + _WAIT_GRACE_SECONDS
        answer: str | ProviderFailure | None = None
        while answer is None:
            try:
                answer = outcome.get(timeout=min(_POLL_SECONDS, max(deadline - time.monotonic(), 0.0)))
            except queue.Empty:  # the deadline is for what the transport cannot bound (a name lookup that hangs)
                answer = self._timed_out() if time.monotonic() >= deadline else self.failure_while_waiting()
            else:
                worker.join()
        if isinstance(answer, ProviderFailure):
            raise answer
        return answer

    def failure_while_waiting(self) -> ProviderFailure | None:
        """Looked at between polls of a request in flight: a reason to give up on it now rather than at the
        deadline (the local engine's, when it is stopped). A server elsewhere gives none."""
        return None

    def _timed_out(self) -> ProviderFailure:
        return ProviderFailure(FailureCode.TIMED_OUT, url=self.shown_url, seconds=format(self.timeout, "g"))

    def _raw_create(self, request: dict[str, Any]) -> Any:
        """The one call that differs between endpoints (``openai_completions`` sends ``/completions``)."""
        return self._client.chat.completions.with_raw_response.create(**request)

    def _attempt(self, request: dict[str, Any]) -> str | ProviderFailure:
        # Every failure becomes a ProviderFailure with scrubbed parameters and no chained cause:
        # the client's exceptions hold the raw body, and a printed traceback would show it.
        try:
            return str(self._raw_create(request).http_response.text)
        except Exception as error:
            cause = error.__cause__ if error.__cause__ is not None else error
            refused = getattr(cause, "failure", None)  # the bounded transport's own refusal, as data
            if isinstance(refused, ProviderFailure):  # its parameters quote the server (a header): scrubbed too
                return self._scrubbed(refused.code, refused.params)
            if isinstance(error, self._openai.APITimeoutError):  # an APIConnectionError too: first
                return self._timed_out()
            if isinstance(error, self._openai.APIConnectionError):
                detail = self._excerpt(error_text(cause) or type(cause).__name__)
                return ProviderFailure(FailureCode.CONNECTION_FAILED, url=self.shown_url, detail=detail)
            if isinstance(error, self._openai.APIStatusError) and (host := _redirect_host(error.response)):
                return ProviderFailure(FailureCode.REDIRECTED, status=error.status_code, host=self._excerpt(host))
            if isinstance(error, self._openai.APIStatusError):
                detail = self._excerpt(error.response.text)
                return ProviderFailure(FailureCode.HTTP_STATUS, status=error.status_code, detail=detail)
            detail, kind = self._excerpt(error_text(error)), type(error).__name__
            return ProviderFailure(FailureCode.REQUEST_FAILED, url=self.shown_url, kind=kind, detail=detail)

    def read_completion(self, body_text: str) -> ProviderResponse:
        body = self._decode_body(body_text)
        try:
            return self._response_of(self._validated(body))
        except ProviderFailure as refused:  # the server counted the reply's tokens: refused, it still cost them
            counted = _counted_usage(body)
            if counted is not None:
                refused.input_tokens, refused.output_tokens = counted.prompt_tokens, counted.completion_tokens
            raise

    def _response_of(self, completion: Completion[Any]) -> ProviderResponse:
        if not completion.choices:
            raise ProviderFailure(FailureCode.NO_CHOICES)
        choice = completion.choices[0]
        if choice.text is None:
            raise ProviderFailure(FailureCode.NO_TEXT, finish_reason=self._excerpt(repr(choice.finish_reason)))
        if (usage := completion.usage) is None:  # zeros would be a lie in the token accounting
            raise ProviderFailure(FailureCode.NO_USAGE)
        return ProviderResponse(choice.text, usage.prompt_tokens, usage.completion_tokens, choice.finish_reason)

    def _decode_body(self, body_text: str) -> object:
        try:  # the chapter's strict decoder: a second "usage" of 0/0 would hide the tokens spent, NaN is no count
            return DECODER.decode(body_text)
        except InvalidModelOutputError as refused:
            raise strict_failure(refused, self._excerpt) from None
        except RecursionError:
            raise ProviderFailure(FailureCode.TOO_DEEP) from None
        except ValueError:
            raise ProviderFailure(FailureCode.NOT_JSON, excerpt=self._excerpt(body_text) or "''") from None

    def _validated(self, body: object) -> Completion[Any]:
        try:
            return self.answer.model_validate(body)
        except ValidationError as error:
            detail = error.errors(include_url=False)[0]
            where = ".".join(str(part) for part in detail["loc"]) or "$"  # JSONPath's name for the whole body
            raise ProviderFailure(FailureCode.BAD_FIELD, where=self._excerpt(where), check=detail["type"]) from None

    def _excerpt(self, text: str) -> str:
        return printable(shorten(" ".join(self._redactor.scrub(text[:_SCRUBBED_CHARS]).split()), _EXCERPT_CHARS))

    def _scrubbed(self, code: FailureCode, params: Mapping[str, object]) -> ProviderFailure:
        return ProviderFailure(code, **{name: self._excerpt(str(value)) for name, value in params.items()})


def _counted_usage(body: object) -> Usage | None:
    """A body's ``usage`` when it holds valid counts, whatever else in the body is wrong."""
    try:
        return Usage.model_validate(body.get("usage")) if isinstance(body, dict) else None
    except ValidationError:
        return None


def _redirect_host(response: Any) -> str:
    """Where a 3xx answer points, its host only (a path or query may hold anything), or "" when it is no redirect."""
    if not 300 <= response.status_code < 400:
        return ""
    try:
        return urllib.parse.urlsplit(str(response.headers.get("location", ""))).hostname or ""
    except ValueError:  # the server's Location is untrusted text: "http://[::1" is no address
        return ""


def strict_failure(refused: InvalidModelOutputError, excerpt: Callable[[str], str]) -> ProviderFailure:
    """A body's refusal by the chapter's strict decoder, made from its data in a provider's words; each value goes
    through ``excerpt`` (the provider's scrubs secrets)."""
    code, params = refused.code, refused.params
    if code == "duplicate_key":
        return ProviderFailure(FailureCode.DUPLICATE_KEY, key=excerpt(repr(shorten(params["key"], 40))))
    if code == "number_too_long":
        digits, limit = (excerpt(str(params[name])) for name in ("digits", "limit"))
        return ProviderFailure(FailureCode.LONG_INTEGER, digits=digits, limit=limit)
    if code == "not_finite" and params["number"] in ("NaN", "Infinity", "-Infinity"):
        return ProviderFailure(FailureCode.NOT_A_NUMBER, token=excerpt(params["number"]))
    if code == "not_finite":
        return ProviderFailure(FailureCode.HUGE_NUMBER, number=excerpt(repr(shorten(params["number"], 40))))
    return ProviderFailure(FailureCode.NOT_JSON, excerpt=excerpt(refused.message))  # a refusal the hooks never make
