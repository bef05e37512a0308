"""Authorization end to end: the real client against the real test authorization server (tooling.authserver).

One server process for the module; each test starts it afresh with the scenario it needs (``POST /_config``).
Tests assert what the server received, request by request (method, path, status, and whole requests where
a rule is about their content), and the flows' events; random values (ports, states, codes, tokens, client
ids) are matched by shape, never ignored.
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import trio
from loguru import logger

import mcpfsm
from mcpfsm._core.credentials import credential_holder
from tests.conformance.adapter import headless_authorize
from tests.support.ports import reserved_port
from tooling.processes import RunningAuthServer

REDIRECT: Final = "http://localhost:3000/callback"
CIMD: Final = "https://conformance-test.local/client-metadata.json"
NOISE: Final = {"host", "user-agent", "accept-encoding", "connection", "content-length"}


class Like:
    """Equal to any string the regular expression matches in full (random values: states, tokens, ids)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = re.compile(pattern)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and self.pattern.fullmatch(other) is not None

    def __repr__(self) -> str:
        return f"Like({self.pattern.pattern!r})"


B64URL: Final = Like(r"[A-Za-z0-9_-]{20,}")
TOKEN: Final = Like(r"at-[A-Za-z0-9_-]{20,}")
REFRESH: Final = Like(r"rt-[A-Za-z0-9_-]{20,}")
CLIENT: Final = Like(r"client-[0-9a-f]{12}")
JWT: Final = Like(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")


@pytest.fixture
def site(authserver: RunningAuthServer) -> Iterator[Site]:
    yield Site(authserver)


class Site:
    """The test authorization server for one test: configure, read the log, build clients."""

    def __init__(self, authserver: RunningAuthServer) -> None:
        self.server = authserver
        self.base = authserver.base_url
        self.url = authserver.mcp_url

    def configure(self, **scenario: Any) -> Site:
        self.server.configure(scenario)
        return self

    def log(self) -> list[dict[str, Any]]:
        return self.server.log()

    def steps(self) -> list[tuple[str, str, int]]:
        return [(entry["method"], entry["path"], entry["status"]) for entry in self.log()]

    def only(self, method: str, path: str) -> dict[str, Any]:
        found = [e for e in self.log() if (e["method"], e["path"]) == (method, path)]
        assert len(found) == 1, found
        return found[0]

    def client(self, auth: Any, *, events: list[mcpfsm.CallEvent] | None = None, **options: Any) -> mcpfsm.Client:
        on_event = events.append if events is not None else None
        return mcpfsm.Client.http(self.url, auth=auth, on_event=on_event, **options)


def oauth(**options: Any) -> mcpfsm.OAuth:
    return mcpfsm.OAuth(redirect_uri=REDIRECT, authorize=headless_authorize, **options)


def headers_of(entry: dict[str, Any]) -> dict[str, str]:
    return {name: value for name, value in entry["headers"].items() if name not in NOISE}


def flow(events: list[mcpfsm.CallEvent]) -> list[tuple[str, str | None]]:
    return [(e.state, e.trigger) for e in events if e.machine == "authorization"]


async def use(client: mcpfsm.Client) -> str:
    """Connect, list, call test-tool; return the tool's text."""
    async with client:
        tools = await client.tools()
        assert [tool.name for tool in tools] == ["test-tool"]
        return (await client.call_tool("test-tool", {})).text


FULL_FLOW: Final = [
    ("starting", None),
    ("discovering_resource", "unauthorized"),
    ("discovering_issuer", "resource_found"),
    ("registering", "issuer_found"),
    ("authorizing", "identified"),
    ("exchanging", "redirected"),
    ("authorized", "granted"),
]

DISCOVERY: Final = [
    ("POST", "/mcp", 401),
    ("GET", "/.well-known/oauth-protected-resource/mcp", 200),
    ("GET", "/.well-known/oauth-authorization-server", 200),
]
CODE_FLOW: Final = [("GET", "/authorize", 302), ("POST", "/token", 200)]
MCP_MODERN: Final = [("POST", "/mcp", 200), ("POST", "/mcp", 200)]


# --- the whole flow, request by request --------------------------------------------------------------


async def test_the_default_flow_sends_exactly_these_requests(site: Site) -> None:
    site.configure(challenge_scope="mcp:basic", scopes_supported=["mcp:basic", "offline_access"])
    events: list[mcpfsm.CallEvent] = []
    assert await use(site.client(oauth(), events=events, protocol="2026-07-28")) == "test-tool called"
    assert site.steps() == [*DISCOVERY, ("POST", "/register", 201), *CODE_FLOW, *MCP_MODERN]
    log = site.log()
    base = site.base
    first, prm, metadata, register, authorize, token, retried = log[:7]
    assert "authorization" not in first["headers"]
    for metadata_request in (prm, metadata):
        assert headers_of(metadata_request) == {"accept": "application/json"}
    assert headers_of(register) == {"accept": "application/json", "content-type": "application/json"}
    assert register["json"] == {
        "client_name": "mcpfsm",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    }
    assert authorize["query"] == {
        "response_type": "code",
        "client_id": CLIENT,
        "redirect_uri": REDIRECT,
        "scope": "mcp:basic offline_access",
        "state": B64URL,
        "code_challenge": B64URL,
        "code_challenge_method": "S256",
        "resource": f"{base}/mcp",
    }
    assert headers_of(authorize) == {"accept": "*/*"}
    assert headers_of(token) == {"accept": "application/json", "content-type": "application/x-www-form-urlencoded"}
    assert token["form"] == {
        "grant_type": "authorization_code",
        "code": B64URL,
        "redirect_uri": REDIRECT,
        "code_verifier": Like(r"[A-Za-z0-9_-]{86}"),
        "resource": f"{base}/mcp",
        "client_id": authorize["query"]["client_id"],
    }
    # The MCP request is resent unchanged, now with the token.
    assert retried["body"] == first["body"]
    assert headers_of(retried) == {**headers_of(first), "authorization": Like(r"Bearer at-[A-Za-z0-9_-]{20,}")}
    assert all(entry["headers"]["authorization"] == retried["headers"]["authorization"] for entry in log[7:])
    assert flow(events) == FULL_FLOW
    auth_events = [e for e in events if isinstance(e, mcpfsm.AuthEvent)]
    assert [(e.issuer, e.resource, e.scopes) for e in auth_events] == [
        (None, None, ()),
        (None, None, ()),
        (None, f"{base}/mcp", ("mcp:basic",)),
        (base, f"{base}/mcp", ("mcp:basic",)),
        (base, f"{base}/mcp", ("mcp:basic", "offline_access")),
        (base, f"{base}/mcp", ("mcp:basic", "offline_access")),
        (base, f"{base}/mcp", ("mcp:basic", "offline_access")),
    ]
    assert {(e.call_id, e.attempt, e.tool, e.headers, e.error) for e in auth_events} == {
        (auth_events[0].call_id, 1, "", None, None)
    }
    assert [e.seq for e in auth_events] == list(range(7))


async def test_a_legacy_server_is_authorized_at_initialize_and_the_token_reaches_delete(site: Site) -> None:
    site.configure(sessions=True)
    events: list[mcpfsm.CallEvent] = []
    assert await use(site.client(oauth(), events=events, protocol="2025-11-25")) == "test-tool called"
    log = site.log()
    assert site.steps() == [
        ("POST", "/mcp", 401),
        ("GET", "/.well-known/oauth-protected-resource/mcp", 200),
        ("GET", "/.well-known/oauth-authorization-server", 200),
        ("POST", "/register", 201),
        *CODE_FLOW,
        ("POST", "/mcp", 200),
        ("POST", "/mcp", 202),
        ("GET", "/mcp", 405),  # the standalone stream: the server offers none
        ("POST", "/mcp", 200),
        ("POST", "/mcp", 200),
        ("DELETE", "/mcp", 204),
    ]
    assert [json.loads(e["body"])["method"] for e in log if e["method"] == "POST" and e["path"] == "/mcp"] == [
        "initialize",
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
    ]
    token = log[6]["headers"]["authorization"]
    assert [e["headers"].get("authorization") for e in log if e["path"] == "/mcp"] == [None] + [token] * 6
    assert headers_of(log[-1]) == {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2025-11-25",
        "mcp-session-id": "session-1",
        "authorization": token,
    }
    assert flow(events) == FULL_FLOW


async def test_the_token_never_goes_to_the_authorization_side(site: Site) -> None:
    site.configure(refresh_tokens=True, scopes_supported=["offline_access"], challenge_scope="a", step_up_scope="b")
    async with site.client(oauth(), protocol="2026-07-28") as client:
        await client.call_tool("test-tool", {})
        # A 401 with the token held: rediscovery (the issuer may have changed, SEP-2352) and a refresh at the same
        # issuer (RFC 6749 §6).
        site.server.revoke()
        await client.tools()
    paths = [entry["path"] for entry in site.log()]
    assert paths.count("/token") == 3 and paths.count("/authorize") == 2
    for entry in site.log():
        if entry["path"] != "/mcp":
            assert not entry["headers"].get("authorization", "").startswith(("Bearer", "DPoP")), entry


# --- discovery ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "discovery"),
    [
        pytest.param(
            {"prm_in_challenge": False, "metadata_at": ["oidc"]},
            [
                ("GET", "/.well-known/oauth-protected-resource/mcp", 200),
                ("GET", "/.well-known/oauth-authorization-server", 404),
                ("GET", "/.well-known/openid-configuration", 200),
            ],
            id="var1-oidc-at-the-root",
        ),
        pytest.param(
            {"prm_at": "root", "prm_in_challenge": False, "prm_resource": "origin", "issuer_path": "/tenant1"},
            [
                ("GET", "/.well-known/oauth-protected-resource/mcp", 404),
                ("GET", "/.well-known/oauth-protected-resource", 200),
                ("GET", "/.well-known/oauth-authorization-server/tenant1", 200),
            ],
            id="var2-root-prm-path-issuer",
        ),
        pytest.param(
            {"prm_at": "custom", "issuer_path": "/tenant1", "metadata_at": ["oidc-suffix"]},
            [
                ("GET", "/custom/metadata/location.json", 200),
                ("GET", "/.well-known/oauth-authorization-server/tenant1", 404),
                ("GET", "/.well-known/openid-configuration/tenant1", 404),
                ("GET", "/tenant1/.well-known/openid-configuration", 200),
            ],
            id="var3-challenge-url-oidc-suffix",
        ),
    ],
)
async def test_discovery_tries_the_candidates_in_order(
    site: Site, scenario: dict[str, Any], discovery: list[tuple[str, str, int]]
) -> None:
    site.configure(**scenario)
    assert await use(site.client(oauth(), protocol="2026-07-28")) == "test-tool called"
    prefix = scenario.get("issuer_path", "")
    assert site.steps() == [
        ("POST", "/mcp", 401),
        *discovery,
        ("POST", f"{prefix}/register", 201),
        ("GET", f"{prefix}/authorize", 302),
        ("POST", f"{prefix}/token", 200),
        *MCP_MODERN,
    ]
    resource = site.base if scenario.get("prm_resource") == "origin" else f"{site.base}/mcp"
    # RFC 8707: the PRM resource, byte for byte, in the authorization request and the code exchange.
    assert site.only("GET", f"{prefix}/authorize")["query"]["resource"] == resource
    assert site.only("POST", f"{prefix}/token")["form"]["resource"] == resource


