"""Keep-alive HTTP/1.1 connections to one server, over trio sockets (MCP "Transports").

:class:`ConnectionPool` is the default connection layer of :class:`~mcpfsm.HttpTransport` for
``http://`` and ``https://`` endpoints. It does what an MCP client needs and nothing more, with
constant work per request whatever the number of connections:

- idle keep-alive connections wait on a LIFO stack (checkout and return are O(1)); a connection
  goes back only when the response said it may be reused and its whole body was read;
- an idle connection the server has closed (readable while idle) or one idle for longer than
  ``keepalive_expiry`` is discarded at checkout;
- a *resendable* request (one the caller marks read-only) that fails on a *reused* connection
  before any byte of the response arrived is sent once more on a fresh connection: the server
  closing an idle connection while the request was on its way is a normal keep-alive race. Any
  other request is never resent once its first byte was written (RFC 9110 §9.2.2: the server may
  have acted on it, and a tool call may have side effects): the failure raises :class:`NotResent`;
- through a forward proxy (:class:`ProxyRoute`), ``http://`` requests go to the proxy in absolute
  form (RFC 9112 §3.2.2) and ``https://`` ones through a ``CONNECT`` tunnel (RFC 9110 §9.3.6), with
  ``Proxy-Authorization`` when the proxy URL carried credentials;
- each request is one write (head and body together); framing is :mod:`mcpfsm._core.h1`. A plain TCP
  connection (no TLS to the server or the proxy) is driven through its socket directly, with
  ``trio.SocketStream``'s errors and cancellation points: a request that fits in the socket buffer is written
  before the exchange's timeout is armed, and the wait for the answer is the exchange's one pass
  through trio's scheduler (a ``SocketStream`` write is a pass of its own);
- how many connections (the policy, measured with ``bench/call.py --pool-sizes``, README "Benchmarks"):
  up to ``soft_connections`` (8) a request that finds no idle connection opens one; beyond that it waits
  for one to be released, unless every busy connection has been busy for ``slow_seconds`` (1 s: slow tool
  calls or held event streams, not a queue of quick ones), and then it opens another, up to
  ``max_connections`` (100). A quick server is kept busy by a few connections, and more of them only add
  work on both sides (a burst of 1,000 calls through 100 connections took 1.6x the SDK client's wall time
  per call; through 8, 0.7x); slow calls still run side by side up to the hard limit;
- at most ``max_connections`` connections exist at once; further requests wait for one;
- every wait has its timeout (:class:`Timeouts`); an expired one raises :class:`WireTimeout`. On a plain
  connection the timeout is a :class:`~mcpfsm._transports.deadlines.Deadline` on the connection, enforced by
  one watchdog task per trio run, not a cancel scope per request (which cost more than the rest of the
  exchange); TLS connections use cancel scopes. The body of
  a *long-lived* request (a stream meant to stay open and quiet: a subscription, the standalone event
  stream) is the exception: the read timeout bounds the wait for its head, not the silences of its body.

Errors: :class:`WireError` (the pool is closed, or a response was closed before its body was
read), :class:`NotResent`, :class:`TunnelError`, :class:`WireTimeout`,
:class:`~mcpfsm._core.h1.H1Error` (a request that cannot be written, a server that closed the
connection mid-response or broke HTTP/1.1 framing), and ``OSError`` or
``trio.BrokenResourceError`` from the socket. ``http._mapped`` turns them into
:class:`~mcpfsm.TransportError`. Cancellation is never wrapped; a cancelled request closes its
connection.
"""

from __future__ import annotations

import errno
import math
import select
import socket as stdlib_socket
import ssl
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Final, NamedTuple, Protocol

import trio

from .._core.h1 import H1Error, ResponseReader, encode_request, request_prefix
from .deadlines import Deadline

__all__ = [
    "ConnectionPool",
    "HttpResponse",
    "NotResent",
    "ProxyRoute",
    "Timeouts",
    "TunnelError",
    "WireError",
    "WireReply",
    "WireTimeout",
]

