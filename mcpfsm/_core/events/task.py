"""The event of the task machine: one :class:`TaskEvent` per state a task enters (docs/tasks.md, specs/task.md).

Imported with the task machine (the first task) or the first record read of it. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from . import CallEvent, common_fields

__all__ = ["TaskEvent"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskEvent(CallEvent):
    """A task (SEP-2663 tasks extension) entered one state of the task machine (specs/task.md).

    The first event of a run is ``submitting`` (``task_id`` ``None``: published as the ``CreateTaskResult`` is
    read, before ``working``), or ``submitting`` then ``working`` (``resumed``) for a handle made from a record.
    Every poll publishes one event, a ``working → working`` one included. The fields of :class:`CallEvent` mean
    the same here, with ``call_id`` naming this run, ``tool`` the tool (``""`` when unknown), ``attempt`` always
    1, ``headers`` always ``None`` and ``round`` counting the ``tasks/update`` requests sent; ``input_requests``
    (on ``input_required``: the keys not answered before, by method) and ``input_responses`` (on ``answering``,
    only with ``audit_answers=True``) as for a tool call's input rounds.

    Attributes:
        task_id: the task's id (``None`` on the first ``submitting``).
        status_message: the server's ``statusMessage``, or ``None``.
        poll_interval: seconds until the next poll (``pollIntervalMs`` as the client honours it).
    """

    MACHINE: ClassVar[str] = "task"
    machine: str = MACHINE
    task_id: str | None = None
    status_message: str | None = None
    poll_interval: float | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TaskEvent:
        """Rebuild an event from :meth:`to_dict` output.

        Raises:
            ValueError: a field is missing or has the wrong type.
        """
        try:
            interval = data.get("poll_interval")
            return TaskEvent(
                **common_fields(data),
                task_id=None if data.get("task_id") is None else str(data["task_id"]),
                status_message=None if data.get("status_message") is None else str(data["status_message"]),
                poll_interval=None if interval is None else float(interval),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a TaskEvent record: {exc}") from exc
