"""Single-flight relist, unit level (MockTransport): a failed relist fails every call that joined it, a
cancelled starter hands the relist to the next call, and every listing method is guarded against loops."""

from __future__ import annotations

import sys
from typing import Any

import httpx
import pytest
import trio

import mcpfsm
from tests.support.fakeserver import FRESH_SQL, MODERN, SQL_ARGS, STALE_SQL, FakeServer, Seen, result, rpc_error, sse


def gated(gate: trio.Event, answer: Any) -> Any:
    async def wait(seen: Seen) -> httpx.Response:
        await gate.wait()
        return await answer(seen)

    return wait


class Watch:
    """Collects events and wakes a waiter once ``count`` calls have entered ``state``."""

    def __init__(self, state: str, count: int) -> None:
        self.events: list[mcpfsm.CallEvent] = []
        self.state, self.count = state, count
        self.reached = trio.Event()

    def __call__(self, event: mcpfsm.CallEvent) -> None:
        self.events.append(event)
        if sum(e.state == self.state for e in self.events) >= self.count:
            self.reached.set()


async def test_a_failed_relist_fails_every_call_that_joined_it(fake: FakeServer) -> None:
    gate = trio.Event()
    watch = Watch("relisting", 2)
    fake.tools = [STALE_SQL]
    fake.queue("tools/list", result({"tools": [STALE_SQL]}), gated(gate, rpc_error(-32603, "listing broke")))
    fake.queue("tools/call", rpc_error(-32020, "stale"), rpc_error(-32020, "stale"))
    errors: list[BaseException] = []
    async with fake.client(protocol=MODERN, on_event=watch) as client:
        tool = (await client.tools()).get("execute-sql")
        assert tool is not None

        async def call() -> None:
            with pytest.raises(mcpfsm.HeaderMismatchError) as caught:
                await tool.call(SQL_ARGS)
            errors.append(caught.value)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            nursery.start_soon(call)
            await watch.reached.wait()
            gate.set()

    # The listing, then two -32020 calls and one relist, in whatever order the tasks ran.
    assert sorted(fake.methods()[1:]) == ["tools/call", "tools/call", "tools/list"]
    assert [(type(e.__cause__).__name__, str(e.__cause__)) for e in errors] == [
        ("RpcError", "JSON-RPC error -32603: listing broke")
    ] * 2
    assert sorted(e.trigger for e in watch.events if e.previous == "relisting") == ["relist_failed"] * 2


async def test_a_cancelled_starter_hands_the_relist_to_a_call_that_joined(fake: FakeServer) -> None:
    gate = trio.Event()
    watch = Watch("relisting", 2)
    starter: list[trio.lowlevel.Task] = []

    def on_event(event: mcpfsm.CallEvent) -> None:
        # Events are published from the call's own task; the first call to enter `relisting` starts the relist.
        if event.state == "relisting" and not starter:
            starter.append(trio.lowlevel.current_task())
        watch(event)

    fake.queue(
        "tools/list",
        result({"tools": [STALE_SQL]}),
        gated(gate, result({"tools": [FRESH_SQL]})),  # never answered: its caller is cancelled
        result({"tools": [FRESH_SQL]}),
    )
    fake.queue("tools/call", rpc_error(-32020, "stale"), rpc_error(-32020, "stale"), result({"content": []}))
    outcome: list[str] = []
    scopes: dict[trio.lowlevel.Task, trio.CancelScope] = {}
    async with fake.client(protocol=MODERN, on_event=on_event) as client:
        tool = (await client.tools()).get("execute-sql")
        assert tool is not None

        async def call() -> None:
            with trio.CancelScope() as scope:
                scopes[trio.lowlevel.current_task()] = scope
                await tool.call(SQL_ARGS)
                outcome.append("succeeded")
            if scope.cancelled_caught:
                outcome.append("cancelled")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            nursery.start_soon(call)
            await watch.reached.wait()
            scopes[starter[0]].cancel()

    assert sorted(outcome) == ["cancelled", "succeeded"]
    # The listing; two -32020 calls and the cancelled relist in whatever order; the joiner's relist and retry.
    assert sorted(fake.methods()[1:4]) == ["tools/call", "tools/call", "tools/list"]
    assert fake.methods()[4:] == ["tools/list", "tools/call"]
    left = [(e.state, e.trigger) for e in watch.events if e.previous == "relisting"]
    assert sorted(left) == [("cancelled", "cancelled"), ("comparing", "relisted")]


