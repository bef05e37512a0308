"""The shared stores (docs/stores.md): the Store contract on every backend, then real processes on one store.

Every backend is the real thing: files in a temporary directory, a real ``redis-server`` on 127.0.0.1
(tests/support/redisserver.py), worker processes started with ``python -m tests.support.store_worker``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

import mcpfsm
from tests.support.peer.fixtures import REPO_ROOT
from tests.support.redisserver import RedisServer, start_cluster_node, start_redis, start_sentinel

BACKENDS = ["memory", "file", "tokenfile", "redis"]
SHARED = ["file", "tokenfile", "redis"]
GUARD = 60


@contextlib.asynccontextmanager
async def opened(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    if kind == "memory":
        yield mcpfsm.MemoryStore()
    elif kind == "file":
        yield mcpfsm.FileStore(tmp_path / "store")
    elif kind == "tokenfile":
        yield mcpfsm.FileTokenStore(tmp_path / "tokens.json")
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        async with mcpfsm.RedisStore(server.url, prefix=request.getfixturevalue("redis_prefix")) as store:
            yield store


def spec(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "file":
        return f"file:{tmp_path / 'store'}"
    if kind == "tokenfile":
        return f"tokenfile:{tmp_path / 'tokens.json'}"
    return f"redis:{request.getfixturevalue('redis_server').url}"


@contextlib.contextmanager
def workers(store: str, env: dict[str, str], *commands: list[str]) -> Iterator[list[subprocess.Popen[str]]]:
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.store_worker", store, *command],
            cwd=REPO_ROOT,
            env={**os.environ, **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]
    try:
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.communicate(timeout=GUARD)


def line_of(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    return process.stdout.readline().strip()


# --- the contract, on every backend ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", BACKENDS)
async def test_get_set_delete(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    async with opened(kind, tmp_path, request) as store:
        assert await store.get("tokens https://as.example https://mcp.example/mcp") is None
        await store.set("tokens https://as.example https://mcp.example/mcp", {"access_token": "a", "n": [1, 2]})
        await store.set("registration https://as.example", {"client_id": "c"})
        assert await store.get("tokens https://as.example https://mcp.example/mcp") == {
            "access_token": "a",
            "n": [1, 2],
        }
        await store.set("tokens https://as.example https://mcp.example/mcp", {"access_token": "b"})
        assert await store.get("tokens https://as.example https://mcp.example/mcp") == {"access_token": "b"}
        await store.delete("tokens https://as.example https://mcp.example/mcp")
        await store.delete("tokens https://as.example https://mcp.example/mcp")
        assert await store.get("tokens https://as.example https://mcp.example/mcp") is None
        assert await store.get("registration https://as.example") == {"client_id": "c"}


@pytest.mark.parametrize("kind", BACKENDS)
async def test_compare_and_delete_compares_json_values(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    async with opened(kind, tmp_path, request) as store:
        await store.set("tokens", {"access_token": "new", "expires_at": 10, "scope": ["a", "b"]})
        assert await store.compare_and_delete("tokens", {"access_token": "old", "expires_at": 10}) is False
        assert await store.compare_and_delete("absent", {"access_token": "new"}) is False
        assert await store.get("tokens") == {"access_token": "new", "expires_at": 10, "scope": ["a", "b"]}
        # Another key order, and a tuple where JSON has an array: the same JSON value.
        assert await store.compare_and_delete("tokens", {"scope": ("a", "b"), "expires_at": 10, "access_token": "new"})
        assert await store.get("tokens") is None


@pytest.mark.parametrize("kind", BACKENDS)
async def test_lock_excludes_the_tasks_of_one_process(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    async with opened(kind, tmp_path, request) as store:
        inside = most = 0

        async def hold() -> None:
            nonlocal inside, most
            async with store.lock("tokens x", ttl=30):
                inside += 1
                most = max(most, inside)
                await store.set("tokens x", {"n": inside})
                inside -= 1

        with trio.fail_after(GUARD):
            async with trio.open_nursery() as nursery:
                for _ in range(8):
                    nursery.start_soon(hold)
        assert most == 1


@pytest.mark.parametrize("kind", SHARED)
async def test_a_lock_needs_a_positive_ttl(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    async with opened(kind, tmp_path, request) as store:
        with pytest.raises(ValueError, match=r"^ttl must be a positive number of seconds, got 0$"):
            async with store.lock("k", 0):
                pass


# --- many processes on one store -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", SHARED)
def test_two_processes_lose_none_of_200_concurrent_writes(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, redis_prefix: str
) -> None:
    # Regression: two FileTokenStore objects on one file each rewrote the whole file, and half the writes were lost.
    store = spec(kind, tmp_path, request)
    with workers(store, {"MCPFSM_TEST_PREFIX": redis_prefix}, ["write", "a", "100"], ["write", "b", "100"]) as both:
        assert [line_of(process) for process in both] == ["READY", "READY"]
        for process in both:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        assert [line_of(process) for process in both] == ["DONE", "DONE"]

    async def read_back() -> dict[str, Any]:
        async with opened(kind, tmp_path, request) as fresh:
            return {f"{n}-{i}": await fresh.get(f"{n}-{i}") for n in "ab" for i in range(100)}

    assert trio.run(read_back) == {f"{n}-{i}": {"writer": n, "index": i} for n in "ab" for i in range(100)}


@pytest.mark.parametrize("kind", SHARED)
def test_the_lock_excludes_other_processes(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, redis_prefix: str
) -> None:
    store = spec(kind, tmp_path, request)
    with workers(store, {"MCPFSM_TEST_PREFIX": redis_prefix}, *[["count", "counter", "40"]] * 3) as three:
        assert [line_of(process) for process in three] == ["DONE"] * 3

    async def total() -> Any:
        async with opened(kind, tmp_path, request) as fresh:
            return await fresh.get("counter")

    assert trio.run(total) == {"n": 120}


@pytest.mark.parametrize("kind", ["file", "tokenfile"])
def test_a_dead_holder_of_a_file_lock_excludes_nobody(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # The operating system drops a file lock when its process exits, however it exits (here SIGKILL).
    store = spec(kind, tmp_path, request)
    with workers(store, {}, ["hold", "tokens x", "3600"]) as (holder,):
        assert line_of(holder) == "HELD"
        holder.kill()
        holder.wait(timeout=GUARD)

    async def take() -> None:
        async with opened(kind, tmp_path, request) as fresh:
            with trio.fail_after(GUARD):
                async with fresh.lock("tokens x", ttl=30):
                    pass

    trio.run(take)


def test_a_dead_holder_of_a_redis_lock_excludes_others_until_its_ttl(
    redis_server: RedisServer, redis_prefix: str
) -> None:
    with workers(f"redis:{redis_server.url}", {"MCPFSM_TEST_PREFIX": redis_prefix}, ["hold", "tokens x", "2"]) as (
        holder,
    ):
        assert line_of(holder) == "HELD"
        holder.kill()
        holder.wait(timeout=GUARD)

    async def take() -> tuple[float, float]:
        async with mcpfsm.RedisStore(redis_server.url, prefix=redis_prefix) as store:
            import coredis

            async with coredis.Redis.from_url(redis_server.url, decode_responses=True) as raw:
                left = await raw.pttl(store.lock_key_of("tokens x"))
            started = trio.current_time()
            with trio.fail_after(GUARD):
                async with store.lock("tokens x", ttl=30):
                    return left, trio.current_time() - started

    left, waited = trio.run(take)
    # The dead holder's lock was still there, with its ttl running; the next holder waited for it to expire.
    assert 0 < left <= 2000
    assert waited > 0


# --- Sentinel and Cluster, for real ------------------------------------------------------------------------


@contextlib.contextmanager
def deployment(kind: str, tmp_path: Path) -> Iterator[str]:
    if kind == "sentinel":
        with start_redis() as primary, start_sentinel(primary, "fleet", tmp_path) as port:
            yield f"redis+sentinel://127.0.0.1:{port}/fleet"
    else:
        with start_cluster_node(tmp_path) as node:
            yield f"redis+cluster://127.0.0.1:{node.port}"


@pytest.mark.parametrize("kind", ["sentinel", "cluster"])
async def test_sentinel_and_cluster_urls_reach_a_real_deployment(kind: str, tmp_path: Path) -> None:
    with deployment(kind, tmp_path) as url:
        async with mcpfsm.RedisStore(url, prefix="fleet:") as store:
            await store.set("tokens a", {"access_token": "a"})
            async with store.lock("tokens a", ttl=30):
                assert await store.get("tokens a") == {"access_token": "a"}
            assert await store.entries() == [("tokens a", {"access_token": "a"}, None)]
            assert await store.compare_and_delete("tokens a", {"access_token": "a"}) is True
            assert await store.get("tokens a") is None


# --- what the files and keys look like ---------------------------------------------------------------------


async def test_file_store_files_are_private_and_named_by_hash(tmp_path: Path) -> None:
    store = mcpfsm.FileStore(tmp_path / "store")
    key = "binding https://mcp.example/mcp?api_key=s3cret"
    await store.set(key, {"issuer": "https://as.example"})
    async with store.lock(key, ttl=5):
        pass
    digest = hashlib.sha256(key.encode()).hexdigest()
    assert stat.S_IMODE((tmp_path / "store").stat().st_mode) == 0o700
    names = sorted(path.name for path in (tmp_path / "store").iterdir())
    assert names == [f"{digest}.held.lock", f"{digest}.json", f"{digest}.lock"]
    assert {stat.S_IMODE(path.stat().st_mode) for path in (tmp_path / "store").iterdir()} == {0o600}
    assert json.loads((tmp_path / "store" / f"{digest}.json").read_text()) == {
        "key": key,
        "value": {"issuer": "https://as.example"},
    }
    assert await store.entries() == [(key, {"issuer": "https://as.example"}, None)]
    assert repr(store) == f"FileStore({str(tmp_path / 'store')!r})"


async def test_a_file_that_is_not_json_reads_as_absent(tmp_path: Path, records: list[tuple[str, str]]) -> None:
    store = mcpfsm.FileStore(tmp_path)
    store.file_of("k").write_text("{half")
    assert await store.get("k") is None
    await store.set("k", {"v": 1})
    assert await store.get("k") == {"v": 1}
    assert records == [
        ("WARNING", f"the store file {store.file_of('k')} is not a JSON object; it is treated as absent")
    ]


async def test_a_file_store_on_a_disk_that_refuses_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    store = mcpfsm.FileStore(blocker / "store")
    with pytest.raises(NotADirectoryError):
        await store.set("k", {"v": 1})


async def test_redis_keys_start_with_the_prefix_and_name_no_key(redis_server: RedisServer, redis_prefix: str) -> None:
    import coredis

    key = "binding https://mcp.example/mcp?api_key=s3cret"
    async with (
        mcpfsm.RedisStore(redis_server.url, prefix=redis_prefix) as store,
        coredis.Redis.from_url(redis_server.url, decode_responses=True) as raw,
    ):
        await store.set(key, {"issuer": "https://as.example"})
        async with store.lock(key, ttl=30):
            held = sorted([name async for name in raw.scan_iter(match=redis_prefix + "*")])
        after = sorted([name async for name in raw.scan_iter(match=redis_prefix + "*")])
        assert await store.entries() == [(key, {"issuer": "https://as.example"}, None)]
    digest = hashlib.sha256(key.encode()).hexdigest()
    # The value, the lock (a Cluster hash tag around the digest), then the lock's wake-up list once released.
    assert held == [redis_prefix + digest, redis_prefix + "lock:{" + digest + "}"]
    assert after == [redis_prefix + digest, redis_prefix + "lock:{" + digest + "}:wake"]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        pytest.param(
            "http://h:1",
            "a RedisStore URL starts with one of redis://, rediss://, redis+sentinel://, rediss+sentinel://, "
            "redis+cluster://, rediss+cluster://, got 'http://h:1'",
            id="scheme",
        ),
        pytest.param(
            "redis+sentinel://:pw@h:26379",
            "the Sentinel URL 'redis+sentinel://:***@h:26379' names no service: redis+sentinel://HOST:PORT/SERVICE",
            id="no-service",
        ),
        pytest.param("redis://:pw@", "the RedisStore URL 'redis://:***@' names no host", id="no-host"),
        pytest.param(
            "redis+cluster://u:pw@h:port",
            "the RedisStore URL 'redis+cluster://u:***@h:port' has a port that is not a number",
            id="port",
        ),
    ],
)
def test_a_bad_redis_url_is_named_without_its_password(url: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        mcpfsm.RedisStore(url)
    assert str(caught.value) == message


def test_redis_store_repr_hides_the_password() -> None:
    store = mcpfsm.RedisStore("rediss://app:s3cret@redis.example:6380/2", prefix="fleet:")
    assert repr(store) == "RedisStore('rediss://app:***@redis.example:6380/2', prefix='fleet:')"
    assert "s3cret" not in repr(store)


@pytest.mark.parametrize(
    ("url", "secret", "shown"),
    [
        (
            "redis://r.example/0?password=s3c@ret",
            "s3c",
            "RedisStore('redis://r.example/0?password=***', prefix='mcpfsm:')",
        ),
        ("redis://app:s3c/ret@r.example/0", "s3c", "RedisStore('redis://app:***@r.example/0', prefix='mcpfsm:')"),
    ],
    ids=["password-in-query", "slash-in-password"],
)
def test_redis_store_repr_hides_a_password_in_the_query_or_holding_a_slash(url: str, secret: str, shown: str) -> None:
    # Redis takes ?password= too; the last '@' of the whole URL was once read as the end of the userinfo.
    store = mcpfsm.RedisStore(url)
    assert repr(store) == shown
    assert secret not in repr(store)


def test_redis_store_without_coredis_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "coredis", None)
    with pytest.raises(ImportError, match=r"^RedisStore talks to Redis through the coredis package, which is not"):
        mcpfsm.RedisStore("redis://127.0.0.1:6379/0")


@pytest.mark.parametrize("decoded", [True, False], ids=["str", "bytes"])
async def test_a_coredis_client_of_the_applications_own(
    decoded: bool, redis_server: RedisServer, redis_prefix: str
) -> None:
    import coredis

    async with coredis.Redis.from_url(redis_server.url, decode_responses=decoded) as client:
        store = mcpfsm.RedisStore(client=client, prefix=redis_prefix)
        await store.set("tokens a", {"access_token": "a"})
        async with store.lock("tokens a", ttl=30):
            assert await store.get("tokens a") == {"access_token": "a"}
        assert await store.entries() == [("tokens a", {"access_token": "a"}, None)]
        assert await store.compare_and_delete("tokens a", {"access_token": "a"}) is True
        assert repr(store) == f"RedisStore('Redis', prefix={redis_prefix!r})"
