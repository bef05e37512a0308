"""The pool's values and the response protocol ``HttpTransport`` consumes (as httpcore's ``interfaces.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Final, NamedTuple, Protocol

__all__ = ["DEFAULT_TIMEOUTS", "RECEIVE_BYTES", "HttpResponse", "Timeouts"]

RECEIVE_BYTES: Final = 65536
"""What one receive from a socket asks for."""


class Timeouts(NamedTuple):
    """Seconds each wait of a request may take; ``math.inf`` waits forever.

    Attributes:
        connect: opening a connection (TCP and TLS handshake).
        write: writing the request.
        read: each wait for more bytes of the response (not the whole response).
        pool: waiting for a connection when ``max_connections`` are busy.
    """

    connect: float = 30.0
    write: float = 30.0
    read: float = 300.0
    pool: float = 30.0


_DEFAULT_TIMEOUTS: Final = Timeouts()

DEFAULT_TIMEOUTS: Final = Timeouts()


class HttpResponse(Protocol):
    """An HTTP response whose body is read on demand; what ``HttpTransport`` consumes."""

    @property
    def status(self) -> int:
        """The status code."""
        ...

    @property
    def reason(self) -> str:
        """The reason phrase (may be empty)."""
        ...

    @property
    def headers(self) -> Mapping[str, str]:
        """Header fields; lookups by lowercase name."""
        ...

    @property
    def set_cookie(self) -> Sequence[str]:
        """Each ``Set-Cookie`` field value on its own (RFC 6265 §3: they cannot be joined)."""
        ...

    async def read(self) -> bytes:
        """The whole body."""
        ...

    def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, piece by piece."""
        ...

    async def aclose(self) -> None:
        """Release the connection; idempotent. Closing before the body ended closes the connection."""
        ...

    async def abort(self) -> None:
        """Release the connection without reading further and never reuse it; idempotent."""
        ...
