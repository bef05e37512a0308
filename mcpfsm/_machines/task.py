"""The task machine: one task of the tasks extension (SEP-2663, ``io.modelcontextprotocol/tasks``), as data.

:data:`TASK` is the single definition. The tracker in ``mcpfsm._drivers.task`` follows it (the shared driver's
``start``/``advance``: a task's handle is stepped by whoever waits, refreshes or cancels it) and publishes one
:class:`~mcpfsm.TaskEvent` per state entered; ``specs/task.*``, ``diagrams/task.svg`` and the walkthrough
``specs/task.md`` are generated from it.

A run begins in ``submitting`` when a ``tools/call`` is answered with a task (``resultType: "task"``; a
synchronous answer starts no run), or when a handle is made for a task recorded earlier (``resumed``). The
server's statuses map onto states one to one (``working``, ``input_required``, ``completed``, ``failed``,
``cancelled``); the client adds ``answering`` (its ``tasks/update`` in flight), ``cancelling`` (its
``tasks/cancel`` in flight) and ``expired`` (the TTL elapsed since ``createdAt`` without a terminal status, or the
server no longer knows the task).

Two loops are declared: ``working -> working`` (a poll with nothing new, a poll repeating input keys already
answered included) and ``input_required -> answering -> working`` (each input key is answered once). Both are
bounded by the TTL backstop and by the caller's scope: every other edge leads down :class:`State`. Trio
cancellation of a waiting caller stops the waiting, not the task, so the machine has no cancel edges: the run
stays where it was and a later ``wait()`` goes on from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from .definition import CompiledMachine, Edge, define, edge

__all__ = ["COMPILED", "TASK", "State", "Trigger"]


class State(StrEnum):
    """A state of one task run; names equal values, so ``State.working == "working"``."""

    submitting = "submitting"
    working = "working"
    input_required = "input_required"
    answering = "answering"
    cancelling = "cancelling"
    completed = "completed"
    failed = "failed"
    cancelled = "cancelled"
    expired = "expired"


class Trigger(StrEnum):
    """A fact the tracker reports to leave a state; names equal values, as for :class:`State`."""

    created = "created"
    resumed = "resumed"
    polled = "polled"
    asked = "asked"
    gathered = "gathered"
    updated = "updated"
    input_failed = "input_failed"
    cancel_requested = "cancel_requested"
    acknowledged = "acknowledged"
    completed = "completed"
    failed = "failed"
    cancelled = "cancelled"
    ttl_elapsed = "ttl_elapsed"
    vanished = "vanished"
    errored = "errored"


LOOP_BOUND: Final = "createdAt + ttlMs not reached (TTL backstop), caller's scope"
"""The bound of both loops, drawn on the diagram."""

_VANISHED: Final = "-32602: the server does not know the task"

_EDGES: Final[tuple[Edge[State, Trigger], ...]] = (
    edge(Trigger.created, State.submitting, State.working, "CreateTaskResult: working"),
    edge(Trigger.resumed, State.submitting, State.working, "a handle for a recorded task"),
    edge(Trigger.asked, State.submitting, State.input_required, "CreateTaskResult: input_required"),
    edge(Trigger.completed, State.submitting, State.completed, "CreateTaskResult: completed"),
    edge(Trigger.failed, State.submitting, State.failed, "CreateTaskResult: failed"),
    edge(Trigger.cancelled, State.submitting, State.cancelled, "CreateTaskResult: cancelled"),
    # Polling (tasks/get): the first loop.
    edge(Trigger.polled, State.working, State.working, "tasks/get: nothing new to answer", LOOP_BOUND),
    edge(Trigger.asked, State.working, State.input_required, "tasks/get: input_required, a key not yet answered"),
    edge(Trigger.completed, State.working, State.completed, "tasks/get: completed"),
    edge(Trigger.failed, State.working, State.failed, "tasks/get: failed"),
    edge(Trigger.cancelled, State.working, State.cancelled, "tasks/get: cancelled"),
    edge(Trigger.ttl_elapsed, State.working, State.expired, "createdAt + ttlMs passed"),
    edge(Trigger.vanished, State.working, State.expired, _VANISHED),
    edge(Trigger.cancel_requested, State.working, State.cancelling, "cancel()"),
    # Input (tasks/update): the second loop.
    edge(Trigger.gathered, State.input_required, State.answering, "the new keys answered by the handlers"),
    edge(Trigger.input_failed, State.input_required, State.failed, "a handler raised, or input not offered"),
    edge(Trigger.cancel_requested, State.input_required, State.cancelling, "cancel()"),
    edge(Trigger.updated, State.answering, State.working, "tasks/update acknowledged", LOOP_BOUND),
    edge(Trigger.vanished, State.answering, State.expired, _VANISHED),
    edge(Trigger.errored, State.answering, State.failed, "tasks/update failed"),
    edge(Trigger.cancel_requested, State.answering, State.cancelling, "cancel() while the update is in flight"),
    # Cancellation (tasks/cancel, never notifications/cancelled).
    edge(Trigger.acknowledged, State.cancelling, State.cancelled, "tasks/cancel acknowledged"),
    edge(Trigger.vanished, State.cancelling, State.expired, _VANISHED),
    edge(Trigger.errored, State.cancelling, State.failed, "tasks/cancel failed"),
)
"""Every declared transition, in the order the diagrams draw them (the machine has no cancel edges)."""

_DESCRIPTIONS: Final[Mapping[State, str]] = {
    State.submitting: (
        "The `tools/call` was answered with a `CreateTaskResult` (`resultType: \"task\"`): record the task in the "
        "client's store and read its status; or a handle was made for a task recorded earlier."
    ),
    State.working: (
        "Wait `pollIntervalMs` (1 s when absent, never less than 50 ms; a `notifications/tasks` ends the wait "
        "early), then `tasks/get`; check the TTL backstop."
    ),
    State.input_required: (
        "Answer the `inputRequests` keys not answered before with the handlers (`on_elicitation`, `on_sampling`, "
        "`on_roots`), concurrently; each key once over the task's life."
    ),
    State.answering: "Send `tasks/update` with the new answers as `inputResponses`.",
    State.cancelling: "Send `tasks/cancel` (never `notifications/cancelled`).",
    State.completed: "Terminal: `wait()` returns the task's `result` as a `ToolResult`; the record is removed.",
    State.failed: (
        "Terminal: `wait()` raises `RpcError` from the task's `error` (or the handler's, or the request's error); "
        "the record is removed."
    ),
    State.cancelled: "Terminal: `wait()` raises `TaskError`; the record is removed.",
    State.expired: (
        "Terminal: the TTL elapsed without a terminal status, or the server forgot the task: `wait()` raises "
        "`TaskError`; the record is removed."
    ),
}

TASK: Final = define(
    "task", State, Trigger, _EDGES, _DESCRIPTIONS,
    title="One task of the tasks extension (SEP-2663): polling, input and cancellation",
    walkthrough="tooling.walkthrough_task", span="task {tool}",
)
"""The task machine."""

COMPILED: Final = CompiledMachine(TASK)
""":data:`TASK` with its transition table, read off a built ``transitions`` Machine."""
