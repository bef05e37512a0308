"""A worker process that lists a server's tools through a shared store (tests/integration/test_fleet_listings.py).

``python -m tests.support.listing_worker STORE MCP_URL [TOKEN]``, ``STORE`` as in :mod:`tests.support.store_worker`
(every documented form of every store kind), or ``none`` (no store: the baseline of bench/shared_listings.py).
Connects (a pinned 2026-07-28 sends nothing), prints ``READY``, then for each line it reads on stdin lists the
tools (with ``Authorization: Bearer TOKEN`` when given) and prints one JSON line: the tool names, the client's
cache stats and the seconds ``client.tools()`` took. It exits when stdin ends.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time

import trio

import mcpfsm
from tests.support.store_worker import opened


async def main(spec: str, url: str, token: str | None = None) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        opened(spec) as store,
        mcpfsm.Client.http(url, protocol="2026-07-28", store=store, headers=headers) as client,
    ):
        print("READY", flush=True)
        while await trio.to_thread.run_sync(sys.stdin.readline):
            start = time.perf_counter()
            tools = await client.tools()
            elapsed = time.perf_counter() - start
            stats = dataclasses.asdict(client.cache.stats) if client.cache is not None else None
            print(json.dumps({"names": tools.names, "stats": stats, "seconds": elapsed}), flush=True)


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:])
