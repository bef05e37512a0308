"""The stores' lock rule (docs/stores.md) on every store kind and form; a ``RedisStore``'s one pool per client.

``lock(key, ttl, *, wait=None)`` waits at most ``wait`` seconds and raises ``StoreLockTimeout``, the bound
living inside the store, so that no caller ever needs a cancel scope of its own around a store's lock (issue 28:
a ``RedisStore`` that was not entered opened a coredis client, a task group, inside such a scope and crashed
its host with "Cancel scope stack corrupted"). Real parts: files in a temporary directory, a real
``redis-server`` (tests/support/redisserver.py), a worker process holding a lock (tests/support/store_worker.py).
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import pytest
import trio
import trio.testing

import mcpfsm
from mcpfsm._client.store_guard import GuardedStore
from tests.support.fleetrun import Fleet
from tests.support.peer.fixtures import REPO_ROOT, HttpPeer
from tests.support.redisserver import RedisServer, answer_of
from tests.support.store_worker import coredis_client

GUARD: Final = 60
FORMS: Final = ["memory", "memory-subclass", "file", "tokenfile", "redis", "redis-bare", "redis-client"]


class Subclass(mcpfsm.MemoryStore):
    """A ``MemoryStore`` subclass of the application's own (guarded like any store that is not a plain one)."""


