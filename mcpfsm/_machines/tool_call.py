"""The tool-call machine: one ``tools/call``, its input rounds and its ``-32020`` recovery, as data.

:data:`TOOL_CALL` is the single definition. The driver (``mcpfsm._drivers.tool_call``) steps through
:data:`COMPILED`; the diagrams in ``specs/tool-call.*`` and ``diagrams/tool-call.svg`` and the
walkthrough ``specs/tool-call.md`` are generated from it.

The -32020 recovery follows SEP-2243 ("HTTP Header Standardization", MCP 2026-07-28): a server that
finds the ``Mcp-Param-*`` headers inconsistent with the body answers -32020 (HeaderMismatch), and a
client whose listing was stale re-lists and retries. Concurrent calls share one relist (``joined``:
a call whose stale request was sent before a relist completed uses that relist's catalog).
``retrying`` is a state of its own with no edge back to ``relisting``, so a call makes at most one
extra ``tools/list`` and one extra retry: the bound holds by construction and shows in the diagram.

Input rounds follow SEP-2322 ("Multi Round-Trip Requests"): a result with ``resultType:
"input_required"`` sends the call to ``awaiting_input`` (the handlers answer the input requests) and
then ``resending`` (the same call, a new JSON-RPC id, ``inputResponses`` and the echoed
``requestState``), which may be asked for input again. That is the machine's only cycle, a declared
loop edge bounded by ``max_input_rounds``. The loop exists twice, once before the recovery and once
after ``retrying`` (``retry_awaiting_input``, ``retry_resending``), because a -32020 may arrive on a
resend: before the retry it leads to ``relisting`` (the retry then resends that round's answers), after
it to ``failed``. With one shared copy the recovery would sit inside the loop and could run again; with
two, the recovery stays acyclic and every edge but the two loop edges leads down :data:`STATES`. The
round count is per call, shared by both copies.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from .definition import CompiledMachine, Edge, define, edge
from .input_loop import EXHAUSTED, GATHERED, INPUT_FAILED, INPUT_REQUIRED, ROUND_BOUND

__all__ = ["COMPILED", "EDGES", "INITIAL", "STATES", "TERMINAL", "TOOL_CALL", "State", "Trigger"]


class State(StrEnum):
    """A state of one tool call; each member's name equals its value, so ``State.sending == "sending"``."""

    resolving = "resolving"
    planning = "planning"
    sending = "sending"
    awaiting_input = "awaiting_input"
    resending = "resending"
    relisting = "relisting"
    comparing = "comparing"
    retrying = "retrying"
    retry_awaiting_input = "retry_awaiting_input"
    retry_resending = "retry_resending"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"


class Trigger(StrEnum):
    """A fact the driver reports to leave a state; names equal values, as for :class:`State`."""

    resolved = "resolved"
    planned = "planned"
    unmirrorable = "unmirrorable"
    answered = "answered"
    input_required = "input_required"
    mismatched = "mismatched"
    errored = "errored"
    gathered = "gathered"
    input_failed = "input_failed"
    rounds_exhausted = "rounds_exhausted"
    relisted = "relisted"
    joined = "joined"
    vanished = "vanished"
    relist_failed = "relist_failed"
    changed = "changed"
    unchanged = "unchanged"
    cancelled = "cancelled"


def _input_loop(awaiting: State, resending: State) -> tuple[Edge[State, Trigger], ...]:
    # One copy of the SEP-2322 input loop (there are two: before the -32020 recovery and after `retrying`).
    return (
        edge(Trigger.gathered, awaiting, resending, GATHERED),
        edge(Trigger.input_failed, awaiting, State.failed, INPUT_FAILED),
        edge(Trigger.answered, resending, State.succeeded, "result"),
        edge(Trigger.input_required, resending, awaiting, INPUT_REQUIRED, ROUND_BOUND),
        edge(Trigger.rounds_exhausted, resending, State.failed, EXHAUSTED),
    )


