"""Requests per ``client.tools()`` with the response cache warm, and the stale-handle storm, counted on the server.

Run from the repository root:  python bench/cache.py [--listings N] [--page-size P] [--storm S] [--rounds R]

One local peer server (the official SDK's MCPServer, tests/support/peer) serves every client. It logs every request
it receives, so the counts are the server's, not the client's. The peer is told to give ``tools/list`` a
one-hour ``ttlMs`` (SEP-2549) and to page its tools P per page.

- **listing**: N ``client.tools()`` calls with the cache (default) and with ``cache=False``: requests the
  server received per call, and this process's CPU per call (``time.process_time()``, median of R rounds).
- **storm**: S concurrent calls through one stale ``Tool`` handle after the server changed the tool's
  schema: ``tools/list`` and ``tools/call`` requests the server received (single flight: 1 and 2·S).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcpfsm
from tests.support.peer.fixtures import HttpPeer, start_http_peer

HOUR = {"ttlMs": 3_600_000, "cacheScope": "private"}
ARGS = {"query": "select 1", "database": "analytics", "region": "eu"}


def counted(peer: HttpPeer) -> Counter[str]:
    return Counter(e["jsonrpc_method"] for e in peer.log() if e["jsonrpc_method"])


async def listing(peer: HttpPeer, listings: int, cache: bool) -> tuple[float, float]:
    async with mcpfsm.Client.http(peer.url, protocol="2026-07-28", cache=cache) as client:
        await client.tools()  # warm (or, without a cache, one more of the same)
        await trio.to_thread.run_sync(peer.clear_log)
        start = time.process_time()
        for _ in range(listings):
            await client.tools()
        cpu = (time.process_time() - start) / listings
    requests = counted(peer)["tools/list"] / listings
    return requests, cpu


async def storm(peer: HttpPeer, calls: int) -> Counter[str]:
    peer.control({"action": "reset"})
    async with mcpfsm.Client.http(peer.url, protocol="2026-07-28") as client:
        tool = (await client.tools()).get("execute-sql")
        assert tool is not None
        await trio.to_thread.run_sync(peer.control, {"action": "evolve"})
        await trio.to_thread.run_sync(peer.clear_log)
        async with trio.open_nursery() as nursery:
            for _ in range(calls):
                nursery.start_soon(tool.call, ARGS)
    return counted(peer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listings", type=int, default=200)
    parser.add_argument("--page-size", type=int, default=2)
    parser.add_argument("--storm", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with start_http_peer("modern") as peer:
        peer.control({"action": "cache_hints", "hints": {"tools/list": HOUR}})
        peer.control({"action": "paginate", "page_size": args.page_size})
        warm, cold = [], []
        for _ in range(args.rounds):
            warm.append(trio.run(listing, peer, args.listings, True))
            cold.append(trio.run(listing, peer, args.listings, False))
        for name, runs in (("cache warm", warm), ("cache=False", cold)):
            requests = statistics.median(r for r, _ in runs)
            cpu = statistics.median(c for _, c in runs) * 1e6
            print(f"tools() {name:12}: {requests:5.2f} tools/list requests per call, {cpu:8.1f} µs client CPU")
        ratio = statistics.median(c for _, c in warm) / statistics.median(c for _, c in cold)
        print(f"  ratio warm/uncached CPU: {ratio:.3f}")
        counts = trio.run(storm, peer, args.storm)
        lists, calls = counts["tools/list"], counts["tools/call"]
        print(f"storm of {args.storm} stale calls: tools/list {lists}, tools/call {calls}")


if __name__ == "__main__":
    main()
