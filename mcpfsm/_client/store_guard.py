"""A store that fails never hangs a call: every operation bounded, memory while the store is down (docs/stores.md).

:class:`GuardedStore` wraps the store a client was given. Each operation gets ``timeout`` seconds (2 by
default); one that raises or runs out of time marks the store down for ``retry_after`` seconds (5 by
default), during which every operation goes to the client's own memory, so a call pays at most one store
timeout per outage. The first operation after that tries the store again. Each outage is one WARNING
(naming the store and the kind of failure, never a value) and one more in :attr:`GuardedStore.fallbacks`.

The memory is kept as the store is read and written (a copy of every value that went through), so that
while the store is down the process goes on with what it last saw. What is written during an outage stays
in this process's memory only; it reaches the store with the next write of the same key once the store is
back.

``lock(key, ttl, wait=None)`` passes the store a bound on its wait for the lock: ``wait``, or ``ttl + timeout``
seconds by default (a holder may legitimately hold it up to ``ttl``). The store keeps that bound itself
(docs/stores.md), so the guard never puts a cancel scope of its own around a store's lock. Past it, or when the
store fails, the block runs under a lock of this process only, with the same WARNING and count
(:meth:`GuardedStore.exclusion` says which). A store with only ``get``/``set``/``delete`` (a
:class:`~mcpfsm.TokenStore`) gets a lock of this process and a ``compare_and_delete`` made of a read and a
delete.

A client holds its store's connections open for its life: :meth:`GuardedStore.retain` when it first
connects, :meth:`GuardedStore.release` when it closes (a ``RedisStore`` the application did not enter keeps
one connection pool for all its clients that way; other stores have nothing to keep open).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any, Final, Protocol, TypeVar, runtime_checkable

import trio

from .._core.credentials import Store, TokenStore
from .._core.errors import StoreError, StoreLockTimeout
from .._core.store_lock import check_lock, takes_wait, taking_lock
from .._drivers.token_sharing import Exclusion
from .._log import logger
from .stores import MemoryStore

__all__ = ["DEFAULT_RETRY_AFTER", "DEFAULT_STORE_TIMEOUT", "GuardedStore", "guarded", "release", "retain"]

DEFAULT_STORE_TIMEOUT: Final = 2.0
"""Seconds one store operation may take before the client goes on without the store (docs/stores.md)."""
DEFAULT_RETRY_AFTER: Final = 5.0
"""Seconds a failed store counts as down before the client tries it again."""

T = TypeVar("T")


class GuardedStore:
    """``store`` with every operation bounded and a memory fallback while it is down (see the module's text).

    Args:
        store: the store to guard.
        timeout: seconds per operation.
        retry_after: seconds the store counts as down after a failure.
        clock: seconds on a monotonic clock, for the down window (default: trio's clock).
    """

    __slots__ = ("_clock", "_down_until", "fallbacks", "memory", "retry_after", "store", "timeout")

    def __init__(
        self,
        store: TokenStore,
        *,
        timeout: float = DEFAULT_STORE_TIMEOUT,
        retry_after: float = DEFAULT_RETRY_AFTER,
        clock: Callable[[], float] = trio.current_time,
    ) -> None:
        """Guard ``store``; nothing is read or written until the first operation."""
        self.store = store
        self.timeout = timeout
        self.retry_after = retry_after
        self._clock = clock
        self.memory = MemoryStore()
        self.fallbacks = 0
        """How many times the store failed and the client went on with its memory."""
        self._down_until: float | None = None
        if getattr(store, "lock", None) is not None and not takes_wait(type(store)):
            logger.warning(
                "the store {!r} has a lock(key, ttl) without wait=: its waits are not bounded (docs/stores.md)",
                store,
            )

    def __repr__(self) -> str:
        return f"GuardedStore({self.store!r})"

    @property
    def down(self) -> bool:
        """Whether the store failed less than ``retry_after`` seconds ago (operations go to memory)."""
        return self._down_until is not None and self._clock() < self._down_until

    async def get(self, key: str) -> dict[str, Any] | None:
        """The store's value (kept in memory too), or the memory's while the store is down."""
        if not self.down:
            try:
                value = await self._bounded("get", lambda: self.store.get(key))
            except _Failed:
                pass
            else:
                await (self.memory.delete(key) if value is None else self.memory.set(key, value))
                return value
        return await self.memory.get(key)

    async def peek(self, key: str) -> dict[str, Any] | None:
        """The store's value, bounded as :meth:`get`, but not kept in memory: ``None`` while the store is down.

        For a caller that keeps what it reads itself (a client group's known listings), so nothing is copied
        twice (bench/group.py, the lazy group's listing).
        """
        if self.down:
            return None
        try:
            return await self._bounded("get", lambda: self.store.get(key))
        except _Failed:
            return None

    async def set(self, key: str, value: Mapping[str, Any]) -> None:
        """Store ``value`` in memory and, unless it is down, in the store."""
        await self.memory.set(key, value)
        if not self.down:
            with contextlib.suppress(_Failed):
                await self._bounded("set", lambda: self.store.set(key, value))

    async def delete(self, key: str) -> None:
        """Forget ``key`` in memory and, unless it is down, in the store."""
        await self.memory.delete(key)
        if not self.down:
            with contextlib.suppress(_Failed):
                await self._bounded("delete", lambda: self.store.delete(key))

    async def compare_and_delete(self, key: str, expected: Mapping[str, Any]) -> bool:
        """The store's ``compare_and_delete`` (the memory's while it is down); the memory forgets a deleted key."""
        if not self.down:
            try:
                deleted = await self._bounded("compare_and_delete", lambda: self._compare_and_delete(key, expected))
            except _Failed:
                pass
            else:
                if deleted:
                    await self.memory.delete(key)
                return deleted
        return await self.memory.compare_and_delete(key, expected)

    @contextlib.asynccontextmanager
    async def lock(self, key: str, ttl: float, *, wait: float | None = None) -> AsyncIterator[None]:
        """The store's lock on ``key`` (waited for ``wait``, by default ``ttl + timeout`` seconds), else this process's.

        Raises:
            StoreLockTimeout: ``wait`` ran out before even this process's lock was free.
            ValueError: ``ttl`` is not a positive number, or ``wait`` is negative.
        """
        async with self.exclusion(key, ttl, wait=wait):
            yield

    @contextlib.asynccontextmanager
    async def exclusion(self, key: str, ttl: float, *, wait: float | None = None) -> AsyncIterator[Exclusion]:
        """:meth:`lock`, yielding how far the lock reaches (:class:`~mcpfsm._drivers.token_sharing.Exclusion`)."""
        check_lock(ttl, wait)
        taking = getattr(self.store, "lock", None)
        if taking is None:
            async with self.memory.lock(key, ttl, wait=wait):
                yield Exclusion.process
            return
        if self.down:
            async with self.memory.lock(key, ttl, wait=wait):
                yield Exclusion.unreachable
            return
        bound = ttl + self.timeout if wait is None else wait
        held = AsyncExitStack()
        reach = Exclusion.store
        try:
            # No cancel scope here: the store bounds its own wait (docs/stores.md).
            await held.enter_async_context(taking_lock(self.store, key, ttl, bound))
        except StoreLockTimeout:
            self._count("lock", f"waited more than {bound:g} s for a lock", down=False)
            reach = Exclusion.process
        except Exception as exc:
            self._count("lock", type(exc).__name__, down=True)
            reach = Exclusion.unreachable
        if reach is not Exclusion.store:
            async with self.memory.lock(key, ttl, wait=wait):
                yield reach
            return
        try:
            yield reach
        finally:
            try:
                # The store releases within its own bound, shielded from the caller's cancellation.
                await held.aclose()
            except Exception as exc:
                self._count("lock release", type(exc).__name__, down=True)

    async def read_store(self, key: str) -> dict[str, Any] | None:
        """The store's own value for ``key``, read now even while it counts as down (bounded as any operation).

        For a decision that must not rest on this process's memory (a refresh token a peer may have spent).
        A value read is kept in memory as :meth:`get` keeps it.

        Raises:
            StoreError: the store failed or did not answer within ``timeout`` (counted and logged as any failure).
        """
        try:
            value = await self._bounded("get", lambda: self.store.get(key))
        except _Failed:
            raise StoreError(f"the store {self.store!r} could not be read") from None
        self._down_until = None  # it answered: back up
        await (self.memory.delete(key) if value is None else self.memory.set(key, value))
        return value

    def retain(self) -> None:
        """Hold the store's connections open until :meth:`release` (for a store that keeps any)."""
        if isinstance(self.store, _Retaining):
            self.store.retain()

    async def release(self) -> None:
        """End a :meth:`retain`."""
        if isinstance(self.store, _Retaining):
            await self.store.release()

    async def _compare_and_delete(self, key: str, expected: Mapping[str, Any]) -> bool:
        native = getattr(self.store, "compare_and_delete", None)
        if native is not None:
            deleted: bool = await native(key, expected)
            return deleted
        current = await self.store.get(key)
        if current is None or current != json.loads(json.dumps(dict(expected))):
            return False
        await self.store.delete(key)
        return True

    async def _bounded(self, operation: str, run: Callable[[], Awaitable[T]]) -> T:
        try:
            with trio.fail_after(self.timeout):
                return await run()
        except trio.TooSlowError:
            self._count(operation, f"no answer within {self.timeout:g} s", down=True)
        except Exception as exc:
            # Whatever the backend raises (OSError, coredis' ConnectionError, ...): its type, never its text,
            # which may quote a value or a URL with a password; mcpfsm's own StoreError says what was refused.
            self._count(operation, _reason(exc), down=True)
        raise _Failed

    def _count(self, operation: str, reason: str, *, down: bool) -> None:
        if down and self.down:
            return  # an operation that overlapped it already reported this outage
        self.fallbacks += 1
        if down:
            self._down_until = self._clock() + self.retry_after
            logger.warning(
                "the store {!r} failed ({}: {}); this client uses its memory for {:g} s",
                self.store,
                operation,
                reason,
                self.retry_after,
            )
        else:
            logger.warning("the store {!r} {}; this client goes on under a lock of its own", self.store, reason)


def _reason(error: Exception) -> str:
    # A StoreError's text is mcpfsm's own and shows no value (a refused path, a size); a foreign one's may.
    return f"{type(error).__name__}: {error}" if isinstance(error, StoreError) else type(error).__name__


class _Failed(Exception):
    """An operation on the guarded store failed (already counted and logged)."""


@runtime_checkable
class _Retaining(Protocol):
    # A store that keeps connections open for the clients using it (RedisStore).
    def retain(self) -> None: ...

    async def release(self) -> None: ...


def retain(*stores: object) -> list[GuardedStore]:
    """:meth:`GuardedStore.retain` each guarded store among ``stores`` (each once); return them for :func:`release`.

    A client calls it when it first connects, with its store and its credential's, and :func:`release` when it
    closes.
    """
    kept: list[GuardedStore] = []
    for store in stores:
        if isinstance(store, GuardedStore) and all(store is not other for other in kept):
            store.retain()
            kept.append(store)
    return kept


async def release(stores: list[GuardedStore]) -> None:
    """:meth:`GuardedStore.release` each of ``stores`` (what :func:`retain` returned), even when cancelled."""
    with trio.CancelScope(shield=True):
        for store in stores:
            await store.release()


def guarded(store: TokenStore) -> Store:
    """``store`` in a :class:`GuardedStore`, unless it is a plain ``MemoryStore`` (it cannot fail) or guarded already.

    A subclass of ``MemoryStore`` is guarded like any other store: its overrides may fail or hang.
    """
    if type(store) is MemoryStore or isinstance(store, GuardedStore):
        return store
    return GuardedStore(store)
