"""Many tool calls at once through one client, against the official SDK's server (tests/support/peer).

Bounded in count (CALLS) and, against a hang only, in time (trio.fail_after); nothing here measures speed
(bench/call.py --concurrency 1000 does, as ratios). Every call must succeed with its own answer, every call
must publish its whole event sequence, the server must receive each call exactly once, and the client's
keep-alive pool must never open more connections than its cap.
"""

from __future__ import annotations

from collections import Counter

import trio

import mcpfsm
from mcpfsm._transports.http.routing import _MAX_CONNECTIONS
from tests.support.peer.fixtures import HttpPeer

CALLS = 1000
HANG_GUARD_SECONDS = 300


async def test_a_thousand_concurrent_calls_through_one_client_all_succeed(modern_peer: HttpPeer) -> None:
    events: list[mcpfsm.CallEvent] = []
    texts: list[str] = []
    most_connections = 0
    with trio.fail_after(HANG_GUARD_SECONDS):
        async with mcpfsm.Client.http(modern_peer.url, protocol="2026-07-28", on_event=events.append) as client:
            tool = (await client.tools()).get("execute-sql")
            assert tool is not None
            await trio.to_thread.run_sync(modern_peer.clear_log)
            transport = client.transport
            assert isinstance(transport, mcpfsm.HttpTransport)
            (pool,) = transport._route.pools.values()  # type: ignore[attr-defined]

            async def one(index: int) -> None:
                nonlocal most_connections
                result = await tool.call({"query": f"select {index}", "database": "analytics"})
                most_connections = max(most_connections, pool.connections)
                assert not result.is_error
                texts.append(result.text)

            async with trio.open_nursery() as nursery:
                for index in range(CALLS):
                    nursery.start_soon(one, index)
            log = await trio.to_thread.run_sync(modern_peer.log)
    assert sorted(texts) == sorted(f"executed 'select {index}' on 'analytics'" for index in range(CALLS))
    assert Counter(event.state for event in events) == {
        "resolving": CALLS,
        "planning": CALLS,
        "sending": CALLS,
        "succeeded": CALLS,
    }
    assert len({event.call_id for event in events}) == CALLS
    assert Counter(entry["jsonrpc_method"] for entry in log) == {"tools/call": CALLS}
    assert 1 <= most_connections <= _MAX_CONNECTIONS
