"""One request and its response head on one connection (as httpcore's ``http11.py``); framing is :mod:`mcpfsm._core.h1`.

Each request is one write (head and body together). One timeout block covers the write and the wait for the
head: its deadline is the write timeout while writing, then the read timeout from the start of each wait for
more bytes. A *resendable* request (one the caller marks read-only) that fails on a *reused* connection before
any byte of the response arrived raises :class:`~.errors.Stale` (the pool sends it once more on a fresh
connection: the server closing an idle connection while the request was on its way is a normal keep-alive
race); any other request is never resent once its first byte was written (RFC 9110 §9.2.2: the server may
have acted on it, and a tool call may have side effects): the failure raises :class:`~.errors.NotResent`.
"""

from __future__ import annotations

import math
from typing import Final

import trio

from ..._core.h1 import H1Error, ResponseReader
from .connection import Connection, PlainStream
from .errors import NotResent, Stale, WireTimeout
from .interfaces import RECEIVE_BYTES, Timeouts

__all__ = ["exchange", "receive"]

# A Content-Length body this small that did not come with its head (servers often write the head and the
# body separately) is waited for in the exchange's own timeout block, not in one of its own.
_PREFETCH_BYTES: Final = 16384


async def exchange(
    connection: Connection,
    data: bytes,
    method: str,
    timeouts: Timeouts,
    now: float,
    *,
    reused: bool,
    resendable: bool,
    prefetch: bool,
) -> tuple[ResponseReader, BaseException | None]:
    """Write the request ``data`` on ``connection`` and read the response head; see the module docstring.

    ``now`` is the time on trio's clock when the exchange starts (the pool has just read it, checking the
    connection out).

    Returns the reader (the head read, maybe part of the body) and what the wait for the rest of a small body
    raised (handed to the reply, which raises it where the body is read).

    Raises:
        Stale: ``reused`` and ``resendable``, and the connection failed before any byte of the answer.
        NotResent: ``reused``, not ``resendable``, and the connection failed before any byte of the answer.
        WireTimeout: the write or a wait for the head took longer than its timeout.
        H1Error, OSError, trio.BrokenResourceError: the exchange failed.
    """
    # One timeout block for the write and the wait for the head: its deadline is the write timeout
    # while writing, then the read timeout from the start of each wait for more bytes. The block is the
    # connection's Deadline on a plain connection (hot path, bench/instructions.py: a few attribute stores,
    # where a cancel scope cost more than the rest of the exchange), a cancel scope on any other; both end
    # the block when the deadline passes, and the code after it says which timeout it was. On a plain
    # connection the request usually fits in the socket buffer and goes out before the block, without a
    # wait: the block then starts with the read deadline. Hot path (bench/instructions.py): the rest of a
    # small Content-Length body is waited for in the same block; what that wait raises is handed to the reply,
    # which raises it where the body is read (see WireReply).
    reader = ResponseReader(method)
    stream = connection.stream
    send_error: BaseException | None = None
    sent = 0
    if type(stream) is PlainStream:
        await trio.lowlevel.checkpoint_if_cancelled()  # a cancelled request is never sent
        try:
            sent = stream.send_nowait(data)
        except trio.BrokenResourceError as exc:
            send_error = _send_failed(connection, exc, reused=reused, resendable=resendable)
            sent = len(data)
    writing = sent < len(data)
    waiting = "WriteTimeout" if writing else "ReadTimeout"
    deadline = now + (timeouts.write if writing else timeouts.read)
    timer = connection.deadline
    with trio.CancelScope(deadline=deadline) if timer is None else timer.arm(deadline) as scope:
        if writing:
            try:
                await stream.send_all(memoryview(data)[sent:] if sent else data)
            except (OSError, trio.BrokenResourceError) as exc:
                send_error = _send_failed(connection, exc, reused=reused, resendable=resendable)
            waiting = "ReadTimeout"
            scope.deadline = trio.current_time() + timeouts.read
        try:
            first = stream.receive_answer if type(stream) is PlainStream else stream.receive_some
            reader.receive(await first(RECEIVE_BYTES))
            while (head := reader.read_head()) is None:
                scope.deadline = trio.current_time() + timeouts.read
                reader.receive(await stream.receive_some(RECEIVE_BYTES))
        except (OSError, trio.BrokenResourceError, H1Error) as exc:
            if reused and not reader.received:
                if resendable:
                    raise Stale from exc
                # RFC 9110 §9.2.2: the server may have read and acted on the request before the
                # connection broke; only the caller may decide to send it again.
                raise NotResent(
                    "the server closed a kept-alive connection without answering; the request was not"
                    " resent because the server may have acted on it (RFC 9110 §9.2.2)"
                ) from exc
            if send_error is not None:
                raise send_error from None
            raise
        if not prefetch or not 200 <= head.status < 300:
            return reader, None
        waiting = "body"
        try:
            while 0 < reader.missing <= _PREFETCH_BYTES:
                scope.deadline = trio.current_time() + timeouts.read
                reader.receive(await stream.receive_some(RECEIVE_BYTES))
        except (OSError, trio.BrokenResourceError) as exc:
            return reader, exc
        return reader, None
    # Only the deadline can end the block without a return or an exception: an outer cancellation propagates.
    if waiting == "body":
        return reader, WireTimeout("ReadTimeout", timeouts.read)
    raise WireTimeout(waiting, timeouts.write if waiting == "WriteTimeout" else timeouts.read)


def _send_failed(connection: Connection, exc: BaseException, *, reused: bool, resendable: bool) -> BaseException:
    # What a failed write means: a stale kept-alive connection (resend), or a server that stopped reading.
    if reused and resendable:
        raise Stale from exc
    # The server may have answered before it stopped reading (413, 431): read the answer,
    # but never write on this connection again.
    connection.writable = False
    return exc


async def receive(connection: Connection, timeout: float) -> bytes | bytearray:
    """More bytes of a response on ``connection``, each wait bounded by ``timeout`` (``math.inf``: unbounded).

    Raises:
        WireTimeout: no byte came within ``timeout``.
        OSError, trio.BrokenResourceError: the connection broke.
    """
    if timeout == math.inf:
        return await connection.stream.receive_some(RECEIVE_BYTES)
    deadline = trio.current_time() + timeout
    timer = connection.deadline
    with trio.CancelScope(deadline=deadline) if timer is None else timer.arm(deadline):
        return await connection.stream.receive_some(RECEIVE_BYTES)
    # Only the deadline can end the block without a return: an outer cancellation propagates.
    raise WireTimeout("ReadTimeout", timeout)
