"""A client's lifecycle: ``new`` → ``connecting`` → ``connected`` → ``closed``, with one handshake at a time.

Every public method of a client connects first, so the first uses of a client that was never entered may
come from several tasks at once. :class:`Lifecycle` runs one handshake for all of them (single flight, as
the catalog's relist): the first caller runs it (``connecting``), the others wait for its outcome.

- It succeeds: every waiter goes on, ``connected``.
- It fails: the waiters raise the same error, and the client is ``new`` again, so a later call (or
  ``connect()``) runs a fresh handshake: a server that was down is tried again. (``async with`` closes a
  client whose handshake failed instead; its block never runs.)
- The task running it is cancelled: that task's cancellation propagates, the client is ``new`` again, and
  one waiter runs the next handshake (the others wait for that one).
- The client is closed meanwhile: the handshake's outcome is discarded, the client stays ``closed``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from enum import Enum

import trio

from .._core.errors import TransportError

__all__ = ["Lifecycle", "Stage"]


class Stage(Enum):
    """Where a client is in its life."""

    new = "new"
    """Not connected: the next use runs the handshake."""
    connecting = "connecting"
    """A handshake is running; other uses wait for it."""
    connected = "connected"
    """The era is settled; requests go out."""
    closed = "closed"
    """Closed for good."""


class _Attempt:
    __slots__ = ("done", "error")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.error: Exception | None = None


class Lifecycle:
    """The stage of one client and the single flight of its handshake; see the module docstring.

    Args:
        handshake: opens the transport (once) and negotiates the era.
    """

    __slots__ = ("_attempt", "_handshake", "stage")

    def __init__(self, handshake: Callable[[], Awaitable[None]]) -> None:
        """Start ``new``; nothing runs until :meth:`connect`."""
        self._handshake = handshake
        self._attempt: _Attempt | None = None
        self.stage = Stage.new
        """The current :class:`Stage`."""

    async def connect(self) -> None:
        """Return once connected: run the handshake, or wait for the one running.

        Raises:
            TransportError: the client is closed.
            Exception: what the handshake raised (every task that waited for it gets the same error).
        """
        while True:
            if self.stage is Stage.connected:
                return
            if self.stage is Stage.closed:
                raise TransportError("the client is closed")
            attempt = self._attempt
            if attempt is None:
                await self._run()
                continue
            await attempt.done.wait()
            if attempt.error is not None:
                raise attempt.error
            # It succeeded (connected), the client closed meanwhile, or its task was cancelled: look again.

    async def _run(self) -> None:
        attempt = self._attempt = _Attempt()
        self.stage = Stage.connecting
        connected = False
        try:
            await self._handshake()
            connected = True
        except Exception as exc:
            attempt.error = exc
            raise
        finally:
            self._attempt = None
            if self.stage is Stage.connecting:
                self.stage = Stage.connected if connected else Stage.new
            attempt.done.set()

    def close(self) -> bool:
        """Mark the client closed; False when it already was."""
        if self.stage is Stage.closed:
            return False
        self.stage = Stage.closed
        return True
