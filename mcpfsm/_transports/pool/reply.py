"""A response on a pooled connection (as httpcore's response stream): its body read on demand, then released.

The connection goes back to the pool only when the response said it may be reused and its whole body was
read; otherwise it is closed. The body of a *long-lived* request (a stream meant to stay open and quiet: a
subscription, the standalone event stream) may be silent for any time: no read timeout bounds its waits.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Final, Protocol

import trio

from ..._core.h1 import H1Error, ResponseReader
from .connection import Connection
from .errors import WireError
from .http11 import receive
from .interfaces import RECEIVE_BYTES, Timeouts

__all__ = ["Pool", "WireReply"]

# Bytes already in the socket come back at once; this only bounds a TLS record that is incomplete.
_DRAIN_SECONDS: Final = 0.001


class Pool(Protocol):
    """What a reply needs of its pool (``ConnectionPool``): the read timeout, and taking the connection back."""

    @property
    def timeouts(self) -> Timeouts:
        """The timeout of each wait."""
        ...

    def release(self, connection: Connection, *, reusable: bool) -> None:
        """Take ``connection`` back: idle for reuse when ``reusable``, else closed."""
        ...


class WireReply:
    """A response on a pooled connection; the connection is released when the body has been read.

    Implements :class:`HttpResponse`. Iterate :meth:`chunks` or call :meth:`read` once; always
    :meth:`aclose` (idempotent).
    """

    __slots__ = (
        "_connection",
        "_deferred",
        "_keep",
        "_pool",
        "_read_timeout",
        "_reader",
        "headers",
        "reason",
        "set_cookie",
        "status",
    )

    def __init__(
        self,
        pool: Pool,
        connection: Connection,
        reader: ResponseReader,
        deferred: BaseException | None = None,
        *,
        long_lived: bool = False,
    ) -> None:
        """Wrap the response whose head ``reader`` has read on ``connection``.

        ``deferred``: what the wait for the rest of a small body after the head raised (a timeout, a
        broken connection), raised where the body is read, as if the wait had happened there.
        ``long_lived``: the body may be silent for any time, so no read timeout bounds its waits.
        """
        head = reader.read_head()
        assert head is not None
        self.status = head.status
        """The status code."""
        self.reason = head.reason
        """The reason phrase."""
        self.headers: Mapping[str, str] = head.headers
        """Header fields by lowercase name."""
        self.set_cookie: Sequence[str] = head.set_cookie
        """Each ``Set-Cookie`` field value on its own."""
        self._pool = pool
        self._connection: Connection | None = connection
        self._reader = reader
        self._deferred = deferred
        self._keep = False
        self._read_timeout = math.inf if long_lived else pool.timeouts.read

    async def read(self, *, keep: bool = False) -> bytes:
        """Read the rest of the body.

        ``keep``: the connection stays with this reply once the body has been read, until :meth:`release`,
        :meth:`aclose` or :meth:`following` (the caller checks whom the answer is for).

        Raises:
            WireError, WireTimeout, H1Error, OSError, trio.BrokenResourceError: as for the request.
        """
        # Hot path (bench/instructions.py): the loop of __anext__ without the async iterator around it; an answer
        # that came with its head (the usual one) is read without a wait.
        pieces = []
        reader = self._reader
        while True:
            try:
                piece = reader.read_body()
            except BaseException:
                self._discard()
                raise
            if piece is None:
                if not keep:
                    self._release()
                break
            if piece:
                pieces.append(piece)
                continue
            connection = self._connection
            if connection is None:
                raise WireError("the response was closed before its body was read")
            try:
                reader.receive(await self._receive(connection))
            except BaseException:
                self._discard()
                raise
        if len(pieces) == 1:
            return pieces[0]
        return b"".join(pieces)

    def read_received(self, *, keep: bool = False) -> bytes | None:
        """The rest of a ``Content-Length`` body when it has all arrived already, else ``None`` (then :meth:`read`).

        ``keep``: as for :meth:`read`. Hot path (bench/repeatable.py): a small answer comes with its head (the pool
        waits for the rest of one within the exchange), and is read here without a coroutine.
        """
        body = self._reader.whole_body()
        if body is not None and not keep:
            self._release()
        return body

    def chunks(self, *, keep: bool = False) -> AsyncIterator[bytes]:
        """The body as it arrives (each piece non-empty); ends with the body.

        ``keep``: as for :meth:`read` (a chunked or encoded answer whose request id is checked after it is decoded).
        """
        self._keep = keep
        return self

    def __aiter__(self) -> WireReply:
        return self

    async def __anext__(self) -> bytes:
        reader = self._reader
        while True:
            try:
                piece = reader.read_body()
            except BaseException:
                self._discard()
                raise
            if piece:
                return piece
            if piece is None:
                if not self._keep:
                    self._release()
                raise StopAsyncIteration
            connection = self._connection
            if connection is None:
                raise WireError("the response was closed before its body was read")
            try:
                reader.receive(await self._receive(connection))
            except BaseException:
                self._discard()
                raise

    async def _receive(self, connection: Connection) -> bytes | bytearray:
        deferred, self._deferred = self._deferred, None
        if deferred is not None:
            raise deferred
        return await receive(connection, self._read_timeout)

    def release(self) -> None:
        """Hand the connection back now (after :meth:`read` with ``keep``): to the pool if the body ended cleanly."""
        if self._reader.done:
            self._release()
        else:
            self._discard()

    async def following(self, method: str = "POST") -> WireReply:
        """The next response on this connection, once this one's body was read with ``keep``.

        For an answer that belongs to no request of ours (a server that answered twice): on a connection whose
        framing is known, the response to the request sent is the next one. This reply no longer holds the
        connection; the returned one does (the caller closes it).

        Raises:
            WireError: the body was not read, or the connection is gone.
            WireTimeout, H1Error, OSError, trio.BrokenResourceError: as for the request.
        """
        connection = self._connection
        if connection is None or not self._reader.done:
            raise WireError("no further response can be read on this connection")
        self._connection = None
        rest, ended = self._reader.leftover()
        reader = ResponseReader(method)
        if rest:
            reader.receive(rest)
        if ended:
            reader.receive(b"")
        try:
            while reader.read_head() is None:
                reader.receive(await receive(connection, self._pool.timeouts.read))
        except BaseException:
            self._pool.release(connection, reusable=False)
            raise
        return WireReply(self._pool, connection, reader)

    @property
    def released(self) -> bool:
        """True once the connection is back in the pool or closed: :meth:`aclose` has nothing left to do."""
        return self._connection is None

    async def aclose(self) -> None:
        """Release the connection: back to the pool if the body ended cleanly, else closed.

        A body whose end has already arrived (the final chunk of an event stream whose answer was
        just read) still counts as read, so the connection is kept; nothing is waited for.
        """
        connection = self._connection
        if connection is None:
            return
        reader = self._reader
        try:
            while reader.read_body():
                pass
            if not reader.done and connection.readable():
                with trio.CancelScope(deadline=trio.current_time() + _DRAIN_SECONDS):
                    reader.receive(await connection.stream.receive_some(RECEIVE_BYTES))
                while reader.read_body():
                    pass
        except (H1Error, OSError, trio.BrokenResourceError):
            pass
        except BaseException:
            self._discard()
            raise
        if reader.done:
            self._release()
        else:
            self._discard()

    async def abort(self) -> None:
        """Close the connection at once, whatever is left of the body (a body over a limit)."""
        self._discard()

    def _release(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            self._pool.release(connection, reusable=self._reader.reusable)

    def _discard(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            self._pool.release(connection, reusable=False)
