"""What the pool raises besides ``H1Error`` and socket errors (``http.errors`` maps them to ``TransportError``)."""

from __future__ import annotations

__all__ = ["NotResent", "Stale", "TunnelError", "WireError", "WireTimeout"]


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


class Stale(Exception):
    """A reused connection failed before any byte of the response: a resendable request may be sent again.

    Never leaves the pool: :meth:`~mcpfsm._transports.pool.connection_pool.ConnectionPool.request` catches it.
    """
