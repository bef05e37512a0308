"""A second kind of MCP server for the tests: fastmcp's (``FastMCP``), over HTTP or stdio.

The official SDK's server is tests/support/peer; this one is built with fastmcp, whose own server layer (tool schemas
from type hints, structured output wrapped as ``{"result": ...}``, its HTTP app) differs from the SDK's.

    python -m tests.support.fastmcp_server            # HTTP on 127.0.0.1, a free port: prints READY http://127.0.0.1:PORT/mcp
    python -m tests.support.fastmcp_server --stdio    # stdio

Over HTTP, ``GET /control/log`` answers the requests received on ``/mcp`` so far (method and headers, in order),
so a test can see what the client put on the wire; it exits with status 0 on SIGTERM.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import uvicorn
from fastmcp import FastMCP

MCP_PATH = "/mcp"

server = FastMCP("fastmcp-test-server", instructions="A fastmcp server for mcpfsm's tests.")


@server.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool
def pid() -> int:
    """The server process's id."""
    return os.getpid()


class _Logged:
    """ASGI: record each request to the MCP endpoint; answer ``GET /control/log`` with the records."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.log: list[dict[str, Any]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/control/log":
            body = json.dumps(self.log).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] == "http" and scope["path"] == MCP_PATH:
            headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
            self.log.append({"http_method": scope["method"], "headers": headers})
        await self.app(scope, receive, send)


async def _serve_http() -> None:
    app = _Logged(server.http_app(path=MCP_PATH))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=1)
    http = uvicorn.Server(config)

    async def announce() -> None:
        while not http.started:  # uvicorn has no readiness callback: poll its flag, then say where it listens
            if http.should_exit:
                return
            await anyio.sleep(0.01)
        bound = http.servers[0].sockets[0].getsockname()[1]
        print(f"READY http://127.0.0.1:{bound}{MCP_PATH}", flush=True)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(announce)
        await http.serve()
        tasks.cancel_scope.cancel()


def main(argv: list[str]) -> None:
    """Serve over stdio with ``--stdio``, else over HTTP until SIGTERM."""
    if "--stdio" in argv:
        server.run(transport="stdio", show_banner=False)
        return
    anyio.run(_serve_http)


if __name__ == "__main__":
    main(sys.argv[1:])
