"""An HTTP transport for the ``openai`` client that refuses to wait or read without end.

The client's ``timeout`` bounds each read, not the call (a byte a second keeps it alive), and it reads the whole
body, decompressed, into memory. Here every socket operation gets what is left of the call's deadline (through
the pool's network backend; should a future version move it, the chunk checks and the provider's own wait still
hold it, less tightly), and gzip or deflate is undone ``_PIECE_BYTES`` a step against the cap, so a 50 KB bomb
is never held whole. The library is ``httpx2`` where ``openai`` is built on it, else ``httpx`` (same interface).
"""

from __future__ import annotations

import importlib
import threading
import time
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

from .failure import FailureCode, ProviderFailure

__all__ = ["ACCEPTED_ENCODINGS", "bounded_http_client", "http_library"]

ACCEPTED_ENCODINGS = ("gzip", "deflate")  # asked for and decoded here, a bound on what each piece may become
_ASKED = ", ".join(ACCEPTED_ENCODINGS)
_DECODED = (b"content-encoding", b"content-length")  # headers of the body as sent, not as handed on
_PIECE_BYTES = 64 * 1024  # most one decompression step may produce: what a bomb costs before the cap is checked
_MAX_CODINGS = 5  # most codings applied on top of each other (urllib3 and httpx stop at five too)
_MIN_WAIT = 0.001  # past the deadline: a socket timeout of 0 would mean "do not block", an error, not a timeout


def http_library() -> Any:
    try:
        return importlib.import_module("httpx2")
    except ImportError:
        return importlib.import_module("httpx")


def _refusal(kind: type[Exception], code: FailureCode, **params: object) -> Exception:
    """The HTTP library's own error (so the client handles it as it would), carrying the refusal as data."""
    failure = ProviderFailure(code, **params)
    error = kind(str(failure))
    error.failure = failure  # type: ignore[attr-defined]
    return error


class _Deadline(threading.local):
    """The deadline of the call the current thread is making (None outside a call)."""

    at: float | None = None

    def clamp(self, timeout: float | None) -> float | None:
        if self.at is None:
            return timeout
        left = max(self.at - time.monotonic(), _MIN_WAIT)
        return left if timeout is None else min(timeout, left)


class _Bounded:
    """The library's network backend, or a stream it opened: each call that may block ends by the deadline, what
    it opens is bounded too, the rest is passed on."""

    def __init__(self, inner: Any, deadline: _Deadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return bytes(self._inner.read(max_bytes, self._deadline.clamp(timeout)))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._deadline.clamp(timeout))

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        return _Bounded(
            self._inner.start_tls(ssl_context, server_hostname, self._deadline.clamp(timeout)), self._deadline
        )

    # httpcore passes local_address, socket_options and the like by keyword.
    def connect_tcp(self, host: str, port: int, timeout: float | None = None, **options: Any) -> _Bounded:
        return _Bounded(self._inner.connect_tcp(host, port, self._deadline.clamp(timeout), **options), self._deadline)

    def connect_unix_socket(self, path: str, timeout: float | None = None, **options: Any) -> _Bounded:
        return _Bounded(self._inner.connect_unix_socket(path, self._deadline.clamp(timeout), **options), self._deadline)


def _codings(header: str) -> list[str]:
    # The content codings of a ``Content-Encoding`` header, in the order they were applied.
    return [coding for coding in (part.strip().lower() for part in header.split(",")) if coding not in ("", "identity")]


def _inflate(pieces: Iterator[bytes], coding: str, error: type[Exception]) -> Iterator[bytes]:
    """One content coding undone, ``_PIECE_BYTES`` at a time. ``deflate`` should be zlib-wrapped (RFC 9110) but
    some servers send it raw: like the HTTP libraries, the raw form is tried when the first bytes are no zlib header.
    """
    wbits = zlib.MAX_WBITS | 16 if coding in ("gzip", "x-gzip") else zlib.MAX_WBITS
    decompressor = zlib.decompressobj(wbits)
    first = True
    for data in pieces:
        while data and not decompressor.eof:
            try:
                out = decompressor.decompress(data, _PIECE_BYTES)
            except zlib.error as failure:
                if first and coding == "deflate":
                    decompressor, first = zlib.decompressobj(-zlib.MAX_WBITS), False
                    continue
                raise _refusal(error, FailureCode.BAD_COMPRESSION, coding=coding, detail=str(failure)) from None
            first = False
            data = decompressor.unconsumed_tail
            if out:
                yield out
    if not decompressor.eof:
        raise _refusal(error, FailureCode.CUT_COMPRESSION, coding=coding)


def bounded_http_client(*, seconds: float, max_body_bytes: int) -> Any:
    """An HTTP client whose every request ends within ``seconds`` or ``max_body_bytes`` (received or decompressed)."""
    # Chosen at run time (httpx2 or httpx), so to the type checker the base classes are Any.
    http: Any = http_library()
    deadline = _Deadline()

    def _capped(pieces: Iterable[bytes]) -> Iterator[bytes]:
        # Counted as received and after each decoding (a gzip bomb stops at the cap, never held whole), and timed.
        count = 0
        for piece in pieces:
            count += len(piece)
            if count > max_body_bytes:
                raise _refusal(http.ReadError, FailureCode.BODY_TOO_LONG, limit=max_body_bytes)
            if deadline.at is not None and time.monotonic() > deadline.at:
                raise http.ReadTimeout(f"the answer took longer than {seconds} s in all")
            yield piece

    class BoundedStream(http.SyncByteStream):  # type: ignore[misc]
        def __init__(self, inner: Any, codings: list[str]) -> None:
            self._inner = inner
            self._codings = codings

        def __iter__(self) -> Iterator[bytes]:
            pieces = _capped(self._inner)
            for coding in reversed(self._codings):
                pieces = _capped(_inflate(pieces, coding, http.DecodingError))
            yield from pieces

        def close(self) -> None:
            self._inner.close()

    class BoundedTransport(http.BaseTransport):  # type: ignore[misc]
        def __init__(self) -> None:
            self._inner = http.HTTPTransport()
            pool: Any = getattr(self._inner, "_pool", None)
            backend = getattr(pool, "_network_backend", None)
            if backend is not None:
                pool._network_backend = _Bounded(backend, deadline)

        def handle_request(self, request: Any) -> Any:
            deadline.at = time.monotonic() + seconds
            request.headers["Accept-Encoding"] = _ASKED
            response = self._inner.handle_request(request)
            codings = _codings(response.headers.get("Content-Encoding", ""))
            unknown = [coding for coding in codings if coding not in (*ACCEPTED_ENCODINGS, "x-gzip")]
            if unknown or len(codings) > _MAX_CODINGS:
                response.close()
                found = repr(unknown[0][:40]) if unknown else repr(", ".join(codings)[:80])
                raise _refusal(
                    http.DecodingError, FailureCode.BAD_ENCODING, found=found, asked=_ASKED, depth=_MAX_CODINGS
                )
            # The body is handed on decoded, so the library must not decode it again.
            headers = [(name, value) for name, value in response.headers.raw if name.lower() not in _DECODED]
            return http.Response(
                status_code=response.status_code,
                headers=headers,
                stream=BoundedStream(response.stream, codings),
                extensions=response.extensions,
            )

        def close(self) -> None:
            self._inner.close()

    return http.Client(transport=BoundedTransport(), timeout=seconds)
