"""What one store operation costs on each backend, against MemoryStore in the same run (docs/stores.md).

Run from the repository root:  python bench/stores.py [--ops N] [--rounds R]

One ``redis-server`` on a free 127.0.0.1 port (tests/support/redisserver.py) serves the RedisStore; the FileStore
is a temporary directory. For each backend: the median over R rounds of the wall time per ``get``, per
``set`` and per uncontended ``lock`` (enter and leave), each round N operations in a row on one key with a
value the size of a token record; then the same for the backend inside the client's guard (GuardedStore:
a deadline per operation and a copy kept in memory), as a ratio to the bare backend.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcpfsm
from mcpfsm._client.store_guard import GuardedStore
from tests.support.redisserver import start_redis

RECORD = {
    "access_token": "at-" + "x" * 40,
    "token_type": "Bearer",
    "refresh_token": "rt-" + "y" * 40,
    "expires_at": 1_900_000_000.0,
    "scopes": ["mcp:read", "mcp:write"],
    "issuer": "https://auth.example.com",
    "resource": "https://mcp.example.com/mcp",
}
KEY = "tokens https://auth.example.com https://mcp.example.com/mcp"


async def once(operation: Callable[[], Awaitable[Any]], ops: int) -> float:
    start = time.perf_counter()
    for _ in range(ops):
        await operation()
    return (time.perf_counter() - start) / ops


def operations(store: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    async def lock() -> None:
        async with store.lock(KEY, 30):
            pass

    return {"get": lambda: store.get(KEY), "set": lambda: store.set(KEY, RECORD), "lock": lock}


async def main(redis_url: str, directory: str, ops: int, rounds: int) -> None:
    async with mcpfsm.RedisStore(redis_url) as redis:
        backends: dict[str, Any] = {
            "MemoryStore": mcpfsm.MemoryStore(),
            "FileStore": mcpfsm.FileStore(directory),
            "RedisStore": redis,
        }
        # Every round runs each operation on every backend, bare and guarded, in turn: a machine that gets
        # busier during the run slows all of them alike, and the medians compare like with like.
        times: dict[tuple[str, str, bool], list[float]] = {}
        for store in backends.values():
            await store.set(KEY, RECORD)
        for _ in range(rounds):
            for name, store in backends.items():
                for guarded, subject in ((False, store), (True, GuardedStore(store))):
                    for op, run in operations(subject).items():
                        times.setdefault((name, op, guarded), []).append(await once(run, ops))
        median = {key: statistics.median(values) for key, values in times.items()}
        print(f"{'backend':<12} {'op':<5} {'per op':>10} {'x memory':>9} {'guarded/bare':>13}")
        for name in backends:
            for op in ("get", "set", "lock"):
                bare = median[(name, op, False)]
                print(
                    f"{name:<12} {op:<5} {bare * 1e6:>8.1f}us {bare / median[('MemoryStore', op, False)]:>9.1f}"
                    f" {median[(name, op, True)] / bare:>13.2f}"
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    with start_redis() as server, tempfile.TemporaryDirectory() as directory:
        trio.run(main, server.url, directory, options.ops, options.rounds)
