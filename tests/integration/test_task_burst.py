"""Thousands of tasks started at once on one client keep every record in a healthy store (docs/tasks.md, SEP-2663).

The server is a process of its own (``tests/support/task_burst_server.py``, raw sockets) that answers every
``tools/call`` with a new task; the store is a ``FileStore``, whose ``tasks {server}`` list every process shares under
the store's lock. The client's batches (``mcpfsm._client.task_records``) must write every record and list every id
without the store ever counting as down, and a restarted client must find every task.

The list's lock is taken a few times, not once per start (the store counts them): one lock and one list rewrite
per start queue thousands of waits on that one lock, and ran out of the guard's patience (some 2,500 fallbacks
with the bound below, every one a record only this process remembers).

The client's guard gives each store operation 30 s here, not the default 2 s: starting 5,000 calls at once stalls
the client's own event loop (thousands of tasks in one scheduler round, a full garbage collection of them), and on
a busy two-core machine such a stall alone can pass 2 s, which the guard, timing wall-clock seconds, would count
against the store.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm._client.store_guard import GuardedStore
from tests.support.peer.fixtures import REPO_ROOT, HttpPeer, start_http_peer

STARTS: Final = 5000
GUARD: Final = 600.0
"""A hang guard for the whole burst on a busy two-core machine, not a timing."""
STORE_SECONDS: Final = 30.0
"""Each store operation's bound in the client's guard (see the module's text)."""


class CountingFileStore(mcpfsm.FileStore):
    """A ``FileStore`` that counts the locks taken on it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.locks = 0

    def lock(self, key: str, ttl: float, **options: Any) -> AbstractAsyncContextManager[None]:
        self.locks += 1
        return super().lock(key, ttl, **options)


@pytest.fixture(scope="module")
def burst() -> Iterator[HttpPeer]:
    with start_http_peer("modern", module="tests.support.task_burst_server", cwd=REPO_ROOT) as running:
        yield running


async def test_five_thousand_concurrent_starts_keep_every_record(burst: HttpPeer, tmp_path: Path) -> None:
    # client.store_fallbacks counts every time the store failed or ran out of time (each outage is also one WARNING;
    # the logs are not captured here: at DEBUG, 5,000 calls log some 35,000 audit records). `timeout=`: the pool
    # queues 4,900 of the calls for a connection, longer than its default 30 s on a busy machine.
    path = tmp_path / "store"
    started: list[str | None] = []
    counted = CountingFileStore(path)
    with trio.fail_after(GUARD):
        guarded = GuardedStore(counted, timeout=STORE_SECONDS)
        async with mcpfsm.Client.http(burst.url, tasks=True, store=guarded, timeout=GUARD) as client:

            async def start() -> None:
                started.append((await client.start_tool("job")).id)

            async with trio.open_nursery() as nursery:
                for _ in range(STARTS):
                    nursery.start_soon(start)
            fallbacks = client.store_fallbacks

        # A restart: a new client, a new store object on the same directory.
        restarted = GuardedStore(mcpfsm.FileStore(path), timeout=STORE_SECONDS)
        async with mcpfsm.Client.http(burst.url, tasks=True, store=restarted) as client:
            pending = await client.pending_tasks()
            fallbacks += client.store_fallbacks

    assert len(started) == STARTS and len(set(started)) == STARTS
    assert fallbacks == 0
    assert counted.locks <= STARTS // 10  # batches: a few hundred at most, where one per start made 5,000
    assert sorted((task.id, task.tool) for task in pending) == sorted((task_id, "job") for task_id in started)