@pytest.mark.parametrize(
    ("scenario", "scope"),
    [
        pytest.param({"challenge_scope": "mcp:basic", "prm_scopes_supported": ["x"]}, "mcp:basic", id="challenge"),
        pytest.param({"prm_scopes_supported": ["mcp:basic", "mcp:read"]}, "mcp:basic mcp:read", id="prm"),
        pytest.param({"scopes_supported": ["as:only"]}, None, id="omitted-never-the-as-list"),
        pytest.param(
            {"challenge_scope": "a", "scopes_supported": ["a", "offline_access"]}, "a offline_access", id="offline"
        ),
        pytest.param({"scopes_supported": ["offline_access"]}, None, id="no-offline-access-alone"),
    ],
)
async def test_scope_selection(site: Site, scenario: dict[str, Any], scope: str | None) -> None:
    site.configure(**scenario)
    await use(site.client(oauth(), protocol="2026-07-28"))
    assert site.only("GET", "/authorize")["query"].get("scope") == scope


async def test_a_configured_scope_replaces_the_servers_choice_and_offline_access_can_be_declined(site: Site) -> None:
    site.configure(challenge_scope="mcp:basic", scopes_supported=["mine", "offline_access"])
    await use(site.client(oauth(scope="mine other", offline_access=False), protocol="2026-07-28"))
    assert site.only("GET", "/authorize")["query"]["scope"] == "mine other"


# --- client identification ---------------------------------------------------------------------------


async def test_a_client_id_metadata_document_url_is_the_client_id_where_supported(site: Site) -> None:
    site.configure(cimd=True)
    await use(site.client(oauth(client_metadata_url=CIMD), protocol="2026-07-28"))
    assert ("POST", "/register", 201) not in site.steps()
    assert site.only("GET", "/authorize")["query"]["client_id"] == CIMD
    assert site.only("POST", "/token")["form"]["client_id"] == CIMD


