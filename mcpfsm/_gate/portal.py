"""A store from any event loop: mcpfsm's stores are trio code, and the middleware may run under asyncio.

``MemoryStore`` locks with ``trio.Lock``, ``FileStore`` reads and writes in ``trio.to_thread`` and ``RedisStore``
bounds its lock's release with a trio cancel scope, so a store runs in a trio event loop only. Under trio (the
proxy; a middleware served by Hypercorn's trio worker) :class:`StoreLoop` calls the store directly. Under asyncio
(the usual uvicorn) it runs each store operation in a trio event loop of its own, on a worker thread (anyio's
blocking portal with the trio backend), started at the first store operation and stopped by :meth:`StoreLoop.close`
(the gate calls it at the app's lifespan shutdown; the thread is a daemon, so a process that never shuts down
cleanly still exits). The operations are rare — a store is read on a miss of the gate's memory and written when a
listing is learned — so the thread hop is not on any call's path.

An operation runs whole in the store's loop, with its own time bound (:mod:`.book` bounds each one), so a caller
cancelled under asyncio never leaves a trio operation half done: the worker thread waits for it to finish.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, ExitStack
from typing import TYPE_CHECKING, Any, TypeVar

import sniffio

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal

__all__ = ["StoreLoop"]

T = TypeVar("T")


class StoreLoop:
    """Runs store operations in a trio event loop: the caller's own, or one on a worker thread under asyncio."""

    __slots__ = ("_lock", "_portal", "_stack")

    def __init__(self) -> None:
        """Nothing is started until an operation needs it."""
        self._portal: BlockingPortal | None = None
        self._stack = ExitStack()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"StoreLoop({'thread' if self._portal is not None else 'direct'})"

    async def run(self, operation: Callable[[], Awaitable[T]]) -> T:
        """``await operation()`` in a trio event loop, and its value (or its exception)."""
        if sniffio.current_async_library() == "trio":
            return await operation()
        import anyio.to_thread

        portal = self._started()
        return await anyio.to_thread.run_sync(_call, portal, operation)

    @contextlib.asynccontextmanager
    async def held(self, manager: Callable[[], AbstractAsyncContextManager[Any]]) -> AsyncIterator[None]:
        """Enter ``manager()`` (a store's lock) in a trio event loop for the block; exit it after, in the same loop."""
        if sniffio.current_async_library() == "trio":
            async with manager():
                yield
            return
        import anyio
        import anyio.to_thread

        portal = self._started()
        entered = await anyio.to_thread.run_sync(_enter, portal, manager)
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(entered.__exit__, None, None, None)

    def close(self) -> None:
        """Stop the worker thread's event loop, if one was started; a later operation starts another."""
        with self._lock:
            stack, self._stack, self._portal = self._stack, ExitStack(), None
        stack.close()

    def _started(self) -> BlockingPortal:
        with self._lock:
            if self._portal is None:
                from anyio.from_thread import start_blocking_portal

                self._portal = self._stack.enter_context(start_blocking_portal("trio", name="mcpfsm-gate-store"))
            return self._portal


def _call(portal: BlockingPortal, operation: Callable[[], Awaitable[T]]) -> T:
    # In a worker thread: run the operation in the portal's trio loop and wait for it.
    async def whole() -> T:
        return await operation()

    return portal.call(whole)


def _enter(portal: BlockingPortal, manager: Callable[[], AbstractAsyncContextManager[Any]]) -> Any:
    # In a worker thread: enter the manager in the portal's loop; the returned object's __exit__ leaves it there.
    wrapped = portal.wrap_async_context_manager(manager())
    wrapped.__enter__()
    return wrapped
