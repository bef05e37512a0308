"""Where a request goes: mcpfsm's keep-alive pool of its origin (one per origin), through the proxy the rules pick.

:class:`PoolRoute` is the default: one :class:`~mcpfsm._transports.pool.ConnectionPool` per origin (HTTP/1.1
over trio sockets), each made on first use with the proxy chosen by ``proxy=`` or, with ``trust_env``, the
``HTTP(S)_PROXY``/``ALL_PROXY``/``NO_PROXY`` rules (:mod:`~mcpfsm._core.proxies`), and the TLS trust and client
certificate of ``verify``/``cert`` (:mod:`~mcpfsm._transports.tls`). A pool does constant work per request,
where httpx's ``AsyncClient`` and httpcore's pool spend more CPU on each request than the rest of a tool call
together. :class:`~.httpx_route.HttpxRoute` (a caller's httpx transport) answers the same :class:`Route`.
"""

from __future__ import annotations

import math
import ssl
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Final, NamedTuple, Protocol

from ..._core.proxies import ProxyRules
from ..pool import ConnectionPool, HttpResponse, ProxyRoute, Timeouts
from ..tls import CertTypes, VerifyTypes, ssl_context
from .urls import Origin, basic, names_credentials, origin, parse_url

if TYPE_CHECKING:
    import httpx

__all__ = ["Hop", "PoolRoute", "Route", "pool_timeouts"]

_DEFAULT_TIMEOUTS: Final = Timeouts(connect=30.0, write=30.0, read=300.0, pool=30.0)

# The pool policy (mcpfsm._transports.pool.connection_pool, docs/benchmarks.md): 8 connections per origin for
# quick calls, up to 100 while every busy one is slow; all kept alive.
_SOFT_CONNECTIONS: Final = 8
_MAX_CONNECTIONS: Final = 100
_KEEPALIVE_EXPIRY: Final = 30.0


class Hop(NamedTuple):
    """One request on its way to one origin (a redirect makes another): what every :class:`Route` is handed.

    Attributes:
        url: the request's URL; ``origin`` and ``target`` (the request target) are its parts.
        method: the request method.
        fixed: header fields sent first, as given (the connection's own).
        headers: the message's header fields: a mapping as the message came with them, or pairs.
        body: the request body (``b""``: none).
        resendable: a keep-alive race may resend it (RFC 9110 §9.2.2).
        long_lived: the read timeout bounds the wait for the head only (a subscription, the standalone ``GET``).
    """

    # A NamedTuple, as the wire records are (docs/benchmarks.md): one per request, built in one step
    # (bench/repeatable.py).
    url: httpx.URL
    origin: Origin
    target: str
    method: str
    fixed: tuple[tuple[str, str], ...]
    headers: Mapping[str, str] | list[tuple[str, str]]
    body: bytes
    resendable: bool
    long_lived: bool


class Route(Protocol):
    """Sends one request on its way (no redirects, no credentials: the endpoint layer did those)."""

    def request(self, hop: Hop) -> Awaitable[HttpResponse]:
        """Send ``hop`` (its ``fixed`` headers before its ``headers``) and return the response's head.

        Raises:
            ConnectError: the pool could not connect (the endpoint names the URL in it).
        """
        ...

    async def aclose(self) -> None:
        """Release what the route holds; idempotent."""
        ...


def pool_timeouts(timeout: httpx.Timeout | float | None) -> Timeouts:
    """The pool's :class:`~mcpfsm._transports.pool.Timeouts` for ``HttpTransport``'s ``timeout``."""
    if timeout is None:
        return _DEFAULT_TIMEOUTS
    if isinstance(timeout, int | float):
        return Timeouts(connect=timeout, write=timeout, read=timeout, pool=timeout)

    def seconds(value: float | None) -> float:
        return math.inf if value is None else value

    return Timeouts(
        connect=seconds(timeout.connect),
        write=seconds(timeout.write),
        read=seconds(timeout.read),
        pool=seconds(timeout.pool),
    )


