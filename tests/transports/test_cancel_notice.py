"""Telling the server about a cancelled request (MCP cancellation, per transport): modern Streamable
HTTP closes the response stream and sends nothing more; stdio and legacy HTTP send
``notifications/cancelled`` with the request id, best effort, without delaying the cancellation.

Each test cancels the call once the server side has received it (an event the transport or the scripted
server sets), never after a fixed delay: on a busy machine a delay may end before the call was sent."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import httpx
import trio

import mcpfsm
from mcpfsm._transports.base import InboundHandler, Reply
from tests.support.fakeserver import FakeServer, Seen

HANG_GUARD: Final = 120

LEGACY = "2025-11-25"
ECHO = {"name": "echo", "inputSchema": {"type": "object"}}


class PipeLikeTransport:
    """A custom transport without headers (like stdio): records messages; the first tools/call hangs."""

    carries_headers = False

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.hung = False
        self.hanging = trio.Event()

    async def open(self, inbound: InboundHandler) -> None:
        pass

    async def open_stream(self, headers: Mapping[str, str]) -> bool:
        return False

    async def end_session(self, headers: Mapping[str, str]) -> None:
        pass

    async def send(self, message: str, headers: Mapping[str, str] = {}) -> Reply | None:
        payload = json.loads(message)
        self.sent.append(payload)
        if "id" not in payload:
            return None
        if payload["method"] == "tools/call" and not self.hung:
            self.hung = True
            self.hanging.set()
            await trio.sleep_forever()
        return Reply(json.dumps({"jsonrpc": "2.0", "id": payload["id"], "result": {"content": []}}))

    async def aclose(self) -> None:
        pass


async def cancelled_once_received(received: trio.Event, call: Callable[[], Awaitable[object]]) -> bool:
    """Run ``call``, cancel it once ``received`` is set; True when the cancellation ended it."""
    with trio.fail_after(HANG_GUARD), trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:

            async def cancel() -> None:
                await received.wait()
                scope.cancel()

            nursery.start_soon(cancel)
            await call()
            nursery.cancel_scope.cancel()  # it returned: nothing to cancel, and the test fails below
    return scope.cancelled_caught


async def test_a_cancelled_call_without_a_stream_to_close_sends_notifications_cancelled() -> None:
    transport = PipeLikeTransport()
    async with mcpfsm.Client(transport, protocol="2026-07-28") as client:
        assert await cancelled_once_received(transport.hanging, lambda: client.call_tool("echo", {"text": "hi"}))
        assert (await client.call_tool("echo", {"text": "again"})).content == []
    call, notice, again = transport.sent
    assert call["method"] == "tools/call"
    assert notice == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": call["id"], "reason": "cancelled by the caller"},
    }
    assert again["method"] == "tools/call"
    assert again["id"] != call["id"]


async def test_modern_http_cancels_by_closing_the_stream_and_sends_no_notification(fake: FakeServer) -> None:
    fake.tools = [ECHO]
    received = trio.Event()

    async def hang(seen: Seen) -> httpx.Response:
        received.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    fake.queue("tools/call", hang)
    async with fake.client() as client:
        assert await cancelled_once_received(received, lambda: client.call_tool("echo", {"text": "hi"}))
    assert fake.methods() == ["server/discover", "tools/call"]


async def test_legacy_http_sends_notifications_cancelled_in_the_session() -> None:
    seen: list[tuple[str, Any, dict[str, str]]] = []
    received = trio.Event()

    async def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        mcp = {k: v for k, v in request.headers.items() if k.startswith("mcp-")}
        seen.append((request.method, body, mcp))
        if body is None or "id" not in body:
            return httpx.Response(202)
        if body["method"] == "initialize":
            result = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
            return httpx.Response(
                200, json={"jsonrpc": "2.0", "id": body["id"], "result": result}, headers={"Mcp-Session-Id": "s-1"}
            )
        received.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    client = mcpfsm.Client.http("http://mcp.test/mcp", protocol=LEGACY, http_transport=httpx.MockTransport(handler))
    async with client:
        assert await cancelled_once_received(received, lambda: client.call_tool("echo", {"text": "hi"}))

    posts = [(body["method"], body.get("params"), mcp) for method, body, mcp in seen if method == "POST"]
    call_id = next(body["id"] for method, body, _ in seen if body and body.get("method") == "tools/call")
    assert posts[2:] == [
        (
            "tools/call",
            {"name": "echo", "arguments": {"text": "hi"}},
            {"mcp-protocol-version": LEGACY, "mcp-session-id": "s-1"},
        ),
        (
            "notifications/cancelled",
            {"requestId": call_id, "reason": "cancelled by the caller"},
            {"mcp-protocol-version": LEGACY, "mcp-session-id": "s-1"},
        ),
    ]
