"""The README's example and commands are real: the Python block runs against the real server, and
CI runs exactly the README's test command."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.peer.fixtures import start_http_peer

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)


def bash_lines() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", README, flags=re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line and not line.startswith("#")]


def test_the_readme_example_runs_against_the_real_server(tmp_path: Path) -> None:
    example, _ = python_blocks()
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
    _, example = python_blocks()
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


def test_ci_runs_the_readme_test_command() -> None:
    test_commands = [line for line in bash_lines() if "-m pytest" in line and "graphviz" in line]
    assert len(test_commands) == 1
    ci_script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_commands[0] in ci_script.splitlines()


def test_the_readme_install_command_runs_the_demo() -> None:
    first = bash_lines()[0]
    assert first == "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/mcpfsm demo"
