"""mcpfsm over stdio against the official SDK server (tests/support/peer, ``--stdio``) (MCP "Transports", stdio)."""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any, Final

import pytest
import trio
import trio.testing

import mcpfsm
from mcpfsm import StdioTransport
from mcpfsm._core.lines import LineFramer
from tests.support.peer.fixtures import REPO_ROOT, TOOLS

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
PEER: Final = [sys.executable, "-m", "tests.support.peer.server", "--stdio"]
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
    with trio.fail_after(120):  # a hang guard; a busy machine starts the SDK peer slowly
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
    assert tools.names == TOOLS
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


def started_slow(started: trio.Event) -> Any:
    """An on_notification that sets ``started`` once the server has begun ``slow`` (its log message).

    On a legacy connection the peer sends the message as soon as the tool starts: the readiness signal
    that the child is up and working on the call, however long the machine took to start it.
    """

    def notified(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/message" and str(params.get("data", "")).startswith("slow: sleeping"):
            started.set()

    return notified


async def test_cancelling_the_caller_mid_call_ends_the_child() -> None:
    pids: list[int] = []
    started = trio.Event()

    with trio.fail_after(120):  # a hang guard only: the cancellation below waits for the call to start
        with trio.CancelScope() as scope:
            async with stdio(protocol=LEGACY, on_notification=started_slow(started)) as client:
                pids.append(pid_of(client))
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(client.call_tool, "slow", {"seconds": 600})
                    await started.wait()
                    scope.cancel()

    assert scope.cancelled_caught
    assert len(pids) == 1 and not is_running(pids[0])


async def test_a_cancelled_call_leaves_the_client_and_child_usable() -> None:
    started = trio.Event()
    with trio.fail_after(120):
        async with stdio(protocol=LEGACY, on_notification=started_slow(started)) as client:
            with trio.CancelScope() as scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(client.call_tool, "slow", {"seconds": 600})
                    await started.wait()
                    scope.cancel()
            assert scope.cancelled_caught
            assert (await client.call_tool("echo", {"text": "after"})).text == "after"
            assert is_running(pid_of(client))


async def test_a_child_that_writes_much_to_stderr_is_not_blocked(records: list[tuple[str, str]]) -> None:
    # 1 MiB to stderr before serving: far more than a pipe buffer, so an undrained stderr would deadlock.
    noisy = [
        sys.executable,
        "-c",
        "import runpy, sys; sys.stderr.write('x' * 2**20); sys.stderr.flush();"
        " sys.argv = ['server', '--stdio']; runpy.run_module('tests.support.peer.server', run_name='__main__')",
    ]

    with trio.fail_after(120):  # a hang guard; a busy machine starts the SDK peer slowly
        async with stdio(noisy) as client:
            assert (await client.call_tool("echo", {"text": "heard"})).text == "heard"

    drained = sum(len(m) for level, m in records if level == "DEBUG" and m.startswith("MCP server stderr: "))
    assert drained >= 2**20


async def test_a_child_that_ignores_eof_and_sigterm_is_killed(
    autojump_clock: trio.testing.MockClock, records: list[tuple[str, str]]
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
        # Its "ready" line (not JSON-RPC: logged and ignored) says SIGTERM is ignored from now on. The
        # child starts in real time, however long a busy machine takes: the clock runs at real speed
        # (and never jumps) until then, so the guard is 120 real seconds, not 12,000 instant polls.
        autojump_clock.autojump_threshold, autojump_clock.rate = math.inf, 1.0
        with trio.fail_after(120):
            while not any(m.startswith("ignoring a malformed line from the MCP server") for _, m in records):
                await trio.sleep(0.01)
        autojump_clock.autojump_threshold, autojump_clock.rate = 0.0, 0.0
        closing = trio.current_time()
    finally:
        await transport.aclose()

    # Both grace periods ran out (2 s after closing stdin, 2 s after SIGTERM), then SIGKILL.
    assert trio.current_time() - closing >= 4
    assert not is_running(pid)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        pytest.param("pass", r"^the MCP server process exited with status 0 before answering$", id="silent"),
        pytest.param(
            "import sys; sys.stderr.write('starting\\nconfig missing: set DB_URL\\n'); sys.exit(3)",
            r"^the MCP server process exited with status 3 before answering; the last lines of its stderr:\n"
            r"starting\nconfig missing: set DB_URL$",
            id="says-why",
        ),
        pytest.param(
            "import sys; sys.stderr.write(''.join(f'line {n}\\n' for n in range(50))); sys.exit(1)",
            r"^the MCP server process exited with status 1 before answering; the last lines of its stderr:\n"
            + r"\n".join(f"line {n}" for n in range(40, 50))
            + "$",
            id="last-ten-lines",
        ),
        pytest.param(
            "import os, signal, sys; sys.stderr.write('dying\\n'); sys.stderr.flush();"
            " os.kill(os.getpid(), signal.SIGKILL)",
            r"^the MCP server process was killed by signal 9 before answering; the last lines of its stderr:\ndying$",
            id="killed",
        ),
    ],
)
async def test_a_child_that_exits_before_answering_says_how_and_what_it_wrote_last(code: str, message: str) -> None:
    with pytest.raises(mcpfsm.TransportError, match=message):
        async with stdio([sys.executable, "-c", code]):
            pass


