"""The recorder: a transport wrapper that writes every exchange it carries to a cassette (docs/testing.md).

``Client(..., record=path)`` puts a :class:`RecordingTransport` around the client's transport; without ``record=``
there is none, and nothing on the request path changes. Each request (or notification) the session sends is
recorded once its answer is complete: the message, the headers a cassette keeps (:mod:`mcpfsm._core.cassette`),
the status, and every message the server sent in answer, those of an event stream first. On HTTP a message the
server sends on a request's own event stream reaches the inbound handler in the task that sent the request, so
a context variable ties it to its request; on stdio (one reader task) a progress notification goes with the
request its ``progressToken`` names, anything else with the request sent last that is still open. Messages on
a legacy session's standalone stream belong to no request and are not recorded; neither are the client's
answers to the server's requests, nor exchanges answered 401 or 403 (a replay needs no authorization).

The file: created afresh (never appended to; a file already there is emptied) with mode ``0o600`` (a session's
results may be private, as an audit log's events are) when the transport opens; the header line is
written once an exchange settles the protocol, before the first exchange (those that came earlier wait in
memory); then one line per exchange, each handed to the kernel in one ``write(2)`` as it completes. Every string
goes through the client's redaction first (its held tokens, secrets and DPoP proofs become ``[redacted]``).
"""

from __future__ import annotations

import contextvars
import datetime
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from .._core.cassette import (
    REQUEST_HEADERS,
    encode_line,
    exchange_record,
    header_record,
    recorded_headers,
    settled_protocol,
    without_answers,
)
from .._core.errors import TransportError
from .._core.jsonrpc import Notification, Request
from .base import NO_HEADERS, InboundHandler, OutgoingMessage, Reply, StreamedReply, Transport

__all__ = ["RecordingTransport"]

_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
_UNRECORDED: Final = frozenset({401, 403})


class _Open:
    """One request on its way: what the server sent on its stream so far."""

    __slots__ = ("done", "messages", "request_id", "token")

    def __init__(self, request_id: object, token: object) -> None:
        self.request_id = request_id
        self.token = token
        self.messages: list[dict[str, Any]] = []
        self.done = False


_CURRENT: contextvars.ContextVar[_Open | None] = contextvars.ContextVar("mcpfsm_recording", default=None)


