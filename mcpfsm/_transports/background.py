"""Tasks that outlive the call that starts them: readers, the standalone stream, answers to the server.

A client is entered and closed by its caller, possibly in different tasks and always closed inside a
shielded scope of its own, so it cannot hold a nursery open between ``__aenter__`` and ``__aexit__``: a
nursery must be exited in the cancel scope it was entered in. What has to keep running between the two
(the stdio readers, the legacy standalone ``GET`` stream, a handler answering a server request while the
call that provoked it waits) therefore runs as a trio *system* task inside a cancel scope of its own,
and :meth:`BackgroundTasks.aclose` cancels every one and waits for it to end.

Nothing may escape a system task (it would crash the whole trio run): an exception is handed to the
``on_error`` callback given to :meth:`BackgroundTasks.start`; cancellation ends the task quietly. A task
runs in a copy of the context of the task that started it, so context variables (a logging context, a
trace) follow the work.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any

import trio

__all__ = ["BackgroundTask", "BackgroundTasks"]


class BackgroundTask:
    """One started task: cancel it and wait for its end."""

    __slots__ = ("_done", "_scope")

    def __init__(self) -> None:
        self._scope = trio.CancelScope()
        self._done = trio.Event()

    @property
    def done(self) -> bool:
        """True once the task has ended (finished, failed or cancelled)."""
        return self._done.is_set()

    async def aclose(self) -> None:
        """Cancel the task and wait until it has ended; idempotent."""
        self._scope.cancel()
        await self._done.wait()


class BackgroundTasks:
    """The background tasks of one owner (a transport, a session), cancelled together by :meth:`aclose`."""

    __slots__ = ("_closed", "_tasks")

    def __init__(self) -> None:
        self._tasks: set[BackgroundTask] = set()
        self._closed = False

    def start(
        self,
        work: Callable[[], Awaitable[Any]],
        *,
        name: str,
        on_error: Callable[[Exception], None],
    ) -> BackgroundTask:
        """Run ``work()`` as a system task until it returns, fails or is cancelled.

        An exception ``work`` raises goes to ``on_error`` (which must not raise). After :meth:`aclose`
        a task is still returned but never runs.
        """
        task = BackgroundTask()
        if self._closed:
            task._scope.cancel()
            task._done.set()
            return task
        self._tasks.add(task)

        async def run() -> None:
            try:
                with task._scope:
                    await work()
            except Exception as exc:
                on_error(exc)
            finally:
                self._tasks.discard(task)
                task._done.set()

        trio.lowlevel.spawn_system_task(run, name=name, context=contextvars.copy_context())
        return task

    async def aclose(self) -> None:
        """Cancel every task and wait until each has ended; later :meth:`start` calls run nothing. Idempotent."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task._scope.cancel()
        for task in tasks:
            await task._done.wait()