@contextlib.asynccontextmanager
async def opened(form: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """The store of ``form``, in that form: entered with ``async with``, not entered, or given ``client=``."""
    if form == "memory":
        yield mcpfsm.MemoryStore()
    elif form == "memory-subclass":
        yield Subclass()
    elif form == "file":
        yield mcpfsm.FileStore(tmp_path / "store")
    elif form == "tokenfile":
        yield mcpfsm.FileTokenStore(tmp_path / "tokens.json")
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        prefix = request.getfixturevalue("redis_prefix")
        if form == "redis":
            async with mcpfsm.RedisStore(server.url, prefix=prefix) as store:
                yield store
        elif form == "redis-bare":
            yield mcpfsm.RedisStore(server.url, prefix=prefix)
        else:
            async with coredis_client(server.url) as client:
                yield mcpfsm.RedisStore(client=client, prefix=prefix)


@contextlib.asynccontextmanager
async def held_elsewhere(store: Any, key: str) -> AsyncIterator[None]:
    """``store.lock(key)`` held by another task for the block."""
    done = trio.Event()

    async def hold(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with store.lock(key, 30):
            task_status.started()
            await done.wait()

    async with trio.open_nursery() as nursery:
        await nursery.start(hold)
        try:
            yield
        finally:
            done.set()


@pytest.mark.parametrize("form", FORMS)
async def test_a_lock_held_elsewhere_times_out_inside_the_store(
    form: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    async with opened(form, tmp_path, request) as store:
        async with held_elsewhere(store, "tokens x"):
            with trio.fail_after(GUARD):
                started = trio.current_time()
                with pytest.raises(mcpfsm.StoreLockTimeout) as caught:
                    async with store.lock("tokens x", 30, wait=0.2):
                        raise AssertionError("held twice")
                waited = trio.current_time() - started
            # Another key is free meanwhile, even with no wait at all.
            async with store.lock("tokens y", 30, wait=0):
                pass
        assert caught.value.wait == 0.2 and waited >= 0.2
        assert re.fullmatch(r"\w+: another holder kept the lock for the 0\.2 s this one waited", str(caught.value))
        assert isinstance(caught.value, mcpfsm.StoreError)
        # Released: taken again at once, and the store is usable after the timeout.
        async with store.lock("tokens x", 30, wait=0):
            await store.set("tokens x", {"n": 1})
        assert await store.get("tokens x") == {"n": 1}


@pytest.mark.parametrize("form", FORMS)
async def test_a_lock_freed_while_waited_for_is_taken(
    form: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    async with opened(form, tmp_path, request) as store:
        order: list[str] = []

        async def holder(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            async with store.lock("k", 30):
                task_status.started()
                await trio.sleep(0.2)
                order.append("released")

        with trio.fail_after(GUARD):
            async with trio.open_nursery() as nursery:
                await nursery.start(holder)
                async with store.lock("k", 30, wait=GUARD):
                    order.append("taken")
        assert order == ["released", "taken"]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    ("ttl", "wait", "message"),
    [
        (0, None, "ttl must be a positive number of seconds, got 0"),
        (30, -1, "wait must be None or a number of seconds of at least 0, got -1"),
        (30, "5", "wait must be None or a number of seconds of at least 0, got '5'"),
    ],
    ids=["ttl", "negative-wait", "text-wait"],
)
async def test_lock_arguments_are_checked(
    form: str, ttl: Any, wait: Any, message: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    async with opened(form, tmp_path, request) as store:
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            async with store.lock("k", ttl, wait=wait):
                pass


@pytest.mark.parametrize("form", FORMS)
async def test_a_waiter_cancelled_leaves_the_task_and_the_store_usable(
    form: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # The caller's own scope is cancelled while the store waits for its lock: trio unwinds the wait cleanly.
    async with opened(form, tmp_path, request) as store:
        scope = trio.CancelScope()

        async def waiter() -> None:
            with scope:
                async with store.lock("k", 30):
                    raise AssertionError("held twice")

        async with held_elsewhere(store, "k"), trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked(0.05)
            scope.cancel()
        assert scope.cancelled_caught
        with trio.fail_after(GUARD):
            async with store.lock("k", 30, wait=GUARD):
                pass


def test_a_redis_lock_another_process_holds_times_out(redis_server: RedisServer, redis_prefix: str) -> None:
    with Fleet(
        "tests.support.store_worker",
        [[f"redis:{redis_server.url}", "hold", "k", "30"]],
        {"MCPFSM_TEST_PREFIX": redis_prefix},
    ) as holder:
        assert holder.line(0) == "HELD"

        async def wait_for_it() -> None:
            store = mcpfsm.RedisStore(redis_server.url, prefix=redis_prefix)
            with pytest.raises(mcpfsm.StoreLockTimeout), trio.fail_after(GUARD):
                async with store.lock("k", 30, wait=0.3):
                    pass

        trio.run(wait_for_it)


# --- the guard and the callers: no cancel scope around a store's lock ------------------------------------------


@pytest.mark.parametrize("form", ["redis-bare", "redis", "redis-client", "file", "memory-subclass"])
async def test_the_guard_bounds_a_busy_lock_without_crashing_the_host(
    form: str, tmp_path: Path, request: pytest.FixtureRequest, records: list[tuple[str, str]]
) -> None:
    # issue 28: GuardedStore.lock wrapped the store's lock in trio.fail_after and left it while the lock was
    # held; a RedisStore that was not entered then left a task group behind ("Cancel scope stack corrupted").
    async with opened(form, tmp_path, request) as store:
        guard = GuardedStore(store, timeout=0.2)
        async with guard.lock("tokens x", 1):
            await guard.set("tokens x", {"n": 1})
        async with held_elsewhere(store, "tokens x"):
            with trio.fail_after(GUARD):
                async with guard.lock("tokens x", 0.2):
                    await guard.set("tokens x", {"n": 2})
        assert (guard.down, guard.fallbacks) == (False, 1)
        assert await store.get("tokens x") == {"n": 2}
    assert [message for level, message in records if level == "WARNING"] == [
        f"the store {store!r} waited more than 0.4 s for a lock; this client goes on under a lock of its own"
    ]


async def test_an_unentered_redis_store_in_a_guard_leaves_the_task_sound(redis_server: RedisServer) -> None:
    # The reproduction of issue 28 in one process: before, trio raised TrioInternalError once the run ended.
    store = GuardedStore(mcpfsm.RedisStore(redis_server.url, prefix="sound:"))
    with trio.fail_after(GUARD):
        async with store.lock("k", 5):
            await store.set("k", {"a": 1})
        assert await store.get("k") == {"a": 1}


def test_an_unentered_redis_store_crashes_no_process(redis_server: RedisServer, redis_prefix: str) -> None:
    probe = f"""
import trio, mcpfsm
from mcpfsm._client.store_guard import GuardedStore

async def main():
    store = GuardedStore(mcpfsm.RedisStore({redis_server.url!r}, prefix={redis_prefix!r}))
    async with store.lock("k", 5):
        await store.set("k", {{"a": 1}})
    print(await store.get("k"))

trio.run(main)
"""
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, timeout=GUARD)
    assert (done.returncode, done.stdout, done.stderr) == (0, "{'a': 1}\n", "")


# --- one connection pool per client lifetime --------------------------------------------------------------------


def connections(server: RedisServer) -> int:
    """How many connections the server has accepted since it started."""
    info = answer_of(server.port, "INFO", "stats")
    return int(re.search(r"total_connections_received:(\d+)", info).group(1))  # type: ignore[union-attr]


async def test_a_client_keeps_one_pool_to_an_unentered_redis_store(
    peer: HttpPeer, redis_server: RedisServer, redis_prefix: str
) -> None:
    # Every tools() of this client reads and writes the store (the listing is not cacheable here, so each call
    # misses, locks the page and fills it): before, each operation opened a coredis client, a connection each.
    peer.control({"action": "cache_hints", "hints": {"tools/list": {"ttlMs": 1, "cacheScope": "public"}}})
    store = mcpfsm.RedisStore(redis_server.url, prefix=redis_prefix)
    before = connections(redis_server)
    with trio.fail_after(GUARD):
        async with mcpfsm.Client.http(peer.url, protocol="2026-07-28", store=store) as client:
            for _ in range(10):
                await client.tools(fresh=False)
                await trio.sleep(0.01)
            assert client.cache is not None and client.cache.stats.store_failures == 0
    opened = connections(redis_server) - before
    # One connection multiplexed for the commands, and one for the blocking wait a lock may need.
    assert 1 <= opened <= 2


async def test_clients_in_different_tasks_share_one_pool_and_close_in_any_order(
    peer: HttpPeer, redis_server: RedisServer, redis_prefix: str
) -> None:
    peer.control({"action": "cache_hints", "hints": {"tools/list": {"ttlMs": 600_000, "cacheScope": "public"}}})
    store = mcpfsm.RedisStore(redis_server.url, prefix=redis_prefix)
    before = connections(redis_server)
    first = mcpfsm.Client.http(peer.url, protocol="2026-07-28", store=store)
    second = mcpfsm.Client.http(peer.url, protocol="2026-07-28", store=store)

    async def use(client: mcpfsm.Client) -> None:
        # Connected in this task, closed below in another one.
        await client.tools()

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(use, first)
            nursery.start_soon(use, second)
        await first.aclose()
        assert await store.get("missing") is None  # the second client still holds the pool
        await second.aclose()
    # A few connections, opened as concurrent commands needed them, for the dozen operations of both clients
    # (before: one per operation).
    assert 1 <= connections(redis_server) - before <= 4
    # Once no client holds it, an operation opens the pool for itself and closes it after.
    await store.set("k", {"v": 1})
    assert await store.get("k") == {"v": 1}


def test_a_store_used_by_two_trio_runs_in_turn(redis_server: RedisServer, redis_prefix: str) -> None:
    store = mcpfsm.RedisStore(redis_server.url, prefix=redis_prefix)

    async def use(value: int) -> Any:
        store.retain()
        try:
            with trio.fail_after(GUARD):
                await store.set("k", {"v": value})
                return await store.get("k")
        finally:
            await store.release()

    assert trio.run(use, 1) == {"v": 1}
    assert trio.run(use, 2) == {"v": 2}


# --- keys that never collide ------------------------------------------------------------------------------------


async def test_nested_redis_prefixes_never_collide(redis_server: RedisServer, redis_prefix: str) -> None:
    # docs/stores.md: `app:` and `app:lock:` used to share keys: the first one's lock on a key was the second
    # one's value of the same key, and `entries()` of `app:` listed the values of `app:lock:` as its own.
    outer = mcpfsm.RedisStore(redis_server.url, prefix=redis_prefix)
    inner = mcpfsm.RedisStore(redis_server.url, prefix=redis_prefix + "lock:")
    with trio.fail_after(GUARD):
        await inner.set("tokens x", {"who": "inner"})
        async with outer.lock("tokens x", 30):
            assert await inner.get("tokens x") == {"who": "inner"}
            async with inner.lock("tokens x", 30, wait=0):
                pass
        await outer.set("tokens x", {"who": "outer"})
        assert await outer.entries() == [("tokens x", {"who": "outer"}, None)]
        assert await inner.entries() == [("tokens x", {"who": "inner"}, None)]


# --- a store of the application's own written before lock took wait ----------------------------------------------


class LegacyStore(mcpfsm.MemoryStore):
    """A store whose ``lock(key, ttl)`` predates ``wait=`` (before docs/stores.md gave it one)."""

    def __init__(self) -> None:
        super().__init__()
        self.locked: list[tuple[str, float]] = []

    @contextlib.asynccontextmanager
    async def lock(self, key: str, ttl: float) -> AsyncIterator[None]:  # type: ignore[override]
        self.locked.append((key, ttl))
        async with super().lock(key, ttl):
            yield


async def test_a_lock_without_wait_is_still_the_lock_a_client_takes(records: list[tuple[str, str]]) -> None:
    # Called as lock(key, ttl) (its wait cannot be bounded: one WARNING says so), never replaced by a lock of
    # the process: that would let two processes refresh at once.
    store = LegacyStore()
    guard = GuardedStore(store)
    async with guard.exclusion("tokens x", 30) as reach:
        pass
    async with guard.lock("tokens x", 30, wait=1):
        pass
    assert (str(reach), store.locked, guard.fallbacks) == ("Exclusion.store", [("tokens x", 30), ("tokens x", 30)], 0)
    assert records == [
        (
            "WARNING",
            "the store LegacyStore(0 entries) has a lock(key, ttl) without wait=: its waits are not bounded"
            " (docs/stores.md)",
        )
    ]
