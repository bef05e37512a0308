"""The transport seam (SPEC §7).

A :class:`Transport` carries one JSON-RPC message at a time and hands back the peer's answer.
HTTP and stdio implementations live in ``_http.py`` and ``_stdio.py``; custom transports implement
the same two methods. Transports may also be async context managers (the stdio transport is:
it owns a subprocess and a reader task); :class:`~mcpfsm.Client` enters them when it is entered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Protocol, runtime_checkable

from ._jsonrpc import Notification, Request

__all__ = ["NO_HEADERS", "InboundHandler", "Transport", "filter_custom_headers"]

NO_HEADERS: Mapping[str, str] = MappingProxyType({})
"""An empty, immutable header mapping (the default of :meth:`Transport.send`)."""

InboundHandler = Callable[[Notification | Request], Awaitable[str | None]]
"""Called for each message the peer sends that is not the awaited response: notifications
return ``None``; server-to-client requests return the JSON text of our answer."""


@runtime_checkable
class Transport(Protocol):
    """Carries JSON-RPC messages to one MCP server (SPEC §7)."""

    async def send(self, message: str, headers: Mapping[str, str] = NO_HEADERS) -> str | bytes | None:
        """Send one JSON-RPC message with its per-request protocol headers.

        For a request, return the text of the peer's JSON-RPC response to it (an error response
        included); for a notification, return ``None``. Transports without headers (stdio)
        accept ``headers`` and ignore it.

        Raises:
            TransportError: the message could not be delivered or no answer arrived.
            ProtocolError: the answer is not JSON-RPC.
        """
        ...

    async def aclose(self) -> None:
        """Release the connection; idempotent."""
        ...


def filter_custom_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Drop caller headers whose name starts with ``mcp-`` (any case): protocol-owned (SPEC §7)."""
    if not headers:
        return {}
    return {name: value for name, value in headers.items() if not name.lower().startswith("mcp-")}
