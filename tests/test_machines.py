"""The rules every machine follows, checked for each machine in ``mcpfsm._machines.MACHINES``.

Acyclic except declared loops (each bounded), every state reachable, terminal states accept nothing,
every (state, trigger) pair either follows a declared edge or is refused, and the compiled table agrees
with a ``transitions`` Machine built from the same definition. Then the definition checks themselves,
each fed a broken machine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from graphlib import CycleError, TopologicalSorter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from transitions import MachineError

from mcpfsm._machines import MACHINES
from mcpfsm._machines.definition import CompiledMachine, Edge, InvalidTransition, MachineDefinition, build_machine

DEFINITIONS = [pytest.param(definition, id=name) for name, definition in MACHINES.items()]


def declared(definition: MachineDefinition[Any, Any]) -> dict[tuple[str, str], str]:
    return {(str(e.source), str(e.trigger)): str(e.dest) for e in definition.edges}


@pytest.mark.parametrize("definition", DEFINITIONS)
def test_the_compiled_table_is_the_declared_one(definition: MachineDefinition[Any, Any]) -> None:
    assert {(str(s), str(t)): str(d) for (s, t), d in CompiledMachine(definition).table.items()} == declared(
        definition
    )


@pytest.mark.parametrize("definition", DEFINITIONS)
def test_every_state_and_trigger_agrees_with_a_transitions_machine(definition: MachineDefinition[Any, Any]) -> None:
    compiled = CompiledMachine(definition)
    edges = declared(definition)
    for state in definition.states:
        for trigger in definition.triggers:
            machine = build_machine(definition, initial=state)
            if (str(state), str(trigger)) in edges:
                assert compiled.advance(state, trigger) == edges[(str(state), str(trigger))]
                assert machine.trigger(trigger) is True
                assert machine.state == edges[(str(state), str(trigger))]
            else:
                with pytest.raises(InvalidTransition):
                    compiled.advance(state, trigger)
                with pytest.raises(MachineError):
                    machine.trigger(trigger)
                assert machine.state == state


@pytest.mark.parametrize("definition", DEFINITIONS)
@given(data=st.data())
def test_unknown_triggers_are_refused_everywhere(definition: MachineDefinition[Any, Any], data: st.DataObject) -> None:
    state = data.draw(st.sampled_from(definition.states))
    trigger = data.draw(st.text(max_size=12).filter(lambda text: text not in set(map(str, definition.triggers))))
    message = f"{definition.name}: no transition {trigger!r} from state {str(state)!r}"
    with pytest.raises(InvalidTransition, match="^" + re.escape(message) + "$"):
        CompiledMachine(definition).advance(state, trigger)


@pytest.mark.parametrize("definition", DEFINITIONS)
def test_terminal_states_accept_nothing(definition: MachineDefinition[Any, Any]) -> None:
    assert [e for e in definition.edges if e.source in definition.terminal] == []


@pytest.mark.parametrize("definition", DEFINITIONS)
def test_every_non_terminal_state_can_be_cancelled(definition: MachineDefinition[Any, Any]) -> None:
    assert definition.cancel_trigger is not None
    compiled = CompiledMachine(definition)
    for state in definition.states:
        if state not in definition.terminal:
            assert compiled.advance(state, definition.cancel_trigger) in definition.terminal


@pytest.mark.parametrize("definition", DEFINITIONS)
def test_acyclic_once_the_declared_loop_edges_are_removed(definition: MachineDefinition[Any, Any]) -> None:
    graph: dict[str, set[str]] = {str(state): set() for state in definition.states}
    for edge in definition.edges:
        if edge.bound is None:
            graph[str(edge.dest)].add(str(edge.source))
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        pytest.fail(f"{definition.name} has an undeclared cycle: {exc.args[1]}")
    # Forward edges lead down the declared state order, which is what the walkthroughs rely on.
    position = {str(state): index for index, state in enumerate(definition.states)}
    assert [e for e in definition.edges if e.bound is None and position[e.dest] <= position[e.source]] == []
    assert sorted(order) == sorted(map(str, definition.states))


@pytest.mark.parametrize("definition", DEFINITIONS)
def test_every_loop_edge_names_its_bound(definition: MachineDefinition[Any, Any]) -> None:
    assert all(edge.bound for edge in definition.loops)


@pytest.mark.parametrize("definition", DEFINITIONS)
@given(data=st.data())
def test_a_random_walk_that_takes_each_loop_edge_at_most_three_times_ends(
    definition: MachineDefinition[Any, Any], data: st.DataObject
) -> None:
    compiled = CompiledMachine(definition)
    machine = build_machine(definition)
    state = definition.initial
    taken: dict[Edge[Any, Any], int] = {}
    for _ in range(len(definition.states) * (3 * len(definition.loops) + 1)):
        if state in definition.terminal:
            break
        choices = [e for e in definition.leaving(state) if taken.get(e, 0) < 3]
        edge = data.draw(st.sampled_from(choices))
        taken[edge] = taken.get(edge, 0) + 1
        state = compiled.advance(state, edge.trigger)
        machine.trigger(edge.trigger)
        assert machine.state == state
    assert state in definition.terminal


# --- the definition checks, each fed a broken machine ----------------------------------------------------


class S(StrEnum):
    a = "a"
    b = "b"
    c = "c"
    done = "done"


class T(StrEnum):
    go = "go"
    back = "back"
    end = "end"


DESCRIPTIONS: Mapping[S, str] = {state: f"state {state}" for state in S}


def define(*edges: Edge[S, T], descriptions: Mapping[S, str] = DESCRIPTIONS) -> MachineDefinition[S, T]:
    return MachineDefinition(
        name="toy",
        title="toy",
        states=tuple(S),
        triggers=tuple(T),
        initial=S.a,
        terminal=frozenset({S.done}),
        edges=edges,
        descriptions=descriptions,
    )


def edge(trigger: T, source: S, dest: S, bound: str | None = None) -> Edge[S, T]:
    return Edge(trigger=trigger, source=source, dest=dest, guard="", bound=bound)


FORWARD = (edge(T.go, S.a, S.b), edge(T.go, S.b, S.c), edge(T.end, S.c, S.done))


def test_a_well_formed_toy_machine_compiles() -> None:
    compiled = CompiledMachine(define(*FORWARD, edge(T.back, S.c, S.b, bound="round < 3")))
    assert compiled.advance("c", "back") is S.b
    assert compiled.definition.loops == (edge(T.back, S.c, S.b, bound="round < 3"),)


@pytest.mark.parametrize(
    ("edges", "descriptions", "message"),
    [
        pytest.param(
            (*FORWARD, edge(T.back, S.c, S.b)), DESCRIPTIONS, r"^toy: undeclared cycle through \['b', 'c', 'b'\]",
            id="undeclared-cycle",
        ),
        pytest.param(FORWARD[1:], DESCRIPTIONS, r"^toy: unreachable states \['b', 'c', 'done'\]$", id="unreachable"),
        pytest.param(
            (*FORWARD, edge(T.back, S.done, S.a, bound="x")),
            DESCRIPTIONS,
            r"^toy: edge .* leaves terminal state done$",
            id="edge-out-of-terminal",
        ),
        pytest.param(
            FORWARD, {S.a: "", S.b: "", S.c: ""}, r"^toy: no description for \['done'\]$", id="no-description"
        ),
    ],
)
def test_a_broken_definition_is_refused(
    edges: tuple[Edge[S, T], ...], descriptions: Mapping[S, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        define(*edges, descriptions=descriptions)


def test_two_edges_for_one_state_and_trigger_are_refused_when_compiled() -> None:
    definition = define(*FORWARD, edge(T.go, S.a, S.c))
    with pytest.raises(ValueError, match=r"^toy: ambiguous transition 'go' from state 'a'$"):
        CompiledMachine(definition)


@pytest.mark.parametrize("definition", DEFINITIONS)
def test_what_define_derives_follows_from_the_enums_and_the_edges(definition: MachineDefinition[Any, Any]) -> None:
    # The initial state is the first declared, the terminal states are those no declared edge leaves, and the
    # cancel trigger leads from every other state to one terminal state.
    cancel = definition.cancel_trigger
    assert cancel is not None
    assert definition.initial == definition.states[0]
    left = {e.source for e in definition.edges}
    assert definition.terminal == {state for state in definition.states if state not in left}
    cancel_edges = [e for e in definition.edges if e.trigger == cancel]
    assert [e.source for e in cancel_edges] == [state for state in definition.states if state in left]
    assert len({e.dest for e in cancel_edges}) == 1
    assert definition.edges[-len(cancel_edges) :] == tuple(cancel_edges)


@pytest.mark.parametrize("definition", DEFINITIONS)
def test_each_walkthrough_names_a_tooling_module_with_render(definition: MachineDefinition[Any, Any]) -> None:
    import importlib

    assert definition.walkthrough is not None
    assert definition.walkthrough.startswith("mcpfsm._tooling.walkthrough")
    assert callable(importlib.import_module(definition.walkthrough).render)


def test_the_registry_lists_every_machine_module_by_its_name_in_capitals() -> None:
    import importlib

    for name, definition in MACHINES.items():
        module = importlib.import_module(f"mcpfsm._machines.{name.replace('-', '_')}")
        assert getattr(module, name.replace("-", "_").upper()) is definition
    assert list(MACHINES) == ["tool-call", "authorization", "input"]
