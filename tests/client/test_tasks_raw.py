"""Hostile tasks servers (SEP-2663) on real sockets: tests/support/rawserver.py on 127.0.0.1 writes every byte.

A task that never ends (the TTL backstop; ``total_timeout``), ``pollIntervalMs: 0``, a poll answer that is not a
task, a ``failed`` task without ``error``, and input keys repeated 10,000 times. Each test counts what the server
received (its own request log), never wall time, and then uses the same client again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import trio

import mcpfsm
from mcpfsm._drivers.input import MAX_CONCURRENT_HANDLERS
from tests.support.rawserver import HOST, Seen, Server, ok, serving

MODERN = "2026-07-28"
TASK_ID = "t-raw"

Script = Callable[[str, dict[str, Any]], dict[str, Any]]
"""(method, params) → the JSON-RPC result for a tools/call or tasks/* request."""


def now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def task(status: str = "working", **fields: Any) -> dict[str, Any]:
    stamp = now()
    return {"taskId": TASK_ID, "status": status, "createdAt": stamp, "lastUpdatedAt": stamp, "ttlMs": None, **fields}


def scripted(script: Script) -> Server:
    """A server answering ``server/discover``, ``tools/list`` (tool ``job``) and whatever ``script`` says."""

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        request = json.loads(seen.body)
        method, params = request.get("method"), request.get("params") or {}
        if "id" not in request:
            return await ok(b"", status=202, headers=[])(stream, seen)
        if method == "server/discover":
            result: dict[str, Any] = {"supportedVersions": [MODERN], "capabilities": {"tools": {}}}
        elif method == "tools/list":
            result = {"tools": [{"name": "job", "inputSchema": {"type": "object"}}]}
        else:
            result = script(method, params)
        body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
        return await ok(body)(stream, seen)

    return Server(default=answer)


def methods(server: Server) -> list[str]:
    return [json.loads(seen.body).get("method") for seen in server.seen]


def client(server: Server, **options: Any) -> mcpfsm.Client:
    return mcpfsm.Client.http(f"http://{HOST}:{server.port}/mcp", tasks=True, protocol=MODERN, **options)


def created(**fields: Any) -> dict[str, Any]:
    return {"resultType": "task", **task(**fields)}


def completed(text: str = "done") -> dict[str, Any]:
    return task("completed", result={"content": [{"type": "text", "text": text}]})


async def test_the_ttl_backstop_ends_a_task_that_never_ends() -> None:
    def script(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/call" and params["name"] == "job":
            return created(ttlMs=300, pollIntervalMs=50)
        if method == "tools/call":
            return {"content": [{"type": "text", "text": "still here"}]}
        # The server keeps the creation time: the task is never over.
        return {**task(ttlMs=300, pollIntervalMs=50), "createdAt": started}

    started = now()
    async with serving(scripted(script)) as server, client(server) as mcp:
        expired = rf"^task {TASK_ID} expired: its ttlMs of 300 ms"
        with trio.fail_after(30), pytest.raises(mcpfsm.TaskError, match=expired):
            await mcp.call_tool("job")
        polls = methods(server).count("tasks/get")
        assert polls >= 1
        assert await mcp.pending_tasks() == []
        assert (await mcp.call_tool("other")).text == "still here"
    assert "tasks/cancel" not in methods(server)


async def test_total_timeout_stops_the_wait_on_a_task_that_never_ends() -> None:
    def script(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/call" and params["name"] == "job":
            return created(pollIntervalMs=100)
        if method == "tools/call":
            return {"content": [{"type": "text", "text": "still here"}]}
        return task(pollIntervalMs=100)  # no ttlMs: nothing but the caller's limit ends the wait

    async with serving(scripted(script)) as server, client(server, total_timeout=0.5) as mcp:
        with trio.fail_after(30), pytest.raises(mcpfsm.CallTimeoutError) as caught:
            await mcp.call_tool("job")
        assert caught.value.task_id == TASK_ID
        polls = methods(server).count("tasks/get")
        # 0.5 s at one poll per 100 ms at most: the wait polled, and did not spin.
        assert 1 <= polls <= 6
        # The task goes on: the handle is still there for later.
        assert [t.id for t in await mcp.pending_tasks()] == [TASK_ID]
        assert (await mcp.call_tool("other")).text == "still here"
    assert "tasks/cancel" not in methods(server)


async def test_poll_interval_zero_is_floored_at_50_ms() -> None:
    # The server ends the task after a window it measures itself; the client polls in that window at most once per
    # 50 ms (and once more as the window closes), where a client taking 0 literally would poll without pause.
    window = 1.0
    opened: list[float] = []

    def script(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/call":
            opened.append(trio.current_time())
            return created(pollIntervalMs=0)
        if trio.current_time() - opened[0] >= window:
            return completed()
        return task(pollIntervalMs=0)

    async with serving(scripted(script)) as server, client(server) as mcp:
        with trio.fail_after(30):
            assert (await mcp.call_tool("job")).text == "done"
        polls = methods(server).count("tasks/get")
        assert 2 <= polls <= window / 0.05 + 1
        assert (await mcp.tools()).get("job") is not None


async def test_a_poll_answer_that_is_not_a_task_is_a_protocol_error_and_the_task_goes_on() -> None:
    answers = iter([{"content": []}, {"taskId": 7, "status": "working"}, completed()])

    def script(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return created(pollIntervalMs=50) if method == "tools/call" else next(answers)

    async with serving(scripted(script)) as server, client(server) as mcp:
        handle = await mcp.start_tool("job")
        with pytest.raises(mcpfsm.ProtocolError, match=r'^the tasks/get answer is not a task: "taskId" is not a'):
            await handle.wait()
        assert handle.status == "working"
        with pytest.raises(mcpfsm.ProtocolError, match=r'^the tasks/get answer is not a task: "taskId"'):
            await handle.wait()
        assert (await handle.wait()).text == "done"
        assert methods(server).count("tasks/get") == 3


async def test_a_failed_task_without_error_names_the_task() -> None:
    def script(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/call" and params["name"] == "job":
            return created(pollIntervalMs=50)
        if method == "tools/call":
            return {"content": [{"type": "text", "text": "still here"}]}
        return task("failed", statusMessage="worker lost")

    async with serving(scripted(script)) as server, client(server) as mcp:
        with pytest.raises(mcpfsm.RpcError, match=rf"^JSON-RPC error -32603: task {TASK_ID} failed without an error"):
            await mcp.call_tool("job")
        assert await mcp.pending_tasks() == []
        assert (await mcp.call_tool("other")).text == "still here"
    assert methods(server).count("tasks/get") == 1


ROUNDS = 100
PER_ROUND = 100  # the most one round may carry (mcpfsm._core.input_rounds.MAX_INPUT_REQUESTS)


def ask(key: str) -> dict[str, Any]:
    return {"method": "elicitation/create", "params": {"message": key, "requestedSchema": {"type": "object"}}}


async def test_ten_thousand_repeated_input_keys_are_each_answered_once() -> None:
    # Each round asks 100 new keys and repeats every key asked before: 10,000 keys in 100 rounds, each repeated on
    # every later poll. The client answers each key once, 100 updates in all, with at most
    # MAX_CONCURRENT_HANDLERS handlers at a time.
    asked: dict[str, dict[str, Any]] = {}
    received: dict[str, int] = {}
    updates: list[int] = []

    def script(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tasks/update":
            for key in params["inputResponses"]:
                received[key] = received.get(key, 0) + 1
            updates.append(len(params["inputResponses"]))
            return {}
        if len(updates) == ROUNDS:
            return completed(f"{len(received)} answers")
        if len(asked) < PER_ROUND * (len(updates) + 1):
            for n in range(len(asked), len(asked) + PER_ROUND):
                asked[f"k{n}"] = ask(f"k{n}")
        fields = {"pollIntervalMs": 0, "inputRequests": asked}
        return created(**fields) if method == "tools/call" else task("input_required", **fields)

    calls: dict[str, int] = {}
    running = 0
    most = 0

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await trio.sleep(0)
        running -= 1
        calls[params["message"]] = calls.get(params["message"], 0) + 1
        return {"action": "accept", "content": {}}

    async with serving(scripted(script)) as server, client(server, on_elicitation=answer) as mcp:
        with trio.fail_after(120):
            assert (await mcp.call_tool("job")).text == "10000 answers"
        assert (await mcp.tools()).get("job") is not None
    assert len(calls) == 10_000 and set(calls.values()) == {1}
    assert len(received) == 10_000 and set(received.values()) == {1}
    assert updates == [PER_ROUND] * ROUNDS
    assert most <= MAX_CONCURRENT_HANDLERS
    assert methods(server).count("tasks/update") == ROUNDS


async def test_ten_thousand_new_input_keys_in_one_round_are_refused_without_a_handler() -> None:
    asked = {f"k{n}": ask(f"k{n}") for n in range(10_000)}

    def script(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/call" and params["name"] == "job":
            return created(pollIntervalMs=50)
        if method == "tools/call":
            return {"content": [{"type": "text", "text": "still here"}]}
        return task("input_required", pollIntervalMs=50, inputRequests=asked)

    calls: list[str] = []

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        calls.append(params["message"])
        return {"action": "accept", "content": {}}

    async with serving(scripted(script)) as server, client(server, on_elicitation=answer) as mcp:
        with trio.fail_after(30), pytest.raises(mcpfsm.ProtocolError, match=r"10000 input requests, more than the 100"):
            await mcp.call_tool("job")
        assert (await mcp.call_tool("other")).text == "still here"
    assert calls == []
    assert "tasks/update" not in methods(server)


async def test_a_task_whose_input_cannot_be_given_is_cancelled_on_the_server() -> None:
    # A handler that raises: the run ends failed with the handler's error, and the server is told to cancel the
    # task rather than leaving it parked in input_required until its TTL.
    def script(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/call" and params["name"] == "job":
            return created(pollIntervalMs=50)
        if method == "tools/call":
            return {"content": [{"type": "text", "text": "still here"}]}
        if method == "tasks/cancel":
            return task("cancelled")
        return task("input_required", pollIntervalMs=50, inputRequests={"k": ask("k")})

    async def refuse(params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("no one to ask")

    async with serving(scripted(script)) as server, client(server, on_elicitation=refuse) as mcp:
        with trio.fail_after(30), pytest.raises(RuntimeError, match=r"^no one to ask$"):
            await mcp.call_tool("job")
        assert (await mcp.call_tool("other")).text == "still here"
    sent = methods(server)
    assert sent.count("tasks/cancel") == 1
    assert "tasks/update" not in sent
    bodies = [json.loads(seen.body) for seen in server.seen]
    cancel = next(body for body in bodies if body.get("method") == "tasks/cancel")
    assert cancel["params"]["taskId"] == TASK_ID


@pytest.mark.parametrize("where", ["poll", "create"])
async def test_a_completed_task_without_its_result_is_a_protocol_error(where: str) -> None:
    # SEP-2663: "completed" carries the result of the original request; without it there is nothing to return.
    answers = iter([task("completed"), completed()])

    def script(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/call" and params["name"] == "job":
            return {"resultType": "task", **task("completed")} if where == "create" else created(pollIntervalMs=50)
        if method == "tools/call":
            return {"content": [{"type": "text", "text": "still here"}]}
        return next(answers)

    what = "the tasks/get answer" if where == "poll" else "the tools/call task answer"
    async with serving(scripted(script)) as server, client(server) as mcp:
        with trio.fail_after(30), pytest.raises(
            mcpfsm.ProtocolError, match=rf'^{what}: the task is "completed" without its "result"$'
        ):
            await mcp.call_tool("job")
        assert (await mcp.call_tool("other")).text == "still here"
        if where == "poll":
            # The task goes on as the poll found it: the next wait polls again.
            [pending] = await mcp.pending_tasks()
            assert (await pending.wait()).text == "done"
    assert methods(server).count("tasks/get") == (2 if where == "poll" else 0)


@pytest.mark.parametrize("field", ["ttlMs", "pollIntervalMs"])
@pytest.mark.parametrize("where", ["poll", "create"])
async def test_a_huge_ttl_or_poll_interval_is_a_protocol_error(field: str, where: str) -> None:
    huge = {field: 10**400}  # a JSON integer Python reads whole, and no float can hold

    def script(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/call" and params["name"] == "job":
            return created(**huge) if where == "create" else created(pollIntervalMs=50)
        if method == "tools/call":
            return {"content": [{"type": "text", "text": "still here"}]}
        return task(**huge)

    what = "the tasks/get answer" if where == "poll" else "the tools/call task answer"
    async with serving(scripted(script)) as server, client(server) as mcp:
        with trio.fail_after(30), pytest.raises(
            mcpfsm.ProtocolError, match=rf'^{what}: "{field}" is not an integer from 0 to 2\^53-1$'
        ):
            await mcp.call_tool("job")
        assert (await mcp.call_tool("other")).text == "still here"
    assert methods(server).count("tasks/get") == (1 if where == "poll" else 0)
