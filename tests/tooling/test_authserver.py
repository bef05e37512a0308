"""Integration tests: authserver.py as a real process on 127.0.0.1, driven by plain httpx and oauth.py.

``Flow`` below is a deliberately plain, synchronous walk through the authorization states (discovering the
resource, discovering the issuer, registering, authorizing, exchanging) built only from oauth.py's pure
functions; it is what the trio driver will do, minus trio. Each test asserts the whole sequence of requests
the server recorded (method, path, status) and, where it matters, whole requests.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mcpfsm._core import oauth as o
from mcpfsm._core.errors import AuthorizationError
from tooling.processes import RunningAuthServer

REDIRECT = "http://localhost:3000/callback"
CIMD_URL = "https://conformance-test.local/client-metadata.json"
NOISE = {"host", "user-agent", "accept-encoding", "connection", "content-length"}

Server = Callable[[dict[str, Any]], str]


# ---------------------------------------------------------------------------------------------- the server process


@pytest.fixture
def serve(authserver: RunningAuthServer) -> Server:
    # One process for the module (tests/conftest.py): each test starts afresh through POST /_config (new clients,
    # tokens, log).
    def start(config: dict[str, Any]) -> str:
        authserver.configure(config)
        return authserver.base_url

    return start


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(follow_redirects=False, timeout=10) as client:
        yield client


def log(http: httpx.Client, base: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = http.get(f"{base}/_log").json()
    return entries


def steps(http: httpx.Client, base: str) -> list[tuple[str, str, int]]:
    return [(entry["method"], entry["path"], entry["status"]) for entry in log(http, base)]


def protocol_headers(entry: dict[str, Any]) -> dict[str, str]:
    return {name: value for name, value in entry["headers"].items() if name not in NOISE}


def only(entries: list[dict[str, Any]], method: str, path: str) -> dict[str, Any]:
    found = [entry for entry in entries if (entry["method"], entry["path"]) == (method, path)]
    assert len(found) == 1, found
    return found[0]


def rpc(method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


# ---------------------------------------------------------------------------------------------- a plain driver


@dataclass
class Flow:
    """One client's authorization state, walked synchronously with oauth.py."""

    http: httpx.Client
    mcp_url: str
    pre_registered: tuple[o.PreRegisteredClient, ...] = ()
    client_metadata_url: str | None = None
    dpop_key: o.DPoPKey | None = None
    as_nonce: str | None = None
    rs_nonce: str | None = None
    registrations: dict[str, o.ClientRegistration] = field(default_factory=dict)
    resource_metadata: o.ProtectedResourceMetadata | None = None
    metadata: o.AuthorizationServerMetadata | None = None
    client: o.ClientAuthentication | None = None
    resource: str | None = None
    request: o.AuthorizationRequest | None = None
    tokens: o.TokenSet | None = None

    def discover(self, response: httpx.Response, *, authorization_code: bool = True) -> o.BearerChallenge | None:
        challenge = o.bearer_challenge(response.headers.get_list("www-authenticate"))
        self.resource_metadata = None
        for url in o.protected_resource_metadata_urls(self.mcp_url, challenge):
            answer = self.http.get(url, headers=dict(o.METADATA_REQUEST_HEADERS))
            self.resource_metadata = o.read_protected_resource_metadata(answer.status_code, answer.content)
            if self.resource_metadata is not None:
                break
        if self.resource_metadata is None:
            answer = self.http.get(o.legacy_metadata_url(self.mcp_url), headers=dict(o.LEGACY_METADATA_HEADERS))
            self.metadata = o.read_legacy_authorization_server_metadata(
                answer.status_code, answer.content, mcp_url=self.mcp_url
            )
            self.resource = None
            return challenge
        o.check_resource(self.resource_metadata, self.mcp_url)
        self.resource = self.resource_metadata.resource
        known = {client.issuer for client in self.pre_registered} | set(self.registrations)
        issuer = o.choose_authorization_server(self.resource_metadata, known)
        self.metadata = None
        for url in o.authorization_server_metadata_urls(issuer):
            answer = self.http.get(url, headers=dict(o.METADATA_REQUEST_HEADERS))
            self.metadata = o.read_authorization_server_metadata(
                answer.status_code, answer.content, expected_issuer=issuer, authorization_code=authorization_code
            )
            if self.metadata is not None:
                break
        if self.metadata is None:
            raise AuthorizationError("no metadata", state="discovering_issuer")
        if self.dpop_key is not None:
            o.dpop_signing_algorithm(self.metadata, self.resource_metadata)
        return challenge

    def register(self) -> o.ClientAuthentication:
        assert self.metadata is not None
        how = o.choose_client_identification(
            self.metadata, pre_registered=self.pre_registered, client_metadata_url=self.client_metadata_url
        )
        if how is o.ClientIdentification.pre_registered:
            mine = next(client for client in self.pre_registered if client.issuer == self.metadata.issuer)
            method = o.pre_registered_auth_method(self.metadata, has_secret=mine.client_secret is not None)
            return o.ClientAuthentication(client_id=mine.client_id, method=method, client_secret=mine.client_secret)
        if how is o.ClientIdentification.client_metadata_document:
            assert self.client_metadata_url is not None
            return o.ClientAuthentication(client_id=self.client_metadata_url)
        if self.metadata.issuer not in self.registrations:
            method = o.registration_auth_method(self.metadata)
            body = o.registration_request(
                client_name="mcpfsm", redirect_uris=[REDIRECT], token_endpoint_auth_method=method
            )
            assert self.metadata.registration_endpoint is not None
            answer = self.http.post(self.metadata.registration_endpoint, json=body)
            self.registrations[self.metadata.issuer] = o.read_registration_response(
                answer.status_code, answer.content, issuer=self.metadata.issuer, requested_method=method
            )
        return self.registrations[self.metadata.issuer].authentication()

    def authorize(self, scopes: tuple[str, ...]) -> str:
        assert self.metadata is not None and self.client is not None
        self.request = o.authorization_request(
            self.metadata,
            client_id=self.client.client_id,
            redirect_uri=REDIRECT,
            resource=self.resource,
            scopes=o.with_offline_access(scopes, self.metadata),
            state=o.new_state(),
            code_verifier=o.new_code_verifier(),
        )
        answer = self.http.get(self.request.url)
        assert answer.status_code == 302, answer.text
        return o.read_authorization_response(self.request, answer.headers["location"])

    def token(
        self, request: o.TokenRequest, *, scopes: tuple[str, ...], previous: o.TokenSet | None = None
    ) -> o.TokenSet:
        assert self.metadata is not None
        for _ in range(2):
            sent = request
            if self.dpop_key is not None:
                proof = o.dpop_proof(
                    self.dpop_key, method="POST", url=request.url, now=time.time(), jti=o.new_jti(), nonce=self.as_nonce
                )
                sent = request.with_dpop_proof(proof)
            answer = self.http.post(sent.url, headers=dict(sent.headers), content=sent.body)
            nonce = o.token_endpoint_nonce_challenge(
                answer.status_code, answer.content, answer.headers.get("dpop-nonce")
            )
            if nonce is None:
                break
            self.as_nonce = nonce
        return o.read_token_response(
            answer.status_code,
            answer.content,
            now=time.time(),
            issuer=self.metadata.issuer,
            resource=self.resource,
            requested_scopes=scopes,
            dpop=self.dpop_key is not None,
            previous=previous,
            state="refreshing" if previous else "exchanging",
        )

    def authorization_code(self, response: httpx.Response) -> o.TokenSet:
        challenge = self.discover(response)
        self.client = self.register()
        scopes = o.requested_scopes(challenge, self.resource_metadata)
        code = self.authorize(scopes)
        assert self.metadata is not None and self.request is not None
        request = o.code_exchange_request(self.metadata, self.client, request=self.request, code=code)
        self.tokens = self.token(request, scopes=self.request.scopes)
        return self.tokens

    def step_up(self, response: httpx.Response) -> o.TokenSet:
        challenge = o.bearer_challenge(response.headers.get_list("www-authenticate"))
        assert challenge is not None and challenge.error == "insufficient_scope"
        assert self.tokens is not None and self.metadata is not None
        code = self.authorize(o.step_up_scopes(self.tokens.scopes, challenge.scope))
        assert self.client is not None and self.request is not None
        request = o.code_exchange_request(self.metadata, self.client, request=self.request, code=code)
        self.tokens = self.token(request, scopes=self.request.scopes)
        return self.tokens

    def refresh(self) -> o.TokenSet:
        assert self.tokens is not None and self.tokens.refresh_token is not None
        assert self.metadata is not None and self.client is not None
        request = o.refresh_request(
            self.metadata, self.client, refresh_token=self.tokens.refresh_token, resource=self.resource
        )
        self.tokens = self.token(request, scopes=self.tokens.scopes, previous=self.tokens)
        return self.tokens

    def send(self, message: dict[str, Any]) -> httpx.Response:
        for _ in range(2):
            headers = {"Accept": "application/json, text/event-stream"}
            if self.tokens is not None:
                headers["Authorization"] = self.tokens.authorization
                if self.dpop_key is not None and self.tokens.token_type == "DPoP":
                    headers["DPoP"] = o.dpop_proof(
                        self.dpop_key,
                        method="POST",
                        url=self.mcp_url,
                        now=time.time(),
                        jti=o.new_jti(),
                        nonce=self.rs_nonce,
                        access_token=self.tokens.access_token,
                    )
            response = self.http.post(self.mcp_url, json=message, headers=headers)
            nonce = o.resource_nonce_challenge(
                response.status_code, response.headers.get_list("www-authenticate"), response.headers.get("dpop-nonce")
            )
            if nonce is None:
                return response
            self.rs_nonce = nonce
        return response

    def call(self, message: dict[str, Any]) -> httpx.Response:
        """Send; on 401 authorize and resend once; on 403 insufficient_scope step up and resend once."""
        response = self.send(message)
        if response.status_code == 401:
            self.authorization_code(response)
            response = self.send(message)
        elif response.status_code == 403:
            self.step_up(response)
            response = self.send(message)
        return response


