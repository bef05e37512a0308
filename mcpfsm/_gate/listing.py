"""What the gate reads in the answers that pass through it: listings to learn, signs that they went stale.

:func:`watched` wraps an ASGI ``send`` for one forwarded request, and only when the answer may matter:

- the answer to a ``tools/list``: a JSON body is held until it is whole (at most :data:`MAX_LEARNED` bytes; a
  larger one is passed on unread), read, learned, then passed on; an event stream is passed on event by event,
  and the chunk that completes the event carrying the answer is held until that answer is learned. So a listing
  is learned before its response is passed on, and the client's next request finds it;
- an HTTP 400 whose JSON body is a -32020 error (the upstream disagreed with a header the gate let through: its
  schemas changed): the server's listings are forgotten before the answer goes on;
- any event stream: a ``notifications/tools/list_changed`` in it forgets the server's listings (a byte search on
  each chunk, with the tail of the previous one, so a name cut between two chunks is still found).

Everything else passes through untouched. A body whose ``Content-Encoding`` is gzip or deflate is decoded for
reading only; one that cannot be decoded or parsed is passed on unread.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Final

from .._core.content_coding import BodyTooLarge, ContentDecodeError, ContentDecoder
from .._core.gate import Listing, listing_from_message
from .._core.sse import SseError, SseParser
from .asgi import Message, Send

__all__ = ["MAX_LEARNED", "watched"]

MAX_LEARNED: Final = 16 * 1024 * 1024
"""The largest ``tools/list`` answer (decoded) the gate reads and learns from, in bytes."""

_MAX_REFUSAL: Final = 64 * 1024
_LIST_CHANGED: Final = b"notifications/tools/list_changed"
_HEADER_MISMATCH: Final = -32020

Learn = Callable[[Listing], Awaitable[None]]
Forget = Callable[[], Awaitable[None]]


def watched(
    send: Send,
    *,
    method: str | None,
    request_id: object,
    learn: Learn,
    forget: Forget,
) -> Send:
    """``send`` with the answer to one request read on its way (see the module's description).

    ``method`` is the request's JSON-RPC method (``None`` for a GET stream or a body that is not a request) and
    ``request_id`` its id; ``learn`` (given the page of ``tools/list`` the answer carries) and ``forget`` act on the
    book for this server and caller.
    """
    # Hot path (bench/gate.py): the answer's start says whether it may matter; the usual answer (a tools/call's JSON)
    # does not, and its messages then go straight on: nothing is built for it but this closure.
    watch: _Watch | None = None
    through = False

    async def watching(message: Message) -> None:
        nonlocal watch, through
        if through:
            await send(message)
        elif watch is not None:
            await watch.send(message)
        elif message["type"] != "http.response.start":
            await send(message)
        else:
            mode, coding = _mode(message, method)
            if mode == "through":
                through = True
                await send(message)
                return
            watch = _Watch(send, method, request_id, learn, forget, mode)
            if coding is not None and not watch.decoding(coding):
                watch = None
                through = True
                await send(message)
                return
            await watch.begin(message)

    return watching


def _mode(start: Message, method: str | None) -> tuple[str, str | None]:
    # How an answer is watched, from its start (its status, Content-Type), and its Content-Encoding:
    # "events" an event stream, "hold" a tools/list answer, "refusal" a 400 to a request, else "through".
    status = start.get("status", 200)
    kind, coding = b"", None
    for name, value in start.get("headers", ()):
        lowered = name.lower()
        if lowered == b"content-type":
            kind = value.lower()
        elif lowered == b"content-encoding":
            coding = value.decode("latin-1")
    if b"text/event-stream" in kind:
        return "events", coding
    if method is not None and b"json" in kind:
        if method == "tools/list" and status == 200:
            return "hold", coding
        if status == 400:
            return "refusal", coding
    return "through", coding


class _Watch:
    # One answer that may matter (its mode is not "through"), from its start on.
    __slots__ = (
        "_buffer",
        "_decoder",
        "_forget",
        "_learn",
        "_method",
        "_mode",
        "_outer",
        "_parser",
        "_request_id",
        "_size",
        "_start",
        "_tail",
    )

    def __init__(
        self, outer: Send, method: str | None, request_id: object, learn: Learn, forget: Forget, mode: str
    ) -> None:
        self._outer = outer
        self._method = method
        self._request_id = request_id
        self._learn = learn
        self._forget = forget
        self._mode = mode
        self._start: Message | None = None
        self._buffer: list[bytes] = []
        self._size = 0
        self._tail = b""
        self._decoder: ContentDecoder | None = None
        self._parser: SseParser | None = None

    def decoding(self, coding: str) -> bool:
        """Read the answer through a decoder of ``coding``; ``False`` when there is none (it is passed on unread)."""
        try:
            self._decoder = ContentDecoder(coding, limit=MAX_LEARNED)
        except ContentDecodeError:
            return False
        return True

    async def begin(self, start: Message) -> None:
        """The answer's start: held with a held body, else passed on."""
        if self._mode == "events":
            if self._method == "tools/list" and start.get("status", 200) == 200:
                self._parser = SseParser(max_event_bytes=MAX_LEARNED)
            await self._outer(start)
            return
        self._start = start

    async def send(self, message: Message) -> None:
        if message["type"] != "http.response.body":
            await self._outer(message)
            return
        mode = self._mode
        if mode == "through":
            await self._outer(message)
        elif mode == "events":
            await self._event_chunk(message)
        else:
            await self._held_chunk(message)

    def _decoded(self, piece: bytes) -> bytes | None:
        decoder = self._decoder
        if decoder is None:
            return piece
        try:
            return b"".join(decoder.decode(piece))
        except (ContentDecodeError, BodyTooLarge):
            self._decoder = None
            return None

    async def _held_chunk(self, message: Message) -> None:
        # A tools/list answer (learned) or a 400 (a -32020 forgets), held until whole or over its limit.
        body: bytes = message.get("body", b"")
        self._buffer.append(body)
        self._size += len(body)
        limit = MAX_LEARNED if self._mode == "hold" else _MAX_REFUSAL
        more = message.get("more_body", False)
        if self._size > limit:
            await self._release(more_body=more)
            return
        if more:
            return
        whole = b"".join(self._buffer)
        decoded = self._decoded(whole)
        if decoded is not None:
            await self._read_json(decoded)
        await self._release(more_body=False)

    async def _release(self, *, more_body: bool) -> None:
        start, self._start = self._start, None
        buffered, self._buffer = b"".join(self._buffer), []
        self._mode = "through"
        if start is not None:
            await self._outer(start)
        await self._outer({"type": "http.response.body", "body": buffered, "more_body": more_body})

    async def _read_json(self, body: bytes) -> None:
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return
        await self._message(message)

    async def _message(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if self._mode == "refusal" or "error" in message:
            error = message.get("error")
            if isinstance(error, dict) and error.get("code") == _HEADER_MISMATCH:
                await self._forget()
            return
        if self._method == "tools/list" and message.get("id") == self._request_id:
            listing = listing_from_message(message)
            if listing is not None:
                await self._learn(listing)

    async def _event_chunk(self, message: Message) -> None:
        body: bytes = message.get("body", b"")
        if body:
            decoded = self._decoded(body)
            if decoded is not None:
                if _LIST_CHANGED in self._tail + decoded:
                    await self._forget()
                self._tail = decoded[-len(_LIST_CHANGED) :]
                parser = self._parser
                if parser is not None:
                    try:
                        events = parser.feed(decoded)
                    except SseError:
                        self._parser = None
                        events = []
                    for event in events:
                        try:
                            await self._message(json.loads(event.data))
                        except (ValueError, RecursionError):
                            continue
        await self._outer(message)
