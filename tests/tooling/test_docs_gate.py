"""The examples of docs/gate.md that serve or call: the threat shown blocked, and the SDK's server behind the gate."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

import mcpfsm
from tests.support.ports import reserved_port
from tests.tooling.test_docs import example, run_example, shown_after


def test_the_threat_example_shows_the_waf_fooled_and_the_gate_not(tmp_path: Path) -> None:
    done = run_example("gate-threat", tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == shown_after("gate.md", "The WAF alone lets the lie through")


def _accepting(port: int, process: subprocess.Popen[bytes], within: float = 60.0) -> None:
    # The example prints nothing when it is ready: wait until its port accepts a connection (or it exits).
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert process.poll() is None, "the example exited before it listened"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listened on port {port} within {within} s")


async def test_the_middleware_example_serves_the_truth_and_refuses_the_lie_and_the_tenant(tmp_path: Path) -> None:
    _, code = example("gate-middleware")
    script = tmp_path / "app.py"
    script.write_text(code, encoding="utf-8")
    with reserved_port() as port:
        process = subprocess.Popen([sys.executable, str(script), str(port)], cwd=tmp_path)
    try:
        _accepting(port, process)
        url = f"http://127.0.0.1:{port}/mcp"
        async with mcpfsm.Client.http(url) as client:
            tool = (await client.tools()).get("query")
            assert tool is not None and tool.mirrored == {("tenant",): "Mcp-Param-Tenant"}
            result = await tool.call({"sql": "select 1", "tenant": "acme"})
            assert result.text == "'select 1' ran for acme"
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }

        def call(tenant_header: str, tenant: str) -> httpx.Response:
            body = {
                "jsonrpc": "2.0",
                "id": 9,
                "method": "tools/call",
                "params": {"name": "query", "arguments": {"sql": "s", "tenant": tenant}, "_meta": meta},
            }
            headers = {
                "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "tools/call",
                "Mcp-Name": "query",
                "Mcp-Param-Tenant": tenant_header,
                "Accept": "application/json, text/event-stream",
            }
            return httpx.post(url, json=body, headers=headers, timeout=30)

        lie = call("acme", "initech")
        assert lie.status_code == 400 and lie.json()["error"]["code"] == -32020
        refused = call("initech", "initech")
        assert refused.status_code == 403
        assert refused.json() == {
            "jsonrpc": "2.0",
            "id": 9,
            "error": {"code": -32600, "message": "this gate serves the tenants acme and globex only"},
        }
        assert json.loads(call("globex", "globex").text)["result"]["content"][0]["text"] == "'s' ran for globex"
    finally:
        process.terminate()
        process.wait(timeout=30)