_RECEIVE_BYTES: Final = 65536
# A Content-Length body this small that did not come with its head (servers often write the head and the
# body separately) is waited for in the exchange's own timeout block, not in one of its own.
_PREFETCH_BYTES: Final = 16384
# Bytes already in the socket come back at once; this only bounds a TLS record that is incomplete.
_DRAIN_SECONDS: Final = 0.001
# Request heads' prefixes kept per pool (by method, target and fixed headers); cleared when full.
_MAX_PREFIXES: Final = 64


class WireError(Exception):
    """The pool is closed, or a response was used after it was closed."""


class NotResent(WireError):
    """A request that is not resendable failed on a kept-alive connection before any answer (RFC 9110 §9.2.2)."""


class TunnelError(WireError):
    """The proxy did not open a ``CONNECT`` tunnel to the origin."""


class WireTimeout(WireError):
    """A connect, write, read or pool wait took longer than its timeout.

    Attributes:
        kind: ``"ConnectTimeout"``, ``"WriteTimeout"``, ``"ReadTimeout"`` or ``"PoolTimeout"``.
    """

    def __init__(self, kind: str, seconds: float) -> None:
        super().__init__(f"{kind} after {seconds:g} s")
        self.kind = kind


class Timeouts(NamedTuple):
    """Seconds each wait of a request may take; ``math.inf`` waits forever.

    Attributes:
        connect: opening a connection (TCP and TLS handshake).
        write: writing the request.
        read: each wait for more bytes of the response (not the whole response).
        pool: waiting for a connection when ``max_connections`` are busy.
    """

    connect: float = 30.0
    write: float = 30.0
    read: float = 300.0
    pool: float = 30.0


_DEFAULT_TIMEOUTS: Final = Timeouts()


class ProxyRoute(NamedTuple):
    """A forward proxy every connection of a pool goes through.

    Attributes:
        scheme: ``"http"`` or ``"https"`` (TLS to the proxy itself).
        host: the proxy's host name or IP address (without brackets).
        port: the proxy's port.
        authorization: the ``Proxy-Authorization`` value, if the proxy URL carried credentials.
        ssl_context: for an ``https`` proxy.
    """

    scheme: str
    host: str
    port: int
    authorization: str | None = None
    ssl_context: ssl.SSLContext | None = None

    def __repr__(self) -> str:
        """The proxy's address; never its ``Proxy-Authorization`` (a credential)."""
        return (
            f"ProxyRoute(scheme={self.scheme!r}, host={self.host!r}, port={self.port!r}, "
            f"ssl_context={self.ssl_context!r})"
        )


