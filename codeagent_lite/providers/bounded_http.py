"""An HTTP transport for the ``openai`` client that refuses to wait or read without end.

The client's ``timeout`` bounds each read, not the call: a server that sends one byte a
second keeps a ``timeout=3`` call alive as long as it likes. And it reads the whole body
into memory, however large. This transport wraps the client's own (``httpx2``, which
``openai`` depends on) and checks, after every chunk of the body, that the call is
still inside its deadline and under its size cap.

A chunk check cannot interrupt a read that is blocked waiting: that read still ends at
the per-read timeout. ``OpenAICompatibleProvider`` therefore also waits for the whole
call with its own deadline (see ``_send`` there), and this transport makes sure that a
call given up that way stops soon after, instead of reading on in the background.

``httpx2`` is imported when the transport is built, like ``openai`` itself.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

__all__ = ["bounded_http_client"]


def bounded_http_client(*, seconds: float, max_body_bytes: int) -> Any:
    """An ``httpx2.Client`` whose every request ends within ``seconds`` or ``max_body_bytes``."""
    import httpx2

    class BoundedStream(httpx2.SyncByteStream):
        def __init__(self, inner: Any, deadline: float) -> None:
            self._inner = inner
            self._deadline = deadline

        def __iter__(self) -> Iterator[bytes]:
            received = 0
            for chunk in self._inner:
                received += len(chunk)
                if received > max_body_bytes:
                    raise httpx2.ReadError(f"the answer is longer than {max_body_bytes} bytes; reading stopped")
                if time.monotonic() > self._deadline:
                    raise httpx2.ReadTimeout(f"the answer took longer than {seconds} s in all")
                yield chunk

        def close(self) -> None:
            self._inner.close()

    class BoundedTransport(httpx2.BaseTransport):
        def __init__(self) -> None:
            self._inner = httpx2.HTTPTransport()

        def handle_request(self, request: Any) -> Any:
            deadline = time.monotonic() + seconds
            response = self._inner.handle_request(request)
            return httpx2.Response(
                status_code=response.status_code,
                headers=response.headers,
                stream=BoundedStream(response.stream, deadline),
                extensions=response.extensions,
            )

        def close(self) -> None:
            self._inner.close()

    return httpx2.Client(transport=BoundedTransport(), timeout=seconds)
