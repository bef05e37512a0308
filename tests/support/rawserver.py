"""A raw HTTP/1.1 server on 127.0.0.1 for tests that must control every byte a server sends.

Each test scripts the answers, one per request (:class:`Server`), and reads back every connection
and request the server saw (:class:`Seen`). ``serving`` runs it (optionally behind TLS) for the
duration of an ``async with``. Used by the connection-layer tests (``test_wire.py``) and the
real-world HTTP tests (``test_http_*.py``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import socket as pysocket
import ssl
import struct
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import trio

HOST: Final = "127.0.0.1"
JSON_HEADERS: Final = [("Content-Type", "application/json")]


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    """One request the test server read: on which connection (1, 2, …), its head and its body."""

    connection: int
    head: bytes
    body: bytes

    @property
    def request_line(self) -> str:
        """``POST /mcp HTTP/1.1``."""
        return self.head.split(b"\r\n", 1)[0].decode("latin-1")

    @property
    def headers(self) -> dict[str, str]:
        """Header fields by lowercase name, in the order sent (a repeated name keeps its last value)."""
        lines = self.head.decode("latin-1").split("\r\n")[1:]
        pairs = (line.partition(":") for line in lines if line)
        return {name.lower(): value.strip() for name, _, value in pairs}


Answer = Callable[[trio.abc.Stream, Seen], Awaitable[bool]]
"""Answers one request on the stream; returns whether the connection stays open."""


@dataclass
class Server:
    """Answers each request with the next queued answer (then with ``default``) and records everything."""

    answers: deque[Answer] = field(default_factory=deque)
    default: Answer | None = None
    seen: list[Seen] = field(default_factory=list)
    connections: int = 0
    open_now: int = 0
    most_open: int = 0
    closed: trio.Event = field(default_factory=trio.Event)
    port: int = 0

    def queue(self, *answers: Answer) -> None:
        self.answers.extend(answers)

    async def handle(self, stream: trio.abc.Stream) -> None:
        self.connections += 1
        number = self.connections
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        buffer = b""
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                while len(buffer) < length:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    buffer += data
                seen = Seen(connection=number, head=head + b"\r\n\r\n", body=buffer[:length])
                buffer = buffer[length:]
                self.seen.append(seen)
                answer = self.answers.popleft() if self.answers else self.default
                assert answer is not None, f"no answer queued for request {len(self.seen)}"
                if not await answer(stream, seen):
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self.open_now -= 1
            await trio.aclose_forcefully(stream)
            self.closed.set()
            self.closed = trio.Event()

    def bodies(self) -> list[tuple[int, bytes]]:
        return [(seen.connection, seen.body) for seen in self.seen]


def ok(body: bytes = b"{}", *, status: int = 200, headers: list[tuple[str, str]] = JSON_HEADERS) -> Answer:
    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        lines = "".join(f"{n}: {v}\r\n" for n, v in headers)
        await stream.send_all(f"HTTP/1.1 {status} X\r\n{lines}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        return True

    return answer


def echo(delay: float = 0.0) -> Answer:
    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        await trio.sleep(delay)
        return await ok(seen.body)(stream, seen)

    return answer


def raw(data: bytes, *, then: str = "keep") -> Answer:
    """Send ``data``; then ``keep`` the connection, ``close`` it, ``reset`` it (TCP RST), or ``hang``."""

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        if data:
            await stream.send_all(data)
        if then == "hang":
            await trio.sleep_forever()
        if then == "reset":
            reset(stream)
        return then == "keep"

    return answer


def reset(stream: trio.abc.Stream) -> None:
    """Make closing ``stream`` send a TCP RST instead of a FIN (SO_LINGER with a zero timeout)."""
    socket_stream = stream if isinstance(stream, trio.SocketStream) else stream.transport_stream  # type: ignore[attr-defined]
    socket_stream.setsockopt(pysocket.SOL_SOCKET, pysocket.SO_LINGER, struct.pack("ii", 1, 0))


def then_close(inner: Answer) -> Answer:
    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        await inner(stream, seen)
        return False

    return answer


@asynccontextmanager
async def serving(server: Server, *, tls: ssl.SSLContext | None = None) -> AsyncIterator[Server]:
    async def handler(stream: trio.SocketStream) -> None:
        if tls is None:
            await server.handle(stream)
        else:
            await server.handle(trio.SSLStream(stream, tls, server_side=True))

    async with trio.open_nursery() as nursery:
        serve = functools.partial(trio.serve_tcp, handler, 0, host=HOST)
        listeners: list[trio.SocketListener] = await nursery.start(serve)
        server.port = listeners[0].socket.getsockname()[1]
        yield server
        nursery.cancel_scope.cancel()


def tls_for(ca: Any, host: str = HOST) -> ssl.SSLContext:
    """A server-side TLS context with a certificate for ``host`` issued by the trustme ``ca``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(host).configure_cert(context)
    return context


