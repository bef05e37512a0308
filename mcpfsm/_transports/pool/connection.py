"""One connection of the pool (as httpcore's ``connection.py``): opening it, and a plain TCP socket driven directly.

A plain TCP connection (no TLS to the server or the proxy) is driven through its socket directly
(:class:`PlainStream`), with ``trio.SocketStream``'s errors and cancellation points: a request that fits in
the socket buffer is written before the exchange's timeout is armed, and the wait for the answer is the
exchange's one pass through trio's scheduler (a ``SocketStream`` write is a pass of its own). Its waits are
bounded by a :class:`~mcpfsm._transports.deadlines.Deadline`, not a cancel scope; TLS connections use
``trio.SSLStream`` and cancel scopes.
"""

from __future__ import annotations

import errno
import os
import select
import socket as stdlib_socket
import ssl

import trio

from ..deadlines import Deadline
from .errors import ConnectError, TunnelError, WireTimeout
from .http_proxy import ProxyRoute, tunnel
from .interfaces import RECEIVE_BYTES

__all__ = ["Connection", "PlainStream", "connect", "connect_cause"]

# OpenSSL's reasons when the peer answered a ClientHello with something that is no TLS record: a plain-HTTP server
# (it answers "HTTP/1.1 400" to what it reads as a malformed request line).
_PLAIN_HTTP_REASONS = frozenset(
    {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "HTTP_REQUEST"}
)


def connect_cause(exc: BaseException) -> str:
    """The plain cause of a failed connect: the OS's words for each attempt (deduplicated), or ``TLS: ...``.

    trio's ``open_tcp_stream`` wraps the failure of each address it tried (``all attempts to connect ... failed``
    from a group of ``OSError``); an ``SSLStream`` wraps the ``ssl.SSLError`` in ``BrokenResourceError``.
    """
    causes: list[str] = []
    pending: list[BaseException] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ssl.SSLError):
            reason = getattr(current, "reason", None)
            if reason in _PLAIN_HTTP_REASONS:
                return "TLS: the server speaks plain HTTP"
            verify = getattr(current, "verify_message", None)
            return f"TLS: {current}" if not verify else f"TLS: {current} ({verify})"
        if isinstance(current, OSError) and current.strerror:
            # trio words a refused attempt "Error connecting to (host, port): Connection refused"; the errno's
            # own words are the cause (a resolver error has its own numbers, and its strerror is the cause).
            number = current.errno
            plain = current.strerror
            if not isinstance(current, stdlib_socket.gaierror) and isinstance(number, int) and number > 0:
                plain = os.strerror(number)
            if plain not in causes:
                causes.append(plain)
            continue
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return "; ".join(causes) or str(exc) or type(exc).__name__


async def _handshake(stream: trio.abc.Stream, context: ssl.SSLContext, host: str) -> trio.SSLStream[trio.abc.Stream]:
    tls = trio.SSLStream(stream, context, server_hostname=host, https_compatible=True)
    await tls.do_handshake()
    return tls


def _readable(fd: int) -> bool:
    # An idle keep-alive connection has nothing to read unless the server closed it (or broke
    # the protocol): either way it must not carry a request.
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


def _stream_error(exc: OSError) -> trio.ClosedResourceError | trio.BrokenResourceError:
    # What trio.SocketStream raises for the same failure, with the same text.
    if exc.errno == errno.EBADF:
        return trio.ClosedResourceError("this socket was already closed")
    return trio.BrokenResourceError(f"socket connection broken: {exc}")


