"""Many processes, one login: worker processes sharing a store refresh an expired token once (docs/stores.md).

Real parts only: the test authorization server in its own process, rotating refresh tokens and revoking the
whole grant when a rotated-away refresh token comes back (``revoke_on_reuse``: RFC 6749 §10.4, RFC 9700
§4.14.2); real worker processes (``python -m tests.support.refresh_worker``); real ``redis-server`` processes
(tests/support/redisserver.py): one server, a three-node Cluster, and a primary with a replica and a Sentinel that fails
over. Every store kind runs in every form docs/stores.md shows: a ``FileStore``, a ``FileTokenStore``, and a
``RedisStore`` entered with ``async with``, never entered, or given a coredis ``client=``. The test logs in once,
marks the stored access token expired (as if its hour had passed for every worker at once), and lets the
workers go together.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm._core.credentials import credential_holder, tokens_key
from tests.conformance.adapter import headless_authorize
from tests.support.fleetrun import Fleet
from tests.support.redisserver import RedisServer, start_cluster, start_failover_pair, start_redis
from tests.support.store_worker import opened
from tooling.processes import RunningAuthServer

CALLS: Final = 3
REDIS_FORMS: Final = ["redis", "redis-bare", "redis-client"]
"""A ``RedisStore`` entered with ``async with``, never entered, or given ``client=`` (tests/support/store_worker.py)."""
AGENT: Final = {"client_id": "agent", "client_secret": "s3cret"}
REFUSED: Final = (
    "AuthorizationError: refreshing: the token store could not be read while another process may be refreshing;"
    " the refresh token is not sent until it can be (docs/stores.md)"
)
"""What a worker's call raises when the store died while it waited for a peer's refresh (it never spends the
refresh token its peer may have spent)."""


def spec_of(form: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if form == "file":
        return f"file:{tmp_path / 'store'}"
    if form == "tokenfile":
        return f"tokenfile:{tmp_path / 'tokens.json'}"
    redis: RedisServer = request.getfixturevalue("redis_server")
    return f"{form}:{redis.url}"


async def log_in_and_expire(authserver: RunningAuthServer, spec: str, *, expire: bool = True) -> None:
    """One login into the shared store, then (``expire``) its access token marked expired for every reader."""
    async with opened(spec) as store:
        auth = mcpfsm.OAuth(redirect_uri="http://localhost:3000/callback", authorize=headless_authorize, store=store)
        async with mcpfsm.Client.http(authserver.mcp_url, auth=auth, protocol="2026-07-28") as client:
            await client.call_tool("test-tool", {})
        key = tokens_key(authserver.base_url, authserver.mcp_url, credential_holder(mcpfsm.OAuth()))
        record = await store.get(key)
        assert record is not None and record["refresh_token"] is not None
        if expire:
            now = time.time()
            await store.set(key, {**record, "issued_at": now - 3601, "expires_at": now - 1})


def workers(spec: str, url: str, count: int, prefix: str, *options: str) -> Fleet:
    return Fleet("tests.support.refresh_worker", [[spec, url, *options]] * count, {"MCPFSM_TEST_PREFIX": prefix})


def refresh_scenario(authserver: RunningAuthServer, delay: float = 0.5) -> None:
    # The refresh takes the server `delay` seconds, so every worker has read the stored (expired) tokens and
    # asked for the lock before the first refresh is answered: without the store's lock and the read under
    # it, each would present the same refresh token and the second would revoke the grant for all.
    authserver.configure({"refresh_tokens": True, "revoke_on_reuse": True, "refresh_delay": delay})


ONE_REFRESH: Final = {
    "token_requests": {"authorization_code": 1, "refresh_token": 1},
    "refresh_reuses": 0,
    "revoked_grants": 0,
}


@pytest.mark.parametrize(
    ("form", "count", "options"),
    [
        pytest.param("file", 4, (), id="FileStore"),
        pytest.param("tokenfile", 2, (), id="FileTokenStore"),
        pytest.param("redis", 4, (), id="RedisStore-entered"),
        pytest.param("redis-bare", 4, (), id="RedisStore-not-entered"),
        pytest.param("redis-client", 4, (), id="RedisStore-client"),
        pytest.param("redis-bare", 4, ("--credential-store",), id="RedisStore-not-entered-credential-store"),
    ],
)
async def test_workers_whose_token_expires_together_send_one_refresh(
    authserver: RunningAuthServer,
    form: str,
    count: int,
    options: tuple[str, ...],
    tmp_path: Path,
    request: pytest.FixtureRequest,
    redis_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refresh_scenario(authserver)
    spec = spec_of(form, tmp_path, request)
    monkeypatch.setenv("MCPFSM_TEST_PREFIX", redis_prefix)
    await log_in_and_expire(authserver, spec)
    with workers(spec, authserver.mcp_url, count, redis_prefix, *options) as fleet:
        fleet.expect("READY")
        results = await trio.to_thread.run_sync(fleet.round)
        fleet.finish()
    assert results == [{"ok": CALLS, "errors": [], "fallbacks": 0}] * count
    assert authserver.stats() == ONE_REFRESH


@pytest.mark.parametrize("form", ["file", "redis", "redis-bare"])
async def test_a_holder_of_the_tokens_lock_that_dies_stops_excluding_the_refresh(
    authserver: RunningAuthServer,
    form: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    redis_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A process took the tokens' lock (with a TTL of 2 s) and was killed: on disk the operating system frees
    # its lock at once, on Redis the lock expires after its TTL. Either way the worker's refresh takes the real
    # lock afterwards (no fallback to a lock of its own) and sends one refresh.
    authserver.configure({"refresh_tokens": True, "revoke_on_reuse": True})
    spec = spec_of(form, tmp_path, request)
    monkeypatch.setenv("MCPFSM_TEST_PREFIX", redis_prefix)
    await log_in_and_expire(authserver, spec)
    key = tokens_key(authserver.base_url, authserver.mcp_url, credential_holder(mcpfsm.OAuth()))
    env = {"MCPFSM_TEST_PREFIX": redis_prefix}
    with Fleet("tests.support.store_worker", [[spec, "hold", key, "2"]], env) as holder:
        assert await trio.to_thread.run_sync(holder.line, 0) == "HELD"
    with workers(spec, authserver.mcp_url, 1, redis_prefix) as fleet:
        fleet.expect("READY")
        results = await trio.to_thread.run_sync(fleet.round)
        fleet.finish()
    assert results == [{"ok": CALLS, "errors": [], "fallbacks": 0}]
    assert authserver.stats()["token_requests"] == {"authorization_code": 1, "refresh_token": 1}


# --- the first grant, single flight ---------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["file", "redis", "redis-bare", "redis-client"])
async def test_workers_starting_together_on_an_empty_store_send_one_token_request(
    authserver: RunningAuthServer, form: str, tmp_path: Path, request: pytest.FixtureRequest, redis_prefix: str
) -> None:
    # issue 28: 1 to 4 client_credentials requests before; the first grant takes the tokens' lock, reads the
    # store again under it, and only then asks, so the other workers find its tokens there.
    authserver.configure({"client_credentials": AGENT})
    spec = spec_of(form, tmp_path, request)
    credentials = f"--client-credentials={AGENT['client_id']}:{AGENT['client_secret']}"
    with workers(spec, authserver.mcp_url, 4, redis_prefix, credentials) as fleet:
        fleet.expect("READY")
        results = await trio.to_thread.run_sync(fleet.round)
        fleet.finish()
    assert results == [{"ok": CALLS, "errors": [], "fallbacks": 0}] * 4
    assert authserver.stats()["token_requests"] == {"client_credentials": 1}


# --- Redis killed or frozen while a worker refreshes ------------------------------------------------------------


def refreshing(authserver: RunningAuthServer) -> None:
    """Wait until the authorization server has received the refresh (it answers it `refresh_delay` later)."""
    deadline = time.monotonic() + 60
    while authserver.stats()["token_requests"].get("refresh_token", 0) == 0:
        assert time.monotonic() < deadline, "no refresh reached the authorization server"
        time.sleep(0.02)


def outcome(results: list[dict[str, Any]]) -> list[tuple[int, list[str]]]:
    """(ok, errors) of each worker, the refresher first."""
    return sorted(((result["ok"], result["errors"]) for result in results), key=lambda each: -each[0])


@pytest.mark.parametrize("form", REDIS_FORMS)
async def test_redis_frozen_mid_refresh_hangs_nobody_and_spends_the_refresh_token_once(
    authserver: RunningAuthServer, form: str, tmp_path: Path, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SIGSTOP while one worker holds the tokens' lock and its refresh is in flight, the others waiting for the
    # lock. Every call returns while Redis is still stopped (no hang past the store's bounds), no process
    # crashes, the waiters do not spend the refresh token their peer spent, and once Redis runs again they all
    # find the peer's tokens there: one refresh in all, no reuse, no revoked grant.
    refresh_scenario(authserver, delay=2.0)
    monkeypatch.setenv("MCPFSM_TEST_PREFIX", redis_prefix)
    with start_redis() as redis:
        spec = f"{form}:{redis.url}"
        await log_in_and_expire(authserver, spec)
        with workers(spec, authserver.mcp_url, 4, redis_prefix, "--calls=1") as fleet:
            fleet.expect("READY")
            fleet.go()
            await trio.to_thread.run_sync(refreshing, authserver)
            with redis.frozen():
                frozen = await trio.to_thread.run_sync(fleet.results)
            thawed = await trio.to_thread.run_sync(fleet.round)
            fleet.finish()
    assert outcome(frozen) == [(1, [])] + [(0, [REFUSED])] * 3
    assert all(result["fallbacks"] >= 1 for result in frozen)
    assert [result["ok"] for result in thawed] == [1] * 4
    assert authserver.stats() == ONE_REFRESH


@pytest.mark.parametrize("form", REDIS_FORMS)
async def test_redis_killed_mid_refresh_crashes_nobody_and_spends_the_refresh_token_once(
    authserver: RunningAuthServer, form: str, tmp_path: Path, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SIGKILL while one worker holds the tokens' lock and its refresh is in flight. The refresher's call
    # succeeds (its new tokens stay in its memory); the waiters' calls fail with the reason, without spending the
    # refresh token; no worker hangs or crashes, and the grant survives: one refresh, no reuse.
    refresh_scenario(authserver, delay=2.0)
    monkeypatch.setenv("MCPFSM_TEST_PREFIX", redis_prefix)
    with start_redis() as redis:
        spec = f"{form}:{redis.url}"
        await log_in_and_expire(authserver, spec)
        with workers(spec, authserver.mcp_url, 4, redis_prefix, "--calls=1") as fleet:
            fleet.expect("READY")
            fleet.go()
            await trio.to_thread.run_sync(refreshing, authserver)
            redis.kill()
            results = await trio.to_thread.run_sync(fleet.results)
            again = await trio.to_thread.run_sync(fleet.round)
            fleet.finish()
    assert outcome(results) == [(1, [])] + [(0, [REFUSED])] * 3
    assert outcome(again) == [(1, [])] + [(0, [REFUSED])] * 3
    assert authserver.stats() == ONE_REFRESH


# --- a Redis Cluster, and a Sentinel failover ------------------------------------------------------------------


@pytest.mark.parametrize("form", REDIS_FORMS)
async def test_a_fleet_on_a_three_node_cluster_sends_one_refresh(
    authserver: RunningAuthServer, form: str, tmp_path: Path, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    refresh_scenario(authserver)
    monkeypatch.setenv("MCPFSM_TEST_PREFIX", redis_prefix)
    with start_cluster(tmp_path) as nodes:
        spec = f"{form}:redis+cluster://" + ",".join(f"127.0.0.1:{node.port}" for node in nodes)
        await log_in_and_expire(authserver, spec)
        with workers(spec, authserver.mcp_url, 4, redis_prefix) as fleet:
            fleet.expect("READY")
            results = await trio.to_thread.run_sync(fleet.round)
            fleet.finish()
    assert results == [{"ok": CALLS, "errors": [], "fallbacks": 0}] * 4
    assert authserver.stats() == ONE_REFRESH


@pytest.mark.parametrize("form", REDIS_FORMS)
async def test_a_fleet_shares_its_login_through_a_sentinel_failover(
    authserver: RunningAuthServer, form: str, tmp_path: Path, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The workers connect and call through the first primary; it is killed and the Sentinel promotes the
    # replica; then every access token is revoked, so each worker's next call draws a 401 at once. Through the
    # new primary they send one refresh in all, and the rotated refresh token is never presented again.
    refresh_scenario(authserver)
    monkeypatch.setenv("MCPFSM_TEST_PREFIX", redis_prefix)
    with start_failover_pair(tmp_path) as pair:
        spec = f"{form}:{pair.url}"
        await log_in_and_expire(authserver, spec, expire=False)
        await trio.to_thread.run_sync(pair.replicated)
        with workers(spec, authserver.mcp_url, 4, redis_prefix, "--warm") as fleet:
            fleet.expect("READY")
            await trio.to_thread.run_sync(pair.fail_over)
            authserver.revoke()
            results = await trio.to_thread.run_sync(fleet.round)
            fleet.finish()
    assert results == [{"ok": CALLS, "errors": [], "fallbacks": 0}] * 4
    assert authserver.stats() == ONE_REFRESH


# --- several clients of one process on one store object ----------------------------------------------------------


class CountingStore(mcpfsm.MemoryStore):
    """A ``MemoryStore`` subclass (any object with the store's methods will do, docs/stores.md)."""

    def __init__(self) -> None:
        super().__init__()
        self.locks = 0

    def lock(self, key: str, ttl: float, *, wait: float | None = None) -> Any:
        self.locks += 1
        return super().lock(key, ttl, wait=wait)


@pytest.mark.parametrize("form", ["memory-subclass", "redis-bare", "redis-bare-credential"])
async def test_clients_in_tasks_of_one_process_on_one_store_send_one_refresh(
    authserver: RunningAuthServer, form: str, redis_server: RedisServer, redis_prefix: str
) -> None:
    # One store object shared by clients in tasks of their own: a MemoryStore subclass, and a RedisStore that
    # nobody entered (as the client's store= and as the credential's), whose one connection pool the clients
    # share, each keeping it open for its lifetime.
    refresh_scenario(authserver)
    redis = mcpfsm.RedisStore(redis_server.url, prefix=redis_prefix)
    store: Any = CountingStore() if form == "memory-subclass" else redis
    own = form.endswith("-credential")
    login = mcpfsm.OAuth(redirect_uri="http://localhost:3000/callback", authorize=headless_authorize, store=store)
    async with mcpfsm.Client.http(authserver.mcp_url, auth=login, protocol="2026-07-28") as first:
        await first.call_tool("test-tool", {})
    key = tokens_key(authserver.base_url, authserver.mcp_url, credential_holder(login))
    record = await store.get(key)
    assert record is not None
    await store.set(key, {**record, "issued_at": time.time() - 3601, "expires_at": time.time() - 1})
    results: list[tuple[int, int]] = []

    async def worker() -> None:
        auth = mcpfsm.OAuth(
            redirect_uri="http://127.0.0.1:27418/callback", authorize=_refuse, store=store if own else None
        )
        async with mcpfsm.Client.http(
            authserver.mcp_url, auth=auth, protocol="2026-07-28", store=None if own else store
        ) as client:
            for _ in range(CALLS):
                await client.call_tool("test-tool", {})
            results.append((CALLS, client.store_fallbacks))

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            for _ in range(4):
                nursery.start_soon(worker)
    assert results == [(CALLS, 0)] * 4
    assert authserver.stats() == ONE_REFRESH
    if isinstance(store, CountingStore):
        assert store.locks >= 1


async def _refuse(url: str) -> str:
    raise RuntimeError("this client may not log in")