class PoolRoute:
    """mcpfsm's keep-alive pools, one per origin; see the module docstring.

    Args:
        endpoint: the MCP endpoint (its pool is made at once, so a bad CA bundle fails here).
        timeout: as ``HttpTransport``'s.
        verify: TLS trust (as httpx).
        cert: a client certificate.
        proxy: a proxy URL for every request, overriding the environment.
        trust_env: read the proxy and certificate variables of the environment.

    Raises:
        TransportError: ``proxy`` is not an absolute http(s) URL, or a CA bundle or certificate cannot be loaded.
    """

    __slots__ = ("_cert", "_proxies", "_timeouts", "_tls", "_trust_env", "_verify", "pools")

    def __init__(
        self,
        endpoint: httpx.URL,
        *,
        timeout: httpx.Timeout | float | None,
        verify: VerifyTypes,
        cert: CertTypes | None,
        proxy: str | None,
        trust_env: bool,
    ) -> None:
        self.pools: dict[Origin, ConnectionPool] = {}
        """The pool of each origin requests went to."""
        self._timeouts = pool_timeouts(timeout)
        self._verify = verify
        self._cert = cert
        self._trust_env = trust_env
        self._tls: ssl.SSLContext | None = None
        if proxy is not None:
            parse_url(proxy, "proxy URL")
            self._proxies = ProxyRules.explicit(proxy)
        else:
            import urllib.request  # here: with http.client and email, it is most of a millisecond

            self._proxies = ProxyRules.from_environment(urllib.request.getproxies() if trust_env else {})
        if verify is not True or cert is not None:
            self._tls = ssl_context(verify, cert, trust_env=trust_env)  # a bad path fails here, not later
        self._pool_for(endpoint)

    def request(self, hop: Hop) -> Awaitable[HttpResponse]:
        """Send one request through the pool of its origin; see :class:`Route`."""
        pool = self.pools.get(hop.origin) or self._pool_for(hop.url)
        # The pool's own coroutine (bench/repeatable.py: no frame of this layer's on the request's chain). The 2xx
        # body of a POST is read at once (JSON), or streamed (an event stream has no Content-Length).
        long_lived = hop.long_lived
        return pool.request(
            hop.method,
            hop.target,
            hop.headers,
            hop.body,
            resendable=hop.resendable,
            prefetch=hop.method == "POST" and not long_lived,
            long_lived=long_lived,
            fixed=hop.fixed,
        )

    async def aclose(self) -> None:
        """Close every pool (idle connections now, busy ones when their response is released)."""
        pools, self.pools = self.pools, {}
        for pool in pools.values():
            await pool.aclose()

    def _pool_for(self, url: httpx.URL) -> ConnectionPool:
        key = origin(url)
        pool = self.pools.get(key)
        if pool is None:
            scheme, host, port = key
            proxy = self._proxies.select(scheme, host, url.port)
            tls = self._context() if scheme == "https" else None
            pool = ConnectionPool(
                scheme=scheme,
                host=host,
                port=port,
                timeouts=self._timeouts,
                max_connections=_MAX_CONNECTIONS,
                soft_connections=_SOFT_CONNECTIONS,
                keepalive_expiry=_KEEPALIVE_EXPIRY,
                ssl_context=tls,
                proxy=None if proxy is None else self._route(proxy),
            )
            self.pools[key] = pool
        return pool

    def _context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl_context(self._verify, self._cert, trust_env=self._trust_env)
        return self._tls

    def _route(self, proxy: str) -> ProxyRoute:
        url = parse_url(proxy, "proxy URL")
        authorization = basic(url.username, url.password) if names_credentials(url) else None
        return ProxyRoute(
            scheme=url.scheme,
            host=url.host,
            port=origin(url)[2],
            authorization=authorization,
            ssl_context=self._context() if url.scheme == "https" else None,
        )