class PlainStream:
    """A plain TCP connection (http://, or through an http:// proxy), driven through its socket directly.

    The two calls of ``trio.SocketStream`` the pool makes, with its errors and its cancellation points, in fewer
    steps. A send that fits in the socket buffer (every request but a huge one) does not wait and is not a
    schedule point of its own: the wait for the answer that always follows is one. A receive is a schedule
    point, waiting or not, as trio's is. Its waits are bounded by ``deadline``
    (:mod:`mcpfsm._transports.deadlines`), not by a cancel scope: once it has passed, no wait starts.
    """

    # Hot path (bench/instructions.py): one request's exchange is one pass of trio's scheduler instead of two.
    __slots__ = ("_socket", "deadline")

    def __init__(self, socket: stdlib_socket.socket) -> None:
        self._socket = socket
        self.deadline = Deadline(socket)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        socket = self._socket
        view = memoryview(data)
        sent = 0
        try:
            while True:
                try:
                    sent += socket.send(view[sent:] if sent else view)
                except BlockingIOError:
                    self.deadline.check()
                    await trio.lowlevel.wait_writable(socket)
                    continue
                if sent >= len(view):
                    return
        except OSError as exc:
            raise _stream_error(exc) from exc

    def send_nowait(self, data: bytes) -> int:
        # As much of ``data`` as the socket takes without waiting (the caller has passed a cancellation point).
        try:
            return self._socket.send(data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise _stream_error(exc) from exc

    async def receive_answer(self, max_bytes: int = RECEIVE_BYTES) -> bytes:
        # The first receive after a request: the server has yet to answer, so the wait comes first (a receive
        # tried before it would fail for want of bytes, one system call for nothing). A cancellation point.
        socket = self._socket
        try:
            while True:
                self.deadline.check()
                await trio.lowlevel.wait_readable(socket)
                try:
                    return socket.recv(max_bytes)
                except BlockingIOError:
                    pass
        except OSError as exc:
            raise _stream_error(exc) from exc

    async def receive_some(self, max_bytes: int = RECEIVE_BYTES) -> bytes:
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            data = self._socket.recv(max_bytes)
        except BlockingIOError:
            return await self.receive_answer(max_bytes)
        except OSError as exc:
            raise _stream_error(exc) from exc
        await trio.lowlevel.cancel_shielded_checkpoint()
        return data


class Connection:
    """One pooled connection: its stream, its socket and the pool's bookkeeping (busy or idle since when)."""

    __slots__ = ("_poller", "busy_since", "deadline", "idle_since", "socket", "stream", "writable")

    def __init__(
        self, stream: trio.abc.Stream | PlainStream, socket: trio.socket.SocketType | stdlib_socket.socket
    ) -> None:
        self.stream = stream
        self.socket = socket
        self.idle_since = 0.0
        self.busy_since = 0.0
        self.writable = True
        # Hot path (bench/instructions.py): a plain connection's waits are bounded by its Deadline (a cancel scope per
        # request cost more than the rest of the exchange, mcpfsm._transports.deadlines); any other's by a cancel scope.
        self.deadline = stream.deadline if type(stream) is PlainStream else None
        # Hot path (bench/instructions.py): one poll object per connection, registered once, so the idle check
        # before each reuse is one system call.
        self._poller: select.poll | None = None
        if hasattr(select, "poll"):
            self._poller = select.poll()
            self._poller.register(socket.fileno(), select.POLLIN)

    def readable(self) -> bool:
        """Whether the server sent something (or closed the connection) while it was idle."""
        if self._poller is not None:
            return bool(self._poller.poll(0))
        return _readable(self.socket.fileno())

    def close(self) -> None:
        # Forceful and synchronous, without a TLS close_notify: a cancelled request must never
        # block on closing. Only the task that checked the connection out waits on its socket.
        socket = self.socket
        if isinstance(socket, stdlib_socket.socket) and socket.fileno() != -1:
            trio.lowlevel.notify_closing(socket)
        socket.close()


async def connect(
    host: str,
    port: int,
    *,
    tls: ssl.SSLContext | None,
    proxy: ProxyRoute | None,
    tunnel_target: str,
    proxy_headers: tuple[tuple[str, str], ...],
    timeout: float,
) -> Connection:
    """Open a connection to ``host:port`` (TCP, then TLS when ``tls`` is given), through ``proxy`` if any.

    Raises:
        WireTimeout: the connect timeout passed.
        TunnelError: the proxy refused the ``CONNECT`` tunnel.
        ConnectError: connecting or the handshake failed (its text is the plain cause, :func:`connect_cause`).
    """
    try:
        return await _connect(
            host, port, tls=tls, proxy=proxy, tunnel_target=tunnel_target, proxy_headers=proxy_headers, timeout=timeout
        )
    except (TunnelError, WireTimeout):
        raise
    except (OSError, trio.BrokenResourceError) as exc:
        shown = f"[{host}]" if ":" in host else host
        where = None if proxy is None else f"{proxy.scheme}://{proxy.host}:{proxy.port}"
        raise ConnectError(connect_cause(exc), address=f"{shown}:{port}", proxy=where) from exc


async def _connect(
    host: str,
    port: int,
    *,
    tls: ssl.SSLContext | None,
    proxy: ProxyRoute | None,
    tunnel_target: str,
    proxy_headers: tuple[tuple[str, str], ...],
    timeout: float,
) -> Connection:
    with trio.CancelScope(deadline=trio.current_time() + timeout) as scope:
        address, address_port = (proxy.host, proxy.port) if proxy is not None else (host, port)
        tcp = await trio.open_tcp_stream(address, address_port)
        if tls is None and (proxy is None or proxy.scheme == "http"):
            # Plain TCP all the way: the socket is driven directly (PlainStream), with trio's options set.
            plain = stdlib_socket.socket(fileno=tcp.socket.detach())
            plain.setblocking(False)
            return Connection(PlainStream(plain), plain)
        try:
            stream: trio.abc.Stream = tcp
            if proxy is not None and proxy.scheme == "https":
                stream = await _handshake(stream, proxy.ssl_context or ssl.create_default_context(), proxy.host)
            if tls is not None:
                if proxy is not None:
                    await tunnel(stream, tunnel_target, proxy_headers)
                stream = await _handshake(stream, tls, host)
        except BaseException:
            tcp.socket.close()
            raise
        return Connection(stream, tcp.socket)
    assert scope.cancelled_caught
    raise WireTimeout("ConnectTimeout", timeout)
