"""Long-lived streams may be silent for any time: no read timeout ends them (review must-fix 7).

A ``subscriptions/listen`` stream (MCP 2026-07-28 "Subscriptions") and a legacy session's standalone ``GET``
stream (MCP 2025-11-25 "Listening for Messages from the Server") carry something only when the server has
something to say. The read timeout (``timeout=``, 300 s by default) bounds each wait for more of a request's
own answer, and the wait for a stream's response head, but never the silences of such a stream. A raw socket
server on 127.0.0.1 stays silent for an hour of trio's autojump clock; the client's timeout is one second.
"""

from __future__ import annotations

import json
from typing import Any, Final

import httpx
import pytest
import trio
import trio.testing

import mcpfsm
from tests.support.rawserver import Seen, Server, no_stream, ok, rpc, serving

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
SUB_ID: Final = "io.modelcontextprotocol/subscriptionId"
HOUR: Final = 3600.0
SSE_HEAD: Final = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
)


def chunk(message: dict[str, Any]) -> bytes:
    data = b"data: " + json.dumps(message).encode() + b"\n\n"
    return b"%x\r\n" % len(data) + data + b"\r\n"


def notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


async def test_a_subscription_silent_for_an_hour_is_still_open(clock: trio.testing.MockClock) -> None:
    async def listen(stream: trio.abc.Stream, seen: Seen) -> bool:
        request_id = json.loads(seen.body)["id"]
        meta = {SUB_ID: request_id}
        acknowledged = notification(
            "notifications/subscriptions/acknowledged", {"notifications": {"toolsListChanged": True}, "_meta": meta}
        )
        await stream.send_all(SSE_HEAD + chunk(acknowledged))
        await trio.sleep(HOUR)
        await stream.send_all(chunk(notification("notifications/tools/list_changed", {"_meta": meta})))
        end = {"jsonrpc": "2.0", "id": request_id, "result": {"resultType": "complete", "_meta": meta}}
        await stream.send_all(chunk(end) + b"0\r\n\r\n")
        return True

    server = Server()
    server.queue(rpc({"supportedVersions": [MODERN]}), listen)
    async with serving(server):
        client = mcpfsm.Client.http(f"http://127.0.0.1:{server.port}/mcp", timeout=1.0)
        async with client, client.listen(tools=True) as subscription:
            started = trio.current_time()
            received = [(note.method, note.params) async for note in subscription]

    assert received == [("notifications/tools/list_changed", {"_meta": {SUB_ID: 2}})]
    assert trio.current_time() - started >= HOUR


async def test_a_request_still_times_out_after_the_read_timeout(clock: trio.testing.MockClock) -> None:
    # The same silence on a tool call's own answer stream is a ReadTimeout: only long-lived streams are exempt.
    async def silent(stream: trio.abc.Stream, seen: Seen) -> bool:
        await stream.send_all(SSE_HEAD)
        await trio.sleep(HOUR)
        return False

    server = Server()
    server.queue(rpc({"supportedVersions": [MODERN]}), silent)
    async with serving(server), mcpfsm.Client.http(f"http://127.0.0.1:{server.port}/mcp", timeout=1.0) as client:
        started = trio.current_time()
        with pytest.raises(mcpfsm.TransportError, match=r"^reading the event stream timed out \(ReadTimeout\)$"):
            await client.call_tool("echo", {})
        assert 1.0 <= trio.current_time() - started < 2.0


async def test_the_legacy_standalone_stream_silent_for_an_hour_still_brings_the_servers_request(
    clock: trio.testing.MockClock,
) -> None:
    answered = trio.Event()
    elicit = {
        "jsonrpc": "2.0",
        "id": "e-1",
        "method": "elicitation/create",
        "params": {"message": "Who?", "requestedSchema": {"type": "object", "properties": {}}},
    }

    async def standalone(stream: trio.abc.Stream, seen: Seen) -> bool:
        await stream.send_all(SSE_HEAD)
        await trio.sleep(HOUR)
        await stream.send_all(chunk(elicit))
        await answered.wait()
        await stream.send_all(b"0\r\n\r\n")
        return True

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        answered.set()
        return await ok(b"", status=202, headers=[])(stream, seen)

    initialize = rpc(
        {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "raw", "version": "1"}},
        headers=[("Content-Type", "application/json"), ("Mcp-Session-Id", "s-1")],
    )
    server = Server()
    server.queue(initialize, ok(b"", status=202, headers=[]), standalone, answer, no_stream())

    async def on_elicitation(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "decline"}

    async with serving(server):
        client = mcpfsm.Client.http(
            f"http://127.0.0.1:{server.port}/mcp", protocol=LEGACY, timeout=1.0, on_elicitation=on_elicitation
        )
        async with client:
            started = trio.current_time()
            await answered.wait()
            waited = trio.current_time() - started

    assert waited >= HOUR
    assert [seen.request_line for seen in server.seen] == [
        "POST /mcp HTTP/1.1",
        "POST /mcp HTTP/1.1",
        "GET /mcp HTTP/1.1",
        "POST /mcp HTTP/1.1",
        "DELETE /mcp HTTP/1.1",
    ]
    assert json.loads(server.seen[3].body) == {"jsonrpc": "2.0", "id": "e-1", "result": {"action": "decline"}}


async def test_a_callers_httpx_transport_gets_no_read_timeout_for_long_lived_streams_only() -> None:
    # httpx applies one read timeout to the head and the body alike: a long-lived stream gets none at all.
    timeouts: list[tuple[str, str | None, dict[str, float | None]]] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        timeouts.append((request.method, body.get("method"), request.extensions["timeout"]))
        if request.method == "GET":
            return httpx.Response(405)
        if "id" not in body:
            return httpx.Response(202)
        if body["method"] == "initialize":
            result = {"protocolVersion": LEGACY, "capabilities": {}}
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result})
        meta = {SUB_ID: body["id"]}
        acknowledged = notification(
            "notifications/subscriptions/acknowledged", {"notifications": {}, "_meta": meta}
        )
        end = {"jsonrpc": "2.0", "id": body["id"], "result": {"_meta": meta}}
        events = b"".join(b"data: " + json.dumps(m).encode() + b"\n\n" for m in (acknowledged, end))
        return httpx.Response(200, content=events, headers={"Content-Type": "text/event-stream"})

    for protocol in (MODERN, LEGACY):
        client = mcpfsm.Client.http(
            "http://mcp.test/mcp", protocol=protocol, timeout=7.0, http_transport=httpx.MockTransport(handler)
        )
        async with client:
            if protocol == MODERN:
                async with client.listen(tools=True) as subscription:
                    assert [note async for note in subscription] == []

    bounded = {"connect": 7.0, "read": 7.0, "write": 7.0, "pool": 7.0}
    unbounded = {**bounded, "read": None}
    assert timeouts == [
        ("POST", "subscriptions/listen", unbounded),
        ("POST", "initialize", bounded),
        ("POST", "notifications/initialized", bounded),
        ("GET", None, unbounded),
    ]
