"""A transport that answers from a cassette, in process (``mcpfsm.testing.replay``, docs/testing.md).

:class:`ReplayTransport` hands each message to a :class:`~mcpfsm._core.replay.ReplayBook` and carries its answer
out as the real transport would: the messages of an event stream before the response go to the inbound handler,
the response comes back as a :class:`~mcpfsm._transports.base.Reply` with its status and session id. It opens no
connection. Where the book drops a request or answers without a JSON-RPC body, it raises what the HTTP
transport raises for the same event (a ``TransportError`` carrying the status), as on a kept-alive connection: a
dropped read-only request is sent once more, any other is not (RFC 9110 §9.2.2); a stdio cassette whose request
is dropped behaves as a server process that went away: that request and every later one fail.
"""

from __future__ import annotations

import http
import json
from collections.abc import Mapping
from typing import Any

import trio

from .._core.constants import is_read_only
from .._core.errors import ProtocolError, TransportError
from .._core.jsonrpc import Request, Response, parse_message
from .._core.replay import ANSWER_WAIT, Answer, ReplayBook
from .._log import logger
from .base import NO_HEADERS, InboundHandler, Reply

__all__ = ["ReplayTransport"]


class ReplayTransport:
    """Answers every message from ``book``: a cassette replayed in process.

    Args:
        book: the replay's rules and state (one cassette, its mode and faults).
    """

    def __init__(self, book: ReplayBook) -> None:
        """Prepare the replay; nothing happens until the first message."""
        self.book = book
        """The replay's rules and state."""
        self._http = book.cassette.transport == "http"
        self._inbound: InboundHandler | None = None
        self._closed = False
        self._gone: TransportError | None = None
        self._answered: dict[object, trio.Event] = {}

    def __repr__(self) -> str:
        return f"ReplayTransport({self.book.cassette.source!r}, mode={self.book.mode!r})"

    @property
    def carries_headers(self) -> bool:
        """True for a cassette recorded over HTTP: the client mirrors ``x-mcp-header`` arguments as it did then."""
        return self._http

    @property
    def url(self) -> str | None:
        """The URL the cassette was recorded from (HTTP); nothing is ever sent there."""
        server = self.book.cassette.server
        return server if isinstance(server, str) else None

    async def open(self, inbound: InboundHandler) -> None:
        """Keep ``inbound`` for the messages of recorded event streams."""
        self._inbound = inbound

    async def send(self, message: str, headers: Mapping[str, str] = NO_HEADERS) -> Reply | None:
        """Answer ``message`` from the cassette.

        Raises:
            TransportError: the transport is closed; a fault dropped the request or answered with an HTTP status
                and no JSON-RPC body (``.status`` carries it); or a stdio replay's request was dropped before.
            ProtocolError: ``message`` is not JSON.
        """
        if self._closed:
            raise TransportError("the replay transport is closed")
        if self._gone is not None:
            raise TransportError(str(self._gone))
        try:
            decoded = json.loads(message)
        except ValueError as exc:
            raise ProtocolError(f"the message is not JSON: {exc}") from exc
        if isinstance(decoded, dict) and "method" not in decoded and "id" in decoded:
            # The client's answer to a request of the recorded stream: the stream goes on (_deliver).
            self._answered.setdefault(decoded["id"], trio.Event()).set()
        sent = dict(headers) if self._http else None
        answer = self.book.answer(decoded, sent)
        logger.debug("replay: {} answered by {}", _method(decoded), answer.note)
        if answer.delay:
            await trio.sleep(answer.delay)
        if answer.drop and self._http and is_read_only(_method(decoded)):
            # As the HTTP connection pool does on a kept-alive connection closed before any answer: a read-only
            # request is sent once more, on a fresh connection (RFC 9110 §9.2.2).
            answer = self.book.answer(decoded, sent)
            if answer.delay:
                await trio.sleep(answer.delay)
            if answer.drop:
                raise TransportError("POST to MCP server failed: the server closed the connection without answering")
        elif answer.drop and self._http:
            raise TransportError(
                "POST to MCP server failed: the server closed a kept-alive connection without answering; the request"
                " was not resent because the server may have acted on it (RFC 9110 §9.2.2)"
            )
        if answer.drop:
            self._gone = TransportError(f"the MCP server process closed its stdout before answering ({answer.note})")
            raise TransportError(str(self._gone))
        return await self._carry(answer)

    async def _carry(self, answer: Answer) -> Reply | None:
        messages = answer.messages
        status = answer.status
        headers = {name.lower(): value for name, value in answer.headers}
        if self._http and status is not None and not messages:
            if status < 300:
                return None
            phrase = _phrase(status)
            challenges = tuple(v for n, v in answer.headers if n.lower() == "www-authenticate")
            text = f"HTTP {status}" + (f" {phrase}" if phrase else "")
            raise TransportError(text, status=status, www_authenticate=challenges)
        if not messages:
            return None
        for item in messages[:-1]:
            await self._deliver(item)
        final = messages[-1]
        if not isinstance(final, dict) or "method" in final:
            # A stream that ended before its response (a recording cut short): as the HTTP transport says it.
            await self._deliver(final)
            raise TransportError("the server closed the event stream before answering the request")
        return Reply(json.dumps(final), status, headers.get("mcp-session-id"), decoded=final)

    async def _deliver(self, item: Any) -> None:
        parsed = parse_message(item)
        if isinstance(parsed, Response):
            logger.warning("replay: ignoring a recorded response for another request on the event stream")
            return
        if self._inbound is None:
            return
        await self._inbound(parsed)
        if isinstance(parsed, Request):
            # As the recorded server did: the rest of the stream waits for the client's answer (bounded).
            answered = self._answered.setdefault(parsed.id, trio.Event())
            with trio.move_on_after(ANSWER_WAIT):
                await answered.wait()
            del self._answered[parsed.id]

    async def open_stream(self, headers: Mapping[str, str]) -> bool:
        """No standalone stream: a replay sends nothing unasked (the server answered 405)."""
        return False

    async def end_session(self, headers: Mapping[str, str]) -> None:
        """Forget the session named in ``headers``."""
        session = next((value for name, value in headers.items() if name.lower() == "mcp-session-id"), None)
        if session is not None:
            self.book.close_session(session)

    async def aclose(self) -> None:
        """Stop answering; idempotent."""
        self._closed = True


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _method(message: Any) -> str | None:
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else None
