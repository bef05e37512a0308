"""Recorded runs for the trail viewer's tests: the walkthroughs' published recordings and live runs.

- :func:`walkthrough_records`: every example of ``specs/tool-call.md`` and ``specs/authorization.md`` (runs
  recorded against the real test server and authorization server by ``mcpfsm diagram``), read back from their
  event tables into audit records (``tooling.recorded``, which also makes the manual's reports);
- :func:`input_records`: a live run of the input machine (two SEP-2322 rounds of a ``prompts/get``);
- :func:`group_records`: live tool calls against two real test servers, each record naming its server in a
  ``server`` field, as a trail of a group of servers does;
- :data:`TASK` and :func:`task_records`: a machine mcpfsm does not define, and a run of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm._machines.definition import MachineDefinition, edge
from tests.support.fakeserver import FakeServer, result
from tests.support.peer.fixtures import REPO_ROOT, start_http_peer
from tooling import recorded
from tooling.recorded import AT

_AT: Final = AT


def walkthrough_records() -> list[dict[str, Any]]:
    """The walkthroughs' recorded runs as audit records (ids ``tool-call-N[-K]``, ``authorization-N-F``, ``task-N``)."""
    return recorded.walkthrough_records(REPO_ROOT)


ASK: Final = {
    "resultType": "input_required",
    "inputRequests": {"who": {"method": "elicitation/create", "params": {"message": "Who?", "requestedSchema": {
        "type": "object", "properties": {}}}}},
}
ASK_MODEL: Final = {
    "resultType": "input_required",
    "inputRequests": {"line": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}},
}


async def _input_run() -> list[dict[str, Any]]:
    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada"}}

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    fake = FakeServer()
    fake.queue("prompts/get", result(ASK), result(ASK_MODEL), result({"messages": []}))
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append, on_elicitation=elicit, on_sampling=sample) as client:
        await client.get_prompt("greet")
    return [event.to_dict() for event in events]


def input_records() -> list[dict[str, Any]]:
    """A live run of the input machine: the two input rounds of ``prompts/get 'greet'``."""
    return trio.run(_input_run)


_SQL: Final = {"query": "select 1", "database": "analytics", "region": "eu"}


async def _group_run(urls: dict[str, str], peers: dict[str, Any]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for name, url in urls.items():

        def record(event: mcpfsm.CallEvent, server: str = name) -> None:
            records.append({**event.to_dict(), "server": server})

        async with mcpfsm.Client.http(url, on_event=record) as client:
            sql = (await client.tools()).get("execute-sql")
            assert sql is not None
            await sql.call(_SQL)
            if name == "beta":
                await trio.to_thread.run_sync(peers[name].control, {"action": "evolve"})
                await sql.call(_SQL)  # the stale handle: -32020, relist, retry
                # An injected -32020 with nothing changed: the plan is unchanged and the call fails.
                await trio.to_thread.run_sync(
                    peers[name].control, {"action": "mismatch", "tool": "execute-sql", "count": 1}
                )
                with pytest.raises(mcpfsm.HeaderMismatchError):
                    await sql.call(_SQL)
    return records


def group_records() -> list[dict[str, Any]]:
    """Live tool calls against two real test servers, ``alpha`` (one call) and ``beta`` (three: a success, a
    -32020 recovery and a call failed by an unchanged plan), each record with its ``server``."""
    with start_http_peer(mode="modern") as alpha, start_http_peer(mode="modern") as beta:
        peers = {"alpha": alpha, "beta": beta}
        return trio.run(_group_run, {name: peer.url for name, peer in peers.items()}, peers)


def jsonl(records: list[dict[str, Any]]) -> str:
    """The records as JSON Lines."""
    return "".join(json.dumps(record) + "\n" for record in records)


# --- a machine mcpfsm does not have yet: the viewer needs no code for it ----------------------------------------


class TaskState(StrEnum):
    submitted = "submitted"
    working = "working"
    input_required = "input_required"
    completed = "completed"
    failed = "failed"


class TaskTrigger(StrEnum):
    accepted = "accepted"
    polled = "polled"
    needs_input = "needs_input"
    answered = "answered"
    done = "done"
    errored = "errored"


TASK: Final = MachineDefinition(
    name="task",
    title="A long-running task, polled",
    states=tuple(TaskState),
    triggers=tuple(TaskTrigger),
    initial=TaskState.submitted,
    terminal=frozenset({TaskState.completed, TaskState.failed}),
    edges=(
        edge(TaskTrigger.accepted, TaskState.submitted, TaskState.working, "task created"),
        edge(TaskTrigger.polled, TaskState.working, TaskState.working, "still working", "poll < max_polls"),
        edge(TaskTrigger.needs_input, TaskState.working, TaskState.input_required, "status input_required"),
        edge(TaskTrigger.answered, TaskState.input_required, TaskState.working, "input sent", "round < max_rounds"),
        edge(TaskTrigger.done, TaskState.working, TaskState.completed, "status completed"),
        edge(TaskTrigger.errored, TaskState.working, TaskState.failed, "status failed"),
    ),
    descriptions={state: f"the task is {state}" for state in TaskState},
)


def task_records() -> list[dict[str, Any]]:
    """One recorded run of :data:`TASK`: two polls, an input round, a poll, then completed; each with its poll."""
    path = [
        ("submitted", None), ("working", "accepted"), ("working", "polled"), ("input_required", "needs_input"),
        ("working", "answered"), ("working", "polled"), ("completed", "done"),
    ]
    records = []
    previous = None
    for seq, (state, trigger) in enumerate(path):
        records.append({
            "machine": "task", "call_id": "task-1", "seq": seq, "tool": "render-video", "state": state,
            "previous": previous, "trigger": trigger, "attempt": 1, "at": _AT, "elapsed": seq * 0.5,
            "task_id": "t-42", "poll": seq, "status": state,
        })
        previous = state
    return records


@dataclass(frozen=True, slots=True)
class Ran:
    """What one ``python -m mcpfsm ...`` run left."""

    code: int
    stdout: str
    stderr: str


def run_mcpfsm(*args: str, timeout: float = 120) -> Ran:
    """Run ``python -m mcpfsm ARGS`` from the repository root and wait for it to exit."""
    done = subprocess.run(
        [sys.executable, "-m", "mcpfsm", *args],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        check=False,
    )
    return Ran(done.returncode, done.stdout, done.stderr)
