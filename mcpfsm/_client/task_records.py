"""The task records of one client in its store (SEP-2663 "persist task ids"; docs/tasks.md, "Handles").

Every task the client creates is recorded under ``task {server} {task id}`` (its tool, the answered input keys, the
last status) and its id in ``tasks {server}``, the list :meth:`TaskRecords.recorded` reads back, since a store lists
no keys. That list is shared by every process using the store, so it is changed only under the store's lock on its
key (``store.lock``: ``flock`` for a ``FileStore``, ``SET NX PX`` for a ``RedisStore``), read and written again
inside it.

Changes are written in batches. A caller queues its change and takes this client's writing turn (a fair
``trio.Lock``); whoever gets the turn writes every change queued by then (the records, a few at a time, then the
list, once, under one store lock), so a client starting thousands of tasks at once takes the store's lock a few
times, not once per task, and never waits behind its own queue for longer than the store takes to write. A caller
whose change another caller's batch already wrote returns at once. A batch interrupted (cancelled, or a store
error) puts back what it took, for the next turn. Later changes of one task replace earlier ones not yet written.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import trio

from .._core.task import index_key, task_key

if TYPE_CHECKING:
    from .._core.credentials import Store

__all__ = ["TaskRecords"]

LOCK_SECONDS: Final = 10.0
"""The ``ttl`` of the lock on a server's list: the longest a dead holder can keep others from changing it."""

_WRITERS: Final = 8
"""Records one batch writes at once."""


class TaskRecords:
    """The task records of one client, in the store ``store()`` returns, named by ``server()`` (see the module text)."""

    def __init__(self, store: Callable[[], Store], server: Callable[[], str]) -> None:
        """Keep records in ``store()`` (called at each use) under the server name ``server()`` gives."""
        self._store = store
        self._server = server
        self._pending: dict[str, tuple[int, Mapping[str, Any] | None]] = {}
        self._numbers = itertools.count()
        self._turn = trio.Lock()

    async def load(self, task_id: str) -> Mapping[str, Any] | None:
        """The task's record, or ``None``; a change not written yet is read as written."""
        pending = self._pending.get(task_id)
        if pending is not None:
            return pending[1]
        return await self._store().get(task_key(self._server(), task_id))

    async def save(self, task_id: str, record: Mapping[str, Any]) -> None:
        """Record the task, and its id in the server's list; returns once both are in the store."""
        await self._change(task_id, dict(record))

    async def forget(self, task_id: str) -> None:
        """Remove the task's record and its id from the list; returns once the store says so."""
        await self._change(task_id, None)

    async def recorded(self) -> list[str]:
        """The ids of the unfinished tasks recorded for this server, oldest first."""
        return _ids(await self._store().get(index_key(self._server())))

    async def _change(self, task_id: str, record: Mapping[str, Any] | None) -> None:
        number = next(self._numbers)
        self._pending[task_id] = (number, record)
        async with self._turn:
            queued = self._pending.get(task_id)
            if queued is None or queued[0] != number:
                return  # written by an earlier turn's batch, or replaced by a later change (its caller writes it)
            batch, self._pending = self._pending, {}
            try:
                await self._write(batch)
            except BaseException:
                for key, value in batch.items():
                    self._pending.setdefault(key, value)  # a change queued meanwhile is newer: it stays
                raise

    async def _write(self, batch: Mapping[str, tuple[int, Mapping[str, Any] | None]]) -> None:
        store, server = self._store(), self._server()
        limiter = trio.CapacityLimiter(_WRITERS)

        async def write(task_id: str, record: Mapping[str, Any] | None) -> None:
            async with limiter:
                key = task_key(server, task_id)
                await (store.delete(key) if record is None else store.set(key, record))

        # The records first: an id in the list always has its record (a crash in between leaves a record
        # nobody lists, never a listed task without its tool).
        async with trio.open_nursery() as nursery:
            for task_id, (_, record) in batch.items():
                nursery.start_soon(write, task_id, record)
        added = [task_id for task_id, (_, record) in batch.items() if record is not None]
        removed = {task_id for task_id, (_, record) in batch.items() if record is None}
        key = index_key(server)
        async with store.lock(key, ttl=LOCK_SECONDS):
            known = _ids(await store.get(key))
            kept = [each for each in known if each not in removed]
            listed = set(kept)
            updated = kept + [each for each in added if each not in listed]
            if updated != known:
                await store.set(key, {"ids": updated})


def _ids(value: Mapping[str, Any] | None) -> list[str]:
    ids = value.get("ids") if isinstance(value, Mapping) else None
    return [each for each in ids if isinstance(each, str)] if isinstance(ids, list) else []
