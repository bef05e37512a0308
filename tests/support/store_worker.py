"""A worker process on a shared store, for the tests that need real processes (tests/client/test_stores.py).

``python -m tests.support.store_worker STORE ACTION ARG...``. ``STORE`` names a store kind and, for Redis, the form the
application gives it in (docs/stores.md shows all three):

- ``file:DIR`` (``FileStore``), ``tokenfile:PATH`` (``FileTokenStore``);
- ``redis:URL``: ``RedisStore(URL)`` entered with ``async with`` around the clients;
- ``redis-bare:URL``: ``RedisStore(URL)`` never entered;
- ``redis-client:URL``: ``RedisStore(client=…)`` with a coredis client the worker builds and enters itself
  (``coredis.Redis``, ``coredis.RedisCluster`` or a Sentinel's ``primary_for`` client, after the URL's scheme).

The Redis prefix comes from ``$MCPFSM_TEST_PREFIX`` (default ``mcpfsm:``). ``ACTION`` is one of:

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

KINDS = ("file", "tokenfile", "redis", "redis-bare", "redis-client")


def prefix() -> str:
    return os.environ.get("MCPFSM_TEST_PREFIX", "mcpfsm:")


@contextlib.asynccontextmanager
async def coredis_client(url: str) -> AsyncIterator[Any]:
    """A coredis client for ``url`` built and entered by the application (``RedisStore(client=…)``)."""
    import coredis
    from coredis.connection import TCPLocation

    scheme, _, rest = url.partition("://")
    hosts = [
        TCPLocation(host, int(port))
        for host, _, port in (part.partition(":") for part in rest.split("/")[0].split(","))
    ]
    if scheme == "redis+cluster":
        async with coredis.RedisCluster(startup_nodes=hosts, decode_responses=True) as client:
            yield client
    elif scheme == "redis+sentinel":
        service = rest.split("/")[1]
        async with (
            coredis.Sentinel(hosts, decode_responses=True) as sentinel,
            sentinel.primary_for(service) as client,
        ):
            yield client
    else:
        async with coredis.Redis.from_url(url, decode_responses=True) as client:
            yield client


@contextlib.asynccontextmanager
async def opened(spec: str) -> AsyncIterator[Any]:
    """The store ``spec`` names, in its form (see the module docstring); ``none`` is no store at all."""
    kind, _, where = spec.partition(":")
    if kind == "none":
        yield None
    elif kind == "file":
        yield mcpfsm.FileStore(where)
    elif kind == "tokenfile":
        yield mcpfsm.FileTokenStore(where)
    elif kind == "redis":
        async with mcpfsm.RedisStore(where, prefix=prefix()) as store:
            yield store
    elif kind == "redis-bare":
        yield mcpfsm.RedisStore(where, prefix=prefix())
    elif kind == "redis-client":
        async with coredis_client(where) as client:
            yield mcpfsm.RedisStore(client=client, prefix=prefix())
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