def assert_tool_session(flow: Flow) -> None:
    discover = flow.call(rpc("server/discover"))
    assert (discover.status_code, discover.json()) == (
        200,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}},
        },
    )
    listed = flow.call(rpc("tools/list", request_id=2))
    assert listed.json()["result"]["tools"] == [
        {
            "name": "test-tool",
            "description": "A tool for authorization tests.",
            "inputSchema": {"type": "object", "properties": {}},
        }
    ]
    called = flow.call(rpc("tools/call", {"name": "test-tool", "arguments": {}}, request_id=3))
    assert called.json() == {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {
            "resultType": "complete",
            "content": [{"type": "text", "text": "test-tool called"}],
            "isError": False,
        },
    }


# ---------------------------------------------------------------------------------------------- authorization code


def test_end_to_end_authorization_code_with_pkce(serve: Server, http: httpx.Client) -> None:
    base = serve(
        {"challenge_scope": "mcp:basic", "scopes_supported": ["mcp:basic", "offline_access"], "refresh_tokens": True}
    )
    flow = Flow(http, f"{base}/mcp")
    assert_tool_session(flow)
    assert flow.tokens is not None and flow.request is not None and flow.client is not None
    assert (flow.tokens.token_type, flow.tokens.scopes, flow.tokens.issuer, flow.tokens.resource) == (
        "Bearer",
        ("mcp:basic", "offline_access"),
        base,
        f"{base}/mcp",
    )
    entries = log(http, base)
    assert [(e["method"], e["path"], e["status"]) for e in entries] == [
        ("POST", "/mcp", 401),
        ("GET", "/.well-known/oauth-protected-resource/mcp", 200),
        ("GET", "/.well-known/oauth-authorization-server", 200),
        ("POST", "/register", 201),
        ("GET", "/authorize", 302),
        ("POST", "/token", 200),
        ("POST", "/mcp", 200),
        ("POST", "/mcp", 200),
        ("POST", "/mcp", 200),
    ]
    prm, metadata, register, authorize, token, first_mcp = entries[1:7]
    assert protocol_headers(prm) == {"accept": "application/json"}
    assert protocol_headers(metadata) == {"accept": "application/json"}
    assert register["json"] == {
        "client_name": "mcpfsm",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    }
    assert protocol_headers(authorize) == {"accept": "*/*"}
    assert authorize["query"] == {
        "response_type": "code",
        "client_id": flow.client.client_id,
        "redirect_uri": REDIRECT,
        "scope": "mcp:basic offline_access",
        "state": flow.request.state,
        "code_challenge": o.code_challenge(flow.request.code_verifier),
        "code_challenge_method": "S256",
        "resource": f"{base}/mcp",
    }
    assert protocol_headers(token) == {
        "accept": "application/json",
        "content-type": "application/x-www-form-urlencoded",
    }
    assert set(token["form"]) == {"grant_type", "code", "redirect_uri", "code_verifier", "resource", "client_id"}
    assert {k: v for k, v in token["form"].items() if k != "code"} == {
        "grant_type": "authorization_code",
        "redirect_uri": REDIRECT,
        "code_verifier": flow.request.code_verifier,
        "resource": f"{base}/mcp",
        "client_id": flow.client.client_id,
    }
    assert "authorization" not in entries[0]["headers"]
    assert protocol_headers(first_mcp) == {
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {flow.tokens.access_token}",
        "content-type": "application/json",
    }


