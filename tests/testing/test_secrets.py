"""A cassette recorded with ``auth=`` holds no secret: every token, code, verifier, client secret and DPoP proof the
run used (read back from the local authorization server's log) is grepped for in the file, as is, percent-encoded
and JSON-escaped; the server quoted them back in a result, which is kept with ``[redacted]`` in their place. The
cassette then replays with no authorization at all."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import pytest
import trio

import mcpfsm
from mcpfsm.testing import replay
from tests.conformance.adapter import headless_authorize
from tests.testing.agents import cassette_lines
from tooling.processes import RunningAuthServer

REDIRECT: Final = "http://localhost:3000/callback"
SECRET_FIELDS: Final = ("code", "code_verifier", "client_secret", "refresh_token", "client_assertion")
ERAS: Final = {"modern": "auto", "legacy": "2025-11-25"}


def used_secrets(log: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Every secret a request to the authorization server or the MCP endpoint carried, by kind."""
    found: dict[str, set[str]] = {}
    for entry in log:
        for name in ("authorization", "dpop"):
            value = entry["headers"].get(name)
            if not value:
                continue
            scheme, _, credentials = value.partition(" ")
            kind = "dpop proof" if name == "dpop" else f"{scheme.lower()} token"
            found.setdefault(kind, set()).update({value} if name == "dpop" else {value, credentials})
            if scheme.lower() == "basic":
                found[kind].add(base64.b64decode(credentials).decode().partition(":")[2])
        for field in SECRET_FIELDS:
            value = (entry.get("form") or {}).get(field)
            if value:
                found.setdefault(field, set()).add(value)
    return found


def forms(secret: str) -> list[str]:
    return [secret, quote(secret, safe=""), json.dumps(secret)[1:-1]]


@pytest.mark.parametrize("era", ERAS)
async def test_a_cassette_recorded_with_auth_writes_no_token_code_secret_or_proof(
    era: str, authserver: RunningAuthServer, tmp_path: Path
) -> None:
    authserver.configure(
        {
            "dpop": True,
            "dpop_required": True,
            "refresh_tokens": True,
            "token_endpoint_auth_methods_supported": ["client_secret_post"],
            "echo_credentials": True,
            "sessions": era == "legacy",
        }
    )
    path = tmp_path / "auth.jsonl"
    auth = mcpfsm.OAuth(redirect_uri=REDIRECT, authorize=headless_authorize, dpop=True)
    async with mcpfsm.Client.http(authserver.mcp_url, auth=auth, protocol=ERAS[era], record=path) as client:
        first = await client.call_tool("test-tool", {})
        # Every access token dies: the next call is refused (401), the client refreshes with its refresh token.
        await trio.to_thread.run_sync(authserver.revoke)
        second = await client.call_tool("test-tool", {})
    log = authserver.log()
    statuses = [(entry["path"], entry["status"]) for entry in log if entry["path"] in ("/mcp", "/token")]
    assert ("/mcp", 401) in statuses and statuses.count(("/token", 200)) == 2  # the code, then the refresh
    secrets = used_secrets(log)
    assert set(secrets) == {"dpop token", "dpop proof", "code", "code_verifier", "client_secret", "refresh_token"}
    assert len(secrets["dpop proof"]) >= 4 and len(secrets["dpop token"]) >= 4  # two access tokens, each with "DPoP "
    text = path.read_text(encoding="utf-8")
    leaked = [(kind, secret) for kind, values in secrets.items() for secret in values for form in forms(secret)
              if form in text]
    assert leaked == []
    # The server quoted the Authorization and DPoP headers back in each result: kept, with the marker in their place.
    for result in (first, second):
        assert result.content[-1]["text"].startswith('called with {"authorization": "DPoP ')
    quoted = [
        message["result"]["content"][-1]["text"]
        for line in cassette_lines(path)[1:]
        for message in line["response"]["messages"]
        if line["request"]["message"]["method"] == "tools/call"
    ]
    assert quoted == ['called with {"authorization": "DPoP [redacted]", "dpop": "[redacted]"}'] * 2
    # Nothing answered 401 or 403 is recorded: a replay needs no authorization.
    exchanges = cassette_lines(path)[1:]
    assert all(line["response"]["status"] not in (401, 403) for line in exchanges)
    assert all("authorization" not in json.dumps(line["request"]["headers"]).lower() for line in exchanges)

    async with mcpfsm.Client(replay(path), protocol=ERAS[era]) as replayed:
        again = await replayed.call_tool("test-tool", {})
        assert again.content == [
            {"type": "text", "text": "test-tool called"},
            {"type": "text", "text": 'called with {"authorization": "DPoP [redacted]", "dpop": "[redacted]"}'},
        ]
        assert (await replayed.call_tool("test-tool", {})).content == again.content
