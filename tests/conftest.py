"""Fixtures the provider tests share: one loopback server per module, and the module's test key in the environment.

A module that uses them names its key as ``KEY`` (each module its own, so a leak is traced to its test) and asks
for ``key_in_env`` with ``pytestmark``; the provider it builds reads the key from ``loopback_server.KEY_ENV``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from loopback_server import KEY_ENV, Server


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with Server() as running:
        yield running


@pytest.fixture
def key_in_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, request.module.KEY)
