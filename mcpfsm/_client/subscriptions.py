"""``client.listen()``: the server's change notifications, in both eras.

- **Modern** (MCP 2026-07-28 "Subscriptions"): one ``subscriptions/listen`` request whose response stream
  stays open. The server first sends ``notifications/subscriptions/acknowledged`` with the subset it
  honours, then only the notifications asked for, each stamped with
  ``_meta["io.modelcontextprotocol/subscriptionId"]`` = the listen request's id, by which several
  subscriptions are told apart. Closing the stream (HTTP) or ``notifications/cancelled`` (stdio) ends it;
  the server ends it gracefully with the listen result. A stream that breaks instead loses notifications
  that are never replayed, so the cached listings it covered are dropped and the error is raised.
- **Legacy** (MCP 2025-11-25 "Listening for Messages from the Server", "Resources" § Subscriptions): the
  ``list_changed`` notifications arrive unasked, usually on the standalone ``GET`` stream that the session
  keeps open from ``initialize`` on; ``resources/updated`` needs ``resources/subscribe`` per URI (and
  ``resources/unsubscribe`` at the end). What the server's capabilities do not offer is left out of
  :attr:`Subscription.acknowledged`, as a modern server would.

The subscription is an async iterator of :class:`~mcpfsm._core.jsonrpc.Notification` values; one that falls
``buffer`` notifications behind loses the newest with one WARNING instead of stalling the connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import trio

from .._core.constants import is_modern
from .._core.errors import McpError, ProtocolError, TransportError
from .._core.jsonrpc import Notification
from .._log import logger
from .session import Session

__all__ = ["Subscription", "listen"]

SUBSCRIPTION_ID_KEY: Final = "io.modelcontextprotocol/subscriptionId"
_ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
_LIST_CHANGED: Final = {
    "toolsListChanged": "notifications/tools/list_changed",
    "promptsListChanged": "notifications/prompts/list_changed",
    "resourcesListChanged": "notifications/resources/list_changed",
}
_UPDATED: Final = "notifications/resources/updated"
_UNSUBSCRIBE_SECONDS: Final = 5.0
_CACHED_BY_KIND: Final = {
    "toolsListChanged": "notifications/tools/list_changed",
    "promptsListChanged": "notifications/prompts/list_changed",
    "resourcesListChanged": "notifications/resources/list_changed",
}


class Subscription:
    """An open subscription: iterate it for the notifications asked for.

    Attributes:
        acknowledged: the subset of the requested notifications the server honours, in the wire shape
            (``{"toolsListChanged": true, "resourceSubscriptions": [...]}``).
        subscription_id: the modern subscription id (the listen request's JSON-RPC id); ``None`` in the
            legacy era.
    """

    __slots__ = ("_receive", "acknowledged", "subscription_id")

    def __init__(self, receive: trio.MemoryReceiveChannel[Notification], subscription_id: int | None) -> None:
        """Wrap the channel the subscription's notifications arrive on."""
        self._receive = receive
        self.acknowledged: dict[str, Any] = {}
        self.subscription_id = subscription_id

    def __aiter__(self) -> Subscription:
        """Iterate the notifications until the subscription ends."""
        return self

    async def __anext__(self) -> Notification:
        """The next notification; ends when the server ends the subscription gracefully."""
        try:
            return await self._receive.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None

    async def receive(self) -> Notification:
        """The next notification.

        Raises:
            trio.EndOfChannel: the server ended the subscription gracefully.
        """
        return await self._receive.receive()


def requested(
    *, tools: bool, prompts: bool, resources: bool, resource_uris: Sequence[str], task_ids: Sequence[str] = ()
) -> dict[str, Any]:
    """The ``notifications`` object of ``subscriptions/listen`` for these choices (only what is asked for)."""
    wanted: dict[str, Any] = {}
    if tools:
        wanted["toolsListChanged"] = True
    if prompts:
        wanted["promptsListChanged"] = True
    if resources:
        wanted["resourcesListChanged"] = True
    if resource_uris:
        wanted["resourceSubscriptions"] = list(resource_uris)
    if task_ids:
        # SEP-2663 "Notifications": notifications/tasks for these tasks.
        wanted["taskIds"] = list(task_ids)
    return wanted


@asynccontextmanager
async def listen(session: Session, wanted: dict[str, Any], *, buffer: int = 1024) -> AsyncIterator[Subscription]:
    """Open a subscription for ``wanted`` (see :func:`requested`) in the era in effect; see the module docstring.

    Raises:
        RpcError: the server refused the subscription (or a ``resources/subscribe``).
        TransportError: the subscription could not be opened, or its stream broke (modern).
        ProtocolError: the modern stream ended before its acknowledgement.
    """
    opened = _modern if is_modern(session.version) else _legacy
    try:
        async with opened(session, wanted, buffer) as subscription:
            yield subscription
    except BaseExceptionGroup as group:
        # The subscription's background task runs in a nursery; a caller expects the one error that ended
        # it (its own, or the stream's), as documented, not trio's group around it.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise


def _forwarder(send: trio.MemorySendChannel[Notification]) -> Any:
    warned = False

    def forward(message: Notification) -> None:
        nonlocal warned
        try:
            send.send_nowait(message)
        except trio.WouldBlock:
            if not warned:
                warned = True
                logger.warning("a subscription fell behind; notifications are being dropped")
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    return forward


@asynccontextmanager
async def _modern(session: Session, wanted: dict[str, Any], buffer: int) -> AsyncIterator[Subscription]:
    send, receive = trio.open_memory_channel[Notification](buffer)
    request_id = session.reserve_id()
    subscription = Subscription(receive, request_id)
    forward = _forwarder(send)
    ready = trio.Event()
    acknowledged = False

    def listener(message: Notification) -> None:
        nonlocal acknowledged
        meta = message.params.get("_meta")
        if not isinstance(meta, dict) or meta.get(SUBSCRIPTION_ID_KEY) != request_id:
            return
        if message.method == _ACKNOWLEDGED:
            honoured = message.params.get("notifications")
            subscription.acknowledged = honoured if isinstance(honoured, dict) else {}
            acknowledged = True
            ready.set()
        elif acknowledged:
            forward(message)

    async def run() -> None:
        try:
            await session.exchange("subscriptions/listen", {"notifications": wanted}, request_id=request_id)
        except TransportError:
            # No replay after a drop (MCP 2026-07-28 "Subscriptions"): what it covered may be stale.
            if session.cache is not None:
                for kind, notification in _CACHED_BY_KIND.items():
                    if kind in wanted:
                        session.cache.invalidate(notification)
                if "resourceSubscriptions" in wanted:
                    session.cache.forget("resources/read")
            raise
        # A graceful end (the listen's result): the iteration ends. After an error the block is cancelled
        # instead, so that the error alone propagates.
        send.close()
        ready.set()

    with session.hub.listening(listener):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await ready.wait()
            if not acknowledged:
                raise ProtocolError("the server ended subscriptions/listen before acknowledging it")
            try:
                yield subscription
            finally:
                nursery.cancel_scope.cancel()


@asynccontextmanager
async def _legacy(session: Session, wanted: dict[str, Any], buffer: int) -> AsyncIterator[Subscription]:
    send, receive = trio.open_memory_channel[Notification](buffer)
    subscription = Subscription(receive, None)
    forward = _forwarder(send)
    capabilities = session.server_capabilities
    honoured: dict[str, Any] = {}
    for kind, capability in (("toolsListChanged", "tools"), ("promptsListChanged", "prompts"),
                             ("resourcesListChanged", "resources")):
        offered = capabilities.get(capability)
        if kind in wanted and isinstance(offered, dict) and offered.get("listChanged") is True:
            honoured[kind] = True
    uris: list[str] = []
    offered = capabilities.get("resources")
    if wanted.get("resourceSubscriptions") and isinstance(offered, dict) and offered.get("subscribe") is True:
        uris = list(wanted["resourceSubscriptions"])
        honoured["resourceSubscriptions"] = uris
    subscription.acknowledged = honoured
    methods = {_LIST_CHANGED[kind] for kind in honoured if kind in _LIST_CHANGED}

    def listener(message: Notification) -> None:
        if message.method in methods or (message.method == _UPDATED and uris):
            forward(message)

    with session.hub.listening(listener):
        subscribed: list[str] = []
        try:
            for uri in uris:
                await session.request("resources/subscribe", {"uri": uri})
                subscribed.append(uri)
            yield subscription
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(_UNSUBSCRIBE_SECONDS):
                for uri in subscribed:
                    try:
                        await session.request("resources/unsubscribe", {"uri": uri})
                    except McpError as exc:
                        logger.debug("could not unsubscribe from {!r}: {}", uri, exc)
            send.close()

