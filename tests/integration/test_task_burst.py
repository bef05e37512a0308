"""Thousands of tasks started at once on one client keep every record in a healthy store (docs/tasks.md, SEP-2663).

The server is a process of its own (``tests/task_burst_server.py``, raw sockets) that answers every ``tools/call``
with a new task; the store is a ``FileStore``, whose ``tasks {server}`` list every process shares under the store's
lock. The client's batches (``mcpfsm._client.task_records``) must write every record and list every id without
the store ever counting as down, and a restarted client must find every task.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
import trio

import mcpfsm
from tests.peer.fixtures import REPO_ROOT, HttpPeer, start_http_peer

STARTS: Final = 5000
GUARD: Final = 600.0
"""A hang guard for the whole burst on a busy two-core machine, not a timing."""


@pytest.fixture(scope="module")
def burst() -> Iterator[HttpPeer]:
    with start_http_peer("modern", module="tests.task_burst_server", cwd=REPO_ROOT) as running:
        yield running


async def test_five_thousand_concurrent_starts_keep_every_record(burst: HttpPeer, tmp_path: Path) -> None:
    # client.store_fallbacks counts every time the store failed or ran out of time (each outage is also one WARNING;
    # the logs are not captured here: at DEBUG, 5,000 calls log some 35,000 audit records).
    path = tmp_path / "store"
    started: list[str | None] = []
    with trio.fail_after(GUARD):
        async with mcpfsm.Client.http(burst.url, tasks=True, store=mcpfsm.FileStore(path)) as client:

            async def start() -> None:
                started.append((await client.start_tool("job")).id)

            async with trio.open_nursery() as nursery:
                for _ in range(STARTS):
                    nursery.start_soon(start)
            fallbacks = client.store_fallbacks

        # A restart: a new client, a new store object on the same directory.
        async with mcpfsm.Client.http(burst.url, tasks=True, store=mcpfsm.FileStore(path)) as client:
            pending = await client.pending_tasks()
            fallbacks += client.store_fallbacks

    assert len(started) == STARTS and len(set(started)) == STARTS
    assert fallbacks == 0
    assert sorted((task.id, task.tool) for task in pending) == sorted((task_id, "job") for task_id in started)
