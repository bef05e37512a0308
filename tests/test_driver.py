"""The generic driver (``mcpfsm._drivers.driver``) on a machine of its own, apart from any protocol.

The machine: ``loading`` → ``checking`` → ``done``, ``checking`` may loop back (bounded) and any non-terminal
state ends in ``failed`` or, on trio cancellation, ``cancelled``. Each test scripts the triggers its effects
report and asserts the whole list of transitions the run was told of, in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

import pytest
import trio

from mcpfsm._drivers.driver import Effect, advance, cancellation_summary, drive, start
from mcpfsm._machines.definition import CompiledMachine, Edge, InvalidTransition, MachineDefinition


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
