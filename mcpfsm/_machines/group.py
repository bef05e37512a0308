"""The group machine: one member of a client group, from its configuration to its last status, as data.

:data:`GROUP` is the single definition. ``mcpfsm._client.members`` follows it (the shared driver's ``advance``:
a member is stepped by whoever uses it, by the watcher of its stdio child, and by ``reload``) and publishes one
:class:`~mcpfsm.MemberEvent` per status change; ``specs/group.*``, ``diagrams/group.svg`` and the walkthrough
``specs/group.md`` are generated from it. The states are the statuses ``ClientGroup.status`` reports.

A member starts ``idle``: nothing started, nothing connected. An eager member is ``opened`` when the group opens; a
lazy one is ``used`` first by a call routed to it, ``await group.client(name)`` or a listing that its known
listing cannot answer. Either way it is ``connecting`` (one connect, shared by every use that arrives meanwhile)
and then ``connected`` or ``failed``. A connected member fails when its stdio child exits (noticed when it
happens) or when a use finds its server gone (a refused connection, a session that cannot be renewed).

Two loops are declared. ``failed -> connecting`` (``retried``): the next use after the backoff window reconnects,
so a member reconnects at most once per window (``reconnect_backoff``, doubling to 60 s, reset by a success), or
an explicit ``group.reconnect(name)``. ``connected -> connecting`` (``reconnected``): one per explicit
``group.reconnect(name)``. ``disabled`` is terminal: ``reload`` removed the member, or changed it (the new
configuration starts a new member).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from .definition import CompiledMachine, Edge, define, edge

__all__ = ["COMPILED", "GROUP", "State", "Trigger"]


class State(StrEnum):
    """A member's status; names equal values, so ``State.idle == "idle"``."""

    idle = "idle"
    connecting = "connecting"
    connected = "connected"
    failed = "failed"
    disabled = "disabled"


class Trigger(StrEnum):
    """A fact that changes a member's status; names equal values, as for :class:`State`."""

    opened = "opened"
    used = "used"
    connected = "connected"
    refused = "refused"
    exited = "exited"
    broke = "broke"
    retried = "retried"
    reconnected = "reconnected"
    removed = "removed"


BACKOFF_BOUND: Final = "once per backoff window (1 s doubling to 60 s), or one group.reconnect()"
"""The bound of the reconnect loop, drawn on the diagram."""

_REMOVED: Final = "reload: the member is gone from the configuration, or changed"

_EDGES: Final[tuple[Edge[State, Trigger], ...]] = (
    edge(Trigger.opened, State.idle, State.connecting, "an eager member, when the group opens or reload adds it"),
    edge(Trigger.used, State.idle, State.connecting, "first use: a routed call, group.client(), a listing"),
    edge(Trigger.removed, State.idle, State.disabled, _REMOVED),
    edge(Trigger.connected, State.connecting, State.connected, "the transport opened and the era is settled"),
    edge(Trigger.refused, State.connecting, State.failed, "the connect failed or took longer than connect_timeout"),
    edge(Trigger.removed, State.connecting, State.disabled, _REMOVED),
    edge(Trigger.exited, State.connected, State.failed, "the stdio child exited"),
    edge(Trigger.broke, State.connected, State.failed, "a use found the server gone"),
    edge(Trigger.reconnected, State.connected, State.connecting, "group.reconnect(name)", "one per call"),
    edge(Trigger.removed, State.connected, State.disabled, _REMOVED),
    edge(Trigger.retried, State.failed, State.connecting, "a use after the backoff window", BACKOFF_BOUND),
    edge(Trigger.removed, State.failed, State.disabled, _REMOVED),
)
"""Every declared transition, in the order the diagrams draw them."""

_DESCRIPTIONS: Final[Mapping[State, str]] = {
    State.idle: (
        "Configured, not connected: no process started, no connection opened. A lazy member's tools come from its "
        "known listing while that is fresh."
    ),
    State.connecting: (
        "Start the stdio child or reach the HTTP server and settle the era (bounded by `connect_timeout`); every "
        "use that arrives meanwhile waits for this one connect."
    ),
    State.connected: (
        "Calls and listings go to the member's client; a complete listing is written to the store as its known "
        "listing; a stdio child is watched for its exit."
    ),
    State.failed: (
        "`group.errors` holds the last error; a use inside the backoff window fails at once with it, the next "
        "after it reconnects. No call the old session may have run is sent again."
    ),
    State.disabled: "Terminal: out of the group (`enabled: false`, or removed or changed by `reload`).",
}

GROUP: Final = define(
    "group", State, Trigger, _EDGES, _DESCRIPTIONS,
    title="One member of a client group: lazy connect, failure and reconnection",
    walkthrough="tooling.walkthrough_group",
)
"""The group machine (one member's statuses)."""

COMPILED: Final = CompiledMachine(GROUP)
""":data:`GROUP` with its transition table, read off a built ``transitions`` Machine."""
