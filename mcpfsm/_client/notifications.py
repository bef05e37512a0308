"""Fan-out of the server's notifications to the subscriptions that are open (``client.listen()``).

The session hands every notification to :meth:`NotificationHub.dispatch`; each open subscription
registered a listener that decides, without blocking, whether the notification is its own (a modern
``subscriptions/listen`` stream is told apart by ``_meta["io.modelcontextprotocol/subscriptionId"]``,
MCP 2026-07-28 "Subscriptions"). Listeners must not block: they put the notification on a buffered
channel or drop it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .._core.jsonrpc import Notification

__all__ = ["Listener", "NotificationHub"]

Listener = Callable[[Notification], None]
"""Receives each notification; must not block and must not raise."""


class NotificationHub:
    """The listeners of one session, in the order they were added."""

    __slots__ = ("_listeners",)

    def __init__(self) -> None:
        """No listeners yet."""
        self._listeners: list[Listener] = []

    def add(self, listener: Listener) -> None:
        """Register ``listener`` for the session's life (a client's task runs: ``notifications/tasks``)."""
        self._listeners.append(listener)

    @contextmanager
    def listening(self, listener: Listener) -> Iterator[None]:
        """Register ``listener`` for the duration of the ``with`` block."""
        self._listeners.append(listener)
        try:
            yield
        finally:
            self._listeners.remove(listener)

    def dispatch(self, message: Notification) -> None:
        """Hand ``message`` to every listener."""
        for listener in tuple(self._listeners):
            listener(message)
