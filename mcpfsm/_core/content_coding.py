"""Decoding a response body's ``Content-Encoding`` (RFC 9110 §8.4), bounded by the decoded size.

Pure: no I/O. mcpfsm asks for ``Accept-Encoding: gzip, deflate`` (as httpx does); a
:class:`ContentDecoder` turns the body's pieces, as they arrive, into decoded pieces of at most
:data:`PIECE_BYTES` each, so a small compressed body that inflates to gigabytes never exists in
memory at once. With ``limit``, decoded bytes beyond it raise :class:`BodyTooLarge` before they are
produced: limits apply to the decoded size.

``deflate`` is read as zlib-wrapped data and, failing that, as raw DEFLATE (RFC 9110 §8.4.1.2 says
zlib; some servers send raw), as httpx does. Several codings (``gzip, deflate``) are undone in
reverse order. A coding mcpfsm did not ask for is a :class:`ContentDecodeError`.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Final

__all__ = ["ACCEPT_ENCODING", "PIECE_BYTES", "BodyTooLarge", "ContentDecodeError", "ContentDecoder"]

ACCEPT_ENCODING: Final = "gzip, deflate"
"""What mcpfsm asks for (httpx's default without the optional brotli and zstd packages)."""

PIECE_BYTES: Final = 256 * 1024
"""The largest decoded piece produced at once."""

_IDENTITY: Final = frozenset({"", "identity"})


class ContentDecodeError(ValueError):
    """The body cannot be decoded: an unknown coding, or corrupt compressed data."""


class BodyTooLarge(ValueError):
    """The decoded body exceeds the limit.

    Attributes:
        limit: the limit, in bytes.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(f"the decoded body is larger than {limit} bytes")
        self.limit = limit


class _Inflater:
    __slots__ = ("_coding", "_head", "_obj", "_started")

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._obj = zlib.decompressobj(zlib.MAX_WBITS | 16 if coding == "gzip" else zlib.MAX_WBITS)
        # deflate: the bytes fed before the zlib header proved valid, to replay as raw DEFLATE.
        self._head = b""
        self._started = coding != "deflate"

    def decode(self, data: bytes) -> Iterator[bytes]:
        obj = self._obj
        while data and not obj.eof:
            try:
                piece = obj.decompress(data, PIECE_BYTES)
            except zlib.error as exc:
                if not self._started:
                    # Not zlib-wrapped: raw DEFLATE, as some servers send it.
                    self._obj = obj = zlib.decompressobj(-zlib.MAX_WBITS)
                    data, self._head, self._started = self._head + data, b"", True
                    continue
                raise ContentDecodeError(f"malformed {self._coding} body: {exc}") from exc
            if not self._started:
                # The two-byte zlib header decides; until both arrived, keep them for a replay.
                self._head += data[: len(data) - len(obj.unconsumed_tail)]
                self._started = len(self._head) >= 2
            data = obj.unconsumed_tail
            if piece:
                yield piece

    def finish(self) -> Iterator[bytes]:
        try:
            piece = self._obj.flush()
        except zlib.error as exc:  # pragma: no cover - flush of a decompressobj does not raise in CPython
            raise ContentDecodeError(f"malformed {self._coding} body: {exc}") from exc
        if piece:
            yield piece


class ContentDecoder:
    """Decodes one body whose ``Content-Encoding`` is ``content_encoding`` (``None``: not encoded).

    Feed every piece of the body to :meth:`decode`, in order, then call :meth:`finish`; both yield
    decoded pieces.

    Args:
        content_encoding: the header's value.
        limit: the largest decoded body accepted, in bytes; ``None`` for no limit.

    Raises:
        ContentDecodeError: (from the constructor) a coding other than gzip, deflate or identity.
    """

    __slots__ = ("_limit", "_produced", "_stages")

    def __init__(self, content_encoding: str | None, *, limit: int | None = None) -> None:
        """Prepare the decoding stages."""
        codings = [c.strip().lower() for c in (content_encoding or "").split(",")]
        stages: list[_Inflater] = []
        for coding in reversed(codings):
            if coding in _IDENTITY:
                continue
            if coding not in ("gzip", "x-gzip", "deflate"):
                raise ContentDecodeError(
                    f"unsupported Content-Encoding {content_encoding!r} (mcpfsm asks for {ACCEPT_ENCODING})"
                )
            stages.append(_Inflater("gzip" if coding == "x-gzip" else coding))
        self._stages = stages
        self._limit = limit
        self._produced = 0

    @property
    def produced(self) -> int:
        """Decoded bytes produced so far."""
        return self._produced

    def decode(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of the next piece of the body.

        Raises:
            BodyTooLarge: the decoded body would exceed ``limit`` (nothing beyond it is produced).
            ContentDecodeError: the data is corrupt.
        """
        if not self._stages and len(data) <= PIECE_BYTES:
            # Not encoded, and a piece as the wire gives it: the common case, without generators.
            self._produced += len(data)
            if self._limit is not None and self._produced > self._limit:
                raise BodyTooLarge(self._limit)
            return iter((data,) if data else ())
        return self._bounded(self._through(0, data))

    def finish(self) -> Iterator[bytes]:
        """The last decoded pieces, once the body has ended.

        Raises:
            BodyTooLarge, ContentDecodeError: as for :meth:`decode`.
        """
        yield from self._bounded(self._flush(0))

    def _through(self, index: int, data: bytes) -> Iterator[bytes]:
        if index == len(self._stages):
            # Identity still arrives in pieces of any size; cut it as the inflaters do.
            for start in range(0, len(data), PIECE_BYTES):
                yield data[start : start + PIECE_BYTES] if len(data) > PIECE_BYTES else data
            return
        for piece in self._stages[index].decode(data):
            yield from self._through(index + 1, piece)

    def _flush(self, index: int) -> Iterator[bytes]:
        if index == len(self._stages):
            return
        for piece in self._stages[index].finish():
            yield from self._through(index + 1, piece)
        yield from self._flush(index + 1)

    def _bounded(self, pieces: Iterator[bytes]) -> Iterator[bytes]:
        limit = self._limit
        for piece in pieces:
            self._produced += len(piece)
            if limit is not None and self._produced > limit:
                raise BodyTooLarge(limit)
            yield piece
