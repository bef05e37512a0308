"""Tasks (SEP-2663) against scripted answers: the poll interval's floor and default, answers that are not tasks, a
``failed`` task without ``error``, a task nobody asked for, ``Mcp-Name`` for ids that are not header-safe, -32021 on
either status, and a waiter's cancellation (``httpx.MockTransport``, trio's autojump clock)."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest
import trio

import mcpfsm
from tests.support.fakeserver import Answer, FakeServer, Seen, result, rpc_error

TASKS = "io.modelcontextprotocol/tasks"
CREATED = "2026-01-01T00:00:00Z"


def task(status: str = "working", task_id: str = "t-1", **fields: Any) -> dict[str, Any]:
    return {"taskId": task_id, "status": status, "createdAt": CREATED, "lastUpdatedAt": CREATED, "ttlMs": None,
            **fields}


def created(**fields: Any) -> Answer:
    return result({"resultType": "task", **task(**fields)})


def done(text: str = "done", **fields: Any) -> Answer:
    return result(task("completed", result={"content": [{"type": "text", "text": text}]}, **fields))


def timed(times: list[float], answer: Answer) -> Answer:
    async def record(seen: Seen) -> httpx.Response:
        times.append(trio.current_time())
        return await answer(seen)

    return record


@pytest.mark.parametrize(
    ("interval", "expected"), [(0, 0.05), (10, 0.05), (None, 1.0), (250, 0.25)], ids=["zero", "10ms", "absent", "250ms"]
)
async def test_polls_honour_poll_interval_ms_with_a_floor_and_a_default(
    fake: FakeServer, autojump_clock: trio.abc.Clock, interval: int | None, expected: float
) -> None:
    extra = {} if interval is None else {"pollIntervalMs": interval}
    times: list[float] = []
    fake.queue("tools/call", timed(times, created(**extra)))
    fake.queue("tasks/get", *(timed(times, result(task(**extra))) for _ in range(3)), timed(times, done(**extra)))
    async with fake.client(tasks=True) as client:
        assert (await client.call_tool("job")).text == "done"
    gaps = [round(later - earlier, 6) for earlier, later in itertools.pairwise(times)]
    # The first poll waits one interval too.
    assert gaps == [expected] * 4


async def test_a_poll_answer_that_is_not_a_task_raises_and_the_task_goes_on(
    fake: FakeServer, autojump_clock: trio.abc.Clock
) -> None:
    fake.queue("tools/call", created(pollIntervalMs=100))
    fake.queue("tasks/get", result({"content": []}), done())
    async with fake.client(tasks=True) as client:
        handle = await client.start_tool("job")
        with pytest.raises(mcpfsm.ProtocolError, match=r'^the tasks/get answer is not a task: "taskId" is not a'):
            await handle.wait()
        assert handle.status == "working"
        assert (await handle.wait()).text == "done"


async def test_a_failed_task_without_error_raises_an_internal_error(
    fake: FakeServer, autojump_clock: trio.abc.Clock
) -> None:
    fake.queue("tools/call", created(pollIntervalMs=100))
    fake.queue("tasks/get", result(task("failed")))
    async with fake.client(tasks=True) as client:
        with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32603: task t-1 failed without an error$") as e:
            await client.call_tool("job")
    assert e.value.task_id == "t-1"


async def test_a_task_answer_without_the_extension_declared_is_a_protocol_error(fake: FakeServer) -> None:
    fake.queue("tools/call", created())
    async with fake.client() as client:
        with pytest.raises(mcpfsm.ProtocolError, match=r"did not declare the tasks extension"):
            await client.call_tool("job")
    assert fake.methods() == ["server/discover", "tools/call"]


async def test_mcp_name_carries_the_task_id_encoded_when_it_is_not_header_safe(
    fake: FakeServer, autojump_clock: trio.abc.Clock
) -> None:
    fake.queue("tools/call", created(task_id="tâche 1", pollIntervalMs=100))
    fake.queue("tasks/get", done(task_id="tâche 1"))
    async with fake.client(tasks=True) as client:
        await client.call_tool("job")
    (poll,) = [seen for seen in fake.requests if seen.rpc_method == "tasks/get"]
    assert poll.mcp == {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tasks/get",
        "Mcp-Name": mcpfsm.encode_header_value("tâche 1"),
    }
    assert poll.mcp["Mcp-Name"].startswith("=?base64?")
    assert poll.params["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] == {TASKS: {}}


@pytest.mark.parametrize("status", [200, 400])
async def test_minus_32021_names_tasks_true_on_either_status(fake: FakeServer, status: int) -> None:
    data = {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    fake.queue("tools/call", rpc_error(-32021, "Missing required client capability", status=status, data=data))
    async with fake.client() as client:
        with pytest.raises(mcpfsm.RpcError) as caught:
            await client.call_tool("job")
    assert str(caught.value) == (
        "JSON-RPC error -32021: Missing required client capability (the server runs this tool only as a task: "
        "create the client with tasks=True, docs/tasks.md)"
    )
    assert caught.value.data == data


async def test_a_cancelled_waiter_stops_waiting_not_the_task(fake: FakeServer, autojump_clock: trio.abc.Clock) -> None:
    events: list[mcpfsm.CallEvent] = []
    fake.queue("tools/call", created(pollIntervalMs=5000))
    fake.queue("tasks/get", result(task()), done())
    async with fake.client(tasks=True, on_event=events.append) as client:
        handle = await client.start_tool("job")
        with trio.move_on_after(2):  # the autojump clock's seconds: before the first poll
            await handle.wait()
        assert handle.status == "working"
        assert fake.methods()[-1] == "tools/call"
        assert (await handle.wait()).text == "done"
    assert "notifications/cancelled" not in fake.methods()
    states = [e.state for e in events if isinstance(e, mcpfsm.TaskEvent)]
    assert states == ["submitting", "working", "working", "completed"]


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("https://user:secret@mcp.example:8443/mcp?api_key=s3cr3t#frag", "https://mcp.example:8443/mcp"),
        ("http://[::1]:9000/mcp", "http://[::1]:9000/mcp"),
        (None, "stdio"),
    ],
    ids=["credentials-query-fragment", "ipv6", "stdio"],
)
def test_store_keys_name_the_server_without_secrets(url: str | None, named: str) -> None:
    from mcpfsm._core.task import index_key, server_name, task_key

    assert server_name(url) == named
    assert task_key(server_name(url), "t-1") == f"task {named} t-1"
    assert index_key(server_name(url)) == f"tasks {named}"


async def test_task_events_round_trip_through_their_records(fake: FakeServer, autojump_clock: trio.abc.Clock) -> None:
    events: list[mcpfsm.CallEvent] = []
    fake.queue("tools/call", created(pollIntervalMs=100, statusMessage="queued"))
    fake.queue("tasks/get", done())
    async with fake.client(tasks=True, on_event=events.append) as client:
        await client.call_tool("job")
    recorded = [e for e in events if isinstance(e, mcpfsm.TaskEvent)]
    assert [(e.state, e.task_id, e.status_message, e.poll_interval) for e in recorded] == [
        ("submitting", None, None, None),
        ("working", "t-1", "queued", 0.1),
        ("completed", "t-1", None, 1.0),  # the last answer gave no pollIntervalMs: the default
    ]
    assert [mcpfsm.CallEvent.from_dict(e.to_dict()) for e in recorded] == recorded
    assert {e.to_dict()["machine"] for e in recorded} == {"task"}
