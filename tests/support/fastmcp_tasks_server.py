"""A third-party tasks server for the tests: FastMCP with ``fastmcp-tasks`` (SEP-2663), in-memory backend.

fastmcp-tasks pins another fastmcp than the test extra does, so this script runs from its own virtual environment
(tests/support/fastmcp_tasks_peer.py makes it) and imports nothing from mcpfsm or tests/.

    python tests/support/fastmcp_tasks_server.py    # HTTP on 127.0.0.1, a free port: prints READY http://127.0.0.1:PORT/mcp
    python tests/support/fastmcp_tasks_server.py --execution-ttl 1    # the backend keeps a task's state 1 s, not 15 min

fastmcp-tasks reports its backend's execution TTL (how long a finished task is kept) as every task's ``ttlMs``; it
has no setting for it, so ``--execution-ttl`` sets the attribute on the running backend before READY.

``GET /control/log`` answers the POSTs received on ``/mcp`` so far (JSON-RPC method, ``Mcp-Method``, ``Mcp-Name``,
params and the server's monotonic clock when it read each); ``POST /control/release?name=N`` lets the ``hold``
tool waiting on ``N`` return. It exits with status 0 on SIGTERM.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs

import anyio
import mcp_types
import uvicorn
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from mcp.shared.exceptions import MCPError

MCP_PATH = "/mcp"

server = FastMCP("fastmcp-tasks-test-server")
server.add_extension(TasksExtension(url="memory://"))

_released: dict[str, asyncio.Event] = {}


def _gate(name: str) -> asyncio.Event:
    return _released.setdefault(name, asyncio.Event())


@server.tool(task=TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=100)))
async def build(seconds: float) -> str:
    """Work for ``seconds``, then say so."""
    await asyncio.sleep(seconds)
    return f"built in {seconds} s"


@server.tool(task=TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=300)))
async def paced(seconds: float) -> str:
    """Like ``build``, with a 300 ms poll interval."""
    await asyncio.sleep(seconds)
    return f"paced {seconds} s"


@server.tool(task=TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=100)))
async def hold(name: str) -> str:
    """Wait until ``POST /control/release?name=NAME``."""
    await _gate(name).wait()
    return f"released {name}"


@server.tool(task=TaskConfig(mode="required", poll_interval=timedelta(milliseconds=100)))
async def batch(n: int) -> int:
    """Runs only as a task: twice ``n``."""
    return 2 * n


@server.tool(task=TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=100)))
async def explode() -> str:
    """Fail with an exception the tool does not handle."""
    raise RuntimeError("compiler crashed")


@server.tool(task=TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=100)))
async def refuse() -> str:
    """Fail the task itself: a protocol error raised by the tool (fastmcp-tasks reports it as ``failed``)."""
    raise MCPError(code=-32001, message="quota exceeded", data={"retryAfter": 60})


@server.tool(task=TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=100)))
async def approve(ctx: Context) -> Any:
    """Ask the user to confirm (the guard pattern: an ``InputRequiredResult``), then echo the answer."""
    answers = ctx.input_responses
    if not answers or "confirm" not in answers:
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        ask = mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(message="confirm?", requested_schema=schema)
        )
        return mcp_types.InputRequiredResult(input_requests={"confirm": ask})
    answer = answers["confirm"]
    dumped = answer.model_dump(mode="json", exclude_none=True) if hasattr(answer, "model_dump") else answer
    return json.dumps(dumped, sort_keys=True)


class _Controlled:
    """ASGI: log each POST to the MCP endpoint (with its JSON-RPC body); answer the ``/control`` paths."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.log: list[dict[str, Any]] = []

    async def _reply(self, send: Any, body: bytes) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/control/log":
            await self._reply(send, json.dumps(self.log).encode())
            return
        if scope["type"] == "http" and scope["path"] == "/control/release":
            (name,) = parse_qs(scope["query_string"].decode())["name"]
            _gate(name).set()
            await self._reply(send, b"{}")
            return
        if scope["type"] == "http" and scope["path"] == MCP_PATH and scope["method"] == "POST":
            at = time.monotonic()
            chunks: list[dict[str, Any]] = []
            while True:
                message = await receive()
                chunks.append(message)
                if message["type"] != "http.request" or not message.get("more_body"):
                    break
            body = b"".join(chunk.get("body", b"") for chunk in chunks)
            headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
            try:
                rpc = json.loads(body)
            except ValueError:
                rpc = {}
            self.log.append({
                "at": at,
                "method": rpc.get("method"),
                "params": rpc.get("params"),
                "mcp_method": headers.get("mcp-method"),
                "mcp_name": headers.get("mcp-name"),
            })
            replay = iter(chunks)

            async def replayed() -> dict[str, Any]:
                return next(replay, None) or await receive()

            await self.app(scope, replayed, send)
            return
        await self.app(scope, receive, send)


async def _serve_http(execution_ttl: float | None) -> None:
    app = _Controlled(server.http_app(path=MCP_PATH))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=1)
    http = uvicorn.Server(config)

    async def announce() -> None:
        while not http.started:  # uvicorn has no readiness callback: poll its flag, then say where it listens
            if http.should_exit:
                return
            await anyio.sleep(0.01)
        if execution_ttl is not None:
            assert server._docket is not None  # the lifespan made it before uvicorn started
            server._docket.execution_ttl = timedelta(seconds=execution_ttl)
        bound = http.servers[0].sockets[0].getsockname()[1]
        print(f"READY http://127.0.0.1:{bound}{MCP_PATH}", flush=True)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(announce)
        await http.serve()
        tasks.cancel_scope.cancel()


if __name__ == "__main__":
    ttl = float(sys.argv[sys.argv.index("--execution-ttl") + 1]) if "--execution-ttl" in sys.argv else None
    anyio.run(_serve_http, ttl)
