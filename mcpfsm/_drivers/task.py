"""The task machine's runs, under trio: one task of the tasks extension (SEP-2663), polled, answered, cancelled.

:class:`TaskRun` follows the machine in ``mcpfsm._machines.task`` with the shared driver's ``start``/``advance``:
a task is stepped by whoever waits for it, refreshes it or cancels it (a handle may do each at any time), so the
run has no loop of its own to drive; :meth:`TaskRun.wait` is the loop of a caller that waits, one effect per state
(``working``: sleep one interval, then ``tasks/get``; ``input_required``: the handlers; ``answering``:
``tasks/update``). Each state entered publishes one :class:`~mcpfsm.TaskEvent`. The run reaches the client
through :class:`TaskPort`.

Cancellation of a caller that waits stops the waiting, not the task: the machine has no cancel edges, the run stays
in its state, and the next ``wait()`` goes on from there (the record stays in the store too).
"""

from __future__ import annotations

import contextlib
import itertools
import secrets
import time
from collections.abc import Mapping
from typing import Any, Final, Protocol

import trio

from .._core.constants import INVALID_PARAMS
from .._core.errors import McpError, ProtocolError, RpcError, TaskError
from .._core.events import error_summary, input_failure_summary, utc_timestamp
from .._core.events.task import TaskEvent
from .._core.input_rounds import parse_input_required
from .._core.results import ToolResult
from .._core.task import TaskStatus
from .._machines.task import COMPILED, State, Trigger
from .audit import AuditBus
from .driver import advance, plain, start
from .input import InputHandlers

__all__ = ["TaskPort", "TaskRun", "new_run_id"]

_RUN_PREFIX = secrets.token_hex(4)
_RUN_COUNTER = itertools.count(1)

_ABANDON_SECONDS: Final = 5.0
"""How long the ``tasks/cancel`` of a task whose input cannot be given may take before the run ends anyway."""

_ON_STATUS: Final[Mapping[str, Trigger]] = {
    "completed": Trigger.completed,
    "failed": Trigger.failed,
    "cancelled": Trigger.cancelled,
}


class TaskPort(Protocol):
    """What a task run needs from the client: its requests, the handlers, the audit bus, the store and the clock."""

    @property
    def audit(self) -> AuditBus:
        """Where the run's events go."""
        ...

    @property
    def inputs(self) -> InputHandlers:
        """The handlers that answer ``inputRequests``."""
        ...

    async def task_request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send ``tasks/get``, ``tasks/update`` or ``tasks/cancel`` (``Mcp-Name: {taskId}``, the extension declared)."""
        ...

    async def load(self, task_id: str) -> Mapping[str, Any] | None:
        """The task's record in the client's store, or ``None``."""
        ...

    async def save(self, task_id: str, record: Mapping[str, Any]) -> None:
        """Record the task (its tool, the answered keys, the last status) in the client's store."""
        ...

    async def forget(self, task_id: str) -> None:
        """Remove the task's record: it is over."""
        ...

    def changed(self) -> None:
        """The task's status changed or an input was answered: ``progress_timeout`` starts again."""
        ...


