"""Cancelling a task while something else is under way on it (SEP-2663 ``tasks/cancel``), against a raw socket server.

The server (``tests/support/rawserver.py``, in this trio run) holds the answers the test wants in flight until it says
so. Each test waits for readiness (the server received the request; every task blocked), never for a fixed time.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
import trio.testing

import mcpfsm
from tests.client.test_tasks_raw import TASK_ID, ask, created, task
from tests.support.rawserver import HOST, Seen, Server, ok, serving

MODERN = "2026-07-28"
GUARD = 30.0

Script = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


def held(script: Script) -> Server:
    """A server answering discover and ``tools/list`` itself and everything else with ``await script(...)``."""

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        request = json.loads(seen.body)
        if "id" not in request:
            return await ok(b"", status=202, headers=[])(stream, seen)
        method, params = request.get("method"), request.get("params") or {}
        if method == "server/discover":
            result: dict[str, Any] = {"supportedVersions": [MODERN], "capabilities": {"tools": {}}}
        elif method == "tools/list":
            result = {"tools": [{"name": "job", "inputSchema": {"type": "object"}}]}
        else:
            result = await script(method, params)
        body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
        return await ok(body)(stream, seen)

    return Server(default=answer)


def sent(server: Server, method: str) -> int:
    return [json.loads(seen.body).get("method") for seen in server.seen].count(method)


def client(server: Server, **options: Any) -> mcpfsm.Client:
    return mcpfsm.Client.http(f"http://{HOST}:{server.port}/mcp", tasks=True, protocol=MODERN, **options)


async def test_two_cancels_at_once_send_one_tasks_cancel_and_both_return() -> None:
    cancel_arrived, release = trio.Event(), trio.Event()

    async def script(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/call":
            return created(pollIntervalMs=60_000)
        if method == "tasks/cancel":
            cancel_arrived.set()
            await release.wait()
            return task("cancelled")
        return task()

    outcomes: list[str] = []
    async with serving(held(script)) as server, client(server) as mcp:
        handle = await mcp.start_tool("job")
        again = mcp.task(TASK_ID)  # a second handle of the same task, as another part of the program holds

        async def cancel(which: mcpfsm.Task) -> None:
            await which.cancel()
            outcomes.append(which.status)

        with trio.fail_after(GUARD):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(cancel, handle)
                await cancel_arrived.wait()
                nursery.start_soon(cancel, again)
                await trio.testing.wait_all_tasks_blocked()  # the second cancel is waiting too
                release.set()
        assert await mcp.pending_tasks() == []
        with pytest.raises(mcpfsm.TaskError, match=rf"^task {TASK_ID} was cancelled$"):
            await handle.wait()
    assert (outcomes, sent(server, "tasks/cancel")) == (["cancelled", "cancelled"], 1)


async def test_cancel_while_the_handlers_are_asking_ends_the_wait_with_the_cancellation() -> None:
    asking = trio.Event()

    async def script(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/call":
            return created(pollIntervalMs=50)
        if method == "tasks/cancel":
            return task("cancelled")
        return task("input_required", pollIntervalMs=50, inputRequests={"k": ask("k")})

    async def person(params: dict[str, Any]) -> dict[str, Any]:
        asking.set()
        await trio.sleep_forever()  # nobody answers: the cancellation must end the wait, not the answer
        raise AssertionError("unreachable")

    async with serving(held(script)) as server, client(server, on_elicitation=person) as mcp:
        handle = await mcp.start_tool("job")
        waited: list[BaseException] = []

        async def wait() -> None:
            try:
                await handle.wait()
            except mcpfsm.McpError as exc:
                waited.append(exc)

        with trio.fail_after(GUARD):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait)
                await asking.wait()
                await handle.cancel()
        assert [str(error) for error in waited] == [f"task {TASK_ID} was cancelled"]
        assert isinstance(waited[0], mcpfsm.TaskError) and handle.status == "cancelled"
        assert await mcp.pending_tasks() == []
    assert (sent(server, "tasks/cancel"), sent(server, "tasks/update")) == (1, 0)


async def test_cancel_while_the_answers_are_sent_ends_the_wait_and_keeps_no_record() -> None:
    update_arrived, release = trio.Event(), trio.Event()

    async def script(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/call":
            return created(pollIntervalMs=50)
        if method == "tasks/update":
            update_arrived.set()
            await release.wait()
            return {}
        if method == "tasks/cancel":
            return task("cancelled")
        return task("input_required", pollIntervalMs=50, inputRequests={"k": ask("k")})

    async def accept(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {}}

    async with serving(held(script)) as server, client(server, on_elicitation=accept) as mcp:
        handle = await mcp.start_tool("job")
        waited: list[BaseException] = []

        async def wait() -> None:
            try:
                await handle.wait()
            except mcpfsm.McpError as exc:
                waited.append(exc)

        with trio.fail_after(GUARD):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait)
                await update_arrived.wait()
                await handle.cancel()  # acknowledged while the update is still in flight
                release.set()
        assert [str(error) for error in waited] == [f"task {TASK_ID} was cancelled"]
        # The update's answer came after the task ended: it records nothing for it.
        assert await mcp.pending_tasks() == []
    assert (sent(server, "tasks/update"), sent(server, "tasks/cancel")) == (1, 1)