async def test_a_child_that_closes_stdout_but_keeps_running_says_so_and_is_stopped_on_close() -> None:
    code = (
        "import os, sys, time; sys.stderr.write('closing stdout\\n'); sys.stderr.flush(); os.close(1);"
        " time.sleep(600)"
    )
    client = stdio([sys.executable, "-c", code])
    with pytest.raises(
        mcpfsm.TransportError,
        match=r"^the MCP server process closed its stdout before answering; the last lines of its stderr:\n"
        r"closing stdout$",
    ):
        async with client:
            pass
    assert not is_running(pid_of(client))


# --- max_response_bytes and linear framing (tests/support/stdio_child.py) ---------------------------------------------


def child(*flags: str, **kwargs: Any) -> mcpfsm.Client:
    return stdio([sys.executable, "-m", "tests.support.stdio_child", *flags], **kwargs)


@pytest.mark.parametrize("flags", [(), ("--id-last",)], ids=["id-first", "id-last"])
async def test_a_line_longer_than_max_response_bytes_fails_its_call_without_being_buffered(
    flags: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = 1024 * 1024
    most_buffered: list[int] = []
    feed = LineFramer.feed

    def spy(self: LineFramer, chunk: bytes) -> Any:
        lines = feed(self, chunk)
        most_buffered.append(self.buffered)
        return lines

    monkeypatch.setattr(LineFramer, "feed", spy)
    async with child(*flags, max_response_bytes=limit) as client:
        with pytest.raises(
            mcpfsm.TransportError,
            match=r"^a line of \d+ bytes from the MCP server process is larger than max_response_bytes"
            r" \(1048576 bytes\); it was skipped without being buffered$",
        ):
            await client.call_tool("big", {"bytes": 5 * limit})
        # The child and the client go on: the next answer is the next call's.
        assert (await client.call_tool("echo", {"text": "after"})).text == "after"
        assert (await client.call_tool("big", {"bytes": limit - 100})).text == "x" * (limit - 100)

    assert max(most_buffered) <= limit


async def test_an_oversized_notification_is_skipped_with_a_warning_and_the_call_goes_on(
    records: list[tuple[str, str]],
) -> None:
    async with child(max_response_bytes=4096) as client:
        assert (await client.call_tool("shout", {"bytes": 10_000})).text == "shouted"

    line = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "y" * 10_000}}
    assert [r for r in records if r[0] == "WARNING"] == [
        (
            "WARNING",
            f"ignoring a message: a line of {len(json.dumps(line))} bytes from the MCP server process is larger than"
            " max_response_bytes (4096 bytes); it was skipped without being buffered",
        )
    ]


async def test_an_answer_with_a_lone_surrogate_fails_its_call_as_a_protocol_error() -> None:
    async with child() as client:
        with pytest.raises(
            mcpfsm.ProtocolError,
            match=r"^peer sent a string holding a lone UTF-16 surrogate, which is no Unicode text \(RFC 8259 §8\.2\)$",
        ):
            await client.call_tool("lone", {})
        assert (await client.call_tool("echo", {"text": "after"})).text == "after"


async def test_a_forty_megabyte_line_within_the_limit_arrives_whole() -> None:
    # Linear framing: bench/large_answers.py measures the CPU this costs (quadratic before).
    size = 40 * 1024 * 1024
    async with child(max_response_bytes=64 * 1024 * 1024) as client:
        result = await client.call_tool("big", {"bytes": size})
    assert len(result.text) == size and result.text.strip("x") == ""


async def test_a_missing_program_is_a_transport_error() -> None:
    with pytest.raises(mcpfsm.TransportError, match=r"^cannot start MCP server '/nonexistent/mcp-server': "):
        async with stdio(["/nonexistent/mcp-server"]):
            pass