WELL_KNOWN = "/.well-known/oauth-protected-resource"
RFC8414 = "/.well-known/oauth-authorization-server"
OIDC = "/.well-known/openid-configuration"


@pytest.mark.parametrize(
    ("config", "expected", "scope"),
    [
        pytest.param(
            {"prm_at": "path", "prm_in_challenge": False, "metadata_at": ["oidc"]},
            [(f"{WELL_KNOWN}/mcp", 200), (RFC8414, 404), (OIDC, 200), ("/register", 201)],
            None,
            id="metadata-var1",
        ),
        pytest.param(
            {"prm_at": "root", "prm_resource": "origin", "issuer_path": "/tenant1", "prm_in_challenge": False},
            [(f"{WELL_KNOWN}/mcp", 404), (WELL_KNOWN, 200), (f"{RFC8414}/tenant1", 200), ("/tenant1/register", 201)],
            None,
            id="metadata-var2",
        ),
        pytest.param(
            {"prm_at": "custom", "issuer_path": "/tenant1", "metadata_at": ["oidc-suffix"]},
            [
                ("/custom/metadata/location.json", 200),
                (f"{RFC8414}/tenant1", 404),
                (f"{OIDC}/tenant1", 404),
                (f"/tenant1{OIDC}", 200),
                ("/tenant1/register", 201),
            ],
            None,
            id="metadata-var3",
        ),
        pytest.param(
            {"prm_scopes_supported": ["mcp:basic", "mcp:read", "mcp:write"]},
            [(f"{WELL_KNOWN}/mcp", 200), (RFC8414, 200), ("/register", 201)],
            "mcp:basic mcp:read mcp:write",
            id="scope-from-scopes-supported",
        ),
        pytest.param(
            {"challenge_scope": "mcp:basic", "prm_scopes_supported": ["mcp:other"], "scopes_supported": ["mcp:basic"]},
            [(f"{WELL_KNOWN}/mcp", 200), (RFC8414, 200), ("/register", 201)],
            "mcp:basic",
            id="scope-from-www-authenticate",
        ),
        pytest.param(
            {"scopes_supported": ["mcp:basic", "mcp:read"], "challenge_scope": "mcp:basic"},
            [(f"{WELL_KNOWN}/mcp", 200), (RFC8414, 200), ("/register", 201)],
            "mcp:basic",
            id="offline-access-not-supported",
        ),
        pytest.param(
            {"cimd": True, "challenge_scope": "mcp:basic", "scopes_supported": ["mcp:basic", "offline_access"]},
            [(f"{WELL_KNOWN}/mcp", 200), (RFC8414, 200)],
            "mcp:basic offline_access",
            id="basic-cimd-offline-access",
        ),
        pytest.param(
            {"iss_supported": False, "iss_mode": "omit"},
            [(f"{WELL_KNOWN}/mcp", 200), (RFC8414, 200), ("/register", 201)],
            None,
            id="iss-not-advertised",
        ),
    ],
)
def test_discovery_variants(
    serve: Server, http: httpx.Client, config: dict[str, Any], expected: list[tuple[str, int]], scope: str | None
) -> None:
    base = serve(config)
    flow = Flow(http, f"{base}/mcp", client_metadata_url=CIMD_URL)
    assert flow.call(rpc("tools/list")).status_code == 200
    prefix = config.get("issuer_path", "")
    assert steps(http, base) == [
        ("POST", "/mcp", 401),
        *[("GET" if path != f"{prefix}/register" else "POST", path, status) for path, status in expected],
        ("GET", f"{prefix}/authorize", 302),
        ("POST", f"{prefix}/token", 200),
        ("POST", "/mcp", 200),
    ]
    authorize = only(log(http, base), "GET", f"{prefix}/authorize")
    assert authorize["query"].get("scope") == scope
    if config.get("cimd"):
        assert authorize["query"]["client_id"] == CIMD_URL


