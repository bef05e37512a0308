"""MemoryStore: the default store, the whole Store protocol in one process (docs/stores.md)."""

from __future__ import annotations

import trio

from mcpfsm import MemoryStore, MemoryTokenStore, Store


async def test_values_are_copies_both_ways() -> None:
    store = MemoryStore()
    value = {"tokens": {"access_token": "a"}, "keys": ["k1"]}
    await store.set("k", value)
    value["keys"].append("k2")
    got = await store.get("k")
    assert got == {"tokens": {"access_token": "a"}, "keys": ["k1"]}
    assert got is not None
    got["tokens"]["access_token"] = "changed"
    assert await store.get("k") == {"tokens": {"access_token": "a"}, "keys": ["k1"]}
    await store.delete("k")
    await store.delete("k")
    assert await store.get("k") is None


async def test_compare_and_delete_deletes_only_the_expected_value() -> None:
    store: Store = MemoryStore()
    await store.set("tokens", {"access_token": "new"})
    assert await store.compare_and_delete("tokens", {"access_token": "old"}) is False
    assert await store.get("tokens") == {"access_token": "new"}
    assert await store.compare_and_delete("tokens", {"access_token": "new"}) is True
    assert await store.get("tokens") is None
    assert await store.compare_and_delete("tokens", {"access_token": "new"}) is False


async def test_lock_excludes_other_tasks_and_is_released_by_a_cancelled_holder() -> None:
    store = MemoryStore()
    inside = 0
    most = 0

    async def hold() -> None:
        nonlocal inside, most
        async with store.lock("refresh", ttl=5):
            inside += 1
            most = max(most, inside)
            await trio.sleep(0)
            await trio.sleep(0)
            inside -= 1

    async with trio.open_nursery() as nursery:
        for _ in range(10):
            nursery.start_soon(hold)
    assert most == 1

    with trio.CancelScope() as scope:
        async with store.lock("refresh", ttl=5):
            scope.cancel()
            await trio.sleep(1)
    with trio.fail_after(5):
        async with store.lock("refresh", ttl=5):
            pass


def test_the_old_name_is_the_same_class() -> None:
    assert MemoryTokenStore is MemoryStore
    assert repr(MemoryStore()) == "MemoryStore(0 entries)"


def test_a_client_keeps_its_store_and_makes_a_memory_store_when_given_none() -> None:
    import pytest

    from mcpfsm import Client

    mine = MemoryStore()
    assert Client.http("http://127.0.0.1:9/mcp", store=mine).store is mine
    default = Client.http("http://127.0.0.1:9/mcp")
    assert isinstance(default.store, MemoryStore)
    assert default.store is default.store
    for bad in (0, -1, "5"):
        with pytest.raises(ValueError, match="progress_timeout"):
            Client.http("http://127.0.0.1:9/mcp", progress_timeout=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="total_timeout"):
            Client.stdio(["true"], total_timeout=bad)  # type: ignore[arg-type]