@pytest.mark.parametrize(
    ("method", "key", "call"),
    [
        ("resources/list", "resources", "resources"),
        ("resources/templates/list", "resourceTemplates", "resource_templates"),
        ("prompts/list", "prompts", "prompts"),
    ],
)
async def test_every_listing_is_paged_and_guarded(fake: FakeServer, method: str, key: str, call: str) -> None:
    entry = {"uri": "res://a", "uriTemplate": "res://{a}", "name": "a"}
    fake.queue(
        method,
        result({key: [entry], "nextCursor": "c1"}),
        result({key: [entry], "nextCursor": "c2"}),
        result({key: [entry]}),
        result({key: [], "nextCursor": "c1"}),
        result({key: [], "nextCursor": "c1"}),
    )
    async with fake.client(protocol=MODERN) as client:
        listed = await getattr(client, call)()
        repeated = rf"^{method} repeated cursor 'c1': the listing would never end$"
        with pytest.raises(mcpfsm.ProtocolError, match=repeated):
            await getattr(client, call)()

    assert len(listed) == 3
    assert [s.params.get("cursor") for s in fake.requests if s.rpc_method == method] == [None, "c1", "c2", None, "c1"]


async def test_a_malformed_listing_entry_is_a_protocol_error(fake: FakeServer) -> None:
    fake.queue("prompts/list", result({"prompts": [{"title": "no name"}]}))
    async with fake.client(protocol=MODERN) as client:
        with pytest.raises(mcpfsm.ProtocolError, match=r'^prompts/list entry #0 has no string "name"$'):
            await client.prompts()
        fake.queue("prompts/list", result({"prompts": []}))
        assert await client.prompts() == []


STDIO = [sys.executable, "-m", "tests.support.peer.server", "--stdio"]


@pytest.mark.parametrize(
    ("era", "acknowledged"),
    [
        ("2026-07-28", {"toolsListChanged": True, "resourceSubscriptions": ["res://static/readme"]}),
        ("2025-11-25", {"toolsListChanged": True, "resourceSubscriptions": ["res://static/readme"]}),
    ],
)
async def test_listen_over_stdio_opens_and_ends_cleanly(era: str, acknowledged: dict[str, Any]) -> None:
    from tests.support.peer.fixtures import REPO_ROOT

    async with mcpfsm.Client.stdio(STDIO, cwd=str(REPO_ROOT), protocol=era) as client:
        async with client.listen(tools=True, resource_uris=["res://static/readme"]) as subscription:
            assert subscription.acknowledged == acknowledged
        assert (await client.read_resource("res://static/readme")).text == "hello from a static resource"


ACK = {
    "jsonrpc": "2.0",
    "method": "notifications/subscriptions/acknowledged",
    "params": {"notifications": {"toolsListChanged": True}, "_meta": {"io.modelcontextprotocol/subscriptionId": 1}},
}
CHANGED = {
    "jsonrpc": "2.0",
    "method": "notifications/tools/list_changed",
    "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 1}},
}
OTHER = {**CHANGED, "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 99}}}


async def test_a_refused_listen_raises_the_servers_error(fake: FakeServer) -> None:
    async with fake.client(protocol=MODERN) as client:
        with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32601: Method not found: subscriptions/listen$"):
            async with client.listen(tools=True):
                raise AssertionError("entered a refused subscription")


async def test_an_error_in_the_block_propagates_unwrapped(fake: FakeServer) -> None:
    fake.queue("subscriptions/listen", sse(result({}), before=[ACK]))
    async with fake.client(protocol=MODERN) as client:
        with pytest.raises(ZeroDivisionError):
            async with client.listen(tools=True):
                1 / 0  # noqa: B018


async def test_a_graceful_end_yields_the_notifications_of_this_subscription_only(fake: FakeServer) -> None:
    fake.queue(
        "subscriptions/listen",
        sse(result({"_meta": {"io.modelcontextprotocol/subscriptionId": 1}}), before=[ACK, OTHER, CHANGED]),
    )
    async with fake.client(protocol=MODERN) as client, client.listen(tools=True) as subscription:
        received = [notification async for notification in subscription]

    assert [(n.method, n.params) for n in received] == [(CHANGED["method"], CHANGED["params"])]
    assert [s.params["notifications"] for s in fake.requests] == [{"toolsListChanged": True}]


async def test_a_broken_stream_raises_and_drops_the_listing_it_covered(fake: FakeServer) -> None:
    fake.queue("tools/list", result({"tools": [], "ttlMs": 60_000}))
    fake.queue("subscriptions/listen", sse(before=[ACK]))  # ends without the listen's result
    async with fake.client(protocol=MODERN) as client:
        await client.tools()
        assert client.cache is not None and len(client.cache) == 1
        with pytest.raises(mcpfsm.TransportError, match=r"^the server closed the event stream before answering"):
            async with client.listen(tools=True) as subscription:
                await subscription.receive()
        assert len(client.cache) == 0


async def test_a_stream_that_ends_before_its_acknowledgement_is_a_protocol_error(fake: FakeServer) -> None:
    fake.queue("subscriptions/listen", sse(result({})))
    async with fake.client(protocol=MODERN) as client:
        with pytest.raises(mcpfsm.ProtocolError, match=r"^the server ended subscriptions/listen before acknowledging"):
            async with client.listen(tools=True):
                raise AssertionError("entered an unacknowledged subscription")
