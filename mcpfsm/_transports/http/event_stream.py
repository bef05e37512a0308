"""The event stream that answers a POST (``text/event-stream``), read up to the response to the request.

Notifications and server-to-client requests before the response are handed to the inbound handler; a
response for another id is logged and dropped (:meth:`EventStreams.dispatch`, which the standalone stream
uses too). MCP 2025-11-25 "Resumability and Redelivery": a legacy stream cut before its response (ended by
the server, or broken by the network: a reset, a truncated chunk) is resumed with a ``GET`` carrying
``Last-Event-ID``, at most :data:`MAX_RESUMES` times; 2026-07-28 streams are not
resumable, so a modern request is never reconnected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from ..._core.constants import is_modern
from ..._core.content_coding import ContentDecodeError
from ..._core.errors import ProtocolError, TransportError
from ..._core.jsonrpc import Response, decode_message, parse_message
from ..._core.sse import SseError, SseEvent, SseParser, SseTooLarge, reconnection_delay
from ..._log import logger
from ..base import InboundHandler
from ..pool import HttpResponse
from .body import abort, decoder, media_type, read_body
from .endpoint import Endpoint
from .errors import is_break, mapped, raise_mapped, status_message, too_large
from .headers import header_value, session_headers

__all__ = ["MAX_RESUMES", "EventStreams"]

MAX_RESUMES: Final = 3
"""Resumes of a cut stream in a row (a call's, or the standalone stream's that bring nothing)."""


class EventStreams:
    """Reads the event streams of one ``HttpTransport`` and routes what is not the awaited response.

    Args:
        endpoint: where a resuming ``GET`` goes.
        max_event_bytes: the largest event (``max_response_bytes``).
        sleep: the delay function used before resuming a stream.
    """

    __slots__ = ("_endpoint", "_max", "_sleep", "inbound")

    def __init__(self, endpoint: Endpoint, max_event_bytes: int, sleep: Callable[[float], Any]) -> None:
        self._endpoint = endpoint
        self._max = max_event_bytes
        self._sleep = sleep
        self.inbound: InboundHandler | None = None
        """Receives the notifications and server requests of every stream (set by ``HttpTransport.open``)."""

    async def answer(self, response: HttpResponse, request_id: object, sent: Mapping[str, str]) -> str:
        """The response to ``request_id`` on the event stream ``response`` (resumed if legacy and cut).

        ``sent`` are the POST's headers (its protocol version says whether the stream is resumable).

        Raises:
            TransportError: the stream ended before the response, or an event is beyond the limit.
            ProtocolError: the stream or a message in it is malformed.
        """
        # MCP 2025-11-25 "Resumability and Redelivery": a legacy stream cut before its response (ended by the
        # server, or broken by the network) is resumed; 2026-07-28 streams are not resumable, so a modern request
        # is never reconnected.
        version = header_value(sent, "mcp-protocol-version")
        resumable = version is not None and not is_modern(version)
        parser = SseParser(max_event_bytes=self._max)
        answer = await self._consume(response, parser, request_id, resumable)
        if answer is not None:
            return answer
        resumes = 0
        while resumable and parser.last_event_id and resumes < MAX_RESUMES:
            resumes += 1
            await self._sleep(reconnection_delay(parser.retry))
            # A fresh parser: half a line from the cut stream must not be glued onto the new one.
            parser = SseParser(max_event_bytes=self._max, last_event_id=parser.last_event_id, retry=parser.retry)
            answer = await self._resume(parser, request_id, sent)
            if answer is not None:
                return answer
        raise TransportError(
            f"the server closed the event stream before answering request {request_id!r}"
            + (f" (after {resumes} resume attempts)" if resumes else "")
        )

    async def _resume(self, parser: SseParser, request_id: object, sent: Mapping[str, str]) -> str | None:
        headers = {"Accept": "text/event-stream", **dict(session_headers(sent))}
        headers["Last-Event-ID"] = parser.last_event_id or ""
        with mapped("resuming the event stream"):
            response = await self._endpoint.request("GET", headers, resendable=True)
        try:
            if response.status != 200 or media_type(response) != "text/event-stream":
                body = await read_body(response, self._max, what="reading HTTP error response")
                # No status: it answered the GET, not the message. A 401 here is no challenge to the POST (the
                # authorization layer would resend it, and a tool would run twice), nor a 404 an expired session.
                raise TransportError("could not resume the event stream: " + status_message(response, body))
            return await self._consume(response, parser, request_id, True)
        finally:
            with mapped("closing HTTP response"):
                await response.aclose()

    async def _consume(
        self, response: HttpResponse, parser: SseParser, request_id: object, resumable: bool
    ) -> str | None:
        # The response to request_id, or None when the stream ended before it; a stream that breaks (network) after
        # an event id ends the same way when it is resumable (the caller resumes it), else raises TransportError.
        stream = decoder(response, limit=None)
        try:
            try:
                async for chunk in response.chunks():
                    for piece in stream.decode(chunk):
                        answer = await self._feed(parser, piece, request_id)
                        if answer is not None:
                            return answer
            except Exception as exc:
                if not (resumable and parser.last_event_id and is_break(exc)):
                    raise_mapped("reading the event stream", exc)
                    raise
                logger.debug("the event stream broke after event {!r}: {!r}", parser.last_event_id, exc)
                return None
            for piece in stream.finish():
                answer = await self._feed(parser, piece, request_id)
                if answer is not None:
                    return answer
        except SseTooLarge as exc:
            # The connection goes, with whatever the server still sends on it.
            await abort(response)
            raise too_large("an event of the server's stream", self._max) from exc
        except ContentDecodeError as exc:
            raise ProtocolError(str(exc)) from exc
        finally:
            # Ends the stream before a resuming GET; send() closing it again is a no-op.
            with mapped("closing HTTP response"):
                await response.aclose()
        parser.close()
        return None

    async def _feed(self, parser: SseParser, piece: bytes, request_id: object) -> str | None:
        try:
            events = parser.feed(piece)
        except SseTooLarge:
            raise  # _consume closes the connection and says so
        except SseError as exc:
            raise ProtocolError(f"malformed event stream: {exc}") from exc
        for event in events:
            answer = await self.dispatch(event, request_id)
            if answer is not None:
                return answer
        return None

    async def dispatch(self, event: SseEvent, request_id: object) -> str | None:
        """Route one event: the response to ``request_id`` is returned; any other message goes to the handler.

        ``request_id`` is ``None`` on the standalone stream (no response is awaited there).

        Raises:
            ProtocolError: the event's data is not a JSON-RPC message.
        """
        if event.event != "message" or not event.data:
            # Priming events (an id and no data) and foreign event types carry no JSON-RPC.
            return None
        message = parse_message(decode_message(event.data))
        if isinstance(message, Response):
            if message.id == request_id:
                return event.data
            logger.warning("ignoring a response for unknown request id {!r} on the event stream", message.id)
            return None
        handler = self.inbound
        if handler is None:
            logger.debug("unhandled {} from the server: {}", type(message).__name__.lower(), message.method)
        else:
            await handler(message)
        return None
