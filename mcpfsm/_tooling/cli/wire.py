"""What the ``mcpfsm`` command sees of the wire: ``-v``/``-vv`` logging and the method behind a ``-32601``.

:class:`Wire` stands between a client's session and its transport (every message a session sends passes its
``send``): the command makes its clients with it there (:func:`wired`), as the connection's ``wrap``. It
remembers the method of each request, so that a ``-32601 Method not found`` answer can be reported with the
method it answered and the capability the server did not declare (MCP 2025-11-25 and
2026-07-28, "Lifecycle": capability negotiation). With ``-v`` it logs the head of each request (its JSON-RPC
method and id and the MCP headers the session set) and of each reply (its HTTP status); with ``-vv`` the bodies
as well. Values that may be secret never reach those lines: the legacy ``Mcp-Session-Id``, any
``Authorization``, ``Cookie`` or ``DPoP`` header, and every credential the command line gave (``--token``,
``--header`` values) are shown as ``[redacted]``.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from ..._client.assembly import Wrap
from ..._client.client import Client
from ..._core.constants import METHOD_NOT_FOUND
from ..._core.errors import McpError
from ..._log import logger
from ..._transports.base import NO_HEADERS, InboundHandler, Reply, Transport

__all__ = ["CAPABILITY", "Wire", "method_not_found", "wire_of", "wired"]

REDACTED: Final = "[redacted]"
_SECRET_HEADERS: Final = frozenset({"authorization", "proxy-authorization", "cookie", "dpop", "mcp-session-id"})

CAPABILITY: Final = {
    "tools/": "tools",
    "resources/": "resources",
    "prompts/": "prompts",
    "completion/": "completions",
    "logging/": "logging",
    "tasks/": "tasks",
}
"""The server capability (MCP "Lifecycle") that offers each family of methods, by method prefix."""


class Wire:
    """A transport that logs what passes (``-v`` heads, ``-vv`` bodies) and remembers unknown methods."""

    def __init__(self, inner: Transport, *, verbosity: int, secrets: Sequence[str] = ()) -> None:
        """Wrap ``inner``; ``secrets`` are values never to show (tokens and header values given to the command)."""
        self._inner = inner
        self._verbosity = verbosity
        self._secrets = tuple(secret for secret in secrets if len(secret) >= 4)
        self.unknown_method: str | None = None
        """The method of the latest request answered ``-32601``."""

    @property
    def carries_headers(self) -> bool:
        """Whether the wrapped transport carries HTTP headers."""
        return self._inner.carries_headers

    async def open(self, inbound: InboundHandler) -> None:
        """Open the wrapped transport."""
        await self._inner.open(inbound)

    async def send(self, message: str, headers: Mapping[str, str] = NO_HEADERS) -> Reply | None:
        """Send through the wrapped transport, logging the request and its reply at the verbosity asked."""
        method, request_id = _method_and_id(message)
        if self._verbosity >= 1:
            shown = ", ".join(f"{name}: {self._header_value(name, value)}" for name, value in headers.items())
            kind = "notification" if request_id is None else f"request #{request_id}"
            logger.debug("> {} {}" + (" ({})" if shown else "{}"), kind, method, shown)
            if self._verbosity >= 2:
                logger.debug("> body: {}", self._hide(message))
        reply = await self._inner.send(message, headers)
        if reply is not None and request_id is not None:
            body = reply.body.decode("utf-8", "replace") if isinstance(reply.body, bytes) else reply.body
            if _error_code(body) == METHOD_NOT_FOUND:
                self.unknown_method = method
            if self._verbosity >= 1:
                status = "no HTTP status" if reply.status is None else f"HTTP {reply.status}"
                session = "" if reply.session_id is None else f", Mcp-Session-Id: {REDACTED}"
                logger.debug("< reply to #{} {}: {}{} ({} bytes)", request_id, method, status, session, len(body))
                if self._verbosity >= 2:
                    logger.debug("< body: {}", self._hide(body))
        return reply

    async def open_stream(self, headers: Mapping[str, str]) -> bool:
        """Open the wrapped transport's standalone stream (legacy HTTP)."""
        if self._verbosity >= 1:
            logger.debug("> the standalone event stream (GET)")
        return await self._inner.open_stream(headers)

    async def end_session(self, headers: Mapping[str, str]) -> None:
        """End the legacy session on the wrapped transport."""
        if self._verbosity >= 1:
            logger.debug("> end of the session (DELETE)")
        await self._inner.end_session(headers)

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self._inner.aclose()

    def _header_value(self, name: str, value: str) -> str:
        return REDACTED if name.lower() in _SECRET_HEADERS else self._hide(value)

    def _hide(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text


_WIRES: weakref.WeakKeyDictionary[Client, Wire] = weakref.WeakKeyDictionary()


def wired(make: Callable[[Wrap], Client], *, verbosity: int = 0, secrets: Sequence[str] = ()) -> Client:
    """The client ``make`` makes with the ``wrap`` it is given: a :class:`Wire` between its session and transport.

    ``make`` passes ``wrap`` to the connection it describes (``HttpServer``, ``StdioServer``, ``member_client``);
    :func:`wire_of` finds the wire again.
    """
    made: list[Wire] = []

    def wrap(transport: Transport) -> Transport:
        made.append(Wire(transport, verbosity=verbosity, secrets=secrets))
        return made[-1]

    client = make(wrap)
    if made:
        _WIRES[client] = made[-1]
    return client


def wire_of(client: Client) -> Wire | None:
    """The :class:`Wire` of a client made by :func:`wired`, or ``None``."""
    return _WIRES.get(client)


def method_not_found(client: Client, method: str) -> str:
    """The sentence for a ``-32601`` answer to ``method``: the method, and whether its capability was declared."""
    capability = next((name for prefix, name in CAPABILITY.items() if method.startswith(prefix)), None)
    sentence = f"the server does not implement {method} (JSON-RPC -32601 Method not found)"
    if capability is None:
        return sentence
    try:
        declared = sorted(client.server.capabilities)
    except McpError:
        return f"{sentence}; it belongs to the '{capability}' capability"
    if capability in declared:
        return f"{sentence}, although it declares the '{capability}' capability"
    listed = ", ".join(declared) or "none"
    return f"{sentence}: it does not declare the '{capability}' capability (it declares: {listed})"


def _method_and_id(message: str) -> tuple[str, Any]:
    try:
        decoded = json.loads(message)
    except ValueError:
        return "?", None
    if not isinstance(decoded, dict):
        return "?", None
    method = decoded.get("method")
    return (method if isinstance(method, str) else "(response)"), decoded.get("id")


def _error_code(body: str) -> object:
    if '"error"' not in body:
        return None
    try:
        decoded = json.loads(body)
    except ValueError:
        return None
    error = decoded.get("error") if isinstance(decoded, dict) else None
    return error.get("code") if isinstance(error, dict) else None
