"""The rules every machine follows, checked for each machine in ``mcpfsm._machines.registry.MACHINES``.

Acyclic except declared loops (each bounded), every state reachable, terminal states accept nothing,
every (state, trigger) pair either follows a declared edge or is refused, and the compiled table agrees
with a ``transitions`` Machine built from the same definition. Then the definition checks themselves,
each fed a broken machine. Last, the tool-call machine edge by edge (its table written out by hand).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections import deque
from collections.abc import Mapping
from enum import StrEnum
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from transitions import MachineError

from mcpfsm._machines import definition as _definition
from mcpfsm._machines import tool_call as _machine
from mcpfsm._machines.definition import CompiledMachine, Edge, InvalidTransition, MachineDefinition, build_machine
from mcpfsm._machines.registry import MACHINES
from mcpfsm._machines.tool_call import COMPILED, EDGES, INITIAL, STATES, TERMINAL, TOOL_CALL, State, Trigger

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


def test_only_the_task_and_group_machines_outlive_a_cancelled_caller() -> None:
    # A task lives on the server: cancelling the trio scope that waits for it stops the waiting, not the task
    # (docs/tasks.md), so its run has no cancel edges and stays where it was. A group member's connect runs in the
    # group's own task and is shared by every use (docs/groups.md): a cancelled use stops waiting, not the connect.
    # Every other machine is a run of the caller's own work and ends in a terminal state when the caller is
    # cancelled.
    assert [name for name, definition in MACHINES.items() if definition.cancel_trigger is None] == ["group", "task"]


@pytest.mark.parametrize(
    "definition", [each for each in DEFINITIONS if each.values[0].cancel_trigger is not None]  # type: ignore[union-attr]
)
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


# --- the tool-call machine, edge by edge ---------------------------------------------------------------------

TRANSITION_TABLE = COMPILED.table
advance = COMPILED.advance


def build_tool_call(**kwargs: object) -> Any:
    return build_machine(TOOL_CALL, **kwargs)


# Written out by hand so a change to EDGES has to be made here too.
DECLARED = [
    ("resolving", "resolved", "planning"),
    ("planning", "planned", "sending"),
    ("planning", "unmirrorable", "failed"),
    ("sending", "answered", "succeeded"),
    ("sending", "input_required", "awaiting_input"),
    ("sending", "mismatched", "relisting"),
    ("sending", "errored", "failed"),
    ("awaiting_input", "gathered", "resending"),
    ("awaiting_input", "input_failed", "failed"),
    ("resending", "answered", "succeeded"),
    ("resending", "input_required", "awaiting_input"),
    ("resending", "rounds_exhausted", "failed"),
    ("resending", "mismatched", "relisting"),
    ("resending", "errored", "failed"),
    ("relisting", "relisted", "comparing"),
    ("relisting", "joined", "comparing"),
    ("relisting", "vanished", "failed"),
    ("relisting", "relist_failed", "failed"),
    ("comparing", "changed", "retrying"),
    ("comparing", "unchanged", "failed"),
    ("comparing", "unmirrorable", "failed"),
    ("retrying", "answered", "succeeded"),
    ("retrying", "input_required", "retry_awaiting_input"),
    ("retrying", "rounds_exhausted", "failed"),
    ("retrying", "mismatched", "failed"),
    ("retrying", "errored", "failed"),
    ("retry_awaiting_input", "gathered", "retry_resending"),
    ("retry_awaiting_input", "input_failed", "failed"),
    ("retry_resending", "answered", "succeeded"),
    ("retry_resending", "input_required", "retry_awaiting_input"),
    ("retry_resending", "rounds_exhausted", "failed"),
    ("retry_resending", "mismatched", "failed"),
    ("retry_resending", "errored", "failed"),
    ("resolving", "cancelled", "cancelled"),
    ("planning", "cancelled", "cancelled"),
    ("sending", "cancelled", "cancelled"),
    ("awaiting_input", "cancelled", "cancelled"),
    ("resending", "cancelled", "cancelled"),
    ("relisting", "cancelled", "cancelled"),
    ("comparing", "cancelled", "cancelled"),
    ("retrying", "cancelled", "cancelled"),
    ("retry_awaiting_input", "cancelled", "cancelled"),
    ("retry_resending", "cancelled", "cancelled"),
]
NON_TERMINAL = [state for state in STATES if state not in TERMINAL]


LOOPS = [
    ("resending", "input_required", "awaiting_input"),
    ("retry_resending", "input_required", "retry_awaiting_input"),
]
LOOP_KEYS = {(source, trigger) for source, trigger, _ in LOOPS}


def successors(state: str) -> list[str]:
    return sorted({dest for (source, _), dest in TRANSITION_TABLE.items() if source == state})


def forward_successors(state: str) -> list[str]:
    """Successors along the edges that are not declared loop edges."""
    return sorted({dest for key, dest in TRANSITION_TABLE.items() if key[0] == state and key not in LOOP_KEYS})


def refusal(state: str, trigger: str) -> str:
    return "^" + re.escape(f"tool-call: no transition {str(trigger)!r} from state {str(state)!r}") + "$"


def test_names() -> None:
    assert list(STATES) == [
        "resolving",
        "planning",
        "sending",
        "awaiting_input",
        "resending",
        "relisting",
        "comparing",
        "retrying",
        "retry_awaiting_input",
        "retry_resending",
        "succeeded",
        "failed",
        "cancelled",
    ]
    assert sorted(Trigger) == sorted(
        [
            "resolved",
            "planned",
            "unmirrorable",
            "answered",
            "input_required",
            "mismatched",
            "errored",
            "gathered",
            "input_failed",
            "rounds_exhausted",
            "relisted",
            "joined",
            "vanished",
            "relist_failed",
            "changed",
            "unchanged",
            "cancelled",
        ]
    )
    assert INITIAL == "resolving"
    assert sorted(TERMINAL) == ["cancelled", "failed", "succeeded"]


def test_members_are_interchangeable_with_plain_strings() -> None:
    assert State.sending == "sending"
    assert hash(State.sending) == hash("sending")
    assert f"{State.sending}" == "sending"
    assert Trigger.relist_failed == "relist_failed"
    assert TRANSITION_TABLE[("sending", "mismatched")] == "relisting"
    assert TRANSITION_TABLE[(State.sending, Trigger.mismatched)] is State.relisting


def test_edges_are_frozen_values() -> None:
    edge = EDGES[0]
    assert edge == Edge(
        trigger=Trigger.resolved, source=State.resolving, dest=State.planning, guard="definition chosen"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        edge.dest = State.failed  # type: ignore[misc]


def test_edges_are_the_declared_ones_in_order() -> None:
    assert [(e.source, e.trigger, e.dest) for e in EDGES] == DECLARED


def test_transition_table_is_the_declared_one() -> None:
    assert dict(TRANSITION_TABLE) == {(source, trigger): dest for source, trigger, dest in DECLARED}


def test_transition_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        TRANSITION_TABLE[("failed", "resolved")] = "planning"  # type: ignore[index]


def test_transition_table_matches_a_fresh_machine() -> None:
    machine = build_tool_call()
    from_machine = {
        (source, trigger): transition.dest
        for trigger, event in machine.events.items()
        for source, transitions in event.transitions.items()
        for transition in transitions
    }
    assert from_machine == dict(TRANSITION_TABLE)


@pytest.mark.parametrize(("source", "trigger", "dest"), DECLARED)
def test_advance_follows_declared_edge(source: str, trigger: str, dest: str) -> None:
    assert advance(source, trigger) == dest
    machine = build_tool_call(initial=source)
    assert machine.trigger(trigger) is True
    assert machine.state == dest


@pytest.mark.parametrize(
    ("state", "trigger"),
    [
        ("resolving", "answered"),
        ("planning", "resolved"),
        ("sending", "changed"),
        ("comparing", "mismatched"),
        ("retrying", "relisted"),
        ("succeeded", "cancelled"),
        ("failed", "errored"),
        ("resolving", "Resolved"),
        ("nowhere", "resolved"),
    ],
)
def test_advance_refuses_undeclared_pair(state: str, trigger: str) -> None:
    with pytest.raises(InvalidTransition, match=refusal(state, trigger)):
        advance(state, trigger)


def test_refusal_names_enum_members_by_their_plain_names() -> None:
    with pytest.raises(InvalidTransition, match=r"^tool-call: no transition 'planned' from state 'failed'$"):
        advance(State.failed, Trigger.planned)


def test_invalid_transition_is_a_value_error() -> None:
    assert issubclass(InvalidTransition, ValueError)


@given(state=st.sampled_from(STATES), trigger=st.one_of(st.sampled_from(list(Trigger)), st.text(max_size=12)))
def test_every_state_and_trigger_follows_an_edge_or_is_refused(state: State, trigger: str) -> None:
    declared = {(source, trig): dest for source, trig, dest in DECLARED}
    machine = build_tool_call(initial=state)
    if (state, trigger) in declared:
        assert advance(state, trigger) == declared[(state, trigger)]
        assert machine.trigger(trigger) is True
        assert machine.state == declared[(state, trigger)]
        return
    with pytest.raises(InvalidTransition, match=refusal(state, trigger)):
        advance(state, trigger)
    if trigger in set(Trigger):
        with pytest.raises(MachineError, match=rf"^\"Can't trigger event {trigger} from state {state}!\"$"):
            machine.trigger(trigger)
    else:
        unknown = "^" + re.escape(f"Do not know event named '{trigger}'.") + "$"
        with pytest.raises(AttributeError, match=unknown):
            machine.trigger(trigger)
    assert machine.state == state


def outcome(state: State, trigger: Trigger) -> tuple[str, str]:
    machine = build_tool_call(initial=state)
    try:
        machine.trigger(trigger)
    except MachineError:
        assert machine.state == state
        with pytest.raises(InvalidTransition, match=refusal(state, trigger)):
            advance(state, trigger)
        return ("refused", machine.state)
    assert advance(state, trigger) == machine.state
    return ("moved", machine.state)


def test_every_state_and_trigger_exhaustively() -> None:
    declared = {(source, trigger): dest for source, trigger, dest in DECLARED}
    assert {(s, t): outcome(s, t) for s in STATES for t in Trigger} == {
        (s, t): ("moved", declared[(s, t)]) if (s, t) in declared else ("refused", s)
        for s in STATES
        for t in Trigger
    }


@pytest.mark.parametrize("state", sorted(TERMINAL))
def test_terminal_state_accepts_nothing(state: State) -> None:
    assert [trigger for trigger in Trigger if (state, trigger) in TRANSITION_TABLE] == []
    assert build_tool_call(initial=state).get_triggers(state) == []


@pytest.mark.parametrize("state", NON_TERMINAL)
def test_non_terminal_state_can_be_cancelled(state: State) -> None:
    assert advance(state, "cancelled") == "cancelled"


def test_the_only_loop_edges_are_the_two_input_loops_bounded_by_max_input_rounds() -> None:
    assert [(e.source, e.trigger, e.dest, e.bound) for e in TOOL_CALL.loops] == [
        (*loop, "round < max_input_rounds") for loop in LOOPS
    ]


def test_graph_is_acyclic_once_the_input_loops_are_removed() -> None:
    graph = {state: forward_successors(state) for state in STATES}
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        pytest.fail(f"the tool-call machine has a cycle besides its input loops: {exc.args[1]}")
    assert sorted(order) == sorted(STATES)
    with pytest.raises(CycleError):
        list(TopologicalSorter({state: successors(state) for state in STATES}).static_order())


def all_paths() -> list[list[str]]:
    """Every path from the initial state along forward edges (each input loop taken zero times)."""
    paths, stack = [], [[str(INITIAL)]]
    while stack:
        path = stack.pop()
        if len(path) > len(STATES):
            pytest.fail(f"path longer than the number of states, so the machine has a cycle: {path}")
        nexts = forward_successors(path[-1])
        if not nexts:
            paths.append(path)
        stack.extend([*path, dest] for dest in nexts)
    return paths


def test_every_path_makes_at_most_one_extra_list_and_one_retry() -> None:
    paths = all_paths()
    assert len(paths) == 35
    assert all(path[-1] in TERMINAL for path in paths)
    assert max(path.count("relisting") for path in paths) == 1
    assert max(path.count("retrying") for path in paths) == 1
    assert max(path.count("sending") for path in paths) == 1
    assert max(len(path) for path in paths) == 11
    # The recovery is outside both loops: no loop edge leads back to relisting or retrying, and the
    # retry's loop cannot reach relisting at all.
    after_retry = {"retrying", "retry_awaiting_input", "retry_resending"}
    assert {dest for state in after_retry for dest in successors(state)} <= after_retry | set(TERMINAL)


def test_a_minus_32020_on_a_resend_is_recovered_once_and_after_the_retry_fails() -> None:
    assert advance("resending", "mismatched") == "relisting"
    assert advance("retry_resending", "mismatched") == "failed"
    assert advance("retrying", "mismatched") == "failed"


def test_every_state_is_reachable_from_initial() -> None:
    seen, queue = {INITIAL}, deque([INITIAL])
    while queue:
        for dest in successors(queue.popleft()):
            if dest not in seen:
                seen.add(State(dest))
                queue.append(State(dest))
    assert seen == set(STATES)


@given(data=st.data())
def test_random_walk_without_loop_edges_ends_in_a_terminal_state_within_ten_steps(data: st.DataObject) -> None:
    machine = build_tool_call()
    state: str = INITIAL
    for _ in range(10):
        if state in TERMINAL:
            break
        forward = sorted(t for s, t in TRANSITION_TABLE if s == state and (s, t) not in LOOP_KEYS)
        trigger = data.draw(st.sampled_from(forward))
        state = advance(state, trigger)
        machine.trigger(trigger)
        assert machine.state == state
    assert state in TERMINAL


def test_build_machine_drives_a_given_model() -> None:
    class Call:
        state: str

    call = Call()
    machine = build_tool_call(model=call)
    assert machine.models == [call]
    assert call.state == "resolving"
    call.resolved()  # type: ignore[attr-defined]
    assert call.state == "planning"
    assert not hasattr(call, "to_failed")
    call.cancelled()  # type: ignore[attr-defined]
    assert call.state == "cancelled"
    with pytest.raises(MachineError, match=r"^\"Can't trigger event resolved from state cancelled!\"$"):
        call.resolved()  # type: ignore[attr-defined]
    assert call.state == "cancelled"


@pytest.mark.parametrize("state", STATES)
def test_machine_accepts_members_and_plain_names_alike(state: State) -> None:
    assert build_tool_call(initial=state).state == state
    assert build_tool_call(initial=str(state)).state == state
    machine = build_tool_call()
    machine.set_state(state)
    assert machine.state == state
    assert sorted(machine.states) == sorted(STATES)


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        pytest.param(
            _machine,
            {"__future__", "collections", "definition", "enum", "input_loop", "typing"},
            id="tool_call",
        ),
        pytest.param(
            _definition,
            {"__future__", "collections", "dataclasses", "enum", "types", "typing", "transitions"},
            id="definition",
        ),
    ],
)
def test_machine_modules_import_nothing_but_the_standard_library_and_transitions(
    module: Any, expected: set[str]
) -> None:
    imported = set()
    for node in ast.walk(ast.parse(Path(module.__file__).read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported == expected


@pytest.mark.parametrize("definition", DEFINITIONS)
def test_what_define_derives_follows_from_the_enums_and_the_edges(definition: MachineDefinition[Any, Any]) -> None:
    # The initial state is the first declared, the terminal states are those no declared edge leaves, and the
    # cancel trigger, where there is one, leads from every other state to one terminal state.
    cancel = definition.cancel_trigger
    assert definition.initial == definition.states[0]
    left = {e.source for e in definition.edges}
    assert definition.terminal == {state for state in definition.states if state not in left}
    if cancel is None:
        return
    cancel_edges = [e for e in definition.edges if e.trigger == cancel]
    assert [e.source for e in cancel_edges] == [state for state in definition.states if state in left]
    assert len({e.dest for e in cancel_edges}) == 1
    assert definition.edges[-len(cancel_edges) :] == tuple(cancel_edges)


@pytest.mark.parametrize("definition", DEFINITIONS)
def test_each_walkthrough_names_a_tooling_module_with_render(definition: MachineDefinition[Any, Any]) -> None:
    import importlib

    assert definition.walkthrough is not None
    assert definition.walkthrough.startswith("tooling.walkthrough")
    assert callable(importlib.import_module(definition.walkthrough).render)


def test_the_registry_lists_every_machine_module_by_its_name_in_capitals() -> None:
    import importlib

    for name, definition in MACHINES.items():
        module = importlib.import_module(f"mcpfsm._machines.{name.replace('-', '_')}")
        assert getattr(module, name.replace("-", "_").upper()) is definition
    assert list(MACHINES) == ["tool-call", "authorization", "gate", "group", "input", "task"]
