"""A store in a directory, shared by every process on one machine that names it (docs/stores.md).

:class:`FileStore` keeps one JSON file per key, ``0600`` inside a ``0700`` directory. A file's name is the
SHA-256 of its key (a key names an issuer or an MCP URL, never a secret, but a name on disk should not
even say which servers a user logs in to); the key itself is kept inside the file, beside the value, so
``mcpfsm store check`` can list what the store holds. Every file is replaced atomically (a temporary file
in the same directory, then ``os.replace``), so a reader never sees half a value.

Nobody else writes it: the directory must be the user's own and writable by no one else, and every file read
must be a regular file of the user's, writable by no one else, of at most :data:`MAX_FILE_BYTES`; anything else
is an :class:`~mcpfsm.UnsafeStoreError` (a client falls back to its memory, as for a store that is down). A
file is opened without following a symbolic link and without blocking (a FIFO planted as a value answers at
once, and is refused), and every file operation runs in a worker thread the caller may abandon, so a stalled
file system holds a client no longer than the store timeout.

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
import errno
import hashlib
import json
import math
import os
import stat
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any, Final, TypeVar

import trio

from .._core.errors import StoreError, UnsafeStoreError
from .._core.store_lock import check_lock, lock_timeout
from .._log import logger

__all__ = [
    "MAX_FILE_BYTES",
    "FileStore",
    "check_directory",
    "file_lock",
    "load_json",
    "read_bounded",
    "take_within",
    "write_json_atomically",
]

MAX_FILE_BYTES: Final = 16 * 1024 * 1024
"""The largest file a file store reads or writes (16 MiB): a larger one was not written by mcpfsm."""
_OPEN_FLAGS: Final = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
)
"""Never follow a symbolic link, never wait on a FIFO or a device (checked right after the open)."""
T = TypeVar("T")

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


def _uid() -> int | None:
    # Ownership is a POSIX notion; Windows protects the directory with its ACLs instead.
    return os.geteuid() if hasattr(os, "geteuid") else None


def _check_owner(info: os.stat_result, path: Path, what: str) -> None:
    uid = _uid()
    if uid is not None and info.st_uid != uid:
        raise UnsafeStoreError(
            f"the store {what} {path} belongs to another user (uid {info.st_uid}, not {uid}): refused", path=str(path)
        )
    if uid is not None and info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeStoreError(
            f"the store {what} {path} is writable by others (mode {stat.S_IMODE(info.st_mode):04o}): refused;"
            f" chmod go-w it",
            path=str(path),
        )


def check_directory(path: Path, *, create: bool) -> bool:
    """Check that ``path`` is a store directory nobody else writes; ``create`` makes it ``0700`` when missing.

    Returns:
        Whether the directory exists (always ``True`` with ``create``).

    Raises:
        UnsafeStoreError: it belongs to another user or others may write it.
        OSError: it cannot be created, or it is not a directory.
    """
    if create:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if create:
            raise
        return False
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))
    _check_owner(info, path, "directory")
    return True


def read_bounded(file: Path) -> bytes | None:
    """The bytes of the store file ``file``, or ``None`` when it does not exist.

    The file is opened without following a symbolic link and without blocking, then checked before it is
    read: a FIFO, a device or a link is refused at once, never waited on.

    Raises:
        UnsafeStoreError: not a regular file, another user's, writable by others, or larger than
            :data:`MAX_FILE_BYTES`.
        OSError: the file system refused the read.
    """
    try:
        descriptor = os.open(file, _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise UnsafeStoreError(f"the store file {file} is a symbolic link: refused", path=str(file)) from None
        raise
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeStoreError(f"the store file {file} is not a regular file: refused", path=str(file))
        _check_owner(info, file, "file")
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(descriptor, min(1 << 20, MAX_FILE_BYTES + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
        raise UnsafeStoreError(f"the store file {file} is larger than {MAX_FILE_BYTES} bytes: refused", path=str(file))
    finally:
        os.close(descriptor)


def load_json(data: bytes) -> Any:
    """``data`` as JSON, or ``None`` when it is not (malformed, not UTF-8, or nested too deeply to parse)."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


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
    await trio.to_thread.run_sync(lambda: check_directory(path.parent, create=False), abandon_on_cancel=True)
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

    The directory is created ``0700`` when missing.

    Raises:
        StoreError: the JSON text is larger than :data:`MAX_FILE_BYTES` (nothing is written).
        UnsafeStoreError: the directory belongs to another user or others may write it.
        OSError: the disk refuses.
    """
    text = json.dumps(value, indent=1, sort_keys=True).encode("utf-8")
    if len(text) > MAX_FILE_BYTES:
        raise StoreError(f"a value of {len(text)} bytes is larger than the {MAX_FILE_BYTES} a file store keeps")
    directory = path.parent
    check_directory(directory, create=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    try:
        # mkstemp creates the file 0600 (readable by the owner only) before anything is written.
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(text)
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
    Raises :class:`~mcpfsm.UnsafeStoreError` for a directory or file someone else could have written (see the
    module's text), ``OSError`` when the disk refuses; a client that uses the store then falls back to
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
        return await _thread(self._get, self.file_of(key), key)

    async def set(self, key: str, value: Mapping[str, Any]) -> None:
        """Store ``value`` under ``key``, replacing what was there."""
        record = {"key": key, "value": dict(value)}
        file = self.file_of(key)
        async with self._writing(file):
            await _thread(write_json_atomically, file, record)

    async def delete(self, key: str) -> None:
        """Forget ``key``; nothing happens when it is absent."""
        file = self.file_of(key)
        async with self._writing(file):
            await _thread(_unlink, file)

    async def compare_and_delete(self, key: str, expected: Mapping[str, Any]) -> bool:
        """Delete ``key`` if and only if its value equals ``expected`` as a JSON value; return whether it did."""
        file = self.file_of(key)
        wanted = json.loads(json.dumps(dict(expected)))
        async with self._writing(file):
            if await _thread(self._read, file, key) != wanted:
                return False
            await _thread(_unlink, file)
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
        return await _thread(self._entries)

    def _entries(self) -> list[tuple[str, dict[str, Any], float | None]]:
        found: list[tuple[str, dict[str, Any], float | None]] = []
        if check_directory(self.path, create=False):
            for file in self.path.glob("*" + _SUFFIX):
                record = _load(file)
                if record is not None and isinstance(record.get("key"), str) and isinstance(record.get("value"), dict):
                    found.append((record["key"], record["value"], None))
        return sorted(found, key=lambda entry: entry[0])

    @contextlib.asynccontextmanager
    async def _writing(self, file: Path) -> AsyncIterator[None]:
        # A lock of its own, not the one `lock` takes: a holder of `lock(key)` may write its key.
        await _thread(_directory, self.path)
        async with file_lock(file.with_suffix(_LOCK_SUFFIX)):
            yield

    def _get(self, file: Path, key: str) -> dict[str, Any] | None:
        if not check_directory(self.path, create=False):
            return None
        return self._read(file, key)

    @staticmethod
    def _read(file: Path, key: str) -> dict[str, Any] | None:
        record = _load(file)
        if record is None or record.get("key") != key or not isinstance(record.get("value"), dict):
            return None
        value: dict[str, Any] = record["value"]
        return value


async def _thread(function: Callable[..., T], *args: Any) -> T:
    # A worker thread the caller may abandon: a stalled file system holds the caller no longer than its own
    # bound (the client's store timeout), and the thread finishes, or not, on its own.
    return await trio.to_thread.run_sync(function, *args, abandon_on_cancel=True)


def _load(file: Path) -> dict[str, Any] | None:
    data = read_bounded(file)
    if data is None:
        return None
    record = load_json(data)
    if not isinstance(record, dict):
        logger.warning("the store file {} is not a JSON object; it is treated as absent", file)
        return None
    return record


def _unlink(file: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        file.unlink()


def _directory(path: Path) -> None:
    check_directory(path, create=True)