@pytest.mark.parametrize(
    ("method", "has_secret"),
    [("client_secret_basic", True), ("client_secret_post", True), ("none", False)],
)
def test_token_endpoint_auth_methods(serve: Server, http: httpx.Client, method: str, has_secret: bool) -> None:
    base = serve({"token_endpoint_auth_methods_supported": [method]})
    flow = Flow(http, f"{base}/mcp")
    assert flow.call(rpc("tools/list")).status_code == 200
    registration = flow.registrations[base]
    assert (registration.token_endpoint_auth_method, registration.client_secret is not None) == (method, has_secret)
    token = only(log(http, base), "POST", "/token")
    client_fields = {k: v for k, v in token["form"].items() if k in ("client_id", "client_secret")}
    if method == "client_secret_basic":
        pair = f"{registration.client_id}:{registration.client_secret}".encode()
        assert token["headers"]["authorization"] == "Basic " + base64.b64encode(pair).decode()
        assert client_fields == {}
    elif method == "client_secret_post":
        assert "authorization" not in token["headers"]
        assert client_fields == {"client_id": registration.client_id, "client_secret": registration.client_secret}
    else:
        assert "authorization" not in token["headers"]
        assert client_fields == {"client_id": registration.client_id}


def test_pre_registration(serve: Server, http: httpx.Client) -> None:
    credentials = {"client_id": "pre-registered-client", "client_secret": "pre-registered-secret"}
    base = serve(
        {
            "registration": False,
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            "pre_registered": credentials,
        }
    )
    flow = Flow(
        http,
        f"{base}/mcp",
        pre_registered=(
            o.PreRegisteredClient(
                issuer=base, client_id="pre-registered-client", client_secret="pre-registered-secret"
            ),
        ),
    )
    assert flow.call(rpc("tools/list")).status_code == 200
    token = only(log(http, base), "POST", "/token")
    assert (
        token["headers"]["authorization"]
        == "Basic " + base64.b64encode(b"pre-registered-client:pre-registered-secret").decode()
    )
    assert [path for _, path, _ in steps(http, base)] == [
        "/mcp",
        f"{WELL_KNOWN}/mcp",
        RFC8414,
        "/authorize",
        "/token",
        "/mcp",
    ]


@pytest.mark.parametrize(
    ("legacy", "expected"),
    [
        pytest.param(
            "metadata",
            [
                (f"{WELL_KNOWN}/mcp", 404),
                (WELL_KNOWN, 404),
                (RFC8414, 200),
                ("/oauth/register", 201),
                ("/oauth/authorize", 302),
                ("/oauth/token", 200),
            ],
            id="2025-03-26-oauth-metadata-backcompat",
        ),
        pytest.param(
            "defaults",
            [
                (f"{WELL_KNOWN}/mcp", 404),
                (WELL_KNOWN, 404),
                (RFC8414, 404),
                ("/register", 201),
                ("/authorize", 302),
                ("/token", 200),
            ],
            id="2025-03-26-oauth-endpoint-fallback",
        ),
    ],
)
def test_legacy_paths(serve: Server, http: httpx.Client, legacy: str, expected: list[tuple[str, int]]) -> None:
    base = serve({"legacy": legacy})
    flow = Flow(http, f"{base}/mcp")
    initialize = flow.call(
        rpc(
            "initialize",
            {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "mcpfsm", "version": "0"}},
        )
    )
    assert initialize.json()["result"] == {
        "protocolVersion": "2025-03-26",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "authserver", "version": "0"},
    }
    methods = {"/register": "POST", "/oauth/register": "POST", "/token": "POST", "/oauth/token": "POST"}
    assert steps(http, base) == [
        ("POST", "/mcp", 401),
        *[(methods.get(path, "GET"), path, status) for path, status in expected],
        ("POST", "/mcp", 200),
    ]
    entries = log(http, base)
    assert protocol_headers(only(entries, "GET", RFC8414)) == {
        "accept": "application/json",
        "mcp-protocol-version": "2025-03-26",
    }
    assert "resource" not in only(entries, "GET", expected[-2][0])["query"]


# ---------------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("config", "message", "expected"),
    [
        pytest.param(
            {"prm_resource": "https://evil.example.com/mcp"},
            "discovering_resource: the protected resource metadata names resource 'https://evil.example.com/mcp', not"
            " this server '{base}/mcp'",
            [(f"{WELL_KNOWN}/mcp", 200)],
            id="resource-mismatch",
        ),
        pytest.param(
            {"metadata_issuer": "https://attacker.example.com"},
            "discovering_issuer: the metadata issuer 'https://attacker.example.com' is not the expected issuer"
            " '{base}'",
            [(f"{WELL_KNOWN}/mcp", 200), (RFC8414, 200)],
            id="metadata-issuer-mismatch",
        ),
        pytest.param(
            {"iss_mode": "omit"},
            "authorizing: the redirect has no iss though '{base}' advertises"
            " authorization_response_iss_parameter_supported",
            [(f"{WELL_KNOWN}/mcp", 200), (RFC8414, 200), ("/register", 201), ("/authorize", 302)],
            id="iss-supported-missing",
        ),
        pytest.param(
            {"iss_mode": "wrong"},
            "authorizing: the redirect's iss 'https://evil.example.com' is not the issuer '{base}'",
            [(f"{WELL_KNOWN}/mcp", 200), (RFC8414, 200), ("/register", 201), ("/authorize", 302)],
            id="iss-wrong-issuer",
        ),
        pytest.param(
            {"iss_mode": "wrong", "iss_supported": False},
            "authorizing: the redirect's iss 'https://evil.example.com' is not the issuer '{base}'",
            [(f"{WELL_KNOWN}/mcp", 200), (RFC8414, 200), ("/register", 201), ("/authorize", 302)],
            id="iss-unexpected",
        ),
        pytest.param(
            {"iss_mode": "slash"},
            "authorizing: the redirect's iss '{base}/' is not the issuer '{base}'",
            [(f"{WELL_KNOWN}/mcp", 200), (RFC8414, 200), ("/register", 201), ("/authorize", 302)],
            id="iss-normalized",
        ),
    ],
)
def test_refusals_stop_before_the_next_server(
    serve: Server, http: httpx.Client, config: dict[str, Any], message: str, expected: list[tuple[str, int]]
) -> None:
    base = serve(config)
    flow = Flow(http, f"{base}/mcp")
    with pytest.raises(AuthorizationError) as caught:
        flow.call(rpc("tools/list"))
    assert str(caught.value) == message.format(base=base)
    assert steps(http, base) == [
        ("POST", "/mcp", 401),
        *[("POST" if path == "/register" else "GET", path, status) for path, status in expected],
    ]


