r"""State machines as data: one definition, one compiler, one set of rules for every machine.

A :class:`MachineDefinition` is a literal: its name, states, initial and terminal states, the
declared :class:`Edge`\ s and one sentence per state saying what happens there. Everything that
reads a machine takes the definition as a parameter:

- :func:`build_machine` turns it into a :class:`transitions.Machine` (the reference implementation);
- :func:`compile_table` reads the ``(state, trigger) -> state`` table off such a Machine, and
  :meth:`CompiledMachine.advance` is the one lookup the trio drivers make per step;
- ``mcpfsm._tooling.diagram`` draws it (Mermaid, Graphviz) and, from a checkout, ``tooling.walkthrough``
  explains it with recorded runs;
- the property tests check every (state, trigger) pair of every machine against both.

**The rule every machine follows: acyclic except declared loops, each bounded by a guard.** An edge
with a ``bound`` is a declared loop edge: it may lead back to an earlier state, and its ``bound`` is
the condition, checked by the driver before it reports the trigger, that keeps the loop finite (a
round counter, say). Every other edge must lead forward, so once the loop edges are removed the
machine is a directed acyclic graph, and every path outside the declared loops is finite by
construction. :meth:`MachineDefinition.check` enforces this when a definition is built.

Why the drivers use the compiled table rather than the Machine itself is measured in
``bench/machine.py``: a ``transitions`` trigger costs microseconds and a Machine per call costs
hundreds, where a dict lookup costs tens of nanoseconds; the table is still read off a built Machine,
so the library stays the source of truth.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from transitions import Machine

__all__ = [
    "CompiledMachine",
    "Edge",
    "InvalidTransition",
    "MachineDefinition",
    "build_machine",
    "compile_table",
    "define",
    "edge",
]

S = TypeVar("S", bound=StrEnum)
T = TypeVar("T", bound=StrEnum)


@dataclass(frozen=True, slots=True, kw_only=True)
class Edge(Generic[S, T]):
    """One declared transition: ``trigger`` moves a run from ``source`` to ``dest``.

    Attributes:
        trigger: what happened.
        source: the state left.
        dest: the state entered.
        guard: short human text saying when the driver reports ``trigger``; it labels the edge in the
            generated diagrams and is not evaluated.
        bound: for a declared loop edge only, the condition that keeps the loop finite (drawn on
            the diagram next to the guard); ``None`` for a forward edge.
    """

    trigger: T
    source: S
    dest: S
    guard: str
    bound: str | None = None


def edge(trigger: T, source: S, dest: S, guard: str, bound: str | None = None) -> Edge[S, T]:
    """An :class:`Edge`, positionally: how the machine modules write their edge tables."""
    return Edge(trigger=trigger, source=source, dest=dest, guard=guard, bound=bound)


class InvalidTransition(ValueError):
    """A trigger that has no edge from the given state (terminal states accept none)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MachineDefinition(Generic[S, T]):
    """A whole machine as data; see the module docstring for the rule it must follow.

    Attributes:
        name: the machine's name as it appears in file names and events (``"tool-call"``).
        title: a short human title for diagrams and walkthroughs.
        states: every state, in the order tables and diagrams list them (forward edges lead down it).
        triggers: every trigger.
        initial: the state every run starts in.
        terminal: states that accept no trigger.
        edges: every declared transition, in the order the diagrams draw them.
        descriptions: one sentence per state: what happens there.
        cancel_trigger: the trigger that ends a run from any non-terminal state (trio
            cancellation), or ``None`` when the machine has none; its edges are drawn dashed.
        walkthrough: the module of the checkout's ``tooling/`` whose ``render()`` writes the machine's page
            ``specs/{name}.md`` (``"tooling.walkthrough"``), as a name: the machines import no tooling, and
            the walkthroughs do not ship; ``None`` for none.
        span: the name of the OpenTelemetry span of one run (``{tool}`` stands for the tool's name), or
            ``None`` when a run has no span of its own.

    Raises:
        ValueError: the definition breaks the rule (see :meth:`check`).
    """

    name: str
    title: str
    states: tuple[S, ...]
    triggers: tuple[T, ...]
    initial: S
    terminal: frozenset[S]
    edges: tuple[Edge[S, T], ...]
    descriptions: Mapping[S, str] = field(repr=False)
    cancel_trigger: T | None = None
    walkthrough: str | None = None
    span: str | None = None

    def __post_init__(self) -> None:
        self.check()

    @property
    def loops(self) -> tuple[Edge[S, T], ...]:
        """The declared loop edges (those with a ``bound``), in ``edges`` order."""
        return tuple(edge for edge in self.edges if edge.bound is not None)

    def leaving(self, state: S) -> tuple[Edge[S, T], ...]:
        """The edges that leave ``state``, in ``edges`` order."""
        return tuple(edge for edge in self.edges if edge.source == state)

    def check(self) -> None:
        """Enforce the rule of the module docstring.

        Known states, no edge out of a terminal state, a description per state, every state
        reachable, and no cycle once the declared loop edges are removed.

        Raises:
            ValueError: naming the first violation found.
        """
        known = set(self.states)
        if self.initial not in known or not self.terminal <= known:
            raise ValueError(f"{self.name}: initial and terminal states must be among the states")
        if self.initial in self.terminal:
            raise ValueError(f"{self.name}: the initial state cannot be terminal")
        missing = [str(state) for state in self.states if state not in self.descriptions]
        if missing:
            raise ValueError(f"{self.name}: no description for {missing}")
        for edge in self.edges:
            if edge.source not in known or edge.dest not in known or edge.trigger not in self.triggers:
                raise ValueError(f"{self.name}: edge {edge} names an unknown state or trigger")
            if edge.source in self.terminal:
                raise ValueError(f"{self.name}: edge {edge} leaves terminal state {edge.source}")
        reached = {self.initial}
        frontier = [self.initial]
        while frontier:
            state = frontier.pop()
            for edge in self.leaving(state):
                if edge.dest not in reached:
                    reached.add(edge.dest)
                    frontier.append(edge.dest)
        unreachable = [str(state) for state in self.states if state not in reached]
        if unreachable:
            raise ValueError(f"{self.name}: unreachable states {unreachable}")
        cycle = _cycle([edge for edge in self.edges if edge.bound is None])
        if cycle:
            raise ValueError(f"{self.name}: undeclared cycle through {cycle}; mark its back edge with a bound")


