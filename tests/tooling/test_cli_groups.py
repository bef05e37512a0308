"""The command line with a configuration: --config, the default search, a server name for a URL, ``mcpfsm servers``,
calls through the group, ``mcpfsm trace`` of a multi-server trail and ``mcpfsm demo --group``, as subprocesses."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from mcpfsm._tooling.cli import Exit
from tests.support.peer.fixtures import REPO_ROOT, HttpPeer, start_http_peer
from tests.support.ports import reserved_port

SQL_ARGS: Final = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}


@dataclass(frozen=True, slots=True)
class Run:
    code: int
    stdout: str
    stderr: str


def mcpfsm(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 90) -> Run:
    done = subprocess.run(
        [sys.executable, "-m", "mcpfsm", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})},
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def web() -> Iterator[HttpPeer]:
    with start_http_peer(mode="modern", timeout=60) as peer:
        yield peer


@pytest.fixture
def config(web: HttpPeer, tmp_path: Path) -> Iterator[dict[str, Any]]:
    web.control({"action": "reset"})
    with reserved_port() as closed:
        yield {
            "mcpServers": {
                "web": {"url": web.url, "include_tools": ["execute-sql", "echo"]},
                "local": {
                    "command": sys.executable,
                    "args": ["-m", "tests.support.stdio_lingering"],
                    "cwd": str(REPO_ROOT),
                    "env": {"GREETING": "${env:GROUP_CLI_GREETING}"},
                },
                "down": {"url": f"http://127.0.0.1:{closed}/mcp"},
                "off": {"command": "never-run", "enabled": False},
            }
        }


def write(path: Path, config: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


ENV: Final = {"GROUP_CLI_GREETING": "hello from the environment"}


def test_servers_finds_the_configuration_in_the_working_directory(config: dict[str, Any], tmp_path: Path) -> None:
    write(tmp_path / "mcp.json", config)
    run = mcpfsm("servers", "--json", cwd=tmp_path, env=ENV)
    assert run.code == Exit.ok, run.stderr
    rows = json.loads(run.stdout)["servers"]
    down = rows[2].pop("error")
    live = {"known_at": None, "age": None}
    assert rows == [
        {"server": "web", "status": "connected", "protocol": "2026-07-28", "tools": 2, **live, "error": None},
        {"server": "local", "status": "connected", "protocol": "2026-07-28", "tools": 2, **live, "error": None},
        {"server": "down", "status": "failed", "protocol": None, "tools": None, **live},
        {"server": "off", "status": "disabled", "protocol": None, "tools": None, **live, "error": None},
    ]
    assert "127.0.0.1" in down
    table = mcpfsm("servers", cwd=tmp_path, env=ENV)
    assert table.stdout.splitlines()[:3] == [
        "SERVER  STATUS     ERA         TOOLS  LISTED  ERROR",
        "web     connected  2026-07-28  2      live",
        "local   connected  2026-07-28  2      live",
    ]


def test_servers_shows_idle_members_answered_by_their_known_listings_and_its_age(
    config: dict[str, Any], tmp_path: Path, web: HttpPeer
) -> None:
    # The server lets its listing be reused for an hour (SEP-2549): its known listing stays fresh that long.
    web.control({"action": "cache_hints", "hints": {"tools/list": {"ttlMs": 3_600_000, "cacheScope": "private"}}})
    del config["mcpServers"]["down"]
    path = write(tmp_path / "mcp.json", config)
    store = tmp_path / "store"
    first = mcpfsm("servers", "--config", str(path), "--store", str(store), cwd=tmp_path, env=ENV)
    assert first.code == Exit.ok, first.stderr
    web.clear_log()
    lazy = mcpfsm("servers", "--config", str(path), "--store", str(store), "--lazy", "--json", cwd=tmp_path, env=ENV)
    assert lazy.code == Exit.ok, lazy.stderr
    rows = {row["server"]: row for row in json.loads(lazy.stdout)["servers"]}
    assert {name: (row["status"], row["tools"]) for name, row in rows.items()} == {
        "web": ("idle", 2), "local": ("idle", 2), "off": ("disabled", None)
    }  # fmt: skip
    assert all(0 <= rows[name]["age"] < 600 and rows[name]["known_at"] > 0 for name in ("web", "local"))
    assert web.log() == []  # nothing was sent: the known listing answered
    table = mcpfsm("servers", "--config", str(path), "--store", str(store), "--lazy", cwd=tmp_path, env=ENV)
    cells = [re.split(r"\s{2,}", line.strip()) for line in table.stdout.splitlines()]
    assert cells[0] == ["SERVER", "STATUS", "ERA", "TOOLS", "LISTED", "ERROR"]
    assert [cells[1][:4], cells[2][:4], cells[3]] == [
        ["web", "idle", "-", "2"], ["local", "idle", "-", "2"], ["off", "disabled", "-", "-", "-"]
    ]  # fmt: skip
    assert re.fullmatch(r"\d+ s ago", cells[1][4]) and re.fullmatch(r"\d+ s ago", cells[2][4])


def test_the_users_config_dir_is_searched_after_the_working_directory(config: dict[str, Any], tmp_path: Path) -> None:
    del config["mcpServers"]["down"]
    write(tmp_path / "xdg" / "mcpfsm" / "mcp.json", config)
    work = tmp_path / "work"
    work.mkdir()
    env = {**ENV, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    run = mcpfsm("tools", cwd=work, env=env)
    assert run.code == Exit.ok, run.stderr
    names = [line.split()[0] for line in run.stdout.splitlines()[1:] if line and not line.startswith((" ", "excluded"))]
    assert names == ["web_execute-sql", "web_echo", "local_pid", "local_getenv"]
    # A configuration in the working directory comes first.
    write(work / "mcp.json", {"mcpServers": {"only": config["mcpServers"]["local"]}})
    first = mcpfsm("tools", cwd=work, env=env)
    assert [line.split()[0] for line in first.stdout.splitlines()[1:3]] == ["only_pid", "only_getenv"]


def test_a_call_through_the_group_and_a_server_name_where_the_url_goes(
    config: dict[str, Any], tmp_path: Path, web: HttpPeer
) -> None:
    path = write(tmp_path / "servers.json", config)
    events = tmp_path / "events.jsonl"
    run = mcpfsm(
        "call", "--config", str(path), "web_execute-sql", "--args", json.dumps(SQL_ARGS), "--events", str(events),
        cwd=tmp_path, env=ENV,
    )  # fmt: skip
    assert run.code == Exit.ok, run.stderr
    assert json.loads(run.stdout)["content"][0]["text"] == "executed 'select 1' on 'analytics'"
    calls = [entry for entry in web.log() if entry["jsonrpc_method"] == "tools/call"]
    assert calls[-1]["headers"]["mcp-param-database"] == "analytics"
    trail = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    # The members' status changes as the group opened (every server at once: in any order), then the call.
    members = [record for record in trail if record["machine"] == "group"]
    assert sorted((record["server"], record["state"]) for record in members) == [
        ("down", "connecting"), ("down", "failed"), ("local", "connected"), ("local", "connecting"),
        ("web", "connected"), ("web", "connecting"),
    ]  # fmt: skip
    records = [record for record in trail if record["machine"] == "tool-call"]
    assert [(record["server"], record["tool"], record["state"]) for record in records] == [
        ("web", "execute-sql", "resolving"),
        ("web", "execute-sql", "planning"),
        ("web", "execute-sql", "sending"),
        ("web", "execute-sql", "succeeded"),
    ]
    # A server of the configuration where the URL goes: that server alone, by its own tool names.
    named = mcpfsm(
        "call", "--config", str(path), "local", "getenv", "--args", '{"name": "GREETING"}', "--compact",
        "--events", str(tmp_path / "local.jsonl"), cwd=tmp_path, env=ENV,
    )  # fmt: skip
    assert named.code == Exit.ok, named.stderr
    assert json.loads(named.stdout)["content"][0]["text"] == "hello from the environment"
    unknown = mcpfsm("tools", "--config", str(path), "nowhere", cwd=tmp_path, env=ENV)
    assert (unknown.code, unknown.stderr) == (
        Exit.bad_url,
        f"mcpfsm: error: 'nowhere' is neither an http(s) URL nor a server of {path} (its servers: web, local, down,"
        " off)\n",
    )
    missing_tool = mcpfsm("call", "--config", str(path), "web_nothing", cwd=tmp_path, env=ENV)
    assert missing_tool.code == Exit.unknown_tool
    assert "unknown tool 'web_nothing'" in missing_tool.stderr and "server 'down' failed" in missing_tool.stderr

    # The two trails as one: `mcpfsm trace` groups them by server, and draws one server's run on demand.
    trail = tmp_path / "trail.jsonl"
    trail.write_text(events.read_text(encoding="utf-8") + (tmp_path / "local.jsonl").read_text(encoding="utf-8"))
    summary = mcpfsm("trace", str(trail), cwd=tmp_path)
    assert summary.code == Exit.ok, summary.stderr
    web_id, local_id = records[0]["call_id"], json.loads(trail.read_text().splitlines()[-1])["call_id"]
    # Each member's status changes are a run of their own (the server named where the URL goes is no member).
    assert summary.stdout.splitlines() == [
        "server web: 2 runs",
        "  group:web  group  member  connected (2 events)",
        f"  {web_id}  tool-call  execute-sql  succeeded (4 events)",
        "server local: 2 runs",
        "  group:local  group  member  connected (2 events)",
        f"  {local_id}  tool-call  getenv  succeeded (4 events)",
        "server down: 1 run",
        "  group:down  group  member  failed (2 events)",
    ]
    drawn = mcpfsm("trace", str(trail), "--server", "local", cwd=tmp_path)
    assert drawn.code == Exit.ok, drawn.stderr
    assert drawn.stdout.splitlines()[2:4] == ["    participant Client", "    participant Server as local"]
    assert "Mcp-Name: getenv" in drawn.stdout
    # The member that could not connect: its run is drawn (the connect, the refusal with its error).
    down = mcpfsm("trace", str(trail), "--server", "down", cwd=tmp_path)
    assert down.code == Exit.ok, down.stderr
    assert down.stdout.splitlines()[2:6] == [
        "    participant Group",
        "    participant Server as down",
        "    Note over Group: connecting (opened)",
        "    Group->>Server: connect (attempt 1)",
    ]
    refused = "    Server--xGroup: TransportError: POST to MCP server failed: cannot connect to http://127.0.0.1:"
    assert down.stdout.splitlines()[6].startswith(refused)
    assert down.stdout.splitlines()[7:] == ["    Note over Group: failed (refused)"]
    nobody = mcpfsm("trace", str(trail), "--server", "off", cwd=tmp_path)
    assert (nobody.code, nobody.stderr) == (
        Exit.usage,
        f"mcpfsm: error: {trail}: no events of server 'off' (servers recorded: web, local, down)\n",
    )


def test_a_malformed_configuration_is_one_usage_error_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "mcp.json", {"mcpServers": {"gh": {"url": "https://a.test/mcp", "headers": {"K": "${NOPE_GROUP}"}}}}
    )
    run = mcpfsm("servers", cwd=tmp_path)
    assert (run.code, run.stderr) == (
        Exit.usage,
        "mcpfsm: error: configuration: mcp.json: server 'gh': mcpServers.gh.headers.K: environment variable"
        " NOPE_GROUP is not set\n",
    )
    assert path.exists()
    sse = write(tmp_path / "sse.json", {"mcpServers": {"old": {"type": "sse", "url": "https://a.test/sse"}}})
    old = mcpfsm("tools", "--config", str(sse), cwd=tmp_path)
    assert old.code == Exit.usage and "mcpServers.old.type: sse is the HTTP+SSE transport" in old.stderr


def test_demo_group_calls_one_tool_of_each_member() -> None:
    run = mcpfsm("demo", "--group", cwd=REPO_ROOT, timeout=180)
    assert run.code == Exit.ok, run.stderr
    lines = run.stdout.splitlines()
    assert "server web: connected, protocol 2026-07-28" in lines
    assert "server local: connected, protocol 2026-07-28" in lines
    assert "  result: executed 'select 1' on 'analytics'" in lines
    assert "  result: hello from stdio" in lines
    assert "  [web] [3] succeeded <- answered" in "\n".join(lines)
    assert any(line.startswith("  [local] [3] succeeded <- answered") for line in lines)
