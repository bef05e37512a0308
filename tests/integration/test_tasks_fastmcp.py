"""Tasks (SEP-2663) against a third-party tasks server: FastMCP with ``fastmcp-tasks``, in-memory backend.

The server (tests/support/fastmcp_tasks_server.py) runs as a subprocess from a venv of its own
(tests/support/fastmcp_tasks_peer.py: fastmcp-tasks' pins clash with the test extra's fastmcp). fastmcp-tasks checks
that ``Mcp-Name`` matches the body's ``taskId`` and that every ``tasks/*`` request declares the extension, so a call
that completes already shows both; the log shows them too.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
import trio

import mcpfsm
from tests.support.fastmcp_tasks_peer import FastmcpTasksServer, run_fastmcp_tasks

TASKS = "io.modelcontextprotocol/tasks"


@pytest.fixture(scope="module")
def server() -> Iterator[FastmcpTasksServer]:
    with run_fastmcp_tasks() as running:
        yield running


def task_requests(server: FastmcpTasksServer, task_id: str) -> list[dict[str, Any]]:
    """The ``tasks/*`` requests the server received for ``task_id``, in order."""
    return [e for e in server.log() if str(e["method"]).startswith("tasks/") and e["params"]["taskId"] == task_id]


async def test_a_call_with_tasks_true_returns_the_final_result(server: FastmcpTasksServer) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with mcpfsm.Client.http(server.url, tasks=True, on_event=events.append) as client:
        result = await client.call_tool("build", {"seconds": 0.3})
    assert result.text == "built in 0.3 s"
    task_events = [e for e in events if isinstance(e, mcpfsm.TaskEvent)]
    assert task_events[1].trigger == "created" and task_events[-1].state == "completed"
    task_id = task_events[-1].task_id
    assert task_id is not None
    polls = task_requests(server, task_id)
    assert polls and {(e["method"], e["mcp_method"], e["mcp_name"]) for e in polls} == {
        ("tasks/get", "tasks/get", mcpfsm.encode_header_value(task_id))
    }
    assert all(TASKS in e["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] for e in polls)
    # The server's pollIntervalMs (100 ms) reached the handle's events.
    assert {e.poll_interval for e in task_events[1:]} == {0.1}


async def test_without_tasks_true_an_optional_task_tool_answers_inline(server: FastmcpTasksServer) -> None:
    async with mcpfsm.Client.http(server.url) as client:
        assert (await client.call_tool("build", {"seconds": 0})).text == "built in 0.0 s"


async def test_a_required_task_tool_tells_a_client_without_tasks_true_to_pass_it(server: FastmcpTasksServer) -> None:
    async with mcpfsm.Client.http(server.url) as client:
        with pytest.raises(mcpfsm.RpcError, match=r"create the client with tasks=True") as caught:
            await client.call_tool("batch", {"n": 21})
    assert caught.value.code == -32021
    async with mcpfsm.Client.http(server.url, tasks=True) as client:
        assert (await client.call_tool("batch", {"n": 21})).structured_content == {"result": 42}


async def test_start_then_wait_on_the_handle(server: FastmcpTasksServer) -> None:
    async with mcpfsm.Client.http(server.url, tasks=True) as client:
        tool = (await client.tools()).get("hold")
        assert tool is not None
        task = await tool.start({"name": "start-wait"})
        assert (task.tool, task.status, task.poll_interval) == ("hold", "working", 0.1)
        assert task.id is not None and task.created_at is not None and task.ttl is not None
        assert await task.refresh() == "working"
        assert [t.id for t in await client.pending_tasks()] == [task.id]
        server.release("start-wait")
        assert (await task.wait()).text == "released start-wait"
        assert task.status == "completed"
        assert await client.pending_tasks() == []


async def test_cancel_sends_tasks_cancel_and_the_server_reports_cancelled(server: FastmcpTasksServer) -> None:
    async with mcpfsm.Client.http(server.url, tasks=True) as client:
        task = await client.start_tool("hold", {"name": "never-released"})
        assert task.id is not None
        await task.cancel()
        assert task.status == "cancelled"
        with pytest.raises(mcpfsm.TaskError, match=rf"^task {task.id} was cancelled$"):
            await task.wait()
        # A second client asking the server directly sees the same.
        again = client.task(task.id)
        assert await again.refresh() == "cancelled"
    sent = [(e["method"], e["mcp_name"]) for e in task_requests(server, task.id)]
    assert sent[0] == ("tasks/cancel", mcpfsm.encode_header_value(task.id))
    assert "notifications/cancelled" not in [e["method"] for e in server.log()]


async def test_input_required_is_answered_once_with_tasks_update(server: FastmcpTasksServer) -> None:
    asked: list[str] = []

    async def accept(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"ok": True}}

    events: list[mcpfsm.CallEvent] = []
    async with mcpfsm.Client.http(server.url, tasks=True, on_elicitation=accept, on_event=events.append) as client:
        result = await client.call_tool("approve")
    assert json.loads(result.text) == {"action": "accept", "content": {"ok": True}}
    assert asked == ["confirm?"]
    task_id = [e for e in events if isinstance(e, mcpfsm.TaskEvent)][-1].task_id
    assert task_id is not None
    # fastmcp-tasks surfaces the tool's key "confirm" under a key of its own: the client answers the key it was shown.
    (surfaced,) = [e.input_requests for e in events if isinstance(e, mcpfsm.TaskEvent) and e.state == "input_required"]
    assert surfaced is not None and list(surfaced.values()) == ["elicitation/create"]
    updates = [e["params"] for e in task_requests(server, task_id) if e["method"] == "tasks/update"]
    answer = {"action": "accept", "content": {"ok": True}}
    assert [u["inputResponses"] for u in updates] == [dict.fromkeys(surfaced, answer)]
    states = [e.state for e in events if isinstance(e, mcpfsm.TaskEvent)]
    # Created working (the first leg has not asked yet), asked once, answered once, then working to the end.
    distinct = [state for state, _ in itertools.groupby(states)]
    assert distinct == ["submitting", "working", "input_required", "answering", "working", "completed"]
    assert states.count("input_required") == 1


async def test_an_exception_in_the_tool_completes_the_task_with_an_error_result(server: FastmcpTasksServer) -> None:
    # fastmcp-tasks reports a tool that raised as the foreground call would: a completed task, isError set.
    async with mcpfsm.Client.http(server.url, tasks=True) as client:
        task = await client.start_tool("explode")
        result = await task.wait()
    assert result.is_error and "compiler crashed" in result.text
    assert task.status == "completed"


async def test_a_failed_task_raises_its_error_with_the_task_id(server: FastmcpTasksServer) -> None:
    async with mcpfsm.Client.http(server.url, tasks=True) as client:
        task = await client.start_tool("refuse")
        with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32001: quota exceeded$") as caught:
            await task.wait()
        assert await client.pending_tasks() == []
    assert (caught.value.task_id, caught.value.code, caught.value.data) == (task.id, -32001, {"retryAfter": 60})
    assert task.status == "failed"


async def test_polls_are_spaced_by_the_servers_poll_interval(server: FastmcpTasksServer) -> None:
    async with mcpfsm.Client.http(server.url, tasks=True) as client:
        task = await client.start_tool("paced", {"seconds": 1.0})
        assert task.poll_interval == 0.3
        assert (await task.wait()).text == "paced 1.0 s"
    assert task.id is not None
    log = [e for e in server.log() if e["method"] == "tools/call" or e["params"].get("taskId") == task.id]
    created = next(i for i, e in enumerate(log) if e["method"] == "tools/call" and e["params"]["name"] == "paced")
    times = [e["at"] for e in log[created:]]
    assert len(times) >= 3  # the call, at least two polls
    # Measured by the server's clock, between requests it received: never sooner than pollIntervalMs (300 ms; a
    # millisecond of slack for the two clocks' rounding), and not one poll per 50 ms floor either.
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert min(gaps) >= 0.299, gaps
    assert len(times) - 1 <= 1.0 / 0.3 + 2


class CountingStore(mcpfsm.MemoryStore):
    """A memory store that counts its writes by key."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: dict[str, int] = {}

    async def set(self, key: str, value: Any) -> None:
        self.writes[key] = self.writes.get(key, 0) + 1
        await super().set(key, value)


async def test_polls_that_change_nothing_write_nothing_to_the_store(server: FastmcpTasksServer) -> None:
    # fastmcp-tasks answers every tasks/get with lastUpdatedAt set to the time of that request: the record (tool,
    # answered keys, status, createdAt, ttlMs) is the same all the same, so it is written once, at creation.
    store = CountingStore()
    async with mcpfsm.Client.http(server.url, tasks=True, store=store) as client:
        task = await client.start_tool("hold", {"name": "no-writes"})
        for _ in range(3):
            assert await task.refresh() == "working"
        assert task.id is not None
        key = f"task {server.url} {task.id}"
        assert store.writes[key] == 1
        server.release("no-writes")
        assert (await task.wait()).text == "released no-writes"
    assert store.writes[key] == 1 and await store.get(key) is None
    assert [e["method"] for e in task_requests(server, task.id)].count("tasks/get") >= 4


async def test_total_timeout_stops_waiting_on_a_task_that_does_not_end(server: FastmcpTasksServer) -> None:
    store = mcpfsm.MemoryStore()
    async with mcpfsm.Client.http(server.url, tasks=True, total_timeout=0.5, store=store) as client:
        with pytest.raises(mcpfsm.CallTimeoutError) as caught:
            await client.call_tool("hold", {"name": "stalled"})
        task_id = caught.value.task_id
        assert task_id is not None
        assert [t.id for t in await client.pending_tasks()] == [task_id]
    # The task goes on on the server: release it and pick it up again, without the limit.
    server.release("stalled")
    async with mcpfsm.Client.http(server.url, tasks=True, store=store) as client:
        (pending,) = await client.pending_tasks()
        assert pending.id == task_id
        assert (await pending.wait()).text == "released stalled"
        assert await client.pending_tasks() == []


async def test_a_ttl_that_is_not_counted_from_created_at_expires_a_task_that_goes_on() -> None:
    # fastmcp-tasks' ttlMs is how long its backend keeps a finished task (15 min; 2 s here), and a task still running
    # past createdAt + ttlMs is still there. mcpfsm follows SEP-2663 (the TTL as a backstop from createdAt) and stops
    # waiting; the error names the task.
    with run_fastmcp_tasks("--execution-ttl", "2") as short:
        async with mcpfsm.Client.http(short.url, tasks=True) as client:
            task = await client.start_tool("hold", {"name": "outlives-ttl"})
            assert task.ttl == 2.0
            with pytest.raises(mcpfsm.TaskError, match=r"expired: its ttlMs of 2000 ms passed") as caught:
                await task.wait()
            assert (caught.value.status, caught.value.task_id) == ("expired", task.id)
            assert await client.pending_tasks() == []
            # A new handle past the TTL expires at its first non-terminal answer too; once the task is over on
            # the server, one reads its result.
            assert await client.task(task.id).refresh() == "expired"
            short.release("outlives-ttl")
            with trio.fail_after(10):
                while await (again := client.task(task.id)).refresh() != "completed":
                    await trio.sleep(0.05)  # a poll loop on the server's answer, bounded by fail_after
            assert (await again.wait()).text == "released outlives-ttl"


async def test_a_task_waiting_for_input_cancels(server: FastmcpTasksServer) -> None:
    # A task parked in input_required is, inside fastmcp-tasks, a finished backend execution with requests left over;
    # tasks/cancel still ends it cancelled, and nothing is asked afterwards.
    async with mcpfsm.Client.http(server.url, tasks=True) as client:
        task = await client.start_tool("approve")
        with trio.fail_after(10):
            while await task.refresh() != "input_required":
                await trio.sleep(0.05)  # a poll loop on the server's answer, bounded by fail_after
        await task.cancel()
        assert task.status == "cancelled"
        assert task.id is not None
        assert await client.task(task.id).refresh() == "cancelled"
    assert "tasks/update" not in [e["method"] for e in task_requests(server, task.id)]
