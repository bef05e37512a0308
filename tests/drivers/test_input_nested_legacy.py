"""Nested input on a legacy stream: a handler whose own ``tools/call`` stream carries a server request.

Against a raw legacy server on 127.0.0.1 (tests/support/rawserver.py): the ``outer`` call's stream asks as many
elicitations as the handler bound allows at once, and each handler calls ``inner``, whose stream asks one more.
The nested requests' handlers must find places of their own, or every outer handler waits forever.
"""

from __future__ import annotations

import json
from typing import Any, Final

import pytest
import trio

from mcpfsm._drivers.input import MAX_CONCURRENT_HANDLERS
from tests.support.layers import connect
from tests.support.rawserver import HOST, Seen, Server, no_stream, ok, serving

LEGACY: Final = "2025-11-25"
FORM: Final = {"type": "object", "properties": {}}


class NestingLegacyServer:
    """``tools/call`` ``outer`` ``{"count": N}``: N elicitations ``outer`` on its stream; ``inner``: one ``inner``.

    Each call's response follows once every request on its stream is answered (the answers are POSTed apart).
    """

    def __init__(self) -> None:
        self.answers: dict[str, trio.Event] = {}
        self.server = Server(default=self.answer)
        self._next = 0

    def _ask(self, message: str) -> tuple[str, bytes]:
        self._next += 1
        request_id = f"q{self._next}"
        self.answers[request_id] = trio.Event()
        request = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "elicitation/create",
            "params": {"message": message, "requestedSchema": FORM},
        }
        return request_id, b"event: message\ndata: " + json.dumps(request).encode() + b"\n\n"

    async def answer(self, stream: trio.abc.Stream, seen: Seen) -> bool:
        line = seen.request_line
        if line.startswith("GET"):
            return await no_stream()(stream, seen)
        if line.startswith("DELETE"):
            return await ok(b"")(stream, seen)
        message = json.loads(seen.body)
        if "method" not in message:  # the client's answer to one of the server's requests
            self.answers[message["id"]].set()
            return await ok(b"", status=202)(stream, seen)
        if message["method"] == "notifications/initialized":
            return await ok(b"", status=202)(stream, seen)
        if message["method"] == "initialize":
            result = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "raw", "version": "1"}}
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\n"
            await stream.send_all(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            return True
        name = message["params"]["name"]
        count = message["params"].get("arguments", {}).get("count", 1)
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        asked = [self._ask(name) for _ in range(count)]
        events = b"".join(event for _, event in asked)
        await stream.send_all(b"%x\r\n%s\r\n" % (len(events), events))
        for request_id, _ in asked:
            await self.answers[request_id].wait()
        content = [{"type": "text", "text": f"{name}: {count} answered"}]
        response = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": content}}
        event = b"event: message\ndata: " + json.dumps(response).encode() + b"\n\n"
        await stream.send_all(b"%x\r\n%s\r\n0\r\n\r\n" % (len(event), event))
        return True


@pytest.mark.parametrize("outer", [MAX_CONCURRENT_HANDLERS, 2 * MAX_CONCURRENT_HANDLERS])
async def test_legacy_handlers_whose_calls_carry_server_requests_do_not_deadlock_the_bound(outer: int) -> None:
    legacy = NestingLegacyServer()
    inner_texts: list[str] = []
    nested = 0

    async def on_elicitation(params: dict[str, Any]) -> dict[str, Any]:
        nonlocal nested
        if params["message"] == "outer":
            inner_texts.append((await client.call_tool("inner", {})).text)
        else:
            nested += 1
        return {"action": "decline"}

    async with (
        serving(legacy.server) as server,
        connect(f"http://{HOST}:{server.port}/mcp", "pool", protocol=LEGACY, on_elicitation=on_elicitation) as client,
    ):
        with trio.fail_after(30):  # a guard only: a deadlock would wait forever
            done = await client.call_tool("outer", {"count": outer})
    assert done.text == f"outer: {outer} answered"
    assert (inner_texts, nested) == (["inner: 1 answered"] * outer, outer)