@pytest.mark.parametrize(
    ("method", "authorization", "form_secret"),
    [
        pytest.param("client_secret_basic", Like(r"Basic [A-Za-z0-9+/=]+"), False, id="basic"),
        pytest.param("client_secret_post", None, True, id="post"),
        pytest.param("none", None, False, id="none"),
    ],
)
async def test_token_endpoint_authentication_follows_the_registration(
    site: Site, method: str, authorization: Like | None, form_secret: bool
) -> None:
    site.configure(token_endpoint_auth_methods_supported=[method])
    await use(site.client(oauth(), protocol="2026-07-28"))
    register = site.only("POST", "/register")
    token = site.only("POST", "/token")
    assert register["json"]["token_endpoint_auth_method"] == method
    assert token["headers"].get("authorization") == authorization
    assert ("client_secret" in token["form"]) is form_secret
    assert ("client_id" in token["form"]) is (method != "client_secret_basic")


async def test_pre_registered_credentials_go_to_their_issuer_only(site: Site) -> None:
    credentials = {"client_id": "pre-client", "client_secret": "pre-secret"}
    site.configure(
        registration=False, token_endpoint_auth_methods_supported=["client_secret_basic"], pre_registered=credentials
    )
    auth = oauth(client_id="pre-client", client_secret="pre-secret", client_issuer=site.base)
    await use(site.client(auth, protocol="2026-07-28"))
    assert site.only("GET", "/authorize")["query"]["client_id"] == "pre-client"
    token = site.only("POST", "/token")
    assert token["headers"]["authorization"] == "Basic cHJlLWNsaWVudDpwcmUtc2VjcmV0"
    assert "client_secret" not in token["form"] and "client_id" not in token["form"]

    site.configure(registration=False, pre_registered=credentials)
    other = oauth(client_id="pre-client", client_secret="pre-secret", client_issuer="https://other.example")
    with pytest.raises(
        mcpfsm.AuthorizationError,
        match=rf"^registering: the pre-registered credentials belong to \['https://other.example'\], not to"
        rf" '{re.escape(site.base)}'$",
    ):
        await use(site.client(other, protocol="2026-07-28"))
    assert site.steps() == DISCOVERY


# --- refusals: each stops before the next server is contacted ----------------------------------------


@pytest.mark.parametrize(
    ("scenario", "steps", "message"),
    [
        pytest.param(
            {"prm_resource": "https://evil.example.com/mcp"},
            DISCOVERY[:2],
            r"^discovering_resource: the protected resource metadata names resource 'https://evil.example.com/mcp',"
            r" not this server '.*/mcp'$",
            id="resource-mismatch",
        ),
        pytest.param(
            {"metadata_issuer": "https://attacker.example.com"},
            DISCOVERY,
            r"^discovering_issuer: the metadata issuer 'https://attacker.example.com' is not the expected issuer"
            r" '.*'$",
            id="metadata-issuer-mismatch",
        ),
        pytest.param(
            {"iss_mode": "omit"},
            [*DISCOVERY, ("POST", "/register", 201), ("GET", "/authorize", 302)],
            r"^authorizing: the redirect has no iss though '.*' advertises"
            r" authorization_response_iss_parameter_supported$",
            id="iss-missing",
        ),
        pytest.param(
            {"iss_mode": "wrong"},
            [*DISCOVERY, ("POST", "/register", 201), ("GET", "/authorize", 302)],
            r"^authorizing: the redirect's iss 'https://evil.example.com' is not the issuer '.*'$",
            id="iss-wrong",
        ),
        pytest.param(
            {"iss_mode": "wrong", "iss_supported": False},
            [*DISCOVERY, ("POST", "/register", 201), ("GET", "/authorize", 302)],
            r"^authorizing: the redirect's iss 'https://evil.example.com' is not the issuer '.*'$",
            id="iss-unexpected",
        ),
        pytest.param(
            {"iss_mode": "slash"},
            [*DISCOVERY, ("POST", "/register", 201), ("GET", "/authorize", 302)],
            r"^authorizing: the redirect's iss 'http://127.0.0.1:\d+/' is not the issuer 'http://127.0.0.1:\d+'$",
            id="iss-not-normalised",
        ),
        pytest.param(
            {"prm_at": "none", "prm_in_challenge": False},
            [
                ("POST", "/mcp", 401),
                ("GET", "/.well-known/oauth-protected-resource/mcp", 404),
                ("GET", "/.well-known/oauth-protected-resource", 404),
            ],
            r"^discovering_resource: no usable protected resource metadata at .*; MCP 2026-07-28 requires it$",
            id="pinned-2026-needs-prm",
        ),
    ],
)
async def test_refusals(site: Site, scenario: dict[str, Any], steps: list[tuple[str, str, int]], message: str) -> None:
    site.configure(**scenario)
    events: list[mcpfsm.CallEvent] = []
    with pytest.raises(mcpfsm.AuthorizationError, match=message) as caught:
        await use(site.client(oauth(), events=events, protocol="2026-07-28"))
    assert site.steps() == steps
    assert flow(events)[-1] == ("failed", "refused")
    assert events[-1].error == {"type": "AuthorizationError", "code": None, "message": str(caught.value)}


async def test_iss_absent_and_not_advertised_proceeds(site: Site) -> None:
    site.configure(iss_mode="omit", iss_supported=False)
    assert await use(site.client(oauth(), protocol="2026-07-28")) == "test-tool called"


async def test_the_2025_03_26_paths(site: Site) -> None:
    site.configure(legacy="metadata")
    assert await use(site.client(oauth(), protocol="2025-03-26")) == "test-tool called"
    assert site.steps()[:7] == [
        ("POST", "/mcp", 401),
        ("GET", "/.well-known/oauth-protected-resource/mcp", 404),
        ("GET", "/.well-known/oauth-protected-resource", 404),
        ("GET", "/.well-known/oauth-authorization-server", 200),
        ("POST", "/oauth/register", 201),
        ("GET", "/oauth/authorize", 302),
        ("POST", "/oauth/token", 200),
    ]
    assert site.only("GET", "/.well-known/oauth-authorization-server")["headers"]["mcp-protocol-version"] == (
        "2025-03-26"
    )
    assert "resource" not in site.only("GET", "/oauth/authorize")["query"]
    site.configure(legacy="defaults")
    assert await use(site.client(oauth(), protocol="2025-03-26")) == "test-tool called"
    assert site.steps()[3:7] == [
        ("GET", "/.well-known/oauth-authorization-server", 404),
        ("POST", "/register", 201),
        ("GET", "/authorize", 302),
        ("POST", "/token", 200),
    ]


