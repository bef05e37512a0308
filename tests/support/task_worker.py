"""A worker process that starts tasks on a tasks server and records them in a shared store (SEP-2663).

``python -m tests.support.task_worker STORE MCP_URL COUNT`` (``STORE`` as in :mod:`tests.support.store_worker`).
Connects with ``tasks=True`` and ``store=STORE``, prints ``READY``, then for each line it reads on stdin starts
``COUNT`` ``build`` tasks at once (one task each, long enough to stay unfinished) and prints one JSON line: the ids of
the tasks started and ``Client.store_fallbacks``. It exits when stdin ends. Every task's record and the
server's index of ids go to the store (docs/tasks.md), the index under the store's lock.
"""

from __future__ import annotations

import json
import sys

import trio

import mcpfsm
from tests.support.store_worker import opened


async def start(client: mcpfsm.Client, ids: list[str]) -> None:
    task = await client.start_tool("build", {"seconds": 600, "poll_ms": 1000})
    assert task.id is not None
    ids.append(task.id)


async def main(spec: str, url: str, count: str) -> None:
    async with opened(spec) as store, mcpfsm.Client.http(url, tasks=True, store=store) as client:
        print("READY", flush=True)
        while await trio.to_thread.run_sync(sys.stdin.readline):
            ids: list[str] = []
            async with trio.open_nursery() as nursery:
                for _ in range(int(count)):
                    nursery.start_soon(start, client, ids)
            print(json.dumps({"ids": ids, "fallbacks": client.store_fallbacks}), flush=True)


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:])
