"""Many processes, one login: worker processes sharing a store refresh an expired token once (docs/stores.md).

Real parts only: the test authorization server in its own process, rotating refresh tokens and revoking the
whole grant when a rotated-away refresh token comes back (``revoke_on_reuse``: RFC 6749 §10.4, RFC 9700
§4.14.2); real worker processes (``python -m tests.refresh_worker``); a real ``redis-server``
(tests/redisserver.py) for ``RedisStore``. The test logs in once, marks the stored access token expired (as
if its hour had passed for every worker at once), and lets the workers go together.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

import mcpfsm
from mcpfsm._core.credentials import credential_holder, tokens_key
from mcpfsm._tooling.peer_process import RunningAuthServer, run_authserver
from tests.conformance.adapter import headless_authorize
from tests.peer.fixtures import REPO_ROOT
from tests.redisserver import RedisServer
from tests.store_worker import opened

CALLS = 3
HANG_GUARD = 120.0
"""Seconds a worker may take in all (a hang guard, never a timing assertion)."""


@pytest.fixture(scope="module")
def server() -> Iterator[RunningAuthServer]:
    with run_authserver({}) as running:
        yield running


def store_spec(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "file":
        return f"file:{tmp_path / 'store'}"
    if kind == "tokenfile":
        return f"tokenfile:{tmp_path / 'tokens.json'}"
    redis: RedisServer = request.getfixturevalue("redis_server")
    return f"redis:{redis.url}"


async def log_in_and_expire(server: RunningAuthServer, spec: str) -> None:
    """One login into the shared store, then its access token marked expired for every reader."""
    async with opened(spec) as store:
        auth = mcpfsm.OAuth(redirect_uri="http://localhost:3000/callback", authorize=headless_authorize, store=store)
        async with mcpfsm.Client.http(server.mcp_url, auth=auth, protocol="2026-07-28") as client:
            await client.call_tool("test-tool", {})
        key = tokens_key(server.base_url, server.mcp_url, credential_holder(mcpfsm.OAuth()))
        record = await store.get(key)
        assert record is not None and record["refresh_token"] is not None
        now = time.time()
        await store.set(key, {**record, "issued_at": now - 3601, "expires_at": now - 1})


def run_workers(spec: str, mcp_url: str, count: int, env: dict[str, str]) -> list[dict[str, Any]]:
    """Start ``count`` workers, wait until each says READY, let them all go at once, collect their results."""
    environment = {**os.environ, **env, "PYTHONPATH": str(REPO_ROOT)}
    argv = [sys.executable, "-m", "tests.refresh_worker", spec, mcp_url, str(CALLS)]
    processes = [
        subprocess.Popen(
            argv, cwd=REPO_ROOT, env=environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(count)
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            assert process.stdout.readline() == "READY\n"
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        results = []
        for process in processes:
            out, _ = process.communicate(timeout=HANG_GUARD)
            assert process.returncode == 0, out
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.mark.parametrize(
    ("kind", "count"),
    [("file", 4), ("redis", 4), ("tokenfile", 2)],
    ids=["FileStore-4-workers", "RedisStore-4-workers", "FileTokenStore-2-workers"],
)
async def test_workers_whose_token_expires_together_send_one_refresh(
    server: RunningAuthServer,
    kind: str,
    count: int,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    redis_prefix: str,
) -> None:
    # The refresh takes the server half a second, so every worker has read the stored (expired) tokens and
    # asked for the lock before the first refresh is answered: without the store's lock and the read under
    # it, each would present the same refresh token and the second would revoke the grant for all.
    server.configure({"refresh_tokens": True, "revoke_on_reuse": True, "refresh_delay": 0.5})
    spec = store_spec(kind, tmp_path, request)
    env = {"MCPFSM_TEST_PREFIX": redis_prefix}
    os.environ["MCPFSM_TEST_PREFIX"] = redis_prefix
    try:
        await log_in_and_expire(server, spec)
    finally:
        del os.environ["MCPFSM_TEST_PREFIX"]
    results = await trio.to_thread.run_sync(run_workers, spec, server.mcp_url, count, env)
    assert results == [{"ok": CALLS, "errors": [], "fallbacks": 0}] * count
    assert server.stats() == {
        "token_requests": {"authorization_code": 1, "refresh_token": 1},
        "refresh_reuses": 0,
        "revoked_grants": 0,
    }


@pytest.mark.parametrize("kind", ["file", "redis"], ids=["FileStore", "RedisStore"])
async def test_a_holder_of_the_tokens_lock_that_dies_stops_excluding_the_refresh(
    server: RunningAuthServer, kind: str, tmp_path: Path, request: pytest.FixtureRequest, redis_prefix: str
) -> None:
    # A process took the tokens' lock (with a TTL of 2 s) and was killed: on disk the operating system frees
    # its lock at once, on Redis the lock expires after its TTL. Either way the worker's refresh takes the real
    # lock afterwards (no fallback to a lock of its own) and sends one refresh.
    server.configure({"refresh_tokens": True, "revoke_on_reuse": True})
    spec = store_spec(kind, tmp_path, request)
    env = {"MCPFSM_TEST_PREFIX": redis_prefix}
    os.environ["MCPFSM_TEST_PREFIX"] = redis_prefix
    try:
        await log_in_and_expire(server, spec)
    finally:
        del os.environ["MCPFSM_TEST_PREFIX"]
    key = tokens_key(server.base_url, server.mcp_url, credential_holder(mcpfsm.OAuth()))
    holder = subprocess.Popen(
        [sys.executable, "-m", "tests.store_worker", spec, "hold", key, "2"],
        cwd=REPO_ROOT,
        env={**os.environ, **env, "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert await trio.to_thread.run_sync(holder.stdout.readline) == "HELD\n"
    finally:
        holder.kill()
        holder.communicate()
    results = await trio.to_thread.run_sync(run_workers, spec, server.mcp_url, 1, env)
    assert results == [{"ok": CALLS, "errors": [], "fallbacks": 0}]
    assert server.stats()["token_requests"] == {"authorization_code": 1, "refresh_token": 1}
