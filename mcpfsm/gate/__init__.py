"""The edge half: check that a call's headers tell the truth before anything acts on them (docs/gate.md).

A client mirrors ``Mcp-Method``, ``Mcp-Name`` and the ``x-mcp-header`` arguments of a ``tools/call`` into headers so
that infrastructure can route, refuse or pin a call without reading its body (MCP 2026-07-28, Streamable HTTP,
"Request Metadata"). That is only safe where something checks that the headers say what the body says: this package
does, as the specification's "Server Validation" asks of a server and lets an intermediary do.

- :func:`verify` judges one request, purely: headers as received, the body's bytes, the called tool's
  ``inputSchema`` (or ``None``) -> a :class:`Verdict` that names the offending header and never quotes a value.
- :class:`HeaderGate` is the ASGI middleware for any Python MCP server (the official SDK's and fastmcp's Starlette
  apps), under asyncio and trio alike; ``mcpfsm gate --upstream URL`` is the same gate as a reverse proxy for servers
  in any language (the ``gate`` extra).
- A ``policy=`` callable sees a :class:`VerifiedCall` (only verified values) and may raise :class:`GateRefusal`.
"""

from __future__ import annotations

from .._core.gate import GateRefusal, Verdict, VerifiedCall, verify
from .._gate.middleware import HeaderGate

__all__ = ["GateRefusal", "HeaderGate", "Verdict", "VerifiedCall", "verify"]
