"""Members that heal (docs/groups.md, "When a member restarts"): a stdio child killed with SIGKILL in the middle of
a call, an HTTP server stopped and started again on the same port, the backoff window, and ``reload``.

Everything is real: ``tests/support/stdio_member.py`` children (each start appends its process id to a file, each
``sleep`` call its mark to another, so the tests see what was started and what was run), the official SDK's test peer
over HTTP (which logs every request it receives). Time is trio's own clock except in the backoff test, which steps a
``MockClock`` by hand so that windows of a minute pass at once.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any, Final

import pytest
import trio
import trio.testing

import mcpfsm
from mcpfsm._tooling.server_process import run_peer
from tests.support.peer.fixtures import REPO_ROOT
from tests.support.ports import reserved_port

MEMBER: Final = str(REPO_ROOT / "tests" / "support" / "stdio_member.py")
SQL_ARGS: Final = {"query": "select 1", "database": "analytics"}


def member(tmp_path: Path, name: str, **options: Any) -> dict[str, Any]:
    args = [MEMBER, "--name", name, "--started", str(tmp_path / f"{name}.started"), "--calls", str(tmp_path / "calls")]
    return {"command": sys.executable, "args": args, "cwd": str(REPO_ROOT), **options}


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def statuses(events: list[mcpfsm.CallEvent], server: str) -> list[tuple[str | None, str, str | None]]:
    kept = [event for event in events if isinstance(event, mcpfsm.MemberEvent) and event.server == server]
    return [(event.previous, event.state, event.trigger) for event in kept]


async def next_status(events: trio.MemoryReceiveChannel[mcpfsm.CallEvent], server: str) -> mcpfsm.MemberEvent:
    async for event in events:
        if isinstance(event, mcpfsm.MemberEvent) and event.server == server:
            return event
    raise AssertionError("the group's events ended")


async def until_written(path: Path, text: str) -> None:
    # The child writes the mark before it sleeps: the readiness signal that the call is running there.
    with trio.fail_after(60):
        while text not in lines(path):
            await trio.sleep(0.01)


async def test_a_child_killed_mid_call_fails_the_member_at_once_and_the_next_use_after_the_window_heals_it(
    tmp_path: Path,
) -> None:
    config = {"mcpServers": {"work": member(tmp_path, "work"), "other": member(tmp_path, "other")}}
    seen: list[mcpfsm.CallEvent] = []
    async with (
        mcpfsm.ClientGroup(config, on_event=seen.append, reconnect_backoff=5.0) as group,
        group.events() as events,
    ):
        tools = await group.tools()
        sleep = tools.get("work_sleep")
        assert sleep is not None
        pid = int((await group.call_tool("work_pid")).text)
        failures: list[BaseException] = []

        async def long_call() -> None:
            try:
                await sleep.call({"seconds": 600, "mark": "the call"})
            except mcpfsm.McpError as exc:
                failures.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(long_call)
            await until_written(tmp_path / "calls", "the call")
            os.kill(pid, signal.SIGKILL)
            failed = await next_status(events, "work")
        # The exit was noticed when it happened; the call that was running raised, and was not sent again.
        assert (failed.previous, failed.state, failed.trigger) == ("connected", "failed", "exited")
        assert failed.error is not None and "killed by signal 9" in failed.error["message"]
        assert [type(error) for error in failures] == [mcpfsm.TransportError]
        assert group.status == {"work": "failed", "other": "connected"}
        assert isinstance(group.errors["work"], mcpfsm.TransportError)
        # Inside the backoff window a use fails at once with the last error, and starts nothing.
        with pytest.raises(mcpfsm.TransportError) as inside:
            await group.call_tool("work_pid")
        assert str(inside.value) == str(group.errors["work"])
        assert 0 < group.backoff("work") <= 5.0
        assert len(lines(tmp_path / "work.started")) == 1
        # The other member goes on.
        assert (await group.call_tool("other_echo", {"text": "unaffected"})).text == "unaffected"
        # After the window, the next use starts a new child.
        await trio.sleep(group.backoff("work"))
        new_pid = int((await group.call_tool("work_pid")).text)
        assert new_pid != pid and len(lines(tmp_path / "work.started")) == 2
        assert group.status == {"work": "connected", "other": "connected"} and group.errors == {}
    assert lines(tmp_path / "calls") == ["the call"]
    assert statuses(seen, "work") == [
        ("idle", "connecting", "opened"),
        ("connecting", "connected", "connected"),
        ("connected", "failed", "exited"),
        ("failed", "connecting", "retried"),
        ("connecting", "connected", "connected"),
    ]
    assert [event.seq for event in seen if isinstance(event, mcpfsm.MemberEvent)] == list(range(7))


@pytest.mark.parametrize("mode", ["modern", "legacy"])
async def test_an_http_server_restarted_on_the_same_port_heals_on_the_next_use_after_the_window(mode: str) -> None:
    # Legacy (2025-11-25): the restarted server knows no session; the reconnect starts a new one.
    seen: list[mcpfsm.CallEvent] = []
    with reserved_port() as port:
        with run_peer(mode, port=port, timeout=60) as first:
            config = {"mcpServers": {"sql": {"url": first.url, "timeout": 10}}}
            group = mcpfsm.ClientGroup(config, on_event=seen.append, reconnect_backoff=3.0)
            await group.__aenter__()
            try:
                result = await group.call_tool("sql_execute-sql", SQL_ARGS)
                assert result.text == "executed 'select 1' on 'analytics'"
            except BaseException:
                await group.aclose()
                raise
        try:
            # The server is gone: the use that finds out fails, and so does the member.
            with pytest.raises(mcpfsm.TransportError) as gone:
                await group.call_tool("sql_execute-sql", SQL_ARGS)
            assert group.status == {"sql": "failed"}
            assert group.errors["sql"] is gone.value
            with pytest.raises(mcpfsm.TransportError) as inside:
                await group.call_tool("sql_execute-sql", SQL_ARGS)
            assert str(inside.value) == str(gone.value)
            with run_peer(mode, port=port, timeout=60) as second:
                await trio.sleep(group.backoff("sql"))
                result = await group.call_tool("sql_execute-sql", SQL_ARGS)
                assert result.text == "executed 'select 1' on 'analytics'"
                # The restarted server received one call: the failed one was never sent again.
                calls = [entry for entry in second.log() if entry["jsonrpc_method"] == "tools/call"]
                assert len(calls) == 1
                assert group.status == {"sql": "connected"}
                assert group["sql"].protocol_version == ("2026-07-28" if mode == "modern" else "2025-11-25")
        finally:
            await group.aclose()
    assert statuses(seen, "sql") == [
        ("idle", "connecting", "opened"),
        ("connecting", "connected", "connected"),
        ("connected", "failed", "broke"),
        ("failed", "connecting", "retried"),
        ("connecting", "connected", "connected"),
    ]


async def test_the_backoff_doubles_to_a_minute_and_a_success_resets_it(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    script = tmp_path / "late.py"
    config = {"mcpServers": {"late": {"command": sys.executable, "args": [str(script)], "cwd": str(REPO_ROOT)}}}
    async with (
        mcpfsm.ClientGroup(config, lazy=True, reconnect_backoff=1.0) as group,
        group.events() as events,
    ):
        windows = []
        for _ in range(9):
            with pytest.raises(mcpfsm.TransportError):
                await group.client("late")
            windows.append(group.backoff("late"))
            # Inside the window: the last error at once, no new attempt.
            with pytest.raises(mcpfsm.TransportError):
                await group.client("late")
            mock_clock.jump(group.backoff("late"))
        assert windows == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0]
        # The script appears (until now python exited at once: no such file): a success.
        script.write_text(f"import runpy\nrunpy.run_path({MEMBER!r}, run_name='__main__')\n", encoding="utf-8")
        client = await group.client("late")
        assert group.status == {"late": "connected"}
        # A failure after a success starts over at one second.
        transport = client.transport
        assert isinstance(transport, mcpfsm.StdioTransport) and transport.pid is not None
        os.kill(transport.pid, signal.SIGKILL)
        while (await next_status(events, "late")).trigger != "exited":
            pass  # the failures of the loop above come first
        assert group.backoff("late") == 1.0


async def test_reload_opens_added_members_closes_removed_ones_and_reopens_changed_ones(tmp_path: Path) -> None:
    first = {
        "mcpServers": {
            "kept": member(tmp_path, "kept"),
            "changed": member(tmp_path, "changed"),
            "removed": member(tmp_path, "removed"),
        }
    }
    seen: list[mcpfsm.CallEvent] = []
    async with mcpfsm.ClientGroup(first, on_event=seen.append) as group:
        kept, changed, removed = (group[name] for name in ("kept", "changed", "removed"))
        pids = {name: int((await group.call_tool(f"{name}_pid")).text) for name in first["mcpServers"]}
        before = len(seen)
        await group.reload(first)  # identical: nothing changes, nothing is emitted
        assert len(seen) == before and group["kept"] is kept
        second = {
            "mcpServers": {
                "kept": first["mcpServers"]["kept"],
                "changed": {**first["mcpServers"]["changed"], "prefix": "moved"},
                "added": member(tmp_path, "added"),
                "lazy_one": member(tmp_path, "lazy_one", lazy=True),
            }
        }
        with pytest.raises(mcpfsm.ConfigError):
            await group.reload({"mcpServers": {"bad": {"type": "sse", "url": "http://127.0.0.1:9/"}}})
        assert list(group.status) == ["kept", "changed", "removed"]
        await group.reload(second)
        assert group.status == {"kept": "connected", "changed": "connected", "added": "connected", "lazy_one": "idle"}
        assert group["kept"] is kept and group["changed"] is not changed
        assert lines(tmp_path / "lazy_one.started") == []
        assert (await group.call_tool("kept_pid")).text == str(pids["kept"])
        assert (await group.call_tool("moved_pid")).text != str(pids["changed"])
        with pytest.raises(mcpfsm.TransportError, match=r"^the client is closed$"):
            await removed.call_tool("pid")
        with pytest.raises(ProcessLookupError):  # its child was reaped
            os.kill(pids["removed"], 0)
    assert statuses(seen[before:], "removed") == [("connected", "disabled", "removed")]
    assert statuses(seen[before:], "changed") == [
        ("connected", "disabled", "removed"),
        ("idle", "connecting", "opened"),
        ("connecting", "connected", "connected"),
    ]
    assert statuses(seen[before:], "kept") == []
