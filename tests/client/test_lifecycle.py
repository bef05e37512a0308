"""A client's lifecycle under concurrency: one handshake for concurrent first uses (review should-fix 1).

Every public method connects first. Three tasks that use a client that was never entered must share one
``initialize`` (the others wait: the client is ``connecting``), not open three legacy sessions of which two are
never ended. A failed handshake fails every task that waited for it with the same error and leaves the client
able to try again; a cancelled one hands over to a waiting task; a client closed meanwhile stays closed.
"""

from __future__ import annotations

import json
from typing import Any, Final

import httpx
import pytest
import trio
import trio.testing

import mcpfsm
from mcpfsm._client.lifecycle import Stage

LEGACY: Final = "2025-11-25"
URL: Final = "http://mcp.test/mcp"


class Legacy:
    """A legacy server (an httpx.MockTransport handler) that records what it receives, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, str | None]] = []
        self.initialize_fails = 0
        # This many initialize requests are never answered (their task must be cancelled).
        self.held = 0
        self.initializing = trio.Event()
        self.sessions = 0

    async def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        session = request.headers.get("mcp-session-id")
        self.seen.append((request.method, body.get("method"), session))
        if request.method == "GET":
            return httpx.Response(405)
        if request.method == "DELETE" or "id" not in body:
            return httpx.Response(202)
        if body["method"] == "initialize":
            self.initializing.set()
            # Every caller's task is inside connect() before the handshake answers.
            await trio.testing.wait_all_tasks_blocked()
            if self.held:
                self.held -= 1
                await trio.sleep_forever()
            if self.initialize_fails:
                self.initialize_fails -= 1
                return httpx.Response(503, text="starting up")
            self.sessions += 1
            result = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "x", "version": "1"}}
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": body["id"], "result": result}
            return httpx.Response(200, json=reply, headers={"Mcp-Session-Id": f"s{self.sessions}"})
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": {"content": []}})

    def client(self) -> mcpfsm.Client:
        return mcpfsm.Client.http(URL, protocol=LEGACY, http_transport=httpx.MockTransport(self.handle))


HANDSHAKE: Final = [("POST", "initialize", None), ("POST", "notifications/initialized", "s1"), ("GET", None, "s1")]


async def test_concurrent_first_calls_share_one_handshake() -> None:
    server = Legacy()
    client = server.client()
    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(client.call_tool, "x", {})
    await client.aclose()

    assert server.seen == [*HANDSHAKE, *[("POST", "tools/call", "s1")] * 3, ("DELETE", None, "s1")]


async def test_a_failed_handshake_fails_every_waiting_call_once_and_the_next_use_tries_again() -> None:
    server = Legacy()
    server.initialize_fails = 1
    client = server.client()
    failures: list[str] = []

    async def call() -> None:
        try:
            await client.call_tool("x", {})
        except mcpfsm.TransportError as exc:
            failures.append(str(exc))

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(call)
    assert failures == ["HTTP 503 Service Unavailable (starting up)"] * 3
    assert server.seen == [("POST", "initialize", None)]
    assert client._lifecycle.stage is Stage.new

    assert (await client.call_tool("x", {})).content == []
    await client.aclose()
    assert server.seen == [
        ("POST", "initialize", None),
        *HANDSHAKE,
        ("POST", "tools/call", "s1"),
        ("DELETE", None, "s1"),
    ]


async def test_a_cancelled_handshake_hands_over_to_a_waiting_call() -> None:
    server = Legacy()
    server.held = 1
    client = server.client()
    results: list[object] = []

    async def waiter() -> None:
        results.append((await client.call_tool("x", {})).content)

    async with trio.open_nursery() as nursery:
        with trio.CancelScope() as first:
            async with trio.open_nursery() as starter:
                starter.start_soon(client.connect)
                await server.initializing.wait()
                nursery.start_soon(waiter)
                await trio.testing.wait_all_tasks_blocked()
                assert client._lifecycle.stage is Stage.connecting
                first.cancel()
        assert first.cancelled_caught
    await client.aclose()

    assert results == [[]]
    assert server.seen == [
        ("POST", "initialize", None),
        *HANDSHAKE,
        ("POST", "tools/call", "s1"),
        ("DELETE", None, "s1"),
    ]


async def test_a_client_closed_while_connecting_stays_closed() -> None:
    server = Legacy()
    server.held = 1
    client = server.client()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.connect)
        await server.initializing.wait()
        await client.aclose()
        nursery.cancel_scope.cancel()

    assert client._lifecycle.stage is Stage.closed
    with pytest.raises(mcpfsm.TransportError, match=r"^the client is closed$"):
        await client.call_tool("x", {})
