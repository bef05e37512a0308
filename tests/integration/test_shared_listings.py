"""Shared listings (docs/cache.md): clients given one store share listing pages, counted on the real peer's side.

The peer logs every request it receives; ``cache_hints`` sets ``ttlMs``/``cacheScope`` (SEP-2549). These tests
share one store object between clients of this process; tests/integration/test_fleet.py runs worker processes.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm._client.sharing import DOWN_FOR, STORE_TIMEOUT
from tests.support.peer.fixtures import HttpPeer

MODERN: Final = "2026-07-28"
PUBLIC: Final = {"ttlMs": 3_600_000, "cacheScope": "public"}
PRIVATE: Final = {"ttlMs": 3_600_000, "cacheScope": "private"}
ALICE: Final = "alice-token-3f9d2c7e1b"
BOB: Final = "bob-token-8a4e6d0c5f"


def listed(peer: HttpPeer, method: str = "tools/list") -> int:
    return sum(1 for entry in peer.log() if entry["jsonrpc_method"] == method)


def hints(peer: HttpPeer, hint: dict[str, Any], *methods: str) -> None:
    peer.control({"action": "cache_hints", "hints": {method: hint for method in methods or ("tools/list",)}})


def client(peer: HttpPeer, store: mcpfsm.Store | None, token: str | None = None) -> mcpfsm.Client:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    return mcpfsm.Client.http(peer.url, protocol=MODERN, store=store, headers=headers)


async def names(peer: HttpPeer, store: mcpfsm.Store | None, token: str | None = None) -> list[str]:
    async with client(peer, store, token) as one:
        return (await one.tools()).names


async def test_a_public_listing_is_listed_once_for_every_client_of_one_store(peer: HttpPeer) -> None:
    hints(peer, PUBLIC)
    peer.control({"action": "paginate", "page_size": 2})
    store = mcpfsm.MemoryStore()
    first = await names(peer, store)
    pages = listed(peer)
    later = [await names(peer, store, token) for token in (None, ALICE, BOB)]

    assert pages == -(-len(first) // 2) > 1
    assert later == [first] * 3
    assert listed(peer) == pages


async def test_without_a_store_of_the_callers_each_client_lists_for_itself(peer: HttpPeer) -> None:
    hints(peer, PUBLIC)
    for _ in range(3):
        await names(peer, None)
    assert listed(peer) == 3


async def test_concurrent_fresh_clients_share_one_fill(peer: HttpPeer) -> None:
    hints(peer, PUBLIC, "tools/list", "prompts/list")
    store = mcpfsm.MemoryStore()
    results: list[tuple[list[str], list[str]]] = []

    async def worker() -> None:
        async with client(peer, store) as one:
            tools = await one.tools()
            prompts = await one.prompts()
            results.append((tools.names, [prompt.name for prompt in prompts]))

    async with trio.open_nursery() as nursery:
        for _ in range(20):
            nursery.start_soon(worker)

    assert len(results) == 20 and len(set(map(repr, results))) == 1
    assert (listed(peer), listed(peer, "prompts/list")) == (1, 1)


async def test_a_private_listing_is_shared_within_one_identity_only(peer: HttpPeer) -> None:
    hints(peer, PRIVATE)
    store = mcpfsm.MemoryStore()
    counts = []
    for token in (ALICE, BOB, ALICE, BOB, ALICE, None, None):
        await names(peer, store, token)
        counts.append(listed(peer))

    # One listing per identity; a client without one shares no private page (nor reads one).
    assert counts == [1, 2, 2, 2, 2, 3, 4]


async def test_no_key_or_value_holds_a_token_or_the_server_url(peer: HttpPeer) -> None:
    peer.control({"action": "cache_hints", "hints": {"tools/list": PRIVATE, "prompts/list": PUBLIC}})
    store = mcpfsm.MemoryStore()
    for token in (ALICE, BOB):
        async with client(peer, store, token) as one:
            await one.tools()
            await one.prompts()

    text = json.dumps(store._values)
    assert sorted(key.split(" ")[:2] for key in store._values) == [
        ["cache", "prompts/list"],
        ["cache", "tools/list"],
        ["cache", "tools/list"],
    ]
    for secret in (ALICE, BOB, "alice", "bob", peer.url):
        assert secret not in text


async def test_an_entry_carries_its_absolute_expiry_and_an_expired_one_is_not_used(peer: HttpPeer) -> None:
    hints(peer, {"ttlMs": 600_000, "cacheScope": "public"})
    store = mcpfsm.MemoryStore()
    before = time.time()
    await names(peer, store)
    after = time.time()
    [(key, value)] = store._values.items()
    assert before + 600 <= value["expires_at"] <= after + 600
    assert (value["scope"], value["result"]["ttlMs"]) == ("public", 600_000)

    # Another process wrote it long ago: its absolute expiry has passed, whatever its ttlMs says.
    await store.set(key, value | {"expires_at": before - 1})
    await names(peer, store)
    assert listed(peer) == 2
    assert (await store.get(key) or {})["expires_at"] >= after + 600

    # An expired entry that is read is removed, even when nothing replaces it.
    await store.set(key, value | {"expires_at": before - 1})
    peer.control({"action": "cache_hints", "hints": {}})
    await names(peer, store)
    assert (listed(peer), store._values) == (3, {})


class BrokenStore(mcpfsm.MemoryStore):
    """A store whose every operation fails (a Redis that refuses connections)."""

    calls = 0

    async def get(self, key: str) -> dict[str, Any] | None:
        type(self).calls += 1
        raise ConnectionRefusedError("connection refused")

    @asynccontextmanager
    async def lock(self, key: str, ttl: float, *, wait: float | None = None) -> AsyncIterator[None]:
        type(self).calls += 1
        raise ConnectionRefusedError("connection refused")
        yield


class StuckStore(mcpfsm.MemoryStore):
    """A store whose reads never answer (a Redis behind a dropped route)."""

    async def get(self, key: str) -> dict[str, Any] | None:
        await trio.sleep_forever()
        raise AssertionError("unreachable")


@pytest.mark.parametrize("store_class", [BrokenStore, StuckStore], ids=["failing", "hanging"])
async def test_a_store_that_fails_or_hangs_costs_one_timeout_then_the_server_answers(
    peer: HttpPeer, store_class: type[mcpfsm.MemoryStore], logs: list[dict[str, Any]]
) -> None:
    hints(peer, PUBLIC, "tools/list", "prompts/list")
    async with client(peer, store_class()) as one:
        with trio.fail_after(STORE_TIMEOUT + 5):
            tools = await one.tools()
            await one.prompts()
        stats = one.cache.stats if one.cache is not None else None

    assert tools.names and listed(peer) == listed(peer, "prompts/list") == 1
    # One failure: after it the store counts as down for DOWN_FOR seconds, so prompts/list did not try it.
    assert stats == mcpfsm.CacheStats(hits=0, misses=2, shared_hits=0, store_failures=1)
    warnings = [record["message"] for record in logs if record["level"].name == "WARNING"]
    error = "ConnectionRefusedError" if store_class is BrokenStore else "TimeoutError"
    assert warnings == [
        f"the shared cache store ({store_class.__name__}) failed: {error}; asking the server,"
        f" and not using the store for {DOWN_FOR} s"
    ]
