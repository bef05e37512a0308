"""Newline-delimited JSON-RPC framing for stdio (MCP "Transports", stdio), linear and bounded.

Pure: no I/O. :class:`LineFramer` cuts the bytes a child process writes into lines. Each byte is
looked at a constant number of times (``bytes.find`` on the new chunk, one join per line), so a
40 MB line costs what reading 40 MB costs, not its square. A line longer than ``limit`` is never
buffered: its bytes are skipped as they arrive and it comes out as an :class:`OversizedLine`,
carrying the JSON-RPC ``id`` of the top-level object when it has one, so the transport can fail the
one request that line answered and go on with the others.

The ``id`` is found by :class:`TopLevelId`, an incremental scanner that tracks only strings,
nesting and the members of the outermost object; it jumps over string bodies and nested values
with regular expressions, so skipping stays linear too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final

__all__ = ["LineFramer", "OversizedLine", "TopLevelId"]

# The remainder of a JSON string after its opening quote, through its closing quote.
_STRING_REST: Final = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# The next byte that matters outside strings: in the outermost object members are split by , and :;
# deeper down only strings and nesting matter.
_TOP_TOKEN: Final = re.compile(rb'["{}\[\],:]')
_DEEP_TOKEN: Final = re.compile(rb'["{}\[\]]')
_WHITESPACE: Final = b" \t\r\n"
_MAX_KEY: Final = 8
_MAX_ID: Final = 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class OversizedLine:
    """A line longer than the framer's limit, skipped without being buffered.

    Attributes:
        size: its length in bytes (without the line break).
        id: the ``id`` member of its outermost JSON object (``None`` when it has none that is a
            string or an integer, or the line is not a JSON object).
    """

    size: int
    id: int | str | None


class TopLevelId:
    """Finds the ``id`` member of the outermost JSON object in text fed piece by piece.

    Feed pieces with :meth:`feed` until :attr:`done`; then :attr:`value` is the id (an ``int`` or
    ``str``), or ``None``. Malformed input never raises: the scan ends with ``None`` at worst.
    """

    __slots__ = (
        "_capture",
        "_depth",
        "_escaped",
        "_expect_key",
        "_in_string",
        "_key",
        "_started",
        "_want_id",
        "done",
        "value",
    )

    def __init__(self) -> None:
        self._depth = 0
        self._started = False
        self._in_string = False
        self._escaped = False
        self._expect_key = False
        self._key: bytearray | None = None
        self._want_id = False
        self._capture: bytearray | None = None
        self.done = False
        """True once the id is known (or known to be absent)."""
        self.value: int | str | None = None
        """The id found, if any."""

    def feed(self, data: bytes) -> None:
        """Scan the next piece."""
        position = 0
        end = len(data)
        while position < end and not self.done:
            if self._in_string:
                position = self._string(data, position)
                continue
            if not self._started:
                stripped = data[position:].lstrip(_WHITESPACE)
                if not stripped:
                    return
                if stripped[:1] != b"{":
                    self.done = True
                    return
                self._started = True
                self._depth = 1
                self._expect_key = True
                position = end - len(stripped) + 1
                continue
            match = (_TOP_TOKEN if self._depth == 1 else _DEEP_TOKEN).search(data, position)
            if match is None:
                self._capture_bytes(data[position:])
                return
            token = data[match.start() : match.end()]
            if self._depth == 1:
                self._capture_bytes(data[position : match.start()])
            position = match.end()
            self._token(token)

    def _token(self, token: bytes) -> None:
        depth = self._depth
        if token == b'"':
            self._in_string = True
            if depth == 1 and self._expect_key:
                self._key = bytearray()
            elif depth == 1 and self._capture is not None:
                self._capture += token
            return
        if token in (b"{", b"["):
            if depth == 1 and self._capture is not None:
                self._capture = None  # an object or array is no valid id
                self._want_id = False
            self._depth = depth + 1
            return
        if token in (b"}", b"]"):
            self._depth = depth - 1
            if self._depth == 0:
                self._finish_value()
                self.done = True
            return
        # , or : in the outermost object
        if token == b":":
            if self._key is not None and bytes(self._key) == b"id":
                self._want_id = True
                self._capture = bytearray()
            self._key = None
            self._expect_key = False
        else:
            self._finish_value()
            self._expect_key = True

    def _string(self, data: bytes, position: int) -> int:
        if self._escaped:
            self._escaped = False
            self._string_bytes(data[position : position + 1])
            position += 1
        match = _STRING_REST.match(data, position)
        if match is None:
            rest = data[position:]
            self._string_bytes(rest)
            trailing = len(rest) - len(rest.rstrip(b"\\"))
            self._escaped = trailing % 2 == 1
            return len(data)
        self._string_bytes(data[position : match.end() - 1])
        if self._depth == 1 and self._capture is not None:
            self._capture_bytes(b'"')
        self._in_string = False
        return match.end()

    def _string_bytes(self, piece: bytes) -> None:
        if self._depth != 1:
            return
        if self._key is not None:
            if len(self._key) <= _MAX_KEY:
                self._key += piece[: _MAX_KEY + 1]
        elif self._capture is not None:
            self._capture_bytes(piece)

    def _capture_bytes(self, piece: bytes) -> None:
        capture = self._capture
        if capture is None or not piece:
            return
        if len(capture) + len(piece) > _MAX_ID:
            self._capture = None
            self._want_id = False
            return
        capture += piece

    def _finish_value(self) -> None:
        if not self._want_id:
            return
        self._want_id = False
        capture, self._capture = self._capture, None
        if capture is None:
            return
        try:
            value = json.loads(bytes(capture))
        except ValueError:
            return
        if isinstance(value, int | str) and not isinstance(value, bool):
            self.value = value
            self.done = True


class LineFramer:
    """Cuts a byte stream into lines (LF; a CR before it stays part of the line), at most ``limit`` bytes each.

    Args:
        limit: the longest line accepted, in bytes, without its line break.

    Raises:
        ValueError: ``limit`` is below 1.
    """

    __slots__ = ("_limit", "_parts", "_size", "_skipped", "_sniffer")

    def __init__(self, *, limit: int) -> None:
        """Prepare an empty buffer."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._sniffer: TopLevelId | None = None
        self._skipped = 0

    @property
    def buffered(self) -> int:
        """Bytes of an unfinished line held now (never more than ``limit``)."""
        return self._size

    def feed(self, chunk: bytes) -> list[bytes | OversizedLine]:
        """The lines ``chunk`` completes, in order (without their LF)."""
        lines: list[bytes | OversizedLine] = []
        start = 0
        while (newline := chunk.find(b"\n", start)) >= 0:
            self._add(chunk[start:newline])
            lines.append(self._end())
            start = newline + 1
        if start < len(chunk):
            self._add(chunk[start:] if start else chunk)  # no copy for a chunk without a line break
        return lines

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        sniffer = self._sniffer
        if sniffer is None and self._size + len(piece) > self._limit:
            # Too long: from here on its bytes are scanned for the id and dropped.
            sniffer = self._sniffer = TopLevelId()
            for held in self._parts:
                sniffer.feed(held)
            self._skipped = self._size
            self._parts = []
            self._size = 0
        if sniffer is not None:
            if not sniffer.done:
                sniffer.feed(piece)
            self._skipped += len(piece)
            return
        self._parts.append(piece)
        self._size += len(piece)

    def _end(self) -> bytes | OversizedLine:
        sniffer = self._sniffer
        if sniffer is not None:
            self._sniffer = None
            size, self._skipped = self._skipped, 0
            return OversizedLine(size=size, id=sniffer.value)
        parts, self._parts, self._size = self._parts, [], 0
        if len(parts) == 1:
            return parts[0]
        return b"".join(parts)
