"""Token stores: where a client keeps client registrations and tokens (docs/authorization.md).

- :class:`MemoryStore` (also named :class:`MemoryTokenStore`) — the default: a dict per client, gone with the
  process;
- :class:`FileTokenStore` — one JSON file shared by every client that names it (``mcpfsm login`` writes
  one under the user's configuration directory, :func:`default_token_path`). It holds secrets, so it is
  created ``0600`` inside a ``0700`` directory and replaced atomically (a temporary file in the same
  directory, then ``os.replace``), so a reader never sees half a file.

Both implement the whole :class:`~mcpfsm.Store` (``FileStore`` and ``RedisStore``, for fleets, have modules of
their own: docs/stores.md); the keys are those of ``mcpfsm._core.credentials`` (registrations by issuer, tokens
by issuer and resource). Neither ever logs or shows a value.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import math
import os
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Final

import trio

from .._core.store_lock import check_lock, lock_timeout
from .._log import logger
from .file_store import check_directory, file_lock, load_json, read_bounded, take_within, write_json_atomically

__all__ = ["FileTokenStore", "MemoryStore", "MemoryTokenStore", "default_token_path"]

_ANY: Final = object()


class MemoryStore:
    """A store in memory (the default of every client and credential that takes ``store=``; docs/stores.md).

    Values are deep-copied in and out, so a caller never shares a dict with the store. ``lock`` excludes the
    other tasks of this process that use the same store object, first come first served; nothing here
    outlives the process, so a holder that dies (its task cancelled) releases the lock as it leaves.
    """

    __slots__ = ("_locks", "_values")

    def __init__(self) -> None:
        """Start empty."""
        self._values: dict[str, dict[str, Any]] = {}
        self._locks: dict[str, trio.Lock] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self._values)} entries)"

    async def get(self, key: str) -> dict[str, Any] | None:
        """The value stored under ``key`` (a copy), or ``None``."""
        value = self._values.get(key)
        return None if value is None else copy.deepcopy(value)

    async def set(self, key: str, value: Mapping[str, Any]) -> None:
        """Store a copy of ``value`` under ``key``."""
        self._values[key] = copy.deepcopy(dict(value))

    async def delete(self, key: str) -> None:
        """Forget ``key``."""
        self._values.pop(key, None)

    async def compare_and_delete(self, key: str, expected: Mapping[str, Any]) -> bool:
        """Delete ``key`` if its value equals ``expected`` (as a JSON value); return whether it did."""
        if key in self._values and self._values[key] == json.loads(json.dumps(dict(expected))):
            del self._values[key]
            return True
        return False

    @contextlib.asynccontextmanager
    async def lock(self, key: str, ttl: float, *, wait: float | None = None) -> AsyncIterator[None]:
        """Hold ``key`` against the other tasks using this store (``ttl`` is moot within one process).

        Waits at most ``wait`` seconds (``None``: as long as it takes).

        Raises:
            StoreLockTimeout: another task held ``key`` for ``wait`` seconds.
            ValueError: ``ttl`` is not a positive number, or ``wait`` is negative.
        """
        check_lock(ttl, wait)
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = trio.Lock()
        try:
            if not await take_within(lock, math.inf if wait is None else trio.current_time() + wait):
                raise lock_timeout(self, wait)
            try:
                yield
            finally:
                lock.release()
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._locks.pop(key, None)


MemoryTokenStore = MemoryStore
"""The name :class:`MemoryStore` had when it held only tokens; it keeps working."""


class FileTokenStore:
    """A token store in one JSON file, private to the user (mode 0600), written atomically.

    Args:
        path: the file; its directory is created (mode 0700) on the first write.

    Every write reads the file, changes one key and replaces the whole file, under an operating-system lock
    on ``PATH.lock`` (``filelock``), so writers in any number of processes never lose each other's keys and
    a reader never sees half a file. It is a whole :class:`~mcpfsm.Store`: ``lock(key, ttl)`` takes a file
    lock of its own beside the file (released the moment a holder's process exits), and
    ``compare_and_delete`` is atomic like every write. A file that is not a JSON object is treated as empty
    (with one WARNING) and replaced on the next write. A write that fails (a read-only disk, say) is logged
    as a WARNING and the client goes on with the tokens in memory. Like ``FileStore`` it refuses, with an
    :class:`~mcpfsm.UnsafeStoreError`, a directory or a file someone else could have written: the directory
    must be the user's and writable by no one else, the file a regular file of the user's of at most 16 MiB,
    opened without following a link or blocking. :class:`~mcpfsm.FileStore` keeps one
    file per key instead, for stores that many processes write often.
    """

    __slots__ = ("path",)

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Use the file at ``path``; nothing is read until the first ``get``."""
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.path)!r})"

    async def get(self, key: str) -> dict[str, Any] | None:
        """The value stored under ``key``, or ``None``."""
        values = await trio.to_thread.run_sync(self._read, abandon_on_cancel=True)
        value = values.get(key)
        return dict(value) if isinstance(value, dict) else None

    async def set(self, key: str, value: Mapping[str, Any]) -> None:
        """Store ``value`` under ``key`` and rewrite the file."""
        await self._update(key, dict(value))

    async def delete(self, key: str) -> None:
        """Forget ``key`` and rewrite the file (nothing is written when it was absent)."""
        await self._update(key, None)

    async def compare_and_delete(self, key: str, expected: Mapping[str, Any]) -> bool:
        """Delete ``key`` if and only if its value equals ``expected`` as a JSON value; return whether it did."""
        return await self._update(key, None, expected=json.loads(json.dumps(dict(expected))))

    @contextlib.asynccontextmanager
    async def lock(self, key: str, ttl: float, *, wait: float | None = None) -> AsyncIterator[None]:
        """Hold ``key`` against every other holder of this file, in any process (see ``FileStore.lock``).

        Raises:
            StoreLockTimeout: another holder kept ``key`` for ``wait`` seconds.
        """
        check_lock(ttl, wait)
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
        await trio.to_thread.run_sync(lambda: self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True))
        async with file_lock(self.path.with_name(f".{self.path.name}.{digest}.lock"), wait=wait, store=self):
            yield

    async def entries(self) -> list[tuple[str, dict[str, Any], float | None]]:
        """Every key with its value and seconds to live (always ``None``: the file does not expire), by key."""
        values = await trio.to_thread.run_sync(self._read, abandon_on_cancel=True)
        return sorted((key, value, None) for key, value in values.items() if isinstance(value, dict))

    async def _update(self, key: str, value: dict[str, Any] | None, *, expected: Any = _ANY) -> bool:
        try:
            await trio.to_thread.run_sync(
                lambda: check_directory(self.path.parent, create=True), abandon_on_cancel=True
            )
        except OSError:
            # No directory, so no lock file either: the write below fails too, and says so.
            return await trio.to_thread.run_sync(self._replace, key, value, expected, abandon_on_cancel=True)
        async with file_lock(self.path.with_name(self.path.name + ".lock")):
            return await trio.to_thread.run_sync(self._replace, key, value, expected, abandon_on_cancel=True)

    def _read(self) -> dict[str, Any]:
        try:
            data = read_bounded(self.path) if check_directory(self.path.parent, create=False) else None
        except OSError as exc:
            logger.warning("cannot read the token store {}: {}", self.path, exc.strerror or exc)
            return {}
        if data is None:
            return {}
        values = load_json(data)
        if not isinstance(values, dict):
            logger.warning("the token store {} is not a JSON object; it is treated as empty", self.path)
            return {}
        return values

    def _replace(self, key: str, value: dict[str, Any] | None, expected: Any) -> bool:
        values = self._read()
        if expected is not _ANY and values.get(key) != expected:
            return False
        if value is None:
            if key not in values:
                return False
            del values[key]
        else:
            values[key] = value
        try:
            write_json_atomically(self.path, values)
        except OSError as exc:
            logger.warning("cannot write the token store {}: {}", self.path, exc.strerror or exc)
            return False
        return True


def default_token_path() -> Path:
    """Where ``mcpfsm login`` keeps tokens: ``tokens.json`` in the user's configuration directory for mcpfsm.

    The directory is the platform's own, from ``platformdirs``: ``$XDG_CONFIG_HOME/mcpfsm`` (``~/.config/mcpfsm``)
    on Linux and the BSDs, ``~/Library/Application Support/mcpfsm`` on macOS, ``%APPDATA%/mcpfsm`` on Windows.
    """
    # Imported here: only `mcpfsm login`/`logout` and the CLI's default store need it.
    from platformdirs import user_config_path

    return user_config_path("mcpfsm", appauthor=False, roaming=True) / "tokens.json"
