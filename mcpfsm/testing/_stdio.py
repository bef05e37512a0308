"""The replay as a stdio MCP server (``mcpfsm replay PATH --stdio``): newline-delimited JSON-RPC on stdin and stdout.

Each line read is answered from the :class:`~mcpfsm._core.replay.ReplayBook` in a task of its own (a ``delay``
holds back that answer only), the recorded messages written one per line, whole lines at a time. Nothing but
answers ever goes to stdout; the ``READY`` line goes to stderr. End of input ends the server once the answers in
flight are written; a ``drop_after_request`` fault ends it at once, as a server process that went away.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Final

import trio

from .._core.constants import DEFAULT_MAX_RESPONSE_BYTES, PARSE_ERROR
from .._core.lines import LineFramer, OversizedLine
from .._core.replay import ANSWER_WAIT, ReplayBook, server_request_id
from .._log import logger

__all__ = ["run_stdio"]

_RECEIVE: Final = 65536


class _Dropped(Exception):
    """A fault dropped a request: the server goes away."""


async def run_stdio(
    book: ReplayBook,
    *,
    ready: Callable[[], None],
    stdin: trio.abc.ReceiveStream | None = None,
    stdout: trio.abc.SendStream | None = None,
) -> None:
    """Answer JSON-RPC lines from ``stdin`` (the process's own by default) on ``stdout`` until end of input."""
    source = stdin if stdin is not None else trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
    sink = stdout if stdout is not None else trio.lowlevel.FdStream(os.dup(sys.stdout.fileno()))
    framer = LineFramer(limit=DEFAULT_MAX_RESPONSE_BYTES)
    lock = trio.Lock()
    answered: dict[object, trio.Event] = {}
    ready()
    try:
        async with source, sink, trio.open_nursery() as nursery:
            async for chunk in source:
                for line in framer.feed(bytes(chunk)):
                    if isinstance(line, OversizedLine):
                        logger.warning("replay: a line of {} bytes was skipped", line.size)
                    elif line.strip():
                        nursery.start_soon(_answer, book, line, sink, lock, answered)
    except* _Dropped:
        logger.debug("replay: a request was dropped; the server goes away")


async def _answer(
    book: ReplayBook, line: bytes, sink: trio.abc.SendStream, lock: trio.Lock, answered: dict[object, trio.Event]
) -> None:
    try:
        message = json.loads(line)
    except ValueError:
        error = {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": "Parse error"}}
        await _write(sink, lock, [error])
        return
    if isinstance(message, dict) and "method" not in message and "id" in message:
        answered.setdefault(message["id"], trio.Event()).set()  # the client's answer to a recorded request
    answer = book.answer(message, None)
    logger.debug("replay: {} answered by {}", message.get("method") if isinstance(message, dict) else "?", answer.note)
    if answer.delay:
        await trio.sleep(answer.delay)
    if answer.drop:
        raise _Dropped
    for item in answer.messages:
        await _write(sink, lock, [item])
        request_id = server_request_id(item)
        if request_id is not None:
            # The recorded server waited for the client's answer before it went on: so does the replay.
            with trio.move_on_after(ANSWER_WAIT):
                await answered.setdefault(request_id, trio.Event()).wait()
            answered.pop(request_id, None)


async def _write(sink: trio.abc.SendStream, lock: trio.Lock, messages: list[object]) -> None:
    data = b"".join(json.dumps(item, ensure_ascii=False).encode() + b"\n" for item in messages)
    async with lock:
        await sink.send_all(data)
