"""mcpfsm over stdio against the official SDK server (tests/peer, ``--stdio``) (MCP "Transports", stdio)."""

from __future__ import annotations

import os
import sys
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm import StdioTransport
from tests.peer.fixtures import REPO_ROOT

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
PEER: Final = [sys.executable, "-m", "tests.peer.server", "--stdio"]
SQL_ARGS: Final = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}
EXECUTED: Final = ("executed 'select 1' on 'analytics'", SQL_ARGS, False)


def stdio(command: list[str] = PEER, **kwargs: Any) -> mcpfsm.Client:
    return mcpfsm.Client.stdio(command, cwd=str(REPO_ROOT), **kwargs)


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def pid_of(client: mcpfsm.Client) -> int:
    transport = client.transport
    assert isinstance(transport, StdioTransport) and transport.pid is not None
    return transport.pid


# auto: the probe (server/discover with the modern _meta) opens a modern connection; the SDK decides
# the era of a stdio connection by its first request.
ERAS: Final = {"auto": ("auto", MODERN), "pinned-modern": (MODERN, MODERN), "pinned-legacy": (LEGACY, LEGACY)}


@pytest.mark.parametrize(("protocol", "era"), ERAS.values(), ids=ERAS.keys())
async def test_the_script_runs_over_stdio_with_annotations_inert(
    protocol: str, era: str, records: list[tuple[str, str]]
) -> None:
    with trio.fail_after(20):
        async with stdio(protocol=protocol) as client:
            tools = await client.tools()
            sql = tools.get("execute-sql")
            assert sql is not None
            by_tool = await sql.call(SQL_ARGS)
            by_name = await client.call_tool("execute-sql", SQL_ARGS)
            failed = await client.call_tool("fail")
            with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32601: "):
                await client.request("no/such-method")
            again = await client.call_tool("echo", {"text": "still here"})
            version = client.protocol_version

    assert version == era
    assert tools.names == [
        "execute-sql",
        "echo",
        "slow",
        "fail",
        "ask-name",
        "ask-model",
        "list-roots",
        "interview",
        "ask-url",
        "state-only",
        "echo-state",
        "elicit-defaults",
    ]
    assert (tools.excluded, sql.mirrored) == ((), {})
    assert (by_tool.text, by_tool.structured_content, by_tool.is_error) == EXECUTED
    assert (by_name.text, by_name.structured_content, by_name.is_error) == EXECUTED
    assert (failed.is_error, failed.text) == (True, "Error executing tool fail: deliberate failure")
    assert again.text == "still here"
    assert [r for r in records if r[0] == "WARNING"] == []


async def test_annotations_never_refuse_a_value_over_stdio() -> None:
    async with stdio() as client:
        sql = (await client.tools()).get("execute-sql")
        assert sql is not None
        # Over HTTP (modern) this raises MirroringError before sending; stdio mirrors nothing.
        result = await sql.call({**SQL_ARGS, "options": {"readOnly": "maybe"}})

    assert (result.is_error, result.text.splitlines()[0]) == (
        True,
        "Error executing tool execute-sql: 1 validation error for execute_sqlArguments",
    )


@pytest.mark.parametrize(("protocol", "log"), [(MODERN, []), (LEGACY, ["notifications/message"])])
async def test_notifications_reach_on_notification_over_stdio(protocol: str, log: list[str]) -> None:
    seen: list[tuple[str, Any]] = []

    async with stdio(protocol=protocol, on_notification=lambda m, p: seen.append((m, p.get("progress")))) as client:
        assert (await client.call_tool("slow", {"seconds": 0.04})).text == "done"

    assert seen == [(m, None) for m in log] + [("notifications/progress", step) for step in (1, 2, 3, 4)]


async def test_the_child_is_gone_after_close() -> None:
    async with stdio() as client:
        pid = pid_of(client)
        assert is_running(pid)

    assert not is_running(pid)


async def test_cancelling_the_caller_mid_call_ends_the_child() -> None:
    pids: list[int] = []

    with trio.move_on_after(20) as outer:
        with trio.CancelScope() as scope:

            def cancel_once_sent(event: mcpfsm.CallEvent) -> None:
                # Readiness, not a timer: the child may take seconds to start on a busy machine.
                if event.state == "sending":
                    scope.cancel()

            async with stdio(on_event=cancel_once_sent) as client:
                pids.append(pid_of(client))
                await client.call_tool("slow", {"seconds": 30})

    assert scope.cancelled_caught and not outer.cancelled_caught
    assert len(pids) == 1 and not is_running(pids[0])


async def test_a_cancelled_call_leaves_the_client_and_child_usable() -> None:
    async with stdio() as client:
        with trio.move_on_after(0.5) as scope:
            await client.call_tool("slow", {"seconds": 30})
        assert scope.cancelled_caught
        assert (await client.call_tool("echo", {"text": "after"})).text == "after"
        assert is_running(pid_of(client))


async def test_a_child_that_writes_much_to_stderr_is_not_blocked(records: list[tuple[str, str]]) -> None:
    # 1 MiB to stderr before serving: far more than a pipe buffer, so an undrained stderr would deadlock.
    noisy = [
        sys.executable,
        "-c",
        "import runpy, sys; sys.stderr.write('x' * 2**20); sys.stderr.flush();"
        " sys.argv = ['server', '--stdio']; runpy.run_module('tests.peer.server', run_name='__main__')",
    ]

    with trio.fail_after(20):
        async with stdio(noisy) as client:
            assert (await client.call_tool("echo", {"text": "heard"})).text == "heard"

    drained = sum(len(m) for level, m in records if level == "DEBUG" and m.startswith("MCP server stderr: "))
    assert drained >= 2**20


async def test_a_child_that_ignores_eof_and_sigterm_is_killed(
    autojump_clock: trio.abc.Clock, records: list[tuple[str, str]]
) -> None:
    stubborn = [
        sys.executable,
        "-c",
        "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
        " print('ready', flush=True); time.sleep(600)",
    ]
    transport = StdioTransport(stubborn)

    async def ignore(message: object) -> None:
        pass

    await transport.open(ignore)
    try:
        pid = transport.pid
        assert pid is not None
        # Its "ready" line (not JSON-RPC: logged and ignored) says SIGTERM is ignored from now on.
        with trio.fail_after(60):
            while not any(m.startswith("ignoring a malformed line from the MCP server") for _, m in records):
                await trio.sleep(0.01)
        closing = trio.current_time()
    finally:
        await transport.aclose()

    # Both grace periods ran out (2 s after closing stdin, 2 s after SIGTERM), then SIGKILL.
    assert trio.current_time() - closing >= 4
    assert not is_running(pid)


async def test_a_child_that_exits_at_once_is_a_transport_error() -> None:
    with pytest.raises(
        mcpfsm.TransportError, match=r"^the MCP server process closed its stdout before answering$"
    ):
        async with stdio([sys.executable, "-c", "pass"]):
            pass


async def test_a_missing_program_is_a_transport_error() -> None:
    with pytest.raises(mcpfsm.TransportError, match=r"^cannot start MCP server '/nonexistent/mcp-server': "):
        async with stdio(["/nonexistent/mcp-server"]):
            pass
