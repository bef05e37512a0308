"""What the pool raises besides ``H1Error`` and socket errors (``http.errors`` maps them to ``TransportError``)."""

from __future__ import annotations

__all__ = ["ConnectError", "NotResent", "Stale", "TunnelError", "WireError", "WireTimeout"]


class WireError(Exception):
    """The pool is closed, or a response was used after it was closed."""


class NotResent(WireError):
    """A request that is not resendable failed on a kept-alive connection before any answer (RFC 9110 §9.2.2)."""


class ConnectError(WireError):
    """Opening a connection failed: TCP (refused, unreachable, a name that does not resolve) or the TLS handshake.

    Its text names where it tried to go (:attr:`url` once the transport has set it, else ``host:port``), the proxy
    if any, and the plain cause: the operating system's words (``Connection refused``, ``Name or service not
    known``), or ``TLS: ...`` (``TLS: the server speaks plain HTTP`` for https against a plain-HTTP port).

    Attributes:
        cause: the plain cause.
        address: ``host:port`` of the origin.
        proxy: the proxy's ``scheme://host:port`` (never its credentials), or ``None``.
        url: the URL of the request, without credentials, when the transport knows it.
    """

    def __init__(self, cause: str, *, address: str, proxy: str | None) -> None:
        super().__init__(cause)
        self.cause = cause
        self.address = address
        self.proxy = proxy
        self.url: str | None = None

    def __str__(self) -> str:
        """``cannot connect to <url> through proxy <proxy>: <cause>``."""
        through = f" through proxy {self.proxy}" if self.proxy else ""
        return f"cannot connect to {self.url or self.address}{through}: {self.cause}"


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


class Stale(Exception):
    """A reused connection failed before any byte of the response: a resendable request may be sent again.

    Never leaves the pool: :meth:`~mcpfsm._transports.pool.connection_pool.ConnectionPool.request` catches it.
    """
