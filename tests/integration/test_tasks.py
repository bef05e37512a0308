"""Tasks (SEP-2663) against a real tasks server: ``mcpfsm._tooling.peer_tasks`` on the official SDK's extensions.

Every test talks to the server over HTTP on 127.0.0.1 and reads what it received from its log (the method, the
``Mcp-Method`` and ``Mcp-Name`` headers, the params and the extensions the request declared).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import trio

import mcpfsm
from tests.peer.fixtures import HttpPeer, start_http_peer

TASKS = "io.modelcontextprotocol/tasks"


@pytest.fixture(scope="module")
def server() -> Iterator[HttpPeer]:
    with start_http_peer("modern", module="mcpfsm._tooling.peer_tasks") as running:
        yield running


@pytest.fixture
def tasks(server: HttpPeer) -> HttpPeer:
    server.clear_log()
    return server


def sent(server: HttpPeer) -> list[tuple[str, str | None, str | None]]:
    """(method, Mcp-Method, Mcp-Name) of every POST the server received, in order."""
    return [(each["method"], each["mcp_method"], each["mcp_name"]) for each in server.log()]


class Asker:
    """An elicitation handler that records what it was asked and accepts with ``ok: true``."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(params["message"])
        return {"action": "accept", "content": {"ok": True}}


async def test_a_call_answered_with_a_task_returns_the_final_result(tasks: HttpPeer) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with mcpfsm.Client.http(tasks.url, tasks=True, on_event=events.append) as client:
        result = await client.call_tool("build", {"seconds": 0.2, "poll_ms": 50})
    assert result.text == "built in 0.2 s"
    task_events = [e for e in events if isinstance(e, mcpfsm.TaskEvent)]
    assert task_events[0].state == "submitting" and task_events[0].task_id is None
    assert task_events[1].state == "working" and task_events[1].trigger == "created"
    assert {e.state for e in task_events[2:-1]} == {"working"}
    assert task_events[-1].state == "completed"
    task_id = task_events[-1].task_id
    assert task_id == "task-1:build" or task_id.endswith(":build")
    call_events = [e for e in events if e.machine == "tool-call"]
    assert [e.state for e in call_events] == ["resolving", "planning", "sending", "succeeded"]
    # The call's terminal event comes after the task's.
    assert events.index(call_events[-1]) > events.index(task_events[-1])
    log = sent(tasks)
    assert log[0] == ("server/discover", "server/discover", None)
    assert log[1] == ("tools/call", "tools/call", "build")
    assert set(log[2:]) == {("tasks/get", "tasks/get", task_id)}
    assert [each["extensions"] for each in tasks.log()[1:]] == [[TASKS]] * (len(log) - 1)
    assert tasks.log()[0]["extensions"] == []
    assert await client.store.get(f"task {tasks.url} {task_id}") is None