# ---------------------------------------------------------------------------------------------- scopes


def test_scope_step_up(serve: Server, http: httpx.Client) -> None:
    base = serve({"challenge_scope": "mcp:basic", "step_up_scope": "mcp:write"})
    flow = Flow(http, f"{base}/mcp")
    assert_tool_session(flow)
    entries = log(http, base)
    assert [e["query"]["scope"] for e in entries if e["path"] == "/authorize"] == ["mcp:basic", "mcp:basic mcp:write"]
    forbidden = next(e for e in entries if e["status"] == 403)
    assert forbidden["json"]["method"] == "tools/call"
    assert [(e["method"], e["path"], e["status"]) for e in entries][-4:] == [
        ("POST", "/mcp", 403),
        ("GET", "/authorize", 302),
        ("POST", "/token", 200),
        ("POST", "/mcp", 200),
    ]


def test_scope_retry_limit_server(serve: Server, http: httpx.Client) -> None:
    base = serve({"forbid_scope": "mcp:admin", "forbid_limit": 3})
    flow = Flow(http, f"{base}/mcp")
    first = flow.call(rpc("tools/list"))
    assert first.status_code == 403
    assert o.bearer_challenge(first.headers.get_list("www-authenticate")) == o.BearerChallenge(
        resource_metadata=f"{base}{WELL_KNOWN}/mcp", scope=("mcp:admin",), error="insufficient_scope"
    )
    assert [flow.send(rpc("tools/list")).status_code for _ in range(3)] == [403, 403, 410]


# ---------------------------------------------------------------------------------------------- migration


def test_authorization_server_migration(serve: Server, http: httpx.Client) -> None:
    base = serve({"migrate_after": 1})
    flow = Flow(http, f"{base}/mcp")
    assert flow.call(rpc("tools/list")).status_code == 200
    first = flow.registrations[base]
    assert flow.call(rpc("tools/call", {"name": "test-tool", "arguments": {}})).status_code == 200
    second = flow.registrations[f"{base}/as2"]
    assert first.client_id != second.client_id
    assert flow.tokens is not None and flow.tokens.issuer == f"{base}/as2"
    assert steps(http, base)[7:] == [
        ("POST", "/mcp", 401),
        ("GET", f"{WELL_KNOWN}/mcp", 200),
        ("GET", f"{RFC8414}/as2", 200),
        ("POST", "/as2/register", 201),
        ("GET", "/as2/authorize", 302),
        ("POST", "/as2/token", 200),
        ("POST", "/mcp", 200),
    ]
    as2_requests = [e for e in log(http, base) if e["path"].startswith("/as2/")]
    assert all(first.client_id not in json.dumps(e) for e in as2_requests)


# ---------------------------------------------------------------------------------------------- headless grants


