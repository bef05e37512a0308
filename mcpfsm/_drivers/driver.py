"""The one trio driver of every machine: a loop over a compiled machine, one effect per state.

For the current state :func:`drive` performs the state's effect, the effect reports one fact as a trigger,
:meth:`~mcpfsm._machines.definition.CompiledMachine.advance` gives the next state, and the run publishes one
event for the state it entered. What a machine adds is its own: the effects, and how its :class:`Run`
turns a transition into an event. A machine whose run only follows facts reported from elsewhere (a
tracker, with no effects of its own) uses the same two steps the loop is made of: :func:`start` once, then
:func:`advance` per fact::

    state = start(COMPILED, run)                                 # publishes the initial state
    state = advance(COMPILED, run, state, Trigger.gathered)      # follows one declared edge, publishes

Cancellation (trio's rule: every ``async`` call is a checkpoint) may end a run in any non-terminal state,
also one whose effect never waits: the loop checkpoints before each effect. The checkpoint is trio's unless the
caller names another, or none: the gate, which runs inside asyncio servers (uvicorn) as well as trio ones
(Hypercorn's trio worker), and whose every waiting effect is I/O through its port, passes none: its cancellation
arrives at those awaits, and is honoured there the same way. A ``trio.Cancelled`` (or a
``KeyboardInterrupt``) is never swallowed: the run follows the machine's ``cancel_trigger`` edge, publishes
it, and the exception propagates unchanged. An effect turns every expected failure into a trigger; any
other ``Exception`` is a bug in mcpfsm, not a protocol outcome, so it propagates without an edge, as does
:class:`~mcpfsm._machines.definition.InvalidTransition` for a trigger the machine does not declare.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from enum import StrEnum
from typing import Any, Protocol, TypeVar

import trio

from .._machines.definition import CompiledMachine

__all__ = ["Effect", "Run", "Step", "advance", "cancellation_summary", "drive", "plain", "start"]

S = TypeVar("S", bound=StrEnum)
T = TypeVar("T", bound=StrEnum)


class Run(Protocol):
    """One run of a machine as the driver sees it: it is told each state it enters."""

    def entered(self, state: str, previous: str | None, trigger: str | None) -> None:
        """The run entered ``state`` from ``previous`` on ``trigger`` (both ``None`` for the initial state).

        Publishes the run's event for that state; called once per state, in order.
        """
        ...


R = TypeVar("R", bound=Run)

Effect = Callable[[R], Awaitable[T]]
"""The effect of one state: does its work on the run and returns the trigger that names what happened."""

Step = Callable[[R], T]
"""The effect of a state that never waits (it computes and does no I/O): a plain call, without a coroutine."""

_NO_STEPS: Mapping[str, Any] = {}


def start(compiled: CompiledMachine[S, Any], run: Run) -> S:
    """Enter the machine's initial state: ``run`` publishes it; returns it."""
    state = compiled.definition.initial
    run.entered(state, None, None)
    return state


def advance(compiled: CompiledMachine[S, Any], run: Run, state: S, trigger: str) -> S:
    """Follow the declared edge from ``state`` on ``trigger``: ``run`` publishes the state entered; returns it.

    Raises:
        InvalidTransition: the machine declares no such edge (nothing is published).
    """
    entered = compiled.advance(state, trigger)
    run.entered(entered, state, trigger)
    return entered


async def drive(
    compiled: CompiledMachine[S, T],
    effects: Mapping[str, Effect[R, T]],
    run: R,
    steps: Mapping[str, Step[R, T]] = _NO_STEPS,
    *,
    checkpoint: Callable[[], Awaitable[None]] | None = trio.lowlevel.checkpoint_if_cancelled,
) -> S:
    """Drive ``run`` from the initial state to a terminal one, one effect per state; returns the terminal state.

    Every non-terminal state has one effect: in ``steps`` when it never waits (called), else in ``effects``
    (awaited). The two differ only in cost (a coroutine object per state that never suspends): the same
    states are entered, in the same order, each after the same checkpoint. What a terminal state means (a
    result, an error to raise) is the caller's. ``checkpoint`` is awaited before each effect: trio's
    ``checkpoint_if_cancelled`` by default; ``None`` for a machine whose effects' own awaits are all I/O, so that
    a cancellation arrives at one of them (a state that only computes is then no checkpoint).

    Raises:
        trio.Cancelled: the caller was cancelled (asyncio's ``CancelledError`` under anyio); the run entered the
            machine's ``cancel_trigger`` edge first (when the machine has one) and the exception propagates unchanged.
        InvalidTransition: an effect reported a trigger the current state has no edge for (a bug).
        Exception: whatever an effect raised instead of reporting a trigger (a bug), unchanged.
    """
    definition = compiled.definition
    terminal = definition.terminal
    # `advance` inlined, what it needs looked up once: every tool call's hot path (bench/layer.py, bench/machine.py).
    # The compiled table is read directly; compiled.advance only for a pair it lacks, to raise InvalidTransition.
    table, follow, entered = compiled.table, compiled.advance, run.entered
    state = definition.initial
    entered(state, None, None)
    while state not in terminal:
        step = steps.get(state)
        try:
            # Every non-terminal state can be cancelled, also those whose effect never waits (and a
            # transport that answers without blocking); trio's rule: async = checkpoint.
            if checkpoint is not None:
                await checkpoint()
            trigger = step(run) if step is not None else await effects[state](run)
        except Exception:
            # Effects turn every expected failure into a trigger; anything else is a bug in mcpfsm,
            # not a protocol outcome, so it is not dressed up as one of the machine's edges.
            raise
        except BaseException:
            # trio.Cancelled (or KeyboardInterrupt): never swallowed (STYLE); record it, let it propagate.
            if definition.cancel_trigger is not None:
                advance(compiled, run, state, definition.cancel_trigger)
            raise
        previous = state
        try:
            state = table[(previous, trigger)]
        except KeyError:
            state = follow(previous, trigger)
        entered(state, previous, trigger)
    return state


def plain(name: str | None) -> str | None:
    """A state or trigger as an event records it: a plain string (not the machine's enum member), or ``None``."""
    return None if name is None else str(name)


def cancellation_summary(run: str) -> Mapping[str, Any]:
    """The ``error`` of the event a cancelled run publishes: ``run`` names the run (``"call"``, ``"flow"``)."""
    return {"type": "Cancelled", "code": None, "message": f"the {run} was cancelled"}
