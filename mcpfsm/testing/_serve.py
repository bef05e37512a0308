"""The replay as a real Streamable HTTP server on 127.0.0.1 (``mcpfsm.testing.serve``, ``mcpfsm replay``).

Built on h11 (the sans-I/O HTTP/1.1 state machine httpx's own stack uses, so no new dependency) over trio's
TCP listeners: the server answers from memory, so what it costs per request is parsing one request and writing
one response, with no ASGI layer, web framework or thread between the socket and the
:class:`~mcpfsm._core.replay.ReplayBook` (``bench/replay.py`` measures it against the official SDK's server).
It speaks HTTP/1.1 with keep-alive, serves the MCP endpoint at ``/mcp`` only (``POST`` answered from the
cassette, ``GET`` 405: a replay sends nothing unasked, ``DELETE`` ends a session it opened), and sends every
answer with its ``Content-Length`` (an event stream's events included: the recorded stream is complete), except
a stream that holds a request of the server's: that one goes out event by event, and waits after the request for
the client's answer (its ``POST``), as the recorded server did.
"""

from __future__ import annotations

import http
import json
import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Final

import h11
import trio

from .._core.constants import INVALID_REQUEST, PARSE_ERROR
from .._core.faults import Fault
from .._core.replay import ANSWER_WAIT, Answer, ReplayBook, server_request_id
from .._log import logger
from .._transports.background import BackgroundTasks
from ._cassettes import book_for

__all__ = ["MCP_PATH", "run_http", "serve"]

MCP_PATH: Final = "/mcp"
"""Where the replay serves the MCP endpoint."""

_HOST: Final = "127.0.0.1"
_RECEIVE: Final = 65536
_MAX_BODY: Final = 16 * 1024 * 1024
_MAX_HEAD: Final = 64 * 1024
_SERVER: Final = (b"server", b"mcpfsm-replay")


@asynccontextmanager
async def serve(
    path: str | os.PathLike[str], *, port: int = 0, mode: str = "any", faults: Sequence[Fault] = ()
) -> AsyncIterator[str]:
    """Serve the cassette at ``path`` over Streamable HTTP on 127.0.0.1 for the block; yields the endpoint's URL.

    ``async with serve("session.jsonl") as url:`` gives ``http://127.0.0.1:PORT/mcp`` (``port=0``: a free port the
    system picks), so any MCP client (the official SDKs, a TypeScript agent, ``curl``) can be tested against the
    recording. It speaks the era the cassette was recorded in; ``mode`` and ``faults`` are those of
    :func:`replay`. Leaving the block closes the listener and every connection.

    Raises:
        CassetteError: the cassette cannot be read, is malformed (the line is named), or was recorded over
            stdio, before anything is served.
        ValueError: ``mode`` or a fault is not valid.
        OSError: the port cannot be bound.
    """
    book = book_for(path, mode=mode, faults=faults, transport="http")
    listeners = await trio.open_tcp_listeners(port, host=_HOST)
    answers = _Answers()
    tasks = BackgroundTasks()
    # A system task, not a nursery around the block: what the block raises reaches the caller as it is, never
    # inside an exception group (the pattern of mcpfsm's transports, _transports/background.py).
    tasks.start(
        partial(trio.serve_listeners, partial(_connection, book, answers), listeners),
        name="mcpfsm replay server",
        on_error=lambda exc: logger.warning("the replay server of {} failed: {!r}", book.cassette.source, exc),
    )
    try:
        yield _url(listeners)
    finally:
        with trio.CancelScope(shield=True):
            await tasks.aclose()
            for listener in listeners:
                await listener.aclose()


async def run_http(book: ReplayBook, *, port: int, ready: Callable[[str], None]) -> None:
    """Serve ``book`` on 127.0.0.1:``port`` until cancelled; ``ready`` gets the endpoint's URL once it listens."""
    listeners = await trio.open_tcp_listeners(port, host=_HOST)
    async with trio.open_nursery() as nursery:
        handler = partial(_connection, book, _Answers())
        await nursery.start(partial(trio.serve_listeners, handler, listeners))
        ready(_url(listeners))


class _Answers:
    """The client's answers to recorded server requests, by request id: a stream waits for its request's answer."""

    def __init__(self) -> None:
        self._events: dict[object, trio.Event] = {}

    def arrived(self, request_id: object) -> None:
        self._events.setdefault(request_id, trio.Event()).set()

    async def wait(self, request_id: object) -> None:
        with trio.move_on_after(ANSWER_WAIT):
            await self._events.setdefault(request_id, trio.Event()).wait()
        self._events.pop(request_id, None)


def _url(listeners: list[trio.SocketListener]) -> str:
    return f"http://{_HOST}:{listeners[0].socket.getsockname()[1]}{MCP_PATH}"


