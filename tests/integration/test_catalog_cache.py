"""The response cache and the single-flight relist, counted on the official SDK server's side.

The peer logs every request it receives (``peer.log()``), so a hit is a request that never arrived.
Cache hints come from the peer's ``cache_hints`` control action (SEP-2549: ``ttlMs``, ``cacheScope``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm._core.cache import DEFAULT_MAX_BYTES, CacheStats
from tests.support.fakeserver import FakeServer, result, rpc_error
from tests.support.peer.fixtures import HttpPeer

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
HOUR: Final = {"ttlMs": 3_600_000, "cacheScope": "private"}
SQL_ARGS: Final = {"query": "select 1", "database": "analytics", "region": "eu"}
STORM: Final = 200


def counted(peer: HttpPeer) -> Counter[str]:
    return Counter(entry["jsonrpc_method"] for entry in peer.log() if entry["jsonrpc_method"] is not None)


def hints(peer: HttpPeer, *methods: str, legacy: bool = False, **hint: Any) -> None:
    peer.control({"action": "cache_hints", "hints": {m: hint or HOUR for m in methods}, "legacy": legacy})


async def control(peer: HttpPeer, action: dict[str, Any]) -> None:
    await trio.to_thread.run_sync(peer.control, action)


async def test_a_warm_listing_within_its_ttl_sends_nothing(peer: HttpPeer) -> None:
    hints(peer, "tools/list", "prompts/list", "resources/list", "resources/templates/list")
    peer.control({"action": "paginate", "page_size": 2})
    async with mcpfsm.Client.http(peer.url, protocol=MODERN) as client:
        first = await client.tools()
        cold = counted(peer)
        for _ in range(3):
            assert (await client.tools()).names == first.names
            await client.prompts()
            await client.resources()
            await client.resource_templates()
        stats = client.cache.stats if client.cache is not None else None

    # The tools on pages of two, each page cached on its own.
    pages = -(-len(first) // 2)
    assert pages > 1 and cold == Counter({"tools/list": pages})
    assert counted(peer) == Counter(
        {"tools/list": pages, "prompts/list": 1, "resources/list": 1, "resources/templates/list": 1}
    )
    # Misses: every tool page cold, then the first prompts, resources and templates listing.
    assert stats == CacheStats(hits=3 * pages + 2 * 3, misses=pages + 3)


async def test_without_hints_every_listing_goes_to_the_server(peer: HttpPeer) -> None:
    async with mcpfsm.Client.http(peer.url, protocol=MODERN) as client:
        for _ in range(3):
            await client.tools()

    assert counted(peer) == Counter({"tools/list": 3})


@pytest.mark.parametrize(
    ("options", "fresh", "expected"),
    [({}, True, 3), ({"cache": False}, False, 3), ({}, False, 1)],
    ids=["fresh", "cache-off", "cached"],
)
async def test_fresh_and_cache_false_opt_out(
    peer: HttpPeer, options: dict[str, Any], fresh: bool, expected: int
) -> None:
    hints(peer, "tools/list")
    async with mcpfsm.Client.http(peer.url, protocol=MODERN, **options) as client:
        for _ in range(3):
            await client.tools(fresh=fresh)
        assert (client.cache is None) == (options.get("cache") is False)

    assert counted(peer) == Counter({"tools/list": expected})


async def test_legacy_results_are_never_cached_even_with_hints(peer: HttpPeer) -> None:
    hints(peer, "tools/list", "resources/read", legacy=True)
    async with mcpfsm.Client.http(peer.url, protocol=LEGACY) as client:
        for _ in range(2):
            await client.tools()
            await client.read_resource("res://static/readme")

    assert counted(peer) == Counter(
        {"initialize": 1, "notifications/initialized": 1, "tools/list": 2, "resources/read": 2}
    )


async def test_reads_are_cached_per_uri_and_calls_prompts_and_completions_never(peer: HttpPeer) -> None:
    hints(peer, "resources/read")
    async with mcpfsm.Client.http(peer.url, protocol=MODERN) as client:
        for _ in range(2):
            assert (await client.read_resource("res://static/readme")).text == "hello from a static resource"
            assert (await client.read_resource("res://static/logo")).blobs == [b"\x89PNG\r\n\x1a\nfake"]
            await client.read_resource("res://static/readme", fresh=True)
            await client.get_prompt("greet", {"name": "Ada"})
            await client.complete({"type": "ref/prompt", "name": "greet"}, ("style", ""))
            await client.call_tool("echo", {"text": "x"})

    assert counted(peer) == Counter(
        {"resources/read": 2 + 2, "prompts/get": 2, "completion/complete": 2, "tools/call": 2}
    )


async def test_a_real_list_changed_invalidates_the_cached_listing(peer: HttpPeer) -> None:
    hints(peer, "tools/list", "prompts/list")
    async with mcpfsm.Client.http(peer.url, protocol=MODERN) as client, client.listen(tools=True) as subscription:
        await client.tools()
        await client.prompts()
        await client.tools()
        await control(peer, {"action": "tools_changed"})
        assert (await subscription.receive()).method == "notifications/tools/list_changed"
        await client.tools()
        await client.tools()
        await client.prompts()

    assert counted(peer) == Counter({"subscriptions/listen": 1, "tools/list": 2, "prompts/list": 1})


async def test_a_resource_update_invalidates_that_uri_only(peer: HttpPeer) -> None:
    hints(peer, "resources/read")
    async with (
        mcpfsm.Client.http(peer.url, protocol=MODERN) as client,
        client.listen(resource_uris=["res://static/readme"]) as subscription,
    ):
            await client.read_resource("res://static/readme")
            await client.read_resource("res://static/logo")
            await control(peer, {"action": "resource_updated", "uri": "res://static/readme"})
            assert (await subscription.receive()).params["uri"] == "res://static/readme"
            await client.read_resource("res://static/readme")
            await client.read_resource("res://static/logo")

    readme = [e for e in peer.log() if e["headers"].get("mcp-name") == "res://static/readme"]
    assert (len(readme), counted(peer)["resources/read"]) == (2, 3)


async def test_the_minus_32020_relist_bypasses_the_cache_and_refreshes_it(peer: HttpPeer) -> None:
    hints(peer, "tools/list")
    async with mcpfsm.Client.http(peer.url, protocol=MODERN) as client:
        stale = (await client.tools()).get("execute-sql")
        assert stale is not None
        await control(peer, {"action": "evolve"})
        cached = (await client.tools()).get("execute-sql")
        assert cached is not None and cached.definition == stale.definition  # the cache holds the old listing
        result = await stale.call(SQL_ARGS)
        refreshed = (await client.tools()).get("execute-sql")

    assert result.structured_content == SQL_ARGS
    assert refreshed is not None and refreshed.mirrored == {
        ("database",): "Mcp-Param-Database",
        ("region",): "Mcp-Param-Region",
        ("options", "readOnly"): "Mcp-Param-Read-Only",
    }
    # One listing to start, one relist (not served from the cache); the later tools() is a hit again.
    assert counted(peer) == Counter({"tools/list": 2, "tools/call": 2})


async def test_a_stale_handle_storm_costs_one_relist(peer: HttpPeer) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with mcpfsm.Client.http(peer.url, protocol=MODERN, on_event=events.append) as client:
        tool = (await client.tools()).get("execute-sql")
        assert tool is not None
        await control(peer, {"action": "evolve"})
        await trio.to_thread.run_sync(peer.clear_log)
        results: list[mcpfsm.ToolResult] = []

        async def call() -> None:
            results.append(await tool.call(SQL_ARGS))

        async with trio.open_nursery() as nursery:
            for _ in range(STORM):
                nursery.start_soon(call)

    assert [r.structured_content for r in results] == [SQL_ARGS] * STORM
    assert counted(peer) == Counter({"tools/list": 1, "tools/call": 2 * STORM})
    left_relisting = Counter(e.trigger for e in events if e.previous == "relisting")
    assert left_relisting == Counter({"relisted": 1, "joined": STORM - 1})
    attempts = Counter(e.call_id for e in events if e.state in ("sending", "retrying"))
    assert set(attempts.values()) == {2}
    assert Counter(e.state for e in events if e.state in mcpfsm.TERMINAL) == Counter({"succeeded": STORM})


async def test_a_refused_cursor_after_cached_pages_drops_them_and_lists_again(fake: FakeServer) -> None:
    fake.tools = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(3)]
    hint = {"ttlMs": 60_000, "cacheScope": "private"}
    fake.queue(
        "tools/list",
        result({"tools": fake.tools[:2], "nextCursor": "page-2", **hint}),
        result({"tools": fake.tools[2:], **hint}),
        # The cached first page names a cursor the server no longer knows: -32602 (SEP-2549 "Pagination").
        rpc_error(-32602, "Invalid cursor"),
        result({"tools": fake.tools[:1], "nextCursor": "page-2", **hint}),
        result({"tools": fake.tools[1:], **hint}),
    )
    async with fake.client(protocol=MODERN) as client:
        await client.tools()
        assert client.cache is not None
        client.cache.invalidate("notifications/tools/list_changed")
        stale_page = {"tools": fake.tools[:2], "nextCursor": "gone", **hint}
        client.cache.put((MODERN, "tools/list", None), stale_page, trio.current_time())
        names = (await client.tools()).names

    assert names == ["t0", "t1", "t2"]
    listed = [s.params for s in fake.requests if s.rpc_method == "tools/list"]
    assert [params.get("cursor") if params else None for params in listed] == [
        None,
        "page-2",
        "gone",
        None,
        "page-2",
    ]


async def test_large_resources_read_once_do_not_stay_in_memory(fake: FakeServer) -> None:
    # The fault run: 30 resources of 10 MB, each read once (then dropped by the server), kept 300 MB alive.
    big = "x" * 10_000_000
    fake.queue(
        "resources/read",
        *(result({"contents": [{"uri": f"res://big/{n}", "text": big}], "ttlMs": 3_600_000}) for n in range(30)),
    )
    async with fake.client(protocol=MODERN) as client:
        for number in range(30):
            assert len((await client.read_resource(f"res://big/{number}")).text) == len(big)
        cache = client.cache
        assert cache is not None
        kept = [key[2] for key in cache._entries]

    assert cache.bytes <= DEFAULT_MAX_BYTES < 4 * len(big)
    assert kept == ["res://big/27", "res://big/28", "res://big/29"]
