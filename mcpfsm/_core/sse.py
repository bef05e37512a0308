"""Incremental ``text/event-stream`` parser (MCP Streamable HTTP; WHATWG HTML, "Server-sent events", parsing).

Pure: no I/O. Feed it the response body in chunks of any size, split anywhere (inside a UTF-8
character, between CR and LF), and it returns the events completed by each chunk.

The stream is cut into lines on bytes, not on text: CR and LF are ASCII and never occur inside a
UTF-8 multibyte sequence, so splitting first and decoding each complete value afterwards gives
exactly what decoding the whole stream would, including U+FFFD for invalid bytes (a truncated
sequence ends at the line end either way). It also makes ``max_event_bytes`` a real byte count
and keeps the per-chunk work in ``bytes.split`` rather than in a Python loop over bytes.
"""

from __future__ import annotations

import contextlib
import re
from typing import NamedTuple

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_RECONNECTION_MS",
    "MAX_RECONNECTION_MS",
    "SseError",
    "SseEvent",
    "SseParser",
    "SseTooLarge",
    "reconnection_delay",
]

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024
"""Default limit on the size of one line and of one event's data, in bytes (16 MiB)."""

DEFAULT_RECONNECTION_MS = 1000
"""The reconnection time before a stream gave a ``retry:`` field, in milliseconds."""

MAX_RECONNECTION_MS = 60_000
"""The longest wait before reconnecting, in milliseconds (one minute), whatever ``retry:`` asks for."""

_BOM = b"\xef\xbb\xbf"
_LINE_END = re.compile(rb"\r\n|\r|\n")


def reconnection_delay(retry: int | None) -> float:
    """Seconds to wait before reconnecting: the stream's ``retry`` (milliseconds), else the default.

    Clamped to :data:`MAX_RECONNECTION_MS`: the value is the server's, and a request waits on it (a
    ``retry:`` of a thousand digits is a valid field, but no delay to sleep or to divide into a float).
    """
    if retry is None:
        return DEFAULT_RECONNECTION_MS / 1000
    return min(retry, MAX_RECONNECTION_MS) / 1000


class SseError(ValueError):
    """The event stream cannot be parsed safely (MCP "Transports").

    Raised when a line or an event's data exceeds ``max_event_bytes`` (:class:`SseTooLarge`), and
    when the parser is fed after it was closed or after it failed.
    """


class SseTooLarge(SseError):
    """A line or an event's data exceeds ``max_event_bytes``.

    Attributes:
        limit: ``max_event_bytes``.
    """

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class SseEvent(NamedTuple):
    """One dispatched server-sent event.

    Attributes:
        event: the event type; ``"message"`` when the event had no (or an empty) ``event:`` field.
        data: the ``data:`` lines of the event joined with LF.
        id: the last event ID in effect after this event (``None`` if no ``id:`` was ever set;
            ``""`` if the server reset it with an empty ``id:``).
        retry: the reconnection time in milliseconds from the last valid ``retry:`` field seen so
            far in the stream, or ``None`` if there was none.

    """

    event: str
    data: str
    id: str | None
    retry: int | None


