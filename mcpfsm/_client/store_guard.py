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

``lock(key, ttl)`` waits for the store's lock at most ``ttl + timeout`` seconds (a holder may legitimately
hold it up to ``ttl``); past that, or when the store fails, the block runs under a lock of this process
only, with the same WARNING and count. A store with only ``get``/``set``/``delete`` (a
:class:`~mcpfsm.TokenStore`) gets a lock of this process and a ``compare_and_delete`` made of a read and a
delete.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any, Final, TypeVar

import trio

from .._core.credentials import Store, TokenStore
from .._core.errors import StoreError
from .._log import logger
from .stores import MemoryStore

__all__ = ["DEFAULT_RETRY_AFTER", "DEFAULT_STORE_TIMEOUT", "GuardedStore", "guarded"]

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
    async def lock(self, key: str, ttl: float) -> AsyncIterator[None]:
        """The store's lock on ``key``, waited for at most ``ttl + timeout`` seconds; else this process's lock."""
        if not ttl > 0:
            raise ValueError(f"ttl must be a positive number of seconds, got {ttl!r}")
        taking = getattr(self.store, "lock", None)
        if self.down or taking is None:
            async with self.memory.lock(key, ttl):
                yield
            return
        held = AsyncExitStack()
        try:
            with trio.fail_after(ttl + self.timeout):
                await held.enter_async_context(taking(key, ttl))
        except trio.TooSlowError:
            self._count("lock", f"waited more than {ttl + self.timeout:g} s for a lock", down=False)
        except Exception as exc:
            self._count("lock", type(exc).__name__, down=True)
        else:
            try:
                yield
            finally:
                try:
                    with trio.move_on_after(self.timeout, shield=True):
                        await held.aclose()
                except Exception as exc:
                    self._count("lock release", type(exc).__name__, down=True)
            return
        async with self.memory.lock(key, ttl):
            yield

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


def guarded(store: TokenStore) -> Store:
    """``store`` in a :class:`GuardedStore`, unless it is a plain ``MemoryStore`` (it cannot fail) or guarded already.

    A subclass of ``MemoryStore`` is guarded like any other store: its overrides may fail or hang.
    """
    if type(store) is MemoryStore or isinstance(store, GuardedStore):
        return store
    return GuardedStore(store)
