"""Era negotiation: which protocol revision a connection speaks.

The policy, in one place:

- **Pinned** ``2026-07-28``: no handshake; every request carries the modern ``_meta``. When the
  first request fails the way a legacy server fails (below), one ``server/discover`` finds out
  whether the server speaks this era at all; if not, :func:`explain_pinned_failure` turns the failure
  into a :class:`~mcpfsm.ProtocolError` that names the era the server speaks and suggests ``"auto"``.
- **Pinned** legacy version: ``initialize`` offering it (MCP 2025-11-25 "Lifecycle").
- **Auto** (the default): POST ``server/discover`` as a modern request (MCP 2026-07-28
  "Discovery"). A result whose ``supportedVersions`` names ``2026-07-28`` means modern; one naming
  only legacy versions means ``initialize`` offering the newest of them. A legacy server shows itself
  by an HTTP 400/404/405 whose body is not a modern JSON-RPC error (-32020, -32021, -32022), by a
  -32600/-32601/-32700 error, or by an answer that is not JSON: then ``initialize`` offering
  ``2025-11-25``. Anything else (a network failure, a 5xx, a modern error) is raised.
- **-32022** (UnsupportedProtocolVersion) on any request, the probe and the pinned handshake
  included: pick the newest version in ``data.supported`` that mcpfsm speaks and retry that request
  once in its era (a legacy pick runs ``initialize`` first); none spoken → the error is raised. The
  pick may be the version just sent (the official conformance suite rejects a client's very first
  request that way to see it retry): "once" is what bounds the retry, here and in the session layer.

What the server says about itself on the way (``capabilities``, ``instructions``, its name and version)
is kept as the session's :class:`~mcpfsm.ServerInfo`: from the ``server/discover`` result that settled the
modern era, or from ``initialize``. A pinned ``2026-07-28`` sends no ``server/discover``, so it has none
until :meth:`mcpfsm.Client.discover` asks.

This module holds the policy and drives it through a narrow :class:`Handshake` port, which the
session layer implements.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

from .._core.constants import (
    LEGACY_VERSIONS,
    MODERN_VERSION,
    SPOKEN_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    is_modern,
)
from .._core.errors import McpError, ProtocolError, RpcError, TransportError
from .._core.results import ServerInfo
from .._log import logger

__all__ = [
    "Handshake",
    "connect",
    "discover",
    "explain_pinned_failure",
    "known_server",
    "looks_legacy",
    "negotiate",
    "pick_version",
    "switch_version",
]

# Codes that mean "a modern server answered"; anything else on the probe means legacy.
_MODERN_CODES: Final = frozenset({-32020, -32021, UNSUPPORTED_PROTOCOL_VERSION})
_LEGACY_CODES: Final = frozenset({-32600, -32601, -32700})
_LEGACY_STATUSES: Final = frozenset({400, 404, 405})


class Handshake(Protocol):
    """What negotiation needs from the session layer."""

    @property
    def version(self) -> str | None:
        """The version in effect, ``None`` while no era is settled."""
        ...

    @property
    def unconfirmed(self) -> bool:
        """True while a pinned ``2026-07-28`` has not been answered in that era yet."""
        ...

    @property
    def server(self) -> ServerInfo | None:
        """What the server said about itself (a modern ``server/discover`` result read here, or ``initialize``)."""
        ...

    @property
    def log_level(self) -> str | None:
        """The level of log messages asked for, or ``None``."""
        ...

    def set_version(self, version: str | None) -> None:
        """Settle the era."""
        ...

    def pin(self, version: str) -> None:
        """Settle a pinned modern version that no answer has confirmed yet."""
        ...

    def learned(self, server: ServerInfo) -> None:
        """Keep a modern ``server/discover`` result, which confirms the era."""
        ...

    def forgo_log_level(self) -> None:
        """Ask for no log messages any more."""
        ...

    async def open(self) -> None:
        """Open the transport, once: later calls do nothing."""
        ...

    async def request(self, method: str, params: Mapping[str, Any] | None, *, fresh: bool = False) -> dict[str, Any]:
        """Send one request through the session's layers (the response cache among them)."""
        ...

    async def exchange(self, method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """Send one request in the era in effect and return its result."""
        ...

    async def initialize(self, offer: str) -> None:
        """Run the legacy handshake offering ``offer``."""
        ...


async def connect(session: Handshake, requested: str) -> None:
    """Open the session's transport (once) and settle the era for ``requested``: a client's handshake.

    SEP-2577 deprecates logging in 2026-07-28: a modern server whose ``server/discover`` result does not declare
    ``logging`` is not asked for log messages (unknown, pinned without discover: asked, as before).

    Raises:
        RpcError, TransportError, ProtocolError: as :func:`negotiate`.
    """
    await session.open()
    await negotiate(session, requested)
    if session.log_level is None or not is_modern(session.version) or session.server is None:
        return
    if "logging" not in session.server.capabilities:
        logger.debug("the server does not declare logging; log level {!r} not asked for", session.log_level)
        session.forgo_log_level()


async def discover(session: Handshake, *, fresh: bool = False) -> ServerInfo:
    """What the server says about itself, asking ``server/discover`` in the modern era when needed or wanted.

    In the 2026-07-28 era the request goes out when the session has no answer yet (it was pinned), or with
    ``fresh`` (an answer still fresh in the response cache is reused otherwise, SEP-2549); in the 2025-11-25 era the
    ``initialize`` result is all there is and nothing is sent.

    Raises:
        McpError: the request failed, or the server is not known (see :func:`known_server`).
    """
    if is_modern(session.version) and (session.server is None or fresh):
        result = await session.request("server/discover", {}, fresh=fresh)
        session.learned(ServerInfo.from_discover(result, session.version or ""))
    return known_server(session)


def known_server(session: Handshake) -> ServerInfo:
    """What the server said about itself so far.

    Raises:
        McpError: not known yet: the session has no era, or is pinned to 2026-07-28 and sent no ``server/discover``.
    """
    info = session.server
    if info is None:
        if session.version is None:
            raise McpError("the server is not known before the client connects: use async with, or await connect()")
        raise McpError(
            "a client pinned to 2026-07-28 does not send server/discover when it connects:"
            " await client.discover() asks for it"
        )
    return info


async def negotiate(session: Handshake, requested: str) -> None:
    """Settle the era for ``requested`` (``"auto"`` or a version mcpfsm speaks); see the module docstring.

    Raises:
        RpcError, TransportError, ProtocolError: the server could not be reached or speaks no
            version mcpfsm speaks.
    """
    if requested == MODERN_VERSION:
        session.pin(MODERN_VERSION)
    elif requested != "auto":
        try:
            await session.initialize(requested)
        except RpcError as exc:
            if exc.code != UNSUPPORTED_PROTOCOL_VERSION:
                raise
            await switch_version(session, exc)
    else:
        await _probe(session)


async def _probe(session: Handshake) -> None:
    session.set_version(MODERN_VERSION)
    for attempt in range(2):
        try:
            result = await session.exchange("server/discover", {})
        except RpcError as exc:
            if exc.code == UNSUPPORTED_PROTOCOL_VERSION and attempt == 0:
                choice = pick_version(exc)
                if choice == MODERN_VERSION:
                    continue  # the same era again: retry server/discover once
                if choice is not None:
                    await session.initialize(choice)
                    return
            if exc.code in _MODERN_CODES or not looks_legacy(exc):
                session.set_version(None)
                raise
        except TransportError as exc:
            if not looks_legacy(exc):
                session.set_version(None)
                raise
        except ProtocolError:
            pass  # A non-JSON answer: a server that predates server/discover.
        else:
            versions = result.get("supportedVersions")
            if isinstance(versions, list) and MODERN_VERSION in versions:
                session.learned(ServerInfo.from_discover(result, MODERN_VERSION))
                return
            spoken = [v for v in LEGACY_VERSIONS if isinstance(versions, list) and v in versions]
            await session.initialize(spoken[0] if spoken else LEGACY_VERSIONS[0])
            return
        break
    await session.initialize(LEGACY_VERSIONS[0])


def looks_legacy(error: McpError) -> bool:
    """True when ``error`` is how a server of the ``initialize`` era answers a modern request.

    An HTTP 400/404/405 whose body is not a modern JSON-RPC error (-32020, -32021, -32022), or a
    -32600/-32601/-32700 error (MCP 2026-07-28, "Backwards compatibility").
    """
    if isinstance(error, RpcError):
        return error.code not in _MODERN_CODES and (error.code in _LEGACY_CODES or error.status in _LEGACY_STATUSES)
    if isinstance(error, TransportError):
        return error.status in _LEGACY_STATUSES
    return isinstance(error, ProtocolError)


async def explain_pinned_failure(session: Handshake, method: str, error: McpError) -> McpError:
    """The error to raise for the failed first request of a pinned ``2026-07-28`` connection.

    When ``error`` looks like a legacy server's answer, one ``server/discover`` settles it: a server
    that lists ``2026-07-28`` is modern and ``error`` stands (and the era counts as confirmed);
    anything else means the server speaks only the ``initialize`` era, and the result is a
    :class:`ProtocolError` naming that era and suggesting ``protocol="auto"``.
    """
    if not looks_legacy(error):
        return error
    era = f"the initialize era ({', '.join(LEGACY_VERSIONS)})"
    try:
        result = await session.exchange("server/discover", {})
    except McpError as probe:
        if not looks_legacy(probe):
            return error
    else:
        versions = result.get("supportedVersions")
        if isinstance(versions, list) and MODERN_VERSION in versions:
            session.learned(ServerInfo.from_discover(result, MODERN_VERSION))
            return error
        if isinstance(versions, list) and all(isinstance(v, str) for v in versions) and versions:
            era = f"the initialize era ({', '.join(versions)})"
    return ProtocolError(
        f"the server does not speak protocol {MODERN_VERSION}, which was pinned: it answered {method} as a server"
        f" of {era} does ({error}); use protocol='auto' to negotiate the era, or pin {LEGACY_VERSIONS[0]}"
    )


def pick_version(error: RpcError) -> str | None:
    """The newest version in a -32022 error's ``data.supported`` that mcpfsm speaks (the one just sent included)."""
    data = error.data if isinstance(error.data, dict) else {}
    supported = data.get("supported")
    choices = [v for v in SPOKEN_VERSIONS if isinstance(supported, list) and v in supported]
    return choices[0] if choices else None


async def switch_version(session: Handshake, error: RpcError) -> None:
    """Follow a -32022: settle the era ``data.supported`` names (a legacy pick runs ``initialize``).

    The caller bounds how often this happens (once per request).

    Raises:
        RpcError: ``error`` itself, when no version in ``data.supported`` is one mcpfsm speaks.
    """
    choice = pick_version(error)
    if choice is None:
        raise error
    if choice == MODERN_VERSION:
        session.set_version(MODERN_VERSION)
    else:
        await session.initialize(choice)
