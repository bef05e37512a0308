"""The replay served to any client: ``mcpfsm.testing.serve`` and ``mcpfsm replay`` (a process, waited for by its READY
line) answer the official SDK's client as the recorded server did, in both eras; the mirroring check refuses a
client that stops mirroring; ``--stdio`` keeps stdout for answers; a bad cassette is refused before anything is
served, naming its line."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import pytest
import trio

import mcpfsm
from mcpfsm._tooling.server_process import _started, run_peer
from mcpfsm.testing import CassetteError, replay, serve
from tests.support.clirun import mcpfsm as run_mcpfsm
from tests.support.clirun import one_error_line
from tests.support.peer.fixtures import REPO_ROOT
from tests.testing.agents import SDK_STDIO, SQL, stdio_options, text_of

ERAS: Final = {"modern": "auto", "legacy": "2025-11-25"}
REPLAY: Final = [sys.executable, "-m", "mcpfsm", "replay"]


async def mcpfsm_session(client: mcpfsm.Client) -> dict[str, Any]:
    tools = await client.tools()
    sql = tools.get("execute-sql")
    assert sql is not None
    return {
        "tools": tools.names[:4],
        "sql": (await sql.call(SQL)).structured_content,
        "echo": text_of(await client.call_tool("echo", {"text": "héllo\nworld"})),
    }


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[Path, dict[str, Any]]]]:
    """One cassette per era, recorded by mcpfsm from the official SDK's server, and what mcpfsm saw."""
    where = tmp_path_factory.mktemp("cassettes")
    cassettes: dict[str, tuple[Path, dict[str, Any]]] = {}

    async def record(url: str, era: str) -> None:
        path = where / f"{era}.jsonl"
        async with mcpfsm.Client.http(url, protocol=ERAS[era], record=path) as client:
            cassettes[era] = (path, await mcpfsm_session(client))

    with run_peer() as peer:
        for era in ERAS:
            trio.run(record, peer.url, era)
    yield cassettes


