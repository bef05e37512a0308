"""The ``mcpfsm`` command, run for real (``python -m mcpfsm``) against the real test server (official SDK)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpfsm._tooling.cli import Exit
from mcpfsm._tooling.cli.tools import render_tools
from mcpfsm._tooling.diagram import REGENERATE_COMMAND
from tests.support.clirun import Run, Screen, background, command, finished, mcpfsm, one_error_line
from tests.support.peer.fixtures import INPUT_TOOLS, REPO_ROOT, TOOLS, HttpPeer

STDIO_SERVER = f"{sys.executable} -m tests.support.peer.server --stdio"
SQL_ARGS = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}


@pytest.fixture
def peer(modern_peer: HttpPeer) -> HttpPeer:
    modern_peer.control({"action": "reset"})
    return modern_peer


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# --- help ----------------------------------------------------------------------------------------------


def test_help_documents_every_exit_code() -> None:
    run = mcpfsm("--help")
    assert (run.code, run.stderr) == (0, "")
    documented = [int(m.group(1)) for m in re.finditer(r"^  (\d+) +\S", run.stdout, re.MULTILINE)]
    assert documented == [int(code) for code in Exit]
    for name in ("demo", "tools", "call", "plan", "trace", "diagram"):
        assert re.search(rf"^    {name} +\S", run.stdout, re.MULTILINE), name


def test_console_script_is_installed() -> None:
    # The README installs with pip, which puts the console script next to the interpreter.
    script = Path(sys.executable).with_name("mcpfsm")
    assert script.exists(), f"{script} is missing: install with pip install -e '.[test]'"
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "mcpfsm 0.1.0\n", "")


# --- tools ---------------------------------------------------------------------------------------------

# The tools of mcpfsm/_tooling/demo_input.py, listed after the peer's own.
TOOLS_TABLE = """\
TOOL             PARAMETER         TYPE         REQUIRED  MIRRORED HEADER
execute-sql      query             string       yes       -
                 database          string       yes       Mcp-Param-Database
                 region            string|null  no        -
                 options           object       no        -
                 options.readOnly  boolean      no        Mcp-Param-Read-Only
