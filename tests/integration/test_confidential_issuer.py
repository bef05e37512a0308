"""A confidential credential goes only to an authorization server the caller named, or one on the MCP server's host.

The real test authorization server (``tooling.authserver``, a process on 127.0.0.1) serves the MCP
endpoint and the authorization server on one port. The client reaches the MCP endpoint as
``http://localhost:PORT/mcp`` (the resource metadata names that URL), and the metadata names the
authorization server ``http://127.0.0.1:PORT``: the same socket, but another host as the URLs write it.
Hosts are compared as names, never resolved (``mcpfsm._core.oauth.urls.url_host``), so a client secret, a
private-key assertion, a workload assertion or an enterprise assertion is not sent there unless the caller
passes ``issuer="http://127.0.0.1:PORT"``; the server's request log shows that nothing secret reached it.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

import mcpfsm
from mcpfsm._core.oauth.issuer import check_confidential_issuer
from mcpfsm._core.oauth.urls import url_host
from tooling.processes import RunningAuthServer

SECRET = "cc-secret-4f1d9a-never-sent"
ASSERTION = "workload.assertion-7c2e-never-sent"
ID_TOKEN = "idp-id-token-93ab-never-sent"


def _private_key() -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _configure(authserver: RunningAuthServer) -> str:
    """Serve the MCP endpoint as ``http://localhost:PORT/mcp``; return that URL."""
    url = authserver.mcp_url.replace("://127.0.0.1:", "://localhost:")
    assert url != authserver.mcp_url
    authserver.configure(
        {
            "prm_resource": url,
            "client_credentials": {"client_id": "agent", "client_secret": SECRET},
        }
    )
    return url


def _secrets_reaching(authserver: RunningAuthServer) -> list[str]:
    # Every secret (and every form of it a request could carry) that appears anywhere in the server's log.
    text = json.dumps(authserver.log())
    basic = base64.b64encode(f"agent:{SECRET}".encode()).decode()
    return [value for value in (SECRET, basic, ASSERTION, ID_TOKEN, "client_assertion") if value in text]


CREDENTIALS: dict[str, tuple[Callable[[str], Any], str]] = {
    "client secret": (lambda base: mcpfsm.ClientCredentials("agent", client_secret=SECRET), "the client secret"),
    "private key": (
        lambda base: mcpfsm.ClientCredentials("agent", private_key_pem=_private_key()),
        "the private-key assertion",
    ),
    "workload assertion": (lambda base: mcpfsm.JwtBearer("workload", ASSERTION), "the workload assertion"),
    "enterprise": (
        lambda base: mcpfsm.EnterpriseManaged("agent", SECRET, "idp-client", ID_TOKEN, f"{base}/idp/token"),
        "the client secret with the enterprise assertion",
    ),
}


@pytest.mark.parametrize("kind", list(CREDENTIALS))
async def test_a_confidential_credential_is_not_sent_to_an_authorization_server_on_another_host(
    authserver: RunningAuthServer, kind: str
) -> None:
    url = _configure(authserver)
    build, what = CREDENTIALS[kind]
    events: list[mcpfsm.CallEvent] = []
    base = authserver.base_url
    with pytest.raises(mcpfsm.AuthorizationError) as caught:
        async with mcpfsm.Client.http(url, auth=build(base), on_event=events.append) as client:
            await client.call_tool("test-tool", {})
    assert str(caught.value) == (
        f"discovering_issuer: the MCP server's metadata names the authorization server {base!r}, which is not on"
        f" the MCP server's host 'localhost'; {what} goes only to an authorization server you name: pass"
        f" issuer={base!r} to send it there"
    )
    assert caught.value.state == "discovering_issuer"
    # The MCP endpoint and its resource metadata were asked; the authorization server never was.
    paths = [entry["path"] for entry in authserver.log()]
    assert paths == ["/mcp", "/.well-known/oauth-protected-resource/mcp"], paths
    assert _secrets_reaching(authserver) == []
    failed = [e for e in events if e.machine == "authorization" and e.state == "failed"]
    assert len(failed) == 1 and failed[0].issuer == base


async def test_the_issuer_the_caller_names_receives_the_secret(authserver: RunningAuthServer) -> None:
    url = _configure(authserver)
    auth = mcpfsm.ClientCredentials("agent", client_secret=SECRET, issuer=authserver.base_url)
    async with mcpfsm.Client.http(url, auth=auth) as client:
        result = await client.call_tool("test-tool", {})
    assert result.text == "test-tool called"
    token = [entry for entry in authserver.log() if entry["path"] == "/token"]
    assert len(token) == 1
    basic = base64.b64encode(f"agent:{SECRET}".encode()).decode()
    assert token[0]["headers"]["authorization"] == f"Basic {basic}"


async def test_another_named_issuer_still_gets_nothing(authserver: RunningAuthServer) -> None:
    # Naming an issuer is no licence for the one the metadata names: the credentials belong to theirs (SEP-2352).
    url = _configure(authserver)
    auth = mcpfsm.ClientCredentials("agent", client_secret=SECRET, issuer="http://localhost:1")
    with pytest.raises(mcpfsm.AuthorizationError, match=r"^registering: the client credentials belong to"):
        async with mcpfsm.Client.http(url, auth=auth) as client:
            await client.call_tool("test-tool", {})
    assert "/token" not in [entry["path"] for entry in authserver.log()]
    assert _secrets_reaching(authserver) == []


@pytest.mark.parametrize(
    ("issuer", "mcp_url", "allowed"),
    [
        ("http://127.0.0.1:9001", "http://127.0.0.1:8001/mcp", True),  # the same host, any port
        ("https://AS.example/tenant", "https://as.example/mcp", True),  # host names are case-insensitive
        ("http://[::1]:9", "http://[0:0::1]:8/mcp", True),  # one address, two spellings
        ("http://127.0.0.2:8001", "http://127.0.0.1:8001/mcp", False),  # another loopback address
        ("http://localhost:8001", "http://127.0.0.1:8001/mcp", False),  # a name is never resolved
        ("https://as.example.", "https://as.example/mcp", False),
        ("https://auth.mcp.example", "https://mcp.example/mcp", False),  # a subdomain is another host
    ],
)
def test_the_mcp_servers_own_host_is_the_host_its_url_names(issuer: str, mcp_url: str, allowed: bool) -> None:
    if allowed:
        check_confidential_issuer(issuer, mcp_url=mcp_url, credential="the client secret")
        return
    with pytest.raises(mcpfsm.AuthorizationError, match=re.escape(f"pass issuer='{issuer}' to send it there")):
        check_confidential_issuer(issuer, mcp_url=mcp_url, credential="the client secret")
    assert url_host(issuer) != url_host(mcp_url)