_EDGES: Final[tuple[Edge[State, Trigger], ...]] = (
    edge(Trigger.resolved, State.resolving, State.planning, "definition chosen"),
    edge(Trigger.planned, State.planning, State.sending, "headers planned"),
    edge(Trigger.unmirrorable, State.planning, State.failed, "MirroringError"),
    edge(Trigger.answered, State.sending, State.succeeded, "result"),
    edge(Trigger.input_required, State.sending, State.awaiting_input, INPUT_REQUIRED),
    edge(Trigger.mismatched, State.sending, State.relisting, "-32020 HeaderMismatch"),
    edge(Trigger.errored, State.sending, State.failed, "any other error"),
    # The input loop: the only cycle, bounded by the per-call round count.
    *_input_loop(State.awaiting_input, State.resending),
    # A -32020 on a resend is recovered from like one on the first send; the retry resends that round.
    edge(Trigger.mismatched, State.resending, State.relisting, "-32020 HeaderMismatch"),
    edge(Trigger.errored, State.resending, State.failed, "any other error"),
    edge(Trigger.relisted, State.relisting, State.comparing, "tool found"),
    # Single flight: concurrent -32020s share one relist; the calls that did not start it say so.
    edge(Trigger.joined, State.relisting, State.comparing, "tool found in another call's relist"),
    edge(Trigger.vanished, State.relisting, State.failed, "tool gone from listing"),
    edge(Trigger.relist_failed, State.relisting, State.failed, "tools/list failed"),
    edge(Trigger.changed, State.comparing, State.retrying, "fresh plan differs"),
    edge(Trigger.unchanged, State.comparing, State.failed, "same plan"),
    # The fresh schema may make the same arguments unmirrorable: the -32020 is raised, with the cause.
    edge(Trigger.unmirrorable, State.comparing, State.failed, "fresh plan fails"),
    edge(Trigger.answered, State.retrying, State.succeeded, "result"),
    edge(Trigger.input_required, State.retrying, State.retry_awaiting_input, f"{INPUT_REQUIRED}, {ROUND_BOUND}"),
    edge(Trigger.rounds_exhausted, State.retrying, State.failed, EXHAUSTED),
    # A second -32020 is not recovered from, so the recovery stays acyclic.
    edge(Trigger.mismatched, State.retrying, State.failed, "second -32020"),
    edge(Trigger.errored, State.retrying, State.failed, "any other error"),
    *_input_loop(State.retry_awaiting_input, State.retry_resending),
    edge(Trigger.mismatched, State.retry_resending, State.failed, "-32020 after the retry"),
    edge(Trigger.errored, State.retry_resending, State.failed, "any other error"),
)
"""The declared transitions but the cancel edges (which ``define`` adds), in the order the diagrams draw them."""

_DESCRIPTIONS: Final[Mapping[State, str]] = {
    State.resolving: (
        "Pick the definition to mirror from: for a `Tool` handle, the newest definition of that name the "
        "client has listed; for a plain name, none."
    ),
    State.planning: (
        "Compute the header plan (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, one `Mcp-Param-*` per "
        "annotated argument present) from the definition and the arguments."
    ),
    State.sending: "POST `tools/call` with the plan.",
    State.awaiting_input: (
        "Run the handlers (`on_elicitation`, `on_sampling`, `on_roots`) for every input request of the "
        "`input_required` result, concurrently; after a state-only round, wait a short backoff instead."
    ),
    State.resending: (
        "POST `tools/call` again with a new JSON-RPC id, the answers as `inputResponses` and `requestState` "
        "echoed byte for byte (absent when the server gave none)."
    ),
    State.relisting: (
        "Fetch a full, uncached `tools/list` (every page) and find the tool by exact name; a relist that "
        "another call started, or that completed after this call's request was sent, is joined instead."
    ),
    State.comparing: "Plan the same arguments against the fresh definition and compare with the plan sent.",
    State.retrying: (
        "POST `tools/call` once more, with the fresh plan (`attempt` becomes 2) and the latest round's "
        "`inputResponses` and `requestState`, if any."
    ),
    State.retry_awaiting_input: "As `awaiting_input`, for the retry; the round count goes on.",
    State.retry_resending: "As `resending`, for the retry; a -32020 now fails the call.",
    State.succeeded: "Terminal: `call()` returns the `ToolResult`.",
    State.failed: "Terminal: `call()` raises the error recorded in the last event.",
    State.cancelled: "Terminal: the trio cancellation propagates; the client stays usable.",
}

TOOL_CALL: Final = define(
    "tool-call", State, Trigger, _EDGES, _DESCRIPTIONS, cancel=(Trigger.cancelled, State.cancelled),
    title="One tool call: lifecycle, input rounds and -32020 recovery",
    walkthrough="tooling.walkthrough", span="tool-call {tool}",
)
"""The tool-call machine."""

STATES: Final[tuple[State, ...]] = TOOL_CALL.states
"""Every state, in table order: each forward edge leads further down it."""

INITIAL: Final[State] = TOOL_CALL.initial
"""The state every call starts in."""

TERMINAL: Final[frozenset[State]] = TOOL_CALL.terminal
"""States that accept no trigger: the call has ended."""

EDGES: Final[tuple[Edge[State, Trigger], ...]] = TOOL_CALL.edges
"""Every declared transition, in the order the diagrams draw them: the cancel edges last."""

COMPILED: Final = CompiledMachine(TOOL_CALL)
""":data:`TOOL_CALL` with its transition table, read off a built ``transitions`` Machine."""
