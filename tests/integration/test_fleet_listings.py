"""A fleet of real worker processes on one shared store lists a server once per page and TTL (docs/cache.md).

Each worker (tests/listing_worker.py) connects, says ``READY`` and waits; the test releases them all at once, so
their misses are concurrent, and counts the ``tools/list`` requests the real peer received.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

import pytest

from tests.peer.fixtures import REPO_ROOT, HttpPeer

WORKERS: Final = 8
TTL_S: Final = 8
STARTUP: Final = 60.0
"""Hang guard, in seconds, for a worker to connect or to answer."""


def listed(peer: HttpPeer) -> int:
    return sum(1 for entry in peer.log() if entry["jsonrpc_method"] == "tools/list")


def store_spec(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    if kind == "file":
        return f"file:{tmp_path / 'store'}", {}
    server = request.getfixturevalue("redis_server")
    return f"redis:{server.url}", {"MCPFSM_TEST_PREFIX": request.getfixturevalue("redis_prefix")}


def fleet(spec: str, env: dict[str, str], url: str, tokens: list[str | None]) -> list[dict[str, Any]]:
    """Run one worker per token, release them together, return what each printed."""
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.listing_worker", spec, url, *([token] if token else [])],
            cwd=REPO_ROOT,
            env={**os.environ, **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for token in tokens
    ]
    try:
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline() == "READY\n"
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        outputs = [worker.communicate(timeout=STARTUP)[0] for worker in workers]
        assert [worker.returncode for worker in workers] == [0] * len(workers)
        return [json.loads(output) for output in outputs]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_a_fleet_of_fresh_workers_sends_one_tools_list_per_ttl(
    peer: HttpPeer, kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    peer.control({"action": "cache_hints", "hints": {"tools/list": {"ttlMs": TTL_S * 1000, "cacheScope": "public"}}})
    spec, env = store_spec(kind, tmp_path, request)
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


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_private_listings_are_shared_per_identity_across_processes(
    peer: HttpPeer, kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    peer.control(
        {"action": "cache_hints", "hints": {"tools/list": {"ttlMs": 600_000, "cacheScope": "private"}}}
    )
    spec, env = store_spec(kind, tmp_path, request)
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
    kind, _, where = spec.partition(":")
    if kind == "file":
        files = [path for path in Path(where).rglob("*") if path.is_file()]
        return "".join(f"{path.name}\n{path.read_text(errors='replace')}\n" for path in files)

    def cli(*args: str) -> str:
        return subprocess.run(["redis-cli", "-u", where, *args], capture_output=True, text=True, check=True).stdout

    names = cli("--scan", "--pattern", env["MCPFSM_TEST_PREFIX"] + "*").split()
    return "".join(f"{name}\n{cli('GET', name)}" for name in names)