class RecordingTransport:
    """Carries messages through ``inner`` and writes each exchange to the cassette at ``path``.

    Args:
        inner: the transport that talks to the server.
        path: the cassette to write (replaced if it exists).
        server: what the header line names: the URL (HTTP) or the command (stdio).
        redaction: returns the client's redaction of a text at the moment of writing (``None``: no secrets held).
        answers: write the user's answers of a resend as given (the client's ``audit_answers=True``); by default
            each is written as ``[answer]`` (:func:`~mcpfsm._core.cassette.without_answers`).
        clock: wall-clock seconds, for ``recorded_at``.
        timer: monotonic seconds, for ``elapsed_ms``.
    """

    def __init__(
        self,
        inner: Transport,
        path: str | os.PathLike[str],
        *,
        server: str | Sequence[str],
        redaction: Callable[[], Callable[[str], str] | None] | None = None,
        answers: bool = False,
        clock: Callable[[], float] = time.time,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        """Wrap ``inner``; the file is created when the transport opens."""
        self.inner = inner
        """The transport that talks to the server."""
        self._answers = answers
        self.path = os.fspath(path)
        """The cassette's path, as given."""
        self._server = server if isinstance(server, str) else list(server)
        self._redaction = redaction
        self._clock = clock
        self._timer = timer
        self._fd: int | None = None
        self._protocol: str | None = None
        self._recorded_at = ""
        self._waiting: list[dict[str, Any]] = []
        self._seq = 0
        self._open: list[_Open] = []

    def __repr__(self) -> str:
        return f"RecordingTransport({self.inner!r}, {self.path!r})"

    @property
    def carries_headers(self) -> bool:
        """What the wrapped transport says."""
        return self.inner.carries_headers

    @property
    def url(self) -> str | None:
        """The wrapped transport's endpoint, when it has one (HTTP)."""
        url = getattr(self.inner, "url", None)
        return url if isinstance(url, str) else None

    async def open(self, inbound: InboundHandler) -> None:
        """Create the cassette afresh, then open the wrapped transport.

        Raises:
            OSError: the cassette cannot be created (the message names it).
            TransportError: as the wrapped transport's ``open``.
        """
        if self._fd is None:
            self._fd = os.open(self.path, _FLAGS, 0o600)
            if hasattr(os, "fchmod"):
                os.fchmod(self._fd, 0o600)  # a replaced cassette is a new one, with a new one's mode
            self._recorded_at = datetime.datetime.fromtimestamp(self._clock(), datetime.UTC).isoformat(
                timespec="milliseconds"
            ).replace("+00:00", "Z")

        async def recorded(message: Notification | Request) -> None:
            current = _CURRENT.get()
            if current is None or current.done:
                current = None if self.inner.carries_headers else self._owner(message)
            if current is not None:
                current.messages.append(_encoded(message))
            await inbound(message)

        await self.inner.open(recorded)

    def _owner(self, message: Notification | Request) -> _Open | None:
        # stdio: a progress notification names its request; anything else goes with the request sent last.
        if message.method == "notifications/progress":
            token = message.params.get("progressToken")
            for current in self._open:
                if token is not None and token in (current.token, current.request_id):
                    return current
        return self._open[-1] if self._open else None

    async def send(self, message: str, headers: Mapping[str, str] = NO_HEADERS) -> Reply | None:
        """Send through the wrapped transport and record the exchange once its answer is complete.

        Raises:
            OSError: the cassette could not be written.
            TransportError, ProtocolError: as the wrapped transport's ``send`` (the exchange is recorded first when
                the server answered with an HTTP status).
        """
        outgoing = OutgoingMessage.of(message)
        if outgoing.method is None:
            return await self.inner.send(message, headers)  # an answer of ours to a server request: not recorded
        decoded = json.loads(outgoing.text)
        current = _Open(outgoing.request_id, _progress_token(decoded))
        if outgoing.request_id is not None:
            self._open.append(current)
        token = _CURRENT.set(current)
        started = self._timer()
        try:
            reply = await self.inner.send(message, headers)
        except TransportError as exc:
            current.done = True
            if exc.status is not None and exc.status not in _UNRECORDED:
                challenges = ", ".join(exc.www_authenticate)
                answer = {"WWW-Authenticate": challenges} if challenges else {}
                self._record(decoded, headers, exc.status, answer, [], started)
            raise
        finally:
            current.done = True
            if current in self._open:
                self._open.remove(current)
            _CURRENT.reset(token)
        if reply is not None and reply.status in _UNRECORDED:
            return reply
        messages: list[Any] = list(current.messages)
        response_headers: dict[str, str] = {}
        status = 202
        if reply is not None:
            status = reply.status if reply.status is not None else 200
            body = reply.decoded if reply.decoded is not None else json.loads(reply.body)
            messages.append(body)
            streamed = isinstance(reply, StreamedReply)
            response_headers["Content-Type"] = "text/event-stream" if streamed else "application/json"
            if reply.session_id is not None:
                response_headers["Mcp-Session-Id"] = reply.session_id
            if reply.www_authenticate:
                response_headers["WWW-Authenticate"] = ", ".join(reply.www_authenticate)
        self._record(decoded, headers, status, response_headers, messages, started)
        return reply

    def _record(
        self,
        message: Any,
        headers: Mapping[str, str],
        status: int,
        response_headers: Mapping[str, str],
        messages: list[Any],
        started: float,
    ) -> None:
        http = self.inner.carries_headers
        request_headers = recorded_headers(headers, REQUEST_HEADERS) if http else None
        self._seq += 1
        record = exchange_record(
            seq=self._seq,
            message=message if self._answers else without_answers(message),
            request_headers=request_headers,
            status=status if http else None,
            response_headers=response_headers if http else None,
            messages=messages,
            elapsed_ms=(self._timer() - started) * 1000,
        )
        if self._protocol is None:
            self._protocol = settled_protocol(message, request_headers, messages)
            if self._protocol is None:
                self._waiting.append(record)
                return
            self._write_header()
        self._write(record)

    def _write_header(self) -> None:
        self._write(header_record(recorded_at=self._recorded_at, server=self._server, protocol=self._protocol))
        waiting, self._waiting = self._waiting, []
        for record in waiting:
            self._write(record)

    def _write(self, record: dict[str, Any]) -> None:
        if self._fd is None:
            raise OSError(f"the cassette {self.path!r} is closed")
        redact = None if self._redaction is None else self._redaction()
        line = encode_line(record, redact).encode("utf-8")
        written = os.write(self._fd, line)
        while written < len(line):  # a short write (a signal, a nearly full disk): finish the line
            written += os.write(self._fd, line[written:])

    async def open_stream(self, headers: Mapping[str, str]) -> bool:
        """Open the wrapped transport's standalone stream (what arrives there is not recorded)."""
        return await self.inner.open_stream(headers)

    async def end_session(self, headers: Mapping[str, str]) -> None:
        """End the session on the wrapped transport."""
        await self.inner.end_session(headers)

    async def aclose(self) -> None:
        """Close the wrapped transport, then the cassette (exchanges of a session that settled no protocol last)."""
        try:
            await self.inner.aclose()
        finally:
            if self._fd is not None:
                try:
                    if self._waiting:
                        self._write_header()
                finally:
                    fd, self._fd = self._fd, None
                    os.close(fd)


def _encoded(message: Notification | Request) -> dict[str, Any]:
    encoded: dict[str, Any] = {"jsonrpc": "2.0"}
    if isinstance(message, Request):
        encoded["id"] = message.id
    encoded["method"] = message.method
    if message.params:
        encoded["params"] = message.params
    return encoded


def _progress_token(message: Any) -> object:
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("progressToken") if isinstance(meta, dict) else None
