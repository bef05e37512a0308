"""The standalone ``GET`` stream of a legacy session (MCP 2025-11-25 "Listening for Messages from the Server").

Opened after ``initialize`` and read by a background task that routes what arrives to the inbound handler. It
may be silent for any time (no read timeout bounds it: server requests arrive whenever the server has one). A
stream that breaks (network), or that the server ends after giving event ids, is reopened after the server's
``retry`` delay with ``Last-Event-ID`` ("Resumability and Redelivery"); the loop is bounded, so that no server can
make the client reconnect in a tight loop:

- the delay is never below :data:`MIN_REOPEN_SECONDS` (250 ms), whatever ``retry:`` asks for (``retry: 0``
  included), and never above a minute;
- a stream that carried nothing new (no JSON-RPC message: a priming event with an id and no data is nothing new)
  backs off: each further one in a row doubles the delay (up to the minute), and :data:`MAX_EMPTY_REOPENS` of
  them in a row end the loop (a server that polls, MCP 2025-11-25 "Resumability and Redelivery", is so polled
  for a few minutes of silence); a stream that carries a message starts the count and the delay afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from ..._core.content_coding import ContentDecodeError
from ..._core.errors import McpError, ProtocolError, TransportError
from ..._core.sse import MAX_RECONNECTION_MS, SseError, SseParser, SseTooLarge, reconnection_delay
from ..._log import logger
from ..background import BackgroundTask, BackgroundTasks
from ..pool import HttpResponse
from .body import abort, decoder, media_type, read_body
from .endpoint import Endpoint
from .errors import mapped, status_message, too_large
from .event_stream import EventStreams
from .headers import RequestHeaders, session_headers

__all__ = ["MAX_EMPTY_REOPENS", "MIN_REOPEN_SECONDS", "StandaloneStream", "reopen_delay"]

MIN_REOPEN_SECONDS: Final = 0.25
"""The shortest wait before reopening the standalone stream, whatever the server's ``retry:`` asks for."""

MAX_EMPTY_REOPENS: Final = 10
"""Streams in a row that carried no message after which the standalone stream is not reopened again."""


def reopen_delay(retry: int | None, empty: int) -> float:
    """Seconds to wait before reopening the standalone stream after ``empty`` streams in a row carried no message.

    The server's ``retry`` (milliseconds; 1 s when it gave none), at least :data:`MIN_REOPEN_SECONDS`, doubled for
    each empty stream in a row after the first, at most a minute.
    """
    base = max(reconnection_delay(retry), MIN_REOPEN_SECONDS)
    doubled: float = base * (1 << min(max(empty - 1, 0), 16))
    return min(doubled, MAX_RECONNECTION_MS / 1000)


