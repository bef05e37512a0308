"""A worker process that lists a server's tools through a shared store (tests/integration/test_fleet_listings.py).

``python -m tests.listing_worker STORE MCP_URL [TOKEN]``, ``STORE`` being ``file:DIR`` (``FileStore``) or
``redis:URL`` (``RedisStore``, prefix from ``$MCPFSM_TEST_PREFIX``) or ``none`` (no store: the baseline of
bench/shared_listings.py). Connects (a pinned 2026-07-28 sends nothing), prints ``READY``, waits for a line on
stdin, lists the tools (with ``Authorization: Bearer TOKEN`` when given) and prints one JSON line: the tool
names, the client's cache stats and the seconds ``client.tools()`` took.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import trio

import mcpfsm


@contextlib.asynccontextmanager
async def opened(spec: str) -> AsyncIterator[Any]:
    kind, _, where = spec.partition(":")
    if kind == "none":
        yield None
    elif kind == "file":
        yield mcpfsm.FileStore(where)
    elif kind == "redis":
        async with mcpfsm.RedisStore(where, prefix=os.environ.get("MCPFSM_TEST_PREFIX", "mcpfsm:")) as store:
            yield store
    else:
        raise SystemExit(f"unknown store {spec!r}")


async def main(spec: str, url: str, token: str | None = None) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        opened(spec) as store,
        mcpfsm.Client.http(url, protocol="2026-07-28", store=store, headers=headers) as client,
    ):
        print("READY", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
        start = time.perf_counter()
        tools = await client.tools()
        elapsed = time.perf_counter() - start
        stats = dataclasses.asdict(client.cache.stats) if client.cache is not None else None
        print(json.dumps({"names": tools.names, "stats": stats, "seconds": elapsed}), flush=True)


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:])
