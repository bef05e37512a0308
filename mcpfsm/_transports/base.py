"""The transport seam: everything a client needs from a connection, declared in one protocol.

A :class:`Transport` carries JSON-RPC messages to one MCP server and hands back the answer to each
request as a :class:`Reply`, with the HTTP status it came with. It knows nothing of protocol eras or
sessions: the client's session layer decides which headers a message carries (the legacy
``Mcp-Session-Id`` among them) and reads the status and session id off the reply. HTTP and stdio
implementations live in ``http.py`` and ``stdio.py``; a custom transport implements the same six
members (MCP 2026-07-28, "Transports": a client may use any transport that carries JSON-RPC).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Final, NamedTuple, Protocol

from .._core.jsonrpc import Notification, Request

__all__ = [
    "NO_HEADERS",
    "SESSION_HEADER",
    "InboundHandler",
    "Reply",
    "RequestCredentials",
    "Transport",
    "filter_custom_headers",
]

NO_HEADERS: Final[Mapping[str, str]] = MappingProxyType({})
"""An empty, immutable header mapping (the default of :meth:`Transport.send`)."""

SESSION_HEADER: Final = "Mcp-Session-Id"
"""The legacy session header (MCP 2025-11-25, "Session Management")."""

InboundHandler = Callable[[Notification | Request], Awaitable[None]]
"""Receives each message the peer sends that is not the awaited response: notifications and
server-to-client requests. Answering a request is the handler's business: the session's handler starts
the answer in a task of its own and returns at once (the answer goes out with :meth:`Transport.send`),
so a transport may await it inline without blocking what it reads."""


class Reply(NamedTuple):
    """The peer's answer to one request.

    Attributes:
        body: the JSON-RPC response text (an error response included).
        status: the HTTP status it arrived with; ``None`` on transports without one (stdio).
        session_id: the ``Mcp-Session-Id`` header of the answer, if it had one (HTTP only).
        www_authenticate: the ``WWW-Authenticate`` field values of an HTTP 4xx answer (RFC 9110 §11.6.1),
            in order (HTTP only); what the authorization layer reads on a 401 or 403.
        dpop_nonce: the answer's ``DPoP-Nonce`` header (RFC 9449 §9), if it had one (HTTP only).
    """

    body: str | bytes
    status: int | None = None
    session_id: str | None = None
    www_authenticate: tuple[str, ...] = ()
    dpop_nonce: str | None = None

    def __repr__(self) -> str:
        """Status, challenges and nonce; never the body or the session id (they may carry secrets)."""
        return (
            f"Reply(status={self.status!r}, www_authenticate={self.www_authenticate!r}, "
            f"dpop_nonce={self.dpop_nonce!r})"
        )


class RequestCredentials(Protocol):
    """The authorization headers of each HTTP request to the MCP endpoint (MCP "Authorization").

    An HTTP transport given credentials asks them once per request it sends to its endpoint (the POST of
    every message, a resuming or standalone ``GET``, the session ``DELETE``) and sends nothing of theirs
    anywhere else. A DPoP proof is bound to the method and URL (RFC 9449 §4.2), hence the arguments.
    """

    def headers(self, method: str, url: str) -> Sequence[tuple[str, str]]:
        """The headers to add (``Authorization``, ``DPoP``); empty when no token is held."""
        ...


class Transport(Protocol):
    """Carries JSON-RPC messages to one MCP server; the whole contract a client relies on."""

    @property
    def carries_headers(self) -> bool:
        """True when per-request headers reach the server (HTTP): ``x-mcp-header`` mirroring applies."""
        ...

    async def open(self, inbound: InboundHandler) -> None:
        """Start the connection (a subprocess, say) and route unsolicited messages to ``inbound``.

        Called once, before the first :meth:`send`.

        Raises:
            TransportError: the connection cannot be started.
        """
        ...

    async def send(self, message: str, headers: Mapping[str, str] = NO_HEADERS) -> Reply | None:
        """Send one JSON-RPC message with its per-request headers.

        For a request, return the peer's response to it (an error response included); for a
        notification or a response of ours, return ``None``. Transports without headers (stdio)
        accept ``headers`` and ignore it.

        Raises:
            TransportError: the message could not be delivered or no answer arrived.
            ProtocolError: the answer is not JSON-RPC.
        """
        ...

    async def open_stream(self, headers: Mapping[str, str]) -> bool:
        """Open the stream on which a legacy server sends requests and notifications unasked, and keep it.

        MCP 2025-11-25 "Listening for Messages from the Server": HTTP opens the standalone ``GET``
        (``Accept: text/event-stream`` and ``headers``: the session id and version) and routes what
        arrives on it to the inbound handler until :meth:`end_session` or :meth:`aclose`; a second call
        replaces the first stream (a renewed session). Returns False when there is none: the server
        answered 405, or the transport needs none (stdio, whose inbound messages flow anyway). Never
        raises a :class:`~mcpfsm.McpError`: the session works without the stream.
        """
        ...

    async def end_session(self, headers: Mapping[str, str]) -> None:
        """Tell the server a legacy session is over (HTTP: ``DELETE`` with ``headers``); best effort.

        Transports without sessions do nothing. Never raises a :class:`~mcpfsm.McpError`.
        """
        ...

    async def aclose(self) -> None:
        """Release the connection; idempotent."""
        ...


def filter_custom_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Drop caller headers whose name starts with ``mcp-`` (any case): they are protocol-owned (SEP-2243)."""
    if not headers:
        return {}
    return {name: value for name, value in headers.items() if not name.lower().startswith("mcp-")}
