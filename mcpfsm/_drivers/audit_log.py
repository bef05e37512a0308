"""A JSON Lines audit sink: every event of a client appended to a file (README, "Reading the audit events").

``AuditLog(path)`` is an ``on_event`` callback. Each event becomes one line, ``event.to_json()`` and a newline,
handed to the kernel in a single ``write(2)`` on a descriptor opened with ``O_APPEND``; there is no buffer of
its own, so a line is on its way to the disk before the call goes on ("flushed per line"), and a process that
dies loses nothing it had recorded (the disk's own durability is the operating system's: no ``fsync``).

Many calls at once: the bus calls its sinks synchronously, so the events of concurrent trio tasks reach the
file one whole line at a time, in the order they happened; a lock keeps lines whole when clients in several
threads share one log. Several processes may append to the same file: each line is one ``write(2)`` to an
``O_APPEND`` descriptor, which POSIX places at the end of the file with no other write in between ("write",
``O_APPEND``), so lines never interleave on a local file system (not so on NFS, whose appends are not atomic:
give each process its own file there). Lines of different processes are ordered by arrival; ``call_id``
(random per process) keeps their calls apart, and ``seq`` orders each call.

A call never waits for more than that one write to the page cache, and a failing write (a full disk, a closed
log) never fails the call: the event is counted in :attr:`AuditLog.dropped`, with one WARNING per log.
"""

from __future__ import annotations

import os
import threading
from types import TracebackType

from .._core.events import CallEvent
from .._log import logger

__all__ = ["AuditLog"]

_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)


class AuditLog:
    """Appends every audit event (:class:`CallEvent`, :class:`AuthEvent`) as one JSON Lines record to ``path``.

    Pass it as ``on_event=`` (``Client.http(url, on_event=AuditLog("audit.jsonl"))``), or call it from your own
    callback; ``mcpfsm trace FILE`` draws a call from what it wrote, and ``CallEvent.from_dict`` reads each line
    back. The file is created with mode ``0o600`` when it does not exist (events may quote mirrored argument
    values and the server's error messages) and is never truncated. Use it as a context manager, or call
    :meth:`close`, to release the file. The module docstring says what concurrent calls, threads and
    processes may rely on.

    Args:
        path: the file to append to.

    Raises:
        OSError: the file cannot be opened for appending (the message names it).
    """

    __slots__ = ("_fd", "_lock", "dropped", "path")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Open ``path`` for appending (created if missing)."""
        self.path = os.fspath(path)
        """The file's path, as given."""
        self.dropped = 0
        """Events not written: a write failed, or the log was closed."""
        self._lock = threading.Lock()
        self._fd: int | None = os.open(self.path, _FLAGS, 0o600)

    def __repr__(self) -> str:
        state = "closed" if self._fd is None else "open"
        return f"AuditLog({self.path!r}, {state}, dropped={self.dropped})"

    def __call__(self, event: CallEvent) -> None:
        """Append ``event`` as one line; never raises (a failure drops the event, see :attr:`dropped`)."""
        line = (event.to_json() + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                self._drop("the log is closed")
                return
            try:
                written = os.write(self._fd, line)
                while written < len(line):  # a short write (a signal, a nearly full disk): finish the line
                    written += os.write(self._fd, line[written:])
            except OSError as exc:
                self._drop(exc.strerror or type(exc).__name__)

    def _drop(self, reason: str) -> None:
        self.dropped += 1
        if self.dropped == 1:
            logger.warning(
                "audit log {!r}: an event was not written ({}); later failures are only counted", self.path, reason
            )

    def close(self) -> None:
        """Close the file; events after this are dropped. Idempotent."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
