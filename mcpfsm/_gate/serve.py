"""Serving an ASGI app with Hypercorn's trio worker: what ``mcpfsm gate`` runs (the ``gate`` extra).

Hypercorn is a real ASGI server (HTTP/1.1 and HTTP/2, h11 and h2 underneath) with a trio worker, so the proxy runs
on trio like the rest of mcpfsm and forwards through its connection pool. :func:`serve` binds, then reports the URL
it listens on once the socket accepts connections (``mcpfsm gate`` prints it as ``READY http://HOST:PORT/PATH``).

Hypercorn's limits are set for the gate's own caps: a request head may hold 64 ``mcp-`` fields of 8,192 bytes each
(the gate answers 431 beyond, not Hypercorn), and the listen backlog holds a burst of connections.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from .._core.gate import MAX_MCP_HEADER_BYTES, MAX_MCP_HEADERS
from .asgi import App

__all__ = ["HEAD_LIMIT", "serve"]

HEAD_LIMIT: Final = MAX_MCP_HEADERS * (MAX_MCP_HEADER_BYTES + 128) + 64 * 1024
"""The largest request head Hypercorn reads (bytes): the gate's caps at their limit, and 64 KiB for the rest."""

_BACKLOG: Final = 4096


def config(host: str, port: int) -> Any:
    """A Hypercorn ``Config`` bound to ``host:port`` (port 0: a free one), with the gate's limits."""
    try:
        from hypercorn.config import Config
    except ImportError as exc:
        raise ImportError(
            "mcpfsm gate is served by Hypercorn, which is not installed: pip install 'mcpfsm[gate]'"
        ) from exc
    settings = Config()
    settings.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    settings.accesslog = None
    settings.loglevel = "WARNING"
    # The upstream's own Date and Server go through unchanged; Hypercorn adds neither.
    settings.include_date_header = False
    settings.include_server_header = False
    settings.h11_max_incomplete_size = HEAD_LIMIT
    settings.h2_max_header_list_size = HEAD_LIMIT
    settings.backlog = _BACKLOG
    settings.keep_alive_timeout = 75.0
    return settings


async def serve(
    app: App,
    *,
    host: str,
    port: int,
    ready: Callable[[str], None],
    shutdown: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Serve ``app`` on ``host:port`` until ``shutdown()`` returns (or forever); call ``ready(origin)`` once listening.

    ``origin`` is ``http://HOST:PORT`` as bound (the port chosen when ``port`` is 0).

    Raises:
        ImportError: Hypercorn is not installed (the ``gate`` extra).
        OSError: the address cannot be bound.
    """
    settings = config(host, port)
    from hypercorn.trio import serve as hypercorn_serve

    async with trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(
            lambda task_status: hypercorn_serve(app, settings, shutdown_trigger=shutdown, task_status=task_status)  # type: ignore[arg-type,unused-ignore]
        )
        ready(binds[0])