class HttpResponse(Protocol):
    """An HTTP response whose body is read on demand; what ``HttpTransport`` consumes."""

    @property
    def status(self) -> int:
        """The status code."""
        ...

    @property
    def reason(self) -> str:
        """The reason phrase (may be empty)."""
        ...

    @property
    def headers(self) -> Mapping[str, str]:
        """Header fields; lookups by lowercase name."""
        ...

    @property
    def set_cookie(self) -> Sequence[str]:
        """Each ``Set-Cookie`` field value on its own (RFC 6265 §3: they cannot be joined)."""
        ...

    async def read(self) -> bytes:
        """The whole body."""
        ...

    def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, piece by piece."""
        ...

    async def aclose(self) -> None:
        """Release the connection; idempotent. Closing before the body ended closes the connection."""
        ...

    async def abort(self) -> None:
        """Release the connection without reading further and never reuse it; idempotent."""
        ...


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


class _PlainStream:
    # A plain TCP connection (http://, or through an http:// proxy): the two calls of trio.SocketStream the
    # pool makes, with its errors and its cancellation points, in fewer steps. A send that fits in the socket
    # buffer (every request but a huge one) does not wait and is not a schedule point of its own: the wait for
    # the answer that always follows is one. A receive is a schedule point, waiting or not, as trio's is.
    # One request's exchange is then one pass of trio's scheduler instead of two. Its waits are bounded by
    # `deadline` (mcpfsm._transports.deadlines), not by a cancel scope: once it has passed, no wait starts.
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

    async def receive_answer(self, max_bytes: int = _RECEIVE_BYTES) -> bytes:
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

    async def receive_some(self, max_bytes: int = _RECEIVE_BYTES) -> bytes:
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            data = self._socket.recv(max_bytes)
        except BlockingIOError:
            return await self.receive_answer(max_bytes)
        except OSError as exc:
            raise _stream_error(exc) from exc
        await trio.lowlevel.cancel_shielded_checkpoint()
        return data


class _Connection:
    __slots__ = ("_poller", "busy_since", "deadline", "idle_since", "socket", "stream", "writable")

    def __init__(
        self, stream: trio.abc.Stream | _PlainStream, socket: trio.socket.SocketType | stdlib_socket.socket
    ) -> None:
        self.stream = stream
        self.socket = socket
        self.idle_since = 0.0
        self.busy_since = 0.0
        self.writable = True
        # A plain connection's waits are bounded by its Deadline (mcpfsm._transports.deadlines: a cancel scope per
        # request would cost more than the rest of the exchange); any other stream's by a cancel scope.
        self.deadline = stream.deadline if type(stream) is _PlainStream else None
        # One poll object per connection, registered once: the idle check before each reuse is one system call.
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


class _Stale(Exception):
    # A reused connection failed before any byte of the response: the request may be resent.
    pass


class WireReply:
    """A response on a pooled connection; the connection is released when the body has been read.

    Implements :class:`HttpResponse`. Iterate :meth:`chunks` or call :meth:`read` once; always
    :meth:`aclose` (idempotent).
    """

    __slots__ = (
        "_connection", "_deferred", "_pool", "_read_timeout", "_reader", "headers", "reason", "set_cookie", "status"
    )

    def __init__(
        self,
        pool: ConnectionPool,
        connection: _Connection,
        reader: ResponseReader,
        deferred: BaseException | None = None,
        *,
        long_lived: bool = False,
    ) -> None:
        """Wrap the response whose head ``reader`` has read on ``connection``.

        ``deferred``: what the wait for the rest of a small body after the head raised (a timeout, a
        broken connection), raised where the body is read, as if the wait had happened there.
        ``long_lived``: the body may be silent for any time, so no read timeout bounds its waits.
        """
        head = reader.read_head()
        assert head is not None
        self.status = head.status
        """The status code."""
        self.reason = head.reason
        """The reason phrase."""
        self.headers: Mapping[str, str] = head.headers
        """Header fields by lowercase name."""
        self.set_cookie: Sequence[str] = head.set_cookie
        """Each ``Set-Cookie`` field value on its own."""
        self._pool = pool
        self._connection: _Connection | None = connection
        self._reader = reader
        self._deferred = deferred
        self._read_timeout = math.inf if long_lived else pool._timeouts.read

    async def read(self) -> bytes:
        """Read the rest of the body.

        Raises:
            WireError, WireTimeout, H1Error, OSError, trio.BrokenResourceError: as for the request.
        """
        # The loop of __anext__ without the async iterator around it: an answer that came with its head
        # (the usual one) is read without a wait.
        pieces = []
        reader = self._reader
        while True:
            try:
                piece = reader.read_body()
            except BaseException:
                self._discard()
                raise
            if piece is None:
                self._release()
                break
            if piece:
                pieces.append(piece)
                continue
            connection = self._connection
            if connection is None:
                raise WireError("the response was closed before its body was read")
            try:
                reader.receive(await self._receive(connection))
            except BaseException:
                self._discard()
                raise
        if len(pieces) == 1:
            return pieces[0]
        return b"".join(pieces)

    def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives (each piece non-empty); ends with the body."""
        return self

    def __aiter__(self) -> WireReply:
        return self

    async def __anext__(self) -> bytes:
        reader = self._reader
        while True:
            try:
                piece = reader.read_body()
            except BaseException:
                self._discard()
                raise
            if piece:
                return piece
            if piece is None:
                self._release()
                raise StopAsyncIteration
            connection = self._connection
            if connection is None:
                raise WireError("the response was closed before its body was read")
            try:
                reader.receive(await self._receive(connection))
            except BaseException:
                self._discard()
                raise

    async def _receive(self, connection: _Connection) -> bytes | bytearray:
        deferred, self._deferred = self._deferred, None
        if deferred is not None:
            raise deferred
        return await self._pool._receive(connection, self._read_timeout)

    @property
    def released(self) -> bool:
        """True once the connection is back in the pool or closed: :meth:`aclose` has nothing left to do."""
        return self._connection is None

    async def aclose(self) -> None:
        """Release the connection: back to the pool if the body ended cleanly, else closed.

        A body whose end has already arrived (the final chunk of an event stream whose answer was
        just read) still counts as read, so the connection is kept; nothing is waited for.
        """
        connection = self._connection
        if connection is None:
            return
        reader = self._reader
        try:
            while reader.read_body():
                pass
            if not reader.done and connection.readable():
                with trio.CancelScope(deadline=trio.current_time() + _DRAIN_SECONDS):
                    reader.receive(await connection.stream.receive_some(_RECEIVE_BYTES))
                while reader.read_body():
                    pass
        except (H1Error, OSError, trio.BrokenResourceError):
            pass
        except BaseException:
            self._discard()
            raise
        if reader.done:
            self._release()
        else:
            self._discard()

    async def abort(self) -> None:
        """Close the connection at once, whatever is left of the body (a body over a limit)."""
        self._discard()

    def _release(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            self._pool._release(connection, reusable=self._reader.reusable)

    def _discard(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            self._pool._release(connection, reusable=False)


class ConnectionPool:
    """Keep-alive HTTP/1.1 connections to one ``http`` or ``https`` origin; see the module docstring.

    Args:
        scheme: ``"http"`` or ``"https"``.
        host: the server's host name or IP address (without brackets).
        port: the server's port.
        timeouts: the timeout of each wait.
        max_connections: connections open at once, busy or idle.
        soft_connections: connections opened without waiting for a busy one to be released (see the
            module docstring); at most ``max_connections``.
        slow_seconds: how long every busy connection must have been busy before a request opens a
            connection beyond ``soft_connections`` instead of waiting.
        keepalive_expiry: seconds an idle connection is kept.
        ssl_context: for ``https`` (default: ``ssl.create_default_context()``).
        proxy: the forward proxy to go through, if any.

    Raises:
        ValueError: the scheme is neither http nor https, or ``max_connections`` is below 1.
    """

    def __init__(
        self,
        *,
        scheme: str,
        host: str,
        port: int,
        timeouts: Timeouts = _DEFAULT_TIMEOUTS,
        max_connections: int = 100,
        soft_connections: int = 8,
        slow_seconds: float = 1.0,
        keepalive_expiry: float = 30.0,
        ssl_context: ssl.SSLContext | None = None,
        proxy: ProxyRoute | None = None,
    ) -> None:
        """Prepare the pool; connections are opened on demand."""
        if scheme not in ("http", "https"):
            raise ValueError(f"scheme must be http or https, got {scheme!r}")
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {max_connections}")
        self._host = host
        self._port = port
        default_port = 443 if scheme == "https" else 80
        authority = f"[{host}]" if ":" in host else host
        self._authority = authority if port == default_port else f"{authority}:{port}"
        self._tls = (ssl_context or ssl.create_default_context()) if scheme == "https" else None
        self._proxy = proxy
        # RFC 9110 §9.3.6: CONNECT names host and port; RFC 9112 §3.2.2: a proxy gets absolute-form targets.
        self._tunnel_target = f"{authority}:{port}"
        self._absolute_prefix = f"{scheme}://{self._authority}" if proxy is not None and self._tls is None else ""
        self._proxy_headers: tuple[tuple[str, str], ...] = (
            (("Proxy-Authorization", proxy.authorization),) if proxy is not None and proxy.authorization else ()
        )
        self._timeouts = timeouts
        self._max = max_connections
        self._soft = max(1, min(soft_connections, max_connections))
        self._slow = slow_seconds
        self._expiry = keepalive_expiry
        self._idle: list[_Connection] = []
        self._busy: set[_Connection] = set()
        self._connecting = 0
        self._open = 0
        self._waiters = trio.lowlevel.ParkingLot()
        self._closed = False
        self._prefixes: dict[tuple[str, str, int], tuple[tuple[tuple[str, str], ...], str]] = {}

    @property
    def connections(self) -> int:
        """Connections open now, busy or idle."""
        return self._open

    @property
    def idle(self) -> int:
        """Idle keep-alive connections now."""
        return len(self._idle)

    async def request(
        self,
        method: str,
        target: str,
        headers: Sequence[tuple[str, str]],
        body: bytes = b"",
        *,
        resendable: bool = False,
        prefetch: bool = False,
        long_lived: bool = False,
        fixed: tuple[tuple[str, str], ...] = (),
    ) -> WireReply:
        """Send one request and return its response once the head has arrived.

        ``fixed``: headers sent before ``headers``, the same tuple for many requests (the pool checks and
        encodes them once per method and target for as long as that tuple lives).

        The caller reads the body from the reply and must ``aclose()`` it. ``resendable`` says the
        request changes nothing on the server, so a keep-alive race may resend it once. ``prefetch``
        says the caller reads any 2xx body at once: the rest of a small ``Content-Length`` body (16 KiB)
        is then waited for before this returns, with the same read timeout per wait, and a failure of
        that wait is raised where the body is read. ``long_lived`` says the body is a stream that may be
        silent for any time (a subscription, a standalone event stream): the read timeout bounds the wait
        for the head, never a wait for more of the body.

        Raises:
            H1Error: the request cannot be written (nothing was sent), the server closed the
                connection before its response head was complete, or the head is malformed.
            NotResent: a request that is not resendable failed on a kept-alive connection before
                any byte of the answer.
            TunnelError: the proxy refused the ``CONNECT`` tunnel.
            WireError: the pool is closed.
            WireTimeout: a wait took longer than its timeout.
            OSError, trio.BrokenResourceError: connecting or talking to the server failed.
        """
        if self._absolute_prefix:
            target = self._absolute_prefix + target
        if self._proxy_headers and self._tls is None:
            headers = [*headers, *self._proxy_headers]
        # The request line, Host and the fixed headers, checked and joined once per (method, target, fixed).
        key = (method, target, id(fixed))
        known = self._prefixes.get(key)
        if known is None or known[0] is not fixed:
            if len(self._prefixes) >= _MAX_PREFIXES:
                self._prefixes.clear()
            known = self._prefixes[key] = (fixed, request_prefix(method, target, self._authority, fixed))
        data = encode_request(method, target, self._authority, headers, body, prefix=known[1])
        connection, reused = await self._checkout(fresh=False)
        try:
            reader, deferred = await self._exchange(
                connection, data, method, reused=reused, resendable=resendable, prefetch=prefetch
            )
        except _Stale:
            self._release(connection, reusable=False)
            connection, _ = await self._checkout(fresh=True)
            try:
                reader, deferred = await self._exchange(
                    connection, data, method, reused=False, resendable=False, prefetch=prefetch
                )
            except BaseException:
                self._release(connection, reusable=False)
                raise
        except BaseException:
            self._release(connection, reusable=False)
            raise
        return WireReply(self, connection, reader, deferred, long_lived=long_lived)

    async def aclose(self) -> None:
        """Close every idle connection; busy ones are closed when their response is released."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
            self._open -= 1
        self._waiters.unpark_all()

    # --- connections -------------------------------------------------------------------------

    async def _checkout(self, *, fresh: bool) -> tuple[_Connection, bool]:
        deadline: float | None = None
        while True:
            if self._closed:
                raise WireError("the connection pool is closed")
            if not fresh:
                idle = self._idle
                while idle:
                    connection = idle.pop()
                    now = trio.current_time()
                    if now - connection.idle_since <= self._expiry and not connection.readable():
                        connection.busy_since = now
                        self._busy.add(connection)
                        return connection, True
                    connection.close()
                    self._open -= 1
            now = trio.current_time()
            # Beyond the soft limit, only while every busy connection is slow (the youngest included; one
            # being opened is as young as it gets).
            youngest = now if self._connecting else max((c.busy_since for c in self._busy), default=-math.inf)
            stalled_at = youngest + self._slow
            if self._open < self._soft or (self._open < self._max and now >= stalled_at):
                self._open += 1
                self._connecting += 1
                try:
                    connection = await self._connect()
                except BaseException:
                    self._open -= 1
                    self._waiters.unpark()
                    raise
                finally:
                    self._connecting -= 1
                connection.busy_since = trio.current_time()
                self._busy.add(connection)
                return connection, False
            if deadline is None:
                deadline = now + self._timeouts.pool
            # Wake up when a connection is released, when the busy ones would count as slow, or at the timeout.
            wake = min(deadline, stalled_at) if self._open < self._max else deadline
            with trio.CancelScope(deadline=wake) as scope:
                await self._waiters.park()
            if scope.cancelled_caught and wake >= deadline:
                raise WireTimeout("PoolTimeout", self._timeouts.pool)

    async def _connect(self) -> _Connection:
        timeout = self._timeouts.connect
        proxy = self._proxy
        with trio.CancelScope(deadline=trio.current_time() + timeout) as scope:
            host, port = (proxy.host, proxy.port) if proxy is not None else (self._host, self._port)
            tcp = await trio.open_tcp_stream(host, port)
            if self._tls is None and (proxy is None or proxy.scheme == "http"):
                # Plain TCP all the way: the socket is driven directly (_PlainStream), with trio's options set.
                plain = stdlib_socket.socket(fileno=tcp.socket.detach())
                plain.setblocking(False)
                return _Connection(_PlainStream(plain), plain)
            try:
                stream: trio.abc.Stream = tcp
                if proxy is not None and proxy.scheme == "https":
                    stream = await _handshake(stream, proxy.ssl_context or ssl.create_default_context(), proxy.host)
                if self._tls is not None:
                    if proxy is not None:
                        await self._tunnel(stream)
                    stream = await _handshake(stream, self._tls, self._host)
            except BaseException:
                tcp.socket.close()
                raise
            return _Connection(stream, tcp.socket)
        assert scope.cancelled_caught
        raise WireTimeout("ConnectTimeout", timeout)

    async def _tunnel(self, stream: trio.abc.Stream) -> None:
        # RFC 9110 §9.3.6: CONNECT host:port; any 2xx makes the connection a tunnel right after the head.
        target = self._tunnel_target
        await stream.send_all(encode_request("CONNECT", target, target, self._proxy_headers))
        reader = ResponseReader("CONNECT")
        while (head := reader.read_head()) is None:
            reader.receive(await stream.receive_some(_RECEIVE_BYTES))
        if not 200 <= head.status < 300:
            reason = f" {head.reason}" if head.reason else ""
            raise TunnelError(f"the proxy refused to open a tunnel to {target}: HTTP {head.status}{reason}")
        if reader.unread:
            raise TunnelError(f"the proxy sent data before the tunnel to {target} was used")

    def _release(self, connection: _Connection, *, reusable: bool) -> None:
        self._busy.discard(connection)
        # A connection whose deadline fired is closed even when its exchange ended well (deadlines.Deadline.spent).
        spent = connection.deadline is not None and connection.deadline.spent
        if reusable and connection.writable and not spent and not self._closed:
            connection.idle_since = trio.current_time()
            self._idle.append(connection)
        else:
            connection.close()
            self._open -= 1
        if self._waiters:
            self._waiters.unpark()

    # --- one exchange ------------------------------------------------------------------------

    async def _exchange(
        self, connection: _Connection, data: bytes, method: str, *, reused: bool, resendable: bool, prefetch: bool
    ) -> tuple[ResponseReader, BaseException | None]:
        # One timeout block for the write and the wait for the head: its deadline is the write timeout
        # while writing, then the read timeout from the start of each wait for more bytes. The block is the
        # connection's Deadline on a plain connection (mcpfsm._transports.deadlines: a few attribute stores,
        # where a cancel scope cost more than the rest of the exchange), a cancel scope on any other; both end
        # the block when the deadline passes, and the code after it says which timeout it was. On a plain
        # connection the request usually fits in the socket buffer and goes out before the block, without a
        # wait: the block then starts with the read deadline. The rest of a small Content-Length body is
        # waited for in the same block; what that wait raises is handed to the reply, which raises it where
        # the body is read (see WireReply).
        reader = ResponseReader(method)
        stream = connection.stream
        timeouts = self._timeouts
        send_error: BaseException | None = None
        sent = 0
        if type(stream) is _PlainStream:
            await trio.lowlevel.checkpoint_if_cancelled()  # a cancelled request is never sent
            try:
                sent = stream.send_nowait(data)
            except trio.BrokenResourceError as exc:
                send_error = self._send_failed(connection, exc, reused=reused, resendable=resendable)
                sent = len(data)
        writing = sent < len(data)
        waiting = "WriteTimeout" if writing else "ReadTimeout"
        deadline = trio.current_time() + (timeouts.write if writing else timeouts.read)
        timer = connection.deadline
        with trio.CancelScope(deadline=deadline) if timer is None else timer.arm(deadline) as scope:
            if writing:
                try:
                    await stream.send_all(memoryview(data)[sent:] if sent else data)
                except (OSError, trio.BrokenResourceError) as exc:
                    send_error = self._send_failed(connection, exc, reused=reused, resendable=resendable)
                waiting = "ReadTimeout"
                scope.deadline = trio.current_time() + timeouts.read
            try:
                first = stream.receive_answer if type(stream) is _PlainStream else stream.receive_some
                reader.receive(await first(_RECEIVE_BYTES))
                while reader.read_head() is None:
                    scope.deadline = trio.current_time() + timeouts.read
                    reader.receive(await stream.receive_some(_RECEIVE_BYTES))
            except (OSError, trio.BrokenResourceError, H1Error) as exc:
                if reused and not reader.received:
                    if resendable:
                        raise _Stale from exc
                    # RFC 9110 §9.2.2: the server may have read and acted on the request before the
                    # connection broke; only the caller may decide to send it again.
                    raise NotResent(
                        "the server closed a kept-alive connection without answering; the request was not"
                        " resent because the server may have acted on it (RFC 9110 §9.2.2)"
                    ) from exc
                if send_error is not None:
                    raise send_error from None
                raise
            head = reader.read_head()
            if not prefetch or head is None or not 200 <= head.status < 300:
                return reader, None
            waiting = "body"
            try:
                while 0 < reader.missing <= _PREFETCH_BYTES:
                    scope.deadline = trio.current_time() + timeouts.read
                    reader.receive(await stream.receive_some(_RECEIVE_BYTES))
            except (OSError, trio.BrokenResourceError) as exc:
                return reader, exc
            return reader, None
        # Only the deadline can end the block without a return or an exception: an outer cancellation propagates.
        if waiting == "body":
            return reader, WireTimeout("ReadTimeout", timeouts.read)
        raise WireTimeout(waiting, timeouts.write if waiting == "WriteTimeout" else timeouts.read)

    @staticmethod
    def _send_failed(connection: _Connection, exc: BaseException, *, reused: bool, resendable: bool) -> BaseException:
        # What a failed write means: a stale kept-alive connection (resend), or a server that stopped reading.
        if reused and resendable:
            raise _Stale from exc
        # The server may have answered before it stopped reading (413, 431): read the answer,
        # but never write on this connection again.
        connection.writable = False
        return exc

    async def _receive(self, connection: _Connection, timeout: float | None = None) -> bytes | bytearray:
        if timeout is None:
            timeout = self._timeouts.read
        if timeout == math.inf:
            return await connection.stream.receive_some(_RECEIVE_BYTES)
        deadline = trio.current_time() + timeout
        timer = connection.deadline
        with trio.CancelScope(deadline=deadline) if timer is None else timer.arm(deadline):
            return await connection.stream.receive_some(_RECEIVE_BYTES)
        # Only the deadline can end the block without a return: an outer cancellation propagates.
        raise WireTimeout("ReadTimeout", timeout)
