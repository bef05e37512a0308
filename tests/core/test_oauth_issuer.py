"""Authorization server metadata (mcpfsm._core.oauth.issuer; RFC 8414, OpenID Connect Discovery 1.0): the candidate
URLs, the exact issuer check, the fields a flow needs, and the 2025-03-26 legacy path with its default endpoints."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpfsm._core import oauth as o
from mcpfsm._core.errors import AuthorizationError
from tests.core.oauth_cases import (
    AS,
    MCP,
    body,
    fails,
    hosts,
)


@pytest.mark.parametrize(
    ("issuer", "expected"),
    [
        pytest.param(
            "https://a/t1",
            (
                "https://a/.well-known/oauth-authorization-server/t1",
                "https://a/.well-known/openid-configuration/t1",
                "https://a/t1/.well-known/openid-configuration",
            ),
            id="path",
        ),
        pytest.param(
            "https://a/t1/",
            (
                "https://a/.well-known/oauth-authorization-server/t1",
                "https://a/.well-known/openid-configuration/t1",
                "https://a/t1/.well-known/openid-configuration",
            ),
            id="path-trailing-slash",
        ),
        pytest.param(
            "https://a",
            ("https://a/.well-known/oauth-authorization-server", "https://a/.well-known/openid-configuration"),
            id="root",
        ),
        pytest.param(
            "https://a/",
            ("https://a/.well-known/oauth-authorization-server", "https://a/.well-known/openid-configuration"),
            id="root-slash",
        ),
        pytest.param(
            "http://127.0.0.1:9/x",
            (
                "http://127.0.0.1:9/.well-known/oauth-authorization-server/x",
                "http://127.0.0.1:9/.well-known/openid-configuration/x",
                "http://127.0.0.1:9/x/.well-known/openid-configuration",
            ),
            id="loopback-http",
        ),
    ],
)
def test_authorization_server_metadata_urls(issuer: str, expected: tuple[str, ...]) -> None:
    assert o.authorization_server_metadata_urls(issuer) == expected


@pytest.mark.parametrize("issuer", ["http://as.example.com", "https://a/t?x=1", "https://a/t#f", "as.example.com", ""])
def test_authorization_server_metadata_urls_refuses(issuer: str) -> None:
    with fails(
        f"discovering_issuer: issuer {issuer!r} is not an https URL (or http on a loopback host) without query"
        " and fragment"
    ):
        o.authorization_server_metadata_urls(issuer)


FULL_METADATA = {
    "issuer": AS,
    "authorization_endpoint": f"{AS}/authorize",
    "token_endpoint": f"{AS}/token",
    "registration_endpoint": f"{AS}/register",
    "scopes_supported": ["mcp:basic", "offline_access"],
    "grant_types_supported": ["authorization_code", "refresh_token"],
    "code_challenge_methods_supported": ["plain", "S256"],
    "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
    "authorization_response_iss_parameter_supported": True,
    "client_id_metadata_document_supported": True,
    "dpop_signing_alg_values_supported": ["ES256"],
}


def test_read_authorization_server_metadata_full() -> None:
    assert o.read_authorization_server_metadata(200, body(FULL_METADATA), expected_issuer=AS) == (
        o.AuthorizationServerMetadata(
            issuer=AS,
            authorization_endpoint=f"{AS}/authorize",
            token_endpoint=f"{AS}/token",
            registration_endpoint=f"{AS}/register",
            scopes_supported=("mcp:basic", "offline_access"),
            grant_types_supported=("authorization_code", "refresh_token"),
            code_challenge_methods_supported=("plain", "S256"),
            token_endpoint_auth_methods_supported=("none", "client_secret_basic"),
            authorization_response_iss_parameter_supported=True,
            client_id_metadata_document_supported=True,
            dpop_signing_alg_values_supported=("ES256",),
        )
    )


def test_read_authorization_server_metadata_minimal_loopback() -> None:
    issuer = "http://localhost:8080/t"
    document = {
        "issuer": issuer,
        "authorization_endpoint": "http://127.0.0.2/a",
        "token_endpoint": "http://[::1]:9/t",
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": "yes",
    }
    assert o.read_authorization_server_metadata(200, body(document), expected_issuer=issuer) == (
        o.AuthorizationServerMetadata(
            issuer=issuer,
            authorization_endpoint="http://127.0.0.2/a",
            token_endpoint="http://[::1]:9/t",
            code_challenge_methods_supported=("S256",),
        )
    )


@pytest.mark.parametrize(
    ("published", "expected"),
    [
        pytest.param("https://attacker.example.com", AS, id="other-host"),
        pytest.param(AS + "/", AS, id="trailing-slash-added"),
        pytest.param(AS, AS + "/", id="trailing-slash-dropped"),
        pytest.param("https://AS.example.com", AS, id="host-case"),
        pytest.param("https://as.example.com:443", AS, id="default-port"),
        pytest.param("https://as.example.com/t%31", "https://as.example.com/t1", id="percent-encoding"),
        pytest.param(None, AS, id="missing"),
    ],
)
def test_metadata_issuer_mismatch(published: str | None, expected: str) -> None:
    document = {**FULL_METADATA, "issuer": published}
    with fails(f"discovering_issuer: the metadata issuer {published!r} is not the expected issuer {expected!r}"):
        o.read_authorization_server_metadata(200, body(document), expected_issuer=expected)


issuers = st.builds(
    lambda host, path: f"https://{host}{path}",
    hosts,
    st.sampled_from(["", "/", "/t1", "/t1/", "/a/b"]),
)


@given(issuers, issuers)
def test_issuer_comparison_is_exact(expected: str, published: str) -> None:
    document = {**FULL_METADATA, "issuer": published}
    if published == expected:
        metadata = o.read_authorization_server_metadata(200, body(document), expected_issuer=expected)
        assert metadata is not None and metadata.issuer == expected
    else:
        with pytest.raises(AuthorizationError, match=r"^discovering_issuer: the metadata issuer "):
            o.read_authorization_server_metadata(200, body(document), expected_issuer=expected)


@given(issuers, st.sampled_from(["upper", "slash", "port"]))
def test_issuer_normalisations_are_refused(expected: str, change: str) -> None:
    host, slash, path = expected.removeprefix("https://").partition("/")
    if change == "upper":
        published = f"https://{host.upper()}{slash}{path}"
    elif change == "slash":
        published = expected[:-1] if expected.endswith("/") else expected + "/"
    else:
        published = f"https://{host}:443{slash}{path}"
    with pytest.raises(AuthorizationError, match=r"^discovering_issuer: the metadata issuer "):
        o.read_authorization_server_metadata(
            200, body({**FULL_METADATA, "issuer": published}), expected_issuer=expected
        )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        pytest.param(
            {"code_challenge_methods_supported": ["plain"]},
            "discovering_issuer: the authorization server does not advertise PKCE S256",
            id="no-s256",
        ),
        pytest.param(
            {"code_challenge_methods_supported": None},
            "discovering_issuer: the authorization server does not advertise PKCE S256",
            id="no-methods",
        ),
        pytest.param(
            {"token_endpoint": "http://as.example.com/token"},
            "discovering_issuer: token_endpoint 'http://as.example.com/token' is not an https URL (or http on a"
            " loopback host)",
            id="http-token-endpoint",
        ),
        pytest.param(
            {"authorization_endpoint": None},
            "discovering_issuer: authorization_endpoint None is not an https URL (or http on a loopback host)",
            id="no-authorization-endpoint",
        ),
        pytest.param(
            {"registration_endpoint": "http://10.0.0.1/register"},
            "discovering_issuer: registration_endpoint 'http://10.0.0.1/register' is not an https URL (or http on a"
            " loopback host)",
            id="http-registration",
        ),
        pytest.param(
            {"authorization_endpoint": f"{AS}/authorize#x"},
            f"discovering_issuer: authorization_endpoint '{AS}/authorize#x' is not an https URL (or http on a"
            " loopback host)",
            id="fragment",
        ),
    ],
)
def test_metadata_checks(changes: dict[str, Any], message: str) -> None:
    with fails(message):
        o.read_authorization_server_metadata(200, body({**FULL_METADATA, **changes}), expected_issuer=AS)


def test_metadata_for_grants_without_authorization() -> None:
    document = {"issuer": AS, "token_endpoint": f"{AS}/token"}
    assert o.read_authorization_server_metadata(
        200, body(document), expected_issuer=AS, authorization_code=False
    ) == o.AuthorizationServerMetadata(issuer=AS, authorization_endpoint=None, token_endpoint=f"{AS}/token")


def test_metadata_http_issuer_refused_even_when_equal() -> None:
    document = {**FULL_METADATA, "issuer": "http://as.example.com"}
    with fails(
        "discovering_issuer: issuer 'http://as.example.com' is not an https URL (or http on a loopback host) without"
        " query and fragment"
    ):
        o.read_authorization_server_metadata(200, body(document), expected_issuer="http://as.example.com")


@pytest.mark.parametrize(
    ("status", "content"),
    [
        pytest.param(404, b"", id="404"),
        pytest.param(301, b"", id="redirect"),
        pytest.param(200, b"<html></html>", id="html"),
        pytest.param(200, b"[]", id="array"),
    ],
)
def test_metadata_next_candidate(status: int, content: bytes) -> None:
    assert o.read_authorization_server_metadata(status, content, expected_issuer=AS) is None


@pytest.mark.parametrize("status", [429, 500, 502])
def test_metadata_server_failure(status: int) -> None:
    with fails(f"discovering_issuer: the authorization server metadata endpoint answered HTTP {status}"):
        o.read_authorization_server_metadata(status, b"", expected_issuer=AS)


def test_legacy_urls() -> None:
    assert o.legacy_issuer("https://u@h:8443/path/mcp?q") == "https://h:8443"
    assert o.legacy_metadata_url("https://h:8443/path/mcp") == "https://h:8443/.well-known/oauth-authorization-server"
    assert dict(o.LEGACY_METADATA_HEADERS) == {"Accept": "application/json", "MCP-Protocol-Version": "2025-03-26"}
    assert dict(o.METADATA_REQUEST_HEADERS) == {"Accept": "application/json"}


def test_legacy_defaults_on_404() -> None:
    assert o.read_legacy_authorization_server_metadata(404, b"", mcp_url="https://h/mcp") == (
        o.AuthorizationServerMetadata(
            issuer="https://h",
            authorization_endpoint="https://h/authorize",
            token_endpoint="https://h/token",
            registration_endpoint="https://h/register",
        )
    )


def test_legacy_metadata_on_200() -> None:
    document = {
        "issuer": "http://localhost:3000",
        "authorization_endpoint": "http://localhost:3000/oauth/authorize",
        "token_endpoint": "http://localhost:3000/oauth/token",
        "code_challenge_methods_supported": ["S256"],
    }
    metadata = o.read_legacy_authorization_server_metadata(200, body(document), mcp_url="http://localhost:3000/mcp")
    assert metadata == o.AuthorizationServerMetadata(
        issuer="http://localhost:3000",
        authorization_endpoint="http://localhost:3000/oauth/authorize",
        token_endpoint="http://localhost:3000/oauth/token",
        code_challenge_methods_supported=("S256",),
    )


@pytest.mark.parametrize(
    ("status", "content", "mcp_url", "message"),
    [
        pytest.param(500, b"", MCP, "the authorization server metadata endpoint answered HTTP 500", id="500"),
        pytest.param(401, b"", MCP, "the authorization server metadata endpoint answered HTTP 401", id="401"),
        pytest.param(200, b"<html>", MCP, "the authorization server metadata is not a JSON object", id="html"),
        pytest.param(
            200,
            body({**FULL_METADATA, "issuer": "https://other"}),
            MCP,
            "the metadata issuer 'https://other' is not the expected issuer 'https://mcp.example.com'",
            id="issuer",
        ),
        pytest.param(
            404,
            b"",
            "http://mcp.example.com/mcp",
            "issuer 'http://mcp.example.com' is not an https URL (or http on a loopback host) without query and"
            " fragment",
            id="insecure-origin",
        ),
    ],
)
def test_legacy_failures(status: int, content: bytes, mcp_url: str, message: str) -> None:
    with fails(f"discovering_issuer: {message}"):
        o.read_legacy_authorization_server_metadata(status, content, mcp_url=mcp_url)