class TaskRun:
    """One task: its state in the task machine, what the server last said, the input keys answered.

    Made by :meth:`created` (a ``CreateTaskResult``) or :meth:`resumed` (a task recorded earlier). The public
    :class:`~mcpfsm.Task` handle wraps one.
    """

    def __init__(self, port: TaskPort, tool: str | None, run_id: str | None = None) -> None:
        """A run not started yet; use :meth:`created` or :meth:`resumed`."""
        self.port = port
        self.tool = tool
        self.run_id = run_id or new_run_id()
        self.task_id: str | None = None
        self.status: TaskStatus | None = None
        self.state: State = State.submitting
        self.answered: set[str] = set()
        self.error: BaseException | None = None
        self.updates = 0
        self.notified = trio.Event()
        self._loaded = False
        self._seq = 0
        self._started = trio.current_time()
        self._requests: Mapping[str, str] | None = None
        self._responses: Mapping[str, Any] | None = None
        self._pending: dict[str, Any] = {}
        self._answers: dict[str, Any] | None = None
        self._cancelling: trio.Event | None = None
        self._gathering: trio.CancelScope | None = None

    # --- how a run begins ------------------------------------------------------------------------

    @classmethod
    async def created(
        cls, port: TaskPort, tool: str, result: Mapping[str, Any], run_id: str | None = None
    ) -> TaskRun:
        """The run of the task a ``tools/call`` answered with: ``submitting``, then the task's first status.

        Raises:
            ProtocolError: the answer is not a task (the run stays in ``submitting``).
        """
        run = cls(port, tool, run_id)
        run.state = start(COMPILED, run)
        status = TaskStatus.read("the tools/call task answer", result)
        run.task_id = status.task_id
        run._loaded = True
        await port.save(status.task_id, run.record(status))
        await run._apply(status, first=True)
        return run

    @classmethod
    def resumed(cls, port: TaskPort, task_id: str, tool: str | None) -> TaskRun:
        """The run of a task created earlier (by this process or another): ``submitting``, then ``working``."""
        run = cls(port, tool)
        run.task_id = task_id
        run.state = start(COMPILED, run)
        run._follow(Trigger.resumed)
        return run

    # --- what the caller asks -----------------------------------------------------------------------

    async def refresh(self) -> str:
        """One ``tasks/get`` (none once the task is over); the status (``"expired"`` included).

        In ``working`` the poll is one step of the machine; in ``input_required``, ``answering`` and ``cancelling``
        it updates what the handle shows and nothing else (the step in progress decides what comes next).

        Raises:
            ProtocolError: the answer is not a task.
            McpError: the request failed (the run stays where it was).
        """
        if self.state in COMPILED.definition.terminal:
            return self.status_name
        await self._load()
        assert self.task_id is not None
        try:
            result = await self.port.task_request("tasks/get", {"taskId": self.task_id})
        except RpcError as exc:
            if exc.code != INVALID_PARAMS:
                raise
            await self._vanished(exc)
            return self.status_name
        status = TaskStatus.read("the tasks/get answer", result)
        if status.task_id != self.task_id:
            raise ProtocolError(f"tasks/get for {self.task_id!r} answered task {status.task_id!r}")
        await self._apply(status)
        return self.status_name

    def notify(self, value: Mapping[str, Any]) -> None:
        """A ``notifications/tasks`` for this task arrived: the waiting poll goes at once."""
        if value.get("taskId") == self.task_id:
            self.notified.set()

    async def wait(self) -> ToolResult:
        """Poll, answer and wait until the task is over; its result.

        Raises:
            RpcError: the task failed (``.task_id`` set), or a ``tasks/update`` or ``tasks/cancel`` failed.
            TaskError: the task was cancelled or expired.
            ProtocolError, McpError: a poll's answer is not a task, or a request failed (the run stays where it was).
            Exception: whatever an input handler raised.
        """
        await self._load()
        terminal = COMPILED.definition.terminal
        while self.state not in terminal:
            if self.state == State.working:
                await self._sleep()
                await self.refresh()
            elif self.state == State.input_required:
                await self._gather()
            elif self.state == State.answering:
                await self._update()
            elif self.state == State.cancelling:
                await self.cancel()
        return self.outcome()

    async def cancel(self) -> None:
        """``tasks/cancel`` (never ``notifications/cancelled``); returns once the server acknowledged it.

        A task that is over already is left as it is. One ``tasks/cancel`` is in flight at a time: a second caller
        waits for the first one's and returns when the task is over (it raises nothing of the first one's). A
        ``wait()`` that is asking the handlers for input meanwhile ends with the task's end.

        Raises:
            RpcError: the server refused (the run ends ``failed``).
            McpError: the request failed.
        """
        terminal = COMPILED.definition.terminal
        while self.state not in terminal:
            if self._cancelling is not None:
                await self._cancelling.wait()
                continue
            self._cancelling = done = trio.Event()
            try:
                await self._send_cancel()
            finally:
                self._cancelling = None
                done.set()
            return

    async def _send_cancel(self) -> None:
        await self._load()
        assert self.task_id is not None
        if self.state != State.cancelling:
            self._follow(Trigger.cancel_requested)
        try:
            await self.port.task_request("tasks/cancel", {"taskId": self.task_id})
        except RpcError as exc:
            if exc.code == INVALID_PARAMS:
                await self._vanished(exc)
                return
            exc.task_id = self.task_id
            await self._end(Trigger.errored, exc)
            raise
        self.error = TaskError(f"task {self.task_id} was cancelled", task_id=self.task_id, status="cancelled")
        await self._end(Trigger.acknowledged, None)

    def outcome(self) -> ToolResult:
        """The result of a task that is over.

        Raises:
            RpcError, TaskError: as :meth:`wait`.
        """
        if self.state == State.completed:
            assert self.status is not None and self.status.result is not None
            return ToolResult.from_complete(dict(self.status.result))
        assert self.error is not None
        raise self.error

    # --- what the handle shows ------------------------------------------------------------------------

    @property
    def status_name(self) -> str:
        """``"expired"`` for an expired run, else the server's last status (``"working"`` before any)."""
        if self.state == State.expired:
            return "expired"
        if self.state in (State.cancelled, State.completed, State.failed):
            return str(self.state)
        return "working" if self.status is None else self.status.status

    def record(self, status: TaskStatus | None = None) -> dict[str, Any]:
        """The store record: tool, answered keys, last status, ``createdAt`` and ``ttlMs`` (never an answer)."""
        status = status or self.status
        return {
            "tool": self.tool,
            "answered": sorted(self.answered),
            "status": None if status is None else status.status,
            "createdAt": None if status is None else status.created_at,
            "ttlMs": None if status is None else status.ttl_ms,
        }

    # --- the steps ------------------------------------------------------------------------------------

    async def _load(self) -> None:
        if self._loaded:
            return
        assert self.task_id is not None
        record = await self.port.load(self.task_id)
        self._loaded = True
        if record is None:
            return
        answered = record.get("answered")
        if isinstance(answered, list):
            self.answered.update(key for key in answered if isinstance(key, str))
        tool = record.get("tool")
        if self.tool is None and isinstance(tool, str):
            self.tool = tool

    async def _sleep(self) -> None:
        interval = self.poll_interval
        with trio.move_on_after(interval):
            await self.notified.wait()
        self.notified = trio.Event()

    @property
    def poll_interval(self) -> float:
        """Seconds between polls, as the last status says (1 s before any)."""
        return 1.0 if self.status is None else self.status.poll_interval

    async def _apply(self, status: TaskStatus, *, first: bool = False) -> None:
        changed = status.changed_from(self.status)
        recorded = self.record()
        self.status = status
        if changed:
            self.port.changed()
        if self.state not in (State.submitting, State.working):
            # A refresh while input is answered or a cancel is in flight: the step in progress decides.
            return
        trigger = _ON_STATUS.get(status.status)
        if trigger is not None:
            if status.status == "failed":
                self.error = status.failure()
            elif status.status == "cancelled":
                self.error = TaskError(
                    f"task {status.task_id} was cancelled", task_id=status.task_id, status="cancelled"
                )
            await self._end(trigger, None)
            return
        self._pending = {}
        if status.status == "input_required" and status.input_requests:
            self._pending = {k: v for k, v in status.input_requests.items() if k not in self.answered}
        expires = status.expires()
        if not first and expires is not None and time.time() > expires:
            self.error = TaskError(
                f"task {status.task_id} expired: its ttlMs of {status.ttl_ms} ms passed without a terminal status",
                task_id=status.task_id,
                status="expired",
            )
            await self._end(Trigger.ttl_elapsed, None)
            return
        if self._pending:
            self._requests = {key: _method(value) for key, value in self._pending.items()}
            self._follow(Trigger.asked)
            self._requests = None
        else:
            self._follow(Trigger.created if first else Trigger.polled)
        # Only when the record differs (a new status, ttlMs...): a server may move lastUpdatedAt on every poll
        # (fastmcp-tasks 4.1 does), which would otherwise write the same record to the store at each one.
        if not first and self.record() != recorded:
            await self.port.save(status.task_id, self.record())

    async def _gather(self) -> None:
        assert self.status is not None
        # cancel() may end the run while the handlers are still asking (a person at a terminal): the task is over,
        # so the asking stops, and the caller's wait() ends with the task's end (_end cancels this scope).
        failure: Exception | None = None
        answers: dict[str, Any] = {}
        self._gathering = trio.CancelScope()
        try:
            with self._gathering:
                try:
                    parsed = parse_input_required("tasks/get", {"inputRequests": self._pending})
                    answers = await self.port.inputs.gather(parsed.requests)
                except Exception as exc:
                    failure = exc
        finally:
            self._gathering = None
        if self.state != State.input_required:
            return  # cancel() took over meanwhile: neither the answers nor a handler's error matter any more
        if failure is not None:
            await self._abandon()
            await self._end(Trigger.input_failed, failure)
            raise failure
        self._answers = answers
        if self.port.inputs.audit_answers:
            self._responses = self._answers
        self._follow(Trigger.gathered)
        self._responses = None

    async def _abandon(self) -> None:
        # The input cannot be given (a handler raised, none is offered, the round is too large): the task would
        # wait in input_required until its TTL, so the server is told to cancel it, once and bounded; its
        # answer changes nothing here, the run ends failed with the input's error (docs/tasks.md).
        assert self.task_id is not None
        with trio.move_on_after(_ABANDON_SECONDS), contextlib.suppress(McpError):
            await self.port.task_request("tasks/cancel", {"taskId": self.task_id})

    async def _update(self) -> None:
        assert self.task_id is not None and self._answers is not None
        try:
            await self.port.task_request("tasks/update", {"taskId": self.task_id, "inputResponses": self._answers})
        except RpcError as exc:
            if exc.code == INVALID_PARAMS:
                await self._vanished(exc)
                return
            exc.task_id = self.task_id
            await self._end(Trigger.errored, exc)
            raise
        self.updates += 1
        self.answered.update(self._answers)
        if self.state != State.answering:
            # cancel() was called while the update was in flight: the cancellation decides what comes next, and a
            # task it already ended keeps no record.
            self._answers = None
            if self.state not in COMPILED.definition.terminal:
                await self.port.save(self.task_id, self.record())
            return
        self._answers = None
        self._pending = {}
        self.port.changed()
        await self.port.save(self.task_id, self.record())
        self._follow(Trigger.updated)

    async def _vanished(self, exc: RpcError) -> None:
        assert self.task_id is not None
        error = TaskError(
            f"the server does not know task {self.task_id}: {exc.message}", task_id=self.task_id, status="expired"
        )
        error.__cause__ = exc
        self.error = error
        await self._end(Trigger.vanished, None)

    async def _end(self, trigger: Trigger, error: BaseException | None) -> None:
        if error is not None:
            self.error = error
        self._follow(trigger)
        if self._gathering is not None:
            self._gathering.cancel()
        if self.task_id is not None:
            await self.port.forget(self.task_id)

    def _follow(self, trigger: Trigger) -> None:
        self.state = advance(COMPILED, self, self.state, trigger)

    # --- events ---------------------------------------------------------------------------------------

    def entered(self, state: str, previous: str | None, trigger: str | None) -> None:
        """Publish the :class:`~mcpfsm.TaskEvent` of ``state`` (the driver's ``Run`` protocol)."""
        seq, self._seq = self._seq, self._seq + 1
        state, previous, trigger = str(state), plain(previous), plain(trigger)
        audit = self.port.audit
        tool = self.tool or ""
        if not audit.observed:
            audit.log(self.run_id, tool, previous, state, trigger, machine=TaskEvent.MACHINE)
            return
        error = None
        if state in (State.failed, State.cancelled, State.expired) and self.error is not None:
            failed = input_failure_summary if trigger == Trigger.input_failed else error_summary
            error = failed(self.error)
        status = self.status
        audit.publish(
            TaskEvent(
                call_id=self.run_id,
                seq=seq,
                tool=tool,
                state=state,
                previous=previous,
                trigger=trigger,
                attempt=1,
                at=utc_timestamp(time.time_ns()),
                elapsed=trio.current_time() - self._started,
                error=error,
                round=self.updates,
                input_requests=None if self._requests is None else dict(self._requests),
                input_responses=None if self._responses is None else dict(self._responses),
                task_id=self.task_id if state != State.submitting else None,
                status_message=None if status is None else status.status_message,
                poll_interval=None if status is None else status.poll_interval,
            )
        )


def _method(request: object) -> str:
    # What an event records of an input request: its method only, never its params.
    return str(request.get("method")) if isinstance(request, Mapping) else ""


def new_run_id() -> str:
    """A fresh run id (a task run's events' ``call_id``)."""
    return f"{_RUN_PREFIX}-t{next(_RUN_COUNTER)}"

