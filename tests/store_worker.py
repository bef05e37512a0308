"""A worker process on a shared store, for the tests that need real processes (tests/client/test_stores.py).

``python -m tests.store_worker STORE ACTION ARG...`` where ``STORE`` is ``file:DIR`` (``FileStore``),
``tokenfile:PATH`` (``FileTokenStore``) or ``redis:URL`` (``RedisStore``, prefix from ``$MCPFSM_TEST_PREFIX``,
default ``mcpfsm:``), and ``ACTION`` is one of:

- ``write NAME N``: prints ``READY``, waits for a line on stdin, then sets ``NAME-0`` … ``NAME-{N-1}`` all at
  once (one task each) and prints ``DONE``;
- ``count KEY N``: N times, under ``lock(KEY)``, reads ``{"n": …}`` from ``KEY`` and writes it back plus one
  (a lost update shows as a total below the sum of the workers' N); prints ``DONE``;
- ``hold KEY TTL``: takes ``lock(KEY, TTL)``, prints ``HELD`` and sleeps until it is killed.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import trio

import mcpfsm


@contextlib.asynccontextmanager
async def opened(spec: str) -> AsyncIterator[Any]:
    kind, _, where = spec.partition(":")
    if kind == "file":
        yield mcpfsm.FileStore(where)
    elif kind == "tokenfile":
        yield mcpfsm.FileTokenStore(where)
    elif kind == "redis":
        async with mcpfsm.RedisStore(where, prefix=os.environ.get("MCPFSM_TEST_PREFIX", "mcpfsm:")) as store:
            yield store
    else:
        raise SystemExit(f"unknown store {spec!r}")


def say(line: str) -> None:
    print(line, flush=True)


async def main(spec: str, action: str, *args: str) -> None:
    async with opened(spec) as store:
        if action == "write":
            name, count = args[0], int(args[1])
            say("READY")
            await trio.to_thread.run_sync(sys.stdin.readline)
            async with trio.open_nursery() as nursery:
                for index in range(count):
                    nursery.start_soon(store.set, f"{name}-{index}", {"writer": name, "index": index})
            say("DONE")
        elif action == "count":
            key, times = args[0], int(args[1])
            for _ in range(times):
                async with store.lock(key, 30):
                    value = await store.get(key) or {"n": 0}
                    await trio.sleep(0)
                    await store.set(key, {"n": value["n"] + 1})
            say("DONE")
        elif action == "hold":
            async with store.lock(args[0], float(args[1])):
                say("HELD")
                await trio.sleep_forever()
        else:
            raise SystemExit(f"unknown action {action!r}")


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:])