class SseParser:
    """Turns the bytes of one ``text/event-stream`` body into :class:`SseEvent` values.

    Follows the WHATWG event-stream interpretation: a leading BOM is ignored; LF, CRLF and CR all
    end a line; ``:`` starts a comment; ``name: value`` loses one space after the colon; a line
    without a colon is a field with an empty value; unknown fields are ignored; a blank line
    dispatches the event (nothing is dispatched when no ``data:`` line was seen, but an ``id:``
    still takes effect); ``id`` values containing NUL and non-digit ``retry`` values are ignored.

    One parser reads one response body. To resume a cut stream (MCP 2025-11-25, "Resumability and Redelivery"), read the
    new body with ``SseParser(last_event_id=old.last_event_id, retry=old.retry)``: the event
    source's last event ID and reconnection time carry over, the line and event buffers do not.

    Args:
        max_event_bytes: the largest line, and the largest event data (the ``data:`` values
            joined with LF), accepted, in bytes. Anything larger raises :class:`SseError`, so a
            misbehaving server cannot make the client buffer without bound.
        last_event_id: the last event ID carried over from an earlier stream of the same source.
        retry: the reconnection time (ms) carried over from an earlier stream of the same source.

    Raises:
        ValueError: ``max_event_bytes`` is smaller than 1.

    """

    __slots__ = (
        "_at_start",
        "_closed",
        "_data",
        "_data_size",
        "_event_type",
        "_id_buffer",
        "_last_event_id",
        "_max",
        "_pending",
        "_pending_size",
        "_retry",
        "_skip_lf",
    )

    def __init__(
        self,
        *,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        last_event_id: str | None = None,
        retry: int | None = None,
    ) -> None:
        if max_event_bytes < 1:
            raise ValueError(f"max_event_bytes must be at least 1, got {max_event_bytes}")
        self._max = max_event_bytes
        self._at_start = True
        self._closed = False
        self._skip_lf = False
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._data: list[bytes] = []
        self._data_size = 0
        self._event_type = b""
        # Browsers seed the ID buffer with the carried-over ID, so a resumed stream whose first
        # event has no id: keeps it (the standard's fresh empty buffer would erase it).
        self._id_buffer = last_event_id
        self._last_event_id = last_event_id
        self._retry = retry

    @property
    def last_event_id(self) -> str | None:
        """The last event ID string, as set by the last blank line (the value for ``Last-Event-ID``).

        ``None`` until an ``id:`` field has taken effect; ``""`` after the server reset it (the
        standard then sends no ``Last-Event-ID`` header).
        """
        return self._last_event_id

    @property
    def retry(self) -> int | None:
        """The reconnection time in milliseconds from the last valid ``retry:`` field, or ``None``."""
        return self._retry

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Parse the next piece of the stream and return the events it completes, in order.

        Raises:
            SseError: a line or an event's data exceeds ``max_event_bytes``, or the parser was
                closed or has already failed. After raising, the parser stays failed.

        """
        if self._closed:
            raise SseError("SSE parser is closed")
        if not chunk:
            return []
        if self._at_start:
            head = b"".join(self._pending) + chunk
            if len(head) < len(_BOM) and _BOM.startswith(head):
                # Not enough bytes yet to tell a BOM from content.
                self._pending = [head]
                self._pending_size = len(head)
                return []
            self._at_start = False
            self._pending = []
            self._pending_size = 0
            chunk = head[len(_BOM) :] if head.startswith(_BOM) else head
            if not chunk:
                return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                # The CR ending the previous chunk and this LF are one CRLF line ending.
                chunk = chunk[1:]
                if not chunk:
                    return []
        has_cr = b"\r" in chunk
        if not has_cr and b"\n" not in chunk:
            self._pending.append(chunk)
            self._pending_size += len(chunk)
            if self._pending_size > self._max:
                self._fail_line()
            return []
        buffer = b"".join(self._pending) + chunk if self._pending else chunk
        if has_cr:
            # CRLF-only streams are common; normalising them keeps the fast bytes.split path.
            normalised = buffer.replace(b"\r\n", b"\n")
            lines = _LINE_END.split(buffer) if b"\r" in normalised else normalised.split(b"\n")
        else:
            lines = buffer.split(b"\n")
        rest = lines.pop()
        self._pending = [rest] if rest else []
        self._pending_size = len(rest)
        self._skip_lf = buffer[-1:] == b"\r"
        if len(buffer) > self._max and max(len(rest), *map(len, lines)) > self._max:
            self._fail_line()
        try:
            return self._interpret(lines)
        except SseError:
            self._closed = True
            raise

    def close(self) -> list[SseEvent]:
        """End the stream: an event without its closing blank line is discarded, as the standard says.

        Returns ``[]`` (the list is there so callers can treat ``close`` like a last ``feed``).
        Closing twice is harmless; feeding after closing raises :class:`SseError`.
        """
        self._closed = True
        self._pending = []
        self._pending_size = 0
        self._data = []
        self._data_size = 0
        self._event_type = b""
        return []

    def _fail_line(self) -> None:
        self._closed = True
        raise SseTooLarge(f"SSE line longer than max_event_bytes ({self._max} bytes)", self._max)

    def _interpret(self, lines: list[bytes]) -> list[SseEvent]:
        events: list[SseEvent] = []
        for line in lines:
            if not line:
                self._last_event_id = self._id_buffer
                if self._data:
                    events.append(
                        SseEvent(
                            event=self._event_type.decode("utf-8", "replace") or "message",
                            data=b"\n".join(self._data).decode("utf-8", "replace"),
                            id=self._last_event_id,
                            retry=self._retry,
                        )
                    )
                    self._data = []
                    self._data_size = 0
                self._event_type = b""
                continue
            name, colon, value = line.partition(b":")
            if colon and value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                self._data.append(value)
                self._data_size += len(value) + 1
                # _data_size counts one LF per line; the joined data has one fewer.
                if self._data_size - 1 > self._max:
                    raise SseTooLarge(f"SSE event data larger than max_event_bytes ({self._max} bytes)", self._max)
            elif name == b"event":
                self._event_type = value
            elif name == b"id" and b"\x00" not in value:
                self._id_buffer = value.decode("utf-8", "replace")
            elif name == b"retry" and value.isdigit():
                # bytes.isdigit is ASCII-only, as the standard requires (str.isdigit is not). A value
                # with more digits than int() converts (sys.get_int_max_str_digits) is no usable delay.
                with contextlib.suppress(ValueError):
                    self._retry = int(value)
            # Anything else (a comment has the empty name) is ignored.
        return events
