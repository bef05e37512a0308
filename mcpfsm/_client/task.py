"""Tasks (SEP-2663) and the timeouts of long calls, for one client: the layer that starts task runs.

- :class:`Task` — the public handle of one task (``tool.start()``, ``client.start_tool()``, ``client.task()``,
  ``client.pending_tasks()``): ``wait``, ``refresh``, ``cancel`` and the status fields;
- :class:`TaskSupport` — the :class:`~mcpfsm._drivers.task.TaskPort` of a client's task runs: ``tasks/*`` requests
  through the session (``Mcp-Name: {taskId}``, the extension declared), the records in the client's store
  (:class:`~mcpfsm._client.task_records.TaskRecords`), the ``notifications/tasks`` that wake a waiting run, and
  each run's span when telemetry is on;
- :func:`TaskSupport.bounded` — ``progress_timeout`` and ``total_timeout`` around a call or a wait.

Imported with the first client that opts into tasks or a timeout, or the first handle: ``import mcpfsm`` does
not load it.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from .._core.constants import MISSING_REQUIRED_CAPABILITY
from .._core.errors import CallTimeoutError, ProtocolError, RpcError
from .._core.jsonrpc import Notification
from .._core.results import ToolResult
from .._core.task import server_name, tasks_required
from .._drivers.audit import AuditBus
from .._drivers.input import InputHandlers
from .._drivers.task import TaskRun, new_run_id
from .._machines.task import TASK
from .session import Session
from .task_records import TaskRecords

if TYPE_CHECKING:
    from .._core.credentials import Store
    from .._drivers.tool_call import ToolCall

__all__ = ["Task", "TaskSupport"]

R = TypeVar("R")


class _Watch:
    # The progress_timeout of one call: each change moves its cancel scope's deadline on.
    __slots__ = ("progress", "scope", "task_id")

    def __init__(self, progress: float | None) -> None:
        self.progress = progress
        self.scope: trio.CancelScope | None = None
        self.task_id: str | None = None

    def touch(self) -> None:
        if self.scope is not None and self.progress is not None:
            self.scope.deadline = trio.current_time() + self.progress

    def heard(self, message: Notification) -> None:
        if message.method == "notifications/progress":
            self.touch()


_WATCH: contextvars.ContextVar[_Watch | None] = contextvars.ContextVar("mcpfsm_call_watch", default=None)


class TaskSupport:
    """One client's tasks: the port of its task runs, their records, their notifications, its timeouts."""

    def __init__(
        self,
        session: Session,
        audit: AuditBus,
        store: Callable[[], Store],
        *,
        tasks: bool,
        progress_timeout: float | None,
        total_timeout: float | None,
        check_output: Callable[[str, ToolResult], None] | None = None,
        endpoint: Callable[[], str | None] = lambda: None,
    ) -> None:
        """Serve the client whose session, audit bus and store (made on first use) these are.

        ``check_output`` validates a handle's result against the tool's listed ``outputSchema`` (a call's own
        result is checked by the tool-call driver). ``endpoint`` returns the server's URL now (a 308 moves it),
        ``None`` for a server with none (stdio).
        """
        self._check_output = check_output
        self._session = session
        self.audit = audit
        self._store = store
        self._endpoint = endpoint
        self.declared = tasks
        self.progress_timeout = progress_timeout
        self.total_timeout = total_timeout
        self._runs: dict[str, TaskRun] = {}
        self.records = TaskRecords(store, lambda: self.server)
        """The client's task records in its store, written in batches (``mcpfsm._client.task_records``)."""
        self._listening = False

    @property
    def inputs(self) -> InputHandlers:
        """The client's input handlers."""
        return self._session.inputs

    @property
    def server(self) -> str:
        """How store keys name the server (its URL without credentials, query or fragment)."""
        return server_name(self._endpoint())

    # --- the TaskPort ---------------------------------------------------------------------------------

    async def task_request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One ``tasks/*`` request; the plan puts ``Mcp-Name: {taskId}`` on it (SEP-2663 "Streamable HTTP")."""
        try:
            return await self._session.renew_and_request(method, params)
        except RpcError as exc:
            # A handle of a client without tasks=True: the server answers -32021 naming the extension.
            hint = tasks_required(exc) if exc.code == MISSING_REQUIRED_CAPABILITY else None
            if hint is None:
                raise
            raise hint from exc

    async def load(self, task_id: str) -> Mapping[str, Any] | None:
        """The task's record, or ``None``."""
        return await self.records.load(task_id)

    async def save(self, task_id: str, record: Mapping[str, Any]) -> None:
        """Record the task, and its id in the server's list."""
        await self.records.save(task_id, record)

    async def forget(self, task_id: str) -> None:
        """Remove the task's record and its id from the list."""
        self._runs.pop(task_id, None)
        await self.records.forget(task_id)

    def changed(self) -> None:
        """A task status change or an answered input: ``progress_timeout`` starts again."""
        watch = _WATCH.get()
        if watch is not None:
            watch.touch()

    async def recorded(self) -> list[str]:
        """The ids of the unfinished tasks recorded for this server, oldest first."""
        return await self.records.recorded()

    # --- runs and handles ----------------------------------------------------------------------------

    async def hand_over(self, call: ToolCall, result: dict[str, Any]) -> dict[str, Any] | None:
        """The task machine takes over a call answered with a task (the tool-call driver's ``CallPort``)."""
        if not self.declared:
            raise ProtocolError(
                f"tools/call {call.name!r} was answered with a task, but the client did not declare the tasks "
                "extension (SEP-2663: a server MUST NOT)"
            )
        self._listen()
        run_id = new_run_id()
        if call.starting:
            run = await TaskRun.created(self, call.name, result, run_id)
            self._keep(run)
            call.task = Task(self, run=run)
            return None

        async def body() -> dict[str, Any]:
            run = await TaskRun.created(self, call.name, result, run_id)
            self._keep(run)
            watch = _WATCH.get()
            if watch is not None:
                watch.task_id = run.task_id
            return dict((await run.wait()).raw)

        telemetry = self._session.telemetry
        if telemetry is None:
            return await body()
        return await telemetry.run(TASK, run_id, {"mcpfsm.call_id": run_id}, body, tool=call.name)

    async def start(self, call: ToolCall) -> Task:
        """Drive ``call`` until the server answered: the task's handle, or a handle holding a synchronous answer."""
        started = await call.start()
        if isinstance(started, Task):
            return started
        assert isinstance(started, ToolResult)
        return Task(None, result=started)

    async def pending(self) -> list[Task]:
        """Handles for every unfinished task recorded for the client's server (``client.pending_tasks()``)."""
        handles = []
        for task_id in await self.recorded():
            record = await self.load(task_id)
            tool = record.get("tool") if isinstance(record, Mapping) else None
            handles.append(self.handle(task_id, tool if isinstance(tool, str) else None))
        return handles

    def handle(self, task_id: str, tool: str | None) -> Task:
        """A handle for a task created earlier; sends nothing."""
        if not isinstance(task_id, str) or not task_id:
            raise TypeError(f"task_id must be a non-empty string, got {task_id!r}")
        if tool is not None and not isinstance(tool, str):
            raise TypeError(f"tool must be a tool name or None, got {type(tool).__name__}")
        run = self._runs.get(task_id)
        if run is None:
            self._listen()
            run = TaskRun.resumed(self, task_id, tool)
            self._keep(run)
        return Task(self, run=run)

    async def wait(self, run: TaskRun) -> ToolResult:
        """Wait for ``run`` under the client's timeouts and its span."""

        async def body() -> ToolResult:
            result = await run.wait()
            if self._check_output is not None and run.tool is not None:
                self._check_output(run.tool, result)
            return result

        async def traced() -> ToolResult:
            telemetry = self._session.telemetry
            if telemetry is None:
                return await body()
            return await telemetry.run(TASK, run.run_id, {"mcpfsm.call_id": run.run_id}, body, tool=run.tool or "")

        return await self.bounded(traced, task_id=run.task_id)

    def _keep(self, run: TaskRun) -> None:
        if run.task_id is not None and run.state not in TASK.terminal:
            self._runs[run.task_id] = run

    def _listen(self) -> None:
        # notifications/tasks (SEP-2663 "Notifications") wake the run they name; the session keeps the listener.
        if self._listening:
            return
        self._listening = True
        runs = self._runs

        def listener(message: Notification) -> None:
            if message.method == "notifications/tasks":
                run = runs.get(str(message.params.get("taskId")))
                if run is not None:
                    run.notify(message.params)

        self._session.hub.add(listener)

    # --- timeouts --------------------------------------------------------------------------------------

    async def bounded(self, body: Callable[[], Awaitable[R]], *, task_id: str | None = None) -> R:
        """Run ``body`` under ``progress_timeout`` and ``total_timeout`` (docs/tasks.md, "Timeouts").

        Raises:
            CallTimeoutError: one of them fired (it names which); the task, if any, goes on on the server.
        """
        progress, total = self.progress_timeout, self.total_timeout
        if progress is None and total is None:
            return await body()
        now = trio.current_time()
        watch = _Watch(progress)
        watch.task_id = task_id
        token = _WATCH.set(watch)
        try:
            whole = trio.CancelScope(deadline=math.inf if total is None else now + total)
            quiet = trio.CancelScope(deadline=math.inf if progress is None else now + progress)
            watch.scope = quiet
            with whole, quiet, self._session.hub.listening(watch.heard):
                return await body()
        finally:
            _WATCH.reset(token)
        if quiet.cancelled_caught:
            assert progress is not None
            raise CallTimeoutError("progress_timeout", progress, task_id=watch.task_id)
        assert whole.cancelled_caught and total is not None
        raise CallTimeoutError("total_timeout", total, task_id=watch.task_id)


class Task:
    """One task of the tasks extension (SEP-2663), or the answer of a call the server did not make a task.

    Made by ``tool.start()`` / ``client.start_tool()`` (at once, when the ``tools/call`` was answered),
    ``client.task(task_id)`` and ``client.pending_tasks()``. ``await task.wait()`` polls (``pollIntervalMs``),
    answers input with the client's handlers (``tasks/update``, each key once) and returns the
    :class:`~mcpfsm.ToolResult`; ``refresh()`` polls once; ``cancel()`` sends ``tasks/cancel``. Cancelling the
    scope of a caller in ``wait()`` stops the waiting, not the task (docs/tasks.md).
    """

    __slots__ = ("_result", "_run", "_support")

    def __init__(
        self, support: TaskSupport | None, *, run: TaskRun | None = None, result: ToolResult | None = None
    ) -> None:
        """Wrap a task run, or a synchronous answer; users get handles from the client."""
        self._support = support
        self._run = run
        self._result = result

    @property
    def id(self) -> str | None:
        """The task's id; ``None`` when the server answered the call at once."""
        return None if self._run is None else self._run.task_id

    @property
    def tool(self) -> str | None:
        """The tool's name, or ``None`` when unknown (a handle from ``client.task(id)`` before its record is read)."""
        return None if self._run is None else self._run.tool

    @property
    def status(self) -> str:
        """``"working"``, ``"input_required"``, ``"completed"``, ``"failed"``, ``"cancelled"`` or ``"expired"``."""
        return "completed" if self._run is None else self._run.status_name

    @property
    def status_message(self) -> str | None:
        """The server's ``statusMessage``, or ``None``."""
        status = None if self._run is None else self._run.status
        return None if status is None else status.status_message

    @property
    def poll_interval(self) -> float:
        """Seconds between polls: ``pollIntervalMs`` (1 s when absent, never under 0.05 s)."""
        return 1.0 if self._run is None else self._run.poll_interval

    @property
    def ttl(self) -> float | None:
        """The task's ``ttlMs`` in seconds; ``None``: unlimited (or not known yet)."""
        status = None if self._run is None else self._run.status
        return None if status is None else status.ttl

    @property
    def created_at(self) -> str | None:
        """The task's ``createdAt`` (ISO 8601), or ``None`` when not known yet."""
        status = None if self._run is None else self._run.status
        return None if status is None else status.created_at

    async def wait(self) -> ToolResult:
        """Wait until the task is over and return its result (the call's, when it was no task).

        Raises:
            RpcError: the task failed (``.task_id`` set: the task's ``error``).
            TaskError: the task was cancelled or expired, or the server no longer knows it.
            CallTimeoutError: ``progress_timeout`` or ``total_timeout`` fired (the task goes on).
            ProtocolError, McpError: a poll's answer is not a task, or a request failed.
            Exception: whatever an input handler raised.
        """
        if self._run is None:
            assert self._result is not None
            return self._result
        assert self._support is not None
        return await self._support.wait(self._run)

    async def refresh(self) -> str:
        """One ``tasks/get``; returns :attr:`status` (nothing is sent once the task is over)."""
        if self._run is None:
            return "completed"
        return await self._run.refresh()

    async def cancel(self) -> None:
        """Send ``tasks/cancel`` (never ``notifications/cancelled``); returns once the server acknowledged it.

        Raises:
            RpcError: the server refused.
            McpError: the request failed.
        """
        if self._run is not None:
            await self._run.cancel()

    def __repr__(self) -> str:
        """The id, tool and status; never an argument, answer or result."""
        return f"Task(id={self.id!r}, tool={self.tool!r}, status={self.status!r})"
