"""Era negotiation: which protocol revision a connection speaks.

The policy, in one place:

- **Pinned** ``2026-07-28``: no handshake; every request carries the modern ``_meta``.
- **Pinned** legacy version: ``initialize`` offering it (MCP 2025-11-25 "Lifecycle").
- **Auto** (the default): POST ``server/discover`` as a modern request (MCP 2026-07-28
  "Discovery"). A result whose ``supportedVersions`` names ``2026-07-28`` means modern; one naming
  only legacy versions means ``initialize`` offering the newest of them. A legacy server shows itself
  by an HTTP 400/404/405 whose body is not a modern JSON-RPC error (-32020, -32021, -32022), by a
  -32600/-32601/-32700 error, or by an answer that is not JSON: then ``initialize`` offering
  ``2025-11-25``. Anything else (a network failure, a 5xx, a modern error) is raised.
- **-32022** (UnsupportedProtocolVersion) on any request, the pinned handshake included: pick the
  newest version in ``data.supported`` that mcpfsm speaks and retry once in that era (a legacy pick
  runs ``initialize`` first); none spoken → the error is raised. The session layer bounds the retry.

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
)
from .._core.errors import ProtocolError, RpcError, TransportError

__all__ = ["Handshake", "negotiate", "switch_version"]

# Codes that mean "a modern server answered"; anything else on the probe means legacy.
_MODERN_CODES: Final = frozenset({-32020, -32021, UNSUPPORTED_PROTOCOL_VERSION})
_LEGACY_CODES: Final = frozenset({-32600, -32601, -32700})
_LEGACY_STATUSES: Final = frozenset({400, 404, 405})


class Handshake(Protocol):
    """What negotiation needs from the session layer."""

    version: str | None

    def set_version(self, version: str | None) -> None:
        """Settle the era."""
        ...

    async def exchange(self, method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """Send one request in the era in effect and return its result."""
        ...

    async def initialize(self, offer: str) -> None:
        """Run the legacy handshake offering ``offer``."""
        ...


async def negotiate(session: Handshake, requested: str) -> None:
    """Settle the era for ``requested`` (``"auto"`` or a version mcpfsm speaks); see the module docstring.

    Raises:
        RpcError, TransportError, ProtocolError: the server could not be reached or speaks no
            version mcpfsm speaks.
    """
    if requested == MODERN_VERSION:
        session.set_version(MODERN_VERSION)
    elif requested != "auto":
        try:
            await session.initialize(requested)
        except RpcError as exc:
            if exc.code != UNSUPPORTED_PROTOCOL_VERSION:
                raise
            await switch_version(session, exc, rejected=requested)
    else:
        await _probe(session)


async def _probe(session: Handshake) -> None:
    session.set_version(MODERN_VERSION)
    try:
        result = await session.exchange("server/discover", {})
    except RpcError as exc:
        if exc.code == UNSUPPORTED_PROTOCOL_VERSION:
            await switch_version(session, exc, rejected=MODERN_VERSION)
            return
        if exc.code in _MODERN_CODES or (exc.code not in _LEGACY_CODES and exc.status not in _LEGACY_STATUSES):
            session.set_version(None)
            raise
    except TransportError as exc:
        if exc.status not in _LEGACY_STATUSES:
            session.set_version(None)
            raise
    except ProtocolError:
        pass  # A non-JSON answer: a server that predates server/discover.
    else:
        versions = result.get("supportedVersions")
        if isinstance(versions, list) and MODERN_VERSION in versions:
            return
        spoken = [v for v in LEGACY_VERSIONS if isinstance(versions, list) and v in versions]
        await session.initialize(spoken[0] if spoken else LEGACY_VERSIONS[0])
        return
    await session.initialize(LEGACY_VERSIONS[0])


def pick_version(error: RpcError, *, rejected: str | None) -> str | None:
    """The newest version in a -32022 error's ``data.supported`` that mcpfsm speaks, other than ``rejected``."""
    data = error.data if isinstance(error.data, dict) else {}
    supported = data.get("supported")
    choices = [v for v in SPOKEN_VERSIONS if isinstance(supported, list) and v in supported and v != rejected]
    return choices[0] if choices else None


async def switch_version(session: Handshake, error: RpcError, *, rejected: str | None) -> None:
    """Follow a -32022: settle the era ``data.supported`` names (a legacy pick runs ``initialize``).

    Raises:
        RpcError: ``error`` itself, when no version in ``data.supported`` is one mcpfsm speaks.
    """
    choice = pick_version(error, rejected=rejected)
    if choice is None:
        raise error
    if choice == MODERN_VERSION:
        session.set_version(MODERN_VERSION)
    else:
        await session.initialize(choice)
