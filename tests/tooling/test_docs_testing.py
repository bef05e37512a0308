"""The examples of docs/testing.md, run as the page says: the agent test recorded once against the official SDK's
server (pytest in a subprocess, ``--mcp-record=once``), then passing with the server gone; the same test with
``mismatch_once``, whose trail ``mcpfsm trace --html`` draws with the retry path lit; and the official SDK's client
against ``mcpfsm replay`` of that cassette."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from mcpfsm._tooling.server_process import _started
from tests.support.peer.fixtures import REPO_ROOT, start_http_peer
from tests.tooling.test_docs import example, run_example

RETRY = [
    [None, None, "resolving"],
    ["resolving", "resolved", "planning"],
    ["planning", "planned", "sending"],
    ["sending", "mismatched", "relisting"],
    ["relisting", "relisted", "comparing"],
    ["comparing", "changed", "retrying"],
    ["retrying", "answered", "succeeded"],
]


def pytest_in(where: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_the_agent_test_records_once_then_passes_without_the_server_and_the_faults_light_the_retry(
    tmp_path: Path,
) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\ntrio_mode = true\n", encoding="utf-8")
    (tmp_path / "test_agent.py").write_text(example("cassette-test")[1], encoding="utf-8")
    with start_http_peer(mode="modern") as peer:
        done = pytest_in(tmp_path, "--mcp-record=once", "test_agent.py", env={"MCP_SERVER_URL": peer.url})
        assert done.returncode == 0, done.stdout + done.stderr
        assert [entry["jsonrpc_method"] for entry in peer.log()] == ["server/discover", "tools/list", "tools/call"]
    cassette = tmp_path / "cassettes" / "test_agent" / "test_the_agent_reads_analytics.jsonl"
    assert json.loads(cassette.read_text(encoding="utf-8").splitlines()[0])["protocol"] == "2026-07-28"
    (tmp_path / "test_agent_retry.py").write_text(example("cassette-faults")[1], encoding="utf-8")
    done = pytest_in(tmp_path, env={"MCP_SERVER_URL": "http://127.0.0.1:9/mcp"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    report = tmp_path / "retry.html"
    drawn = subprocess.run(
        [sys.executable, "-m", "mcpfsm", "trace", "retry.events.jsonl", "--html", str(report)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )
    assert drawn.returncode == 0, drawn.stderr
    page = report.read_text(encoding="utf-8")
    match = re.search(r'<script type="application/json" id="trail">(.*?)</script>', page, re.DOTALL)
    assert match is not None
    [run] = json.loads(match.group(1))["runs"]
    assert [[e.get("previous"), e.get("trigger"), e["state"]] for e in run["events"]] == RETRY

    with _started([sys.executable, "-m", "mcpfsm", "replay", str(cassette), "--port", "0"], REPO_ROOT, 60) as (_, url):
        shown = run_example("sdk-client-replay", tmp_path, url)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == "{'query': 'select 1', 'database': 'analytics', 'options': {'readOnly': True}}\n"
    page_text = (REPO_ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    assert f"It prints `{shown.stdout.strip()}`" in page_text
