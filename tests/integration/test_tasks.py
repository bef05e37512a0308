"""Tasks (SEP-2663) against a real tasks server: ``tooling.peer_tasks`` on the official SDK's extensions.

Every test talks to the server over HTTP on 127.0.0.1 and reads what it received from its log (the method, the
``Mcp-Method`` and ``Mcp-Name`` headers, the params and the extensions the request declared).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import trio

import mcpfsm
from tests.support.peer.fixtures import HttpPeer

TASKS = "io.modelcontextprotocol/tasks"


@pytest.fixture
def tasks(tasks_peer: HttpPeer) -> HttpPeer:
    tasks_peer.clear_log()
    return tasks_peer


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


async def test_input_required_is_answered_with_tasks_update_each_key_once(tasks: HttpPeer) -> None:
    asker = Asker()
    events: list[mcpfsm.CallEvent] = []
    async with mcpfsm.Client.http(tasks.url, tasks=True, on_elicitation=asker, on_event=events.append) as client:
        result = await client.call_tool("approve", {"poll_ms": 50})
    assert json.loads(result.text) == {"confirm": {"ok": True}}
    # The server repeats the answered key once after the update (eventually consistent): asked once all the same.
    assert asker.asked == ["confirm?"]
    updates = [each["params"] for each in tasks.log() if each["method"] == "tasks/update"]
    assert updates == [
        {"taskId": updates[0]["taskId"], "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}}}
    ]
    states = [(e.previous, e.trigger, e.state) for e in events if isinstance(e, mcpfsm.TaskEvent)]
    assert states[:4] == [
        (None, None, "submitting"),
        ("submitting", "asked", "input_required"),
        ("input_required", "gathered", "answering"),
        ("answering", "updated", "working"),
    ]
    assert states[-1] == ("working", "completed", "completed")
    # The repeat of the answered key is a poll with nothing new.
    assert ("working", "polled", "working") in states
    asked = [e.input_requests for e in events if isinstance(e, mcpfsm.TaskEvent) and e.state == "input_required"]
    assert asked == [{"confirm": "elicitation/create"}]
    answering = [e for e in events if isinstance(e, mcpfsm.TaskEvent) and e.state == "answering"]
    assert [e.input_responses for e in answering] == [None]  # not without audit_answers=True


async def test_two_rounds_of_input_are_two_updates(tasks: HttpPeer) -> None:
    asker = Asker()
    async with mcpfsm.Client.http(tasks.url, tasks=True, on_elicitation=asker) as client:
        result = await client.call_tool("interview", {"poll_ms": 50})
    assert json.loads(result.text) == {"age": {"ok": True}, "name": {"ok": True}}
    assert asker.asked == ["name?", "age?"]
    updates = [sorted(each["params"]["inputResponses"]) for each in tasks.log() if each["method"] == "tasks/update"]
    assert updates == [["name"], ["age"]]


async def test_a_failed_task_raises_its_error_with_the_task_id(tasks: HttpPeer) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with mcpfsm.Client.http(tasks.url, tasks=True, on_event=events.append) as client:
        with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32603: compiler crashed$") as caught:
            await client.call_tool("explode", {"poll_ms": 50})
    assert caught.value.task_id is not None and caught.value.task_id.endswith(":explode")
    last_task = [e for e in events if isinstance(e, mcpfsm.TaskEvent)][-1]
    assert (last_task.state, last_task.error) == (
        "failed",
        {"type": "RpcError", "code": -32603, "message": "compiler crashed"},
    )
    assert [e.state for e in events if e.machine == "tool-call"][-1] == "failed"


async def test_a_handle_cancels_with_tasks_cancel_and_never_a_cancel_notice(tasks: HttpPeer) -> None:
    async with mcpfsm.Client.http(tasks.url, tasks=True) as client:
        tool = (await client.tools()).get("forever")
        assert tool is not None
        task = await tool.start({"poll_ms": 50})
        assert (task.tool, task.status, task.poll_interval, task.ttl) == ("forever", "working", 0.05, None)
        assert task.id is not None and task.created_at is not None
        assert await task.refresh() == "working"
        await task.cancel()
        assert task.status == "cancelled"
        with pytest.raises(mcpfsm.TaskError, match=rf"^task {task.id} was cancelled$") as caught:
            await task.wait()
        assert (caught.value.task_id, caught.value.status) == (task.id, "cancelled")
        assert await client.pending_tasks() == []
    methods = [m for m, _, _ in sent(tasks)]
    assert "notifications/cancelled" not in methods
    assert sent(tasks)[-2:] == [("tasks/get", "tasks/get", task.id), ("tasks/cancel", "tasks/cancel", task.id)]


async def test_a_synchronous_answer_gives_a_handle_without_id(tasks: HttpPeer) -> None:
    async with mcpfsm.Client.http(tasks.url, tasks=True) as client:
        task = await client.start_tool("quick")
        assert (task.id, task.status) == (None, "completed")
        assert (await task.wait()).text == "quick"


async def test_the_ttl_backstop_expires_a_task_that_never_ends(tasks: HttpPeer) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with mcpfsm.Client.http(tasks.url, tasks=True, on_event=events.append) as client:
        with pytest.raises(mcpfsm.TaskError, match=r"^task \S+ expired: its ttlMs of 200 ms passed") as caught:
            await client.call_tool("forever", {"poll_ms": 50, "ttl_ms": 200})
    assert caught.value.status == "expired"
    last = [e for e in events if isinstance(e, mcpfsm.TaskEvent)][-1]
    assert (last.previous, last.trigger, last.state) == ("working", "ttl_elapsed", "expired")


async def test_an_unknown_task_expires_with_a_task_error(tasks: HttpPeer) -> None:
    async with mcpfsm.Client.http(tasks.url, tasks=True) as client:
        task = client.task("no-such-task")
        assert (task.id, task.tool, task.status) == ("no-such-task", None, "working")
        with pytest.raises(mcpfsm.TaskError, match=r"^the server does not know task no-such-task: Task not found$"):
            await task.wait()
        assert task.status == "expired"
    assert sent(tasks)[-1] == ("tasks/get", "tasks/get", "no-such-task")


async def test_a_task_needing_the_extension_tells_the_caller_to_pass_tasks_true(tasks: HttpPeer) -> None:
    async with mcpfsm.Client.http(tasks.url) as client:
        with pytest.raises(mcpfsm.RpcError, match=r"create the client with tasks=True") as caught:
            await client.call_tool("needs-tasks")
        assert caught.value.code == -32021
        # Without tasks=True the server never answers with a task: the same tool is an ordinary call.
        assert (await client.call_tool("build")).text == "built in 0.3 s"
    assert [each["extensions"] for each in tasks.log()] == [[], [], []]


async def test_pending_tasks_resume_in_another_client_sharing_the_store(tasks: HttpPeer) -> None:
    store = mcpfsm.MemoryStore()
    asker = Asker()
    async with mcpfsm.Client.http(tasks.url, tasks=True, store=store, on_elicitation=asker) as first:
        started = await first.start_tool("build", {"seconds": 0.3, "poll_ms": 50})
        assert started.id is not None
    assert await store.get(f"task {tasks.url} {started.id}") == {
        "tool": "build",
        "answered": [],
        "status": "working",
        "createdAt": started.created_at,
        "ttlMs": None,
    }
    async with mcpfsm.Client.http(tasks.url, tasks=True, store=store) as second:
        pending = await second.pending_tasks()
        assert [(each.id, each.tool) for each in pending] == [(started.id, "build")]
        assert (await pending[0].wait()).text == "built in 0.3 s"
        assert await second.pending_tasks() == []
    assert await store.get(f"task {tasks.url} {started.id}") is None


async def test_a_pushed_notification_ends_the_wait_without_a_poll(tasks: HttpPeer) -> None:
    async with mcpfsm.Client.http(tasks.url, tasks=True) as client:
        task = await client.start_tool("manual")
        assert task.poll_interval == 60.0
        async with client.listen(tasks=[task.id]) as subscription:
            assert subscription.acknowledged == {"taskIds": [task.id]}
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lambda: trio.to_thread.run_sync(finish, tasks, task.id))
                with trio.fail_after(30):
                    result = await task.wait()
    assert result.text == "finished"
    listens = [each for each in tasks.log() if each["method"] == "subscriptions/listen"]
    assert [each["params"] for each in listens] == [{"notifications": {"taskIds": [task.id]}}]
    assert listens[0]["extensions"] == [TASKS]


def finish(server: HttpPeer, task_id: str | None) -> None:
    httpx.post(f"{server.base_url}/control/finish", json={"taskId": task_id}).raise_for_status()


async def test_a_task_is_one_span_under_the_call_with_its_polls_as_children(tasks: HttpPeer) -> None:
    from tests.support.oteltest import configured

    with configured() as otel:
        async with mcpfsm.Client.http(tasks.url, tasks=True) as client:
            assert (await client.call_tool("build", {"seconds": 0.2, "poll_ms": 50})).text == "built in 0.2 s"
        trees = otel.tree()
    names = [(each["name"], [child["name"] for child in each["children"]]) for each in trees]
    assert names[0] == ("server/discover", [])
    call = trees[1]
    assert call["name"] == "tool-call build"
    assert [child["name"] for child in call["children"]] == ["tools/call build", "task build"]
    span = call["children"][1]
    assert span["kind"] == "INTERNAL" and span["attributes"]["mcpfsm.state"] == "completed"
    polls = [child["name"] for child in span["children"]]
    assert polls and set(polls) == {"tasks/get"}
    states = [name for name, _ in span["events"]]
    assert states[:2] == ["submitting", "working"] and states[-1] == "completed"
    assert len(states) == len(polls) + 2


async def test_a_handle_of_a_client_without_tasks_true_is_told_to_pass_it(tasks: HttpPeer) -> None:
    async with mcpfsm.Client.http(tasks.url) as client:
        with pytest.raises(mcpfsm.RpcError, match=r"create the client with tasks=True") as caught:
            await client.task("task-1:build").refresh()
    assert caught.value.code == -32021
    assert tasks.log()[-1]["extensions"] == []


class FrozenStore(mcpfsm.MemoryStore):
    """A store whose every read and write hangs, as a Redis frozen with SIGSTOP does."""

    async def get(self, key: str) -> dict[str, Any] | None:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async def set(self, key: str, value: dict[str, Any]) -> None:
        await trio.sleep_forever()


async def test_a_store_that_hangs_never_hangs_a_task(tasks: HttpPeer) -> None:
    # The task records go through the client's store guard (docs/stores.md): bounded, then memory.
    async with mcpfsm.Client.http(tasks.url, tasks=True, store=FrozenStore()) as client:
        with trio.fail_after(60):
            result = await client.call_tool("build", {"seconds": 0.1, "poll_ms": 50})
        assert result.text == "built in 0.1 s"
        assert client.store_fallbacks == 1
