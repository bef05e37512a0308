"""A local OAuth 2.1 authorization server and protected MCP resource, for mcpfsm's tests, walkthrough and demo.

Run ``python -m tooling.authserver --config JSON [--port N]``: it listens on 127.0.0.1 (a free port
unless ``--port`` names one) and prints exactly one line, ``READY http://127.0.0.1:PORT``, once it accepts
connections (:func:`tooling.processes.run_authserver` starts it and waits for that line). The
JSON object sets the fields of :class:`Scenario`; each field mirrors a variation the official MCP
conformance scenarios serve (PRM location, metadata paths, issuer mismatch, ``iss`` variants, token endpoint
auth methods, pre-registration, Client ID Metadata Documents, dynamic registration, scopes, step-up, retry
limit, authorization server migration, the 2025-03-26 fallbacks, client credentials, JWT bearer,
enterprise-managed token exchange, DPoP with nonces, refresh token rotation and reuse detection, expiring
tokens). Unknown fields are an error.

It serves, on one origin:

- ``POST /mcp``: minimal MCP JSON-RPC behind bearer (or DPoP) tokens; 401 with ``WWW-Authenticate`` when
  no valid token is presented, 403 ``insufficient_scope`` for step-up;
- Protected Resource Metadata (RFC 9728) and authorization server metadata (RFC 8414, OIDC Discovery);
- ``/authorize`` (auto-approves: 302 to the redirect URI with ``code``, ``state`` and ``iss``), ``/token``,
  ``/register`` (RFC 7591); a second server under ``/as2`` for migration; an IdP token exchange endpoint at
  ``/idp/token`` (RFC 8693) that issues ID-JAGs;
- ``GET /_log`` (every request received, in order, with its answer's status, and for ``/mcp`` the ``client_id``
  its token was granted to) and ``POST /_log/clear``;
- ``POST /_revoke``: every access token dies, with ``{"refresh_tokens": true}`` every refresh token too
  (clients stay);
- ``GET /_stats``: token requests by ``grant_type``, retired refresh tokens presented again
  (``refresh_reuses``) and grants revoked for it (``revoked_grants``, with ``revoke_on_reuse``: RFC 6749
  §10.4, RFC 9700 §4.14.2);
- ``POST /_token_outage`` ``{"count": N, "status": 503}``: the next N token requests get that status;
- ``POST /_config`` with a JSON object of :class:`Scenario` fields: start afresh with that scenario (new
  clients, codes and tokens, an empty log), so one process serves many tests.

It is written from the public specifications (RFC 6749, 6750, 7523, 7591, 7636, 7638, 8414, 8693, 8707,
9207, 9449, 9728, OAuth 2.1, the MCP authorization pages) and is test infrastructure, not a product: all
state is in memory and every token is opaque and random.
"""

from __future__ import annotations

import argparse
import asyncio
import socket

import uvicorn

from .scenario import Scenario
from .site import ReadyServer, build_app

__all__ = ["Scenario", "build_app", "main"]


def main(argv: list[str] | None = None) -> None:
    """Parse ``--config JSON``, bind 127.0.0.1:0 and serve until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--config", default="{}", help="a JSON object of Scenario fields")
    parser.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    scenario = Scenario.from_json(args.config)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(build_app(scenario, base), log_level="warning", lifespan="off", access_log=False)
    asyncio.run(ReadyServer(config, base).serve(sockets=[sock]))