class StandaloneStream:
    """The one standalone stream of an ``HttpTransport``: opened, reopened when it breaks, closed.

    Args:
        endpoint: where the ``GET`` goes.
        headers: the transport's request headers (what a refusal says about authorization).
        streams: routes each event (:meth:`~.event_stream.EventStreams.dispatch`).
        background: runs the reading task.
        max_event_bytes: the largest event (``max_response_bytes``).
        sleep: the delay function used before reopening the stream.
        scrub: takes the client's secrets out of a refusal in place (``HttpTransport``'s ``scrub``), or ``None``.
    """

    __slots__ = ("_background", "_endpoint", "_headers", "_max", "_sleep", "_streams", "_task", "scrub")

    def __init__(
        self,
        endpoint: Endpoint,
        headers: RequestHeaders,
        streams: EventStreams,
        background: BackgroundTasks,
        max_event_bytes: int,
        sleep: Callable[[float], Any],
        scrub: Callable[[BaseException], None] | None = None,
    ) -> None:
        self._endpoint = endpoint
        self._headers = headers
        self._streams = streams
        self._background = background
        self._max = max_event_bytes
        self._sleep = sleep
        self._task: BackgroundTask | None = None
        self.scrub = scrub
        """Takes the client's secrets out of a refusal in place, or ``None``."""

    async def open(self, headers: Mapping[str, str]) -> bool:
        """Open the stream with ``headers`` (session id, version) and keep reading it in the background.

        Returns once the server has accepted the stream (so a request it sends there right after cannot be
        lost), or with False when it answers 405 (it offers none) or fails (logged at WARNING). Reopened as
        the module docstring says, until ten streams in a row carry no message or the server refuses
        one; a stream the server ends without ids stays closed, and so does one that sends an event beyond
        ``max_response_bytes``.
        """
        await self.close()
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

        self._task = self._background.start(listen, name="mcpfsm standalone event stream", on_error=failed)
        return True

    async def close(self) -> None:
        """Close the stream, if one is open."""
        task, self._task = self._task, None
        if task is not None:
            await task.aclose()

    async def _open_get(self, headers: Mapping[str, str], last_event_id: str | None) -> HttpResponse | None:
        extra = {"Accept": "text/event-stream", **dict(session_headers(headers))}
        if last_event_id is not None:
            extra["Last-Event-ID"] = last_event_id
        with mapped("opening the server's event stream"):
            response = await self._endpoint.request("GET", extra, resendable=True, long_lived=True)
        if response.status == 200 and media_type(response) == "text/event-stream":
            return response
        try:
            body = await read_body(response, self._max, what="reading HTTP error response")
        finally:
            with mapped("closing HTTP response"):
                await response.aclose()
        if response.status == 405:
            logger.debug("the server offers no standalone event stream (HTTP 405)")
            return None
        refused = TransportError(
            status_message(response, body, self._headers.refusal_hint(response.status)), status=response.status
        )
        if self.scrub is not None:
            self.scrub(refused)
        raise refused

    async def _listen(self, response: HttpResponse, headers: Mapping[str, str]) -> None:
        # MCP 2025-11-25 "Resumability and Redelivery": a stream that broke (network; silence is no
        # failure: no read timeout bounds this stream) is reopened, and so is one the server ended after
        # giving event ids (it expects a resume with Last-Event-ID); one it ended without ids was closed on
        # purpose. The loop is bounded (module docstring): a floor on the delay, backoff while streams carry no
        # message, MAX_EMPTY_REOPENS of them in a row; any refusal, or an event beyond max_response_bytes, ends it.
        parser = SseParser(max_event_bytes=self._max)
        empty = 0
        while True:
            try:
                carried, broken = await self._listen_once(response, parser)
            except TransportError as exc:
                logger.warning("the server's event stream is closed and not reopened: {}", exc)
                return
            empty = 0 if carried else empty + 1
            if not broken and parser.last_event_id is None:
                logger.debug("the server closed its event stream")
                return
            if empty >= MAX_EMPTY_REOPENS:
                logger.debug("the server's event stream carried no message {} times in a row; not reopening it", empty)
                return
            await self._sleep(reopen_delay(parser.retry, empty))
            parser = SseParser(max_event_bytes=self._max, last_event_id=parser.last_event_id, retry=parser.retry)
            try:
                reopened = await self._open_get(headers, parser.last_event_id)
            except TransportError as exc:
                logger.debug("could not reopen the server's event stream: {}", exc)
                return
            if reopened is None:
                return
            response = reopened

    async def _listen_once(self, response: HttpResponse, parser: SseParser) -> tuple[bool, bool]:
        # Route every message of one standalone stream until it ends: (a JSON-RPC message arrived, it broke).
        # An event beyond max_response_bytes raises TransportError (the connection is dropped).
        carried = broken = False
        try:
            stream = decoder(response, limit=None)
            with mapped("reading the server's event stream"):
                async for chunk in response.chunks():
                    for piece in stream.decode(chunk):
                        try:
                            events = parser.feed(piece)
                        except SseTooLarge:
                            raise
                        except SseError as exc:
                            raise ProtocolError(f"malformed event stream: {exc}") from exc
                        for event in events:
                            if event.event == "message" and event.data:
                                carried = True
                            await self._streams.dispatch(event, None)
        except SseTooLarge as exc:
            await abort(response)
            raise too_large("an event of the server's event stream", self._max) from exc
        except ContentDecodeError as exc:
            logger.debug("the server's event stream broke: {}", exc)
            broken = True
        except McpError as exc:
            logger.debug("the server's event stream broke: {}", exc)
            broken = True
        finally:
            try:
                with mapped("closing HTTP response"):
                    await response.aclose()
            except TransportError as exc:
                logger.debug("closing the server's event stream: {}", exc)
        return carried, broken
