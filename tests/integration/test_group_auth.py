"""Configuration auth blocks against the real local authorization server (tooling.authserver).

``load_config`` maps ``{"type": "client_credentials" | "bearer" | "oauth", ...}`` onto the client's ``auth=``
(docs/groups.md); tests/core/test_config.py checks the mapping as data. Here the mapped values are used: a group
read from a file on disk, its secrets from environment variables, authorizes each member against the test
authorization server and calls its protected tool; the server's log shows which grant each member used and which
token reached the MCP endpoint. The interactive ``oauth`` block runs through ``mcpfsm servers --config`` with a
"browser" (``BROWSER``) that follows the login's redirects to the client's loopback listener.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

import mcpfsm
from tests.support.peer.fixtures import REPO_ROOT
from tests.support.ports import reserved_port
from tooling.processes import RunningAuthServer

AGENT: Final = {"client_id": "agent", "client_secret": "agent-secret-value"}
SCENARIO: Final = {"challenge_scope": "mcp:basic", "client_credentials": AGENT}


@pytest.fixture
def site(authserver: RunningAuthServer) -> RunningAuthServer:
    authserver.configure(SCENARIO)  # afresh: no clients, tokens or log of an earlier test
    return authserver


def issued_token(site: RunningAuthServer) -> str:
    """An access token for the MCP endpoint, got by the test itself (a client_credentials grant)."""
    answer = httpx.post(
        f"{site.base_url}/token",
        data={"grant_type": "client_credentials", "resource": site.mcp_url, "scope": "mcp:basic"},
        auth=(AGENT["client_id"], AGENT["client_secret"]),
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    token: str = answer.json()["access_token"]
    return token


def mcp_authorizations(site: RunningAuthServer) -> list[str | None]:
    return [entry["headers"].get("authorization") for entry in site.log() if entry["path"] == "/mcp"]


def grants(site: RunningAuthServer) -> list[str]:
    return [entry["form"]["grant_type"] for entry in site.log() if entry["path"] == "/token"]


async def test_client_credentials_and_bearer_blocks_authorize_their_members(
    site: RunningAuthServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = issued_token(site)
    monkeypatch.setenv("GROUP_AUTH_SECRET", AGENT["client_secret"])
    monkeypatch.setenv("GROUP_AUTH_TOKEN", token)
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({
        "mcpServers": {
            "agent": {
                "url": site.mcp_url,
                "auth": {"type": "client_credentials", "clientId": "agent", "clientSecret": "${env:GROUP_AUTH_SECRET}",
                         "scope": "mcp:basic"},
            },
            "token": {"url": site.mcp_url, "auth": {"type": "bearer", "token": "${GROUP_AUTH_TOKEN}"}},
            "stale": {"url": site.mcp_url, "auth": {"type": "bearer", "token": "at-revoked-long-ago"}},
        }
    }), encoding="utf-8")
    assert grants(site) == ["client_credentials"]  # the test's own grant
    seen: list[mcpfsm.CallEvent] = []
    async with mcpfsm.ClientGroup(path, on_event=seen.append) as group:
        assert group.status == {"agent": "connected", "token": "connected", "stale": "failed"}
        # A bearer token is all the client has: the server's 401 for it fails the member, and no flow starts
        # (there is nothing to authorize with); the other members are not affected.
        stale = group.errors["stale"]
        assert isinstance(stale, mcpfsm.TransportError) and stale.status == 401
        assert str(stale).startswith(
            "HTTP 401 Unauthorized: the server requires authorization and refused the credentials sent ("
        )
        assert "at-revoked-long-ago" not in str(group.errors["stale"])
        assert (await group.tools()).names == ["agent_test-tool", "token_test-tool"]
        before = len(mcp_authorizations(site))
        assert (await group.call_tool("token_test-tool")).text == "test-tool called"
        assert mcp_authorizations(site)[before:] == [f"Bearer {token}"]
        assert (await group.call_tool("agent_test-tool")).text == "test-tool called"
        agent_token = mcp_authorizations(site)[-1]
        assert agent_token is not None and agent_token.startswith("Bearer at-") and agent_token != f"Bearer {token}"
    # The client_credentials block ran one grant with its secret from the environment; the bearer one none.
    assert grants(site) == ["client_credentials", "client_credentials"]
    sent = [entry for entry in site.log() if entry["path"] == "/token"][-1]
    assert sent["headers"]["authorization"] == "Basic " + base64.b64encode(b"agent:agent-secret-value").decode()
    flows = [event for event in seen if event.machine == "authorization"]
    assert {event.server for event in flows} == {"agent"}
    assert flows[-1].state == "authorized"
    assert AGENT["client_secret"] not in repr(group) + "".join(event.to_json() for event in seen)


def test_an_oauth_block_logs_in_through_the_browser_from_mcpfsm_servers(
    site: RunningAuthServer, tmp_path: Path
) -> None:
    browser = tmp_path / "browser.py"
    browser.write_text("import sys, httpx\nhttpx.get(sys.argv[1], follow_redirects=True, timeout=30)\n")
    with reserved_port() as port:
        config = {
            "mcpServers": {
                "user": {
                    "url": site.mcp_url,
                    "auth": {"type": "oauth", "scopes": ["mcp:basic"], "redirectUri": f"http://127.0.0.1:{port}/cb"},
                },
                "agent": {"url": site.mcp_url, "auth": {"type": "client_credentials", **AGENT}},
            }
        }
        path = tmp_path / "mcp.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        env: dict[str, Any] = {**os.environ, "BROWSER": f"{sys.executable} {browser} %s", "PYTHONIOENCODING": "utf-8"}
        done = subprocess.run(
            [sys.executable, "-m", "mcpfsm", "servers", "--config", str(path), "--json"],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
        )
    assert done.returncode == 0, done.stderr
    rows = {row["server"]: row for row in json.loads(done.stdout)["servers"]}
    assert {name: (row["status"], row["tools"], row["error"]) for name, row in rows.items()} == {
        "user": ("connected", 1, None),
        "agent": ("connected", 1, None),
    }
    assert f"waiting up to 300 s for http://127.0.0.1:{port}/cb" in done.stderr
    # The user's member registered, was sent to /authorize with the redirect URI of its block and exchanged the
    # code; the agent's member used its client credentials. Neither secret reached the output.
    authorize = [entry for entry in site.log() if entry["path"] == "/authorize"]
    assert len(authorize) == 1 and authorize[0]["query"]["redirect_uri"] == f"http://127.0.0.1:{port}/cb"
    assert authorize[0]["query"]["scope"] == "mcp:basic"
    assert sorted(grants(site)) == ["authorization_code", "client_credentials"]
    assert [entry["path"] for entry in site.log()].count("/register") == 1
    assert AGENT["client_secret"] not in done.stdout + done.stderr
