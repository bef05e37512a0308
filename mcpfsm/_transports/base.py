"""The transport seam: everything a client needs from a connection, declared in one protocol.

A :class:`Transport` carries JSON-RPC messages to one MCP server and hands back the answer to each
request as a :class:`Reply`, with the HTTP status it came with. It knows nothing of protocol eras or
sessions: the client's session layer decides which headers a message carries (the legacy
``Mcp-Session-Id`` among them) and reads the status and session id off the reply. HTTP and stdio
implementations live in ``http/`` and ``stdio.py``; a custom transport implements the same six
members (MCP 2026-07-28, "Transports": a client may use any transport that carries JSON-RPC).

The session knows more of each message than its text: its request id, its method and whether its answer is a
long-lived stream. A transport that also has ``async send_message(message: OutgoingMessage, headers) -> Reply |
None`` (mcpfsm's HTTP and stdio transports: the same trip as ``send``, raising the same errors) is handed an
:class:`OutgoingMessage`, the text with that metadata beside it, and need not read them out of the text again;
any other transport gets the text alone, through the ``send(message: str, headers)`` of the contract.
"""

# No `from __future__ import annotations` here: Reply's fields are read as the objects they are, not compiled from
# their text as a NamedTuple of string annotations has typing do at `import mcpfsm` (bench/startup.py).

from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, NamedTuple, Protocol

from .._core.constants import is_long_lived
from .._core.jsonrpc import Notification, Request, outgoing_request

__all__ = [
    "NO_HEADERS",
    "SESSION_HEADER",
    "InboundHandler",
    "OutgoingMessage",
    "Reply",
    "RequestCredentials",
    "StreamedReply",
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


class OutgoingMessage:
    """A JSON-RPC message on its way out: its text, and beside it what its sender knows of it.

    The session makes one for every message it sends (``OutgoingMessage(text, 7, "tools/call")``) and hands it
    to a transport with ``send_message``, which matches the answer by :attr:`request_id` and learns the method without
    reading the JSON text again (a transport's ``send_message``, see the module docstring). A value: nothing
    changes it once it is made.

    Attributes:
        text: the JSON-RPC message.
        request_id: the id of a request; ``None`` for a notification or a response of ours.
        method: the method of a request or a notification; ``None`` for a response of ours.
        long_lived: the answer is a stream expected to be silent for long (``subscriptions/listen``).
    """

    # Hot path (bench/repeatable.py): one per request; plain slots, no str copy and no instance dict.
    __slots__ = ("long_lived", "method", "request_id", "text")

    def __init__(
        self, text: str, request_id: int | str | None = None, method: str | None = None, long_lived: bool = False
    ) -> None:
        """The message ``text`` with what its sender knows of it."""
        self.text = text
        self.request_id = request_id
        self.method = method
        self.long_lived = long_lived

    @classmethod
    def of(cls, text: str) -> "OutgoingMessage":
        """The message ``text`` with its request id, method and long-lived flag read out of the JSON text.

        For a message a caller handed to a transport's ``send`` directly (not through a session).
        """
        request_id, method = outgoing_request(text)
        return cls(text, request_id, method, is_long_lived(method))

    def __eq__(self, other: object) -> bool:
        """Equal when the text and every item of metadata are."""
        if not isinstance(other, OutgoingMessage):
            return NotImplemented
        return (self.text, self.request_id, self.method, self.long_lived) == (
            other.text,
            other.request_id,
            other.method,
            other.long_lived,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        """The id, method and flag; never the text (it may carry arguments or secrets)."""
        return (
            f"OutgoingMessage(request_id={self.request_id!r}, method={self.method!r}, long_lived={self.long_lived!r})"
        )


class Reply(NamedTuple):
    """The peer's answer to one request.

    Attributes:
        body: the JSON-RPC response text (an error response included).
        status: the HTTP status it arrived with; ``None`` on transports without one (stdio).
        session_id: the ``Mcp-Session-Id`` header of the answer, if it had one (HTTP only).
        www_authenticate: the ``WWW-Authenticate`` field values of an HTTP 4xx answer (RFC 9110 §11.6.1),
            in order (HTTP only); what the authorization layer reads on a 401 or 403.
        dpop_nonce: the answer's ``DPoP-Nonce`` header (RFC 9449 §9), if it had one (HTTP only).
        decoded: the body decoded as JSON, when the transport decoded it already (to match the answer to its
            request by id); ``None`` otherwise, and the session decodes :attr:`body`.
    """

    body: str | bytes
    status: int | None = None
    session_id: str | None = None
    www_authenticate: tuple[str, ...] = ()
    dpop_nonce: str | None = None
    decoded: Any = None

    def __repr__(self) -> str:
        """Status, challenges and nonce; never the body or the session id (they may carry secrets)."""
        return (
            f"Reply(status={self.status!r}, www_authenticate={self.www_authenticate!r}, dpop_nonce={self.dpop_nonce!r})"
        )


class StreamedReply(Reply):
    """A :class:`Reply` that came as an event stream (``text/event-stream``) rather than one JSON body.

    The same fields, read the same way; a recording (docs/testing.md) writes the ``Content-Type`` it came with. A
    kind of its own rather than a field: a reply made on the hot path carries nothing more for it.
    """

    __slots__ = ()


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
        accept ``headers`` and ignore it. A session calls this with the message's text unless the
        transport has ``send_message`` (module docstring).

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
