"""Refresh against the real test authorization server: when it falls due, what a failed one costs, who sends it.

The client's clock is moved forward (the layer takes a clock) so that a token falls due without waiting for
it; the server keeps real time, so the token it issued stays valid there. The server counts token requests
(``/_stats``) and detects a rotated-away refresh token presented again (RFC 6749 §10.4, RFC 9700 §4.14.2).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import mcpfsm
from mcpfsm._client.assembly import HttpServer
from tests.conformance.adapter import headless_authorize
from tooling.processes import RunningAuthServer

REDIRECT = "http://localhost:3000/callback"
REFRESHING = {"refresh_tokens": True, "scopes_supported": ["offline_access"], "challenge_scope": "a"}


class Clock:
    """Wall-clock time plus an offset the test moves forward."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def oauth(**options: Any) -> mcpfsm.OAuth:
    return mcpfsm.OAuth(redirect_uri=REDIRECT, authorize=headless_authorize, **options)


def clocked(
    authserver: RunningAuthServer, clock: Clock, *, events: list[mcpfsm.CallEvent] | None = None, **auth: Any
) -> mcpfsm.Client:
    """A client of the server's MCP endpoint whose authorization reads ``clock``."""
    connection = HttpServer(url=authserver.mcp_url, auth=oauth(**auth), clock=clock)
    return mcpfsm.Client(connection, protocol="2026-07-28", on_event=events.append if events is not None else None)


def refreshes(authserver: RunningAuthServer) -> list[int]:
    """The status of every refresh request the server answered, in order."""
    return [
        entry["status"]
        for entry in authserver.log()
        if entry["path"] == "/token" and (entry["form"] or {}).get("grant_type") == "refresh_token"
    ]


def bearers(authserver: RunningAuthServer) -> list[str]:
    """The Authorization header of every MCP request the server answered 200, in order."""
    return [
        entry["headers"]["authorization"]
        for entry in authserver.log()
        if entry["path"] == "/mcp" and entry["status"] == 200
    ]


def flow(events: list[mcpfsm.CallEvent]) -> list[tuple[str, str | None]]:
    return [(e.state, e.trigger) for e in events if e.machine == "authorization"]


async def test_a_short_lived_token_is_not_refreshed_before_every_request(authserver: RunningAuthServer) -> None:
    # The measured storm: a 30 s token inside a fixed 60 s margin was refreshed before each of 10 calls (9
    # refreshes). The margin is a tenth of the lifetime (3 s), so 10 calls in a few seconds refresh nothing.
    authserver.configure({**REFRESHING, "expires_in": 30})
    async with mcpfsm.Client.http(authserver.mcp_url, auth=oauth(), protocol="2026-07-28") as client:
        for _ in range(10):
            assert (await client.call_tool("test-tool", {})).text == "test-tool called"
    assert authserver.stats() == {"token_requests": {"authorization_code": 1}, "refresh_reuses": 0, "revoked_grants": 0}


async def test_a_token_is_refreshed_once_when_its_refresh_falls_due(authserver: RunningAuthServer) -> None:
    authserver.configure({**REFRESHING, "expires_in": 30})
    clock = Clock()
    events: list[mcpfsm.CallEvent] = []
    async with clocked(authserver, clock, events=events) as client:
        for _ in range(3):
            await client.tools()
        clock.offset = 26.0  # 4 s left: not yet due (3 s ahead)
        await client.call_tool("test-tool", {})
        assert refreshes(authserver) == []
        clock.offset = 27.5  # due, still valid
        for _ in range(5):
            await client.call_tool("test-tool", {})
    assert refreshes(authserver) == [200]
    used = bearers(authserver)
    # The old token up to the refresh, the new one on each of the five calls after it.
    assert set(used[:-5]) == {used[0]} and used[-5:] == [used[-1]] * 5 and used[0] != used[-1]
    assert flow(events)[7:] == [("starting", None), ("refreshing", "expiring"), ("authorized", "refreshed")]


