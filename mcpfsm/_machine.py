r"""The tool-call state machine: states, triggers and the one transition table (SPEC §5).

This module is the single definition of the machine. Everything else reads it:

- ``build_machine()`` turns ``EDGES`` into a :class:`transitions.Machine` (the library SPEC §5 names);
- ``TRANSITION_TABLE`` is compiled from such a Machine, and ``advance()`` looks triggers up in it;
- ``mcpfsm._diagram`` draws ``specs/tool-call.mmd``, ``specs/tool-call.dot`` and
  ``diagrams/tool-call.svg`` from ``EDGES``;
- ``tests/test_machine.py`` checks every (state, trigger) pair against both the table and a fresh Machine.

The machine is acyclic: ``retrying`` is a state of its own, so a call makes at most one extra
``tools/list`` and one extra ``tools/call`` (SPEC §5, §6), and that shows in the diagram.

Why the driver uses the compiled table and not the Machine
-----------------------------------------------------------
A ``transitions`` trigger builds an ``EventData``, walks the (empty) callback lists and resolves the
model's state by name on every call, and a Machine (or a model added to a shared one) is needed per call.
Measured on CPython 3.11.7, transitions 0.9.3, one idle 2-core x86-64 VM, ``python -m timeit``::

    -s "from mcpfsm._machine import build_machine; m = build_machine()" \
        "m.set_state('resolving'); m.resolved(); m.planned(); m.answered()"
    # 17 usec per loop: about 5.5 usec per trigger

    -s "from mcpfsm._machine import build_machine" "build_machine()"
    # 220 usec per loop: a Machine for each call

    -s "from mcpfsm._machine import build_machine; m = build_machine(); M = type('M', (), {})" \
        "x = M(); m.add_model(x); m.remove_model(x)"
    # 32 usec per loop: one shared Machine, one model per call

    -s "from mcpfsm._machine import advance" \
        "advance(advance(advance('resolving', 'resolved'), 'planned'), 'answered')"
    # 0.19 usec per loop: about 65 nsec per trigger

So the Machine costs tens to hundreds of µs per call before any I/O, and a shared Machine would also
hold mutable per-call state across trio tasks. The compiled dict costs a tuple hash per step and holds
no state, while the Machine stays the source of truth: the table is read off a built Machine, not off
``EDGES`` directly, and the tests check that the two agree on every (state, trigger) pair.

This module does no I/O and imports neither trio, httpx nor loguru.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from transitions import Machine

__all__ = [
    "EDGES",
    "INITIAL",
    "STATES",
    "TERMINAL",
    "TRANSITION_TABLE",
    "Edge",
    "InvalidTransition",
    "State",
    "Trigger",
    "advance",
    "build_machine",
]


class State(StrEnum):
    """A state of one tool call (SPEC §5); each member equals its plain string name.

    Member names are the values themselves because ``transitions`` identifies an ``Enum`` state by its
    ``.name``: so ``State.sending`` and ``"sending"`` mean the same state to a Machine too.
    """

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
    """A fact the driver reports to leave a state (SPEC §5); each member equals its plain string name.

    Member names are the values themselves, as for :class:`State`.
    """

    resolved = "resolved"
    planned = "planned"
    unmirrorable = "unmirrorable"
    answered = "answered"
    mismatched = "mismatched"
    errored = "errored"
    relisted = "relisted"
    vanished = "vanished"
    relist_failed = "relist_failed"
    changed = "changed"
    unchanged = "unchanged"
    cancelled = "cancelled"


@dataclass(frozen=True, slots=True, kw_only=True)
class Edge:
    """One declared transition: ``trigger`` moves a call from ``source`` to ``dest``.

    ``guard`` is short human text saying when the driver reports ``trigger``; it labels the edge in
    the generated diagrams and is not evaluated.
    """

    trigger: Trigger
    source: State
    dest: State
    guard: str


STATES: tuple[State, ...] = tuple(State)
"""Every state, in SPEC §5 order."""

INITIAL: State = State.resolving
"""The state every call starts in."""

TERMINAL: frozenset[State] = frozenset({State.succeeded, State.failed, State.cancelled})
"""States that accept no trigger: the call has ended."""


def _edge(trigger: Trigger, source: State, dest: State, guard: str) -> Edge:
    return Edge(trigger=trigger, source=source, dest=dest, guard=guard)


EDGES: tuple[Edge, ...] = (
    _edge(Trigger.resolved, State.resolving, State.planning, "definition chosen"),
    _edge(Trigger.planned, State.planning, State.sending, "headers planned"),
    _edge(Trigger.unmirrorable, State.planning, State.failed, "MirroringError"),
    _edge(Trigger.answered, State.sending, State.succeeded, "result"),
    _edge(Trigger.mismatched, State.sending, State.relisting, "-32020 HeaderMismatch"),
    _edge(Trigger.errored, State.sending, State.failed, "any other error"),
    _edge(Trigger.relisted, State.relisting, State.comparing, "tool found"),
    _edge(Trigger.vanished, State.relisting, State.failed, "tool gone from listing"),
    _edge(Trigger.relist_failed, State.relisting, State.failed, "tools/list failed"),
    _edge(Trigger.changed, State.comparing, State.retrying, "fresh plan differs"),
    _edge(Trigger.unchanged, State.comparing, State.failed, "same plan"),
    # The fresh schema may make the same arguments unmirrorable: the -32020 is raised, with the cause.
    _edge(Trigger.unmirrorable, State.comparing, State.failed, "fresh plan fails"),
    _edge(Trigger.answered, State.retrying, State.succeeded, "result"),
    # SPEC §6: a second -32020 is not recovered from, so the machine stays acyclic.
    _edge(Trigger.mismatched, State.retrying, State.failed, "second -32020"),
    _edge(Trigger.errored, State.retrying, State.failed, "any other error"),
    *(
        _edge(Trigger.cancelled, state, State.cancelled, "trio cancellation")
        for state in STATES
        if state not in TERMINAL
    ),
)
"""Every declared transition, in the order the diagrams draw them (SPEC §5)."""


class InvalidTransition(ValueError):
    """Raised by :func:`advance` for a trigger that has no edge from the given state."""


def build_machine(model: Any = None, **kwargs: Any) -> Machine:
    """Build a :class:`transitions.Machine` from ``EDGES``.

    The Machine has no callbacks, no ``to_<state>`` auto transitions and raises ``MachineError`` on a
    trigger that is not valid in the current state. ``model`` defaults to the Machine itself;
    ``kwargs`` go to ``Machine`` unchanged (e.g. ``initial=``). States and triggers are registered by
    their plain string names.
    """
    options: dict[str, Any] = {
        "model": Machine.self_literal if model is None else model,
        "states": [state.value for state in STATES],
        "initial": INITIAL.value,
        "transitions": [
            {"trigger": edge.trigger.value, "source": edge.source.value, "dest": edge.dest.value}
            for edge in EDGES
        ],
        "auto_transitions": False,
        "ignore_invalid_triggers": False,
    }
    options.update(kwargs)
    return Machine(**options)


def _compile(machine: Machine) -> Mapping[tuple[str, str], str]:
    table: dict[tuple[str, str], str] = {}
    for trigger_name, event in machine.events.items():
        for source_name, transitions in event.transitions.items():
            for transition in transitions:
                key = (State(source_name), Trigger(trigger_name))
                # Without guards a second edge for the same pair would be unreachable, and an
                # internal (dest-less) transition would not leave the state: both are definition bugs.
                if key in table or transition.dest is None:
                    raise AssertionError(f"ambiguous transition {trigger_name!r} from state {source_name!r}")
                table[key] = State(transition.dest)
    return MappingProxyType(table)


TRANSITION_TABLE: Mapping[tuple[str, str], str] = _compile(build_machine())
"""``(state, trigger) -> next state``, compiled from a Machine built by :func:`build_machine`.

Keys and values are :class:`State` and :class:`Trigger` members, so plain strings look up equally.
Read-only. A pair that is absent is an invalid transition.
"""


def advance(state: str, trigger: str) -> str:
    """Return the state ``trigger`` leads to from ``state`` (SPEC §5), as a :class:`State`.

    Raises :class:`InvalidTransition` if no edge leaves ``state`` on ``trigger``, which includes every
    trigger from a terminal state and any unknown name.
    """
    try:
        return TRANSITION_TABLE[(state, trigger)]
    except KeyError:
        trigger, state = str(trigger), str(state)
        raise InvalidTransition(f"no transition {trigger!r} from state {state!r}") from None