async def _connection(book: ReplayBook, answers: _Answers, stream: trio.SocketStream) -> None:
    connection = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD)
    try:
        while True:
            received = await _request(stream, connection)
            if received is None:
                return
            request, body = received
            if not await _respond(book, answers, stream, connection, request, body):
                return
            if connection.our_state is h11.MUST_CLOSE or connection.their_state is not h11.DONE:
                return
            connection.start_next_cycle()
    except h11.RemoteProtocolError as exc:
        if connection.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            plain = [(b"content-type", b"text/plain")]
            await _send(stream, connection, exc.error_status_hint, plain, str(exc).encode())
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        await stream.aclose()


async def _next_event(stream: trio.SocketStream, connection: h11.Connection) -> Any:
    while True:
        event = connection.next_event()
        if event is not h11.NEED_DATA:
            return event
        connection.receive_data(await stream.receive_some(_RECEIVE))


async def _request(stream: trio.SocketStream, connection: h11.Connection) -> tuple[h11.Request, bytes] | None:
    event = await _next_event(stream, connection)
    if not isinstance(event, h11.Request):
        return None  # the client closed the connection between requests
    chunks: list[bytes] = []
    size = 0
    while True:
        part = await _next_event(stream, connection)
        if isinstance(part, h11.Data):
            size += len(part.data)
            if size > _MAX_BODY:
                raise h11.RemoteProtocolError("request body too large", error_status_hint=413)
            chunks.append(part.data)
        elif isinstance(part, h11.EndOfMessage):
            return event, b"".join(chunks)
        else:
            return None


async def _respond(
    book: ReplayBook,
    answers: _Answers,
    stream: trio.SocketStream,
    connection: h11.Connection,
    request: h11.Request,
    body: bytes,
) -> bool:
    # Whether the connection goes on (False: it was dropped on purpose).
    target = request.target.split(b"?", 1)[0].decode("ascii", "replace")
    if target != MCP_PATH:
        await _send(stream, connection, 404, [(b"content-type", b"text/plain")], b"not found: the MCP endpoint is /mcp")
        return True
    method = request.method
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in reversed(request.headers)}
    if method == b"DELETE":
        session = headers.get("mcp-session-id")
        closed = session is not None and book.close_session(session)
        await _send(stream, connection, 200 if closed else 404, [], b"")
        return True
    if method != b"POST":
        await _send(stream, connection, 405, [(b"allow", b"POST, DELETE")], b"")
        return True
    try:
        message = json.loads(body)
    except ValueError:
        await _json(stream, connection, 400, _error(None, PARSE_ERROR, "Parse error: the body is not JSON"))
        return True
    if not isinstance(message, dict):
        await _json(stream, connection, 400, _error(None, INVALID_REQUEST, "Invalid Request: one JSON-RPC object"))
        return True
    if "method" not in message and "id" in message:
        answers.arrived(message["id"])  # the client's answer to a recorded server request
    answer = book.answer(message, headers)
    logger.debug("replay: {} answered by {}", message.get("method"), answer.note)
    if answer.delay:
        await trio.sleep(answer.delay)
    if answer.drop:
        return False
    await _answer(stream, connection, answer, answers)
    return True


async def _answer(stream: trio.SocketStream, connection: h11.Connection, answer: Answer, answers: _Answers) -> None:
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in answer.headers]
    if answer.event_stream and any(server_request_id(item) is not None for item in answer.messages):
        # The recorded server sent a request on this stream and waited for its answer: so does the replay, the
        # stream sent event by event (chunked).
        head = connection.send(h11.Response(status_code=answer.status or 200, headers=[_SERVER, *headers]))
        await stream.send_all(head or b"")
        for item in answer.messages:
            await stream.send_all(connection.send(h11.Data(data=_event(item))) or b"")
            request_id = server_request_id(item)
            if request_id is not None:
                await answers.wait(request_id)
        await stream.send_all(connection.send(h11.EndOfMessage()) or b"")
        return
    if not answer.messages:
        content = b""
        headers = [(name, value) for name, value in headers if name != b"content-type"]
    elif answer.event_stream:
        content = b"".join(_event(item) for item in answer.messages)
    else:
        content = json.dumps(answer.messages[-1], ensure_ascii=False).encode()
    await _send(stream, connection, answer.status or 200, headers, content)


def _event(item: Any) -> bytes:
    return b"event: message\ndata: " + json.dumps(item, ensure_ascii=False).encode() + b"\n\n"


async def _json(stream: trio.SocketStream, connection: h11.Connection, status: int, body: dict[str, Any]) -> None:
    await _send(stream, connection, status, [(b"content-type", b"application/json")], json.dumps(body).encode())


def _error(request_id: Any, code: int, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}


async def _send(
    stream: trio.SocketStream, connection: h11.Connection, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    head = [_SERVER, *headers, (b"content-length", str(len(body)).encode())]
    reason = _phrase(status)
    parts = [connection.send(h11.Response(status_code=status, headers=head, reason=reason))]
    if body:
        parts.append(connection.send(h11.Data(data=body)))
    parts.append(connection.send(h11.EndOfMessage()))
    data = b"".join(part for part in parts if part)
    await stream.send_all(data)


def _phrase(status: int) -> bytes:
    try:
        return http.HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""
