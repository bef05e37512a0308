"""Streamable HTTP transport (MCP "Transports").

One :class:`HttpTransport` per client holds one keep-alive connection pool, mcpfsm's own
:class:`~mcpfsm._transports.pool.ConnectionPool` (HTTP/1.1 over trio sockets): MCP needs neither redirects,
cookies, auth flows nor proxies, and a pool for one origin does constant work per request, where
httpx's ``AsyncClient`` and httpcore's pool spend more CPU on each request than the rest of a tool
call together. Any ``httpx.AsyncBaseTransport`` given as ``transport`` (``httpx.MockTransport``
in unit tests) is driven instead, unchanged; both answer with a :class:`~mcpfsm._transports.pool.HttpResponse`.

Replies: ``application/json`` bodies, ``text/event-stream`` streams (notifications and
server-to-client requests before the response are handed to the inbound handler), and JSON-RPC
error bodies on 4xx/5xx. A legacy session also keeps the standalone ``GET`` stream open
(:meth:`HttpTransport.open_stream`), read by a background task. Every connection-layer exception
(httpx, trio, OS, HTTP framing) becomes a :class:`~mcpfsm.TransportError` in :func:`_mapped`, the one mapping point.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from typing import Any, Final, cast

import httpx
import trio
from loguru import logger

from .._core.constants import is_modern
from .._core.errors import McpError, ProtocolError, TransportError
from .._core.h1 import H1Error
from .._core.jsonrpc import Response, decode_message, outgoing_request_id, parse_message
from .._core.sse import SseError, SseEvent, SseParser
from .background import BackgroundTask, BackgroundTasks
from .base import NO_HEADERS, SESSION_HEADER, InboundHandler, Reply, RequestCredentials, filter_custom_headers
from .pool import ConnectionPool, HttpResponse, Timeouts, WireError, WireTimeout

__all__ = ["DEFAULT_TIMEOUT", "HttpTransport"]

DEFAULT_TIMEOUT: Final = httpx.Timeout(30.0, read=300.0)
"""Connect, write and pool timeouts of 30 s; a tool may stream nothing for up to 5 minutes."""

# Keep every connection of a burst of concurrent calls alive instead of reconnecting most of them.
_MAX_CONNECTIONS: Final = 100
_KEEPALIVE_EXPIRY: Final = 30.0
_MAX_RESUMES: Final = 3
_DEFAULT_RETRY_MS: Final = 1000
_STATUS_HINTS: Final = {
    413: "the request was too large for the server (body or headers)",
    431: "the request headers were too large for the server (mirrored Mcp-Param-* values count)",
}


_CONNECTION_ERRORS: Final = (
    httpx.HTTPError,
    httpx.StreamError,
    httpx.InvalidURL,
    WireError,
    H1Error,
    OSError,
    trio.BrokenResourceError,
    trio.ClosedResourceError,
)


@contextlib.contextmanager
def _mapped(what: str) -> Iterator[None]:
    # The one place connection-layer exceptions become TransportError (STYLE: one mapping point).
    try:
        yield
    except httpx.TimeoutException as exc:
        raise TransportError(f"{what} timed out ({type(exc).__name__})") from exc
    except WireTimeout as exc:
        raise TransportError(f"{what} timed out ({exc.kind})") from exc
    except _CONNECTION_ERRORS as exc:
        # trio wraps socket errors: BrokenResourceError("") from ConnectionResetError(...).
        detail = str(exc) or str(exc.__cause__ or "") or type(exc).__name__
        raise TransportError(f"{what} failed: {detail}") from exc


def _media_type(response: HttpResponse) -> str:
    content_type = response.headers.get("content-type", "")
    return content_type.partition(";")[0].strip().lower()


def _timeouts(timeout: httpx.Timeout) -> Timeouts:
    def seconds(value: float | None) -> float:
        return math.inf if value is None else value

    return Timeouts(
        connect=seconds(timeout.connect),
        write=seconds(timeout.write),
        read=seconds(timeout.read),
        pool=seconds(timeout.pool),
    )


class _HttpxResponse:
    # An HttpResponse over an httpx response, for a caller's httpx.AsyncBaseTransport.
    __slots__ = ("_chunks", "_response")

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self._chunks: AsyncGenerator[bytes, None] | None = None

    @property
    def status(self) -> int:
        return self._response.status_code

    @property
    def reason(self) -> str:
        return self._response.reason_phrase

    @property
    def headers(self) -> Mapping[str, str]:
        return self._response.headers

    async def read(self) -> bytes:
        return await self._response.aread()

    def chunks(self) -> AsyncIterator[bytes]:
        # httpx annotates aiter_bytes as an AsyncIterator, but it is an async generator.
        self._chunks = cast("AsyncGenerator[bytes, None]", self._response.aiter_bytes())
        return self._chunks

    async def aclose(self) -> None:
        chunks, self._chunks = self._chunks, None
        if chunks is not None:
            await _unwind(chunks)
        await self._response.aclose()


class HttpTransport:
    """Streamable HTTP transport: POST per message, JSON or SSE replies (MCP "Transports").

    Args:
        url: the MCP endpoint.
        headers: custom headers for every request; names starting with ``mcp-`` are dropped.
        timeout: connect, write, read and pool timeouts (default :data:`DEFAULT_TIMEOUT`); the read
            timeout bounds each wait for more of a response, not the whole response.
        transport: an ``httpx.AsyncBaseTransport`` to drive instead of mcpfsm's keep-alive pool
            (the caller then owns closing it).
        sleep: the delay function used before resuming a stream (``trio.sleep``).
        credentials: asked for the ``Authorization`` (and ``DPoP``) headers of every request to the
            endpoint, and only of those (MCP "Authorization", "Access Token Usage").

    Raises:
        TransportError: ``url`` is not an absolute http(s) URL.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Any] = trio.sleep,
        credentials: RequestCredentials | None = None,
    ) -> None:
        """Prepare the transport; no connection is made until the first message."""
        try:
            self._url = httpx.URL(url)
        except (httpx.InvalidURL, TypeError) as exc:
            raise TransportError(f"invalid MCP server URL {url!r}: {exc}") from exc
        if self._url.scheme not in ("http", "https") or not self._url.host:
            raise TransportError(f"invalid MCP server URL {url!r}: expected an absolute http:// or https:// URL")
        timeouts = timeout if isinstance(timeout, httpx.Timeout) else (
            DEFAULT_TIMEOUT if timeout is None else httpx.Timeout(timeout)
        )
        self._extensions = {"timeout": timeouts.as_dict()}
        self._httpx = transport
        self._pool: ConnectionPool | None = None
        self._target = self._url.raw_path.decode("ascii")
        if transport is None:
            self._pool = ConnectionPool(
                scheme=self._url.scheme,
                host=self._url.raw_host.decode("ascii"),
                port=self._url.port or (443 if self._url.scheme == "https" else 80),
                timeouts=_timeouts(timeouts),
                max_connections=_MAX_CONNECTIONS,
                keepalive_expiry=_KEEPALIVE_EXPIRY,
            )
        self._base: list[tuple[str, str]] = [
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "application/json"),
            *filter_custom_headers(headers).items(),
        ]
        self._sleep = sleep
        self._authorization = credentials
        self._closed = False
        self._inbound: InboundHandler | None = None
        self._background = BackgroundTasks()
        self._stream: BackgroundTask | None = None

    @property
    def carries_headers(self) -> bool:
        """True: HTTP carries the per-request headers, so ``x-mcp-header`` annotations apply."""
        return True

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return str(self._url)

    async def open(self, inbound: InboundHandler) -> None:
        """Route notifications and server-to-client requests from event streams to ``inbound``."""
        self._inbound = inbound

    async def send(self, message: str, headers: Mapping[str, str] = NO_HEADERS) -> Reply | None:
        """POST one JSON-RPC message and return its JSON-RPC answer with the HTTP status.

        Returns ``None`` when the server accepts a notification or a response of ours (202).

        Raises:
            TransportError: network failure, timeout, an HTTP error without a JSON-RPC body,
                or a stream that ended before its response.
            ProtocolError: the reply is not JSON-RPC, or has an unexpected content type.
        """
        if self._closed:
            raise TransportError("the HTTP transport is closed")
        request_headers = [*self._base, *headers.items()]
        with _mapped("POST to MCP server"):
            response = await self._request("POST", request_headers, message.encode())
        try:
            return await self._answer(response, message, headers)
        finally:
            with _mapped("closing HTTP response"):
                await response.aclose()

    async def _request(self, method: str, headers: list[tuple[str, str]], body: bytes = b"") -> HttpResponse:
        # Every request to the endpoint, and nothing else, carries the credentials (MCP "Authorization").
        if self._authorization is not None:
            headers = [*headers, *self._authorization.headers(method, str(self._url))]
        if self._pool is not None:
            return await self._pool.request(method, self._target, headers, body)
        assert self._httpx is not None
        request = httpx.Request(method, self._url, headers=headers, content=body or None, extensions=self._extensions)
        return _HttpxResponse(await self._httpx.handle_async_request(request))

    async def _answer(self, response: HttpResponse, message: str, sent: Mapping[str, str]) -> Reply | None:
        status = response.status
        headers = response.headers
        session_id = headers.get("mcp-session-id")
        nonce = headers.get("dpop-nonce")
        media = _media_type(response)
        if 200 <= status < 300:
            if status in (202, 204):
                return None
            if media == "application/json":
                with _mapped("reading HTTP response"):
                    return Reply(await response.read(), status, session_id, dpop_nonce=nonce)
            if media == "text/event-stream":
                answer = await self._read_stream(response, outgoing_request_id(message), sent)
                return Reply(answer, status, session_id, dpop_nonce=nonce)
            raise ProtocolError(
                f"HTTP {status} with Content-Type {media or 'none'!r};"
                " expected application/json or text/event-stream"
            )
        with _mapped("reading HTTP error response"):
            body = await response.read()
        challenges = _field_values(headers, "www-authenticate")
        if media == "application/json" and _is_jsonrpc_error(body):
            return Reply(body, status, session_id, challenges, nonce)
        raise TransportError(
            _status_message(response, body), status=status, www_authenticate=challenges, dpop_nonce=nonce
        )

    async def _read_stream(self, response: HttpResponse, request_id: object, sent: Mapping[str, str]) -> str:
        parser = SseParser()
        answer = await self._consume(response, parser, request_id)
        if answer is not None:
            return answer
        resumes = 0
        # MCP 2025-11-25 "Resumability and Redelivery": a legacy stream cut before its response is
        # resumed; 2026-07-28 streams are not resumable, so a modern request is never reconnected.
        version = _header(sent, "mcp-protocol-version")
        resumable = version is not None and not is_modern(version)
        while resumable and parser.last_event_id and resumes < _MAX_RESUMES:
            resumes += 1
            await self._sleep((parser.retry if parser.retry is not None else _DEFAULT_RETRY_MS) / 1000)
            # A fresh parser: half a line from the cut stream must not be glued onto the new one.
            parser = SseParser(last_event_id=parser.last_event_id, retry=parser.retry)
            answer = await self._resume(parser, request_id, sent)
            if answer is not None:
                return answer
        raise TransportError(
            f"the server closed the event stream before answering request {request_id!r}"
            + (f" (after {resumes} resume attempts)" if resumes else "")
        )

    async def _resume(self, parser: SseParser, request_id: object, sent: Mapping[str, str]) -> str | None:
        headers = [
            ("Accept", "text/event-stream"),
            *((n, v) for n, v in self._base if n.lower() not in ("accept", "content-type")),
            *_session_headers(sent),
            ("Last-Event-ID", parser.last_event_id or ""),
        ]
        with _mapped("resuming the event stream"):
            response = await self._request("GET", headers)
        try:
            if response.status != 200 or _media_type(response) != "text/event-stream":
                with _mapped("reading HTTP error response"):
                    body = await response.read()
                raise TransportError(
                    "could not resume the event stream: " + _status_message(response, body),
                    status=response.status,
                )
            return await self._consume(response, parser, request_id)
        finally:
            with _mapped("closing HTTP response"):
                await response.aclose()

    async def _consume(self, response: HttpResponse, parser: SseParser, request_id: object) -> str | None:
        try:
            with _mapped("reading the event stream"):
                async for chunk in response.chunks():
                    try:
                        events = parser.feed(chunk)
                    except SseError as exc:
                        raise ProtocolError(f"malformed event stream: {exc}") from exc
                    for event in events:
                        answer = await self._dispatch(event, request_id)
                        if answer is not None:
                            return answer
        finally:
            # Ends the stream before a resuming GET; send() closing it again is a no-op.
            with _mapped("closing HTTP response"):
                await response.aclose()
        parser.close()
        return None

    async def _dispatch(self, event: SseEvent, request_id: object) -> str | None:
        if event.event != "message" or not event.data:
            # Priming events (an id and no data) and foreign event types carry no JSON-RPC.
            return None
        message = parse_message(decode_message(event.data))
        if isinstance(message, Response):
            if message.id == request_id:
                return event.data
            logger.warning("ignoring a response for unknown request id {!r} on the event stream", message.id)
            return None
        handler = self._inbound
        if handler is None:
            logger.debug("unhandled {} from the server: {}", type(message).__name__.lower(), message.method)
        else:
            await handler(message)
        return None

    # --- the standalone stream (MCP 2025-11-25 "Listening for Messages from the Server") ---------------

    async def open_stream(self, headers: Mapping[str, str]) -> bool:
        """Open the standalone ``GET`` stream with ``headers`` (session id, version) and keep it.

        Returns once the server has accepted the stream (so a request it sends there right after
        cannot be lost), or with False when it answers 405 (it offers none) or fails (logged at
        WARNING). A background task routes what arrives to the inbound handler. A stream that breaks
        (network, read timeout), or that the server ends after giving event ids, is reopened after the
        server's ``retry`` delay (default 1 s) with ``Last-Event-ID``, until three reopened streams in a
        row bring nothing or the server refuses one; a stream the server ends without ids stays closed.
        A second call replaces the stream; :meth:`end_session` and :meth:`aclose` close it.
        """
        await self._close_stream()
        if self._closed:
            return False
        try:
            response = await self._open_get(headers, None)
        except TransportError as exc:
            logger.warning("could not open the server's event stream: {}", exc)
            return False
        if response is None:
            return False

        def failed(exc: Exception) -> None:
            logger.warning("the server's event stream failed: {!r}", exc)

        async def listen() -> None:
            await self._listen(response, headers)

        self._stream = self._background.start(listen, name="mcpfsm standalone event stream", on_error=failed)
        return True

    async def _close_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.aclose()

    async def _open_get(self, headers: Mapping[str, str], last_event_id: str | None) -> HttpResponse | None:
        request_headers = [
            ("Accept", "text/event-stream"),
            *((n, v) for n, v in self._base if n.lower() not in ("accept", "content-type")),
            *_session_headers(headers),
        ]
        if last_event_id is not None:
            request_headers.append(("Last-Event-ID", last_event_id))
        with _mapped("opening the server's event stream"):
            response = await self._request("GET", request_headers)
        if response.status == 200 and _media_type(response) == "text/event-stream":
            return response
        try:
            with _mapped("reading HTTP error response"):
                body = await response.read()
        finally:
            with _mapped("closing HTTP response"):
                await response.aclose()
        if response.status == 405:
            logger.debug("the server offers no standalone event stream (HTTP 405)")
            return None
        raise TransportError(_status_message(response, body), status=response.status)

    async def _listen(self, response: HttpResponse, headers: Mapping[str, str]) -> None:
        # MCP 2025-11-25 "Resumability and Redelivery": a stream that broke (network, read timeout) is
        # reopened, and so is one the server ended after giving event ids (it expects a resume with
        # Last-Event-ID); one it ended without ids was closed on purpose. Three reopened streams in a row
        # that bring nothing, or any refusal, end the loop: it is bounded.
        parser = SseParser()
        idle = 0
        while True:
            received, broken = await self._follow(response, parser)
            idle = 0 if received else idle + 1
            if not broken and parser.last_event_id is None:
                logger.debug("the server closed its event stream")
                return
            if idle >= _MAX_RESUMES:
                logger.debug("the server's event stream brought nothing {} times in a row; not reopening it", idle)
                return
            await self._sleep((parser.retry if parser.retry is not None else _DEFAULT_RETRY_MS) / 1000)
            parser = SseParser(last_event_id=parser.last_event_id, retry=parser.retry)
            try:
                reopened = await self._open_get(headers, parser.last_event_id)
            except TransportError as exc:
                logger.debug("could not reopen the server's event stream: {}", exc)
                return
            if reopened is None:
                return
            response = reopened

    async def _follow(self, response: HttpResponse, parser: SseParser) -> tuple[bool, bool]:
        # Route every message of one standalone stream until it ends: (any byte arrived, it broke).
        received = broken = False
        try:
            with _mapped("reading the server's event stream"):
                async for chunk in response.chunks():
                    received = True
                    try:
                        events = parser.feed(chunk)
                    except SseError as exc:
                        raise ProtocolError(f"malformed event stream: {exc}") from exc
                    for event in events:
                        await self._dispatch(event, None)
        except McpError as exc:
            logger.debug("the server's event stream broke: {}", exc)
            broken = True
        finally:
            try:
                with _mapped("closing HTTP response"):
                    await response.aclose()
            except TransportError as exc:
                logger.debug("closing the server's event stream: {}", exc)
        return received, broken

    async def end_session(self, headers: Mapping[str, str]) -> None:
        """``DELETE`` the legacy session named in ``headers`` (MCP 2025-11-25; a 405 is fine).

        The standalone stream, if open, is closed first.
        """
        await self._close_stream()
        if self._closed or _header(headers, SESSION_HEADER) is None:
            return
        request_headers = [*self._base, *_session_headers(headers)]
        try:
            with _mapped("DELETE of the MCP session"):
                response = await self._request("DELETE", request_headers)
                await response.aclose()
        except TransportError as exc:
            logger.debug("could not end the MCP session: {}", exc)

    async def aclose(self) -> None:
        """Close the standalone stream and release the connection pool; idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._background.aclose()
        if self._pool is not None:
            await self._pool.aclose()


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


def _header(headers: Mapping[str, str], name: str) -> str | None:
    lowered = name.lower()
    return next((value for key, value in headers.items() if key.lower() == lowered), None)


def _field_values(headers: Mapping[str, str], name: str) -> tuple[str, ...]:
    # Every value of a header field that may repeat: httpx keeps them apart, the pool joins them with ", "
    # (RFC 9110 §5.3: the same field either way).
    if isinstance(headers, httpx.Headers):
        return tuple(headers.get_list(name))
    value = headers.get(name)
    return () if value is None else (value,)


def _session_headers(sent: Mapping[str, str]) -> list[tuple[str, str]]:
    # A GET or a DELETE is no request of a method: of a request's headers only the version and the
    # session apply to it (never Mcp-Method or Mcp-Name).
    kept = ("mcp-protocol-version", SESSION_HEADER.lower())
    return [(name, value) for name, value in sent.items() if name.lower() in kept]


def _is_jsonrpc_error(body: bytes) -> bool:
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(payload, dict) and payload.get("jsonrpc") == "2.0" and isinstance(payload.get("error"), dict)


def _status_message(response: HttpResponse, body: bytes) -> str:
    status = response.status
    reason = response.reason
    text = f"HTTP {status}" + (f" {reason}" if reason else "")
    hint = _STATUS_HINTS.get(status)
    if hint:
        text += f": {hint}"
    snippet = body[:200].decode("utf-8", "replace").strip()
    if snippet:
        text += f" ({snippet})"
    return text
