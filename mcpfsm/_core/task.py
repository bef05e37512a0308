"""The tasks extension's values and rules (SEP-2663, ``io.modelcontextprotocol/tasks``): pure, no I/O.

- :class:`TaskStatus` reads a ``Task`` (a ``CreateTaskResult``, a ``tasks/get`` result, a ``notifications/tasks``
  params object) and says what the client does with it: its poll interval (``pollIntervalMs``, 1 s when absent,
  never below 50 ms), its TTL backstop (``createdAt + ttlMs``), what counts as a change for ``progress_timeout``;
- :func:`tasks_required` turns a ``-32021`` naming the extension into the error that tells the caller to pass
  ``tasks=True``;
- :func:`task_key` and :func:`index_key` name a task's record in the client's store (never a secret: the server
  URL without credentials, query or fragment).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from .constants import MISSING_REQUIRED_CAPABILITY, TASKS_EXTENSION
from .errors import ProtocolError, RpcError

__all__ = [
    "DEFAULT_POLL_INTERVAL",
    "MAX_MILLISECONDS",
    "MIN_POLL_INTERVAL",
    "STATUSES",
    "TASKS_EXTENSION",
    "TASK_METHODS",
    "TERMINAL_STATUSES",
    "TaskStatus",
    "index_key",
    "server_name",
    "task_key",
    "tasks_required",
]

TASK_METHODS: Final = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
"""The extension's requests: each carries ``Mcp-Name: {taskId}`` and declares the extension."""

DEFAULT_POLL_INTERVAL: Final = 1.0
"""Seconds between polls when the server gives no ``pollIntervalMs``."""

MIN_POLL_INTERVAL: Final = 0.05
"""Never poll faster than this, whatever ``pollIntervalMs`` says (``0`` included)."""

STATUSES: Final = ("working", "input_required", "completed", "failed", "cancelled")
"""The statuses a server reports (SEP-2663)."""

TERMINAL_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})
"""The statuses after which a task never changes."""

_MAX_INTERVAL_MS: Final = 24 * 3600 * 1000