echo             text              string       yes       -
slow             seconds           number       yes       -
fail             -
ask-name         stream            string       no        -
ask-model        stream            string       no        -
list-roots       stream            string       no        -
interview        stream            string       no        -
ask-url          stream            string       no        -
state-only       rounds            integer      yes       -
echo-state       state             string|null  no        -
elicit-defaults  -
excluded: none
"""


def test_tools_table(peer: HttpPeer) -> None:
    assert mcpfsm("tools", peer.url) == Run(0, TOOLS_TABLE, "")


def test_tools_json(peer: HttpPeer) -> None:
    # The listing as the server sent it (each tool with its inputSchema), and mcpfsm's mirrored headers beside it.
    run = mcpfsm("tools", peer.url, "--json")
    assert (run.code, run.stderr) == (0, "")
    listing = json.loads(run.stdout)
    assert [tool["name"] for tool in listing["tools"]] == ["execute-sql", "echo", "slow", "fail", *INPUT_TOOLS]
    assert all(isinstance(tool["inputSchema"], dict) for tool in listing["tools"])
    assert listing["tools"][1]["inputSchema"]["required"] == ["text"]
    assert listing["protocol"] == "2026-07-28"
    assert listing["excluded"] == []
    assert listing["mirrored"] == {
        "execute-sql": [
            {"path": ["database"], "pointer": "/database", "header": "Mcp-Param-Database"},
            {"path": ["options", "readOnly"], "pointer": "/options/readOnly", "header": "Mcp-Param-Read-Only"},
        ],
        **{name: [] for name in ["echo", "slow", "fail", *INPUT_TOOLS]},
    }


async def _no_call(tool: Any, arguments: Any) -> Any:
    raise AssertionError("no I/O expected")


def test_tools_table_lists_exclusions() -> None:
    from mcpfsm import Exclusion, Tool, ToolDefinition, ToolList
    from mcpfsm._client.catalog import Catalog
    from mcpfsm._core.schema import MirroredParam

    catalog = Catalog(None)  # type: ignore[arg-type]
    definition = ToolDefinition(
        name="q",
        description="",
        input_schema={"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]},
        mirrored=(MirroredParam(path=("region",), token="Region", type="string"),),
        raw={},
    )
    tools = ToolList(
        [Tool(definition, catalog, _no_call)],
        [Exclusion(name="bad", reason="x-mcp-header 'Bad Header' at /region is not a valid header-name token")],
    )
    assert render_tools(tools) + "\n" == (
        "TOOL  PARAMETER  TYPE    REQUIRED  MIRRORED HEADER\n"
        "q     region     string  yes       Mcp-Param-Region\n"
        "excluded:\n"
        "  bad: x-mcp-header 'Bad Header' at /region is not a valid header-name token\n"
    )


# --- call ----------------------------------------------------------------------------------------------


def _calls(peer: HttpPeer) -> list[dict[str, Any]]:
    return [entry for entry in peer.log() if entry["jsonrpc_method"] == "tools/call"]


def test_call_mirrors_the_annotated_arguments(peer: HttpPeer) -> None:
    run = mcpfsm("call", peer.url, "execute-sql", "--args", json.dumps(SQL_ARGS))
    assert (run.code, run.stderr) == (0, "")
    result = json.loads(run.stdout)
    assert (result["content"], result["isError"], result["structuredContent"]) == (
        [{"type": "text", "text": "executed 'select 1' on 'analytics'"}],
        False,
        SQL_ARGS,
    )
    assert [entry["jsonrpc_method"] for entry in peer.log()] == ["server/discover", "tools/list", "tools/call"]
    assert _calls(peer)[0]["headers"] == {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "execute-sql",
        "mcp-param-database": "analytics",
        "mcp-param-read-only": "true",
    }


def test_call_by_name_sends_no_param_headers(peer: HttpPeer) -> None:
    run = mcpfsm("call", peer.url, "echo", "--by-name", "--compact", "--args", '{"text": "hi"}')
    assert (run.code, run.stderr, run.stdout.count("\n")) == (0, "", 1)
    assert json.loads(run.stdout)["content"] == [{"type": "text", "text": "hi"}]
    assert [entry["jsonrpc_method"] for entry in peer.log()] == ["server/discover", "tools/call"]


def test_call_by_name_of_an_annotated_tool_recovers_through_a_relist(peer: HttpPeer) -> None:
    # By name nothing is mirrored; the SDK server wants Mcp-Param-* for execute-sql and answers -32020,
    # so the call relists, plans against the listed definition and retries once (SEP-2243).
    run = mcpfsm("call", peer.url, "execute-sql", "--by-name", "--args", json.dumps(SQL_ARGS))
    assert (run.code, run.stderr) == (0, "")
    assert json.loads(run.stdout)["structuredContent"] == SQL_ARGS
    log = peer.log()
    assert [(entry["jsonrpc_method"], entry["status"]) for entry in log] == [
        ("server/discover", 200),
        ("tools/call", 400),
        ("tools/list", 200),
        ("tools/call", 200),
    ]
    assert [sorted(name for name in entry["headers"] if name.startswith("mcp-param-")) for entry in _calls(peer)] == [
        [],
        ["mcp-param-database", "mcp-param-read-only"],
    ]


def test_custom_headers_cannot_override_protocol_headers(peer: HttpPeer) -> None:
    run = mcpfsm("call", peer.url, "echo", "--args", '{"text": "hi"}', "--header", "X-Tenant: acme",
                 "--header", "Mcp-Method: evil")
    assert (run.code, run.stderr) == (0, "")
    sent = [pair for pair in _calls(peer)[0]["header_list"] if pair[0] == "mcp-method"]
    assert sent == [["mcp-method", "tools/call"]]


def test_call_tool_error_prints_the_result_and_exits_1(peer: HttpPeer) -> None:
    run = mcpfsm("call", peer.url, "fail", "--compact")
    assert run.code == Exit.tool_error
    assert json.loads(run.stdout)["isError"] is True
    assert one_error_line(run) == "mcpfsm: error: tool 'fail' answered isError: true: Error executing tool fail: " \
        "deliberate failure"


def test_call_shows_progress(peer: HttpPeer) -> None:
    run = mcpfsm("call", peer.url, "slow", "--args", '{"seconds": 0.2}', "--compact")
    assert run.code == 0
    assert json.loads(run.stdout)["content"] == [{"type": "text", "text": "done"}]
    assert run.stderr == "".join(f"mcpfsm: progress {step}/4: step {step} of 4\n" for step in range(1, 5))


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_call_on_a_terminal_shows_a_spinner_between_progress_lines(peer: HttpPeer) -> None:
    controller, terminal = os.openpty()
    screen = Screen(controller)
    argv = command("call", peer.url, "slow", "--args", '{"seconds": 0.8}', "--compact")
    with background(argv, stdout=subprocess.PIPE, stderr=terminal, text=False) as process:
        os.close(terminal)
        code, out, _ = finished(process)
        stdout = out.decode()
    text = screen.text()
    # The live line shows a progress bar once a progress notification gave a total.
    spinner = re.compile(r"\r[|/\\-] slow \d+\.\ds(?: \[#*\.*\] [1-4]/4)?\x1b\[K")
    assert (code, json.loads(stdout)["content"]) == (0, [{"type": "text", "text": "done"}])
    assert spinner.search(text)
    bars = re.findall(r"\r[|/\\-] slow \d+\.\ds \[(#*)(\.*)\] ([1-4])/4\x1b\[K", text)
    assert bars and all((len(done), len(done + left)) == (5 * int(step), 20) for done, left, step in bars)
    assert spinner.sub("", text).replace("\r\x1b[K", "").splitlines() == [
        f"mcpfsm: progress {step}/4: step {step} of 4" for step in range(1, 5)
    ]


def test_call_events_to_stderr(peer: HttpPeer) -> None:
    run = mcpfsm("call", peer.url, "echo", "--args", '{"text": "hi"}', "--events", "-")
    assert run.code == 0
    assert json.loads(run.stdout)["content"] == [{"type": "text", "text": "hi"}]
    events = [json.loads(line) for line in run.stderr.splitlines()]
    assert [(e["seq"], e["state"], e["trigger"]) for e in events] == [
        (0, "resolving", None),
        (1, "planning", "resolved"),
        (2, "sending", "planned"),
        (3, "succeeded", "answered"),
    ]


def test_call_events_file_then_trace(peer: HttpPeer, tmp_path: Path) -> None:
    events_file = tmp_path / "events.jsonl"
    run = mcpfsm("call", peer.url, "execute-sql", "--args", json.dumps(SQL_ARGS), "--events", str(events_file))
    assert (run.code, run.stderr) == (0, "")
    records = [json.loads(line) for line in events_file.read_text().splitlines()]
    assert [r["state"] for r in records] == ["resolving", "planning", "sending", "succeeded"]
    call_id = records[0]["call_id"]

    diagram = tmp_path / "call.mmd"
    assert mcpfsm("trace", str(events_file), "-o", str(diagram)) == Run(0, "", "")
    assert diagram.read_text() == (
        "sequenceDiagram\n"
        f"    %% mcpfsm tool call {call_id} of execute-sql, drawn by `mcpfsm trace`\n"
        "    participant Client\n"
        "    participant Server\n"
        "    Note over Client: resolving\n"
        "    Note over Client: planning (resolved)\n"
        "    Note over Client: sending (planned)\n"
        "    Client->>Server: tools/call execute-sql (attempt 1)<br/>MCP-Protocol-Version: 2026-07-28<br/>"
        "Mcp-Method: tools/call<br/>Mcp-Name: execute-sql<br/>Mcp-Param-Database: analytics<br/>"
        "Mcp-Param-Read-Only: true\n"
        "    Server-->>Client: result\n"
        "    Note over Client: succeeded (answered)\n"
    )
    assert mcpfsm("trace", str(events_file), "--call", call_id) == Run(0, diagram.read_text(), "")


def test_unrecovered_mismatch_exits_8_and_traces_the_recovery(peer: HttpPeer, tmp_path: Path) -> None:
    peer.control({"action": "mismatch", "tool": "execute-sql", "count": 1})
    events_file = tmp_path / "events.jsonl"
    run = mcpfsm("call", peer.url, "execute-sql", "--args", json.dumps(SQL_ARGS), "--events", str(events_file))
    assert (run.code, run.stdout) == (Exit.rpc_error, "")
    assert one_error_line(run) == (
        "mcpfsm: error: the server answered JSON-RPC error -32020: "
        "Mcp-Param header mismatch injected by the test peer for 'execute-sql'"
    )
    trace = mcpfsm("trace", str(events_file))
    assert (trace.code, trace.stderr) == (0, "")
    injected = "Mcp-Param header mismatch injected by the test peer for 'execute-sql'"
    assert trace.stdout.splitlines()[-6:] == [
        f"    Server-->>Client: error -32020: {injected}",
        "    Note over Client: relisting (mismatched)",
        "    Client->>Server: tools/list",
        "    Server-->>Client: tools: 'execute-sql' listed",
        "    Note over Client: comparing (relisted)",
        f"    Note over Client: failed (unchanged)<br/>error -32020: {injected}",
    ]


# --- stdio ---------------------------------------------------------------------------------------------


STDIO_TOOLS_TABLE = """\
TOOL             PARAMETER  TYPE         REQUIRED  MIRRORED HEADER
execute-sql      query      string       yes       -
                 database   string       yes       -
                 region     string|null  no        -
                 options    object       no        -
