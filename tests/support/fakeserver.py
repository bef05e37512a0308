"""A scriptable modern-era MCP server for unit tests: an ``httpx.MockTransport`` handler.

``FakeServer`` answers ``server/discover`` for ``2026-07-28``, serves ``tools/list`` pages from
``fake.tools`` (``page_size`` per page, cursors ``"page-2"``, ``"page-3"``, …) and answers
``tools/call`` with ``fake.call_result``. A test scripts anything else by queueing answers per
JSON-RPC method with :meth:`FakeServer.queue`; each queued answer is used once, in order::

    fake.queue("tools/call", rpc_error(-32020, "Header mismatch"), result({"content": []}))

Every request is recorded as a :class:`Seen` (HTTP method, JSON-RPC method, id, params and the
headers as sent), so tests can assert the whole wire exchange.

The module also holds the ``execute-sql`` tool whose listing goes stale, which the recovery,
cancellation and event tests script: ``STALE_SQL`` as the client first lists it, ``FRESH_SQL``
after the server annotated ``region`` too, the arguments ``SQL_ARGS`` and the headers each
definition's plan sends for them (``SENT_STALE``, ``SENT_FRESH``).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
import trio

import mcpfsm

__all__ = [
    "FRESH_SQL",
    "MODERN",
    "SENT_FRESH",
    "SENT_STALE",
    "SQL_ARGS",
    "STALE_SQL",
    "URL",
    "Answer",
    "FakeServer",
    "Seen",
    "blocks",
    "raises",
    "response",
    "result",
    "rpc_error",
    "sse",
]

MODERN: Final = "2026-07-28"
URL: Final = "http://fake.test/mcp"
_RECORDED: Final = ("accept", "content-type")

_DATABASE: Final = {"type": "string", "x-mcp-header": "Database"}
STALE_SQL: Final = {
    "name": "execute-sql",
    "inputSchema": {"type": "object", "properties": {"database": _DATABASE, "region": {"type": "string"}}},
}
FRESH_SQL: Final = {
    "name": "execute-sql",
    "inputSchema": {
        "type": "object",
        "properties": {"database": _DATABASE, "region": {"type": "string", "x-mcp-header": "Region"}},
    },
}
SQL_ARGS: Final = {"database": "analytics", "region": "us-west1"}
SENT_STALE: Final = {
    "MCP-Protocol-Version": MODERN,
    "Mcp-Method": "tools/call",
    "Mcp-Name": "execute-sql",
    "Mcp-Param-Database": "analytics",
}
SENT_FRESH: Final = {**SENT_STALE, "Mcp-Param-Region": "us-west1"}

Answer = Callable[["Seen"], Awaitable[httpx.Response]]
"""One scripted answer: builds the HTTP response to the request it is used for (may block)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    """One HTTP request the fake received.

    ``headers`` holds the protocol headers (``mcp-*``) plus Accept and Content-Type, with names as
    sent; ``raw_headers`` holds every header in order, names as sent.
    """

    http_method: str
    rpc_method: str | None
    id: Any
    params: Any
    headers: dict[str, str]
    raw_headers: list[tuple[str, str]] = field(repr=False)

    @property
    def mcp(self) -> dict[str, str]:
        """Only the ``mcp-*`` headers, names as sent."""
        return {name: value for name, value in self.headers.items() if name.lower().startswith("mcp-")}


def _envelope(request_id: Any, **member: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, **member}


def result(value: Any, *, status: int = 200) -> Answer:
    """Answer with a JSON-RPC result (any JSON value, so malformed results can be scripted)."""

    async def answer(seen: Seen) -> httpx.Response:
        return httpx.Response(status, json=_envelope(seen.id, result=value))

    return answer


def rpc_error(code: int, message: str = "error", *, status: int = 400, data: Any = None) -> Answer:
    """Answer with a JSON-RPC error object in an ``application/json`` body of HTTP ``status``."""

    async def answer(seen: Seen) -> httpx.Response:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        return httpx.Response(status, json=_envelope(seen.id, error=error))

    return answer


