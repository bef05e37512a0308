"""Discover, then call, and the diagnostics around it: the installed ``mcpfsm`` command, run as a subprocess.

Against the real test server (the official SDK) where it has what a test needs, and against a raw socket server
(``tests.support.rawserver``) where a test must script the server: a tool with integer and boolean parameters, a server
without a capability, a modern server that does not declare ``logging``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
import trio

from tests.support.peer.fixtures import HttpPeer
from tests.support.rawserver import Server, rpc, rpc_error, serving

MCPFSM: Final = Path(sys.executable).with_name("mcpfsm")
"""The console script pip installed next to the interpreter."""

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"


@dataclass(frozen=True, slots=True)
class Run:
    code: int
    stdout: str
    stderr: str


def mcpfsm(*args: str, stdin: str | None = None, cwd: Path | None = None) -> Run:
    done = subprocess.run(
        [str(MCPFSM), *args], input=stdin, capture_output=True, text=True, timeout=60, check=False, cwd=cwd
    )
    return Run(done.returncode, done.stdout, done.stderr)


async def amcpfsm(*args: str) -> Run:
    # For tests whose server runs in this trio run (tests.support.rawserver).
    done = await trio.run_process([str(MCPFSM), *args], capture_stdout=True, capture_stderr=True, check=False)
    return Run(done.returncode, done.stdout.decode(), done.stderr.decode())


def error_line(run: Run) -> str:
    assert "Traceback" not in run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    return lines[0]


def tool_calls(peer: HttpPeer) -> list[dict[str, Any]]:
    return [entry for entry in peer.log() if entry["jsonrpc_method"] == "tools/call"]


# --- discover ----------------------------------------------------------------------------------------------


def test_tools_shows_each_parameter_with_its_type_whether_required_and_its_header(peer: HttpPeer) -> None:
    run = mcpfsm("tools", peer.url)
    assert (run.code, run.stderr) == (0, "")
    rows = [line.split() for line in run.stdout.splitlines()]
    assert rows[0] == ["TOOL", "PARAMETER", "TYPE", "REQUIRED", "MIRRORED", "HEADER"]
    assert rows[1:6] == [
        ["execute-sql", "query", "string", "yes", "-"],
        ["database", "string", "yes", "Mcp-Param-Database"],
        ["region", "string|null", "no", "-"],
        ["options", "object", "no", "-"],
        ["options.readOnly", "boolean", "no", "Mcp-Param-Read-Only"],
    ]


def test_the_raw_listing_of_tools_json_is_what_plan_reads(peer: HttpPeer, tmp_path: Path) -> None:
    listed = mcpfsm("tools", peer.url, "--json")
    assert (listed.code, listed.stderr) == (0, "")
    listing = json.loads(listed.stdout)
    sql = next(tool for tool in listing["tools"] if tool["name"] == "execute-sql")
    assert sql["inputSchema"]["properties"]["database"]["x-mcp-header"] == "Database"  # as the server sent it
    (tmp_path / "tools.json").write_text(listed.stdout, encoding="utf-8")
    planned = mcpfsm(
        "plan", "--schema", "tools.json", "--tool", "execute-sql", "--args", '{"database": "analytics"}', cwd=tmp_path
    )
    assert planned == Run(
        0,
        f"MCP-Protocol-Version: {MODERN}\nMcp-Method: tools/call\nMcp-Name: execute-sql\n"
        "Mcp-Param-Database: analytics\n",
        "",
    )


def test_plan_refuses_a_listed_tool_without_an_input_schema(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps({"tools": [{"name": "bare", "description": "no schema"}]}))
    run = mcpfsm("plan", "--schema", "tools.json", "--tool", "bare", cwd=tmp_path)
    assert (run.code, run.stdout) == (7, "")
    assert error_line(run) == (
        "mcpfsm: error: tool 'bare' in 'tools.json' has no inputSchema, so its headers cannot be planned"
        " ('mcpfsm tools URL --json' prints the listing with each tool's inputSchema)"
    )


# --- call: where the arguments come from -----------------------------------------------------------------


def test_call_takes_the_arguments_from_args_a_file_stdin_and_pairs(peer: HttpPeer, tmp_path: Path) -> None:
    (tmp_path / "args.json").write_text('{"query": "from a file", "database": "d"}', encoding="utf-8")
    runs = [
        mcpfsm("call", peer.url, "execute-sql", "--args", '{"query": "as JSON", "database": "d"}', "--compact"),
        mcpfsm("call", peer.url, "execute-sql", "--args", "@args.json", "--compact", cwd=tmp_path),
        mcpfsm(
            "call", peer.url, "execute-sql", "--args", "-", "--compact", stdin='{"query": "stdin", "database": "d"}'
        ),
        mcpfsm("call", peer.url, "execute-sql", "query=pairs", "database=d", 'options:={"readOnly": true}'),
        # Pairs after an option, and pairs set on the --args object (they win).
        mcpfsm("call", peer.url, "execute-sql", "--args", '{"query": "x", "database": "d"}', "query=both"),
    ]
    assert [(run.code, run.stderr) for run in runs] == [(0, "")] * 5
    assert [json.loads(run.stdout)["structuredContent"]["query"] for run in runs] == [
        "as JSON",
        "from a file",
        "stdin",
        "pairs",
        "both",
    ]
    assert json.loads(runs[3].stdout)["structuredContent"]["options"] == {"readOnly": True}
    assert tool_calls(peer)[3]["headers"]["mcp-param-read-only"] == "true"


_TYPED_TOOL: Final = {
    "name": "typed",
    "inputSchema": {
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "name": {"type": "string"},
            "note": {"type": ["string", "null"]},
            "obj": {"type": "object"},
        },
        "required": ["count"],
    },
}


def _typed_server(*after_listing: Any) -> Server:
    server = Server()
    server.queue(
        rpc({"supportedVersions": [MODERN], "capabilities": {"tools": {}}}),
        rpc({"tools": [_TYPED_TOOL]}),
        *after_listing,
    )
    return server


async def test_pairs_are_typed_by_the_input_schema() -> None:
    server = _typed_server(rpc({"content": [{"type": "text", "text": "ok"}]}))
    async with serving(server):
        url = f"http://127.0.0.1:{server.port}/mcp"
        run = await amcpfsm(
            "call", url, "typed", "count=3", "ratio=0.5", "flag=true", "name=007", "note=null", 'obj:={"a": 1}'
        )
    assert (run.code, run.stderr) == (0, "")
    sent = json.loads(server.seen[-1].body)
    assert sent["params"]["arguments"] == {
        "count": 3,
        "ratio": 0.5,
        "flag": True,
        "name": "007",  # a string where the schema says string, digits or not
        "note": "null",  # string comes first in ["string", "null"]
        "obj": {"a": 1},
    }


async def test_a_pair_of_the_wrong_type_is_refused_before_anything_is_sent() -> None:
    server = _typed_server(
        # The second run's discovery and listing.
        rpc({"supportedVersions": [MODERN], "capabilities": {"tools": {}}}),
        rpc({"tools": [_TYPED_TOOL]}),
    )
    async with serving(server):
        url = f"http://127.0.0.1:{server.port}/mcp"
        wrong = await amcpfsm("call", url, "typed", "count=three")
        unset = await amcpfsm("call", url, "typed", "obj=x", "count=1")
    assert (wrong.code, wrong.stdout) == (2, "")
    assert error_line(wrong) == "mcpfsm: error: argument count is declared integer; the value given is not one"
    assert error_line(unset) == "mcpfsm: error: argument obj is declared object: give it as JSON with obj:='...'"
    methods = [json.loads(seen.body)["method"] for seen in server.seen]
    assert "tools/call" not in methods


def test_a_missing_required_argument_is_exit_2_with_its_path_and_nothing_is_sent(peer: HttpPeer) -> None:
    run = mcpfsm("call", peer.url, "execute-sql", "database=analytics")
    assert (run.code, run.stdout) == (2, "")
    assert error_line(run) == (
        "mcpfsm: error: the arguments do not match the inputSchema of tool 'execute-sql', so nothing was sent:"
        f" /: \"query\" is a required property (see 'mcpfsm tools {peer.url}')"
    )
    assert tool_calls(peer) == []


def test_a_wrong_nested_type_names_its_json_path_not_its_value(peer: HttpPeer) -> None:
    run = mcpfsm("call", peer.url, "execute-sql", "query=q", "database=d", 'options:={"readOnly": "s3cret"}')
    assert run.code == 2
    assert '/options/readOnly: the value is not of type "boolean"' in error_line(run)
    assert "s3cret" not in run.stderr
    assert tool_calls(peer) == []


@pytest.mark.parametrize(
    ("words", "message"),
    [
        ([], 'give the server URL and the tool to call: mcpfsm call URL TOOL [KEY=VALUE ...] (or --stdio "CMD" TOOL)'),
        (
            ["http://127.0.0.1:9/mcp"],
            "give the tool to call after the server: mcpfsm call URL TOOL [KEY=VALUE ...]"
            " ('mcpfsm tools URL' lists them)",
        ),
        (["echo"], "give the server URL before the tool 'echo': mcpfsm call URL TOOL [KEY=VALUE ...]"),
        (
            ["http://127.0.0.1:9/mcp", "text=hi"],
            "'text=hi' is an argument, not a tool: give the tool first: mcpfsm call URL TOOL [KEY=VALUE ...]",
        ),
        (["--stdio", "server", "http://127.0.0.1:9/mcp", "echo"], "give either URL or --stdio, not both"),
        (
            ["--stdio", "server"],
            "give the tool to call after the server: mcpfsm call URL TOOL [KEY=VALUE ...]"
            " ('mcpfsm tools --stdio \"CMD\"' lists them)",
        ),
        (["http://127.0.0.1:9/mcp", "echo", "text"], "argument 'text' is not KEY=VALUE or KEY:=JSON"),
    ],
)
def test_misplaced_positional_arguments_say_what_is_missing(words: list[str], message: str) -> None:
    run = mcpfsm("call", *words)
    assert (run.code, run.stdout) == (2, "")
    assert error_line(run) == f"mcpfsm: error: {message}"
    assert "give the server URL, or" not in run.stderr


# --- diagnostics ---------------------------------------------------------------------------------------------


async def test_method_not_found_names_the_method_and_the_capability_not_declared() -> None:
    server = Server()
    server.queue(
        rpc({"supportedVersions": [MODERN], "capabilities": {"tools": {}}}),
        rpc_error(-32601, "Method not found"),
    )
    async with serving(server):
        url = f"http://127.0.0.1:{server.port}/mcp"
        run = await amcpfsm("prompts", url)
    assert (run.code, run.stdout) == (8, "")
    assert error_line(run) == (
        f"mcpfsm: error: {url}: the server does not implement prompts/list (JSON-RPC -32601 Method not found):"
        " it does not declare the 'prompts' capability (it declares: tools)"
    )


async def test_method_not_found_of_a_declared_capability_says_so() -> None:
    server = Server()
    server.queue(
        rpc({"supportedVersions": [MODERN], "capabilities": {"tools": {}, "prompts": {}}}),
        rpc_error(-32601, "Method not found"),
    )
    async with serving(server):
        run = await amcpfsm("prompts", f"http://127.0.0.1:{server.port}/mcp")
    assert error_line(run).endswith(
        "the server does not implement prompts/list (JSON-RPC -32601 Method not found),"
        " although it declares the 'prompts' capability"
    )


def test_v_logs_request_and_reply_heads_and_vv_the_bodies(peer: HttpPeer) -> None:
    quiet = mcpfsm("call", peer.url, "echo", "text=hi", "--compact")
    heads = mcpfsm("call", peer.url, "echo", "text=hi", "--compact", "-v")
    bodies = mcpfsm("call", peer.url, "echo", "text=hi", "--compact", "-vv")
    assert [run.code for run in (quiet, heads, bodies)] == [0, 0, 0]
    assert quiet.stderr == ""
    lines = heads.stderr.splitlines()
    assert (
        f"mcpfsm: debug: > request #1 server/discover (MCP-Protocol-Version: {MODERN}, Mcp-Method: server/discover)"
        in lines
    )
    assert (
        f"mcpfsm: debug: > request #3 tools/call (MCP-Protocol-Version: {MODERN}, Mcp-Method: tools/call,"
        " Mcp-Name: echo)"
    ) in lines
    assert any(line.startswith("mcpfsm: debug: < reply to #3 tools/call: HTTP 200 (") for line in lines)
    assert not any("body:" in line for line in lines)
    body_lines = [line for line in bodies.stderr.splitlines() if line.startswith("mcpfsm: debug: > body: ")]
    sent = [json.loads(line.removeprefix("mcpfsm: debug: > body: ")) for line in body_lines]
    assert sent[-1]["params"]["arguments"] == {"text": "hi"}
    assert any(line.startswith("mcpfsm: debug: < body: {") for line in bodies.stderr.splitlines())


def test_v_logs_the_heads_of_a_server_named_in_a_configuration_too(peer: HttpPeer, tmp_path: Path) -> None:
    # The command puts its wire between the session and the transport of every client it makes: one named in
    # a configuration file is made by the group's member_client, with the same wrap.
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"web": {"url": peer.url, "headers": {"X-Api-Key": "sekrit-conf"}}}}))
    run = mcpfsm("call", "--config", str(path), "web", "echo", "text=hi", "--compact", "-vv")
    assert run.code == 0, run.stderr
    lines = run.stderr.splitlines()
    assert any(line.startswith("mcpfsm: debug: > request #") and "tools/call" in line for line in lines)
    assert any(line.startswith("mcpfsm: debug: < reply to #") for line in lines)
    assert "sekrit-conf" not in run.stderr


async def test_method_not_found_of_a_server_named_in_a_configuration_names_the_capability(tmp_path: Path) -> None:
    server = Server()
    server.queue(
        rpc({"supportedVersions": [MODERN], "capabilities": {"tools": {}}}),
        rpc_error(-32601, "Method not found"),
    )
    path = tmp_path / "mcp.json"
    async with serving(server):
        path.write_text(json.dumps({"mcpServers": {"raw": {"url": f"http://127.0.0.1:{server.port}/mcp"}}}))
        run = await amcpfsm("prompts", "--config", str(path), "raw")
    assert (run.code, run.stdout) == (8, "")
    assert error_line(run) == (
        "mcpfsm: error: server 'raw': the server does not implement prompts/list (JSON-RPC -32601 Method not found):"
        " it does not declare the 'prompts' capability (it declares: tools)"
    )


def test_vv_redacts_the_session_id_and_the_credentials_given(peer: HttpPeer) -> None:
    run = mcpfsm(
        "call",
        peer.url,
        "echo",
        "text=hi",
        "--protocol",
        LEGACY,
        "--header",
        "X-Api-Key: sekrit-header-value",
        "--token",
        "sekrit-token-value",
        "-vv",
    )
    assert run.code == 0, run.stderr
    assert "Mcp-Session-Id: [redacted]" in run.stderr
    session_ids = {entry["headers"].get("mcp-session-id") for entry in peer.log()} - {None}
    assert session_ids
    for secret in [*session_ids, "sekrit-header-value", "sekrit-token-value"]:
        assert secret not in run.stderr


def test_log_level_asks_a_legacy_server_with_logging_set_level(peer: HttpPeer) -> None:
    asked = mcpfsm("call", peer.url, "slow", "seconds=0.01", "--protocol", LEGACY, "--log-level", "info")
    assert asked.code == 0, asked.stderr
    assert "mcpfsm: server log (info): slow: sleeping 0.01 s" in asked.stderr.splitlines()
    assert "logging/setLevel" in [entry["jsonrpc_method"] for entry in peer.log()]
    peer.control({"action": "reset"})
    unasked = mcpfsm("call", peer.url, "slow", "seconds=0.01", "--protocol", LEGACY)
    assert unasked.code == 0
    assert "logging/setLevel" not in [entry["jsonrpc_method"] for entry in peer.log()]


def test_log_level_asks_a_modern_server_that_declares_logging(peer: HttpPeer) -> None:
    run = mcpfsm("call", peer.url, "slow", "seconds=0.01", "--log-level", "info")
    assert run.code == 0, run.stderr
    assert "mcpfsm: server log (info): slow: sleeping 0.01 s" in run.stderr.splitlines()


async def test_log_level_does_not_ask_a_modern_server_that_no_longer_declares_logging() -> None:
    server = _typed_server(rpc({"content": [{"type": "text", "text": "ok"}]}))
    async with serving(server):
        run = await amcpfsm("call", f"http://127.0.0.1:{server.port}/mcp", "typed", "count=1", "--log-level", "debug")
    assert run.code == 0, run.stderr
    metas = [json.loads(seen.body)["params"].get("_meta", {}) for seen in server.seen]
    assert "io.modelcontextprotocol/logLevel" in metas[0]  # server/discover: not known yet
    assert ["io.modelcontextprotocol/logLevel" in meta for meta in metas[1:]] == [False, False]


def test_call_help_says_which_logs_are_asked_for_and_printed() -> None:
    run = mcpfsm("call", "--help")
    assert run.code == 0
    text = " ".join(run.stdout.split())
    assert "The server is asked for log messages only with --log-level LEVEL" in text
    assert "a 2026-07-28 server is asked on each request only when it still declares logging (SEP-2577" in text
    assert "otherwise nothing is asked and none are printed" in text
