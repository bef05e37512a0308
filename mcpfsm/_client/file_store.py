"""A store in a directory, shared by every process on one machine that names it (docs/stores.md).

:class:`FileStore` keeps one JSON file per key, ``0600`` inside a ``0700`` directory. A file's name is the
SHA-256 of its key (a key names an issuer or an MCP URL, never a secret, but a name on disk should not
even say which servers a user logs in to); the key itself is kept inside the file, beside the value, so
``mcpfsm store check`` can list what the store holds. Every file is replaced atomically (a temporary file
in the same directory, then ``os.replace``), so a reader never sees half a value.

Locks are the operating system's own (``flock`` on Unix, ``LockFileEx`` on Windows) through the ``filelock``
library: the kernel drops a lock when its holder's process exits, however it exits, so a holder that dies
never excludes anyone afterwards (well within the ``ttl`` that :meth:`FileStore.lock` takes). A process
that stays alive but stops making progress while holding a lock keeps it; that is the one case a
``RedisStore``'s expiring lock covers and a file lock does not.

:func:`file_lock` is the one place that turns a ``filelock`` lock into a trio context manager: the
library's own blocking acquire (its timeout is the lock's ``wait``) runs in a worker thread, polls trio's
cancellation, and gives up when the task is cancelled.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Final

import trio

from .._core.store_lock import check_lock, lock_timeout
from .._log import logger

__all__ = ["FileStore", "file_lock", "take_within", "write_json_atomically"]

_SUFFIX: Final = ".json"
_LOCK_SUFFIX: Final = ".lock"
_LOCAL: dict[str, trio.Lock] = {}
_WAITERS: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar("mcpfsm_file_lock_waiters")
_MOST_WAITERS: Final = 256
_POLL: Final = 0.005
"""Seconds between two of ``filelock``'s tries of a lock another process holds: it asks the kernel with
``flock(LOCK_NB)``, as a blocking ``flock`` in a thread could be neither bounded nor cancelled. Sets how soon
a waiter takes a released lock (bench/fleet.py ``--handoff --store file``)."""


def _waiters() -> trio.CapacityLimiter:
    try:
        return _WAITERS.get()
    except LookupError:
        limiter = trio.CapacityLimiter(_MOST_WAITERS)
        _WAITERS.set(limiter)
        return limiter


def _cancelled() -> bool:
    # Runs in the worker thread: asks trio whether the task waiting for this thread has been cancelled.
    try:
        trio.from_thread.check_cancelled()
    except trio.Cancelled:
        return True
    return False


async def take_within(lock: trio.Lock, deadline: float) -> bool:
    """Acquire ``lock`` by ``deadline`` (trio's clock); return whether this task holds it.

    A free lock is taken even when the deadline has passed (a ``wait`` of 0 tries once). The deadline's scope
    covers the wait only, and ends before the caller uses the lock.
    """
    try:
        lock.acquire_nowait()
    except trio.WouldBlock:
        pass
    else:
        await trio.lowlevel.cancel_shielded_checkpoint()
        return True
    with trio.move_on_at(deadline):
        await lock.acquire()
    return lock.statistics().owner is trio.lowlevel.current_task()


@contextlib.asynccontextmanager
async def file_lock(path: Path, *, wait: float | None = None, store: object = None) -> AsyncIterator[None]:
    """Hold the operating system's lock on ``path`` (created ``0600`` if missing) for the block.

    The tasks of one process queue on a ``trio.Lock`` per path first, so each process asks the operating
    system for a path's lock once at a time (``filelock`` refuses a second lock object on a path a thread
    holds, and trio's worker threads are reused). Waits at most ``wait`` seconds in all (``None``: as long as
    it takes); cancelling the waiting task stops the wait.

    Raises:
        StoreLockTimeout: the lock stayed taken for ``wait`` seconds (the message names ``store``'s kind).
    """
    from filelock import FileLock, Timeout

    deadline = math.inf if wait is None else trio.current_time() + wait
    name = os.path.abspath(path)
    local = _LOCAL.get(name)
    if local is None:
        local = _LOCAL[name] = trio.Lock()
    try:
        if not await take_within(local, deadline):
            raise lock_timeout(store, wait)
        try:
            lock = FileLock(path, mode=0o600, thread_local=False)
            left = -1.0 if wait is None else max(0.0, deadline - trio.current_time())
            try:
                # Waiting threads come from a limiter of their own: a wait never takes the thread a holder
                # needs to write (trio's default limiter, which the reads and writes use).
                await trio.to_thread.run_sync(
                    lambda: lock.acquire(timeout=left, poll_interval=_POLL, cancel_check=_cancelled),
                    limiter=_waiters(),
                )
            except Timeout:
                # The scope is cancelled (cancel_check answered True) and this checkpoint raises trio.Cancelled,
                # or the time ran out.
                await trio.lowlevel.checkpoint()
                raise lock_timeout(store, wait) from None
            try:
                yield
            finally:
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(lock.release)
        finally:
            local.release()
    finally:
        if not local.locked() and local.statistics().tasks_waiting == 0:
            _LOCAL.pop(name, None)


def write_json_atomically(path: Path, value: Any) -> None:
    """Write ``value`` as JSON to ``path``: a ``0600`` temporary file beside it, synced, then ``os.replace``.

    The directory is created ``0700`` when missing. Raises ``OSError`` when the disk refuses.
    """
    directory = path.parent
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    try:
        # mkstemp creates the file 0600 (readable by the owner only) before anything is written.
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(value, handle, indent=1, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


class FileStore:
    """A :class:`~mcpfsm.Store` in a directory: one ``0600`` JSON file per key (docs/stores.md).

    Args:
        path: the directory; it is created (mode ``0700``) on the first write. The lock files live there too.

    For every process on one machine (and every task in each) that names the same directory: values are
    replaced atomically, ``compare_and_delete`` is atomic against every other writer, and ``lock(key, ttl)``
    excludes every other holder of ``key``. Locks are the operating system's file locks (``filelock``): a
    holder that dies releases its lock at once. A file that is not JSON is treated as absent (one WARNING).
    Raises ``OSError`` when the disk refuses a write; a client that uses the store then falls back to
    memory for a while (docs/stores.md, "When the store fails"). Nothing here ever logs or shows a value.
    """

    __slots__ = ("path",)

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Use the directory at ``path``; nothing is created until the first write."""
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"FileStore({str(self.path)!r})"

    def file_of(self, key: str) -> Path:
        """The file that holds ``key``'s value: the SHA-256 of the key, in hex, then ``.json``."""
        return self.path / (hashlib.sha256(key.encode("utf-8")).hexdigest() + _SUFFIX)

    async def get(self, key: str) -> dict[str, Any] | None:
        """The value stored under ``key``, or ``None``."""
        return await trio.to_thread.run_sync(self._read, self.file_of(key), key)

    async def set(self, key: str, value: Mapping[str, Any]) -> None:
        """Store ``value`` under ``key``, replacing what was there."""
        record = {"key": key, "value": dict(value)}
        file = self.file_of(key)
        async with self._writing(file):
            await trio.to_thread.run_sync(write_json_atomically, file, record)

    async def delete(self, key: str) -> None:
        """Forget ``key``; nothing happens when it is absent."""
        file = self.file_of(key)
        async with self._writing(file):
            await trio.to_thread.run_sync(_unlink, file)

    async def compare_and_delete(self, key: str, expected: Mapping[str, Any]) -> bool:
        """Delete ``key`` if and only if its value equals ``expected`` as a JSON value; return whether it did."""
        file = self.file_of(key)
        wanted = json.loads(json.dumps(dict(expected)))
        async with self._writing(file):
            if await trio.to_thread.run_sync(self._read, file, key) != wanted:
                return False
            await trio.to_thread.run_sync(_unlink, file)
            return True

    @contextlib.asynccontextmanager
    async def lock(self, key: str, ttl: float, *, wait: float | None = None) -> AsyncIterator[None]:
        """Hold ``key`` against every other holder on this directory, in any process.

        ``ttl`` (seconds) is the longest a dead holder may keep the lock; an operating-system lock is
        released the moment its process exits, so it is always met. Waits at most ``wait`` seconds
        (``None``: as long as it takes), through ``filelock``'s own wait.

        Raises:
            StoreLockTimeout: another holder kept ``key`` for ``wait`` seconds.
            ValueError: ``ttl`` is not a positive number, or ``wait`` is negative.
        """
        check_lock(ttl, wait)
        await trio.to_thread.run_sync(_directory, self.path)
        async with file_lock(self.file_of(key).with_suffix(".held" + _LOCK_SUFFIX), wait=wait, store=self):
            yield

    async def entries(self) -> list[tuple[str, dict[str, Any], float | None]]:
        """Every key with its value and seconds to live (always ``None``: files do not expire), by key."""
        return await trio.to_thread.run_sync(self._entries)

    def _entries(self) -> list[tuple[str, dict[str, Any], float | None]]:
        found: list[tuple[str, dict[str, Any], float | None]] = []
        if self.path.is_dir():
            for file in self.path.glob("*" + _SUFFIX):
                record = _load(file)
                if record is not None and isinstance(record.get("key"), str) and isinstance(record.get("value"), dict):
                    found.append((record["key"], record["value"], None))
        return sorted(found, key=lambda entry: entry[0])

    @contextlib.asynccontextmanager
    async def _writing(self, file: Path) -> AsyncIterator[None]:
        # A lock of its own, not the one `lock` takes: a holder of `lock(key)` may write its key.
        await trio.to_thread.run_sync(_directory, self.path)
        async with file_lock(file.with_suffix(_LOCK_SUFFIX)):
            yield

    @staticmethod
    def _read(file: Path, key: str) -> dict[str, Any] | None:
        record = _load(file)
        if record is None or record.get("key") != key or not isinstance(record.get("value"), dict):
            return None
        value: dict[str, Any] = record["value"]
        return value


def _load(file: Path) -> dict[str, Any] | None:
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        logger.warning("the store file {} is not a JSON object; it is treated as absent", file)
        return None
    return record


def _unlink(file: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        file.unlink()


def _directory(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
