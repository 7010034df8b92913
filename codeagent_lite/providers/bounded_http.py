"""An HTTP transport for the ``openai`` client that refuses to wait or read without end.

The client's ``timeout`` bounds each read, not the call: a server that sends one byte a
second keeps a ``timeout=3`` call alive as long as it likes. And it reads the whole body
into memory, however large. This transport wraps the client's own (the HTTP library that
``openai`` depends on) and checks, after every chunk of the body, that the call is
still inside its deadline and under its size cap.

A chunk check cannot interrupt a read that is blocked waiting: that read still ends at
the per-read timeout. ``OpenAICompatibleProvider`` therefore also waits for the whole
call with its own deadline (see ``_send`` there), and this transport makes sure that a
call given up that way stops soon after, instead of reading on in the background.

The HTTP library is imported when the transport is built, like ``openai`` itself: ``httpx2``
where the installed ``openai`` is built on it, else ``httpx`` (``openai`` 1.x and 2.x); the
two share the transport interface used here.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

__all__ = ["bounded_http_client", "http_library"]


def http_library() -> Any:
    """The HTTP library the installed ``openai`` client is built on."""
    try:
        import httpx2
    except ImportError:
        import httpx

        return httpx
    return httpx2


def bounded_http_client(*, seconds: float, max_body_bytes: int) -> Any:
    """An HTTP client whose every request ends within ``seconds`` or ``max_body_bytes``."""
    # Chosen at run time (httpx2 or httpx), so to the type checker the base classes are Any.
    http: Any = http_library()

    class BoundedStream(http.SyncByteStream):  # type: ignore[misc]
        def __init__(self, inner: Any, deadline: float) -> None:
            self._inner = inner
            self._deadline = deadline

        def __iter__(self) -> Iterator[bytes]:
            received = 0
            for chunk in self._inner:
                received += len(chunk)
                if received > max_body_bytes:
                    raise http.ReadError(f"the answer is longer than {max_body_bytes} bytes; reading stopped")
                if time.monotonic() > self._deadline:
                    raise http.ReadTimeout(f"the answer took longer than {seconds} s in all")
                yield chunk

        def close(self) -> None:
            self._inner.close()

    class BoundedTransport(http.BaseTransport):  # type: ignore[misc]
        def __init__(self) -> None:
            self._inner = http.HTTPTransport()

        def handle_request(self, request: Any) -> Any:
            deadline = time.monotonic() + seconds
            response = self._inner.handle_request(request)
            return http.Response(
                status_code=response.status_code,
                headers=response.headers,
                stream=BoundedStream(response.stream, deadline),
                extensions=response.extensions,
            )

        def close(self) -> None:
            self._inner.close()

    return http.Client(transport=BoundedTransport(), timeout=seconds)