MAX_MILLISECONDS: Final = 2**53 - 1
"""The largest ``ttlMs`` or ``pollIntervalMs`` read: JSON's interoperable integers (RFC 8259 §6, I-JSON RFC 7493
§2.2), some 285,000 years. A larger one is a protocol error, not a number that overflows a float later."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStatus:
    """One ``Task`` as the server reported it (SEP-2663 ``Task``).

    Attributes:
        task_id: ``taskId``.
        status: one of :data:`STATUSES`.
        status_message: ``statusMessage``, or ``None``.
        created_at: ``createdAt`` (ISO 8601), or ``None``.
        last_updated_at: ``lastUpdatedAt``, or ``None``.
        ttl_ms: ``ttlMs`` (``None``: unlimited).
        poll_interval_ms: ``pollIntervalMs``, or ``None``.
        input_requests: on ``input_required``, ``inputRequests`` as sent (keys → ``{method, params}``).
        result: on ``completed``, the ``result`` object.
        error: on ``failed``, the ``error`` object.
    """

    task_id: str
    status: str
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    input_requests: Mapping[str, Any] | None = None
    result: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None

    @classmethod
    def read(cls, what: str, value: Mapping[str, Any]) -> TaskStatus:
        """Read a ``Task``; ``what`` names where it came from in the error.

        Raises:
            ProtocolError: it is not a task: ``taskId`` is not a string, ``status`` not one of :data:`STATUSES`, a
                field has the wrong type, ``ttlMs`` or ``pollIntervalMs`` is beyond :data:`MAX_MILLISECONDS`, or a
                ``completed`` task has no ``result``.
        """
        task_id = value.get("taskId")
        if not isinstance(task_id, str) or not task_id:
            raise ProtocolError(f"{what} is not a task: \"taskId\" is not a non-empty string")
        status = value.get("status")
        if status not in STATUSES:
            raise ProtocolError(f"{what} is not a task: \"status\" {status!r} is not one of {', '.join(STATUSES)}")
        texts = {}
        for key in ("statusMessage", "createdAt", "lastUpdatedAt"):
            text = value.get(key)
            if text is not None and not isinstance(text, str):
                raise ProtocolError(f"{what}: \"{key}\" is not a string")
            texts[key] = text
        numbers = {}
        for key in ("ttlMs", "pollIntervalMs"):
            number = value.get(key)
            if number is not None and (type(number) is not int or not 0 <= number <= MAX_MILLISECONDS):
                raise ProtocolError(f"{what}: \"{key}\" is not an integer from 0 to 2^53-1")
            numbers[key] = number
        details: dict[str, Mapping[str, Any] | None] = {}
        for key in ("inputRequests", "result", "error"):
            detail = value.get(key)
            if detail is not None and not isinstance(detail, Mapping):
                raise ProtocolError(f"{what}: \"{key}\" is not an object")
            details[key] = detail
        if status == "completed" and details["result"] is None:
            # SEP-2663: a completed task carries the result of the original request; without it there is nothing
            # to hand the caller, and the server will not say it again.
            raise ProtocolError(f"{what}: the task is \"completed\" without its \"result\"")
        return cls(
            task_id=task_id,
            status=str(status),
            status_message=texts["statusMessage"],
            created_at=texts["createdAt"],
            last_updated_at=texts["lastUpdatedAt"],
            ttl_ms=numbers["ttlMs"],
            poll_interval_ms=numbers["pollIntervalMs"],
            input_requests=details["inputRequests"] if status == "input_required" else None,
            result=details["result"] if status == "completed" else None,
            error=details["error"] if status == "failed" else None,
        )

    @property
    def terminal(self) -> bool:
        """The status is ``completed``, ``failed`` or ``cancelled``."""
        return self.status in TERMINAL_STATUSES

    @property
    def poll_interval(self) -> float:
        """Seconds to wait before the next poll: ``pollIntervalMs``, 1 s when absent, never under 50 ms."""
        if self.poll_interval_ms is None:
            return DEFAULT_POLL_INTERVAL
        return max(MIN_POLL_INTERVAL, min(self.poll_interval_ms, _MAX_INTERVAL_MS) / 1000)

    @property
    def ttl(self) -> float | None:
        """``ttlMs`` in seconds; ``None``: unlimited."""
        return None if self.ttl_ms is None else self.ttl_ms / 1000

    @property
    def created(self) -> float | None:
        """``createdAt`` as seconds since the epoch, or ``None`` when absent or not ISO 8601."""
        return _epoch(self.created_at)

    def expires(self) -> float | None:
        """When the TTL backstop fires, as seconds since the epoch (``createdAt + ttlMs``); ``None``: never."""
        created = self.created
        if created is None or self.ttl is None:
            return None
        return created + self.ttl

    def changed_from(self, before: TaskStatus | None) -> bool:
        """A change for ``progress_timeout``: a new ``status``, ``statusMessage`` or ``lastUpdatedAt``."""
        return before is None or (self.status, self.status_message, self.last_updated_at) != (
            before.status,
            before.status_message,
            before.last_updated_at,
        )

    def failure(self) -> RpcError:
        """The :class:`RpcError` of a ``failed`` task, from its ``error`` (a -32603 when the server gave none)."""
        error = self.error or {}
        code = error.get("code")
        message = error.get("message")
        failed = RpcError(
            code if type(code) is int else -32603,
            message if isinstance(message, str) else f"task {self.task_id} failed without an error",
            error.get("data"),
        )
        failed.task_id = self.task_id
        return failed


def _epoch(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def tasks_required(error: RpcError) -> RpcError | None:
    """The error for a ``-32021`` naming the tasks extension, telling the caller to pass ``tasks=True``; else ``None``.

    SEP-2663: a server that serves a request only as a task answers a client that did not declare the extension
    with ``-32021``, ``data.requiredCapabilities.extensions["io.modelcontextprotocol/tasks"]``.
    """
    if error.code != MISSING_REQUIRED_CAPABILITY:
        return None
    data = error.data
    required = data.get("requiredCapabilities") if isinstance(data, Mapping) else None
    extensions = required.get("extensions") if isinstance(required, Mapping) else None
    if not isinstance(extensions, Mapping) or TASKS_EXTENSION not in extensions:
        return None
    return RpcError(
        error.code,
        f"{error.message} (the server runs this tool only as a task: create the client with tasks=True, "
        "docs/tasks.md)",
        error.data,
        status=error.status,
    )


def server_name(url: str | None) -> str:
    """How a store key names the server: its URL without credentials, query or fragment; ``stdio`` without one."""
    if url is None:
        return "stdio"
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def task_key(server: str, task_id: str) -> str:
    """The store key of one task's record: ``task {server} {task id}``."""
    return f"task {server} {task_id}"


def index_key(server: str) -> str:
    """The store key of the list of recorded task ids of ``server`` (stores have no key listing)."""
    return f"tasks {server}"
