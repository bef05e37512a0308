"""Shared helpers of the gate's tests: the unchecked upstream app, modern requests, and servers in processes."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from mcpfsm._tooling.server_process import _started
from tests.gate.upstream import Upstream

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "gate-tests", "version": "1"},
}


def upstream_app(**options: Any) -> Upstream:
    """The unchecked upstream's ASGI app, in process."""
    settings = {"sse": False, "ttl_ms": 300_000, "scope": "private", "page_size": None, "token": []}
    settings.update(options)
    return Upstream(argparse.Namespace(**settings))


def call(tool: str, arguments: dict[str, Any] | None = None, request_id: int | str = 1) -> bytes:
    """A modern tools/call body."""
    params = {"name": tool, "arguments": arguments or {}, "_meta": META}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


def request(method: str, params: dict[str, Any] | None = None, request_id: int | str = 1) -> bytes:
    """A modern request body of any method."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**(params or {}), "_meta": META}}
    return json.dumps(body).encode()


def headers(method: str = "tools/call", name: str | None = None, **params: str) -> list[tuple[str, str]]:
    """The headers a modern client sends: version, Mcp-Method, Mcp-Name, and Mcp-Param-{token} for each param."""
    sent = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", VERSION),
        ("mcp-method", method),
    ]
    if name is not None:
        sent.append(("mcp-name", name))
    sent += [(f"mcp-param-{token}", value) for token, value in params.items()]
    return sent


def reached(app: Upstream) -> list[str | None]:
    """The JSON-RPC methods of the requests that reached the upstream app, in order."""
    return [entry.get("jsonrpc_method") for entry in app.log if "event" not in entry]


@contextmanager
def running(argv: list[str], timeout: float = 30.0) -> Iterator[tuple[Any, str]]:
    """A server process started with ``argv``: (process, URL of its READY line), stopped after the block."""
    with _started(argv, None, timeout) as (process, url):
        yield process, url


@contextmanager
def upstream_process(*options: str) -> Iterator[str]:
    """tests/gate/upstream.py in a process; yields its MCP URL."""
    with running([sys.executable, "-m", "tests.gate.upstream", *options]) as (_, url):
        yield url


@contextmanager
def proxy_process(upstream: str, *options: str) -> Iterator[tuple[Any, str]]:
    """``mcpfsm gate --upstream UPSTREAM`` in a process; yields (process, its URL)."""
    with running([sys.executable, "-m", "mcpfsm", "gate", "--upstream", upstream, *options]) as started:
        yield started


def control(url: str, path: str) -> Any:
    """GET a control path of a test server (``/control/log``, ``/control/counts``, ``/control/gate``)."""
    return httpx.get(url.rsplit("/", 1)[0] + path, timeout=30).json()


@pytest.fixture
def upstream_url() -> Iterator[str]:
    with upstream_process("--sse") as url:
        yield url


class Answer:
    """What an in-process ASGI app answered: status, header fields (lowercase names) and body."""

    def __init__(self, status: int, fields: list[tuple[bytes, bytes]], body: bytes) -> None:
        self.status = status
        self.fields = fields
        self.body = body

    def header(self, name: str) -> str | None:
        for key, value in self.fields:
            if key.decode("latin-1").lower() == name:
                return value.decode("latin-1")
        return None

    def json(self) -> Any:
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"Answer({self.status}, {self.body[:200]!r})"


async def asgi(
    app: Any,
    sent: list[tuple[str, str]],
    body: bytes = b"",
    *,
    method: str = "POST",
    path: str = "/mcp",
    chunks: list[bytes] | None = None,
) -> Answer:
    """One HTTP request to ``app`` in process, under whichever event loop runs (anyio); its whole answer.

    ``chunks``: the body in several ``http.request`` messages instead of one.
    """
    import anyio

    pieces = chunks if chunks is not None else [body]
    queue = [
        {"type": "http.request", "body": piece, "more_body": index < len(pieces) - 1}
        for index, piece in enumerate(pieces)
    ]
    done = anyio.Event()
    status = 0
    fields: list[tuple[bytes, bytes]] = []
    parts: list[bytes] = []

    async def receive() -> dict[str, Any]:
        if queue:
            return queue.pop(0)
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, fields
        if message["type"] == "http.response.start":
            status = message["status"]
            fields = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in sent],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    await app(scope, receive, send)
    return Answer(status, fields, b"".join(parts))
