"""The tool-call machine: one ``tools/call`` and its ``-32020`` recovery, as data.

:data:`TOOL_CALL` is the single definition. The driver (``mcpfsm._drivers.tool_call``) steps through
:data:`COMPILED`; the diagrams in ``specs/tool-call.*`` and ``diagrams/tool-call.svg`` and the
walkthrough ``specs/tool-call.md`` are generated from it.

The -32020 recovery follows SEP-2243 ("HTTP Header Standardization", MCP 2026-07-28): a server that
finds the ``Mcp-Param-*`` headers inconsistent with the body answers -32020 (HeaderMismatch), and a
client whose listing was stale re-lists and retries. Concurrent calls share one relist (``joined``:
a call whose stale request was sent before a relist completed uses that relist's catalog).
``retrying`` is a state of its own with no edge back to ``relisting``, so a call makes at most one
extra ``tools/list`` and one extra ``tools/call``: the bound holds by construction and shows in the
diagram.

Pure: no I/O; imports neither trio, httpx nor loguru.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from .definition import CompiledMachine, Edge, MachineDefinition

__all__ = [
    "COMPILED",
    "EDGES",
    "INITIAL",
    "STATES",
    "TERMINAL",
    "TOOL_CALL",
    "State",
    "Trigger",
]


class State(StrEnum):
    """A state of one tool call; each member's name equals its value, so ``State.sending == "sending"``."""

    resolving = "resolving"
    planning = "planning"
    sending = "sending"
    relisting = "relisting"
    comparing = "comparing"
    retrying = "retrying"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"


class Trigger(StrEnum):
    """A fact the driver reports to leave a state; names equal values, as for :class:`State`."""

    resolved = "resolved"
    planned = "planned"
    unmirrorable = "unmirrorable"
    answered = "answered"
    mismatched = "mismatched"
    errored = "errored"
    relisted = "relisted"
    joined = "joined"
    vanished = "vanished"
    relist_failed = "relist_failed"
    changed = "changed"
    unchanged = "unchanged"
    cancelled = "cancelled"


STATES: Final[tuple[State, ...]] = tuple(State)
"""Every state, in table order: each forward edge leads further down it."""

INITIAL: Final = State.resolving
"""The state every call starts in."""

TERMINAL: Final[frozenset[State]] = frozenset({State.succeeded, State.failed, State.cancelled})
"""States that accept no trigger: the call has ended."""


def _edge(trigger: Trigger, source: State, dest: State, guard: str) -> Edge[State, Trigger]:
    return Edge(trigger=trigger, source=source, dest=dest, guard=guard)


EDGES: Final[tuple[Edge[State, Trigger], ...]] = (
    _edge(Trigger.resolved, State.resolving, State.planning, "definition chosen"),
    _edge(Trigger.planned, State.planning, State.sending, "headers planned"),
    _edge(Trigger.unmirrorable, State.planning, State.failed, "MirroringError"),
    _edge(Trigger.answered, State.sending, State.succeeded, "result"),
    _edge(Trigger.mismatched, State.sending, State.relisting, "-32020 HeaderMismatch"),
    _edge(Trigger.errored, State.sending, State.failed, "any other error"),
    _edge(Trigger.relisted, State.relisting, State.comparing, "tool found"),
    # Single flight: concurrent -32020s share one relist; the calls that did not start it say so.
    _edge(Trigger.joined, State.relisting, State.comparing, "tool found in another call's relist"),
    _edge(Trigger.vanished, State.relisting, State.failed, "tool gone from listing"),
    _edge(Trigger.relist_failed, State.relisting, State.failed, "tools/list failed"),
    _edge(Trigger.changed, State.comparing, State.retrying, "fresh plan differs"),
    _edge(Trigger.unchanged, State.comparing, State.failed, "same plan"),
    # The fresh schema may make the same arguments unmirrorable: the -32020 is raised, with the cause.
    _edge(Trigger.unmirrorable, State.comparing, State.failed, "fresh plan fails"),
    _edge(Trigger.answered, State.retrying, State.succeeded, "result"),
    # A second -32020 is not recovered from, so the machine stays acyclic.
    _edge(Trigger.mismatched, State.retrying, State.failed, "second -32020"),
    _edge(Trigger.errored, State.retrying, State.failed, "any other error"),
    *(
        _edge(Trigger.cancelled, state, State.cancelled, "trio cancellation")
        for state in STATES
        if state not in TERMINAL
    ),
)
"""Every declared transition, in the order the diagrams draw them."""

_DESCRIPTIONS: Final[Mapping[State, str]] = MappingProxyType(
    {
        State.resolving: (
            "Pick the definition to mirror from: for a `Tool` handle, the newest definition of that name the "
            "client has listed; for a plain name, none."
        ),
        State.planning: (
            "Compute the header plan (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, one `Mcp-Param-*` per "
            "annotated argument present) from the definition and the arguments."
        ),
        State.sending: "POST `tools/call` with the plan.",
        State.relisting: (
            "Fetch a full, uncached `tools/list` (every page) and find the tool by exact name; a relist that "
            "another call started, or that completed after this call's request was sent, is joined instead."
        ),
        State.comparing: "Plan the same arguments against the fresh definition and compare with the plan sent.",
        State.retrying: "POST `tools/call` once more, with the fresh plan (`attempt` becomes 2).",
        State.succeeded: "Terminal: `call()` returns the `ToolResult`.",
        State.failed: "Terminal: `call()` raises the error recorded in the last event.",
        State.cancelled: "Terminal: the trio cancellation propagates; the client stays usable.",
    }
)

TOOL_CALL: Final = MachineDefinition(
    name="tool-call",
    title="One tool call: lifecycle and -32020 recovery",
    states=STATES,
    triggers=tuple(Trigger),
    initial=INITIAL,
    terminal=TERMINAL,
    edges=EDGES,
    descriptions=_DESCRIPTIONS,
    cancel_trigger=Trigger.cancelled,
)
"""The tool-call machine."""

COMPILED: Final = CompiledMachine(TOOL_CALL)
""":data:`TOOL_CALL` with its transition table, read off a built ``transitions`` Machine."""
