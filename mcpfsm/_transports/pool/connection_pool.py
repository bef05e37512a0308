"""The keep-alive pool of one origin (as httpcore's ``connection_pool.py``): checkout, release, how many connections.

- idle keep-alive connections wait on a LIFO stack (checkout and return are O(1)); a connection
  goes back only when the response said it may be reused and its whole body was read;
- an idle connection the server has closed (readable while idle) or one idle for longer than
  ``keepalive_expiry`` is discarded at checkout;
- how many connections (the policy, measured with ``bench/call.py --pool-sizes``, docs/benchmarks.md):
  up to ``soft_connections`` (8) a request that finds no idle connection opens one; beyond that it waits
  for one to be released, unless every busy connection has been busy for ``slow_seconds`` (1 s: slow tool
  calls or held event streams, not a queue of quick ones), and then it opens another, up to
  ``max_connections`` (100). A quick server is kept busy by a few connections, and more of them only add
  work on both sides (a burst of 1,000 calls through 100 connections took 1.6x the SDK client's wall time
  per call; through 8, 0.7x); slow calls still run side by side up to the hard limit;
- at most ``max_connections`` connections exist at once; further requests wait for one (the pool timeout).
"""

from __future__ import annotations

import math
import ssl
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final

import trio

from ..._core.h1 import encode_request, request_prefix
from .connection import Connection, connect
from .errors import Stale, WireError, WireTimeout
from .http11 import exchange
from .http_proxy import ProxyRoute
from .interfaces import DEFAULT_TIMEOUTS, Timeouts
from .reply import WireReply

__all__ = ["ConnectionPool"]

# Request heads' prefixes kept per pool (by method, target and fixed headers); cleared when full.
_MAX_PREFIXES: Final = 64


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
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
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
        self.timeouts = timeouts
        """The timeout of each wait."""
        self._max = max_connections
        self._soft = max(1, min(soft_connections, max_connections))
        self._slow = slow_seconds
        self._expiry = keepalive_expiry
        self._idle: list[Connection] = []
        self._busy: set[Connection] = set()
        self._connecting = 0
        self._open = 0
        self._waiters = trio.lowlevel.ParkingLot()
        self._closed = False
        self._prefixes: dict[tuple[str, str, int], tuple[tuple[tuple[str, str], ...], str]] = {}
        self._heads: dict[
            tuple[str, str, int, int],
            tuple[tuple[tuple[str, str], ...], MappingProxyType[str, str], dict[str, str], str],
        ] = {}

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
        headers: Sequence[tuple[str, str]] | Mapping[str, str],
        body: bytes = b"",
        *,
        resendable: bool = False,
        prefetch: bool = False,
        long_lived: bool = False,
        fixed: tuple[tuple[str, str], ...] = (),
    ) -> WireReply:
        """Send one request and return its response once the head has arrived.

        ``fixed``: headers sent before ``headers``, the same tuple for many requests (the pool checks and
        encodes them once per method and target for as long as that tuple lives). ``headers``: pairs, or a
        mapping; a read-only mapping (``types.MappingProxyType``, as a header plan gives its headers) is
        checked and encoded once too, and again only when what it holds changed.

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
            pairs = headers.items() if isinstance(headers, Mapping) else headers
            headers = [*pairs, *self._proxy_headers]
        if type(headers) is MappingProxyType:
            head = self._head(method, target, fixed, headers)
            data = encode_request(method, target, self._authority, (), body, prefix=head)
        else:
            pairs = list(headers.items()) if isinstance(headers, Mapping) else headers
            prefix = self._prefix(method, target, fixed)
            data = encode_request(method, target, self._authority, pairs, body, prefix=prefix)
        connection, reused = await self._checkout(fresh=False)
        try:
            # The checkout has just read the clock (busy_since): the exchange starts then (bench/repeatable.py).
            reader, deferred = await exchange(
                connection,
                data,
                method,
                self.timeouts,
                connection.busy_since,
                reused=reused,
                resendable=resendable,
                prefetch=prefetch,
            )
        except Stale:
            self.release(connection, reusable=False)
            connection, _ = await self._checkout(fresh=True)
            try:
                reader, deferred = await exchange(
                    connection,
                    data,
                    method,
                    self.timeouts,
                    connection.busy_since,
                    reused=False,
                    resendable=False,
                    prefetch=prefetch,
                )
            except BaseException:
                self.release(connection, reusable=False)
                raise
        except BaseException:
            self.release(connection, reusable=False)
            raise
        return WireReply(self, connection, reader, deferred, long_lived=long_lived)

    def _prefix(self, method: str, target: str, fixed: tuple[tuple[str, str], ...]) -> str:
        # Hot path (bench/instructions.py): the request line, Host and the fixed headers, checked and joined once
        # per (method, target, fixed).
        key = (method, target, id(fixed))
        known = self._prefixes.get(key)
        if known is None or known[0] is not fixed:
            if len(self._prefixes) >= _MAX_PREFIXES:
                self._prefixes.clear()
            known = self._prefixes[key] = (fixed, request_prefix(method, target, self._authority, fixed))
        return known[1]

    def _head(
        self, method: str, target: str, fixed: tuple[tuple[str, str], ...], headers: MappingProxyType[str, str]
    ) -> str:
        # Hot path (bench/repeatable.py): the prefix with a message's headers too, checked and joined once while they
        # come as the same read-only mapping (a header plan's) holding the same items.
        key = (method, target, id(fixed), id(headers))
        known = self._heads.get(key)
        if known is None or known[0] is not fixed or known[1] is not headers or known[2] != headers:
            if len(self._heads) >= _MAX_PREFIXES:
                self._heads.clear()
            head = request_prefix(method, target, self._authority, (*fixed, *headers.items()))
            # The tuple and the mapping themselves (their ids stay theirs), what the mapping held, and the head.
            known = self._heads[key] = (fixed, headers, dict(headers), head)
        return known[3]

    async def aclose(self) -> None:
        """Close every idle connection; busy ones are closed when their response is released."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
            self._open -= 1
        self._waiters.unpark_all()

    # --- connections -------------------------------------------------------------------------

    async def _checkout(self, *, fresh: bool) -> tuple[Connection, bool]:
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
                    connection = await connect(
                        self._host,
                        self._port,
                        tls=self._tls,
                        proxy=self._proxy,
                        tunnel_target=self._tunnel_target,
                        proxy_headers=self._proxy_headers,
                        timeout=self.timeouts.connect,
                    )
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
                deadline = now + self.timeouts.pool
            # Wake up when a connection is released, when the busy ones would count as slow, or at the timeout.
            wake = min(deadline, stalled_at) if self._open < self._max else deadline
            with trio.CancelScope(deadline=wake) as scope:
                await self._waiters.park()
            if scope.cancelled_caught and wake >= deadline:
                raise WireTimeout("PoolTimeout", self.timeouts.pool)

    def release(self, connection: Connection, *, reusable: bool) -> None:
        """Take ``connection`` back: idle for reuse when ``reusable`` (and still sound), else closed."""
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
