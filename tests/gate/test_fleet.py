"""A fleet of gates on one store fetches each listing once: real gate processes, a real FileStore and redis-server.

Each gate starts empty and gets, at the same moment as the others, a call to a tool whose schema it does not know.
Through the store's lock one of them fetches ``tools/list``; the others wait for it and read what it wrote. The
fleet is made of proxies (``mcpfsm gate --store``, trio; the CLI enters a RedisStore) and of middleware gates under
uvicorn (asyncio, the store not entered, run in the gate's own trio loop on a worker thread).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest
import trio

from tests.gate.conftest import call, control, headers, proxy_process, running, upstream_process
from tests.support.redisserver import start_redis

FLEET = 4
LIE = "analytics-lie"


@contextmanager
def store_of(kind: str, tmp_path: Path) -> Iterator[str]:
    if kind == "file":
        yield f"file://{tmp_path / 'store'}"
    else:
        with start_redis() as redis:
            yield redis.url


async def all_at_once(urls: list[str], database: str) -> list[int]:
    statuses: list[int] = []
    body = call("query", {"database": "prod", "sql": "s"})

    async def one(client: httpx.AsyncClient, url: str) -> None:
        answer = await client.post(url, headers=headers(name="query", Database=database), content=body)
        statuses.append(answer.status_code)

    async with httpx.AsyncClient(timeout=60) as client, trio.open_nursery() as nursery:
        for url in urls:
            nursery.start_soon(one, client, url)
    return statuses


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_a_fleet_of_proxies_fetches_once(kind: str, tmp_path: Path) -> None:
    with store_of(kind, tmp_path) as store, upstream_process() as upstream, ExitStack() as stack:
        urls = [stack.enter_context(proxy_process(upstream, "--store", store))[1] for _ in range(FLEET)]
        assert trio.run(all_at_once, urls, "prod") == [200] * FLEET
        assert control(upstream, "/control/counts")["tools/list"] == 1
        assert trio.run(all_at_once, urls, LIE) == [400] * FLEET
        assert control(upstream, "/control/counts") == {"tools/list": 1, "tools/call": FLEET}


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_a_fleet_of_middleware_gates_under_asyncio_fetches_once(kind: str, tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "tests.gate.gated", "--app", "unchecked", "--server", "uvicorn"]
    with store_of(kind, tmp_path) as store, ExitStack() as stack:
        urls = [stack.enter_context(running([*argv, "--store", store]))[1] for _ in range(FLEET)]
        assert trio.run(all_at_once, urls, "prod") == [200] * FLEET
        gates = [control(url, "/control/gate") for url in urls]
        assert sum(gate["fetches"] for gate in gates) == 1
        assert sum(gate["shared_hits"] for gate in gates) == FLEET - 1
        assert all(gate["store_failures"] == 0 for gate in gates)
        assert trio.run(all_at_once, urls, LIE) == [400] * FLEET
