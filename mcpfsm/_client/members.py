"""One member of a client group: its status, its one connect at a time, its backoff and the watch on its child.

A :class:`Member` follows the group machine (``mcpfsm._machines.group``, specs/group.md) with the shared driver's
``advance`` (it is the run: facts reported by its uses, its connect, its child's watch and ``reload``, as the
task tracker's are by its waiters), and publishes one :class:`~mcpfsm.MemberEvent` per status change through its
group (a :class:`GroupPort`):

- **one connect at a time**: a use of an ``idle`` member (or of a ``failed`` one whose backoff window is over)
  starts the connect in a task of the group's own, and every use waits for its outcome: concurrent first uses
  share one connect, and a caller that is cancelled stops waiting without cancelling the connect (the others
  still get it). A connect is bounded by the group's ``connect_timeout``.
- **backoff**: a member that became ``failed`` is reconnected by the first use after its window (the group's
  ``reconnect_backoff`` in seconds, doubled after each failure that follows another without a success between,
  at most :data:`MAX_BACKOFF`); a use inside the window raises the member's last error at once.
- **noticing a failure**: a stdio member's child is watched (``StdioTransport.wait_ended``), so its exit makes the
  member ``failed`` when it happens; an HTTP member fails at a use whose error says the server is gone
  (:func:`server_gone`). Nothing is ever resent here: the call that met the failure raises it, and only the next
  use reconnects (MCP 2025-11-25 "Transports", and RFC 9110 §9.2.2: a call the old session may have run is
  never sent again).

The connect and the watch are trio system tasks (``mcpfsm._transports.background``), as a client's readers are:
a group is entered and closed by its caller and cannot hold a nursery open between the two.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final, Literal, Protocol, cast

import trio

from .._core.errors import CallTimeoutError, McpError, SessionExpired, TransportError
from .._core.events import error_summary, utc_timestamp
from .._core.events.group import MemberEvent
from .._drivers.driver import advance
from .._log import logger
from .._machines.group import COMPILED, State, Trigger
from .._transports.background import BackgroundTask, BackgroundTasks

if TYPE_CHECKING:
    from .._core.config import ServerConfig
    from .._core.known_listings import KnownListing
    from .._transports.base import Transport
    from .client import Client

__all__ = ["DEFAULT_BACKOFF", "MAX_BACKOFF", "GroupPort", "Member", "Status", "member_event", "server_gone"]

Status = Literal["idle", "connecting", "connected", "failed", "disabled"]
"""What :attr:`ClientGroup.status <mcpfsm.ClientGroup.status>` says of a member (the group machine's states)."""

DEFAULT_BACKOFF: Final = 1.0
"""Seconds of a member's first backoff window after it failed (``ClientGroup(reconnect_backoff=...)``)."""
MAX_BACKOFF: Final = 60.0
"""The longest backoff window (unless ``reconnect_backoff`` itself is longer)."""


class GroupPort(Protocol):
    """What a member needs of its group: a narrow port, no import of the group."""

    @property
    def connect_timeout(self) -> float: ...
    @property
    def reconnect_backoff(self) -> float: ...
    @property
    def tasks(self) -> BackgroundTasks: ...
    @property
    def closed(self) -> bool: ...

    def client_for(self, server: ServerConfig) -> Client:
        """A new, unconnected client for ``server``."""
        ...

    def scrub(self, member: Member, error: BaseException) -> BaseException:
        """``error`` with the member's secrets taken out (the group's rule)."""
        ...

    def publish(self, member: Member, status: str, previous: str, trigger: str, error: BaseException | None) -> None:
        """Publish the member's change of status on the group's channels."""
        ...

    async def settled(self, member: Member, client: Client) -> None:
        """The member connected: what the group does then (a known listing of another era is discarded)."""
        ...


class Member:
    """One server of a group's configuration: its client while connected, its status and last error.

    Args:
        config: the server's configuration.
        lazy: connect on first use (else when the group opens).
        group: the group's port.
    """

    __slots__ = (
        "_failed_at",
        "_failures",
        "_group",
        "_outcome",
        "_watch",
        "attempts",
        "client",
        "config",
        "error",
        "known",
        "lazy",
        "status",
        "store_key",
        "written",
    )

    def __init__(self, config: ServerConfig, *, lazy: bool, group: GroupPort) -> None:
        """Start ``idle`` (``disabled`` when the configuration disables the server); nothing connects."""
        self.config = config
        self.lazy = lazy
        self._group = group
        self.status: Status = "idle" if config.enabled else "disabled"
        self.client: Client | None = None
        """The connected client, ``None`` unless ``connected``."""
        self.error: BaseException | None = None
        """The last error, while ``failed``."""
        self.attempts = 0
        """Connects started so far."""
        self.known: KnownListing | None = None
        """The member's known listing as last read or written (``mcpfsm._client.known``)."""
        self.written = 0
        """``Catalog.listings`` of the client when its listing was last written as the known one."""
        self.store_key: str | None = None
        """The store key of its known listing, once computed (``mcpfsm._client.known``)."""
        self._outcome: trio.Event | None = None
        self._watch: BackgroundTask | None = None
        self._failed_at = 0.0
        self._failures = 0

    @property
    def name(self) -> str:
        """The server's name in the configuration."""
        return self.config.name

    # --- uses ---------------------------------------------------------------------------------------

    def backoff_left(self) -> float:
        """Seconds until a use may reconnect a ``failed`` member (0 when it may now, or it is not failed)."""
        if self.status != "failed":
            return 0.0
        return max(0.0, self._failed_at + self._window() - trio.current_time())

    def _window(self) -> float:
        first = self._group.reconnect_backoff
        return min(first * 2.0 ** min(self._failures - 1, 32), max(MAX_BACKOFF, first))

    async def ready(self) -> Client:
        """The member's connected client: a use, which connects an ``idle`` member or reconnects a ``failed`` one.

        A ``failed`` member is reconnected only once its backoff window is over; inside it, its last error is
        raised at once. A connect already running is waited for, not repeated. At most one connect per call.

        Raises:
            McpError: the group is closed, or the member is disabled.
            Exception: the connect's error (every use that waited for it gets the same), or the last error.
        """
        if self._group.closed:
            raise McpError("the client group is closed")
        if self.status == "idle":
            self.start(Trigger.used)
        elif self.status == "failed" and self.backoff_left() == 0.0:
            self.start(Trigger.retried)
        if self._outcome is not None:
            await self._outcome.wait()
        if self.status == "connected" and self.client is not None:
            return self.client
        raise self._unusable()

    def _unusable(self) -> BaseException:
        if self.status == "failed" and self.error is not None:
            return self.error.with_traceback(None)
        if self._group.closed:
            return McpError("the client group is closed")
        return McpError(f"server {self.name!r} is {self.status}")

    def start(self, trigger: Trigger) -> None:
        """Start a connect on ``trigger`` (``opened``, ``used``, ``retried``, ``reconnected``); uses wait for it.

        Raises:
            InvalidTransition: the member's status has no such edge (a bug of the caller).
        """
        self.attempts += 1
        self._change(trigger)
        outcome = self._outcome = trio.Event()
        self._group.tasks.start(
            lambda: self._connect(outcome), name=f"mcpfsm group connect {self.name}", on_error=self._crashed
        )

    async def opened(self) -> None:
        """Wait for the connect in progress, if any (the group's eager open)."""
        if self._outcome is not None:
            await self._outcome.wait()

    async def _connect(self, outcome: trio.Event) -> None:
        group = self._group
        client: Client | None = None
        error: BaseException | None = None
        try:
            try:
                client = group.client_for(self.config)
                with trio.fail_after(group.connect_timeout):
                    await client.connect()
            except trio.TooSlowError:
                error = TransportError(f"server {self.name!r} did not connect within {group.connect_timeout:g} s")
            except Exception as exc:  # whatever one member raises fails that member, never the group
                error = exc
            if error is not None or group.closed or self.status != "connecting":
                if client is not None:
                    await client.aclose()
                if error is not None and self.status == "connecting":
                    self._fail(Trigger.refused, error)
                    logger.warning("server {!r} of the group failed to connect: {}", self.name, self.error)
                return
            assert client is not None
            self.client = client
            self._failures = 0
            self.written = 0
            self._change(Trigger.connected)
            self._watch_child(client)
        except BaseException:
            # Cancelled with the group: the client it made is closed (shielded, bounded) and nobody waits.
            if client is not None and self.client is not client:
                with trio.CancelScope(shield=True):
                    await client.aclose()
            raise
        finally:
            if self._outcome is outcome:
                self._outcome = None
            outcome.set()
        await group.settled(self, client)

    def _crashed(self, error: Exception) -> None:
        logger.error("the connect of server {!r} failed unexpectedly: {!r}", self.name, error)

    def _watch_child(self, client: Client) -> None:
        transport = client.transport
        wait_ended = getattr(transport, "wait_ended", None)
        if wait_ended is None:
            return

        async def watch() -> None:
            error = await wait_ended()
            if self.client is client and self.status == "connected":
                self.client = None
                self._fail(Trigger.exited, error)
                logger.warning("server {!r} of the group exited: {}", self.name, self.error)
                await client.aclose()

        self._watch = self._group.tasks.start(watch, name=f"mcpfsm group watch {self.name}", on_error=self._crashed)

    # --- failures -----------------------------------------------------------------------------------

    def _fail(self, trigger: Trigger, error: BaseException) -> None:
        self.error = self._group.scrub(self, error)
        self._failures += 1
        self._failed_at = trio.current_time()
        self._change(trigger)

    async def broke(self, client: Client, error: BaseException) -> bool:
        """A use of ``client`` raised ``error``: when it says the server is gone, the member is ``failed``.

        Returns whether it did. The client is closed then; the call that met the error is not sent again.
        """
        if self.client is not client or self.status != "connected" or not server_gone(client.transport, error):
            return False
        self.client = None
        await self._stop_watching()
        # A child that ended: what its watcher would report a moment later.
        self._fail(Trigger.exited if hasattr(client.transport, "ended") else Trigger.broke, error)
        logger.warning("server {!r} of the group failed: {}", self.name, self.error)
        await client.aclose()
        return True

    async def _stop_watching(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            await watch.aclose()

    # --- closing ------------------------------------------------------------------------------------

    async def reconnect(self) -> None:
        """Close the client if connected and connect again now, whatever the backoff (``group.reconnect``)."""
        if self.status == "connecting":
            await self.opened()
            return
        if self.status == "connected":
            client, self.client = self.client, None
            await self._stop_watching()
            if client is not None:
                await client.aclose()
            self.start(Trigger.reconnected)
        elif self.status == "idle":
            self.start(Trigger.used)
        elif self.status == "failed":
            self.start(Trigger.retried)
        await self.opened()

    async def close(self, *, removed: bool = False) -> None:
        """Close the member's client (the group is closing, or ``reload`` removed or changed the member).

        With ``removed``, the member is ``disabled`` (one event), and a connect still running ends without use.
        """
        if removed and self.status != "disabled":
            self._change(Trigger.removed)
        client, self.client = self.client, None
        await self._stop_watching()
        if client is not None:
            await client.aclose()

    def _change(self, trigger: Trigger) -> None:
        # The shared driver's step: the declared edge or InvalidTransition, then entered() publishes.
        advance(COMPILED, self, State(self.status), trigger)

    def entered(self, state: str, previous: str | None, trigger: str | None) -> None:
        """The member's status changed (the driver's ``Run``): publish it, with the last error on ``failed``."""
        self.status = cast(Status, str(state))  # the machine's states are the statuses, as plain strings
        assert previous is not None and trigger is not None  # a member's run never publishes its initial state
        self._group.publish(self, self.status, previous, str(trigger), self.error if state == "failed" else None)


def member_event(
    member: Member, seq: int, status: str, previous: str, trigger: str, error: BaseException | None, elapsed: float
) -> MemberEvent:
    """The :class:`~mcpfsm.MemberEvent` of one change of ``member``'s status."""
    return MemberEvent(
        seq=seq,
        state=status,
        status=status,
        previous=previous,
        trigger=trigger,
        attempt=member.attempts,
        at=utc_timestamp(time.time_ns()),
        elapsed=elapsed,
        error=None if error is None else error_summary(error),
        server=member.name,
    )


def server_gone(transport: Transport, error: BaseException) -> bool:
    """Whether ``error``, raised by a request on ``transport``, says that the server is gone.

    A child process (a transport with ``ended``) is gone when it ended. Over HTTP: a refused or timed-out
    connection, a connection that broke (a reset, a kept-alive connection the server dropped), or a legacy session
    that expired again after its renewal; not a read timeout, an HTTP status, a limit or a call timeout, after
    which the same client goes on.
    """
    ended = getattr(transport, "ended", None)
    if isinstance(ended, bool):
        return ended
    if isinstance(error, SessionExpired):
        return True
    if not isinstance(error, TransportError) or isinstance(error, CallTimeoutError) or error.status is not None:
        return False
    cause = error.__cause__
    if not isinstance(cause, Exception):
        return False
    from .._transports.http.errors import is_break  # an HTTP member: the stack is imported already
    from .._transports.pool import WireTimeout
    from .._transports.pool.errors import ConnectError, NotResent

    if isinstance(cause, WireTimeout):
        return cause.kind == "ConnectTimeout"
    if isinstance(cause, ConnectError | NotResent):
        return True
    return _httpx_connect_failed(cause) or is_break(cause)


def _httpx_connect_failed(cause: Exception) -> bool:
    import sys

    httpx = sys.modules.get("httpx")
    return httpx is not None and isinstance(cause, httpx.ConnectError | httpx.ConnectTimeout)