def no_stream() -> Answer:
    """405 to a legacy session's standalone ``GET`` stream: this server offers none."""
    return ok(b"", status=405, headers=[("Allow", "POST, DELETE")])


def rpc(result: object = None, *, status: int = 200, headers: list[tuple[str, str]] = JSON_HEADERS) -> Answer:
    """Answer the JSON-RPC request with ``result`` (default ``{}``) under the request's own id."""

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        request_id = json.loads(seen.body)["id"]
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {} if result is None else result})
        return await ok(body.encode(), status=status, headers=headers)(stream, seen)

    return answer


def rpc_error(code: int, message: str, data: object = None, *, status: int = 400) -> Answer:
    """Answer the JSON-RPC request with an error under the request's own id."""

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        error: dict[str, object] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        body = json.dumps({"jsonrpc": "2.0", "id": json.loads(seen.body)["id"], "error": error})
        return await ok(body.encode(), status=status)(stream, seen)

    return answer


@dataclass
class Tunnel:
    """A forward proxy that only tunnels (``CONNECT host:port``): records each CONNECT head, then pipes bytes.

    ``refuse`` answers every CONNECT with that status instead (407, say).
    """

    heads: list[bytes] = field(default_factory=list)
    refuse: int | None = None
    port: int = 0

    async def handle(self, stream: trio.abc.Stream) -> None:
        buffer = b""
        while b"\r\n\r\n" not in buffer:
            data = await stream.receive_some(65536)
            if not data:
                await stream.aclose()
                return
            buffer += data
        head, _, rest = buffer.partition(b"\r\n\r\n")
        self.heads.append(head + b"\r\n\r\n")
        if self.refuse is not None:
            await stream.send_all(b"HTTP/1.1 %d Refused\r\nContent-Length: 0\r\n\r\n" % self.refuse)
            await stream.aclose()
            return
        host, _, port = head.split(b" ")[1].decode().rpartition(":")
        upstream = await trio.open_tcp_stream(host.strip("[]"), int(port))
        await stream.send_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        if rest:
            await upstream.send_all(rest)

        async def pipe(source: trio.abc.Stream, sink: trio.abc.Stream) -> None:
            try:
                while data := await source.receive_some(65536):
                    await sink.send_all(data)
                if isinstance(sink, trio.abc.HalfCloseableStream):
                    await sink.send_eof()
                else:
                    await sink.aclose()
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(pipe, stream, upstream)
                nursery.start_soon(pipe, upstream, stream)
        finally:
            await trio.aclose_forcefully(upstream)
            await trio.aclose_forcefully(stream)


@asynccontextmanager
async def tunneling(proxy: Tunnel, *, tls: ssl.SSLContext | None = None) -> AsyncIterator[Tunnel]:
    """Run ``proxy`` on 127.0.0.1 (behind TLS, for an ``https://`` proxy) for the duration of the block."""

    async def handler(stream: trio.SocketStream) -> None:
        with contextlib.suppress(trio.BrokenResourceError):  # a client that gave up on the handshake
            await proxy.handle(stream if tls is None else trio.SSLStream(stream, tls, server_side=True))

    async with trio.open_nursery() as nursery:
        serve = functools.partial(trio.serve_tcp, handler, 0, host=HOST)
        listeners: list[trio.SocketListener] = await nursery.start(serve)
        proxy.port = listeners[0].socket.getsockname()[1]
        yield proxy
        nursery.cancel_scope.cancel()