# --- step-up, retry limits, migration, refresh ---------------------------------------------------------


async def test_step_up_requests_the_union_and_resends_the_call(site: Site) -> None:
    site.configure(challenge_scope="mcp:basic", step_up_scope="mcp:write")
    events: list[mcpfsm.CallEvent] = []
    assert await use(site.client(oauth(), events=events, protocol="2026-07-28")) == "test-tool called"
    authorizations = [e["query"]["scope"] for e in site.log() if e["path"] == "/authorize"]
    assert authorizations == ["mcp:basic", "mcp:basic mcp:write"]
    calls = [e for e in site.log() if e["path"] == "/mcp" and json.loads(e["body"])["method"] == "tools/call"]
    assert [e["status"] for e in calls] == [403, 200]
    assert calls[0]["body"] == calls[1]["body"]
    assert flow(events)[7:] == [
        ("starting", None),
        ("authorizing", "insufficient_scope"),
        ("exchanging", "redirected"),
        ("authorized", "granted"),
    ]
    step_up = [e for e in events if isinstance(e, mcpfsm.AuthEvent)][7:]
    assert {(e.tool, e.attempt) for e in step_up} == {("test-tool", 1)}


async def test_a_scope_that_never_suffices_costs_two_authorizations_then_none(site: Site) -> None:
    site.configure(forbid_scope="mcp:admin", forbid_limit=10, challenge_scope="mcp:admin")
    events: list[mcpfsm.CallEvent] = []
    client = site.client(oauth(), events=events, protocol="2026-07-28")
    async with client:
        message = r"^starting: the MCP server answered HTTP 403 to the request resent after authorization$"
        with pytest.raises(mcpfsm.AuthorizationError, match=message):
            await client.tools()
        with pytest.raises(
            mcpfsm.AuthorizationError,
            match=r"^starting: HTTP 403 insufficient_scope for 'mcp:admin' again, after a step-up with it already"
            r" failed on this connection$",
        ):
            await client.tools()
    assert [e["path"] for e in site.log()].count("/authorize") == 2
    assert flow(events)[-4:] == [
        ("starting", None),
        ("failed", "challenged_again"),
        ("starting", None),
        ("failed", "already_stepped_up"),
    ]


async def test_migration_to_another_authorization_server_registers_anew(site: Site) -> None:
    site.configure(migrate_after=1)
    async with site.client(oauth(), protocol="2026-07-28") as client:
        await client.tools()
        assert (await client.call_tool("test-tool", {})).text == "test-tool called"
    steps = site.steps()
    assert steps[7:] == [
        ("POST", "/mcp", 401),
        ("GET", "/.well-known/oauth-protected-resource/mcp", 200),
        ("GET", "/.well-known/oauth-authorization-server/as2", 200),
        ("POST", "/as2/register", 201),
        ("GET", "/as2/authorize", 302),
        ("POST", "/as2/token", 200),
        ("POST", "/mcp", 200),
    ]
    first_client = site.only("GET", "/authorize")["query"]["client_id"]
    assert site.only("GET", "/as2/authorize")["query"]["client_id"] != first_client
    assert site.only("POST", "/as2/token")["form"]["client_id"] != first_client


async def test_a_401_with_a_refresh_token_held_refreshes_at_the_same_issuer(site: Site) -> None:
    site.configure(refresh_tokens=True, scopes_supported=["offline_access"], challenge_scope="a")
    events: list[mcpfsm.CallEvent] = []
    async with site.client(oauth(), events=events, protocol="2026-07-28") as client:
        await client.tools()
        site.server.clear_log()
        site.server.revoke()
        await client.tools()
        # Now the refresh tokens die too: the refresh is refused and the user logs in again.
        site.server.revoke(refresh_tokens=True)
        await client.tools()
    again = [*DISCOVERY, ("POST", "/token", 200), ("POST", "/mcp", 200)]
    # The registration of the first login is reused (registrations are kept per issuer).
    assert site.steps() == [*again, *DISCOVERY, ("POST", "/token", 400), *CODE_FLOW, ("POST", "/mcp", 200)]
    refresh = [
        ("starting", None),
        ("discovering_resource", "unauthorized"),
        ("discovering_issuer", "resource_found"),
        ("refreshing", "issuer_kept"),
    ]
    assert flow(events)[7:] == [
        *refresh,
        ("authorized", "refreshed"),
        *refresh,
        ("registering", "refresh_refused"),
        ("authorizing", "identified"),
        ("exchanging", "redirected"),
        ("authorized", "granted"),
    ]


# --- single flight, cancellation, stores ---------------------------------------------------------------


async def test_concurrent_requests_share_one_flow(site: Site) -> None:
    site.configure()
    events: list[mcpfsm.CallEvent] = []
    results: list[str] = []
    async with site.client(oauth(), events=events, protocol="2026-07-28") as client:

        async def call() -> None:
            results.append((await client.call_tool("test-tool", {})).text)

        async with trio.open_nursery() as nursery:
            for _ in range(5):
                nursery.start_soon(call)
    assert results == ["test-tool called"] * 5
    assert [e["path"] for e in site.log()].count("/authorize") == 1
    assert flow(events) == FULL_FLOW


async def test_a_cancelled_flow_ends_cancelled_and_the_next_request_starts_afresh(site: Site) -> None:
    site.configure()
    events: list[mcpfsm.CallEvent] = []
    arrived = trio.Event()
    stuck = True

    async def authorize(url: str) -> str:
        if stuck:
            arrived.set()
            await trio.sleep_forever()
        return await headless_authorize(url)

    async with site.client(
        oauth().__class__(redirect_uri=REDIRECT, authorize=authorize), events=events, protocol="2026-07-28"
    ) as client:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.tools)
            await arrived.wait()
            nursery.cancel_scope.cancel()
        assert flow(events)[-1] == ("cancelled", "cancelled")
        assert events[-1].error == {"type": "Cancelled", "code": None, "message": "the flow was cancelled"}
        stuck = False
        assert [tool.name for tool in await client.tools()] == ["test-tool"]
    # The registration finished before the cancellation, so it is reused (specs/authorization.md, "Cancelled
    # while the user logs in").
    assert [e["path"] for e in site.log()].count("/register") == 1


