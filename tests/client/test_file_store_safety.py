"""A store nobody else writes: file stores refuse what another user could have planted (docs/stores.md).

Real planted things only: directories and files of another user (``chown`` to ``nobody``, which needs root;
the directory case also uses ``/``, which root owns), directories and files others may write, FIFOs and
symbolic links planted where a value file goes, a file larger than any value, and a real ``redis-server``
frozen with SIGSTOP for ``mcpfsm store check``. One case has no real counterpart on a test machine, a file
system that stops answering (a hung network mount): there the read is made to block in its worker thread.

Each refusal is an ``UnsafeStoreError`` that names the path; a client that uses the store goes on from its
memory with one WARNING, as for a Redis that is down. Every wait has a hang guard (never a timing assertion):
before these rules a FIFO held ``get`` forever.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm._client import file_store
from mcpfsm._client.store_guard import GuardedStore
from mcpfsm._core.credentials import credential_holder
from tests.support.peer.fixtures import REPO_ROOT
from tests.support.redisserver import start_redis
from tooling.processes import RunningAuthServer

GUARD: Final = 20.0
"""Hang guard in seconds for one store operation (the bug was an operation that never returned)."""
NOBODY: Final = 65534
KEY: Final = "tokens https://as.example https://mcp.example/mcp client-credentials:0"
ROOT: Final = os.geteuid() == 0 if hasattr(os, "geteuid") else False
needs_root = pytest.mark.skipif(not ROOT, reason="planting another user's file needs CAP_CHOWN (CI runs as root)")


def record(key: str = KEY, value: dict[str, Any] | None = None) -> str:
    return json.dumps({"key": key, "value": value if value is not None else {"v": 1}})


def plant_fifo(path: Path) -> None:
    os.mkfifo(path, 0o600)


def plant_link(path: Path) -> None:
    target = path.with_name("elsewhere")
    target.write_text(record())
    target.chmod(0o600)
    path.symlink_to(target)


def plant_foreign(path: Path) -> None:
    path.write_text(record())
    path.chmod(0o600)
    os.chown(path, NOBODY, NOBODY)


def plant_writable(path: Path) -> None:
    path.write_text(record())
    path.chmod(0o666)


def plant_huge(path: Path) -> None:
    # Valid JSON, one byte larger than any file the store writes.
    padding = file_store.MAX_FILE_BYTES + 1 - len(record(value={"p": ""}))
    path.write_text(record(value={"p": "x" * padding}))
    path.chmod(0o600)
    assert path.stat().st_size == file_store.MAX_FILE_BYTES + 1


PLANTS: Final = [
    pytest.param(plant_fifo, "is not a regular file", id="fifo"),
    pytest.param(plant_link, "is a symbolic link", id="symlink"),
    pytest.param(
        plant_foreign, r"belongs to another user \(uid 65534, not 0\)", id="other-users-file", marks=needs_root
    ),
    pytest.param(plant_writable, r"is writable by others \(mode 0666\)", id="others-may-write"),
    pytest.param(plant_huge, f"is larger than {file_store.MAX_FILE_BYTES} bytes", id="oversized"),
]


def store_directory(tmp_path: Path) -> Path:
    directory = tmp_path / "store"
    directory.mkdir(mode=0o700)
    return directory


@pytest.mark.parametrize(("plant", "refusal"), PLANTS)
async def test_a_file_store_refuses_a_planted_value_file(
    plant: Callable[[Path], None], refusal: str, tmp_path: Path
) -> None:
    store = mcpfsm.FileStore(store_directory(tmp_path))
    file = store.file_of(KEY)
    plant(file)
    with trio.fail_after(GUARD):
        for read in (lambda: store.get(KEY), store.entries, lambda: store.compare_and_delete(KEY, {"v": 1})):
            with pytest.raises(mcpfsm.UnsafeStoreError, match=rf"^the store file {file} {refusal}: refused") as caught:
                await read()
            assert caught.value.path == str(file)
    # Nothing was followed or emptied: a link's target and the planted file are as they were.
    assert os.path.lexists(file)


@pytest.mark.parametrize(("plant", "refusal"), PLANTS)
async def test_a_file_token_store_refuses_a_planted_file(
    plant: Callable[[Path], None], refusal: str, tmp_path: Path
) -> None:
    file = store_directory(tmp_path) / "tokens.json"
    plant(file)
    store = mcpfsm.FileTokenStore(file)
    with trio.fail_after(GUARD):
        for operation in (lambda: store.get(KEY), store.entries, lambda: store.set(KEY, {"v": 2})):
            with pytest.raises(mcpfsm.UnsafeStoreError, match=rf"^the store file {file} {refusal}: refused"):
                await operation()


def foreign_directory(tmp_path: Path) -> Path:
    if ROOT:
        directory = store_directory(tmp_path)
        os.chown(directory, NOBODY, NOBODY)
        return directory
    return Path("/")  # root's own directory: not this user's


def open_to(mode: int) -> Callable[[Path], Path]:
    def directory(tmp_path: Path) -> Path:
        made = store_directory(tmp_path)
        made.chmod(mode)
        return made

    return directory


@pytest.mark.parametrize("kind", ["file-store", "token-store"])
@pytest.mark.parametrize(
    ("directory", "refusal"),
    [
        pytest.param(foreign_directory, "belongs to another user", id="other-users"),
        pytest.param(open_to(0o777), r"is writable by others \(mode 0777\)", id="0777"),
        pytest.param(open_to(0o770), r"is writable by others \(mode 0770\)", id="0770"),
    ],
)
async def test_file_stores_refuse_a_directory_someone_else_may_write(
    kind: str, directory: Callable[[Path], Path], refusal: str, tmp_path: Path
) -> None:
    where = directory(tmp_path)
    store: Any = mcpfsm.FileStore(where) if kind == "file-store" else mcpfsm.FileTokenStore(where / "tokens.json")
    pattern = rf"^the store directory {where} {refusal}"
    with trio.fail_after(GUARD):
        with pytest.raises(mcpfsm.UnsafeStoreError, match=pattern):
            await store.set(KEY, {"v": 1})
        with pytest.raises(mcpfsm.UnsafeStoreError, match=pattern):
            await store.get(KEY)
        with pytest.raises(mcpfsm.UnsafeStoreError, match=pattern):
            async with store.lock(KEY, 5):
                pass
    assert not (where / "tokens.json").exists()


async def test_a_value_larger_than_a_file_keeps_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    store = mcpfsm.FileStore(tmp_path / "store")
    with pytest.raises(mcpfsm.StoreError, match=r"^a value of \d+ bytes is larger than the 16777216 a file store"):
        await store.set(KEY, {"p": "x" * file_store.MAX_FILE_BYTES})
    assert await store.entries() == []


async def test_the_users_own_store_still_works_and_its_files_stay_private(tmp_path: Path) -> None:
    store = mcpfsm.FileStore(tmp_path / "fresh")
    await store.set(KEY, {"v": 1})
    assert await store.get(KEY) == {"v": 1}
    assert (tmp_path / "fresh").stat().st_mode & 0o777 == 0o700
    assert store.file_of(KEY).stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(("plant", "refusal"), [PLANTS[0], PLANTS[1]])
async def test_a_guarded_store_falls_back_to_memory_with_one_warning(
    plant: Callable[[Path], None], refusal: str, tmp_path: Path, records: list[tuple[str, str]]
) -> None:
    store = mcpfsm.FileStore(store_directory(tmp_path))
    plant(store.file_of(KEY))
    guarded = GuardedStore(store, timeout=GUARD)
    with trio.fail_after(GUARD):
        assert await guarded.get(KEY) is None
        await guarded.set(KEY, {"v": 3})  # the store counts as down: memory only
        assert await guarded.get(KEY) == {"v": 3}
    assert guarded.fallbacks == 1
    assert [message for level, message in records if level == "WARNING"] == [
        f"the store {store!r} failed (get: UnsafeStoreError: the store file {store.file_of(KEY)} {refusal}:"
        " refused); this client uses its memory for 5 s"
    ]


async def test_a_stalled_file_system_holds_a_call_no_longer_than_the_store_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A hung network mount: the read never returns while the test runs. The guarded get gives up after its
    # timeout (0.5 s here) and the worker thread it abandoned is released at the end.
    released = threading.Event()

    def hung(file: Path) -> bytes | None:
        released.wait(60)
        return None

    monkeypatch.setattr(file_store, "read_bounded", hung)
    guarded = GuardedStore(mcpfsm.FileStore(store_directory(tmp_path)), timeout=0.5)
    try:
        with trio.fail_after(GUARD):
            assert await guarded.get(KEY) is None
            assert await guarded.get(KEY) is None  # down for a while: memory, no second wait
    finally:
        released.set()
    assert guarded.fallbacks == 1


# --- a client with a planted store, against the project's authorization server --------------------------------


@pytest.fixture
def site(authserver: RunningAuthServer) -> RunningAuthServer:
    authserver.configure({"client_credentials": {"client_id": "agent", "client_secret": "agent-secret"}})
    return authserver


async def test_a_client_whose_store_holds_a_fifo_calls_from_memory(
    site: RunningAuthServer, tmp_path: Path, records: list[tuple[str, str]]
) -> None:
    store = mcpfsm.FileStore(store_directory(tmp_path))
    auth = mcpfsm.ClientCredentials("agent", client_secret="agent-secret")
    holder = credential_holder(auth)
    plant_fifo(store.file_of(f"binding {site.mcp_url} {holder}"))
    with trio.fail_after(GUARD * 3):
        async with mcpfsm.Client.http(site.mcp_url, auth=auth, store=store) as client:
            assert (await client.call_tool("test-tool", {})).text == "test-tool called"
            assert client.store_fallbacks == 1
    assert any("is not a regular file: refused" in message for level, message in records if level == "WARNING")


# --- mcpfsm store check, bounded the same way ------------------------------------------------------------------


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpfsm", "store", "check", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_store_check_refuses_a_planted_fifo(tmp_path: Path) -> None:
    directory = store_directory(tmp_path)
    plant_fifo(directory / ("0" * 64 + ".json"))
    done = check(str(directory))
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == (
        f"mcpfsm: error: cannot use the store {directory}: the store file {directory / ('0' * 64 + '.json')} is not"
        " a regular file: refused\n"
    )


def test_store_check_of_a_frozen_redis_ends_at_its_timeout() -> None:
    with start_redis() as redis:
        redis.process.send_signal(signal.SIGSTOP)
        try:
            done = check(redis.url, "--timeout", "1")
        finally:
            redis.process.send_signal(signal.SIGCONT)
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == f"mcpfsm: error: the store {redis.url} (prefix mcpfsm:) did not answer within 1 s\n"