def key_pair() -> tuple[bytes, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public.decode()


def headless_flow(http: httpx.Client, base: str) -> Flow:
    flow = Flow(http, f"{base}/mcp")
    flow.discover(flow.send(rpc("tools/list")), authorization_code=False)
    return flow


def test_client_credentials_private_key_jwt(serve: Server, http: httpx.Client) -> None:
    private, public = key_pair()
    base = serve(
        {
            "client_credentials": {"client_id": "cc-client", "public_key_pem": public},
            "prm_scopes_supported": ["mcp:basic"],
        }
    )
    flow = headless_flow(http, base)
    assert flow.metadata is not None and flow.resource is not None

    def request(key: bytes, jti: str) -> o.TokenRequest:
        assert flow.metadata is not None
        assertion = o.client_assertion(
            client_id="cc-client", audience=flow.metadata.issuer, private_key_pem=key, now=time.time(), jti=jti
        )
        client = o.ClientAuthentication(client_id="cc-client", method="private_key_jwt", client_assertion=assertion)
        return o.client_credentials_request(flow.metadata, client, resource=flow.resource, scopes=("mcp:basic",))

    flow.tokens = flow.token(request(private, "jti-1"), scopes=("mcp:basic",))
    assert flow.send(rpc("tools/list")).status_code == 200
    token = only(log(http, base), "POST", "/token")
    assert protocol_headers(token) == {
        "accept": "application/json",
        "content-type": "application/x-www-form-urlencoded",
    }
    assert set(token["form"]) == {"grant_type", "resource", "scope", "client_assertion_type", "client_assertion"}
    claims = jwt.decode(token["form"]["client_assertion"], options={"verify_signature": False})
    assert (claims["iss"], claims["sub"], claims["aud"], claims["exp"] - claims["iat"]) == (
        "cc-client",
        "cc-client",
        base,
        300,
    )
    with pytest.raises(
        AuthorizationError, match=r"^exchanging: the token endpoint answered HTTP 401 \(error='invalid_client'"
    ):
        flow.token(request(private, "jti-1"), scopes=())
    with pytest.raises(
        AuthorizationError, match=r"^exchanging: the token endpoint answered HTTP 401 \(error='invalid_client'"
    ):
        flow.token(request(key_pair()[0], "jti-2"), scopes=())
    now = int(time.time())
    claims = {"iss": "cc-client", "sub": "cc-client", "aud": base, "iat": now, "exp": now + 3600, "jti": "jti-3"}
    long_lived = o.ClientAuthentication(
        client_id="cc-client", method="private_key_jwt", client_assertion=jwt.encode(claims, private, algorithm="ES256")
    )
    with pytest.raises(
        AuthorizationError,
        match=r"^exchanging: the token endpoint answered HTTP 401 \(error='invalid_client', error_description='client"
        r" assertion lives longer than 5 minutes'\)$",
    ):
        flow.token(
            o.client_credentials_request(flow.metadata, long_lived, resource=flow.resource, scopes=()), scopes=()
        )


def test_client_credentials_basic(serve: Server, http: httpx.Client) -> None:
    base = serve(
        {"client_credentials": {"client_id": "conformance-test-client", "client_secret": "conformance-test-secret"}}
    )
    flow = headless_flow(http, base)
    assert flow.metadata is not None
    client = o.ClientAuthentication(
        client_id="conformance-test-client", method="client_secret_basic", client_secret="conformance-test-secret"
    )
    flow.tokens = flow.token(
        o.client_credentials_request(flow.metadata, client, resource=flow.resource, scopes=()), scopes=()
    )
    assert flow.send(rpc("tools/list")).status_code == 200
    assert only(log(http, base), "POST", "/token")["form"] == {
        "grant_type": "client_credentials",
        "resource": f"{base}/mcp",
    }


def test_jwt_bearer_workload_identity(serve: Server, http: httpx.Client) -> None:
    private, public = key_pair()
    issuer = "https://workload.example.com"
    base = serve({"jwt_bearer": {"client_id": "workload", "issuer": issuer, "public_key_pem": public}})
    flow = headless_flow(http, base)
    assert flow.metadata is not None
    now = int(time.time())
    assertion = jwt.encode(
        {"iss": issuer, "sub": "spiffe://x/y", "aud": base, "iat": now, "exp": now + 60}, private, algorithm="ES256"
    )
    request = o.jwt_bearer_request(
        flow.metadata,
        o.ClientAuthentication(client_id="workload"),
        assertion=assertion,
        resource=flow.resource,
        scopes=(),
    )
    flow.tokens = flow.token(request, scopes=())
    assert flow.send(rpc("tools/list")).status_code == 200


def test_enterprise_managed_token_exchange(serve: Server, http: httpx.Client) -> None:
    base = serve(
        {
            "idp": {"client_id": "idp-client", "id_token": "id-token-of-user-1"},
            "pre_registered": {"client_id": "mcp-client", "client_secret": "mcp-secret"},
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        }
    )
    flow = headless_flow(http, base)
    assert flow.metadata is not None
    exchange = o.token_exchange_request(
        f"{base}/idp/token",
        o.ClientAuthentication(client_id="idp-client"),
        subject_token="id-token-of-user-1",
        audience=flow.metadata.issuer,
        resource=flow.resource,
        scopes=("mcp:basic",),
    )
    answer = http.post(exchange.url, headers=dict(exchange.headers), content=exchange.body)
    id_jag = o.read_token_exchange_response(answer.status_code, answer.content)
    assert jwt.get_unverified_header(id_jag)["typ"] == "oauth-id-jag+jwt"
    client = o.ClientAuthentication(client_id="mcp-client", method="client_secret_basic", client_secret="mcp-secret")
    request = o.jwt_bearer_request(flow.metadata, client, assertion=id_jag, resource=flow.resource, scopes=())
    flow.tokens = flow.token(request, scopes=())
    assert flow.tokens.scopes == ("mcp:basic",)
    assert flow.send(rpc("tools/list")).status_code == 200
    assert only(log(http, base), "POST", "/idp/token")["form"] == {
        "grant_type": o.GRANT_TYPE_TOKEN_EXCHANGE,
        "requested_token_type": o.TOKEN_TYPE_ID_JAG,
        "audience": base,
        "resource": f"{base}/mcp",
        "scope": "mcp:basic",
        "subject_token": "id-token-of-user-1",
        "subject_token_type": o.TOKEN_TYPE_ID_TOKEN,
        "client_id": "idp-client",
    }


# ---------------------------------------------------------------------------------------------- DPoP


@pytest.mark.parametrize("nonces", [False, True], ids=["dpop", "dpop-nonce"])
def test_dpop(serve: Server, http: httpx.Client, nonces: bool) -> None:
    base = serve({"dpop": True, "dpop_required": True, "dpop_nonce_as": nonces, "dpop_nonce_resource": nonces})
    key = o.DPoPKey.generate()
    flow = Flow(http, f"{base}/mcp", dpop_key=key)
    assert flow.call(rpc("tools/list")).status_code == 200
    assert flow.call(rpc("tools/list", request_id=2)).status_code == 200
    assert flow.tokens is not None and flow.tokens.token_type == "DPoP"
    expected = [
        ("POST", "/mcp", 401),
        ("GET", f"{WELL_KNOWN}/mcp", 200),
        ("GET", RFC8414, 200),
        ("POST", "/register", 201),
        ("GET", "/authorize", 302),
        *([("POST", "/token", 400)] if nonces else []),
        ("POST", "/token", 200),
        *([("POST", "/mcp", 401)] if nonces else []),
        ("POST", "/mcp", 200),
        ("POST", "/mcp", 200),
    ]
    assert steps(http, base) == expected
    entries = log(http, base)
    token_proof = [e for e in entries if e["path"] == "/token"][-1]["headers"]["dpop"]
    assert jwt.get_unverified_header(token_proof) == {"alg": "ES256", "typ": "dpop+jwt", "jwk": key.public_jwk}
    claims = jwt.decode(token_proof, key.private_key.public_key(), algorithms=["ES256"])
    assert set(claims) == ({"jti", "htm", "htu", "iat", "nonce"} if nonces else {"jti", "htm", "htu", "iat"})
    assert (claims["htm"], claims["htu"]) == ("POST", f"{base}/token")
    last = entries[-1]
    assert last["headers"]["authorization"] == f"DPoP {flow.tokens.access_token}"
    resource_claims = jwt.decode(last["headers"]["dpop"], key.private_key.public_key(), algorithms=["ES256"])
    assert resource_claims["ath"] == o.access_token_hash(flow.tokens.access_token)
    assert (resource_claims["htm"], resource_claims["htu"]) == ("POST", f"{base}/mcp")
    jtis = [
        jwt.decode(e["headers"]["dpop"], options={"verify_signature": False})["jti"]
        for e in entries
        if "dpop" in e["headers"]
    ]
    assert len(jtis) == len(set(jtis))
    as_bearer = http.post(
        f"{base}/mcp", json=rpc("tools/list"), headers={"Authorization": f"Bearer {flow.tokens.access_token}"}
    )
    assert as_bearer.status_code == 401
    assert o.bearer_challenge(as_bearer.headers.get_list("www-authenticate")) == o.BearerChallenge(
        resource_metadata=f"{base}{WELL_KNOWN}/mcp", error="invalid_token"
    )


# ---------------------------------------------------------------------------------------------- refresh and expiry


def test_refresh_with_rotation(serve: Server, http: httpx.Client) -> None:
    base = serve({"refresh_tokens": True, "expires_in": 30})
    flow = Flow(http, f"{base}/mcp")
    assert flow.call(rpc("tools/list")).status_code == 200
    first = flow.tokens
    assert first is not None and first.refresh_token is not None
    assert first.expiring(time.time())
    second = flow.refresh()
    assert second.refresh_token not in (None, first.refresh_token)
    assert second.access_token != first.access_token
    assert flow.send(rpc("tools/list")).status_code == 200
    refresh = [e for e in log(http, base) if e["path"] == "/token"][-1]
    assert refresh["form"] == {
        "grant_type": "refresh_token",
        "refresh_token": first.refresh_token,
        "resource": f"{base}/mcp",
        "client_id": flow.registrations[base].client_id,
    }
    flow.tokens = first
    with pytest.raises(
        AuthorizationError, match=r"^refreshing: the token endpoint answered HTTP 400 \(error='invalid_grant'"
    ):
        flow.refresh()


INVALID_GRANT = r"^refreshing: the token endpoint answered HTTP 400 \(error='invalid_grant'"


@pytest.mark.parametrize("revoke", [False, True], ids=["reuse-counted", "reuse-revokes-the-grant"])
def test_a_retired_refresh_token_presented_again(serve: Server, http: httpx.Client, revoke: bool) -> None:
    # RFC 6749 §10.4, RFC 9700 §4.14.2: with revoke_on_reuse the whole grant dies, the tokens the rotation
    # issued included; without it the reuse is only counted and refused.
    base = serve({"refresh_tokens": True, "revoke_on_reuse": revoke})
    flow = Flow(http, f"{base}/mcp")
    assert flow.call(rpc("tools/list")).status_code == 200
    first = flow.tokens
    second = flow.refresh()
    flow.tokens = first
    with pytest.raises(AuthorizationError, match=INVALID_GRANT):
        flow.refresh()
    flow.tokens = second
    assert flow.send(rpc("tools/list")).status_code == (401 if revoke else 200)
    if revoke:
        with pytest.raises(AuthorizationError, match=INVALID_GRANT):
            flow.refresh()
    else:
        assert flow.refresh().access_token != second.access_token
    assert http.get(f"{base}/_stats").json() == {
        "token_requests": {"authorization_code": 1, "refresh_token": 3},
        "refresh_reuses": 1,
        "revoked_grants": 1 if revoke else 0,
    }


def test_a_token_outage_answers_the_next_token_requests_with_its_status(
    serve: Server, http: httpx.Client
) -> None:
    base = serve({"refresh_tokens": True})
    flow = Flow(http, f"{base}/mcp")
    assert flow.call(rpc("tools/list")).status_code == 200
    held = flow.tokens
    assert http.post(f"{base}/_token_outage", json={"count": 2, "status": 502}).status_code == 204
    for _ in range(2):
        with pytest.raises(AuthorizationError, match=r"^refreshing: the token endpoint answered HTTP 502 "):
            flow.refresh()
        flow.tokens = held
    assert flow.refresh().access_token != held.access_token
    assert [status for method, path, status in steps(http, base) if path == "/token"] == [200, 502, 502, 200]
    assert http.get(f"{base}/_stats").json()["token_requests"] == {"authorization_code": 1, "refresh_token": 3}
    for bad in ({"count": -1}, {"count": 1, "status": 200}, {"count": "1"}, []):
        assert http.post(f"{base}/_token_outage", json=bad).status_code == 400


def test_expired_token_is_refused(serve: Server, http: httpx.Client) -> None:
    base = serve({"expires_in": 0, "challenge_scope": "mcp:basic"})
    flow = Flow(http, f"{base}/mcp")
    response = flow.call(rpc("tools/list"))
    assert response.status_code == 401
    assert o.bearer_challenge(response.headers.get_list("www-authenticate")) == o.BearerChallenge(
        resource_metadata=f"{base}{WELL_KNOWN}/mcp", scope=("mcp:basic",), error="invalid_token"
    )
    assert flow.tokens is not None and flow.tokens.expiring(time.time(), margin=0)


# ---------------------------------------------------------------------------------------------- the server itself


def test_log_clear_and_unknown_paths(serve: Server, http: httpx.Client) -> None:
    base = serve({})
    assert http.get(f"{base}/nowhere").status_code == 404
    assert http.post(f"{base}/mcp", content=b"{}", headers={"Authorization": "Bearer forged"}).status_code == 401
    assert steps(http, base) == [("GET", "/nowhere", 404), ("POST", "/mcp", 401)]
    assert http.post(f"{base}/_log/clear").status_code == 204
    assert log(http, base) == []


def test_unknown_config_field_is_refused(serve: Server, http: httpx.Client) -> None:
    base = serve({})
    answer = http.post(f"{base}/_config", json={"no_such_field": 1})
    assert (answer.status_code, answer.json()) == (
        400,
        {"error": "invalid_config", "error_description": "unknown scenario fields: ['no_such_field']"},
    )
    assert log(http, base) == []


def test_unknown_config_field_exits() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tooling.authserver", "--config", '{"no_such_field": 1}'],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert result.stdout == ""
    assert result.stderr.strip().endswith("ValueError: unknown scenario fields: ['no_such_field']")


def test_authorize_rejects_bad_requests(serve: Server, http: httpx.Client) -> None:
    base = serve({})
    answer = http.post(
        f"{base}/register",
        json=o.registration_request(client_name="t", redirect_uris=[REDIRECT], token_endpoint_auth_method="none"),
    )
    client_id = answer.json()["client_id"]
    good = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": "x" * 43,
        "code_challenge_method": "S256",
        "resource": f"{base}/mcp",
        "state": "s",
    }
    location = http.get(f"{base}/authorize", params=good).headers["location"]
    assert parse_qs(urlsplit(location).query).keys() == {"code", "state", "iss"}
    cases = [
        ({"client_id": "unknown"}, "invalid_client"),
        ({"redirect_uri": "http://localhost:1/other"}, "invalid_request"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"resource": "https://evil.example.com/mcp"}, "invalid_target"),
        ({"response_type": "token"}, "unsupported_response_type"),
    ]
    for change, error in cases:
        refused = http.get(f"{base}/authorize", params={**good, **change})
        assert (refused.status_code, refused.json()["error"]) == (400, error)


