"""Tokens belong to an identity: credentials sharing a store never use each other's tokens (docs/stores.md).

Real parts: the project's authorization server in its own process, which knows several client-credentials
clients and logs, for every MCP request, the client its token was granted to; real stores (memory, a directory,
a token file, a real ``redis-server``); a group read from a configuration. Store keys name the credential's
holder (``credential_holder``), so ``ClientCredentials("bob")`` after ``ClientCredentials("alice")`` on one store
asks for bob's own token, and a group whose members log in to one URL as different clients keeps each member's.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import pytest

import mcpfsm
from mcpfsm._core.credentials import (
    credential_holder,
    legacy_binding_key,
    legacy_registration_key,
    legacy_tokens_key,
)
from tests.conformance.adapter import headless_authorize
from tests.support.redisserver import RedisServer
from tooling.processes import RunningAuthServer

CLIENTS: Final = [
    {"client_id": name, "client_secret": f"{name}-secret-value"} for name in ("alice", "bob", "admin", "reader")
]
SCENARIO: Final = {"client_credentials": CLIENTS}


@pytest.fixture
def site(authserver: RunningAuthServer) -> RunningAuthServer:
    authserver.configure(SCENARIO)  # afresh: no tokens or log of an earlier test
    return authserver


def credentials(name: str) -> mcpfsm.ClientCredentials:
    return mcpfsm.ClientCredentials(name, client_secret=f"{name}-secret-value")


def granted(site: RunningAuthServer) -> list[str]:
    """The client of each token request, in order (from its Basic credentials' user part)."""
    import base64

    clients = []
    for entry in site.log():
        if entry["path"] == "/token":
            basic = entry["headers"]["authorization"].partition(" ")[2]
            clients.append(base64.b64decode(basic).decode().partition(":")[0])
    return clients


def calls(site: RunningAuthServer) -> list[str | None]:
    """The client each ``tools/call`` acted for, in order (the client its token was granted to)."""
    return [
        entry["client_id"]
        for entry in site.log()
        if entry["path"] == "/mcp" and (entry["json"] or {}).get("method") == "tools/call"
    ]


@contextlib.asynccontextmanager
async def store_of(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    if kind == "memory":
        yield mcpfsm.MemoryStore()
    elif kind == "file":
        yield mcpfsm.FileStore(tmp_path / "store")
    elif kind == "tokenfile":
        yield mcpfsm.FileTokenStore(tmp_path / "tokens.json")
    else:
        redis: RedisServer = request.getfixturevalue("redis_server")
        async with mcpfsm.RedisStore(redis.url, prefix=request.getfixturevalue("redis_prefix")) as store:
            yield store


@pytest.mark.parametrize("kind", ["memory", "file", "tokenfile", "redis"])
async def test_a_shared_store_gives_each_credential_its_own_token(
    kind: str, site: RunningAuthServer, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    async with store_of(kind, tmp_path, request) as store:
        for name in ("alice", "bob", "alice", "bob"):
            async with mcpfsm.Client.http(site.mcp_url, auth=credentials(name), store=store) as client:
                assert (await client.call_tool("test-tool", {})).text == "test-tool called"
                assert client.store_fallbacks == 0
    # bob asked for his own token after alice, and each called as itself; the second round found both stored.
    assert granted(site) == ["alice", "bob"]
    assert calls(site) == ["alice", "bob", "alice", "bob"]


async def test_a_credentials_own_store_shared_with_another_credential(site: RunningAuthServer) -> None:
    store = mcpfsm.MemoryStore()
    for name in ("alice", "bob"):
        auth = mcpfsm.ClientCredentials(name, client_secret=f"{name}-secret-value", store=store)
        async with mcpfsm.Client.http(site.mcp_url, auth=auth) as client:
            await client.call_tool("test-tool", {})
    assert (granted(site), calls(site)) == (["alice", "bob"], ["alice", "bob"])


async def test_group_members_on_one_url_use_their_own_tokens_on_the_next_run(
    site: RunningAuthServer, tmp_path: Path
) -> None:
    config = {
        "mcpServers": {
            name: {
                "url": site.mcp_url,
                "auth": {"type": "client_credentials", "clientId": name, "clientSecret": f"{name}-secret-value"},
            }
            for name in ("admin", "reader")
        }
    }
    store = mcpfsm.FileStore(tmp_path / "store")
    for run in (1, 2):
        async with mcpfsm.ClientGroup(config, store=store) as group:
            assert group.status == {"admin": "connected", "reader": "connected"}
            for member in ("admin", "reader", "admin"):
                await group.call_tool(f"{member}_test-tool")
        assert calls(site)[-3:] == ["admin", "reader", "admin"], run
    # Each member asked for its token once, on the first run; the second run found each member's own.
    assert sorted(granted(site)) == ["admin", "reader"]


async def test_tokens_an_earlier_version_stored_go_to_one_login_and_to_no_other_credential(
    site: RunningAuthServer, tmp_path: Path
) -> None:
    path = tmp_path / "tokens.json"
    auth = mcpfsm.OAuth(authorize=headless_authorize, store=mcpfsm.FileTokenStore(path))
    async with mcpfsm.Client.http(site.mcp_url, auth=auth) as client:
        await client.call_tool("test-tool", {})
    # The file as an earlier mcpfsm wrote it: the same records, keyed by issuer and resource alone.
    holder = credential_holder(auth)
    written = json.loads(path.read_text())
    legacy = {
        legacy_binding_key(site.mcp_url): written[f"binding {site.mcp_url} {holder}"],
        legacy_tokens_key(site.base_url, site.mcp_url): written[f"tokens {site.base_url} {site.mcp_url} {holder}"],
        legacy_registration_key(site.base_url): written[f"registration {site.base_url} {holder}"],
    }
    path.write_text(json.dumps(legacy))
    old_token = legacy[legacy_tokens_key(site.base_url, site.mcp_url)]["access_token"]
    site.clear_log()

    # A headless credential never takes them: it asks for a token of its own and leaves them where they are.
    async with mcpfsm.Client.http(site.mcp_url, auth=credentials("alice"), store=mcpfsm.FileTokenStore(path)) as cc:
        await cc.call_tool("test-tool", {})
    assert (granted(site), calls(site)) == (["alice"], ["alice"])
    assert set(legacy) <= set(json.loads(path.read_text()))
    site.clear_log()

    async def refuse(url: str) -> str:
        raise AssertionError("the stored login should have served")

    # The interactive login takes them over: no login, the old token sent, and the old keys moved.
    again = mcpfsm.OAuth(authorize=refuse, store=mcpfsm.FileTokenStore(path))
    async with mcpfsm.Client.http(site.mcp_url, auth=again) as client:
        await client.call_tool("test-tool", {})
    assert {entry["path"] for entry in site.log()} == {"/mcp"}
    assert {entry["headers"]["authorization"] for entry in site.log()} == {f"Bearer {old_token}"}
    now = json.loads(path.read_text())
    assert not set(legacy) & set(now)
    assert now[f"tokens {site.base_url} {site.mcp_url} {holder}"]["access_token"] == old_token
    assert now[f"registration {site.base_url} {holder}"] == legacy[legacy_registration_key(site.base_url)]