echo             text       string       yes       -
slow             seconds    number       yes       -
fail             -
ask-name         stream     string       no        -
ask-model        stream     string       no        -
list-roots       stream     string       no        -
interview        stream     string       no        -
ask-url          stream     string       no        -
state-only       rounds     integer      yes       -
echo-state       state      string|null  no        -
elicit-defaults  -
(this connection does not mirror: x-mcp-header annotations are inert on stdio and legacy)
excluded: none
"""


def test_stdio_tools_keep_annotations_inert() -> None:
    # The same tools and parameters as over HTTP, but no header: nothing is mirrored on stdio.
    assert mcpfsm("tools", "--stdio", STDIO_SERVER) == Run(0, STDIO_TOOLS_TABLE, "")


def test_stdio_call_with_progress() -> None:
    run = mcpfsm("call", "--stdio", STDIO_SERVER, "slow", "--args", '{"seconds": 0.1}', "--compact")
    assert run.code == 0
    assert json.loads(run.stdout)["content"] == [{"type": "text", "text": "done"}]
    assert run.stderr.splitlines()[-4:] == [f"mcpfsm: progress {step}/4: step {step} of 4" for step in range(1, 5)]


# --- plan ----------------------------------------------------------------------------------------------

TOOL = {
    "name": "execute-sql",
    "inputSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "options": {"type": "object", "properties": {"readOnly": {"type": "boolean", "x-mcp-header": "Read-Only"}}},
        },
    },
}
PLAN_HEAD = "MCP-Protocol-Version: 2026-07-28\nMcp-Method: tools/call\nMcp-Name: execute-sql\n"


@pytest.mark.parametrize(
    ("region", "header"),
    [
        pytest.param("us-west1", "us-west1", id="plain"),
        pytest.param("us west 1", "us west 1", id="interior-space"),
        pytest.param("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?=", id="non-ascii"),
        pytest.param(" padded ", "=?base64?IHBhZGRlZCA=?=", id="padded"),
        pytest.param("line1\nline2", "=?base64?bGluZTEKbGluZTI=?=", id="newline"),
        pytest.param("\tindented", "=?base64?CWluZGVudGVk?=", id="tab"),
        pytest.param("", "=?base64??=", id="empty"),
        pytest.param("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", id="sentinel-lookalike"),
    ],
)
def test_plan_encodes_strings(tmp_path: Path, region: str, header: str) -> None:
    schema = tmp_path / "tool.json"
    schema.write_text(json.dumps(TOOL))
    run = mcpfsm("plan", "--schema", str(schema), "--args", json.dumps({"region": region}))
    assert run == Run(0, PLAN_HEAD + f"Mcp-Param-Region: {header}\n", "")


def test_plan_json_from_a_tools_list_result(tmp_path: Path) -> None:
    schema = tmp_path / "tools.json"
    schema.write_text(json.dumps({"tools": [{"name": "echo", "inputSchema": {}}, TOOL]}))
    args = {"limit": 42.0, "options": {"readOnly": False}, "region": None}
    run = mcpfsm("plan", "--schema", str(schema), "--tool", "execute-sql", "--args", json.dumps(args), "--json")
    assert (run.code, run.stderr) == (0, "")
    assert json.loads(run.stdout) == {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "execute-sql",
        "Mcp-Param-Limit": "42",
        "Mcp-Param-Read-Only": "false",
    }


def test_plan_of_a_bare_schema_from_stdin() -> None:
    run = mcpfsm("plan", "--schema", "-", "--tool", "q", "--args", '{"region": "eu"}',
                 stdin=json.dumps(TOOL["inputSchema"]))
    assert run == Run(0, "MCP-Protocol-Version: 2026-07-28\nMcp-Method: tools/call\nMcp-Name: q\n"
                         "Mcp-Param-Region: eu\n", "")


# --- demo ----------------------------------------------------------------------------------------------


def test_demo_runs_the_recovery() -> None:
    run = mcpfsm("demo")
    assert (run.code, run.stderr) == (0, "")
    lines = run.stdout.splitlines()
    second = lines.index(next(line for line in lines if line.startswith("3) call again")))
    states = [m.group(1) for line in lines[second:] if (m := re.match(r"^  \[\d+\] (\w+)", line))]
    assert states == ["resolving", "planning", "sending", "relisting", "comparing", "retrying", "succeeded"]
    assert any(re.match(r"^  \[3\] relisting <- mismatched  error -32020: ", line) for line in lines)
    assert "        Mcp-Param-Region: eu" in lines[second:]
    assert "        Mcp-Param-Database: analytics" in lines[:second]
    assert lines[-3:] == [
        "recovered in 3 requests: tools/call (HTTP 400) -> tools/list -> tools/call",
        "states: resolving -> planning -> sending -> relisting -> comparing -> retrying -> succeeded",
        "the retry carried what the fresh schema asks for: Mcp-Param-Region: eu",
    ]


def test_demo_without_the_sdk() -> None:
    code = "import sys; sys.modules['mcp'] = None; from mcpfsm._tooling.cli import main; sys.exit(main(['demo']))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    run = Run(done.returncode, done.stdout, done.stderr)
    assert (run.code, run.stdout) == (Exit.missing_component, "")
    assert one_error_line(run) == "mcpfsm: error: the demo needs the official MCP SDK: pip install 'mcpfsm[demo]'"


# --- diagram -------------------------------------------------------------------------------------------


def test_diagram_check_passes_on_the_repository() -> None:
    assert mcpfsm("diagram", "--check") == Run(0, "diagrams up to date\n", "")


def test_diagram_check_fails_on_drift_and_diagram_repairs_it(tmp_path: Path) -> None:
    for directory in ("specs", "diagrams"):
        shutil.copytree(REPO_ROOT / directory, tmp_path / directory)
    mmd = tmp_path / "specs" / "tool-call.mmd"
    original = mmd.read_text()
    mmd.write_text(original.replace("retrying", "retryin", 1))

    run = mcpfsm("diagram", "--check", "--root", str(tmp_path))
    assert (run.code, run.stdout) == (Exit.drift, "")
    assert one_error_line(run) == (
        f"mcpfsm: error: out of date: specs/tool-call.mmd; regenerate with: {REGENERATE_COMMAND}"
    )

    assert mcpfsm("diagram", "--root", str(tmp_path)) == Run(0, f"wrote {mmd}\n", "")
    assert mmd.read_text() == original


# --- errors: one line on stderr, one exit code each ----------------------------------------------------


def test_bad_url(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    run = mcpfsm("call", "ftp://example.com/mcp", "echo", "--events", str(events))
    assert (run.code, run.stdout) == (Exit.bad_url, "")
    assert one_error_line(run) == (
        "mcpfsm: error: invalid MCP server URL 'ftp://example.com/mcp': expected an absolute http:// or https:// URL"
    )
    assert not events.exists(), "a usage error must not leave an empty --events file behind"


def test_unreachable_server(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}/mcp"
    run = mcpfsm("tools", url)
    assert (run.code, run.stdout) == (Exit.unreachable, "")
    # The error names the URL once, with the OS cause (tests/tooling/test_cli_diagnostics.py has the wording).
    expected = f"mcpfsm: error: POST to MCP server failed: cannot connect to {url}: Connection refused"
    assert one_error_line(run) == expected


def test_stdio_server_that_does_not_start() -> None:
    run = mcpfsm("tools", "--stdio", "/nonexistent/mcp-server --flag")
    assert (run.code, run.stdout) == (Exit.unreachable, "")
    assert one_error_line(run).startswith(
        "mcpfsm: error: stdio server '/nonexistent/mcp-server --flag': "
        "cannot start MCP server '/nonexistent/mcp-server'"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--args", "{bad"],
            "--args is not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
            id="bad-json",
        ),
        pytest.param(["--args", "[1]"], "--args must be a JSON object, got a JSON array", id="not-an-object"),
        pytest.param(
            ["--header", "X-A: 1", "--header", "Authorization Bearer SECRET"],
            "--header number 2 has no ':' (expected 'Name: value')",
            id="header-no-colon",
        ),
        pytest.param(
            ["--header", "X Api: SECRET"],
            "--header 'X Api' is not a valid header name (expected 'Name: value')",
            id="header-name",
        ),
        pytest.param(
            ["--header", "X-Api-Key: SECRET\u00e9"],
            "--header X-Api-Key: the value cannot be sent in an HTTP header (visible ASCII with inner spaces or"
            " tabs only; the value is not shown)",
            id="header-value",
        ),
        pytest.param(["--bogus"], "unrecognized arguments: --bogus (see 'mcpfsm --help')", id="argparse"),
    ],
)
def test_usage_errors(peer: HttpPeer, args: list[str], message: str) -> None:
    run = mcpfsm("call", peer.url, "echo", *args)
    assert (run.code, run.stdout) == (Exit.usage, "")
    assert one_error_line(run) == f"mcpfsm: error: {message}"
    assert peer.log() == []


def test_unknown_tool(peer: HttpPeer) -> None:
    run = mcpfsm("call", peer.url, "nope")
    assert (run.code, run.stdout) == (Exit.unknown_tool, "")
    listed = ", ".join(TOOLS)
    assert one_error_line(run) == f"mcpfsm: error: unknown tool 'nope'; the server lists: {listed}"


def test_a_wrong_type_is_refused_by_the_input_schema_before_anything_is_sent(peer: HttpPeer) -> None:
    # The inputSchema is checked first (exit 2, the JSON path); the mirroring rules would refuse it too (exit 7).
    run = mcpfsm("call", peer.url, "execute-sql", "--args", '{"query": "q", "database": 42}')
    assert (run.code, run.stdout) == (Exit.usage, "")
    assert one_error_line(run) == (
        "mcpfsm: error: the arguments do not match the inputSchema of tool 'execute-sql', so nothing was sent:"
        f" /database: the value is not of type \"string\" (see 'mcpfsm tools {peer.url}')"
    )
    assert _calls(peer) == []


def test_plan_mirroring_error(tmp_path: Path) -> None:
    schema = tmp_path / "tool.json"
    schema.write_text(json.dumps(TOOL))
    run = mcpfsm("plan", "--schema", str(schema), "--args", '{"limit": "42"}')
    assert (run.code, run.stdout) == (Exit.invalid_schema, "")
    assert one_error_line(run) == (
        "mcpfsm: error: argument /limit cannot be mirrored into Mcp-Param-Limit (declared integer): "
        "expected an integer, got str '42'"
    )


@pytest.mark.parametrize(
    ("document", "args", "code", "message"),
    [
        pytest.param(
            {"type": "object", "properties": {"a": {"type": "number", "x-mcp-header": "A"}}},
            ["--tool", "t"],
            Exit.invalid_schema,
            "invalid inputSchema of tool 't': x-mcp-header 'A' at /a is on a property with type 'number'; "
            "only 'string', 'integer' or 'boolean' can be mirrored",
            id="invalid-annotation",
        ),
        pytest.param([], [], Exit.invalid_schema, "schema file 'SCHEMA' holds a JSON array, not an object",
                     id="not-an-object"),
        pytest.param({"type": "object"}, [], Exit.usage,
                     "a bare inputSchema names no tool: give --tool NAME (it goes into Mcp-Name)", id="no-name"),
        pytest.param({"tools": [TOOL]}, ["--tool", "x"], Exit.unknown_tool,
                     "no tool 'x' in 'SCHEMA' (tools: execute-sql)", id="unknown-tool"),
    ],
)
def test_plan_errors(tmp_path: Path, document: object, args: list[str], code: Exit, message: str) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(document))
    run = mcpfsm("plan", "--schema", str(schema), *args)
    assert (run.code, run.stdout) == (code, "")
    assert one_error_line(run) == "mcpfsm: error: " + message.replace("SCHEMA", str(schema))


def test_plan_schema_file_missing(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    run = mcpfsm("plan", "--schema", str(missing), "--tool", "t")
    assert (run.code, run.stdout) == (Exit.usage, "")
    assert one_error_line(run) == f"mcpfsm: error: cannot read schema file '{missing}': No such file or directory"


def test_trace_malformed_events_name_the_line(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text('{"call_id": "c"}\n')
    run = mcpfsm("trace", str(events))
    assert (run.code, run.stdout) == (Exit.usage, "")
    assert one_error_line(run) == (
        f"mcpfsm: error: {events}: line 1: not a CallEvent record (no 'seq', 'tool', 'state', 'attempt', 'at', "
        "'elapsed')"
    )


def test_an_exception_group_of_several_failures_is_reported_by_its_meaningful_leaf() -> None:
    from mcpfsm._tooling.cli.common import leaf

    interrupt = KeyboardInterrupt()
    nested = BaseExceptionGroup("", [ValueError("noise"), BaseExceptionGroup("", [interrupt])])
    assert leaf(nested) is interrupt
    noise = ExceptionGroup("", [ValueError("a"), OSError("b")])
    assert leaf(noise) is noise