def test_token_endpoint_refusals(serve: Server, http: httpx.Client) -> None:
    base = serve({})
    flow = Flow(http, f"{base}/mcp")
    flow.discover(flow.send(rpc("tools/list")))
    flow.client = flow.register()
    assert flow.metadata is not None

    def exchange(**changes: str) -> httpx.Response:
        code = flow.authorize(())
        assert flow.metadata is not None and flow.client is not None and flow.request is not None
        form = dict(o.code_exchange_request(flow.metadata, flow.client, request=flow.request, code=code).form)
        return http.post(flow.metadata.token_endpoint, data={**form, **changes})

    cases = [
        ({"code_verifier": o.new_code_verifier()}, 400, "invalid_grant"),
        ({"redirect_uri": "http://localhost:3000/other"}, 400, "invalid_grant"),
        ({"resource": "https://evil.example.com/mcp"}, 400, "invalid_target"),
        ({"client_secret": "guess"}, 401, "invalid_client"),
        ({"client_id": "someone-else"}, 401, "invalid_client"),
        ({"code": "forged"}, 400, "invalid_grant"),
    ]
    for changes, status, error in cases:
        refused = exchange(**changes)
        assert (refused.status_code, refused.json()["error"]) == (status, error), changes
    code = flow.authorize(())
    assert flow.request is not None and flow.client is not None
    form = dict(o.code_exchange_request(flow.metadata, flow.client, request=flow.request, code=code).form)
    assert http.post(flow.metadata.token_endpoint, data=form).status_code == 200
    replayed = http.post(flow.metadata.token_endpoint, data=form)
    assert (replayed.status_code, replayed.json()["error"]) == (400, "invalid_grant")


