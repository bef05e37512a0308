"""A caller's ``httpx.AsyncBaseTransport`` (``httpx.MockTransport`` in unit tests), driven instead of the pool.

The caller's transport brings its own proxy and TLS settings, and the caller owns closing it. Its responses are
wrapped as an :class:`~mcpfsm._transports.pool.HttpResponse` (:class:`HttpxResponse`) whose chunks are the raw
body: content decoding and limits are the HTTP transport's, the same on both paths.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import trio

from ..._core.h1 import H1Error, field_problem

if TYPE_CHECKING:
    import httpx

    from .routing import Hop

__all__ = ["HttpxResponse", "HttpxRoute"]


class HttpxResponse:
    """An :class:`~mcpfsm._transports.pool.HttpResponse` over an httpx response.

    A response the transport already read (``httpx.Response(content=...)`` in a ``MockTransport``) only has
    its decoded content left; :attr:`decoded` says so.
    """

    __slots__ = ("_chunks", "_response")

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self._chunks: AsyncGenerator[bytes, None] | None = None

    @property
    def status(self) -> int:
        """The status code."""
        return self._response.status_code

    @property
    def reason(self) -> str:
        """The reason phrase."""
        return self._response.reason_phrase

    @property
    def headers(self) -> Mapping[str, str]:
        """The header fields (``httpx.Headers``: every value of a repeated field kept apart)."""
        return self._response.headers

    @property
    def set_cookie(self) -> Sequence[str]:
        """Each ``Set-Cookie`` field value on its own."""
        return self._response.headers.get_list("set-cookie")

    async def read(self) -> bytes:
        """The whole body."""
        return b"".join([chunk async for chunk in self.chunks()])

    @property
    def decoded(self) -> bool:
        """True when httpx has already read and decoded the body."""
        return self._response.is_stream_consumed

    def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives: raw, or the decoded content when :attr:`decoded`."""
        if self.decoded:
            self._chunks = _once(self._response.content)
        else:
            # httpx annotates aiter_raw as an AsyncIterator, but it is an async generator.
            self._chunks = cast("AsyncGenerator[bytes, None]", self._response.aiter_raw())
        return self._chunks

    async def aclose(self) -> None:
        """Close the response (and unwind httpx's byte generators); idempotent."""
        chunks, self._chunks = self._chunks, None
        if chunks is not None:
            await _unwind(chunks)
        await self._response.aclose()

    async def abort(self) -> None:
        """Close the response: httpcore closes a connection whose body was not read to its end."""
        await self.aclose()

    def drop_connection(self) -> bool:
        """Shut the connection this response came on down, when the transport names it; whether there was one.

        httpcore names it in the response's ``network_stream`` extension (its ``socket``). A connection shut
        down reads as one the server closed, so httpcore's pool drops it before the next request: bytes left
        on it after this response (a server that answered twice) reach no later request. A transport without
        connections (``httpx.MockTransport``) names none.
        """
        stream = self._response.extensions.get("network_stream")
        extra = getattr(stream, "get_extra_info", None)
        connection = None if extra is None else extra("socket")
        shutdown = getattr(connection, "shutdown", None)
        if shutdown is None:
            return False
        with contextlib.suppress(OSError):
            shutdown(trio.socket.SHUT_RDWR)
        return True


class HttpxRoute:
    """Sends every request of an ``HttpTransport`` through the caller's ``httpx.AsyncBaseTransport``.

    Args:
        transport: the caller's transport.
        timeout: as ``HttpTransport``'s (``None``: ``httpx.Timeout(30.0, read=300.0)``).
    """

    __slots__ = ("_extensions", "_long_lived_extensions", "_transport")

    def __init__(self, transport: httpx.AsyncBaseTransport, timeout: httpx.Timeout | float | None) -> None:
        import httpx

        timeouts = (
            timeout
            if isinstance(timeout, httpx.Timeout)
            else (httpx.Timeout(30.0, read=300.0) if timeout is None else httpx.Timeout(timeout))
        )
        self._transport = transport
        self._extensions: dict[str, Any] = {"timeout": timeouts.as_dict()}
        # A long-lived stream's silences are not bounded (httpx cannot tell the head's wait from the body's).
        self._long_lived_extensions: dict[str, Any] = {"timeout": {**timeouts.as_dict(), "read": None}}

    async def request(self, hop: Hop) -> HttpxResponse:
        """Send one request through the caller's transport; see :class:`~.routing.Route`.

        Raises:
            H1Error: a header the pool's framing would refuse too (httpx and h11 would quote the value).
            httpx.HTTPError: as the caller's transport raises it (``http.errors`` maps it).
        """
        own = hop.headers
        headers = [*hop.fixed, *(own.items() if isinstance(own, Mapping) else own)]
        for name, value in headers:
            # What the pool's framing refuses, refused here too: httpx and h11 would quote the value.
            if (problem := field_problem(name, value)) is not None:
                raise H1Error(problem)
        import httpx

        extensions = self._long_lived_extensions if hop.long_lived else self._extensions
        request = httpx.Request(hop.method, hop.url, headers=headers, content=hop.body or None, extensions=extensions)
        return HttpxResponse(await self._transport.handle_async_request(request))

    async def aclose(self) -> None:
        """Nothing to release: the caller owns its transport."""


async def _once(content: bytes) -> AsyncGenerator[bytes, None]:
    if content:
        yield content


async def _unwind(chunks: AsyncGenerator[bytes, None]) -> None:
    # Leaving a stream early (the answer came, a malformed event, a legacy GET stream that never ends)
    # leaves httpx's and httpcore's stacked byte generators suspended at a yield; aclose() would reach
    # only the outermost, and trio reports each inner one as abandoned when it is collected. Running
    # the stack to its next checkpoint inside a cancelled scope unwinds every layer with Cancelled.
    with trio.CancelScope() as scope:
        scope.cancel()
        with contextlib.suppress(Exception):
            while True:
                await chunks.__anext__()
