"""progress_timeout and total_timeout (docs/tasks.md, "Timeouts for long calls") against real servers.

Plain calls: the test peer's ``slow`` tool (progress every quarter of its run). Tasks: the tasks server's ``build``
(a new ``statusMessage`` every quarter) and ``forever`` (never changes). The limits are far from the servers' own
timings, so a busy machine does not change which one fires.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import mcpfsm
from tests.support.peer.fixtures import HttpPeer, start_http_peer


@pytest.fixture(scope="module")
def plain() -> Iterator[HttpPeer]:
    with start_http_peer("modern") as running:
        yield running


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), "1"], ids=["zero", "negative", "nan", "text"])
def test_a_timeout_must_be_a_positive_number(seconds: object) -> None:
    with pytest.raises(ValueError, match=r"^progress_timeout must be None or a number of seconds above 0, got "):
        mcpfsm.Client.http("http://127.0.0.1:9/mcp", progress_timeout=seconds)  # type: ignore[arg-type]


async def test_progress_notifications_keep_a_plain_call_alive(plain: HttpPeer) -> None:
    # 2.4 s in all, a progress notification every 0.6 s: longer than the limit, never silent for that long.
    async with mcpfsm.Client.http(plain.url, progress_timeout=1.5) as client:
        assert (await client.call_tool("slow", {"seconds": 2.4})).text == "done"


async def test_a_silent_plain_call_fails_with_progress_timeout(plain: HttpPeer) -> None:
    async with mcpfsm.Client.http(plain.url, progress_timeout=0.3, total_timeout=30) as client:
        with pytest.raises(mcpfsm.CallTimeoutError, match=r"^progress_timeout of 0\.3 s fired") as caught:
            await client.call_tool("slow", {"seconds": 20})
        assert (caught.value.timeout, caught.value.seconds, caught.value.task_id) == ("progress_timeout", 0.3, None)
        assert isinstance(caught.value, mcpfsm.TransportError)
        # The client stays usable.
        assert (await client.call_tool("echo", {"text": "still here"})).text == "still here"


async def test_a_plain_call_fails_with_total_timeout_whatever_its_progress(plain: HttpPeer) -> None:
    async with mcpfsm.Client.http(plain.url, total_timeout=0.5) as client:
        with pytest.raises(mcpfsm.CallTimeoutError, match=r"^total_timeout of 0\.5 s fired") as caught:
            await client.call_tool("slow", {"seconds": 20})
        assert caught.value.timeout == "total_timeout"


async def test_status_changes_keep_a_task_alive(tasks_peer: HttpPeer) -> None:
    # A new statusMessage every 0.6 s over 2.4 s: longer than the limit, never unchanged for that long.
    async with mcpfsm.Client.http(tasks_peer.url, tasks=True, progress_timeout=1.5) as client:
        assert (await client.call_tool("build", {"seconds": 2.4, "poll_ms": 50})).text == "built in 2.4 s"


async def test_a_task_that_never_changes_fails_with_progress_timeout_and_stays_recorded(tasks_peer: HttpPeer) -> None:
    async with mcpfsm.Client.http(tasks_peer.url, tasks=True, progress_timeout=0.4) as client:
        expected = r"^progress_timeout of 0\.4 s fired.*\(task \S+\)$"
        with pytest.raises(mcpfsm.CallTimeoutError, match=expected) as caught:
            await client.call_tool("forever", {"poll_ms": 50})
        task_id = caught.value.task_id
        assert task_id is not None and task_id.endswith(":forever")
        # The task goes on on the server: it is still recorded, and can be resumed and cancelled.
        (pending,) = await client.pending_tasks()
        assert pending.id == task_id
        await pending.cancel()
        assert await client.pending_tasks() == []


async def test_a_task_wait_fails_with_total_timeout(tasks_peer: HttpPeer) -> None:
    async with mcpfsm.Client.http(tasks_peer.url, tasks=True, total_timeout=0.5) as client:
        task = await client.start_tool("forever", {"poll_ms": 50})
        with pytest.raises(mcpfsm.CallTimeoutError, match=rf"^total_timeout of 0\.5 s fired.*\(task {task.id}\)$"):
            await task.wait()
        assert task.status == "working"
        await task.cancel()