@pytest.mark.parametrize("era", ERAS)
async def test_the_official_sdk_client_passes_a_replay_of_a_session_mcpfsm_recorded(
    era: str, recorded: dict[str, tuple[Path, dict[str, Any]]]
) -> None:
    path, seen = recorded[era]
    with _started([*REPLAY, str(path)], REPO_ROOT, 60) as (process, url):
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        done = await trio.run_process(
            [sys.executable, "-m", "tests.testing.sdk_client", url],
            cwd=REPO_ROOT,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()
        assert json.loads(done.stdout) == seen
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


async def test_mcpfsm_replay_listens_on_the_port_asked_and_prints_ready_first(
    recorded: dict[str, tuple[Path, dict[str, Any]]],
) -> None:
    path, seen = recorded["modern"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with _started([*REPLAY, str(path), "--port", str(port)], REPO_ROOT, 60) as (_, url):
        assert url == f"http://127.0.0.1:{port}/mcp"
        async with mcpfsm.Client.http(url) as client:
            assert await mcpfsm_session(client) == seen


@pytest.mark.parametrize("era", ERAS)
async def test_serve_answers_mcpfsm_over_http_in_the_recorded_era(
    era: str, recorded: dict[str, tuple[Path, dict[str, Any]]]
) -> None:
    path, seen = recorded[era]
    async with serve(path) as url, mcpfsm.Client.http(url) as client:
        assert await mcpfsm_session(client) == seen
        assert client.protocol_version == ("2026-07-28" if era == "modern" else "2025-11-25")


async def test_a_client_that_stops_mirroring_fails_its_replay(recorded: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    path, _ = recorded["modern"]
    # A modern request as any client sends it: its _meta names the version and the capabilities.
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    params = {"name": "execute-sql", "arguments": SQL, "_meta": meta}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "execute-sql"}
    async with serve(path) as url, httpx.AsyncClient() as http:
        refused = await http.post(url, json=call, headers=headers)
        assert refused.status_code == 400
        assert refused.json() == {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {
                "code": -32020,
                "message": "Mcp-Param-Database does not match the recorded call of 'execute-sql':"
                " sent nothing, recorded 'analytics'",
            },
        }
        wrong = {**headers, "Mcp-Param-Database": "prod", "Mcp-Param-Read-Only": "true"}
        assert (await http.post(url, json=call, headers=wrong)).json()["error"]["message"].startswith(
            "Mcp-Param-Database does not match the recorded call of 'execute-sql': sent 'prod'"
        )
        right = {**headers, "Mcp-Param-Database": "analytics", "Mcp-Param-Read-Only": "true"}
        answered = await http.post(url, json=call, headers=right)
        assert (answered.status_code, answered.json()["result"]["structuredContent"]) == (200, SQL)
        assert (await http.get(url)).status_code == 405
        assert (await http.post(url.replace("/mcp", "/other"), json=call)).status_code == 404
        assert (await http.post(url, content=b"{not json", headers=headers)).json()["error"]["code"] == -32700


async def test_strict_mode_over_http_wants_the_recorded_order(
    recorded: dict[str, tuple[Path, dict[str, Any]]],
) -> None:
    path, _ = recorded["modern"]
    async with serve(path, mode="strict") as url, mcpfsm.Client.http(url) as client:
        with pytest.raises(mcpfsm.RpcError, match=r"no recorded exchange for tools/call 'echo' in strict order"):
            await client.call_tool("echo", {"text": "héllo\nworld"})
        sql = (await client.tools()).get("execute-sql")
        assert sql is not None
        assert (await sql.call(SQL)).structured_content == SQL
        assert text_of(await client.call_tool("echo", {"text": "héllo\nworld"})) == "héllo\nworld"


async def test_a_stdio_cassette_is_served_on_stdio_with_nothing_on_stdout_before_the_first_answer(
    tmp_path: Path,
) -> None:
    path = tmp_path / "stdio.jsonl"
    with trio.fail_after(120):
        async with mcpfsm.Client.stdio(SDK_STDIO, record=path, **stdio_options()) as client:
            recorded = await mcpfsm_session(client)
    argv = [*REPLAY, str(path), "--stdio"]
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with subprocess.Popen(argv, cwd=REPO_ROOT, **pipes) as process:  # type: ignore[call-overload]
        assert process.stderr.readline().decode() == f"READY stdio {path}\n"
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        process.stdin.write(json.dumps(ping).encode() + b"\n")
        process.stdin.flush()
        # The first bytes on stdout are the first answer: nothing before it.
        assert json.loads(process.stdout.readline()) == {"jsonrpc": "2.0", "id": 1, "result": {}}
        process.stdin.close()
        assert process.wait(timeout=30) == 0
        assert process.stdout.read() == b""
    async with mcpfsm.Client.stdio([*REPLAY, str(path), "--stdio"], cwd=str(REPO_ROOT)) as client:
        assert await mcpfsm_session(client) == recorded


def write(path: Path, *lines: Any) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


HEADER: Final = {"mcpfsm_cassette": 1, "recorded_at": "t", "server": "http://127.0.0.1:1/mcp", "protocol": "2026-07-28"}


async def test_a_bad_cassette_is_refused_before_anything_is_served(tmp_path: Path) -> None:
    broken = write(tmp_path / "broken.jsonl", HEADER, "{not json")
    with pytest.raises(CassetteError, match=r"broken\.jsonl: line 2: not JSON") as caught:
        async with serve(broken):
            pass
    assert caught.value.line == 2
    with pytest.raises(CassetteError, match=r"line 1: cassette version 9 is not one this mcpfsm reads"):
        replay(write(tmp_path / "future.jsonl", {**HEADER, "mcpfsm_cassette": 9}))
    with pytest.raises(CassetteError, match=r"missing\.jsonl: cannot be read: No such file or directory$"):
        replay(tmp_path / "missing.jsonl")
    stdio = write(tmp_path / "stdio.jsonl", {**HEADER, "server": ["python", "server.py"]})
    with pytest.raises(CassetteError, match=r"stdio\.jsonl: recorded over stdio, so it cannot be served over http"):
        async with serve(stdio):
            pass


def test_mcpfsm_replay_refuses_a_bad_cassette_or_fault_with_one_error_line(tmp_path: Path) -> None:
    broken = write(tmp_path / "broken.jsonl", HEADER, {"seq": 1})
    done = run_mcpfsm("replay", str(broken))
    assert done.code == 2
    assert one_error_line(done) == (
        f"mcpfsm: error: {broken}: line 2: an exchange needs request.message (an object)"
    )
    good = write(tmp_path / "good.jsonl", HEADER)
    done = run_mcpfsm("replay", str(good), "--stdio")
    assert (done.code, one_error_line(done)) == (
        2, f"mcpfsm: error: {good}: recorded over HTTP, so it cannot be served over stdio"
    )
    done = run_mcpfsm("replay", str(good), "--fault", "explode:tools/call")
    assert done.code == 2 and one_error_line(done).startswith("mcpfsm: error: --fault 'explode:tools/call': expected")
    done = run_mcpfsm("replay", str(good), "--fault", "delay:tools/call:soon")
    assert done.code == 2 and "could not convert string to float" in one_error_line(done)
    assert run_mcpfsm("replay", str(good), "--port", "1", "--stdio").code == 2


async def test_an_in_process_replay_opens_no_connection(
    recorded: dict[str, tuple[Path, dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, seen = recorded["modern"]

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the replay opened a connection")

    monkeypatch.setattr(socket.socket, "connect", refused)
    monkeypatch.setattr(socket.socket, "connect_ex", refused)
    monkeypatch.setattr(trio.socket.SocketType, "connect", refused)
    async with mcpfsm.Client(replay(path)) as client:
        assert await mcpfsm_session(client) == seen
