"""Publishing audit events to ``on_event``, ``events()`` subscribers and loguru (docs/events.md).

Tool calls and authorization flows publish on the same bus (``event.machine`` tells them apart).

Delivery never blocks or breaks a call: ``on_event`` exceptions are logged and ignored, and each
``events()`` subscriber has a bounded buffer; when it is full the event is dropped for that
subscriber and one WARNING says so (a tool call never waits for a slow auditor).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Final

import trio

from .._core.events import CallEvent
from .._log import logger, loguru_imported

__all__ = ["DEFAULT_BUFFER", "AuditBus"]

_MODULES: Final = sys.modules

DEFAULT_BUFFER: Final = 1024
"""Events an ``events()`` subscriber may fall behind by before events are dropped for it."""


class AuditBus:
    """Fans each event (:class:`CallEvent`, and its subclass ``AuthEvent``) out to its sinks."""

    __slots__ = ("_dropped", "_on_event", "_subscribers", "observed", "redact", "server")

    def __init__(
        self,
        on_event: Callable[[CallEvent], object] | None = None,
        *,
        server: str | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        """Create a bus; ``on_event`` is called synchronously with every event.

        With ``server`` (a member of a ``ClientGroup``: its name in the configuration), every event published
        carries it in ``CallEvent.server``. ``redact`` takes the secrets of a client that holds credentials out
        of each event's error message.
        """
        self.server = server
        self._on_event = on_event
        self._subscribers: list[trio.MemorySendChannel[CallEvent]] = []
        self._dropped: dict[int, int] = {}
        self.redact = redact
        """Takes the client's secrets out of a text (``Secrets.text``), or ``None``: the client holds none.

        Every event's ``error`` message passes through it before any sink sees the event: the last net for a
        server's text that quotes a token (the errors of a message's trip are scrubbed before this already).
        """
        self.observed = on_event is not None
        """True when an ``on_event`` callback or an ``events()`` subscriber receives events.

        When it is False, loguru is the only sink and needs no :class:`CallEvent`: the driver
        calls :meth:`log` instead of building one. Kept up to date as subscribers come and go (every
        event of every call reads it).
        """

    def _unsubscribe(self, channel: trio.MemorySendChannel[CallEvent]) -> None:
        self._subscribers.remove(channel)
        self.observed = self._on_event is not None or bool(self._subscribers)

    def log(
        self,
        call_id: str,
        tool: str,
        previous: str | None,
        state: str,
        trigger: str | None,
        *,
        machine: str = "tool-call",
    ) -> None:
        """Log one transition at DEBUG with ``call_id`` bound: the loguru sink of :meth:`publish`."""
        if not loguru_imported():
            return
        if machine == "tool-call":
            logger.bind(call_id=call_id).debug("tool call {} {} -> {} ({})", tool, previous, state, trigger)
        else:
            logger.bind(call_id=call_id).debug("{} {} -> {} ({})", machine, previous, state, trigger)

    def publish(self, event: CallEvent) -> None:
        """Deliver ``event`` (a :class:`CallEvent` or an ``AuthEvent``) to every sink without blocking."""
        if self.server is not None and event.server is None:
            event = replace(event, server=self.server)
        error = event.error
        if error is not None and self.redact is not None:
            message = error.get("message")
            if isinstance(message, str) and (clean := self.redact(message)) != message:
                # A new mapping: the event's own may be shared; a frozen event takes it past __setattr__.
                object.__setattr__(event, "error", {**error, "message": clean})
        if "loguru" in _MODULES:
            # Before loguru is imported there is no sink for the record (what log checks first), and no call.
            self.log(event.call_id, event.tool, event.previous, event.state, event.trigger, machine=event.machine)
        on_event = self._on_event
        if on_event is not None:
            try:
                on_event(event)
            except Exception as exc:
                logger.warning("on_event callback raised {!r}; the call goes on", exc)
        if not self._subscribers:
            return
        for channel in tuple(self._subscribers):
            try:
                channel.send_nowait(event)
            except trio.WouldBlock:
                key = id(channel)
                self._dropped[key] = self._dropped.get(key, 0) + 1
                if self._dropped[key] == 1:
                    logger.warning("an events() subscriber is full; dropping events for it until it catches up")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._unsubscribe(channel)
            else:
                self._dropped.pop(id(channel), None)

    @asynccontextmanager
    async def subscribe(self, buffer: int = DEFAULT_BUFFER) -> AsyncIterator[trio.MemoryReceiveChannel[CallEvent]]:
        """Yield a receive channel of every event published while the context is open."""
        send, receive = trio.open_memory_channel[CallEvent](buffer)
        self._subscribers.append(send)
        self.observed = True
        try:
            async with receive:
                yield receive
        finally:
            if send in self._subscribers:
                self._unsubscribe(send)
            self._dropped.pop(id(send), None)
            send.close()