async def test_each_due_refresh_presents_the_latest_rotated_refresh_token(authserver: RunningAuthServer) -> None:
    # Was test_authorization.py's "refreshed before the send" test, when a 30 s token was refreshed before every
    # send; now each refresh falls due 3 s before expiry on the client's clock.
    authserver.configure({**REFRESHING, "expires_in": 30})
    clock = Clock()
    events: list[mcpfsm.CallEvent] = []
    async with clocked(authserver, clock, events=events) as client:
        await client.call_tool("test-tool", {})
        for offset in (28.0, 56.0):
            clock.offset = offset
            await client.call_tool("test-tool", {})
    log = authserver.log()
    tokens = [entry for entry in log if entry["path"] == "/token"]
    assert [entry["status"] for entry in tokens] == [200, 200, 200]
    first, *rotated = tokens
    client_id = first["form"]["client_id"]
    assert [entry["form"] for entry in rotated] == [
        {
            "grant_type": "refresh_token",
            "refresh_token": entry["form"]["refresh_token"],
            "resource": authserver.mcp_url,
            "client_id": client_id,
        }
        for entry in rotated
    ]
    assert rotated[0]["form"]["refresh_token"] != rotated[1]["form"]["refresh_token"]
    assert authserver.stats()["refresh_reuses"] == 0
    assert flow(events)[7:] == [("starting", None), ("refreshing", "expiring"), ("authorized", "refreshed")] * 2


async def test_a_5xx_during_a_proactive_refresh_keeps_the_held_token_and_backs_off(
    authserver: RunningAuthServer,
) -> None:
    authserver.configure(REFRESHING)
    clock = Clock()
    events: list[mcpfsm.CallEvent] = []
    async with clocked(authserver, clock, events=events) as client:
        await client.tools()
        first = bearers(authserver)
        clock.offset = 3550.0  # due (60 s ahead), still valid for 50 s
        authserver.token_outage(1, status=503)
        for _ in range(4):
            assert (await client.call_tool("test-tool", {})).text == "test-tool called"
        # One try, answered 503; the held token served all four calls; no second try before the pause.
        assert refreshes(authserver) == [503]
        assert set(bearers(authserver)) == set(first)
        clock.offset += 2.5  # past the first pause (2 s)
        await client.call_tool("test-tool", {})
    assert refreshes(authserver) == [503, 200]
    assert bearers(authserver)[-1] not in first
    assert flow(events)[7:] == [
        ("starting", None),
        ("refreshing", "expiring"),
        ("failed", "refused"),
        ("starting", None),
        ("refreshing", "expiring"),
        ("authorized", "refreshed"),
    ]


async def test_the_pause_after_failed_refreshes_grows(authserver: RunningAuthServer) -> None:
    authserver.configure(REFRESHING)
    clock = Clock()
    async with clocked(authserver, clock) as client:
        await client.tools()
        clock.offset = 3545.0  # due, valid for 55 s more
        authserver.token_outage(3, status=502)
        tried: list[int] = []
        for step in (0.0, 1.0, 1.5, 1.0, 3.5, 3.0, 5.5):  # pauses of 2 s, then 4 s, then 8 s
            clock.offset += step
            await client.call_tool("test-tool", {})
            tried.append(len(refreshes(authserver)))
    assert tried == [1, 1, 2, 2, 3, 3, 4]
    assert refreshes(authserver) == [502, 502, 502, 200]


async def test_an_expired_token_whose_refresh_fails_fails_the_call(authserver: RunningAuthServer) -> None:
    authserver.configure(REFRESHING)
    clock = Clock()
    async with clocked(authserver, clock) as client:
        await client.tools()
        clock.offset = 3601.0
        authserver.token_outage(1, status=503)
        with pytest.raises(
            mcpfsm.AuthorizationError, match=r"^refreshing: the token endpoint answered HTTP 503 "
        ):
            await client.call_tool("test-tool", {})
        # The outage is over: the next call refreshes at once (no pause without a valid token to send).
        await client.call_tool("test-tool", {})
    assert refreshes(authserver) == [503, 200]