def define(
    name: str,
    states: type[S],
    triggers: type[T],
    edges: Iterable[Edge[S, T]],
    descriptions: Mapping[S, str],
    *,
    title: str,
    cancel: tuple[T, S] | None = None,
    walkthrough: str | None = None,
    span: str | None = None,
) -> MachineDefinition[S, T]:
    """A :class:`MachineDefinition` from its enums and edges: how every machine module writes its definition.

    What each machine would otherwise spell out again is derived here, once: the states and triggers are the
    members of ``states`` and ``triggers`` in declaration order, the initial state is the first state, the
    terminal states are those no edge of ``edges`` leaves, and ``cancel = (trigger, state)`` adds one edge on
    ``trigger`` from every other state to ``state`` (trio cancellation) after ``edges`` and makes ``trigger``
    the ``cancel_trigger``.

    Raises:
        ValueError: the definition breaks the rule (see :meth:`MachineDefinition.check`).
    """
    every_state = tuple(states)
    declared = tuple(edges)
    ends = frozenset(every_state) - {each.source for each in declared}
    if cancel is not None:
        trigger, cancelled = cancel
        declared += tuple(edge(trigger, state, cancelled, "trio cancellation") for state in states if state not in ends)
    return MachineDefinition(
        name=name,
        title=title,
        states=every_state,
        triggers=tuple(triggers),
        initial=every_state[0],
        terminal=ends,
        edges=declared,
        descriptions=MappingProxyType(dict(descriptions)),
        cancel_trigger=None if cancel is None else cancel[0],
        walkthrough=walkthrough,
        span=span,
    )


