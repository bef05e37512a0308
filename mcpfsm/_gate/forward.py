"""The proxy's upstream: an ASGI app that sends each request on to one origin through mcpfsm's connection pool.

:class:`Forwarder` is what ``mcpfsm gate --upstream URL`` wraps in :class:`~mcpfsm.gate.HeaderGate`; alone, it is
a plain reverse proxy (``bench/gate.py`` measures the gate against it). It runs under trio (Hypercorn's trio worker)
and forwards through :class:`~mcpfsm._transports.pool.ConnectionPool`, the keep-alive pool of mcpfsm's client:

- the request goes on with the path and query it came with, its header fields less the hop-by-hop ones
  (RFC 9110 §7.6.1) and those the pool frames itself (``Host``, ``Content-Length``, ``Expect``, ``Trailer``);
  ``Mcp-Session-Id`` and ``Last-Event-ID`` go on like every end-to-end field;
- the answer comes back with the upstream's status and header fields (less the hop-by-hop ones; each
  ``Set-Cookie`` on its own), its body passed on piece by piece as it arrives, never held: an event stream is
  streamed through unbuffered;
- when the client goes away (ASGI ``http.disconnect``) the upstream request is closed at once, its connection
  with it, whether the answer's head had come or not;
- an upstream that cannot be reached is answered 502 (504 when it timed out), with a JSON-RPC error body.

A GET (a standalone or resumed event stream) and a ``subscriptions/listen`` request are long-lived: their body may
stay silent for any time, so no read timeout bounds its waits (the pool's ``long_lived``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final
from urllib.parse import urlsplit

import trio

from .._core.constants import INTERNAL_ERROR, INVALID_REQUEST
from .._core.gate import end_to_end
from .._core.gate_edge import FRAMED, field
from .._core.h1 import H1Error, field_problem
from .._core.jsonrpc import encode_error
from .._log import logger
from .._transports.pool import ConnectionPool, Timeouts, WireError, WireTimeout
from .asgi import Message, Receive, Scope, Send, answer

__all__ = ["Forwarder"]

_JSON: Final = ((b"content-type", b"application/json"),)


class Forwarder:
    """An ASGI app that forwards every HTTP request to ``upstream``'s origin (see the module's description).

    Args:
        upstream: the MCP endpoint, ``http://`` or ``https://``; requests keep their own path.
        timeouts: the pool's timeout of each wait (connect, write, each read, a free connection).
        max_connections: connections to the upstream open at once; further requests wait for one.

    Raises:
        ValueError: ``upstream`` is not an absolute http(s) URL.
    """

    def __init__(self, upstream: str, *, timeouts: Timeouts | None = None, max_connections: int = 100) -> None:
        """Check ``upstream``; connections are opened on demand."""
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            shown = upstream.rpartition("@")[2] if "@" in upstream else upstream  # never a user or password
            raise ValueError(f"the upstream must be an absolute http:// or https:// URL, got {shown!r}")
        if parts.username is not None or parts.password is not None:
            # The pool sends no Basic credentials of a URL: refused rather than dropped without a word, and
            # never quoted (a message or a repr of the forwarder would show the password).
            raise ValueError("the upstream URL carries a user or password (user:password@host), which is not sent")
        self.upstream = upstream
        """The upstream MCP endpoint."""
        self.path = parts.path or "/"
        """The upstream endpoint's path: the one the proxy serves."""
        default = 443 if parts.scheme == "https" else 80
        self._pool = ConnectionPool(
            scheme=parts.scheme,
            host=parts.hostname,
            port=parts.port or default,
            timeouts=timeouts or Timeouts(),
            max_connections=max_connections,
        )

    def __repr__(self) -> str:
        return f"Forwarder({self.upstream!r})"

    async def aclose(self) -> None:
        """Close the idle connections; busy ones close when their answer ends."""
        await self._pool.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Forward one request (``http``), or follow the server's lifespan (closing the pool at shutdown)."""
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        await self._forward(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _forward(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _whole_body(receive)
        if body is None:
            return
        fields = [(name, value) for name, value in end_to_end(scope["headers"]) if name.lower() not in FRAMED]
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in fields]
        for name, value in headers:
            problem = field_problem(name, value)
            if problem is not None:
                await answer(send, 400, _error(INVALID_REQUEST, problem), _JSON)
                return
        method: str = scope["method"]
        target = _target(scope)
        long_lived = method == "GET" or field(fields, b"mcp-method") == b"subscriptions/listen"
        # The exchange is cancelled when the client leaves; the answer's last message is sent after the watch has
        # stopped, since sending it may end the connection, and so be what the watch would take for a client leaving.
        exchange = trio.CancelScope()
        last: list[Message] = []
        async with trio.open_nursery() as nursery:

            async def watch() -> None:
                # ASGI: once the body is read, the next message that matters is the client's disconnect.
                while (await receive())["type"] != "http.disconnect":
                    pass
                exchange.cancel()

            nursery.start_soon(watch)
            with exchange:
                last = await self._exchange(method, target, headers, body, send, long_lived=long_lived)
            nursery.cancel_scope.cancel()
        if exchange.cancelled_caught:
            logger.debug("the client left; the upstream request to {} was closed", self.path)
            return
        for message in last:
            await send(message)

    async def _exchange(
        self,
        method: str,
        target: str,
        headers: Sequence[tuple[str, str]],
        body: bytes,
        send: Send,
        *,
        long_lived: bool,
    ) -> list[Message]:
        # Sends the answer's head and body as they come; returns what is left to send (the end, or a whole error).
        try:
            reply = await self._pool.request(
                method, target, headers, body, resendable=method in ("GET", "HEAD"), long_lived=long_lived
            )
        except WireTimeout as exc:
            return _answer(504, _error(INTERNAL_ERROR, f"the upstream did not answer in time ({exc.kind})"))
        except (WireError, H1Error, OSError, trio.BrokenResourceError) as exc:
            return _answer(502, _error(INTERNAL_ERROR, f"the upstream failed: {type(exc).__name__}"))
        try:
            response_fields = end_to_end(
                [
                    (name.encode("latin-1"), value.encode("latin-1"))
                    for name, value in reply.headers.items()
                    if name != "set-cookie"
                ]
            )
            response_fields += [(b"set-cookie", cookie.encode("latin-1")) for cookie in reply.set_cookie]
            await send({"type": "http.response.start", "status": reply.status, "headers": response_fields})
            try:
                async for piece in reply.chunks():
                    await send({"type": "http.response.body", "body": piece, "more_body": True})
            except (WireError, H1Error, OSError, trio.BrokenResourceError):
                # The head is sent: the client sees the body end early, as the upstream's did.
                # The path only: a query may hold a token.
                logger.debug("the upstream's answer on {} broke off", target.partition("?")[0])
        finally:
            await reply.aclose()
        return [{"type": "http.response.body", "body": b"", "more_body": False}]


def _answer(status: int, body: bytes) -> list[Message]:
    return [
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*_JSON, (b"content-length", str(len(body)).encode())],
        },
        {"type": "http.response.body", "body": body, "more_body": False},
    ]


def _error(code: int, message: str) -> bytes:
    # The proxy has not read the request's id: the error's id is null (JSON-RPC 2.0 §5).
    return encode_error(None, code, message).encode("utf-8")


async def _whole_body(receive: Receive) -> bytes | None:
    # The body as the gate replayed it (one message), or read here when the Forwarder runs alone.
    pieces = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        pieces.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(pieces)


def _target(scope: Scope) -> str:
    raw: Any = scope.get("raw_path")
    path = raw.decode("latin-1") if isinstance(raw, bytes) and raw else scope["path"]
    query: bytes = scope.get("query_string", b"")
    return f"{path}?{query.decode('latin-1')}" if query else path
