"""A JSON Lines audit sink: every event of a client appended to a file (docs/events.md).

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

**A chained log** (``AuditLog(path, chain=True)``, docs/trail-viewer.md): every line also carries ``log_seq`` (0, 1,
2, … across the log's files), ``log_prev`` (the previous line's tag; 64 zeros before the first line) and, last,
its own tag over everything before it on the line: ``log_sha256``, the SHA-256 of those bytes, or ``log_hmac``,
their HMAC-SHA-256 (RFC 2104) under ``key``. Editing, removing, inserting or reordering a line breaks the chain
at that line (:func:`verify_chain`, ``mcpfsm audit verify``); with a key, a reader without it cannot write a
line that fits. What the chain cannot show: lines cut off the end (compare the last ``log_seq`` with one kept
elsewhere, or with the OpenTelemetry copy), and, without a key, a whole log rewritten by someone who
recomputed every hash. A chained log has one writer: several processes appending to one chained file break
the chain (each holds its own sequence), so give each its own file. :meth:`AuditLog.rotate` moves the file
aside and goes on in a fresh one, the chain unbroken; a log reopened on an existing chained file continues
its chain.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final

from .._core.events import CallEvent
from .._log import logger

__all__ = ["AuditLog", "ChainReport", "verify_chain"]

_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
_GENESIS: Final = "0" * 64
_MIN_KEY: Final = 16
_SHA_TAG: Final = b',"log_sha256":"'
_HMAC_TAG: Final = b',"log_hmac":"'
_HEX64: Final = re.compile(r"[0-9a-f]{64}\Z")
_TAIL_BYTES: Final = 1 << 16


def _tag(body: bytes, key: bytes | None) -> str:
    if key is None:
        return hashlib.sha256(body).hexdigest()
    return hmac.digest(key, body, "sha256").hex()


def _hmac_tagger(key: bytes) -> Callable[[bytes], str]:
    # HMAC-SHA-256 (RFC 2104) with the key's inner and outer states computed once, by the standard library's
    # own hmac object: per line one copy and one update instead of a keyed start (bench/report.py, the chained
    # write cost).
    keyed = hmac.new(key, digestmod=hashlib.sha256)

    def tag(body: bytes) -> str:
        line = keyed.copy()
        line.update(body)
        return line.hexdigest()

    return tag


def _sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


class AuditLog:
    """Appends every audit event (:class:`CallEvent`, :class:`AuthEvent`) as one JSON Lines record to ``path``.

    Pass it as ``on_event=`` (``Client.http(url, on_event=AuditLog("audit.jsonl"))``), or call it from your own
    callback; ``mcpfsm trace FILE`` draws a call from what it wrote, and ``CallEvent.from_dict`` reads each line
    back. The file is created with mode ``0o600`` when it does not exist (events may quote mirrored argument
    values and the server's error messages) and is never truncated. Use it as a context manager, or call
    :meth:`close`, to release the file. The module docstring says what concurrent calls, threads and
    processes may rely on, and what a chained log proves.

    Args:
        path: the file to append to.
        chain: add ``log_seq``, ``log_prev`` and a tag to every line, so that ``mcpfsm audit verify`` finds the
            first line edited, removed, inserted or reordered. Reopening a chained file continues its chain.
        key: with ``chain=True``, the tags are HMAC-SHA-256 under this key (at least 16 bytes), so a reader
            without it cannot forge a line; ``None``: plain SHA-256. Never logged or shown in the repr.

    Raises:
        OSError: the file cannot be opened for appending (the message names it).
        ValueError: a key without ``chain=True`` or shorter than 16 bytes; or ``chain=True`` on a file whose last
            line is not a chained line (under that key).
    """

    __slots__ = ("_fd", "_key", "_lock", "_marker", "_prev", "_seq", "_tagger", "chained", "dropped", "path")

    def __init__(self, path: str | os.PathLike[str], *, chain: bool = False, key: bytes | None = None) -> None:
        """Open ``path`` for appending (created if missing)."""
        if key is not None and not chain:
            raise ValueError("AuditLog: a key signs the chain; pass chain=True with it")
        if key is not None and (not isinstance(key, bytes) or len(key) < _MIN_KEY):
            raise ValueError(f"AuditLog: the key must be bytes, at least {_MIN_KEY} of them")
        self.path = os.fspath(path)
        """The file's path, as given."""
        self.chained = chain
        """Whether each line carries ``log_seq``, ``log_prev`` and a tag."""
        self.dropped = 0
        """Events not written: a write failed, or the log was closed."""
        self._key = key
        self._tagger = _sha256 if key is None else _hmac_tagger(key)
        self._marker = _SHA_TAG if key is None else _HMAC_TAG
        self._lock = threading.Lock()
        self._seq = 0
        self._prev = _GENESIS
        if chain:
            self._resume()
        self._fd: int | None = os.open(self.path, _FLAGS, 0o600)

    def _resume(self) -> None:
        # A chained file that already has lines: go on from its last line (checked under the key).
        try:
            with open(self.path, "rb") as file:
                size = file.seek(0, os.SEEK_END)
                file.seek(max(0, size - _TAIL_BYTES))
                tail = file.read()
        except FileNotFoundError:
            return
        if not tail.strip():
            return
        if not tail.endswith(b"\n"):
            raise ValueError(f"AuditLog: {self.path!r} ends with an incomplete line; start a chained log in a new file")
        last = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
        parsed = _parse_line(last)
        if isinstance(parsed, str):
            raise ValueError(f"AuditLog: the last line of {self.path!r} is not a chained line ({parsed})")
        marker = _SHA_TAG if self._key is None else _HMAC_TAG
        if parsed.marker != marker or not hmac.compare_digest(_tag(parsed.body, self._key), parsed.tag):
            raise ValueError(f"AuditLog: the last line of {self.path!r} is not signed {_signed(self._key)}")
        self._seq = parsed.seq + 1
        self._prev = parsed.tag

    def __repr__(self) -> str:
        state = "closed" if self._fd is None else "open"
        chain = "" if not self.chained else f", chained{' (keyed)' if self._key is not None else ''} at {self._seq}"
        return f"AuditLog({self.path!r}, {state}{chain}, dropped={self.dropped})"

    def __call__(self, event: CallEvent) -> None:
        """Append ``event`` as one line; never raises (a failure drops the event, see :attr:`dropped`)."""
        text = event.to_json()
        with self._lock:
            if self._fd is None:
                self._drop("the log is closed")
                return
            if self.chained:
                body = f'{text[:-1]},"log_seq":{self._seq},"log_prev":"{self._prev}"'.encode()
                tag = self._tagger(body)
                line = b"".join((body, self._marker, tag.encode(), b'"}\n'))
            else:
                line = (text + "\n").encode("utf-8")
            try:
                written = os.write(self._fd, line)
                while written < len(line):  # a short write (a signal, a nearly full disk): finish the line
                    written += os.write(self._fd, line[written:])
            except OSError as exc:
                self._drop(exc.strerror or type(exc).__name__)
                return
            if self.chained:
                # Only a line on its way to the disk moves the chain on: a dropped event leaves no gap.
                self._seq += 1
                self._prev = tag

    def _drop(self, reason: str) -> None:
        self.dropped += 1
        if self.dropped == 1:
            logger.warning(
                "audit log {!r}: an event was not written ({}); later failures are only counted", self.path, reason
            )

    def rotate(self, to: str | os.PathLike[str]) -> None:
        """Rename the file to ``to`` and go on in a fresh file at :attr:`path`.

        A chained log's next line continues the sequence and links to the last line of the renamed file, so
        ``mcpfsm audit verify OLD NEW`` checks both as one chain.

        Raises:
            OSError: the rename or the new file failed (the log is then closed: later events are dropped).
            ValueError: the log is closed.
        """
        with self._lock:
            if self._fd is None:
                raise ValueError(f"AuditLog: {self.path!r} is closed")
            fd, self._fd = self._fd, None
            os.close(fd)
            os.rename(self.path, os.fspath(to))
            self._fd = os.open(self.path, _FLAGS, 0o600)

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


def _signed(key: bytes | None) -> str:
    return "with SHA-256" if key is None else "with HMAC-SHA-256 under this key"


@dataclass(frozen=True, slots=True)
class _Line:
    body: bytes
    marker: bytes
    tag: str
    seq: int
    prev: str


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for name, value in pairs:
        if name in record:
            raise ValueError(f"the key {name!r} appears twice")
        record[name] = value
    return record


def _parse_line(raw: bytes) -> _Line | str:
    """The chain fields of one line (without its newline), or why it is not a chained line."""
    for marker in (_SHA_TAG, _HMAC_TAG):
        at = raw.rfind(marker)
        if at != -1 and at == len(raw) - len(marker) - 66:
            break
    else:
        return "no log_sha256 or log_hmac tag at its end"
    try:
        record = json.loads(raw, object_pairs_hook=_no_duplicates)
    except ValueError as exc:
        return f"not a JSON object: {exc}"
    tag, seq, prev = record.get(marker[2:-3].decode()), record.get("log_seq"), record.get("log_prev")
    if not isinstance(tag, str) or not _HEX64.match(tag):
        return "its tag is not 64 hexadecimal digits"
    if type(seq) is not int or seq < 0:
        return "no log_seq (a whole number)"
    if not isinstance(prev, str) or not _HEX64.match(prev):
        return "no log_prev (64 hexadecimal digits)"
    return _Line(body=raw[:at], marker=marker, tag=tag, seq=seq, prev=prev)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainReport:
    """What :func:`verify_chain` found in a chained audit log.

    Attributes:
        intact: no line was found edited, removed, inserted or reordered (see ``authenticated``).
        lines: the lines read, over every file.
        first_seq: the ``log_seq`` of the first line (not 0: the files given continue an earlier one).
        last_seq: the ``log_seq`` of the last line; a cut at the end shows only against a copy of it kept
            elsewhere.
        authenticated: every tag was recomputed (``False``: the lines carry HMACs and no key was given, so
            only the sequence and the links between lines were checked).
        problem: the first break found, naming the file, line and sequence; ``None`` when intact.
    """

    intact: bool
    lines: int
    first_seq: int | None
    last_seq: int | None
    authenticated: bool
    problem: str | None = None

    def summary(self) -> str:
        """One line: ``intact, N lines, last sequence S`` or the problem."""
        if self.problem is not None:
            return self.problem
        if self.lines == 0:
            return "intact, 0 lines"
        text = f"intact, {self.lines} lines, last sequence {self.last_seq}"
        if self.first_seq:
            text += f" (first sequence {self.first_seq}: the chain continues an earlier file, not checked)"
        return text


def _where(path: str, number: int, seq: int | None = None) -> str:
    return f"{path}: line {number}" + ("" if seq is None else f" (sequence {seq})")


def _lines(files: Sequence[tuple[str, bytes]]) -> Iterator[tuple[str, int, bytes]]:
    # Each line of each file (without its newline), one at a time: nothing beyond the files themselves is held.
    for name, content in files:
        start, number = 0, 1
        while (end := content.find(b"\n", start)) != -1:
            yield name, number, content[start:end]
            start, number = end + 1, number + 1


def _first_at(files: Sequence[tuple[str, bytes]], seq: int, after: int) -> tuple[str, int] | None:
    # Where sequence `seq` first appears after line index `after` (0-based over every file), or None. One more
    # pass over the log, run once: only when the chain is already broken there.
    for index, (name, number, raw) in enumerate(_lines(files)):
        if index > after:
            line = _parse_line(raw)
            if isinstance(line, _Line) and line.seq == seq:
                return name, number
    return None


def verify_chain(files: Sequence[tuple[str, bytes]], key: bytes | None = None) -> ChainReport:
    """Check the chain of one audit log's files, oldest first (``(name, content)`` pairs), and find its first break.

    A line is *edited* when its tag does not match its bytes (or, without a key, when the next line's
    ``log_prev`` does not match it); a line is *inserted* when its sequence appeared before, or when it is not
    signed under ``key``; lines are *reordered* when a sequence missing at one line turns up later; lines are
    *removed* when the sequence jumps ahead for good. With ``key=None`` a log of HMAC lines is checked for its
    sequence and links only (``authenticated=False``).

    One pass over the lines, holding one line at a time beside the files' contents (a second pass runs only to
    name a break): memory grows with the log's size, never with its square.
    """
    count = 0
    first_seq: int | None = None
    previous: _Line | None = None
    before: tuple[str, int] = ("", 0)
    authenticated = True
    for name, content in files:
        if content and not content.endswith(b"\n"):
            number = content.count(b"\n") + 1
            return ChainReport(
                intact=False, lines=count, first_seq=None, last_seq=None, authenticated=authenticated,
                problem=f"{_where(name, number)}: incomplete (no newline at the end): the file was cut mid-line",
            )

    def broken(problem: str) -> ChainReport:
        return ChainReport(
            intact=False, lines=count, first_seq=first_seq, last_seq=None if previous is None else previous.seq,
            authenticated=authenticated, problem=problem,
        )

    for index, (name, number, raw) in enumerate(_lines(files)):
        line = _parse_line(raw)
        if isinstance(line, str):
            return broken(f"{_where(name, number)}: not a chained line ({line}): edited or inserted")
        where = _where(name, number, line.seq)
        if key is None and line.marker == _HMAC_TAG:
            authenticated = False
        elif key is not None and line.marker == _SHA_TAG:
            return broken(f"{where}: tagged with plain SHA-256, not HMAC under the key: inserted or rewritten")
        elif not hmac.compare_digest(_tag(line.body, key), line.tag):
            how = "its SHA-256 does not match its content" if key is None else "its HMAC does not match"
            return broken(f"{where}: edited ({how}), or inserted{'' if key is None else ' without the key'}")
        if previous is None or first_seq is None:
            first_seq = line.seq
            if line.seq == 0 and line.prev != _GENESIS:
                return broken(f"{where}: the first line of the chain does not start it (log_prev is not zeros)")
        else:
            expected = previous.seq + 1
            if line.seq != expected:
                # Every sequence read so far is first_seq .. previous.seq, each once: the chain was whole until here.
                if first_seq <= line.seq <= previous.seq:
                    at_name, at_number = _first_at(files, line.seq, -1) or (name, number)
                    earlier = f"line {at_number}" + ("" if at_name == name else f" of {at_name}")
                    return broken(f"{where}: inserted: sequence {line.seq} appears twice, at {earlier} and here")
                if _first_at(files, expected, index) is not None:
                    return broken(
                        f"{where}: reordered: sequence {line.seq} comes where {expected} belongs, which comes later"
                    )
                if line.seq > expected:
                    gap = f"{expected}" if line.seq == expected + 1 else f"{expected} to {line.seq - 1}"
                    return broken(f"{where}: removed: sequence {gap} is missing before this line")
                return broken(
                    f"{where}: reordered: sequence {line.seq} comes after {previous.seq} "
                    f"(lines moved, or the files given out of order)"
                )
            if line.prev != previous.tag:
                return broken(
                    f"{_where(before[0], before[1], previous.seq)}: edited or replaced "
                    f"(the next line's log_prev does not match it)"
                )
        previous = line
        before = (name, number)
        count += 1
    return ChainReport(
        intact=True, lines=count, first_seq=first_seq, last_seq=None if previous is None else previous.seq,
        authenticated=authenticated,
    )