def _cycle(edges: Sequence[Edge[Any, Any]]) -> list[str]:
    # Depth-first search for a cycle; returns the states of one cycle, or [] when there is none.
    graph: dict[str, list[str]] = {}
    for edge in edges:
        graph.setdefault(str(edge.source), []).append(str(edge.dest))
    visiting: list[str] = []
    done: set[str] = set()

    def visit(node: str) -> list[str]:
        if node in visiting:
            return [*visiting[visiting.index(node) :], node]
        if node in done:
            return []
        visiting.append(node)
        for nxt in graph.get(node, []):
            found = visit(nxt)
            if found:
                return found
        visiting.pop()
        done.add(node)
        return []

    for start in list(graph):
        found = visit(start)
        if found:
            return found
    return []


def build_machine(definition: MachineDefinition[Any, Any], model: Any = None, **kwargs: Any) -> Machine:
    """Build a :class:`transitions.Machine` from ``definition``.

    The Machine has no callbacks, no ``to_<state>`` auto transitions and raises ``MachineError`` on a
    trigger that is not valid in the current state. ``model`` defaults to the Machine itself;
    ``kwargs`` go to ``Machine`` unchanged (e.g. ``initial=``). States and triggers are registered by
    their plain string names (``transitions`` identifies an ``Enum`` state by its ``.name``, and every
    state and trigger enum here has names equal to values).
    """
    options: dict[str, Any] = {
        "model": Machine.self_literal if model is None else model,
        "states": [str(state) for state in definition.states],
        "initial": str(definition.initial),
        "transitions": [
            {"trigger": str(edge.trigger), "source": str(edge.source), "dest": str(edge.dest)}
            for edge in definition.edges
        ],
        "auto_transitions": False,
        "ignore_invalid_triggers": False,
    }
    options.update(kwargs)
    return Machine(**options)


class CompiledMachine(Generic[S, T]):
    """A definition with its ``(state, trigger) -> state`` table, read off a built ``transitions`` Machine.

    Keys and values are the definition's enum members, so plain strings look up equally. A driver
    makes one :meth:`advance` per step.
    """

    __slots__ = ("definition", "table")

    def __init__(self, definition: MachineDefinition[S, T]) -> None:
        """Compile ``definition`` through a :class:`transitions.Machine` built from it."""
        self.definition = definition
        self.table: Mapping[tuple[str, str], S] = compile_table(definition)
        """Read-only; a pair that is absent is an invalid transition."""

    def advance(self, state: str, trigger: str) -> S:
        """The state ``trigger`` leads to from ``state``.

        Raises:
            InvalidTransition: no edge leaves ``state`` on ``trigger`` (every trigger from a terminal
                state and any unknown name included).
        """
        try:
            return self.table[(state, trigger)]
        except KeyError:
            raise InvalidTransition(
                f"{self.definition.name}: no transition {str(trigger)!r} from state {str(state)!r}"
            ) from None


def compile_table(definition: MachineDefinition[S, T]) -> Mapping[tuple[str, str], S]:
    """Read the transition table off a Machine built by :func:`build_machine` from ``definition``.

    Raises:
        ValueError: two edges share a (state, trigger) pair; without evaluated guards the second
            would be unreachable, so it is a definition bug.
    """
    states = {str(state): state for state in definition.states}
    triggers = {str(trigger): trigger for trigger in definition.triggers}
    machine = build_machine(definition, model=[])  # no model: the table needs the events, not a model's methods
    table: dict[tuple[str, str], S] = {}
    for trigger_name, event in machine.events.items():
        for source_name, transitions in event.transitions.items():
            for transition in transitions:
                key = (states[source_name], triggers[trigger_name])
                if key in table or transition.dest is None:
                    raise ValueError(
                        f"{definition.name}: ambiguous transition {trigger_name!r} from state {source_name!r}"
                    )
                table[key] = states[transition.dest]
    return MappingProxyType(table)
