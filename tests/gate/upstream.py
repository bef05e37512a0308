"""An MCP server that checks no header at all, for the gate's tests: what the gate is there to protect.

    python -m tests.gate.upstream [--sse] [--ttl-ms MS] [--scope public|private] [--page-size N] [--token T ...]

The app (:class:`Upstream`) runs under asyncio and trio alike (anyio); served here by Hypercorn's trio worker on
127.0.0.1, a free port, it prints ``READY http://127.0.0.1:PORT/mcp``. It speaks the 2026-07-28 era (each POST
stands alone; ``server/discover``) and answers a legacy ``initialize`` with an ``Mcp-Session-Id``, but never looks
at ``Mcp-Method``, ``Mcp-Name`` or ``Mcp-Param-*``: whatever reaches it is executed. ``--sse`` answers requests
that accept ``text/event-stream`` as an event stream.

Tools (``tools/list`` carries ``ttlMs``, default 300,000, and ``cacheScope``, default private):

- ``query``: ``database`` string (``x-mcp-header: Database``), ``limit`` integer (``Limit``), ``dry`` boolean
  (``Dry``), ``sql`` string;
- ``greet``: ``name``, answers ``Hello, NAME!``; ``hello``: ``name`` mirrored as ``Mcp-Param-Name`` (``change``
  renames that header to ``Person`` and says ``notifications/tools/list_changed`` on its stream);
- ``slow_compute``: a task (SEP-2663), then ``tasks/get``, ``tasks/cancel``, ``tasks/update``;
- ``stream``: ``count`` progress notifications ``delay`` seconds apart, then the result (``count: 0``: until the
  client leaves); ``refuse``: HTTP 400 with -32020, as a server that disagrees with a header; ``big``: a text of
  ``size`` bytes.

With ``--token``, a request without one of those bearer tokens gets 401, and the token ``alice`` also lists
``alice_only`` (a private listing).

Control (plain HTTP): ``GET /control/log`` every request to ``/mcp`` so far (``method``, ``jsonrpc_method``,
``headers`` as pairs, ``body``), plus ``{"event": "stream_closed"}`` when a client left a stream;
``POST /control/reset`` forgets them; ``GET /control/counts`` the JSON-RPC methods seen, counted.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import sys
import time
from datetime import UTC, datetime
from typing import Any

import anyio
import trio
from hypercorn.config import Config
from hypercorn.trio import serve

PATH = "/mcp"


class Upstream:
    """The ASGI app; one per process."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.sse = args.sse
        self.ttl_ms: int | None = args.ttl_ms
        self.scope: str | None = args.scope
        self.page_size: int | None = args.page_size
        self.tokens: list[str] = args.token
        self.log: list[dict[str, Any]] = []
        self.counts: collections.Counter[str] = collections.Counter()
        self.hello_header = "Name"
        self.tasks: dict[str, dict[str, Any]] = {}
        self.next_task = 0

    def task_shape(self, task: dict[str, Any]) -> dict[str, Any]:
        # SEP-2663's Task: completed once its seconds have passed.
        now = time.time()
        if task["status"] == "working" and now >= task["created"] + task["seconds"]:
            task["status"] = "completed"
        shape = {
            "taskId": task["taskId"],
            "status": task["status"],
            "createdAt": iso(task["created"]),
            "lastUpdatedAt": iso(now),
            "ttlMs": 600_000,
            "pollIntervalMs": 100,
        }
        if task["status"] == "completed":
            shape["result"] = text_result(f"computed in {task['seconds']:g} s")
        return shape

    # --- the tools ---------------------------------------------------------------------------------------------

    def tools(self, token: str | None) -> list[dict[str, Any]]:
        listed = [
            {
                "name": "query",
                "description": "Run SQL on a database.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "database": {"type": "string", "x-mcp-header": "Database"},
                        "limit": {"type": "integer", "x-mcp-header": "Limit"},
                        "dry": {"type": "boolean", "x-mcp-header": "Dry"},
                        "sql": {"type": "string"},
                    },
                    "required": ["database", "sql"],
                },
            },
            {"name": "greet", "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
            {
                "name": "hello",
                "inputSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "x-mcp-header": self.hello_header}},
                },
            },
            {
                "name": "slow_compute",
                "description": "A task (SEP-2663): sleeps, then answers.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"seconds": {"type": "number"}, "label": {"type": "string"}},
                },
            },
            {"name": "stream", "inputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}}},
            {"name": "change", "inputSchema": {"type": "object"}},
            {"name": "refuse", "inputSchema": {"type": "object"}},
            {"name": "big", "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}}},
        ]
        if token == "alice":
            listed.append(
                {
                    "name": "alice_only",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"tenant": {"type": "string", "x-mcp-header": "Tenant"}},
                    },
                }
            )
        return listed

    # --- ASGI ----------------------------------------------------------------------------------------------------

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path.startswith("/control/"):
            await self.control(scope, receive, send)
            return
        if path != PATH:
            await respond(send, 404, b"not found", "text/plain")
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [[name.decode("latin-1"), value.decode("latin-1")] for name, value in scope["headers"]]
        fields = {name: value for name, value in headers}
        entry: dict[str, Any] = {"method": scope["method"], "headers": headers, "body": body.decode("utf-8", "replace")}
        try:
            peeked = json.loads(body) if body else None
        except ValueError:
            peeked = None
        entry["jsonrpc_method"] = peeked.get("method") if isinstance(peeked, dict) else None
        self.log.append(entry)
        token = None
        authorization = fields.get("authorization", "")
        if authorization.startswith("Bearer "):
            token = authorization[len("Bearer ") :]
        if self.tokens and token not in self.tokens:
            await respond(
                send,
                401,
                b'{"error":"unauthorized"}',
                extra=[(b"www-authenticate", b'Bearer resource_metadata="http://127.0.0.1/.well-known/x"')],
            )
            return
        if scope["method"] == "GET":
            entry["jsonrpc_method"] = None
            await self.resume(fields, send)
            return
        if scope["method"] == "DELETE":
            await respond(send, 200, b"")
            return
        try:
            message = json.loads(body)
        except ValueError:
            await respond(send, 400, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}')
            return
        method = message.get("method") if isinstance(message, dict) else None
        entry["jsonrpc_method"] = method
        self.counts[str(method)] += 1
        if not isinstance(message, dict) or "id" not in message:
            await respond(send, 202, b"")
            return
        await self.answer(message, fields, token, receive, send)

    async def answer(
        self, message: dict[str, Any], fields: dict[str, str], token: str | None, receive: Any, send: Any
    ) -> None:
        request_id, method = message["id"], message.get("method")
        params = message.get("params") or {}
        sse = self.sse and "text/event-stream" in fields.get("accept", "")
        extra: list[tuple[bytes, bytes]] = []
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "unchecked", "version": "1.0"},
            }
            extra.append((b"mcp-session-id", b"session-1"))
        elif method == "server/discover":
            result = {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {"listChanged": True}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
                "serverInfo": {"name": "unchecked", "version": "1.0"},
            }
        elif method == "tools/list":
            tools = self.tools(token)
            start = int(params.get("cursor") or 0)
            end = len(tools) if self.page_size is None else start + self.page_size
            result = {"tools": tools[start:end], "resultType": "complete"}
            if end < len(tools):
                result["nextCursor"] = str(end)
            if self.ttl_ms is not None:
                result["ttlMs"] = self.ttl_ms
            if self.scope is not None:
                result["cacheScope"] = self.scope
        elif method in ("tasks/get", "tasks/cancel", "tasks/update"):
            task = self.tasks.get(str(params.get("taskId")))
            if task is None:
                error = {"code": -32602, "message": "Task not found"}
                await respond(send, 200, json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode())
                return
            if method == "tasks/cancel" and task["status"] == "working":
                task["status"] = "cancelled"
            result = (
                {"resultType": "complete", **self.task_shape(task)}
                if method == "tasks/get"
                else {"resultType": "complete"}
            )
        elif method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments") or {}
            if name == "slow_compute":
                self.next_task += 1
                now = time.time()
                task = {
                    "taskId": f"task-{self.next_task}",
                    "status": "working",
                    "created": now,
                    "seconds": float(arguments.get("seconds", 1)),
                }
                self.tasks[task["taskId"]] = task
                result = {"resultType": "task", **self.task_shape(task)}
                await respond(send, 200, json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode())
                return
            if name == "refuse":
                error = {"code": -32020, "message": "Header mismatch: Mcp-Param-Name"}
                await respond(send, 400, json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode())
                return
            if name == "stream" and sse:
                await self.stream(
                    request_id, int(arguments.get("count", 3)), float(arguments.get("delay", 0.01)), receive, send
                )
                return
            if name == "change":
                self.hello_header = "Person" if self.hello_header == "Name" else "Name"
                if sse:
                    await self.events(
                        send,
                        [
                            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
                            {"jsonrpc": "2.0", "id": request_id, "result": text_result("changed")},
                        ],
                    )
                    return
            if name == "big":
                result = text_result("x" * int(arguments.get("size", 1000)))
            elif name == "greet":
                result = text_result(f"Hello, {arguments.get('name')}!")
            else:
                result = text_result(json.dumps({"tool": name, "arguments": arguments}, sort_keys=True))
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            await respond(send, 200, json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode())
            return
        response = {"jsonrpc": "2.0", "id": request_id, "result": result}
        if sse:
            await self.events(send, [response], extra)
        else:
            await respond(send, 200, json.dumps(response).encode(), extra=extra)

    async def events(self, send: Any, messages: list[dict[str, Any]], extra: list[tuple[bytes, bytes]] = ()) -> None:  # type: ignore[assignment]
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"), *extra],
            }
        )
        for number, message in enumerate(messages):
            data = f"id: {number}\nevent: message\ndata: {json.dumps(message)}\n\n".encode()
            await send({"type": "http.response.body", "body": data, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    async def stream(self, request_id: Any, count: int, delay: float, receive: Any, send: Any) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
            }
        )
        left = anyio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            left.set()

        async with anyio.create_task_group() as nursery:
            nursery.start_soon(watch)
            number = 0
            while count == 0 or number < count:
                progress = {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": 1, "progress": number},
                }
                data = f"id: {number}\ndata: {json.dumps(progress)}\n\n".encode()
                with anyio.move_on_after(delay):
                    await left.wait()
                if left.is_set():
                    self.log.append({"event": "stream_closed", "sent": number})
                    nursery.cancel_scope.cancel()
                    return
                await send({"type": "http.response.body", "body": data, "more_body": True})
                number += 1
            final = {"jsonrpc": "2.0", "id": request_id, "result": text_result(f"streamed {count}")}
            await send({"type": "http.response.body", "body": f"data: {json.dumps(final)}\n\n".encode()})
            nursery.cancel_scope.cancel()

    async def resume(self, fields: dict[str, str], send: Any) -> None:
        # A GET stream (legacy standalone stream, or a resumption with Last-Event-ID): one event, then the end.
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {
                "level": "info",
                "data": {"last_event_id": fields.get("last-event-id"), "session": fields.get("mcp-session-id")},
            },
        }
        await self.events(send, [note])

    async def control(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        path = scope["path"]
        if path == "/control/log":
            await respond(send, 200, json.dumps(self.log).encode())
        elif path == "/control/counts":
            await respond(send, 200, json.dumps(self.counts).encode())
        elif path == "/control/reset":
            self.log.clear()
            self.counts.clear()
            self.hello_header = "Name"
            await respond(send, 200, b"{}")
        else:
            await respond(send, 404, b"{}")


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "resultType": "complete"}


async def respond(send: Any, status: int, body: bytes, content_type: str = "application/json", extra: Any = ()) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sse", action="store_true")
    parser.add_argument("--ttl-ms", type=int, default=300_000)
    parser.add_argument("--scope", choices=["public", "private"], default="private")
    parser.add_argument("--page-size", type=int)
    parser.add_argument("--token", action="append", default=[])
    args = parser.parse_args()
    app = Upstream(args)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.errorlog = None
    config.keep_alive_timeout = 60

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(serve, app, config)  # type: ignore[arg-type]
            sys.stdout.write(f"READY {binds[0]}{PATH}\n")
            sys.stdout.flush()

    with contextlib.suppress(KeyboardInterrupt):
        trio.run(run)


if __name__ == "__main__":
    main()