async def test_a_file_store_keeps_tokens_for_the_next_client(site: Site, tmp_path: Path) -> None:
    site.configure()
    path = tmp_path / "config" / "tokens.json"
    assert await use(site.client(oauth(store=mcpfsm.FileTokenStore(path)), protocol="2026-07-28"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    stored = json.loads(path.read_text())
    holder = credential_holder(oauth())
    tokens = f"tokens {site.base} {site.url} {holder}"
    assert sorted(stored) == [f"binding {site.url} {holder}", f"registration {site.base} {holder}", tokens]
    assert stored[tokens] == {
        "access_token": TOKEN,
        "token_type": "Bearer",
        "refresh_token": None,
        "expires_at": stored[tokens]["expires_at"],
        "issued_at": pytest.approx(stored[tokens]["expires_at"] - 3600, abs=1e-3),
        "scopes": [],
        "issuer": site.base,
        "resource": site.url,
    }
    before = len(site.log())
    events: list[mcpfsm.CallEvent] = []
    assert await use(site.client(oauth(store=mcpfsm.FileTokenStore(path)), events=events, protocol="2026-07-28"))
    assert site.steps()[before:] == MCP_MODERN
    assert flow(events) == []
    # No temporary file is left behind; the lock file that serialises writers across processes stays.
    assert sorted(os.listdir(path.parent)) == ["tokens.json", "tokens.json.lock"]


# --- headless grants ---------------------------------------------------------------------------------


def _keypair() -> tuple[str, str]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


HEADLESS: Final = [
    ("starting", None),
    ("discovering_resource", "unauthorized"),
    ("discovering_issuer", "resource_found"),
    ("registering", "issuer_found"),
    ("exchanging", "identified_headless"),
    ("authorized", "granted"),
]


async def test_client_credentials_with_a_secret(site: Site) -> None:
    site.configure(client_credentials={"client_id": "agent", "client_secret": "s3cret"}, prm_scopes_supported=["x"])
    events: list[mcpfsm.CallEvent] = []
    auth = mcpfsm.ClientCredentials("agent", client_secret="s3cret")
    assert await use(site.client(auth, events=events, protocol="2026-07-28")) == "test-tool called"
    assert site.steps() == [*DISCOVERY, ("POST", "/token", 200), *MCP_MODERN]
    token = site.only("POST", "/token")
    assert token["headers"]["authorization"] == "Basic YWdlbnQ6czNjcmV0"
    assert token["form"] == {"grant_type": "client_credentials", "resource": site.url, "scope": "x"}
    assert flow(events) == HEADLESS


async def test_client_credentials_with_a_private_key_sign_a_fresh_assertion(site: Site) -> None:
    import jwt as pyjwt

    private, public = _keypair()
    site.configure(client_credentials={"client_id": "agent", "public_key_pem": public})
    auth = mcpfsm.ClientCredentials("agent", private_key_pem=private)
    async with site.client(auth, protocol="2026-07-28") as client:
        await client.tools()
        site.server.revoke()
        await client.tools()
    tokens = [e for e in site.log() if e["path"] == "/token"]
    assert [e["status"] for e in tokens] == [200, 200]
    assert [e["form"] for e in tokens] == [
        {
            "grant_type": "client_credentials",
            "resource": site.url,
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": JWT,
        }
    ] * 2
    assert ["authorization" in e["headers"] for e in tokens] == [False, False]
    claims = [pyjwt.decode(e["form"]["client_assertion"], options={"verify_signature": False}) for e in tokens]
    assert [(c["iss"], c["sub"], c["aud"], c["exp"] - c["iat"]) for c in claims] == [
        ("agent", "agent", site.base, 300)
    ] * 2
    assert claims[0]["jti"] != claims[1]["jti"]


async def test_a_workload_jwt_is_presented_with_the_jwt_bearer_grant(site: Site) -> None:
    import jwt as pyjwt

    private, public = _keypair()
    issuer = "https://workload.example"
    site.configure(jwt_bearer={"client_id": "workload", "issuer": issuer, "public_key_pem": public})
    calls = 0

    async def assertion() -> str:
        nonlocal calls
        calls += 1
        claims = {"iss": issuer, "sub": "w", "aud": site.base, "exp": int(trio.current_time()) + 10**10}
        return pyjwt.encode(claims, private, algorithm="ES256")

    assert await use(site.client(mcpfsm.JwtBearer("workload", assertion), protocol="2026-07-28"))
    assert calls == 1
    assert site.only("POST", "/token")["form"] == {
        "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
        "assertion": JWT,
        "resource": site.url,
        "client_id": "workload",
    }


async def test_enterprise_managed_exchanges_the_id_token_first(site: Site) -> None:
    site.configure(
        idp={"client_id": "idp-client", "id_token": "the-id-token"},
        pre_registered={"client_id": "pre-client", "client_secret": "pre-secret"},
        token_endpoint_auth_methods_supported=["client_secret_basic"],
    )
    events: list[mcpfsm.CallEvent] = []
    auth = mcpfsm.EnterpriseManaged("pre-client", "pre-secret", "idp-client", "the-id-token", f"{site.base}/idp/token")
    assert await use(site.client(auth, events=events, protocol="2026-07-28"))
    assert site.steps()[3:5] == [("POST", "/idp/token", 200), ("POST", "/token", 200)]
    assert site.only("POST", "/idp/token")["form"] == {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "audience": site.base,
        "resource": site.url,
        "subject_token": "the-id-token",
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "client_id": "idp-client",
    }
    assert site.only("POST", "/token")["form"] == {
        "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
        "assertion": JWT,
        "resource": site.url,
    }
    assert flow(events)[3:] == [
        ("registering", "issuer_found"),
        ("asserting", "identified_enterprise"),
        ("exchanging", "asserted"),
        ("authorized", "granted"),
    ]


# --- DPoP --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("nonces", [False, True], ids=["plain", "nonces"])
async def test_dpop_proofs_on_the_token_request_and_every_mcp_request(site: Site, nonces: bool) -> None:
    import jwt as pyjwt

    site.configure(dpop=True, dpop_required=True, dpop_nonce_as=nonces, dpop_nonce_resource=nonces)
    assert await use(site.client(oauth(dpop=True), protocol="2026-07-28")) == "test-tool called"
    statuses = [(e["path"], e["status"]) for e in site.log() if e["path"] in ("/token", "/mcp")]
    if nonces:
        assert statuses == [
            ("/mcp", 401),
            ("/token", 400),
            ("/token", 200),
            ("/mcp", 401),
            ("/mcp", 200),
            ("/mcp", 200),
        ]
    else:
        assert statuses == [("/mcp", 401), ("/token", 200), ("/mcp", 200), ("/mcp", 200)]
    proofs = [e for e in site.log() if "dpop" in e["headers"]]
    jtis = []
    for entry in proofs:
        header = pyjwt.get_unverified_header(entry["headers"]["dpop"])
        claims = pyjwt.decode(entry["headers"]["dpop"], options={"verify_signature": False})
        assert (header["typ"], header["alg"], sorted(header["jwk"])) == ("dpop+jwt", "ES256", ["crv", "kty", "x", "y"])
        assert claims["htm"] == entry["method"] and claims["htu"] == site.base + entry["path"]
        assert ("ath" in claims) is (entry["path"] == "/mcp")
        jtis.append(claims["jti"])
    assert len(set(jtis)) == len(jtis) == len(proofs)
    for entry in site.log():
        if entry["path"] == "/mcp" and entry["status"] == 200:
            assert entry["headers"]["authorization"].startswith("DPoP ")


# --- the token never leaks ---------------------------------------------------------------------------


async def test_no_secret_reaches_a_log_line_an_event_a_repr_or_an_error(site: Site) -> None:
    site.configure(
        pre_registered={"client_id": "pre-client", "client_secret": "pre-secret-value"},
        registration=False,
        token_endpoint_auth_methods_supported=["client_secret_basic"],
        refresh_tokens=True,
        scopes_supported=["offline_access"],
        challenge_scope="a",
        step_up_scope="b",
    )
    lines: list[str] = []
    logger.enable("mcpfsm")
    sink = logger.add(lambda message: lines.append(str(message)), level="DEBUG")
    events: list[mcpfsm.CallEvent] = []
    auth = oauth(client_id="pre-client", client_secret="pre-secret-value", client_issuer=site.base)
    try:
        async with site.client(auth, events=events, protocol="2026-07-28") as client:
            await client.call_tool("test-tool", {})
            # The parts behind the client (the authorization layer, its binding and tokens) are built in
            # tests/client/test_assembly.py, which checks their reprs.
            text = repr(client) + repr(auth)
    finally:
        logger.remove(sink)
        logger.disable("mcpfsm")
    secrets = {"pre-secret-value"} | sent_secrets(site)
    assert len(secrets) > 8
    published = "\n".join(lines) + "\n".join(e.to_json() for e in events) + text
    assert [secret for secret in secrets if secret in published] == []


def sent_secrets(site: Site, redirects: Sequence[str] = ()) -> set[str]:
    """Every secret the server saw (and every code and state it redirected with): what must never be published."""
    found: set[str] = set()
    for entry in site.log():
        found |= {entry["query"].get(name) for name in ("state", "code_challenge")} - {None}
        form = entry["form"] or {}
        names = ("code", "code_verifier", "refresh_token", "client_secret", "client_assertion", "assertion")
        found |= {form.get(name) for name in (*names, "subject_token")} - {None}
        for header in ("authorization", "dpop"):
            if header in entry["headers"]:
                found.add(entry["headers"][header].split()[-1])
    for redirect in redirects:
        query = parse_qs(urlsplit(redirect).query)
        found |= {value for name in ("code", "state") for value in query.get(name, ())}
    return found


def recording(redirects: list[str], *, fails: bool = False) -> Any:
    """The headless user agent, keeping each redirect URL; with ``fails`` it raises with that URL in its message."""

    async def authorize(url: str) -> str:
        location = await headless_authorize(url)
        redirects.append(location)
        if fails:
            raise RuntimeError(f"the browser gave up at {location}")
        return location

    return authorize


PRE: Final = {"client_id": "pre-client", "client_secret": "pre-secret-value"}
PRE_SCENARIO: Final = {
    "pre_registered": PRE,
    "registration": False,
    "token_endpoint_auth_methods_supported": ["client_secret_basic"],
}


def _pre(redirects: list[str], *, secret: str = "pre-secret-value", fails: bool = False) -> Any:
    return lambda base: mcpfsm.OAuth(
        redirect_uri=REDIRECT,
        authorize=recording(redirects, fails=fails),
        client_id="pre-client",
        client_secret=secret,
        client_issuer=base,
    )


def _signed(private: str, issuer: str, audience: str) -> str:
    import jwt as pyjwt

    claims = {"iss": issuer, "sub": "w", "aud": audience, "exp": 4_000_000_000}
    return pyjwt.encode(claims, private, algorithm="ES256")


_, PUBLIC_A = _keypair()
PRIVATE_B, _ = _keypair()

FAILING_FLOWS: Final = {
    # id: (scenario, auth(base, redirects), the secrets given to the client, the failure's state and reason)
    "token-refused": (
        PRE_SCENARIO,
        lambda base, r: _pre(r, secret="wrong-secret-value")(base),
        {"wrong-secret-value"},
        r"^exchanging: the token endpoint answered HTTP 401 \(error='invalid_client', error_description='wrong"
        r" client secret'\)$",
    ),
    "iss-wrong": (
        {**PRE_SCENARIO, "iss_mode": "wrong"},
        lambda base, r: _pre(r)(base),
        {"pre-secret-value"},
        r"^authorizing: the redirect's iss 'https://evil.example.com' is not the issuer '.*'$",
    ),
    "iss-missing": (
        {**PRE_SCENARIO, "iss_mode": "omit"},
        lambda base, r: _pre(r)(base),
        {"pre-secret-value"},
        r"^authorizing: the redirect has no iss though '.*' advertises authorization_response_iss_parameter_supported$",
    ),
    "authorize-raises": (
        PRE_SCENARIO,
        lambda base, r: _pre(r, fails=True)(base),
        {"pre-secret-value"},
        r"^authorizing: authorize raised RuntimeError$",
    ),
    "token-no-header-can-carry": (
        {**PRE_SCENARIO, "token_suffix": "\u00e9-TOKEN-SUFFIX"},
        lambda base, r: _pre(r)(base),
        {"pre-secret-value", "TOKEN-SUFFIX"},
        r"^exchanging: the token endpoint's access_token holds characters other than visible ASCII, which no"
        r" Authorization header can carry \(RFC 6750 §2\.1\)$",
    ),
    "scope-never-suffices": (
        {**PRE_SCENARIO, "forbid_scope": "mcp:admin", "forbid_limit": 10},
        lambda base, r: _pre(r)(base),
        {"pre-secret-value"},
        r"^starting: the MCP server answered HTTP 403 to the request resent after authorization$",
    ),
    "resource-mismatch": (
        {**PRE_SCENARIO, "prm_resource": "https://evil.example.com/mcp"},
        lambda base, r: _pre(r)(base),
        {"pre-secret-value"},
        r"^discovering_resource: the protected resource metadata names resource 'https://evil.example.com/mcp',"
        r" not this server '.*/mcp'$",
    ),
    "metadata-issuer-mismatch": (
        {**PRE_SCENARIO, "metadata_issuer": "https://attacker.example.com"},
        lambda base, r: _pre(r)(base),
        {"pre-secret-value"},
        r"^discovering_issuer: the metadata issuer 'https://attacker.example.com' is not the expected issuer '.*'$",
    ),
    "client-credentials-refused": (
        {"client_credentials": {"client_id": "agent", "client_secret": "cc-secret-right"}},
        lambda base, r: mcpfsm.ClientCredentials("agent", client_secret="cc-secret-wrong"),
        {"cc-secret-wrong", "cc-secret-right"},
        r"^exchanging: the token endpoint answered HTTP 401 \(error='invalid_client', error_description='wrong"
        r" client secret'\)$",
    ),
    "jwt-bearer-refused": (
        {"jwt_bearer": {"client_id": "workload", "issuer": "https://workload.example", "public_key_pem": PUBLIC_A}},
        lambda base, r: mcpfsm.JwtBearer("workload", _signed(PRIVATE_B, "https://workload.example", base)),
        set(),
        r"^exchanging: the token endpoint answered HTTP 400 \(error='invalid_grant', error_description='assertion"
        r" rejected: Signature verification failed'\)$",
    ),
    "enterprise-idp-refused": (
        {**PRE_SCENARIO, "idp": {"client_id": "idp-client", "id_token": "the-right-id-token"}},
        lambda base, r: mcpfsm.EnterpriseManaged(
            "pre-client", "pre-secret-value", "idp-client", "a-wrong-id-token", f"{base}/idp/token"
        ),
        {"pre-secret-value", "a-wrong-id-token", "the-right-id-token"},
        r"^asserting: the token exchange endpoint answered HTTP 400 \(error='invalid_grant',"
        r" error_description='unknown ID token'\)$",
    ),
    # A careless server quotes what it was sent in its error_description: the held secrets are redacted.
    "token-refused-echoing": (
        {**PRE_SCENARIO, "echo_secrets": True},
        lambda base, r: _pre(r, secret="wrong secret/&value")(base),
        {"wrong secret/&value"},
        r"^exchanging: the token endpoint answered HTTP 401 \(error='invalid_client', error_description='wrong"
        r" client secret; received code=\[redacted\] \(\[redacted\]\), code_verifier=\[redacted\] \(\[redacted\]\),"
        r" client_secret=\[redacted\] \(\[redacted\]\), authorization=\[redacted\] \(\[redacted\]\)'\)$",
    ),
    "client-credentials-refused-echoing": (
        {"client_credentials": {"client_id": "agent", "client_secret": "cc-secret-right"}, "echo_secrets": True},
        lambda base, r: mcpfsm.ClientCredentials("agent", client_secret="cc-secret-wrong"),
        {"cc-secret-wrong", "cc-secret-right"},
        r"^exchanging: the token endpoint answered HTTP 401 \(error='invalid_client', error_description='wrong"
        r" client secret; received client_secret=\[redacted\] \(\[redacted\]\), authorization=\[redacted\]"
        r" \(\[redacted\]\)'\)$",
    ),
    "jwt-bearer-refused-echoing": (
        {
            "jwt_bearer": {"client_id": "workload", "issuer": "https://workload.example", "public_key_pem": PUBLIC_A},
            "echo_secrets": True,
        },
        lambda base, r: mcpfsm.JwtBearer("workload", _signed(PRIVATE_B, "https://workload.example", base)),
        set(),
        r"^exchanging: the token endpoint answered HTTP 400 \(error='invalid_grant', error_description='assertion"
        r" rejected: Signature verification failed; received assertion=\[redacted\] \(\[redacted\]\)'\)$",
    ),
    "enterprise-idp-refused-echoing": (
        {**PRE_SCENARIO, "idp": {"client_id": "idp-client", "id_token": "the-right-id-token"}, "echo_secrets": True},
        lambda base, r: mcpfsm.EnterpriseManaged(
            "pre-client", "pre-secret-value", "idp-client", "a-wrong-id-token", f"{base}/idp/token"
        ),
        {"pre-secret-value", "a-wrong-id-token", "the-right-id-token"},
        r"^asserting: the token exchange endpoint answered HTTP 400 \(error='invalid_grant',"
        r" error_description='unknown ID token; received subject_token=\[redacted\] \(\[redacted\]\)'\)$",
    ),
}


@pytest.mark.parametrize(("scenario", "auth", "given", "message"), FAILING_FLOWS.values(), ids=FAILING_FLOWS.keys())
async def test_no_secret_reaches_a_log_line_an_event_a_repr_or_an_error_when_a_flow_fails(
    site: Site, scenario: dict[str, Any], auth: Any, given: set[str], message: str
) -> None:
    site.configure(**scenario)
    redirects: list[str] = []
    credential = auth(site.base, redirects)
    lines: list[str] = []
    logger.enable("mcpfsm")
    sink = logger.add(lambda line: lines.append(str(line)), level="DEBUG")
    events: list[mcpfsm.CallEvent] = []
    client = site.client(credential, events=events, protocol="2026-07-28")
    try:
        with pytest.raises(mcpfsm.AuthorizationError, match=message) as caught:
            async with client:
                await client.call_tool("test-tool", {})
    finally:
        logger.remove(sink)
        logger.disable("mcpfsm")
    error = caught.value
    text = repr(client) + repr(credential)  # the layer's repr: tests/client/test_assembly.py
    text += repr(error) + repr(error.args) + f"{error.reason} {error.error_description}"
    secrets = given | sent_secrets(site, redirects)
    published = "\n".join(lines) + "\n".join(e.to_json() for e in events) + text
    assert [secret for secret in secrets if secret in published] == []
    assert flow(events)[-1][0] == "failed"
    assert events[-1].error == {"type": "AuthorizationError", "code": None, "message": str(error)}


# --- the API's edges -----------------------------------------------------------------------------------


async def test_a_static_token_is_sent_as_is_and_a_401_is_the_callers(site: Site) -> None:
    site.configure()
    # docs/authorization.md: the 401 nothing answered is a TransportError with its challenges, whatever its body
    # (this server's is a JSON-RPC -32001 error).
    with pytest.raises(mcpfsm.TransportError, match="refused the credentials sent") as caught:
        async with site.client("not-a-real-token", protocol="2026-07-28") as client:
            await client.tools()
    assert caught.value.status == 401
    assert [value.split(" ", 1)[0] for value in caught.value.www_authenticate] == ["Bearer"]
    assert site.steps() == [("POST", "/mcp", 401)]
    assert site.log()[0]["headers"]["authorization"] == "Bearer not-a-real-token"


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        pytest.param(
            lambda: mcpfsm.Client.http("http://h/mcp", auth="t", headers={"authorization": "Bearer x"}),
            ValueError,
            r"^give either auth= or an Authorization header \(or credentials in the URL\), not both$",
            id="auth-and-header",
        ),
        pytest.param(
            lambda: mcpfsm.Client.http("http://h/mcp", auth=42),
            TypeError,
            r"^auth must be mcpfsm.OAuth, ClientCredentials, JwtBearer, EnterpriseManaged or a token string, got int$",
            id="not-credentials",
        ),
        pytest.param(
            lambda: mcpfsm.Client.http("http://h/mcp", auth="bad token"),
            ValueError,
            r"^a bearer token is a non-empty string of visible ASCII characters$",
            id="token-with-space",
        ),
        pytest.param(
            lambda: mcpfsm.OAuth(client_id="c"),
            ValueError,
            r"^client_id needs client_issuer: pre-registered credentials are only sent to the authorization server"
            r" that issued them$",
            id="client-id-without-issuer",
        ),
        pytest.param(
            lambda: mcpfsm.ClientCredentials("c"),
            ValueError,
            r"^give exactly one of client_secret and private_key_pem$",
            id="credentials-without-secret",
        ),
        pytest.param(
            lambda: mcpfsm.ClientCredentials("c", private_key_pem="nope"),
            ValueError,
            r"^private_key_pem is not a private key that can sign ES256$",
            id="bad-key",
        ),
        pytest.param(
            lambda: mcpfsm.OAuth(client_metadata_url="http://x/doc"),
            ValueError,
            r"^client_metadata_url 'http://x/doc' must be an https URL with a path$",
            id="cimd-not-https",
        ),
        pytest.param(
            lambda: mcpfsm.OAuth(scope=["a b"]),
            ValueError,
            r"^scope must be a space-separated string or a sequence of scope tokens, got \['a b'\]$",
            id="bad-scope",
        ),
        pytest.param(
            lambda: mcpfsm.LoopbackAuthorizer("https://example.com/callback"),
            ValueError,
            r"^the default authorize listens on a loopback http redirect_uri with a port, got"
            r" 'https://example.com/callback'$",
            id="loopback-not-loopback",
        ),
    ],
)
def test_bad_arguments_are_refused_when_built(make: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        make()


def test_reprs_hide_secrets() -> None:
    private, _ = _keypair()
    values = [
        mcpfsm.OAuth(client_id="c", client_secret="secret-1", client_issuer="https://as"),
        mcpfsm.ClientCredentials("c", client_secret="secret-2"),
        mcpfsm.ClientCredentials("c", private_key_pem=private),
        mcpfsm.JwtBearer("c", "secret-3"),
        mcpfsm.EnterpriseManaged("c", "secret-4", "i", "secret-5", "https://idp/token"),
    ]
    text = "".join(map(repr, values))
    assert [s for s in ("secret-1", "secret-2", "secret-3", "secret-4", "secret-5", "PRIVATE KEY") if s in text] == []
    assert repr(mcpfsm.FileTokenStore("/x/t.json")) == "FileTokenStore('/x/t.json')"


# --- the loopback authorizer -----------------------------------------------------------------------------


async def test_the_loopback_authorizer_receives_the_browsers_redirect(site: Site) -> None:
    site.configure()
    lines: list[str] = []
    announced = trio.Event()

    def announce(line: str) -> None:
        lines.append(line)
        announced.set()

    with reserved_port() as port:
        redirect_uri = f"http://127.0.0.1:{port}/callback"
        loopback = mcpfsm.LoopbackAuthorizer(redirect_uri, open_browser=False, announce=announce)

        async def browser() -> None:
            # The "browser": the announcement is the readiness signal (the authorizer listens before it
            # announces); it follows the authorization server's redirect back to the listener.
            await announced.wait()
            url = lines[0].split("\n")[1].strip()
            async with httpx.AsyncClient(follow_redirects=True) as user_agent:
                page = await user_agent.get(url)
            assert (
                page.text
                == "<!doctype html><title>mcpfsm</title><p>mcpfsm received the authorization."
                " You can close this window.</p>\n"
            )

        auth = mcpfsm.OAuth(redirect_uri=redirect_uri, authorize=loopback)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(browser)
            assert await use(site.client(auth, protocol="2026-07-28")) == "test-tool called"
    assert lines[0].startswith(f"mcpfsm: log in to authorize access (waiting up to 300 s for {redirect_uri}):\n  ")
    assert site.only("GET", "/authorize")["query"]["redirect_uri"] == redirect_uri


async def test_the_loopback_authorizer_gives_up_after_its_timeout(autojump_clock: trio.testing.MockClock) -> None:
    lines: list[str] = []
    with reserved_port() as port:
        redirect_uri = f"http://127.0.0.1:{port}/callback"
        loopback = mcpfsm.LoopbackAuthorizer(redirect_uri, timeout=120, open_browser=False, announce=lines.append)
        with pytest.raises(
            mcpfsm.AuthorizationError,
            match=rf"^authorizing: nobody completed the login within 120 s \(the browser never came back to"
            rf" {re.escape(redirect_uri)}\)$",
        ):
            await loopback("https://as.example/authorize?x=1")
    assert lines == [
        f"mcpfsm: log in to authorize access (waiting up to 120 s for {redirect_uri}):\n"
        "  https://as.example/authorize?x=1"
    ]


async def test_the_loopback_authorizer_says_when_its_port_is_taken() -> None:
    lines: list[str] = []
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        redirect_uri = f"http://127.0.0.1:{holder.getsockname()[1]}/callback"
        loopback = mcpfsm.LoopbackAuthorizer(redirect_uri, open_browser=False, announce=lines.append)
        with pytest.raises(
            mcpfsm.AuthorizationError,
            match=rf"^authorizing: cannot listen on {re.escape(redirect_uri)} for the browser's redirect:"
            r" Address already in use \(another program holds the port: pass another loopback redirect_uri\)$",
        ):
            await loopback("https://as.example/authorize?x=1")
    assert lines == []  # nobody is sent to log in when the answer could not be received


def test_the_default_redirect_port_is_outside_the_ephemeral_ranges() -> None:
    # A port the OS hands out to outgoing connections or to port-0 listeners could be busy at any moment.
    port = urlsplit(mcpfsm.OAuth().redirect_uri).port
    assert port is not None and port < 32768  # Linux's default range starts there, IANA's at 49152
    low, _high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    assert port < int(low)
