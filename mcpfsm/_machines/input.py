"""The input machine: input the server asks for outside a tool call, as data.

:data:`INPUT` is the single definition. The tracker in ``mcpfsm._drivers.input_machine`` steps through :data:`COMPILED`
and publishes one :class:`~mcpfsm.InputEvent` per state entered; the diagrams in ``specs/input.*`` and
``diagrams/input.svg`` and the page ``specs/input.md`` are generated from it.

Two kinds of run share the machine, and both start in ``awaiting_input``: the server has asked, the
client's handlers are answering.

- **Input rounds** (SEP-2322 "Multi Round-Trip Requests") of a request that is not a run of the tool-call
  machine: ``prompts/get``, ``resources/read`` (and any of the three sent with ``Client.request``). The run
  starts when the request's first ``input_required`` result arrives (a request that asks for nothing is no
  run); ``gathered`` leads to ``resending`` (the same request, a new JSON-RPC id, ``inputResponses`` and
  the echoed ``requestState``), whose answer is complete (``answered``) or asks again (``input_required``):
  the machine's only cycle, a declared loop edge bounded by ``max_input_rounds``.
- **A server request** of the legacy era (MCP 2025-11-25: ``elicitation/create``, ``sampling/createMessage``,
  ``roots/list`` on the standalone GET stream or a POST's event stream). ``awaiting_input`` runs the handler
  and sends its answer: ``answered`` once the result was sent, ``refused`` when the client sent a JSON-RPC
  error without asking a handler (no handler, an undeclared mode, malformed params), ``input_failed`` when
  the handler raised (a -32603 or the handler's ``RpcError`` was sent), ``errored`` when the answer could not
  be sent.

"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from .definition import CompiledMachine, Edge, define, edge
from .input_loop import EXHAUSTED, GATHERED, INPUT_FAILED, INPUT_REQUIRED, ROUND_BOUND

__all__ = ["COMPILED", "INPUT", "State", "Trigger"]


class State(StrEnum):
    """A state of one input run; names equal values, so ``State.resending == "resending"``."""

    awaiting_input = "awaiting_input"
    resending = "resending"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"


class Trigger(StrEnum):
    """A fact the tracker reports to leave a state; names equal values, as for :class:`State`."""

    gathered = "gathered"
    answered = "answered"
    refused = "refused"
    input_failed = "input_failed"
    errored = "errored"
    input_required = "input_required"
    rounds_exhausted = "rounds_exhausted"
    cancelled = "cancelled"


_REFUSED: Final = "server request: no handler, undeclared mode, bad params"

_EDGES: Final[tuple[Edge[State, Trigger], ...]] = (
    # Input rounds (SEP-2322): the round's answers are ready; the request goes out again.
    edge(Trigger.gathered, State.awaiting_input, State.resending, GATHERED),
    # A legacy server request (MCP 2025-11-25): the answer was sent.
    edge(Trigger.answered, State.awaiting_input, State.succeeded, "server request: result sent"),
    edge(Trigger.refused, State.awaiting_input, State.failed, _REFUSED),
    edge(Trigger.input_failed, State.awaiting_input, State.failed, INPUT_FAILED),
    edge(Trigger.errored, State.awaiting_input, State.failed, "server request: the answer could not be sent"),
    edge(Trigger.answered, State.resending, State.succeeded, "complete result"),
    # The input loop: the only cycle, bounded by the per-request round count.
    edge(Trigger.input_required, State.resending, State.awaiting_input, INPUT_REQUIRED, ROUND_BOUND),
    edge(Trigger.rounds_exhausted, State.resending, State.failed, EXHAUSTED),
    edge(Trigger.errored, State.resending, State.failed, "any other error"),
)
"""The declared transitions but the cancel edges (which ``define`` adds), in the order the diagrams draw them."""

_DESCRIPTIONS: Final[Mapping[State, str]] = {
    State.awaiting_input: (
        "The server asked for input. Rounds: run the handlers (`on_elicitation`, `on_sampling`, `on_roots`) "
        "for every input request of the `input_required` result, concurrently, or wait a short backoff after "
        "a state-only round. A legacy server request: run its handler, or refuse it (no handler, an "
        "undeclared mode, malformed params), and POST the answer."
    ),
    State.resending: (
        "Send `prompts/get` or `resources/read` again with a new JSON-RPC id, the answers as `inputResponses` "
        "and `requestState` echoed byte for byte (absent when the server gave none)."
    ),
    State.succeeded: (
        "Terminal: the request returns its complete result, or the server request's result was sent."
    ),
    State.failed: (
        "Terminal: the request raises the error recorded in the last event; for a server request, the "
        "JSON-RPC error sent (or why nothing could be sent)."
    ),
    State.cancelled: "Terminal: the trio cancellation propagates (the caller, or the client closing).",
}

INPUT: Final = define(
    "input", State, Trigger, _EDGES, _DESCRIPTIONS, cancel=(Trigger.cancelled, State.cancelled),
    title="Input the server asks for outside a tool call: SEP-2322 rounds and legacy server requests",
    walkthrough="tooling.walkthrough_input",
)
"""The input machine."""

COMPILED: Final = CompiledMachine(INPUT)
""":data:`INPUT` with its transition table, read off a built ``transitions`` Machine."""