async def test_two_clients_on_one_store_share_one_refresh(authserver: RunningAuthServer) -> None:
    # Within one process the store's lock excludes too: the second client finds the first one's new tokens
    # stored and sends no request (the cross-process case: tests/integration/test_fleet.py).
    authserver.configure({**REFRESHING, "revoke_on_reuse": True})
    clock = Clock()
    store = mcpfsm.MemoryStore()
    events: list[mcpfsm.CallEvent] = []
    async with (
        clocked(authserver, clock, store=store) as one,
        clocked(authserver, clock, store=store, events=events) as two,
    ):
        await one.call_tool("test-tool", {})
        await two.call_tool("test-tool", {})  # the first one's tokens, from the store
        await two.call_tool("test-tool", {})
        clock.offset = 3550.0
        for _ in range(2):
            await one.call_tool("test-tool", {})
            await two.call_tool("test-tool", {})
    assert authserver.stats() == {
        "token_requests": {"authorization_code": 1, "refresh_token": 1},
        "refresh_reuses": 0,
        "revoked_grants": 0,
    }
    # The second client read the first one's new tokens from the store: no flow, no request of its own.
    assert flow(events) == []
    used = bearers(authserver)
    assert used[-4:] == [used[-1]] * 4 and used[0] != used[-1]


async def test_a_client_whose_loaded_token_expired_takes_a_peers_valid_one_from_the_store(
    authserver: RunningAuthServer,
) -> None:
    # The second client loaded the first login's tokens and has run no flow (no authorization server bound).
    # Long after, its token has expired; the one a peer stored since is due but still valid: it is taken from
    # the store, and nothing is sent to the token endpoint, no 401 drawn.
    authserver.configure({**REFRESHING, "revoke_on_reuse": True})
    clock = Clock()
    store = mcpfsm.MemoryStore()
    events: list[mcpfsm.CallEvent] = []
    async with (
        clocked(authserver, clock, store=store) as one,
        clocked(authserver, clock, store=store, events=events) as two,
    ):
        await one.call_tool("test-tool", {})
        await two.call_tool("test-tool", {})
        clock.offset = 3550.0
        await one.call_tool("test-tool", {})  # refreshes: a token valid until 7150 on this clock, due at 7090
        clock.offset = 7100.0
        authserver.clear_log()
        await two.call_tool("test-tool", {})
    assert [(entry["path"], entry["status"]) for entry in authserver.log()] == [("/mcp", 200)]
    assert flow(events) == []
    assert authserver.stats()["token_requests"] == {"authorization_code": 1, "refresh_token": 1}


async def test_a_401_after_a_peer_replaced_the_token_resends_with_the_peers_token(
    authserver: RunningAuthServer,
) -> None:
    # The server stops accepting the first access token; one client refreshes, the other then draws a 401 with
    # the old token: its flow finds the peer's new tokens in the store, sends no token request (the refresh token
    # it holds is spent: presenting it would revoke the grant) and resends once with the new token.
    authserver.configure({**REFRESHING, "revoke_on_reuse": True})
    clock = Clock()
    store = mcpfsm.MemoryStore()
    events: list[mcpfsm.CallEvent] = []
    async with (
        clocked(authserver, clock, store=store) as one,
        clocked(authserver, clock, store=store, events=events) as two,
    ):
        await one.call_tool("test-tool", {})
        await two.call_tool("test-tool", {})
        authserver.revoke()
        await one.call_tool("test-tool", {})
        authserver.clear_log()
        assert (await two.call_tool("test-tool", {})).text == "test-tool called"
    assert [(entry["method"], entry["path"], entry["status"]) for entry in authserver.log()] == [
        ("POST", "/mcp", 401),
        ("GET", "/.well-known/oauth-protected-resource/mcp", 200),
        ("GET", "/.well-known/oauth-authorization-server", 200),
        ("POST", "/mcp", 200),
    ]
    assert flow(events) == [
        ("starting", None),
        ("discovering_resource", "unauthorized"),
        ("discovering_issuer", "resource_found"),
        ("refreshing", "issuer_kept"),
        ("authorized", "refreshed"),
    ]
    assert authserver.stats() == {
        "token_requests": {"authorization_code": 1, "refresh_token": 1},
        "refresh_reuses": 0,
        "revoked_grants": 0,
    }