def sse(
    inner: Answer | None = None, *, before: Iterable[Mapping[str, Any]] = (), prefix: bytes = b""
) -> Answer:
    """Answer with an HTTP 200 ``text/event-stream``: ``prefix``, one event per message of
    ``before`` (e.g. notifications), then the JSON-RPC body ``inner`` would have sent.

    Without ``inner`` the stream ends before any response.
    """

    async def answer(seen: Seen) -> httpx.Response:
        chunks = [prefix]
        for message in before:
            chunks.append(b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n")
        if inner is not None:
            body = (await inner(seen)).content
            chunks.append(b"event: message\ndata: " + body + b"\n\n")
        return httpx.Response(200, headers={"Content-Type": "text/event-stream"}, content=b"".join(chunks))

    return answer


def response(value: httpx.Response) -> Answer:
    """Answer with exactly this HTTP response."""

    async def answer(seen: Seen) -> httpx.Response:
        return value

    return answer


def raises(error: BaseException) -> Answer:
    """Raise ``error`` from the transport (e.g. ``httpx.ConnectError``) instead of answering."""

    async def answer(seen: Seen) -> httpx.Response:
        raise error

    return answer


def blocks(then: Answer | None = None, *, seconds: float = float("inf")) -> Answer:
    """Sleep for ``seconds`` (forever by default) with ``trio.sleep``, then answer like ``then``."""

    async def answer(seen: Seen) -> httpx.Response:
        await trio.sleep(seconds)
        if then is None:
            raise AssertionError("a blocking answer was not cancelled")
        return await then(seen)

    return answer


class FakeServer:
    """A modern-era MCP server as an ``httpx.MockTransport`` handler; see the module docstring.

    Args:
        tools: the tool entries ``tools/list`` serves (``fake.tools`` may be replaced any time).
        page_size: tools per ``tools/list`` page; ``None`` serves one page.
    """

    def __init__(self, tools: Iterable[Mapping[str, Any]] = (), *, page_size: int | None = None) -> None:
        self.tools: list[Mapping[str, Any]] = list(tools)
        self.page_size = page_size
        self.call_result: dict[str, Any] = {"content": [{"type": "text", "text": "ok"}]}
        self.requests: list[Seen] = []
        self._queued: dict[str, deque[Answer]] = {}

    # --- scripting ---------------------------------------------------------------------------

    def queue(self, method: str, *answers: Answer) -> None:
        """Use ``answers`` (in order, once each) for the next requests of JSON-RPC ``method``."""
        self._queued.setdefault(method, deque()).extend(answers)

    def transport(self) -> httpx.MockTransport:
        """An ``httpx.MockTransport`` driven by this fake."""
        return httpx.MockTransport(self.handle)

    def client(self, **options: Any) -> mcpfsm.Client:
        """``mcpfsm.Client.http`` for this fake; ``options`` go to ``Client.http``."""
        return mcpfsm.Client.http(URL, http_transport=self.transport(), **options)

    # --- what was seen -----------------------------------------------------------------------

    def wire(self) -> list[tuple[str | None, dict[str, str]]]:
        """Every request as (JSON-RPC method, ``mcp-*`` headers as sent)."""
        return [(seen.rpc_method, seen.mcp) for seen in self.requests]

    def methods(self) -> list[str | None]:
        """The JSON-RPC method of every request, in order."""
        return [seen.rpc_method for seen in self.requests]

    def clear(self) -> None:
        """Forget the requests seen so far."""
        self.requests.clear()

    # --- the handler -------------------------------------------------------------------------

    async def handle(self, request: httpx.Request) -> httpx.Response:
        """Record ``request`` and answer it (the ``httpx.MockTransport`` handler)."""
        raw = [(name.decode(), value.decode()) for name, value in request.headers.raw]
        body: Any = json.loads(request.content) if request.content else None
        message = body if isinstance(body, dict) else {}
        seen = Seen(
            http_method=request.method,
            rpc_method=message.get("method"),
            id=message.get("id"),
            params=message.get("params"),
            headers={n: v for n, v in raw if n.lower().startswith("mcp-") or n.lower() in _RECORDED},
            raw_headers=raw,
        )
        self.requests.append(seen)
        queued = self._queued.get(seen.rpc_method or "")
        if queued:
            return await queued.popleft()(seen)
        return await self.default(seen)

    async def default(self, seen: Seen) -> httpx.Response:
        """The answer when nothing is queued for the method (an :data:`Answer` itself)."""
        if seen.rpc_method == "server/discover":
            return await result({"supportedVersions": [MODERN]})(seen)
        if seen.rpc_method == "tools/list":
            return await result(self._page(seen.params))(seen)
        if seen.rpc_method == "tools/call":
            return await result(self.call_result)(seen)
        return await rpc_error(-32601, f"Method not found: {seen.rpc_method}", status=404)(seen)

    def _page(self, params: Any) -> dict[str, Any]:
        cursor = params.get("cursor") if isinstance(params, dict) else None
        index = 0 if cursor is None else int(cursor.removeprefix("page-")) - 1
        size = self.page_size or max(len(self.tools), 1)
        page: dict[str, Any] = {"tools": list(self.tools[index * size : (index + 1) * size])}
        if (index + 1) * size < len(self.tools):
            page["nextCursor"] = f"page-{index + 2}"
        return page

