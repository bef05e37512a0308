"""A client over either HTTP connection layer: mcpfsm's own pool, or httpx's transport given as http_transport=."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import httpx

import mcpfsm

LAYERS: Final = ["pool", "httpx"]
"""mcpfsm's own connection pool, and httpx's AsyncHTTPTransport given as http_transport=."""


@asynccontextmanager
async def connect(
    url: str, layer: str, *, protocol: str = "2026-07-28", **options: Any
) -> AsyncIterator[mcpfsm.Client]:
    """An entered ``Client.http(url, ...)`` on ``layer`` (one of :data:`LAYERS`); the httpx transport closed after."""
    transport = httpx.AsyncHTTPTransport() if layer == "httpx" else None
    try:
        async with mcpfsm.Client.http(url, protocol=protocol, http_transport=transport, **options) as client:
            yield client
    finally:
        if transport is not None:
            await transport.aclose()
