"""The README's example and commands are real: the Python block runs against the real server, and
CI runs exactly the README's test command."""

from __future__ import annotations

import argparse
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Final

from mcpfsm._tooling.peer_process import run_authserver
from tests.peer.fixtures import start_http_peer

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def python_blocks() -> list[str]:
    """The README's Python blocks: the first example, the input handlers, the rest of the surface, telemetry,
    then authorization interactive and headless."""
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
    assert len(blocks) == 6
    return blocks


def bash_lines() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", README, flags=re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line and not line.startswith("#")]


def test_the_readme_surface_example_runs_against_the_real_server(tmp_path: Path) -> None:
    example = python_blocks()[2]
    script = tmp_path / "surface.py"
    script.write_text(example, encoding="utf-8")
    with start_http_peer(mode="dual") as peer:
        done = subprocess.run(
            [sys.executable, str(script), peer.url], capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "resources: ['res://static/readme', 'res://static/logo'] ['res://items/{item_id}', 'res://ask/{key}']",
        "read: hello from a static resource",
        "prompt: Say hello to Ada in a plain style.",
        "completions: ('fancy', 'formal')",
        "listening: {'toolsListChanged': True, 'resourceSubscriptions': ['res://static/readme']}",
    ]


def test_the_readme_example_runs_against_the_real_server(tmp_path: Path) -> None:
    example = python_blocks()[0]
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    with start_http_peer(mode="modern") as peer:
        done = subprocess.run(
            [sys.executable, str(script), peer.url], capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
        log = peer.log()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "protocol: 2026-07-28"
    assert lines.pop(1) == "instructions: Use execute-sql for queries; echo repeats text."
    assert lines[1] == "mirrored: {('database',): 'Mcp-Param-Database', ('options', 'readOnly'): 'Mcp-Param-Read-Only'}"
    assert lines[2] == "result: executed 'select 1' on 'analytics' is_error: False"
    assert [line.split(" ", 3)[:3] for line in lines[3:7]] == [
        ["0", "resolving", "None"],
        ["1", "planning", "resolved"],
        ["2", "sending", "planned"],
        ["3", "succeeded", "answered"],
    ]
    assert lines[7] == "echo: hi"
    assert lines[8] == (
        "refused before sending: argument /database cannot be mirrored into Mcp-Param-Database"
        " (declared string): expected a string, got int 42"
    )
    calls = [entry for entry in log if entry["jsonrpc_method"] == "tools/call"]
    # The refused call never reached the server; the custom header went out, mcp-* names stayed protocol-owned.
    assert [entry["name"] for entry in calls] == ["execute-sql", "echo"]
    assert calls[0]["headers"]["mcp-param-database"] == "analytics"
    assert calls[0]["headers"]["mcp-param-read-only"] == "true"
    assert not any(name.startswith("mcp-param") for name in calls[1]["headers"])


def test_the_readme_handler_example_answers_two_input_rounds(tmp_path: Path) -> None:
    example = python_blocks()[1]
    script = tmp_path / "handlers.py"
    script.write_text(example, encoding="utf-8")
    with start_http_peer(mode="modern") as peer:
        done = subprocess.run(
            [sys.executable, str(script), peer.url], capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # One round's two questions are answered concurrently, so they print in either order.
    assert sorted(lines[:2]) == ["server asks: First name?", "server asks: Last name?"]
    shown = re.search(r"It prints .*?\n```\n(.*?)```", README, flags=re.DOTALL)
    assert shown is not None
    assert lines[2:] == shown[1].splitlines()


def test_the_readme_telemetry_example_prints_its_spans_and_its_audit_log_draws_the_call(tmp_path: Path) -> None:
    example = python_blocks()[3]
    (tmp_path / "telemetry.py").write_text(example, encoding="utf-8")
    with start_http_peer(mode="modern") as peer:
        done = subprocess.run(
            [sys.executable, "telemetry.py", peer.url], capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
        log = peer.log()
    assert (done.returncode, done.stderr) == (0, "")
    shown = re.search(r"draws the call:\n\n```\n(.*?)```", README, flags=re.DOTALL)
    assert shown is not None
    assert done.stdout.splitlines() == shown[1].splitlines()
    # The server received each request's trace context.
    assert [(entry["jsonrpc_method"], sorted(entry["trace"] or {})) for entry in log] == [
        ("server/discover", ["traceparent"]),
        ("tools/list", ["traceparent"]),
        ("tools/call", ["traceparent"]),
    ]
    drawn = subprocess.run(
        [sys.executable, "-m", "mcpfsm", "trace", "audit.jsonl"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert (drawn.returncode, drawn.stderr) == (0, "")
    notes = [line.strip() for line in drawn.stdout.splitlines() if "Note over" in line]
    assert notes == [
        "Note over Client: resolving",
        "Note over Client: planning (resolved)",
        "Note over Client: sending (planned)",
        "Note over Client: succeeded (answered)",
    ]


def test_the_readme_interactive_login_runs_with_a_browser(tmp_path: Path) -> None:
    # The "browser" is a command that follows the login's redirects to the client's loopback listener.
    example = python_blocks()[4]
    (tmp_path / "login.py").write_text(example, encoding="utf-8")
    browser = tmp_path / "browser.py"
    browser.write_text("import sys, httpx\nhttpx.get(sys.argv[1], follow_redirects=True, timeout=30)\n")
    env = {**os.environ, "BROWSER": f"{sys.executable} {browser} %s"}
    runs = []
    with run_authserver({"challenge_scope": "mcp:basic"}) as server:
        for _ in range(2):
            done = subprocess.run(
                [sys.executable, "login.py", server.mcp_url],
                capture_output=True,
                text=True,
                timeout=60,
                cwd=tmp_path,
                env=env,
            )
            assert done.returncode == 0, done.stderr
            runs.append(done)
        paths = [entry["path"] for entry in server.log()]
    issuer = server.base_url
    assert runs[0].stdout.splitlines() == [
        "auth: starting None None ",
        "auth: discovering_resource unauthorized None ",
        "auth: discovering_issuer resource_found None mcp:basic",
        f"auth: registering issuer_found {issuer} mcp:basic",
        f"auth: authorizing identified {issuer} mcp:basic",
        f"auth: exchanging redirected {issuer} mcp:basic",
        f"auth: authorized granted {issuer} mcp:basic",
        "tools: ['test-tool']",
    ]
    assert runs[0].stderr.startswith(
        "mcpfsm: log in to authorize access (waiting up to 300 s for http://127.0.0.1:27418/callback):\n"
    )
    assert (runs[1].stdout, runs[1].stderr) == ("tools: ['test-tool']\n", "")  # the stored token: no login
    assert paths.count("/authorize") == 1
    assert stat.S_IMODE((tmp_path / "tokens.json").stat().st_mode) == 0o600


def test_the_readme_headless_agent_runs(tmp_path: Path) -> None:
    *_, example = python_blocks()
    (tmp_path / "agent.py").write_text(example, encoding="utf-8")
    scenario = {"client_credentials": {"client_id": "agent", "client_secret": "agent-secret"}}
    with run_authserver(scenario) as server:
        done = subprocess.run(
            [sys.executable, "agent.py", server.mcp_url, server.base_url],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
        grants = [entry["form"]["grant_type"] for entry in server.log() if entry["path"] == "/token"]
    assert (done.returncode, done.stdout, done.stderr) == (0, "test-tool called\n", "")
    assert grants == ["client_credentials"]


def test_ci_runs_the_readme_test_command() -> None:
    test_commands = [line for line in bash_lines() if "-m pytest" in line and "graphviz" in line]
    assert len(test_commands) == 1
    ci_script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_commands[0] in ci_script.splitlines()


def test_the_readme_install_command_runs_the_demo() -> None:
    first = bash_lines()[0]
    assert first == "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/mcpfsm demo"


def _options(command: str) -> set[str]:
    from mcpfsm._tooling.cli import build_parser

    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {option for action in subparsers.choices[command]._actions for option in action.option_strings}


def test_the_readme_names_every_network_command_and_the_options_they_share() -> None:
    from mcpfsm._tooling.cli import COMMANDS

    shared = {"--header", "--protocol", "--timeout", "--cacert", "--cert"}
    sentence = re.search(r"Every network command \(([^)]*)\) also takes", README)
    assert sentence is not None
    named = re.findall(r"`([a-z]+)`", sentence[1])
    network = [c.NAME for c in COMMANDS if {"--auth", "--stdio", *shared} <= _options(c.NAME)]
    assert named == network
    assert "PEM file), as does `login`;" in " ".join(README.split())
    assert shared <= _options("login") and "--stdio" not in _options("login")
    assert all("--token" in _options(name) for name in network)


# Whatever opens a socket, a listener, a subprocess or the browser.
_IO: Final = re.compile(
    r"trio\.open_tcp_stream|trio\.open_tcp_listeners|trio\.open_ssl_over_tcp_stream|trio\.socket\.socket|"
    r"open_process|run_process|^import (?:socket|subprocess|webbrowser)$",
    re.MULTILINE,
)


def test_the_readme_says_which_library_code_opens_sockets_and_subprocesses() -> None:
    library = [p for p in (ROOT / "mcpfsm").rglob("*.py") if "_tooling" not in p.parts]
    opening = sorted(str(p.relative_to(ROOT / "mcpfsm")) for p in library if _IO.search(p.read_text(encoding="utf-8")))
    assert opening == ["_client/loopback.py", "_transports/pool.py", "_transports/stdio.py"]
    architecture = " ".join(README.split("### Architecture", 1)[1].split())
    assert "`_transports`** hold the sockets and subprocesses that talk to servers" in architecture
    assert "They are not the only I/O: `_client/loopback.py`" in architecture
    assert "listens on a TCP port of the loopback interface for the browser's redirect and starts the" in architecture
    # What a transport knows of eras and sessions, said where the README says what transports know.
    assert "its era, `is_modern()` of its `MCP-Protocol-Version` header, whether an event stream cut" in architecture
    assert "The transports keep no session state" in architecture
    assert "know nothing of eras" not in README
    assert "know nothing of sessions" not in README
    assert "the only code that talks to a server" not in README
