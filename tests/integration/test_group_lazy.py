"""Lazy members and known listings (docs/groups.md, "Many servers") against real servers and real stores.

Members are real stdio children (``tests/support/stdio_member.py``, which appends its process id to a file as it starts:
the count of processes a group started; fastmcp's server over stdio) and real HTTP servers (the official SDK's
test peer, which logs every request, and fastmcp's). Known listings live in a ``FileStore`` on disk and in a
``RedisStore`` on a real ``redis-server``; a fresh process reads them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm._core.config import load_config
from mcpfsm._core.known_listings import known_key
from tests.support.fastmcp_peer import FASTMCP_STDIO, FASTMCP_TOOLS, FastmcpServer
from tests.support.peer.fixtures import REPO_ROOT, HttpPeer
from tests.support.redisserver import RedisServer, command

MEMBER: Final = str(REPO_ROOT / "tests" / "support" / "stdio_member.py")
SQL_ARGS: Final = {"query": "select 1", "database": "analytics"}
HOUR_MS: Final = 3_600_000
START: Final = 120.0
"""Seconds a member may take to connect (fastmcp over stdio starts slowly on a busy machine)."""
SECRET_HEADER: Final = "hdr-secret-5b1f0c9e7a"
SECRET_ENV: Final = "env-secret-2d8c4f6a13"
SECRET_ARG: Final = "arg-secret-9e3a7b5d02"


def started(path: Path) -> int:
    """How many processes of a member started (``--started`` lines)."""
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


def member(tmp_path: Path, name: str, *extra: str, **options: Any) -> dict[str, Any]:
    """A ``tests/support/stdio_member.py`` entry that counts its starts in ``tmp_path/NAME.started``."""
    args = [MEMBER, "--name", name, "--started", str(tmp_path / f"{name}.started"), *extra]
    return {"command": sys.executable, "args": args, "cwd": str(REPO_ROOT), **options}


def hint(peer: HttpPeer, ttl_ms: int) -> None:
    peer.control({"action": "cache_hints", "hints": {"tools/list": {"ttlMs": ttl_ms, "cacheScope": "private"}}})


def requests_to(peer: HttpPeer) -> list[str]:
    return [entry["jsonrpc_method"] for entry in peer.log()]


def member_events(events: list[mcpfsm.CallEvent], server: str) -> list[tuple[str | None, str, str | None]]:
    kept = [event for event in events if isinstance(event, mcpfsm.MemberEvent) and event.server == server]
    return [(event.previous, event.state, event.trigger) for event in kept]


def owner(tool: mcpfsm.Tool) -> str:
    """The member that listed an aggregated tool."""
    assert isinstance(tool, mcpfsm.GroupTool)
    return tool.server


async def test_an_idle_member_starts_nothing_and_concurrent_first_uses_share_one_connect(tmp_path: Path) -> None:
    config = {
        "mcpServers": {
            "a": member(tmp_path, "a"),
            "b": member(tmp_path, "b"),
            "eager": member(tmp_path, "eager", lazy=False),
        }
    }
    seen: list[mcpfsm.CallEvent] = []
    async with mcpfsm.ClientGroup(config, lazy=True, on_event=seen.append) as group:
        # The server's own "lazy": false wins over the group's lazy=True.
        assert group.status == {"a": "idle", "b": "idle", "eager": "connected"}
        assert [started(tmp_path / f"{name}.started") for name in ("a", "b", "eager")] == [0, 0, 1]
        with pytest.raises(mcpfsm.McpError, match=r"^server 'a' is idle; await group.client\('a'\) connects it$"):
            group["a"]
        clients: list[mcpfsm.Client] = []

        async def first_use() -> None:
            clients.append(await group.client("a"))

        async with trio.open_nursery() as nursery:
            for _ in range(8):
                nursery.start_soon(first_use)
        assert len(clients) == 8 and all(client is clients[0] for client in clients)
        assert started(tmp_path / "a.started") == 1
        assert member_events(seen, "a") == [("idle", "connecting", "used"), ("connecting", "connected", "connected")]
        assert group.status == {"a": "connected", "b": "idle", "eager": "connected"}
        # A listing with nothing known to answer for "b" (no store) connects it: a listing that needs it.
        assert (await group.tools()).names == [f"{name}_{tool}" for name in ("a", "b", "eager") for tool in
                                               ("pid", "sleep", "echo")]  # fmt: skip
        assert [started(tmp_path / f"{name}.started") for name in ("a", "b", "eager")] == [1, 1, 1]
    # And the group's lazy=False is overridden by a server's "lazy": true.
    config["mcpServers"]["b"]["lazy"] = True
    async with mcpfsm.ClientGroup(config) as group:
        assert group.status == {"a": "connected", "b": "idle", "eager": "connected"}
        assert started(tmp_path / "b.started") == 1


async def test_a_cancelled_first_use_stops_waiting_without_cancelling_the_connect(tmp_path: Path) -> None:
    config = {"mcpServers": {"a": member(tmp_path, "a")}}
    async with mcpfsm.ClientGroup(config, lazy=True) as group:
        with trio.CancelScope() as scope:
            scope.cancel()
            await group.client("a")
        assert group.status == {"a": "connecting"}
        client = await group.client("a")
        assert group.status == {"a": "connected"} and started(tmp_path / "a.started") == 1
        assert (await client.call_tool("echo", {"text": "still here"})).text == "still here"


async def test_known_listings_answer_for_idle_members_without_starting_or_connecting_anything(
    tmp_path: Path, peer: HttpPeer, fastmcp_http: FastmcpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    hint(peer, HOUR_MS)
    monkeypatch.setenv("GROUP_LAZY_SECRET", SECRET_ENV)
    config = {
        "mcpServers": {
            "notes": member(tmp_path, "notes", "--token", SECRET_ARG, env={"TOKEN": "${env:GROUP_LAZY_SECRET}"}),
            "files": member(tmp_path, "files"),
            "sql": {"url": peer.url, "headers": {"X-Api-Key": SECRET_HEADER}},
            "fast": {"url": fastmcp_http.url},
            "fast_stdio": {"command": FASTMCP_STDIO[0], "args": FASTMCP_STDIO[1:], "cwd": str(REPO_ROOT)},
        }
    }
    directory = tmp_path / "store"
    async with mcpfsm.ClientGroup(config, store=mcpfsm.FileStore(directory), connect_timeout=START) as group:
        live = await group.tools()
        assert all(tool.known_at is None for tool in live)
    # Every key is a digest and no value quotes a header, an env value, an argument or a token.
    for path in directory.iterdir():
        text = path.name + (path.read_text(encoding="utf-8") if path.is_file() else "")
        assert not any(secret in text for secret in (SECRET_HEADER, SECRET_ENV, SECRET_ARG, "X-Api-Key"))
    store = mcpfsm.FileStore(directory)
    values = {name: await store.get(known_key(server)) for name, server in load_config(config).servers.items()}
    assert {name: (value or {}).get("era") for name, value in values.items()} == dict.fromkeys(values, "modern")
    assert values["sql"] is not None and values["sql"]["ttl_ms"] == HOUR_MS

    # fastmcp's server says ttlMs 0 (SEP-2549: stale at once): its known listings are never fresh.
    assert (values["fast"]["ttl_ms"], values["fast_stdio"]["ttl_ms"]) == (0, 0)  # type: ignore[index]
    fresh_ones = ["notes", "files", "sql"]

    peer.clear_log()
    seen: list[mcpfsm.CallEvent] = []
    async with mcpfsm.ClientGroup(
        config, lazy=True, store=mcpfsm.FileStore(directory), on_event=seen.append, connect_timeout=START
    ) as group:
        known = await group.tools()
        assert known.names == live.names
        assert group.status == {**dict.fromkeys(fresh_ones, "idle"), "fast": "connected", "fast_stdio": "connected"}
        assert {owner(tool): tool.known_at is not None for tool in known} == {
            **dict.fromkeys(fresh_ones, True), "fast": False, "fast_stdio": False
        }  # fmt: skip
        assert {tool.known_at for tool in known if owner(tool) == "sql"} == {values["sql"]["listed_at"]}
        assert group.known_at("sql") == values["sql"]["listed_at"]
        assert known.context_bytes == live.context_bytes
        assert [started(tmp_path / f"{name}.started") for name in ("notes", "files")] == [1, 1]
        assert requests_to(peer) == []
        assert {event.server for event in seen if isinstance(event, mcpfsm.MemberEvent)} == {"fast", "fast_stdio"}
        # A search across servers, answered from what is known (and the live listings of the others).
        best = await group.search("process id", limit=3)
        assert len(best) == 3 and set(best.names) <= {"notes_pid", "files_pid", "fast_pid", "fast_stdio_pid"}
        assert [group.status[name] for name in fresh_ones] == ["idle"] * 3
        # Calling a known tool connects that member, and only that one.
        result = await group.call_tool("files_echo", {"text": "first call"})
        assert result.text == "first call"
        assert [started(tmp_path / f"{name}.started") for name in ("notes", "files")] == [1, 2]
        assert [group.status[name] for name in fresh_ones] == ["idle", "connected", "idle"]
        sql = await group.call_tool("sql_execute-sql", SQL_ARGS)
        assert sql.text == "executed 'select 1' on 'analytics'"
        assert requests_to(peer) == ["server/discover", "tools/call"]
        assert [tool.name for tool in known if owner(tool) == "fast"] == [f"fast_{name}" for name in FASTMCP_TOOLS]


async def test_a_known_tool_is_planned_from_the_known_schema_and_a_moved_schema_recovers_from_32020(
    tmp_path: Path, peer: HttpPeer
) -> None:
    hint(peer, HOUR_MS)
    config = {"mcpServers": {"sql": {"url": peer.url}}}
    store = mcpfsm.FileStore(tmp_path / "store")
    async with mcpfsm.ClientGroup(config, store=store) as group:
        await group.tools()
    # The server's schema changes while nobody is connected: Region becomes a mirrored argument.
    peer.control({"action": "evolve"})
    peer.control({"action": "mismatch", "tool": "execute-sql", "count": 1})
    peer.clear_log()
    seen: list[mcpfsm.CallEvent] = []
    async with mcpfsm.ClientGroup(config, lazy=True, store=store, on_event=seen.append) as group:
        tool = (await group.tools()).get("sql_execute-sql")
        assert tool is not None and tool.known_at is not None
        assert tool.mirrored == {("database",): "Mcp-Param-Database", ("options", "readOnly"): "Mcp-Param-Read-Only"}
        result = await tool.call({**SQL_ARGS, "region": "eu-west"})
        assert result.text == "executed 'select 1' on 'analytics'"
    calls = [entry for entry in peer.log() if entry["jsonrpc_method"] == "tools/call"]
    assert [(entry["headers"]["mcp-param-database"], entry["headers"].get("mcp-param-region")) for entry in calls] == [
        ("analytics", None),
        ("analytics", "eu-west"),
    ]
    states = [event.state for event in seen if event.machine == "tool-call"]
    assert states == ["resolving", "planning", "sending", "relisting", "comparing", "retrying", "succeeded"]
    # The relist was a complete live listing: it is the known listing now, with the moved schema.
    value = await store.get(known_key(load_config(config)["sql"]))
    assert value is not None
    sql = next(entry for entry in value["tools"] if entry["name"] == "execute-sql")
    assert sql["inputSchema"]["properties"]["region"]["x-mcp-header"] == "Region"


async def test_a_tool_the_server_no_longer_lists_answers_as_an_unknown_tool_does_on_the_member(
    tmp_path: Path, peer: HttpPeer
) -> None:
    hint(peer, HOUR_MS)
    config = {"mcpServers": {"sql": {"url": peer.url}, "files": member(tmp_path, "files")}}
    store = mcpfsm.FileStore(tmp_path / "store")
    async with mcpfsm.ClientGroup(config, store=store) as group:
        await group.tools()
        direct_sql = await group["sql"].call_tool("ghost", {})
        with pytest.raises(mcpfsm.RpcError) as direct_files:
            await group["files"].call_tool("ghost", {})
    # Each known listing gains a tool the server does not have (it listed it once, say, and dropped it since).
    for server in load_config(config).servers.values():
        value = await store.get(known_key(server))
        assert value is not None
        value["tools"].append({"name": "ghost", "inputSchema": {"type": "object"}})
        await store.set(known_key(server), value)
    async with mcpfsm.ClientGroup(config, lazy=True, store=store) as group:
        tools = await group.tools()
        assert {"sql_ghost", "files_ghost"} <= set(tools.names)
        vanished = await group.call_tool("sql_ghost", {})
        assert (vanished.is_error, vanished.content) == (direct_sql.is_error, direct_sql.content) == (
            True,
            direct_sql.content,
        )
        with pytest.raises(mcpfsm.RpcError) as caught:
            await group.call_tool("files_ghost", {})
        assert (caught.value.code, caught.value.message) == (direct_files.value.code, direct_files.value.message)
        assert group.status == {"sql": "connected", "files": "connected"}


async def test_a_known_listing_of_another_era_is_discarded_when_the_member_connects(
    tmp_path: Path, peer: HttpPeer
) -> None:
    store = mcpfsm.FileStore(tmp_path / "store")
    legacy = {"mcpServers": {"sql": {"url": peer.url, "protocol": "2025-11-25"}}}
    async with mcpfsm.ClientGroup(legacy, store=store) as group:
        await group.tools()
    key = known_key(load_config(legacy)["sql"])
    value = await store.get(key)
    assert value is not None and (value["era"], value["protocol"], value["ttl_ms"]) == ("legacy", "2025-11-25", None)
    # The same server (the same identity: its URL), now in the 2026-07-28 era.
    modern = {"mcpServers": {"sql": {"url": peer.url}}}
    async with mcpfsm.ClientGroup(modern, lazy=True, store=store) as group:
        assert (await group.tools()).get("sql_echo") is not None  # idle: what is known answers
        client = await group.client("sql")
        assert client.protocol_version == "2026-07-28"
        with trio.fail_after(30):
            while await store.get(key) is not None:  # discarded right after the connect, in the group's task
                await trio.sleep(0.01)
        assert group.known_at("sql") is None


async def test_freshness_is_the_servers_smallest_ttl_else_known_ttl(tmp_path: Path) -> None:
    store = mcpfsm.FileStore(tmp_path / "store")
    config = {
        "mcpServers": {
            "plain": member(tmp_path, "plain"),
            "hour": member(tmp_path, "hour", "--ttl-ms", str(HOUR_MS)),
            "never": member(tmp_path, "never", "--ttl-ms", "0"),
        }
    }
    async with mcpfsm.ClientGroup(config, store=store) as group:
        await group.tools()
    counts = {name: started(tmp_path / f"{name}.started") for name in config["mcpServers"]}
    assert counts == dict.fromkeys(counts, 1)
    # known_ttl (a day by default) for the server without ttlMs; its own ttlMs for the others.
    async with mcpfsm.ClientGroup(config, lazy=True, store=store) as group:
        tools = await group.tools()
        assert group.status == {"plain": "idle", "hour": "idle", "never": "connected"}
        assert {owner(tool): tool.known_at is not None for tool in tools} == {"plain": True, "hour": True,
                                                                               "never": False}  # fmt: skip
    # A known_ttl shorter than the listing's age: only the server's own hour keeps "hour" idle.
    async with mcpfsm.ClientGroup(config, lazy=True, store=store, known_ttl=1e-6) as group:
        await group.tools()
        assert group.status == {"plain": "connected", "hour": "idle", "never": "connected"}


async def test_a_known_listing_is_written_after_a_complete_live_listing_only(tmp_path: Path, peer: HttpPeer) -> None:
    hint(peer, HOUR_MS)
    store = mcpfsm.FileStore(tmp_path / "store")
    config = {"mcpServers": {"sql": {"url": peer.url}}}
    key = known_key(load_config(config)["sql"])
    async with mcpfsm.ClientGroup(config, store=store) as group:
        await group.tools()
        first = await store.get(key)
        assert first is not None
        # Answered by the member's response cache (SEP-2549): not live, not written again.
        await group.tools()
        assert await store.get(key) == first
        peer.control({"action": "evolve"})
        await group.tools(fresh=True)
        second = await store.get(key)
        assert second is not None and second["listed_at"] > first["listed_at"] and second["tools"] != first["tools"]


def test_known_listings_in_a_redis_store_serve_a_fresh_process(
    tmp_path: Path, redis_server: RedisServer, redis_prefix: str
) -> None:
    config = {"mcpServers": {"a": member(tmp_path, "a"), "b": member(tmp_path, "b", env={"K": SECRET_ENV})}}
    (tmp_path / "mcp.json").write_text(json.dumps(config), encoding="utf-8")

    async def fill() -> tuple[list[str], list[str]]:
        async with mcpfsm.RedisStore(redis_server.url, prefix=redis_prefix) as store:
            async with mcpfsm.ClientGroup(config, store=store) as group:
                names = (await group.tools()).names
            values = [await store.get(known_key(server)) for server in load_config(config).servers.values()]
        return names, [json.dumps(value) for value in values]

    names, values = trio.run(fill)
    # A RedisStore writes the prefix and a digest of the store key: two keys, one per member, nothing readable.
    keys = command(redis_server.port, "KEYS", f"{redis_prefix}*").decode()
    assert keys.split("\r\n")[0] == "*2"
    assert all('"era": "modern"' in value for value in values)
    assert not any(SECRET_ENV in text for text in (keys, *values))
    # A fresh process: a lazy group over the same store lists both members and starts neither.
    script = (
        "import json, sys, trio, mcpfsm\n"
        "async def main():\n"
        f"    async with mcpfsm.RedisStore({redis_server.url!r}, prefix={redis_prefix!r}) as store:\n"
        "        async with mcpfsm.ClientGroup('mcp.json', lazy=True, store=store) as group:\n"
        "            tools = await group.tools()\n"
        "            print(json.dumps([tools.names, group.status, [t.known_at is not None for t in tools]]))\n"
        "trio.run(main)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed, status, known = json.loads(done.stdout)
    assert listed == names and status == {"a": "idle", "b": "idle"} and all(known)
    assert [started(tmp_path / f"{name}.started") for name in ("a", "b")] == [1, 1]
