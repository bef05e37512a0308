"""Every Python example of the manual (``docs/*.md``) runs against a real server and prints what the page says.

Each example is found by its marker, ``<!-- example: NAME -->`` on the line before its fence, never by its
position, and each name has one test here. A Python block without a marker, a marker on no Python block, a
repeated name, or a name without a test fails :func:`test_every_python_example_has_a_marker_and_a_test`.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Final

from tests.support.peer.fixtures import start_http_peer
from tooling.processes import run_authserver

ROOT: Final = Path(__file__).resolve().parents[2]
DOCS: Final = ROOT / "docs"
_MARKED: Final = re.compile(r"<!-- example: ([a-z0-9-]+) -->\n```python\n(.*?)```", re.DOTALL)


def _pages() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(DOCS.glob("*.md"))}


def example(name: str) -> tuple[str, str]:
    """The page holding the example ``name``, and its code."""
    found = [
        (page, match[2]) for page, text in _pages().items() for match in _MARKED.finditer(text) if match[1] == name
    ]
    assert len(found) == 1, f"example {name!r} is marked {len(found)} times in docs/"
    return found[0]


def shown_after(page: str, lead: str) -> list[str]:
    """The lines of the first plain code block after the sentence ``lead`` on ``page``."""
    text = (DOCS / page).read_text(encoding="utf-8")
    block = re.search(re.escape(lead) + r".*?\n```\n(.*?)```", text, flags=re.DOTALL)
    assert block is not None, f"{page}: no output block after {lead!r}"
    return block[1].splitlines()


def run_example(
    name: str, tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    _, code = example(name)
    script = tmp_path / f"{name}.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, script.name, *args], capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env
    )


TESTED: Final = {
    "first-call",
    "input-handlers",
    "surface",
    "telemetry",
    "log-to-stdlib",
    "login-interactive",
    "agent-headless",
    "group-from-file",
    "many-servers",
    "chained-audit-log",
    "fleet-disk",
    "fleet-redis",
    "fleet-redis-tasks",
    "fleet-redis-client",
    "store-lock",
    "skills",
    "long-task",
    "shared-listings",
    "cassette-test",
    "cassette-faults",
    "sdk-client-replay",
    "gate-verify",
    "gate-threat",
    "gate-middleware",
}
"""The examples the tests below run, by marker name."""


def test_every_python_example_has_a_marker_and_a_test() -> None:
    marked: list[str] = []
    for page, text in _pages().items():
        fences = text.count("```python\n")
        names = [match[1] for match in _MARKED.finditer(text)]
        assert len(names) == fences, f"{page}: {fences} Python blocks, {len(names)} marked <!-- example: NAME -->"
        marked += names
    assert len(marked) == len(set(marked)), f"an example name is used twice: {sorted(marked)}"
    assert set(marked) == TESTED


def test_the_first_call_runs_against_the_real_server(tmp_path: Path) -> None:
    with start_http_peer(mode="modern") as peer:
        done = run_example("first-call", tmp_path, peer.url)
        log = peer.log()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "protocol: 2026-07-28"
    assert lines[1] == "instructions: Use execute-sql for queries; echo repeats text."
    assert lines[2] == "mirrored: {('database',): 'Mcp-Param-Database', ('options', 'readOnly'): 'Mcp-Param-Read-Only'}"
    assert lines[3] == "result: executed 'select 1' on 'analytics' is_error: False"
    assert [line.split(" ", 3)[:3] for line in lines[4:8]] == [
        ["0", "resolving", "None"],
        ["1", "planning", "resolved"],
        ["2", "sending", "planned"],
        ["3", "succeeded", "answered"],
    ]
    assert lines[8:] == [
        "echo: hi",
        "refused before sending: argument /database cannot be mirrored into Mcp-Param-Database"
        " (declared string): expected a string, got int 42",
    ]
    calls = [entry for entry in log if entry["jsonrpc_method"] == "tools/call"]
    # The refused call never reached the server; the custom header went out, mcp-* names stayed protocol-owned.
    assert [entry["name"] for entry in calls] == ["execute-sql", "echo"]
    assert calls[0]["headers"]["mcp-param-database"] == "analytics"
    assert calls[0]["headers"]["mcp-param-read-only"] == "true"
    assert not any(name.startswith("mcp-param") for name in calls[1]["headers"])


def test_the_gate_verify_example_refuses_the_lie_and_keeps_the_truth(tmp_path: Path) -> None:
    done = run_example("gate-verify", tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == shown_after("gate.md", "It prints the refusal")


def test_the_input_handlers_answer_two_rounds(tmp_path: Path) -> None:
    with start_http_peer(mode="modern") as peer:
        done = run_example("input-handlers", tmp_path, peer.url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # One round's two questions are answered concurrently, so they print in either order.
    assert sorted(lines[:2]) == ["server asks: First name?", "server asks: Last name?"]
    assert lines[2:] == shown_after("input.md", "It prints the two questions")


def test_the_surface_example_reads_resources_prompts_and_completions(tmp_path: Path) -> None:
    with start_http_peer(mode="dual") as peer:
        done = run_example("surface", tmp_path, peer.url)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "resources: ['res://static/readme', 'res://static/logo'] ['res://items/{item_id}', 'res://ask/{key}']",
        "read: hello from a static resource",
        "prompt: Say hello to Ada in a plain style.",
        "completions: ('fancy', 'formal')",
        "listening: {'toolsListChanged': True, 'resourceSubscriptions': ['res://static/readme']}",
    ]


def test_the_skills_example_lists_loads_reads_and_refuses(tmp_path: Path) -> None:
    from tooling.processes import run_skills_peer

    with run_skills_peer() as server:
        done = run_example("skills", tmp_path, server.url)
        log = server.log()
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == shown_after("resources.md", "It prints the listing")
    reads = [entry["uri"] for entry in log if entry["method"] == "resources/read"]
    assert reads == [
        "skill://pdf-processing/SKILL.md",
        "skill://pdf-processing/references/FORMS.md",
        "skill://tampered/wrong-digest/SKILL.md",
    ]


def test_the_telemetry_example_prints_its_spans_and_its_audit_log_draws_the_call(tmp_path: Path) -> None:
    with start_http_peer(mode="modern") as peer:
        done = run_example("telemetry", tmp_path, peer.url)
        log = peer.log()
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == shown_after("telemetry.md", "draws the call:")
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


def test_log_to_stdlib_sends_the_library_warning_through_logging(tmp_path: Path) -> None:
    # Against the server the page names: the demo's, started with --bad-header-tool.
    with start_http_peer(mode="dual", bad_header_tool=True) as peer:
        done = run_example("log-to-stdlib", tmp_path, peer.url)
        listed = [entry["jsonrpc_method"] for entry in peer.log()].count("tools/list")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == shown_after("telemetry.md", "then the exclusion:")
    assert listed == 1


def test_the_interactive_login_runs_with_a_browser(tmp_path: Path) -> None:
    # The "browser" is a command that follows the login's redirects to the client's loopback listener.
    browser = tmp_path / "browser.py"
    browser.write_text("import sys, httpx\nhttpx.get(sys.argv[1], follow_redirects=True, timeout=30)\n")
    env = {**os.environ, "BROWSER": f"{sys.executable} {browser} %s"}
    runs = []
    with run_authserver({"challenge_scope": "mcp:basic"}) as server:
        for _ in range(2):
            done = run_example("login-interactive", tmp_path, server.mcp_url, env=env)
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


def test_the_headless_agent_runs(tmp_path: Path) -> None:
    scenario = {"client_credentials": {"client_id": "agent", "client_secret": "agent-secret"}}
    with run_authserver(scenario) as server:
        done = run_example("agent-headless", tmp_path, server.mcp_url, server.base_url)
        grants = [entry["form"]["grant_type"] for entry in server.log() if entry["path"] == "/token"]
    assert (done.returncode, done.stdout, done.stderr) == (0, "test-tool called\n", "")
    assert grants == ["client_credentials"]


def test_the_shared_listings_example_lists_once_for_two_processes(tmp_path: Path) -> None:
    # Against the server the page names: the demo's, started with --public-listings 60000.
    with start_http_peer(mode="dual", public_listings=60_000) as peer:
        runs = [run_example("shared-listings", tmp_path, peer.url, "store") for _ in range(2)]
        listed = [entry["jsonrpc_method"] for entry in peer.log()].count("tools/list")
    assert [run.returncode for run in runs] == [0, 0], [run.stderr for run in runs]
    assert [run.stdout for run in runs] == [f"{line}\n" for line in shown_after("cache.md", "sends no `tools/list`:")]
    assert listed == 1


def test_the_api_reference_documents_every_public_name() -> None:
    import mcpfsm

    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^::: mcpfsm\.(\w+)$", api, flags=re.MULTILINE))
    assert sorted(set(mcpfsm.__all__) - documented - {"__version__"}) == []


def test_the_group_example_opens_http_and_stdio_members_and_survives_one_down(tmp_path: Path) -> None:
    with start_http_peer(mode="modern") as peer:
        done = run_example("group-from-file", tmp_path, peer.url)
    assert (done.returncode, done.stderr.count("Traceback")) == (0, 0), done.stderr
    assert done.stdout.splitlines() == shown_after("groups.md", "It prints:")
    assert json.loads((tmp_path / "mcp.json").read_text())["mcpServers"]["web"] == {"url": peer.url}


def test_the_many_servers_example_lists_from_known_listings_and_starts_one_member(tmp_path: Path) -> None:
    done = run_example("many-servers", tmp_path)
    assert (done.returncode, done.stderr.count("Traceback")) == (0, 0), done.stderr
    assert done.stdout.splitlines() == shown_after("groups.md", "The lazy group prints:")


def test_the_chained_audit_log_example_writes_a_log_that_verifies_only_with_its_key(tmp_path: Path) -> None:
    with start_http_peer(mode="modern") as peer:
        done = run_example("chained-audit-log", tmp_path, peer.url)
    assert (done.returncode, done.stderr) == (0, "")
    promised = re.search(
        r"`mcpfsm audit verify (\S+) --key-file (\S+)` then prints `([^`]+)`", example_page("trail-viewer.md")
    )
    assert promised is not None
    mcpfsm_command = Path(sys.executable).with_name("mcpfsm")
    verified = subprocess.run(
        [str(mcpfsm_command), "audit", "verify", promised[1], "--key-file", promised[2]],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert (verified.returncode, verified.stdout.strip()) == (0, promised[3])
    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace("on the record", "off the record") if "on the record" in lines[1] else lines[1] + " "
    (tmp_path / "audit.jsonl").write_text("\n".join(lines) + "\n")
    tampered = subprocess.run(
        [str(mcpfsm_command), "audit", "verify", promised[1], "--key-file", promised[2]],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert tampered.returncode != 0


def test_the_long_task_example_runs_against_the_tasks_server(tmp_path: Path) -> None:
    with start_http_peer(mode="modern", module="tooling.peer_tasks") as server:
        done = run_example("long-task", tmp_path, server.url)
        methods = [entry["method"] for entry in server.log()]
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == shown_after("tasks.md", "It prints:")
    assert methods.count("tasks/update") == 1 and methods.count("tasks/cancel") == 1
    assert "notifications/cancelled" not in methods


def example_page(page: str) -> str:
    return (DOCS / page).read_text(encoding="utf-8")
