"""Tokens shared between processes: the store's lock and conditional delete as a refresh uses them (docs/stores.md).

Refresh tokens rotate (OAuth 2.1 §4.3.1; RFC 9700 §4.14.2): a refresh token spent by one process and presented
again by another looks like theft to the authorization server, which may revoke the whole grant (RFC 6749
§10.4). So a refresh runs under :func:`refresh_lock` on the tokens' store key, re-reads what is stored there,
and uses a peer's newer tokens instead of sending a request; an ``invalid_grant`` deletes the stored tokens
only if they are still the ones read (:func:`delete_if_unchanged`), never a peer's fresh ones.

A :class:`~mcpfsm.Store` (``MemoryStore``, ``FileStore``, ``RedisStore``) brings ``lock`` and
``compare_and_delete``; a plain :class:`~mcpfsm.TokenStore` of the caller's own has neither, and then the
client's own lock is the only exclusion (one process) and the delete compares, then deletes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, Final, Protocol, runtime_checkable

import trio

from .._core.credentials import TokenStore
from .._log import logger

__all__ = ["REFRESH_LOCK_TTL", "REFRESH_LOCK_WAIT", "delete_if_unchanged", "refresh_lock"]

REFRESH_LOCK_TTL: Final = 30.0
"""Seconds a refresh holds the tokens' lock at most: a holder that dies stops excluding its peers after this
(the token request's own timeout is of the same order)."""

REFRESH_LOCK_WAIT: Final = REFRESH_LOCK_TTL + 5.0
"""Seconds a refresh waits for the lock before it goes on without it (after a second read of the store): longer
than the TTL, so a dead holder's lock has expired first and a live one has finished."""


@runtime_checkable
class _Locking(Protocol):
    def lock(self, key: str, ttl: float) -> AbstractAsyncContextManager[None]: ...


@runtime_checkable
class _ComparingDelete(Protocol):
    async def compare_and_delete(self, key: str, expected: Mapping[str, Any]) -> bool: ...


@asynccontextmanager
async def refresh_lock(store: TokenStore, key: str) -> AsyncIterator[bool]:
    """Hold ``store.lock(key, REFRESH_LOCK_TTL)`` for the block; yield whether it is held.

    Not held (``False``) when the store has no ``lock``, when taking it failed (a store that is down: one
    WARNING) or took longer than :data:`REFRESH_LOCK_WAIT`; the caller then re-reads the store before it
    refreshes, as it does under the lock.
    """
    if not isinstance(store, _Locking):
        yield False
        return
    async with AsyncExitStack() as stack:
        held = False
        with trio.move_on_after(REFRESH_LOCK_WAIT) as waited:
            try:
                await stack.enter_async_context(store.lock(key, REFRESH_LOCK_TTL))
                held = True
            except Exception as exc:
                # Its type only: a store's message may quote its URL, credentials included.
                logger.warning("cannot lock the token store ({}); refreshing without the lock", type(exc).__name__)
        if waited.cancelled_caught:
            logger.warning("the token store's lock stayed taken for {} s; refreshing without it", REFRESH_LOCK_WAIT)
        yield held


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
