"""Client groups against real servers (docs/groups.md): two official-SDK HTTP servers in two eras, fastmcp's
server over HTTP and stdio, stdio servers as real subprocesses, a member that is down, one that will not exit, a
renamed tool that collides, and a configuration file on disk whose values come from environment variables."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm import StdioTransport
from tests.support.fastmcp_peer import FASTMCP_STDIO, FASTMCP_TOOLS, FastmcpServer
from tests.support.peer.fixtures import REPO_ROOT, HttpPeer, start_http_peer
from tests.support.ports import reserved_port

PEER: Final = [sys.executable, "-m", "tests.support.peer.server", "--stdio"]
LINGERING: Final = [sys.executable, "-m", "tests.support.stdio_lingering"]
SQL_ARGS: Final = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}
REGION_ARGS: Final = {**SQL_ARGS, "region": "eu-west"}
PEER_TOOLS: Final = ["execute-sql", "echo", "slow", "fail"]
START: Final = 120.0
"""Seconds a member may take to connect: the SDK server over stdio starts slowly on a busy machine."""


@pytest.fixture(scope="module")
def legacy_peer() -> Iterator[HttpPeer]:
    with start_http_peer(mode="legacy", timeout=60) as peer:
        yield peer


@pytest.fixture
def peers(modern_peer: HttpPeer, legacy_peer: HttpPeer) -> tuple[HttpPeer, HttpPeer]:
    for peer in (modern_peer, legacy_peer):
        peer.control({"action": "reset"})
    return modern_peer, legacy_peer


def stdio_entry(command: list[str], **options: Any) -> dict[str, Any]:
    return {"command": command[0], "args": command[1:], "cwd": str(REPO_ROOT), **options}


def pid_of(client: mcpfsm.Client) -> int:
    transport = client.transport
    assert isinstance(transport, StdioTransport) and transport.pid is not None
    return transport.pid


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def text_of(result: mcpfsm.ToolResult) -> str:
    return str(result.content[0]["text"])


async def test_a_group_from_a_file_opens_every_kind_of_member_and_tells_their_status(
    peers: tuple[HttpPeer, HttpPeer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    modern, legacy = peers
    monkeypatch.setenv("GROUP_TEST_TENANT", "acme")
    monkeypatch.setenv("GROUP_TEST_SECRET", "s3cret-value")
    monkeypatch.setenv("GROUP_TEST_PATH", str(REPO_ROOT))
    with reserved_port() as closed_port:
        document = {
            "mcpServers": {
                "sql": {"type": "http", "url": modern.url, "headers": {"X-Tenant": "${env:GROUP_TEST_TENANT}"}},
                "archive": {"url": legacy.url, "include_tools": ["execute-*", "echo"], "exclude_tools": ["echo"]},
                "local": {
                    "command": sys.executable,
                    "args": ["-m", "tests.support.stdio_lingering"],
                    "cwd": "${GROUP_TEST_PATH}",
                    "env": {"SERVICE_SECRET": "${env:GROUP_TEST_SECRET}"},
                },
                "down": {"url": f"http://127.0.0.1:{closed_port}/mcp", "timeout": 5},
                "missing": {"command": "/nonexistent/mcp-server-binary", "args": ["--stdio"]},
                "off": {"command": "never-run", "enabled": False},
            }
        }
        path = tmp_path / "mcp.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        async with mcpfsm.ClientGroup(path) as group:
            assert group.status == {
                "sql": "connected",
                "archive": "connected",
                "local": "connected",
                "down": "failed",
                "missing": "failed",
                "off": "disabled",
            }
            assert sorted(group.errors) == ["down", "missing"]
            assert all(isinstance(error, mcpfsm.TransportError) for error in group.errors.values())
            assert "/nonexistent/mcp-server-binary" in str(group.errors["missing"])
            assert (group["sql"].protocol_version, group["archive"].protocol_version) == ("2026-07-28", "2025-11-25")
            with pytest.raises(mcpfsm.McpError, match=r"^server 'down' is failed: "):
                group["down"]
            with pytest.raises(KeyError):
                group["nobody"]

            tools = await group.tools()
            own = (await group["sql"].tools()).names
            assert own[:4] == PEER_TOOLS and len(own) > 8
            assert tools.names == [
                *(f"sql_{name}" for name in own),
                "archive_execute-sql",
                "local_pid",
                "local_getenv",
            ]
            tool = tools.get("sql_execute-sql")
            assert isinstance(tool, mcpfsm.GroupTool)
            assert (tool.server, tool.member_tool.name) == ("sql", "execute-sql")
            # The environment reached the stdio child: the entry's env over the parent's.
            secret = await group.call_tool("local_getenv", {"name": "SERVICE_SECRET"})
            assert text_of(secret) == "s3cret-value"
            inherited = await group.call_tool("local_getenv", {"name": "GROUP_TEST_TENANT"})
            assert text_of(inherited) == "acme"


async def test_a_call_through_the_group_carries_its_members_headers_events_and_recovery(
    peers: tuple[HttpPeer, HttpPeer],
) -> None:
    modern, legacy = peers
    config = {
        "mcpServers": {
            "sql": {"url": modern.url},
            "archive": {"url": legacy.url, "prefix": "old"},
            "local": stdio_entry(PEER),
        }
    }
    seen: list[mcpfsm.CallEvent] = []
    async with (
        mcpfsm.ClientGroup(config, on_event=seen.append, connect_timeout=START) as group,
        group.events() as channel,
    ):
        tools = await group.tools()
        assert "old_execute-sql" in tools and "local_echo" in tools
        # The server's schema changes after the listing: the next call is refused once with -32020, and the
        # member's own recovery relists and retries with the new Region header.
        modern.control({"action": "evolve"})
        modern.control({"action": "mismatch", "tool": "execute-sql", "count": 1})
        modern.clear_log()
        tool = tools.get("sql_execute-sql")
        assert tool is not None
        result = await tool.call(REGION_ARGS)
        assert text_of(result) == "executed 'select 1' on 'analytics'"
        calls = [entry for entry in modern.log() if entry["jsonrpc_method"] == "tools/call"]
        assert [
            (
                entry["headers"]["mcp-name"],
                entry["headers"]["mcp-param-database"],
                entry["headers"].get("mcp-param-region"),
            )
            for entry in calls
        ] == [("execute-sql", "analytics", None), ("execute-sql", "analytics", "eu-west")]
        assert [entry["answered_by"] for entry in calls] == ["peer:mismatch", "sdk"]
        echoed = await group.call_tool("local_echo", {"text": "from stdio"})
        assert text_of(echoed) == "from stdio"
        legacy_result = await group.call_tool("old_execute-sql", SQL_ARGS)
        assert text_of(legacy_result) == "executed 'select 1' on 'analytics'"
        received = []
        while True:
            try:
                received.append(channel.receive_nowait())
            except trio.WouldBlock:
                break
    tool_events = [event for event in seen if event.machine == "tool-call"]
    # The members' status changes at open came before the subscription; everything after reached both.
    opening = seen[: len(seen) - len(received)]
    assert sorted((event.server, event.state) for event in opening) == sorted(
        (server, state) for server in ("sql", "archive", "local") for state in ("connecting", "connected")
    )
    assert all(isinstance(event, mcpfsm.MemberEvent) for event in opening)
    assert received == seen[len(opening) :]
    by_call: dict[str, list[mcpfsm.CallEvent]] = {}
    for event in tool_events:
        by_call.setdefault(event.call_id, []).append(event)
    runs = [(events[0].server, events[0].tool, [event.state for event in events]) for events in by_call.values()]
    assert runs == [
        ("sql", "execute-sql", ["resolving", "planning", "sending", "relisting", "comparing", "retrying", "succeeded"]),
        ("local", "echo", ["resolving", "planning", "sending", "succeeded"]),
        ("archive", "execute-sql", ["resolving", "planning", "sending", "succeeded"]),
    ]
    assert all(event.to_dict()["server"] == event.server for event in tool_events)
    assert all(event.server is not None for event in seen)


async def test_a_renamed_tool_that_collides_is_a_config_error_naming_both_servers(
    peers: tuple[HttpPeer, HttpPeer],
) -> None:
    modern, legacy = peers
    config = {
        "mcpServers": {
            "peer": {"url": modern.url},
            "mirror": {"url": legacy.url, "prefix": "peer", "include_tools": ["ech?", "fail"]},
        }
    }
    async with mcpfsm.ClientGroup(config) as group:
        with pytest.raises(mcpfsm.ConfigError) as caught:
            await group.tools()
        assert str(caught.value) == (
            "tool name 'peer_echo' collides: server 'peer' lists tool 'echo' and server 'mirror' lists tool 'echo'"
            " under it; set a prefix or exclude_tools for one of them"
        )
    # Another prefix for the second server removes the collision; the filters still apply.
    config["mcpServers"]["mirror"]["prefix"] = "old"
    async with mcpfsm.ClientGroup(config) as group:
        own = (await group["peer"].tools()).names
        assert (await group.tools()).names == [*(f"peer_{name}" for name in own), "old_echo", "old_fail"]


async def test_resources_and_prompts_are_aggregated_and_routed_to_their_member(
    peers: tuple[HttpPeer, HttpPeer],
) -> None:
    modern, legacy = peers
    config = {"mcpServers": {"sql": {"url": modern.url}, "archive": {"url": legacy.url, "prefix": "old"}}}
    async with mcpfsm.ClientGroup(config) as group:
        resources = await group.resources()
        assert [(resource.server, resource.uri) for resource in resources] == [
            ("sql", "res://static/readme"),
            ("sql", "res://static/logo"),
            ("archive", "res://static/readme"),
            ("archive", "res://static/logo"),
        ]
        # Both members list the same URI: a plain URI cannot choose, a listed Resource or server= can.
        with pytest.raises(
            mcpfsm.ConfigError,
            match=r"^servers 'sql', 'archive' all list the resource 'res://static/readme': pass server=$",
        ):
            await group.read_resource("res://static/readme")
        legacy.clear_log()
        read = await group.read_resource(resources[2])
        assert read.contents[0]["text"] == "hello from a static resource"
        assert [entry["jsonrpc_method"] for entry in legacy.log()] == ["resources/read"]
        templated = await group.read_resource("res://items/42", server="sql")
        assert json.loads(templated.contents[0]["text"])["id"] == "42"
        with pytest.raises(
            mcpfsm.McpError, match=r"^no server of the group lists the resource 'res://items/7': pass server=$"
        ):
            await group.read_resource("res://items/7")

        prompts = await group.prompts()
        named = {prompt.name: prompt.server for prompt in prompts}
        assert {"sql_greet": "sql", "old_greet": "archive"}.items() <= named.items()
        legacy.clear_log()
        greeting = await group.get_prompt("old_greet", {"name": "Ada"})
        assert greeting.messages[0]["content"]["text"] == "Say hello to Ada in a plain style."
        assert [entry["jsonrpc_method"] for entry in legacy.log()] == ["prompts/get"]
        legacy.clear_log()
    # Leaving the block ended the legacy member's session (MCP 2025-11-25: DELETE with its session id).
    assert [entry["http_method"] for entry in legacy.log()] == ["DELETE"]


async def test_a_failed_member_reconnects_once_it_can_start(tmp_path: Path) -> None:
    script = tmp_path / "late_server.py"
    config = {
        "mcpServers": {
            "early": stdio_entry(LINGERING),
            "late": {"command": sys.executable, "args": [str(script)], "cwd": str(REPO_ROOT)},
        }
    }
    async with mcpfsm.ClientGroup(config) as group:
        assert group.status == {"early": "connected", "late": "failed"}
        assert isinstance(group.errors["late"], mcpfsm.TransportError)
        assert (await group.tools()).names == ["early_pid", "early_getenv"]
        script.write_text(
            f"import sys\nsys.path.insert(0, {str(REPO_ROOT)!r})\n"
            "from tests.support.stdio_lingering import main\nmain()\n",
            encoding="utf-8",
        )
        assert await group.reconnect("late") == "connected"
        assert group.status == {"early": "connected", "late": "connected"}
        assert group.errors == {}
        pid = await group.call_tool("late_pid")
        assert int(text_of(pid)) == pid_of(group["late"])
        # A reconnect of a connected member replaces its process.
        old = pid_of(group["early"])
        assert await group.reconnect("early") == "connected"
        assert pid_of(group["early"]) != old and not is_running(old)
        # A member whose process dies is "failed" at the next listing; the others are still listed.
        os.kill(pid_of(group["late"]), signal.SIGKILL)
        assert (await group.tools(fresh=True)).names == ["early_pid", "early_getenv"]
        assert group.status == {"early": "connected", "late": "failed"}
        assert isinstance(group.errors["late"], mcpfsm.TransportError)
    with pytest.raises(mcpfsm.McpError, match=r"^the client group is closed$"):
        group["early"]


async def test_closing_reaps_every_stdio_child_even_one_that_ignores_eof_and_sigterm() -> None:
    config = {
        "mcpServers": {
            "polite": stdio_entry(PEER),
            "stubborn": stdio_entry([*LINGERING, "--linger"]),
            "quick": stdio_entry(LINGERING),
        }
    }
    group = mcpfsm.ClientGroup(config, connect_timeout=START)
    async with group:
        assert set(group.status.values()) == {"connected"}
        pids = {name: pid_of(group[name]) for name in group}
        assert all(is_running(pid) for pid in pids.values())
        started = trio.current_time()
    closed = trio.current_time() - started
    assert not any(is_running(pid) for pid in pids.values())
    # Closed concurrently, each bounded (stdin closed, 2 s, SIGTERM, 2 s, SIGKILL): one stubborn child costs
    # about 4 s, not the sum over the members.
    assert 3.5 < closed < 10
    await group.aclose()  # idempotent
    assert group.status == {"polite": "connected", "stubborn": "connected", "quick": "connected"}


async def test_a_config_in_claude_desktops_documented_format_works_unchanged(tmp_path: Path) -> None:
    # The shape of claude_desktop_config.json as the MCP "Connect to local MCP servers" guide shows it: command,
    # args and env only (env here makes the repository importable, as a user's PATH makes npx findable).
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(
        "{\n"
        '  "mcpServers": {\n'
        '    "peer": {\n'
        f'      "command": {json.dumps(sys.executable)},\n'
        '      "args": ["-m", "tests.support.peer.server", "--stdio"],\n'
        f'      "env": {{"PYTHONPATH": {json.dumps(str(REPO_ROOT))}}}\n'
        "    }\n"
        "  }\n"
        "}\n",
        encoding="utf-8",
    )
    async with mcpfsm.ClientGroup(path, connect_timeout=START) as group:
        assert group.status == {"peer": "connected"}
        result = await group.call_tool("peer_echo", {"text": "hello"})
        assert text_of(result) == "hello"


async def test_a_group_of_two_kinds_of_http_server_and_two_kinds_of_stdio_server(
    peers: tuple[HttpPeer, HttpPeer], fastmcp_http: FastmcpServer
) -> None:
    # The official SDK's server and fastmcp's, each over HTTP and over stdio, in one group from one file's shape.
    modern, _ = peers
    config = {
        "mcpServers": {
            "sdk": {"type": "http", "url": modern.url},
            "fast": {"type": "http", "url": fastmcp_http.url},
            "sdk_stdio": stdio_entry(PEER, prefix="sdk1"),
            "fast_stdio": stdio_entry(FASTMCP_STDIO, prefix="fast1"),
        }
    }
    seen: list[mcpfsm.CallEvent] = []
    async with mcpfsm.ClientGroup(config, on_event=seen.append, connect_timeout=START) as group:
        assert group.status == dict.fromkeys(["sdk", "fast", "sdk_stdio", "fast_stdio"], "connected")
        assert group.errors == {}
        assert {name: group[name].protocol_version for name in group} == dict.fromkeys(group, "2026-07-28")
        pids = {name: pid_of(group[name]) for name in ("sdk_stdio", "fast_stdio")}
        tools = await group.tools()
        own = (await group["sdk"].tools()).names
        assert tools.names == [
            *(f"sdk_{name}" for name in own),
            *(f"fast_{name}" for name in FASTMCP_TOOLS),
            *(f"sdk1_{name}" for name in (await group["sdk_stdio"].tools()).names),
            *(f"fast1_{name}" for name in FASTMCP_TOOLS),
        ]
        before = len(fastmcp_http.log())
        added = await group.call_tool("fast_add", {"a": 2, "b": 40})
        assert (text_of(added), added.structured_content) == ("42", {"result": 42})
        # The call went to fastmcp's server with the modern era's headers (MCP 2026-07-28: Mcp-Method, Mcp-Name).
        sent = fastmcp_http.log()[before:]
        assert [(entry["http_method"], entry["headers"].get("mcp-method"), entry["headers"].get("mcp-name"))
                for entry in sent] == [("POST", "tools/call", "add")]
        assert "mcp-session-id" not in sent[0]["headers"]
        assert text_of(await group.call_tool("fast1_echo", {"text": "over stdio"})) == "over stdio"
        assert int(text_of(await group.call_tool("fast1_pid"))) == pids["fast_stdio"]
        assert text_of(await group.call_tool("sdk1_echo", {"text": "sdk stdio"})) == "sdk stdio"
        sql = await group.call_tool("sdk_execute-sql", SQL_ARGS)
        assert text_of(sql) == "executed 'select 1' on 'analytics'"
    assert not any(is_running(pid) for pid in pids.values())
    calls = {}
    for event in seen:
        if event.machine == "tool-call":
            calls.setdefault(event.call_id, []).append(event)
    assert [(events[0].server, events[0].tool, events[-1].state) for events in calls.values()] == [
        ("fast", "add", "succeeded"),
        ("fast_stdio", "echo", "succeeded"),
        ("fast_stdio", "pid", "succeeded"),
        ("sdk_stdio", "echo", "succeeded"),
        ("sdk", "execute-sql", "succeeded"),
    ]
