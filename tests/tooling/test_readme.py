"""The README's example and commands are real: the Python block runs against the real server, CI runs exactly the
README's test command, and what the manual says about the CLI and the architecture matches the code (the manual's
own examples run in tests/tooling/test_docs.py)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path
from typing import Final

from tests.support.peer.fixtures import start_http_peer

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CLI_PAGE = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def bash_lines() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", README, flags=re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line and not line.startswith("#")]


def test_the_readme_is_a_front_page() -> None:
    # About 200 lines: what it is, the two commands, one example, the feature table, links into the manual.
    assert len(README.splitlines()) <= 220
    assert README.count("```python\n") == 1
    linked = set(re.findall(r"\]\((docs/[a-z-]+\.md)\)", README))
    assert {"docs/calls.md", "docs/cli.md", "docs/api.md", "docs/development.md", "docs/benchmarks.md"} <= linked
    assert all((ROOT / path).is_file() for path in linked)


def test_the_readme_example_runs_against_the_real_server(tmp_path: Path) -> None:
    example = re.search(r"<!-- example: readme -->\n```python\n(.*?)```", README, flags=re.DOTALL)
    assert example is not None
    (tmp_path / "example.py").write_text(example[1], encoding="utf-8")
    with start_http_peer(mode="modern") as peer:
        done = subprocess.run(
            [sys.executable, "example.py", peer.url], capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
        log = peer.log()
    assert (done.returncode, done.stderr) == (0, "")
    shown = re.search(r"It prints:\n\n```\n(.*?)```", README, flags=re.DOTALL)
    assert shown is not None
    assert done.stdout.splitlines() == shown[1].splitlines()
    calls = [entry for entry in log if entry["jsonrpc_method"] == "tools/call"]
    assert [entry["name"] for entry in calls] == ["execute-sql"]  # the refused call never reached the server
    assert calls[0]["headers"]["mcp-param-database"] == "analytics"


def test_ci_runs_the_readme_test_command() -> None:
    test_commands = [line for line in bash_lines() if "-m pytest" in line and "graphviz" in line and "chromium" in line]
    assert len(test_commands) == 1
    ci_script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_commands[0] in ci_script.splitlines()


def test_the_manuals_front_page_shows_the_test_command_ci_runs() -> None:
    # docs/index.md says its second command "is exactly what CI runs": it must be the README's, line for line.
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", index, flags=re.DOTALL)
    lines = [line for block in blocks for line in block.splitlines() if line and not line.startswith("#")]
    assert [line for line in lines if "-m pytest" in line] == [
        line for line in bash_lines() if "-m pytest" in line and "graphviz" in line
    ]


def test_every_example_says_where_to_save_it_before_the_command_that_runs_it() -> None:
    # "python NAME.py" in the prose before an example needs "save ... as `NAME.py`" first, in the same paragraph.
    pages = {"README.md": README} | {
        f"docs/{path.name}": path.read_text(encoding="utf-8") for path in sorted((ROOT / "docs").glob("*.md"))
    }
    unsaid = []
    for page, text in pages.items():
        for match in re.finditer(r"python ([a-z_]+\.py)\b", text):
            paragraph = " ".join(text[text.rfind("\n\n", 0, match.start()) : match.start()].split())
            if f"as `{match[1]}`" not in paragraph:
                unsaid.append(f"{page}: {match[1]}")
    assert unsaid == []


def test_the_readme_install_command_runs_the_demo() -> None:
    first = bash_lines()[0]
    assert first == "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/mcpfsm demo"


def _options(command: str) -> set[str]:
    from mcpfsm._tooling.cli import build_parser

    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {option for action in subparsers.choices[command]._actions for option in action.option_strings}


def test_the_manual_names_every_network_command_and_the_options_they_share() -> None:
    from mcpfsm._tooling.cli import COMMANDS

    shared = {"--header", "--protocol", "--timeout", "--cacert", "--cert"}
    sentence = re.search(r"Every network command \(([^)]*)\) also takes", CLI_PAGE)
    assert sentence is not None
    named = re.findall(r"`([a-z]+)`", sentence[1])
    network = [c.name for c in COMMANDS if {"--auth", "--stdio", *shared} <= _options(c.name)]
    assert named == network
    assert "PEM file), as does `login`;" in " ".join(CLI_PAGE.split())
    assert shared <= _options("login") and "--stdio" not in _options("login")
    assert all("--token" in _options(name) for name in network)


# Whatever opens a socket, a listener, a subprocess or the browser.
_IO: Final = re.compile(
    r"trio\.open_tcp_stream|trio\.open_tcp_listeners|trio\.open_ssl_over_tcp_stream|trio\.socket\.socket|"
    r"open_process|run_process|^import (?:socket|subprocess|webbrowser)$",
    re.MULTILINE,
)


def test_the_architecture_page_says_which_library_code_opens_sockets_and_subprocesses() -> None:
    library = [p for p in (ROOT / "mcpfsm").rglob("*.py") if "_tooling" not in p.parts]
    opening = sorted(str(p.relative_to(ROOT / "mcpfsm")) for p in library if _IO.search(p.read_text(encoding="utf-8")))
    assert opening == [
        "_client/loopback.py",
        "_transports/pool/connection.py",
        "_transports/stdio.py",
        "testing/_serve.py",
    ]
    architecture = " ".join(ARCHITECTURE.split())
    assert "`mcpfsm.testing`'s replay server (`testing/_serve.py`) listens on a TCP port of 127.0.0.1" in architecture
    assert "`_transports`** hold the sockets and subprocesses that talk to servers" in architecture
    assert "They are not the only I/O: `_client/loopback.py`" in architecture
    assert "listens on a TCP port of the loopback interface for the browser's redirect and starts the" in architecture
    # What a transport knows of eras and sessions, said where the README says what transports know.
    assert "its era, `is_modern()` of its `MCP-Protocol-Version` header, whether an event stream cut" in architecture
    assert "The transports keep no session state" in architecture
    assert "know nothing of eras" not in ARCHITECTURE
    assert "know nothing of sessions" not in ARCHITECTURE
    assert "the only code that talks to a server" not in ARCHITECTURE
