"""Tokens shared between processes: the store's lock and conditional delete as a refresh uses them (docs/stores.md).

Refresh tokens rotate (OAuth 2.1 §4.3.1; RFC 9700 §4.14.2): a refresh token spent by one process and presented
again by another looks like theft to the authorization server, which may revoke the whole grant (RFC 6749
§10.4). So a refresh runs under :func:`refresh_lock` on the tokens' store key, re-reads what is stored there,
and uses a peer's newer tokens instead of sending a request; an ``invalid_grant`` deletes the stored tokens
only if they are still the ones read (:func:`delete_if_unchanged`), never a peer's fresh ones.

A :class:`~mcpfsm.Store` (``MemoryStore``, ``FileStore``, ``RedisStore``) brings ``lock`` and
``compare_and_delete``; a plain :class:`~mcpfsm.TokenStore` of the caller's own has neither, and then the
client's own lock is the only exclusion (one process) and the delete compares, then deletes.

:func:`refresh_lock` says how far its lock reaches (an :class:`Exclusion`). When the store could not be
reached at all, a peer may be refreshing with the very refresh token this process read: the refresh then
goes ahead only after :func:`read_store` read the store itself again (docs/stores.md, "When the store
fails"), never on what this process remembers. The first grant of a headless credential takes the same
lock (one token request for a fleet that starts together).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from enum import Enum
from typing import Any, Final, Protocol, runtime_checkable

from .._core.credentials import TokenStore
from .._core.errors import StoreLockTimeout
from .._core.store_lock import taking_lock
from .._log import logger

__all__ = [
    "REFRESH_LOCK_TTL",
    "REFRESH_LOCK_WAIT",
    "Exclusion",
    "delete_if_unchanged",
    "read_store",
    "refresh_lock",
]

REFRESH_LOCK_TTL: Final = 30.0
"""Seconds a refresh holds the tokens' lock at most: a holder that dies stops excluding its peers after this
(the token request's own timeout is of the same order)."""

REFRESH_LOCK_WAIT: Final = REFRESH_LOCK_TTL + 5.0
"""Seconds a refresh waits for the lock before it goes on without it (after a second read of the store): longer
than the TTL, so a dead holder's lock has expired first and a live one has finished."""


class Exclusion(Enum):
    """How far a lock taken for the tokens reaches."""

    store = "store"
    """The store's own lock: every process sharing the store is excluded."""
    process = "process"
    """Only this process's tasks: the store has no lock, or its lock stayed taken past the wait."""
    unreachable = "unreachable"
    """Only this process's tasks, and the store could not be reached to take its lock."""


@runtime_checkable
class _Locking(Protocol):
    def lock(self, key: str, ttl: float, *, wait: float | None = None) -> AbstractAsyncContextManager[None]: ...


@runtime_checkable
class _Excluding(Protocol):
    def exclusion(
        self, key: str, ttl: float, *, wait: float | None = None
    ) -> AbstractAsyncContextManager[Exclusion]: ...

    async def read_store(self, key: str) -> dict[str, Any] | None: ...


@runtime_checkable
class _ComparingDelete(Protocol):
    async def compare_and_delete(self, key: str, expected: Mapping[str, Any]) -> bool: ...


@asynccontextmanager
async def refresh_lock(store: TokenStore, key: str) -> AsyncIterator[Exclusion]:
    """Hold ``store``'s lock on ``key`` (``REFRESH_LOCK_TTL``, waited for at most ``REFRESH_LOCK_WAIT``).

    Yields how far it reaches. A store in the client's guard (``mcpfsm._client.store_guard``) falls back to a
    lock of this process on its own and says why; any other store's failure is one WARNING here. The store
    bounds its own wait (docs/stores.md), so no cancel scope of this function's ever contains the store's lock.
    """
    if isinstance(store, _Excluding):
        async with store.exclusion(key, REFRESH_LOCK_TTL, wait=REFRESH_LOCK_WAIT) as reach:
            yield reach
        return
    if not isinstance(store, _Locking):
        yield Exclusion.process
        return
    async with AsyncExitStack() as stack:
        try:
            await stack.enter_async_context(taking_lock(store, key, REFRESH_LOCK_TTL, REFRESH_LOCK_WAIT))
        except StoreLockTimeout:
            logger.warning("the token store's lock stayed taken for {} s; refreshing without it", REFRESH_LOCK_WAIT)
            reach = Exclusion.process
        except Exception as exc:
            # Its type only: a store's message may quote its URL, credentials included.
            logger.warning("cannot lock the token store ({}); refreshing without the lock", type(exc).__name__)
            reach = Exclusion.unreachable
        else:
            reach = Exclusion.store
        yield reach


async def read_store(store: TokenStore, key: str) -> dict[str, Any] | None:
    """What ``store`` itself holds under ``key`` now, never a copy a guard kept in memory.

    Raises:
        Exception: the store could not be read (a guarded store raises :class:`~mcpfsm.StoreError`).
    """
    if isinstance(store, _Excluding):
        return await store.read_store(key)
    return await store.get(key)


async def delete_if_unchanged(store: TokenStore, key: str, expected: Mapping[str, Any]) -> bool:
    """Delete ``key`` if it still holds ``expected`` (``compare_and_delete`` where the store has it).

    Returns:
        Whether it deleted.
    """
    if isinstance(store, _ComparingDelete):
        return await store.compare_and_delete(key, expected)
    if await store.get(key) != dict(expected):
        return False
    await store.delete(key)
    return True
