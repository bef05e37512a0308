"""Task records on a shared store under contention: worker processes start tasks at once, none is lost (docs/tasks.md).

Every worker (tests/support/task_worker.py) starts its tasks all at once on the real tasks server
(``tooling.peer_tasks``); each task's record and the server's index of ids go to the shared store, the
index under the store's lock. Afterwards a fresh client on the same store finds every task in
``pending_tasks()``. Every form of every store kind docs/stores.md shows, and several clients of one process on
one ``MemoryStore`` subclass and on one ``RedisStore`` that nobody entered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import pytest
import trio

import mcpfsm
from tests.support.fleetrun import Fleet
from tests.support.peer.fixtures import HttpPeer
from tests.support.redisserver import RedisServer
from tests.support.store_worker import opened

WORKERS: Final = 4
TASKS: Final = 15


def spec_of(form: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if form == "file":
        return f"file:{tmp_path / 'store'}"
    redis: RedisServer = request.getfixturevalue("redis_server")
    return f"{form}:{redis.url}"


async def pending(spec: str, url: str) -> list[str]:
    """The ids a fresh client on ``spec`` finds in ``pending_tasks()``."""
    async with opened(spec) as store, mcpfsm.Client.http(url, tasks=True, store=store) as client:
        return sorted(task.id for task in await client.pending_tasks() if task.id is not None)


@pytest.mark.parametrize("form", ["file", "redis", "redis-bare", "redis-client"])
async def test_worker_processes_starting_tasks_at_once_lose_no_record(
    tasks_peer: HttpPeer,
    form: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    redis_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = spec_of(form, tmp_path, request)
    monkeypatch.setenv("MCPFSM_TEST_PREFIX", redis_prefix)
    argv = [spec, tasks_peer.url, str(TASKS)]
    with Fleet("tests.support.task_worker", [argv] * WORKERS, {"MCPFSM_TEST_PREFIX": redis_prefix}) as fleet:
        fleet.expect("READY")
        results: list[dict[str, Any]] = await trio.to_thread.run_sync(fleet.round)
        fleet.finish()
    assert [(len(result["ids"]), result["fallbacks"]) for result in results] == [(TASKS, 0)] * WORKERS
    started = sorted(task_id for result in results for task_id in result["ids"])
    assert len(set(started)) == WORKERS * TASKS
    assert await pending(spec, tasks_peer.url) == started


class CountingStore(mcpfsm.MemoryStore):
    """A ``MemoryStore`` subclass (docs/stores.md: any object with the store's methods), counting its locks."""

    def __init__(self) -> None:
        super().__init__()
        self.locks = 0

    def lock(self, key: str, ttl: float, *, wait: float | None = None) -> Any:
        self.locks += 1
        return super().lock(key, ttl, wait=wait)


@pytest.mark.parametrize("form", ["memory-subclass", "redis-bare"])
async def test_clients_of_one_process_on_one_store_lose_no_record(
    tasks_peer: HttpPeer, form: str, redis_server: RedisServer, redis_prefix: str
) -> None:
    # One store object, several clients in tasks of their own: a MemoryStore subclass (guarded like any store
    # that is not a plain MemoryStore), and a RedisStore that nobody entered, whose one connection pool the
    # clients share (each client keeps it open for its lifetime, docs/stores.md).
    redis = mcpfsm.RedisStore(redis_server.url, prefix=redis_prefix)
    store: Any = CountingStore() if form == "memory-subclass" else redis
    started: list[str] = []

    async def worker() -> None:
        async with mcpfsm.Client.http(tasks_peer.url, tasks=True, store=store) as client:
            async with trio.open_nursery() as nursery:
                for _ in range(TASKS):
                    nursery.start_soon(start, client)
            assert client.store_fallbacks == 0

    async def start(client: mcpfsm.Client) -> None:
        task = await client.start_tool("build", {"seconds": 600, "poll_ms": 1000})
        assert task.id is not None
        started.append(task.id)

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            for _ in range(WORKERS):
                nursery.start_soon(worker)
        async with mcpfsm.Client.http(tasks_peer.url, tasks=True, store=store) as fresh:
            found = sorted(task.id for task in await fresh.pending_tasks() if task.id is not None)
    assert found == sorted(started) and len(started) == WORKERS * TASKS
    if isinstance(store, CountingStore):
        # The subclass's own lock is the one the records take, not a process lock in its place. The index is
        # written in batches (mcpfsm._client.task_records), so how many depends on timing: at least one a client
        # (tests/integration/test_task_burst.py counts them under a burst).
        assert store.locks >= WORKERS
