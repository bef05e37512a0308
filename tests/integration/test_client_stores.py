"""A client's ``store=`` in use (docs/stores.md): tokens and registrations of ``auth=``, every member of a group,
and a store that fails mid-run. Real parts: the test authorization server (tooling.authserver), a real
``redis-server`` per test that kills or stops it (tests/support/redisserver.py), files in a temporary directory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm._client.store_guard import GuardedStore
from mcpfsm._core.credentials import credential_holder, tokens_key
from tests.support.peer.fixtures import REPO_ROOT
from tests.support.redisserver import RedisServer, start_redis
from tooling.processes import RunningAuthServer

GUARD: Final = 60
AGENT: Final = {"client_id": "agent", "client_secret": "s3cret"}


@pytest.fixture
def site(authserver: RunningAuthServer) -> RunningAuthServer:
    authserver.configure({"client_credentials": AGENT})
    return authserver


def agent(**options: Any) -> mcpfsm.ClientCredentials:
    return mcpfsm.ClientCredentials("agent", client_secret="s3cret", **options)


def token_requests(site: RunningAuthServer) -> int:
    return [entry["path"] for entry in site.log()].count("/token")


async def call(client: mcpfsm.Client) -> str:
    return (await client.call_tool("test-tool", {})).text


@contextlib.asynccontextmanager
async def shared(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    if kind == "file":
        yield mcpfsm.FileStore(tmp_path / "store")
    else:
        authserver: RedisServer = request.getfixturevalue("redis_server")
        async with mcpfsm.RedisStore(authserver.url, prefix=request.getfixturevalue("redis_prefix")) as store:
            yield store


@pytest.mark.parametrize("kind", ["file", "redis"])
async def test_the_clients_store_keeps_tokens_for_the_next_client(
    kind: str, site: RunningAuthServer, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    async with shared(kind, tmp_path, request) as store:
        async with mcpfsm.Client.http(site.mcp_url, auth=agent(), store=store) as first:
            assert await call(first) == "test-tool called"
        assert token_requests(site) == 1
        async with mcpfsm.Client.http(site.mcp_url, auth=agent(), store=store) as second:
            assert await call(second) == "test-tool called"
        # The second client found the first one's tokens in the store and asked for none.
        assert token_requests(site) == 1
        stored = await store.get(tokens_key(site.base_url, site.mcp_url, credential_holder(agent())))
        assert stored is not None and stored["issuer"] == site.base_url
        assert (first.store_fallbacks, second.store_fallbacks) == (0, 0)


async def test_a_credentials_own_store_wins(site: RunningAuthServer, tmp_path: Path) -> None:
    own = mcpfsm.FileTokenStore(tmp_path / "tokens.json")
    clients = mcpfsm.FileStore(tmp_path / "store")
    async with mcpfsm.Client.http(site.mcp_url, auth=agent(store=own), store=clients) as client:
        assert await call(client) == "test-tool called"
    key = tokens_key(site.base_url, site.mcp_url, credential_holder(agent()))
    assert await own.get(key) is not None
    assert await clients.get(key) is None
    assert await clients.entries() == []


async def test_a_store_killed_mid_run_costs_one_warning_and_no_call(
    site: RunningAuthServer, records: list[tuple[str, str]]
) -> None:
    with start_redis() as redis:
        store = mcpfsm.RedisStore(redis.url)
        async with mcpfsm.Client.http(site.mcp_url, auth=agent(), store=store) as client:
            assert await call(client) == "test-tool called"
            site.revoke()
            redis.kill()
            # The server refuses the token now: the client asks for a new one and writes it to a dead store.
            with trio.fail_after(GUARD):
                assert await call(client) == "test-tool called"
                assert await call(client) == "test-tool called"
            assert client.store_fallbacks == 1
        assert token_requests(site) == 2
    warnings = [message for level, message in records if level == "WARNING"]
    assert warnings == [
        f"the store RedisStore('redis://127.0.0.1:{redis.port}/0', prefix='mcpfsm:') failed (get: ConnectionError);"
        " this client uses its memory for 5 s"
    ]


async def test_a_store_that_hangs_costs_a_call_one_timeout(
    site: RunningAuthServer, records: list[tuple[str, str]]
) -> None:
    # SIGSTOP: the kernel still accepts connections, the server never answers.
    with start_redis() as redis:
        store = mcpfsm.RedisStore(redis.url)
        async with store, mcpfsm.Client.http(site.mcp_url, auth=agent(), store=store) as client:
            assert await call(client) == "test-tool called"
            site.revoke()
            os.kill(redis.process.pid, signal.SIGSTOP)
            try:
                with trio.fail_after(GUARD):
                    assert await call(client) == "test-tool called"
                    assert await call(client) == "test-tool called"
            finally:
                os.kill(redis.process.pid, signal.SIGCONT)
            assert client.store_fallbacks == 1
    # One store timeout for both calls (one warning, one count), not one per store operation.
    assert [message for level, message in records if level == "WARNING"] == [
        f"the store RedisStore('redis://127.0.0.1:{redis.port}/0', prefix='mcpfsm:') failed (get: no answer within"
        " 2 s); this client uses its memory for 5 s"
    ]


async def test_the_guard_tries_the_store_again_after_a_few_seconds(
    records: list[tuple[str, str]], tmp_path: Path
) -> None:
    now = [100.0]
    blocker = tmp_path / "file"
    blocker.write_text("")
    store = GuardedStore(mcpfsm.FileStore(blocker / "store"), timeout=30, retry_after=5, clock=lambda: now[0])
    await store.set("k", {"v": 1})
    assert (store.down, store.fallbacks, await store.get("k")) == (True, 1, {"v": 1})
    now[0] += 4.9
    assert store.down is True
    now[0] += 0.1
    assert store.down is False
    blocker.unlink()
    await store.set("k", {"v": 2})
    assert (store.down, store.fallbacks, await store.store.get("k")) == (False, 1, {"v": 2})
    assert [level for level, _ in records] == ["WARNING"]


async def test_a_group_passes_one_store_to_every_member(tmp_path: Path) -> None:
    store = mcpfsm.FileStore(tmp_path / "store")
    entry = {"command": sys.executable, "args": ["-m", "tests.support.stdio_child"], "cwd": str(REPO_ROOT)}
    async with mcpfsm.ClientGroup({"mcpServers": {"one": entry, "two": entry}}, store=store) as group:
        assert group.status == {"one": "connected", "two": "connected"}
        assert [group[name].store for name in ("one", "two")] == [store, store]
        assert [type(group[name].shared_store).__name__ for name in ("one", "two")] == ["GuardedStore"] * 2


async def test_a_lock_the_store_cannot_give_falls_back_to_a_lock_of_this_process(
    records: list[tuple[str, str]], tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    store = GuardedStore(mcpfsm.FileStore(blocker / "store"))
    async with store.lock("tokens x", ttl=30):
        assert (store.down, store.fallbacks) == (True, 1)
    assert [message for _, message in records] == [
        f"the store FileStore({str(blocker / 'store')!r}) failed (lock: NotADirectoryError); this client uses its"
        " memory for 5 s"
    ]


def test_a_lock_held_past_its_ttl_by_another_process_is_waited_for_then_bypassed(
    records: list[tuple[str, str]], tmp_path: Path
) -> None:
    import subprocess

    directory = tmp_path / "store"
    with subprocess.Popen(
        [sys.executable, "-m", "tests.support.store_worker", f"file:{directory}", "hold", "tokens x", "3600"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "HELD\n"

            async def take() -> GuardedStore:
                store = GuardedStore(mcpfsm.FileStore(directory), timeout=1)
                with trio.fail_after(GUARD):
                    async with store.lock("tokens x", ttl=1):
                        await store.set("tokens x", {"v": 1})
                return store

            store = trio.run(take)
        finally:
            holder.kill()
    # Not a failure of the store: it stays up, and the value went to it.
    assert (store.down, store.fallbacks) == (False, 1)
    assert trio.run(mcpfsm.FileStore(directory).get, "tokens x") == {"v": 1}
    assert [message for _, message in records] == [
        f"the store FileStore({str(directory)!r}) waited more than 2 s for a lock; this client goes on under a lock"
        " of its own"
    ]
