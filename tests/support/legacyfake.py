"""``LegacyFake``: a session-ful legacy (2025-11-25) MCP server over ``httpx.MockTransport``, and its message helpers.

``initialize`` assigns a session, the standalone ``GET`` stream carries whatever a test pushes onto it, and each
``tools/call`` answers with an event stream that a test scripts as an async generator, which may wait for the
client's answer to a request it sent. Used by ``tests/transports/test_server_requests.py`` and
``tests/client/test_input_audit.py``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Final

import httpx
import trio

import mcpfsm
from mcpfsm._transports.http import HttpTransport

URL: Final = "http://legacy.test/mcp"
LEGACY: Final = "2025-11-25"
SESSION: Final = "s-1"
DEFAULTS: Final = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
    },
    "required": [],
}
ELICIT: Final = {"message": "Please accept with defaults", "requestedSchema": DEFAULTS}
SESSION_HEADERS: Final = {"mcp-protocol-version": LEGACY, "mcp-session-id": SESSION}


def sse_event(message: dict[str, Any], *, event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: message\ndata: {json.dumps(message)}\n\n".encode()


def request(request_id: str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


class Body(httpx.AsyncByteStream):
    """A response body produced by an async iterator; records whether the client closed it."""

    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self.chunks = chunks
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.chunks:
            yield chunk

    async def aclose(self) -> None:
        self.closed = True


@dataclass(frozen=True, slots=True)
class Sent:
    http: str
    body: Any
    headers: dict[str, str]


CallScript = Callable[["LegacyFake", dict[str, Any]], AsyncIterator[dict[str, Any]]]


class LegacyFake:
    """See the module docstring. ``get`` scripts each standalone GET: a status, or an async iterator of chunks."""

    def __init__(self, call: CallScript | None = None) -> None:
        self.sent: list[Sent] = []
        self.call = call
        self.pushed, self._pushed = trio.open_memory_channel[bytes](100)
        self.answers: dict[Any, dict[str, Any]] = {}
        self._answered: dict[Any, trio.Event] = {}
        self.streams: list[Body] = []
        self.gets: list[int | Callable[[], AsyncIterator[bytes]]] = []

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def client(self, sleeps: list[float] | None = None, **options: Any) -> mcpfsm.Client:
        async def sleep(seconds: float) -> None:
            if sleeps is not None:
                sleeps.append(seconds)

        transport = HttpTransport(URL, transport=self.transport(), sleep=sleep)
        return mcpfsm.Client(transport, protocol=LEGACY, **options)

    async def answer_to(self, request_id: Any) -> dict[str, Any]:
        """Wait until the client answered the server's request ``request_id``; the answer message."""
        await self._answered.setdefault(request_id, trio.Event()).wait()
        return self.answers[request_id]

    def calls(self) -> list[tuple[str, str | None]]:
        return [(s.http, s.body.get("method") if isinstance(s.body, dict) else None) for s in self.sent]

    async def _standalone(self) -> AsyncIterator[bytes]:
        async for chunk in self._pushed:
            yield chunk

    def _stream(self, chunks: AsyncIterator[bytes]) -> httpx.Response:
        body = Body(chunks)
        self.streams.append(body)
        return httpx.Response(200, headers={"Content-Type": "text/event-stream"}, stream=body)

    async def handle(self, http: httpx.Request) -> httpx.Response:
        body = json.loads(http.content) if http.content else None
        headers = {k: v for k, v in http.headers.items() if k.startswith("mcp-") or k in ("accept", "last-event-id")}
        self.sent.append(Sent(http=http.method, body=body, headers=headers))
        if http.method == "DELETE":
            return httpx.Response(200)
        if http.method == "GET":
            scripted = self.gets.pop(0) if self.gets else None
            if isinstance(scripted, int):
                return httpx.Response(scripted)
            return self._stream(scripted() if scripted is not None else self._standalone())
        assert isinstance(body, dict)
        method = body.get("method")
        if method is None:  # the client's answer to one of our requests
            self.answers[body["id"]] = body
            self._answered.setdefault(body["id"], trio.Event()).set()
            return httpx.Response(202)
        if method == "initialize":
            value = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "legacy", "version": "1"}}
            reply = {"jsonrpc": "2.0", "id": body["id"], "result": value}
            return httpx.Response(200, json=reply, headers={"Mcp-Session-Id": SESSION})
        if method == "notifications/initialized":
            return httpx.Response(202)
        if method == "tools/call" and self.call is not None:
            script = self.call(self, body)

            async def chunks() -> AsyncIterator[bytes]:
                async for message in script:
                    yield sse_event(message)

            return self._stream(chunks())
        value = {"content": [{"type": "text", "text": "plain"}]}
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": value})


def done(call: dict[str, Any], text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": call["id"], "result": {"content": [{"type": "text", "text": text}]}}
