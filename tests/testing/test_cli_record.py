"""``mcpfsm call|tools --record PATH`` against real servers (HTTP and a stdio subprocess), and the same commands
against ``mcpfsm replay`` of what they recorded: the same output, with the server gone."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from mcpfsm._tooling.server_process import _started
from tests.support.clirun import mcpfsm as run_mcpfsm
from tests.support.clirun import one_error_line
from tests.support.peer.fixtures import REPO_ROOT, HttpPeer


def test_call_records_an_http_session_that_mcpfsm_replay_serves_back(peer: HttpPeer, tmp_path: Path) -> None:
    path = tmp_path / "call.jsonl"
    args = ["execute-sql", "query=select 1", "database=analytics", "--compact"]
    recorded = run_mcpfsm("call", peer.url, *args, "--record", str(path))
    assert recorded.code == 0, recorded.stderr
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert (lines[0]["server"], lines[0]["protocol"]) == (peer.url, "2026-07-28")
    assert [line["request"]["message"]["method"] for line in lines[1:]] == [
        "server/discover",
        "tools/list",
        "tools/call",
    ]
    with _started([sys.executable, "-m", "mcpfsm", "replay", str(path)], REPO_ROOT, 60) as (_, url):
        replayed = run_mcpfsm("call", url, *args)
    assert (replayed.code, replayed.stdout) == (0, recorded.stdout)


def test_tools_records_a_stdio_session_that_replays_on_stdio(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    server = shlex.join([sys.executable, "-m", "tests.support.peer.server", "--stdio"])
    recorded = run_mcpfsm("tools", "--stdio", server, "--protocol", "2025-11-25", "--record", str(path))
    assert recorded.code == 0, recorded.stderr
    header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert (header["server"], header["protocol"]) == (shlex.split(server), "2025-11-25")
    replay = shlex.join([sys.executable, "-m", "mcpfsm", "replay", str(path), "--stdio"])
    replayed = run_mcpfsm("tools", "--stdio", replay, "--protocol", "2025-11-25")
    assert (replayed.code, replayed.stdout) == (0, recorded.stdout)
    assert "execute-sql" in replayed.stdout


def test_record_needs_one_server(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"a": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}))
    done = run_mcpfsm("tools", "--config", str(config), "--record", str(tmp_path / "c.jsonl"))
    assert (done.code, one_error_line(done)) == (
        2,
        "mcpfsm: error: --record records one server: name it where the URL goes",
    )
    assert not (tmp_path / "c.jsonl").exists()