def test_dpop_proof_refusals(serve: Server, http: httpx.Client) -> None:
    base = serve({"dpop": True})
    key = o.DPoPKey.generate()
    flow = Flow(http, f"{base}/mcp", dpop_key=key)
    assert flow.call(rpc("tools/list")).status_code == 200
    tokens = flow.tokens
    assert tokens is not None and tokens.token_type == "DPoP"
    mcp = f"{base}/mcp"

    def proof(**changes: Any) -> str:
        arguments: dict[str, Any] = {
            "method": "POST",
            "url": mcp,
            "now": time.time(),
            "jti": o.new_jti(),
            "access_token": tokens.access_token,
        }
        signer = changes.pop("key", key)
        return o.dpop_proof(signer, **{**arguments, **changes})

    def send(dpop: str | None) -> tuple[int, str | None]:
        headers = {"Authorization": tokens.authorization}
        if dpop is not None:
            headers["DPoP"] = dpop
        answer = http.post(mcp, json=rpc("tools/list"), headers=headers)
        challenge = o.bearer_challenge(answer.headers.get_list("www-authenticate"), scheme="DPoP")
        return answer.status_code, None if challenge is None else challenge.error

    replayed = proof()
    assert send(replayed) == (200, None)
    assert send(replayed) == (401, "invalid_dpop_proof")
    assert send(None) == (401, "invalid_dpop_proof")
    assert send(proof(url=f"{base}/other")) == (401, "invalid_dpop_proof")
    assert send(proof(method="GET")) == (401, "invalid_dpop_proof")
    assert send(proof(access_token=None)) == (401, "invalid_dpop_proof")
    assert send(proof(now=time.time() - 600)) == (401, "invalid_dpop_proof")
    assert send(proof(key=o.DPoPKey.generate())) == (401, "invalid_token")
    assert send(proof()) == (200, None)
    token_proof = o.dpop_proof(key, method="POST", url=f"{base}/other", now=time.time(), jti=o.new_jti())
    assert flow.registrations[base].client_id
    refused = http.post(
        f"{base}/token",
        headers={"DPoP": token_proof},
        data={"grant_type": "client_credentials", "client_id": flow.registrations[base].client_id},
    )
    assert (refused.status_code, refused.json()["error"]) == (400, "invalid_dpop_proof")
