"""The generic driver (``mcpfsm._drivers.driver``) on a machine of its own, apart from any protocol.

Then every machine in ``MACHINES`` driven by effects that report random triggers: what the run is told is
exactly the walk along the declared edges, whatever the triggers.

The machine: ``loading`` → ``checking`` → ``done``, ``checking`` may loop back (bounded) and any non-terminal
state ends in ``failed`` or, on trio cancellation, ``cancelled``. Each test scripts the triggers its effects
report and asserts the whole list of transitions the run was told of, in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from mcpfsm._drivers.driver import Effect, advance, cancellation_summary, drive, start
from mcpfsm._machines.definition import CompiledMachine, Edge, InvalidTransition, MachineDefinition
from mcpfsm._machines.registry import MACHINES


class S(StrEnum):
    loading = "loading"
    checking = "checking"
    done = "done"
    failed = "failed"
    cancelled = "cancelled"


class T(StrEnum):
    loaded = "loaded"
    again = "again"
    passed = "passed"
    broke = "broke"
    cancelled = "cancelled"


def _definition(*, cancellable: bool) -> MachineDefinition[S, T]:
    edges = [
        Edge(trigger=T.loaded, source=S.loading, dest=S.checking, guard="loaded"),
        Edge(trigger=T.again, source=S.checking, dest=S.loading, guard="stale", bound="twice at most"),
        Edge(trigger=T.passed, source=S.checking, dest=S.done, guard="fine"),
        Edge(trigger=T.broke, source=S.checking, dest=S.failed, guard="broken"),
    ]
    states = tuple(S) if cancellable else tuple(s for s in S if s is not S.cancelled)
    if cancellable:
        edges += [
            Edge(trigger=T.cancelled, source=source, dest=S.cancelled, guard="trio cancellation")
            for source in (S.loading, S.checking)
        ]
    return MachineDefinition(
        name="toy" if cancellable else "toy-uncancellable",
        title="A toy",
        states=states,
        triggers=tuple(T),
        initial=S.loading,
        terminal=frozenset({S.done, S.failed, S.cancelled} & set(states)),
        edges=tuple(edges),
        descriptions={state: f"{state}." for state in states},
        cancel_trigger=T.cancelled if cancellable else None,
    )


TOY = CompiledMachine(_definition(cancellable=True))
UNCANCELLABLE = CompiledMachine(_definition(cancellable=False))

Told = tuple[str, str | None, str | None]


class Toy:
    """A run that reports scripted triggers and records what the driver tells it, as plain strings."""

    def __init__(self, script: Mapping[str, list[T]]) -> None:
        self.script = {state: list(triggers) for state, triggers in script.items()}
        self.told: list[Told] = []
        self.ran: list[str] = []
        self.scope: trio.CancelScope | None = None

    def entered(self, state: str, previous: str | None, trigger: str | None) -> None:
        self.told.append(
            (str(state), None if previous is None else str(previous), None if trigger is None else str(trigger))
        )

    async def effect(self, state: S) -> T:
        self.ran.append(str(state))
        return self.script[state].pop(0)


async def _loading(run: Toy) -> T:
    return await run.effect(S.loading)


async def _checking(run: Toy) -> T:
    return await run.effect(S.checking)


async def _checking_until_cancelled(run: Toy) -> T:
    run.ran.append("checking")
    assert run.scope is not None
    run.scope.cancel()
    await trio.sleep_forever()
    raise AssertionError("not reached")


async def _checking_buggy(run: Toy) -> T:
    run.ran.append("checking")
    raise RuntimeError("a bug in an effect")


EFFECTS: Mapping[str, Effect[Toy, T]] = {S.loading: _loading, S.checking: _checking}


async def test_a_run_is_told_every_state_in_order_and_ends_terminal() -> None:
    run = Toy({S.loading: [T.loaded, T.loaded], S.checking: [T.again, T.passed]})
    assert await drive(TOY, EFFECTS, run) == S.done
    assert run.told == [
        ("loading", None, None),
        ("checking", "loading", "loaded"),
        ("loading", "checking", "again"),
        ("checking", "loading", "loaded"),
        ("done", "checking", "passed"),
    ]
    assert run.ran == ["loading", "checking", "loading", "checking"]


async def test_a_failed_run_returns_its_terminal_state_for_the_caller_to_raise() -> None:
    run = Toy({S.loading: [T.loaded], S.checking: [T.broke]})
    assert await drive(TOY, EFFECTS, run) == S.failed
    assert run.told == [("loading", None, None), ("checking", "loading", "loaded"), ("failed", "checking", "broke")]


async def test_cancellation_inside_an_effect_follows_the_cancel_edge_and_propagates() -> None:
    run = Toy({S.loading: [T.loaded]})
    with trio.CancelScope() as scope:
        run.scope = scope
        await drive(TOY, {**EFFECTS, S.checking: _checking_until_cancelled}, run)
    assert scope.cancelled_caught
    assert run.told == [
        ("loading", None, None),
        ("checking", "loading", "loaded"),
        ("cancelled", "checking", "cancelled"),
    ]
    assert run.ran == ["loading", "checking"]


async def test_an_effect_that_never_waits_is_still_cancelled_before_it_runs() -> None:
    run = Toy({S.loading: [T.loaded]})
    with trio.CancelScope() as scope:
        scope.cancel()
        await drive(TOY, EFFECTS, run)
    assert scope.cancelled_caught
    assert (run.told, run.ran) == ([("loading", None, None), ("cancelled", "loading", "cancelled")], [])


async def test_a_machine_without_a_cancel_trigger_publishes_nothing_more_on_cancellation() -> None:
    run = Toy({S.loading: [T.loaded]})
    with trio.CancelScope() as scope:
        run.scope = scope
        await drive(UNCANCELLABLE, {**EFFECTS, S.checking: _checking_until_cancelled}, run)
    assert scope.cancelled_caught
    assert run.told == [("loading", None, None), ("checking", "loading", "loaded")]


async def test_an_undeclared_transition_raises_and_is_not_published() -> None:
    run = Toy({S.loading: [T.passed]})
    with pytest.raises(InvalidTransition, match=r"^toy: no transition 'passed' from state 'loading'$"):
        await drive(TOY, EFFECTS, run)
    assert (run.told, run.ran) == ([("loading", None, None)], ["loading"])


async def test_an_effect_raising_is_a_bug_and_no_edge_is_published() -> None:
    run = Toy({S.loading: [T.loaded]})
    with pytest.raises(RuntimeError, match=r"^a bug in an effect$"):
        await drive(TOY, {**EFFECTS, S.checking: _checking_buggy}, run)
    assert run.told == [("loading", None, None), ("checking", "loading", "loaded")]


def test_a_tracker_starts_and_advances_without_effects() -> None:
    run = Toy({})
    state = start(TOY, run)
    state = advance(TOY, run, state, T.loaded)
    state = advance(TOY, run, state, "passed")
    assert state is S.done
    with pytest.raises(InvalidTransition, match=r"^toy: no transition 'loaded' from state 'done'$"):
        advance(TOY, run, state, T.loaded)
    assert run.told == [("loading", None, None), ("checking", "loading", "loaded"), ("done", "checking", "passed")]


def test_the_cancellation_summary_names_the_run() -> None:
    assert cancellation_summary("call") == {"type": "Cancelled", "code": None, "message": "the call was cancelled"}


# --- every machine, random triggers ------------------------------------------------------------------------


class _Exhausted(Exception):
    """The run took its last step (the effect raises: a bug's path, which ends the run without an edge)."""


class Scripted:
    """A run whose every effect draws its trigger: mostly one the state declares, sometimes any trigger."""

    def __init__(self, definition: MachineDefinition[Any, Any], data: st.DataObject, steps: int) -> None:
        self.definition = definition
        self.data = data
        self.steps = steps
        self.triggers: list[str] = []
        self.told: list[Told] = []

    def entered(self, state: str, previous: str | None, trigger: str | None) -> None:
        self.told.append(
            (str(state), None if previous is None else str(previous), None if trigger is None else str(trigger))
        )

    def draw(self) -> str:
        if len(self.triggers) == self.steps:
            raise _Exhausted
        state = self.told[-1][0]
        # A non-terminal state always has an edge (its cancel edge at least): the run only asks there.
        leaving = [str(e.trigger) for e in self.definition.edges if str(e.source) == state]
        every = [str(t) for t in self.definition.triggers]
        trigger = self.data.draw(st.one_of(st.sampled_from(leaving), st.sampled_from(every)))
        self.triggers.append(trigger)
        return trigger


async def _scripted(run: Scripted) -> str:
    return run.draw()


def _walk(definition: MachineDefinition[Any, Any], triggers: list[str]) -> tuple[list[Told], str]:
    # The oracle: the declared edges themselves, not the compiled table the driver uses.
    edges = {(str(e.source), str(e.trigger)): str(e.dest) for e in definition.edges}
    terminal = {str(state) for state in definition.terminal}
    state = str(definition.initial)
    told: list[Told] = [(state, None, None)]
    for trigger in triggers:
        dest = edges.get((state, trigger))
        if dest is None:
            return told, "invalid"
        told.append((dest, state, trigger))
        state = dest
    return told, state if state in terminal else "exhausted"


@pytest.mark.parametrize("name", list(MACHINES))
@given(data=st.data(), steps=st.integers(min_value=0, max_value=15))
def test_every_machine_is_driven_along_its_declared_edges_only(name: str, data: st.DataObject, steps: int) -> None:
    definition = MACHINES[name]
    compiled = CompiledMachine(definition)
    effects = {str(state): _scripted for state in definition.states if state not in definition.terminal}
    run = Scripted(definition, data, steps)

    async def main() -> str:
        try:
            return str(await drive(compiled, effects, run))
        except InvalidTransition:
            return "invalid"
        except _Exhausted:
            return "exhausted"

    outcome = trio.run(main)
    assert (run.told, outcome) == _walk(definition, run.triggers)
