"""A fleet of real worker processes on one shared store lists a server once per page and TTL (docs/cache.md).

Each worker (tests/support/listing_worker.py) connects, says ``READY`` and waits; the test releases them all at once, so
their misses are concurrent, and counts the ``tools/list`` requests the real peer received.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any, Final

import pytest
import trio

import mcpfsm
from tests.support.fleetrun import Fleet
from tests.support.peer.fixtures import HttpPeer

WORKERS: Final = 8
TTL_S: Final = 8


def listed(peer: HttpPeer) -> int:
    return sum(1 for entry in peer.log() if entry["jsonrpc_method"] == "tools/list")


def store_spec(form: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    if form == "file":
        return f"file:{tmp_path / 'store'}", {}
    server = request.getfixturevalue("redis_server")
    return f"{form}:{server.url}", {"MCPFSM_TEST_PREFIX": request.getfixturevalue("redis_prefix")}


def fleet(spec: str, env: dict[str, str], url: str, tokens: list[str | None]) -> list[dict[str, Any]]:
    """Run one worker per token, release them together, return what each printed."""
    argvs = [[spec, url, *([token] if token else [])] for token in tokens]
    with Fleet("tests.support.listing_worker", argvs, env) as workers:
        workers.expect("READY")
        results = workers.round()
        workers.finish()
    return results


@pytest.mark.parametrize("form", ["file", "redis", "redis-bare", "redis-client"])
def test_a_fleet_of_fresh_workers_sends_one_tools_list_per_ttl(
    peer: HttpPeer, form: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Every form of every store kind docs/stores.md shows; issue 28: 2 of 5 workers on a RedisStore that was
    # not entered crashed here ("Cancel scope stack corrupted") at their first cacheable tools/list.
    peer.control({"action": "cache_hints", "hints": {"tools/list": {"ttlMs": TTL_S * 1000, "cacheScope": "public"}}})
    spec, env = store_spec(form, tmp_path, request)
    first = fleet(spec, env, peer.url, [None] * WORKERS)
    filled = time.monotonic()
    assert listed(peer) == 1
    assert len({json.dumps(out["names"]) for out in first}) == 1 and first[0]["names"]
    assert sorted(out["stats"]["shared_hits"] for out in first) == [0] + [1] * (WORKERS - 1)

    # The TTL runs out (the entries' absolute expiry is wall-clock time): the next fleet fills once more.
    time.sleep(max(0.0, filled + TTL_S + 0.5 - time.monotonic()))
    again = fleet(spec, env, peer.url, [None] * WORKERS)
    assert listed(peer) == 2
    assert [out["names"] for out in again] == [first[0]["names"]] * WORKERS


@pytest.mark.parametrize("form", ["file", "redis-bare"])
def test_private_listings_are_shared_per_identity_across_processes(
    peer: HttpPeer, form: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    peer.control({"action": "cache_hints", "hints": {"tools/list": {"ttlMs": 600_000, "cacheScope": "private"}}})
    spec, env = store_spec(form, tmp_path, request)
    tokens: list[str | None] = ["alice-token-1d2e3f", "bob-token-9c8b7a"] * (WORKERS // 2)
    outputs = fleet(spec, env, peer.url, tokens)

    assert listed(peer) == 2
    assert sorted(out["stats"]["shared_hits"] for out in outputs) == [0, 0] + [1] * (WORKERS - 2)
    stored = stored_text(spec, env)
    assert "tools/list" in stored
    for secret in ("alice-token", "bob-token", peer.url):
        assert secret not in stored


def stored_text(spec: str, env: dict[str, str]) -> str:
    """Every key and value the store holds, as text, read with the store's own tools (not mcpfsm)."""
    form, _, where = spec.partition(":")
    if form == "file":
        files = [path for path in Path(where).rglob("*") if path.is_file()]
        return "".join(f"{path.name}\n{path.read_text(errors='replace')}\n" for path in files)

    def cli(*args: str) -> str:
        return subprocess.run(["redis-cli", "-u", where, *args], capture_output=True, text=True, check=True).stdout

    names = cli("--scan", "--pattern", env["MCPFSM_TEST_PREFIX"] + "*").split()
    return "".join(f"{name}\n{cli('GET', name)}" for name in names)


class CountingStore(mcpfsm.MemoryStore):
    """A ``MemoryStore`` subclass (any object with the store's methods will do, docs/stores.md)."""

    def __init__(self) -> None:
        super().__init__()
        self.locks = 0

    def lock(self, key: str, ttl: float, *, wait: float | None = None) -> Any:
        self.locks += 1
        return super().lock(key, ttl, wait=wait)


@pytest.mark.parametrize("form", ["memory-subclass", "redis-bare"])
async def test_clients_in_tasks_of_one_process_on_one_store_list_once(
    peer: HttpPeer, form: str, request: pytest.FixtureRequest
) -> None:
    peer.control({"action": "cache_hints", "hints": {"tools/list": {"ttlMs": 600_000, "cacheScope": "public"}}})
    if form == "memory-subclass":
        store: Any = CountingStore()
    else:
        server = request.getfixturevalue("redis_server")
        store = mcpfsm.RedisStore(server.url, prefix=request.getfixturevalue("redis_prefix"))
    names: list[list[str]] = []

    async def worker() -> None:
        async with mcpfsm.Client.http(peer.url, protocol="2026-07-28", store=store) as client:
            names.append((await client.tools()).names)

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            for _ in range(WORKERS):
                nursery.start_soon(worker)
    assert listed(peer) == 1
    assert len(names) == WORKERS and names[0] and all(each == names[0] for each in names)
    if isinstance(store, CountingStore):
        assert store.locks >= 1  # its own lock shared the fill
