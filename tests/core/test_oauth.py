"""Tests of the pure authorization core, one group per protocol step, plus property tests."""

from __future__ import annotations

import base64
import inspect
import json
import re
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import given
from hypothesis import strategies as st

from mcpfsm._core import oauth as o
from mcpfsm._core.errors import AuthorizationError, McpError
from mcpfsm._core.oauth import BearerChallenge, Challenge

MCP = "https://mcp.example.com/mcp"
AS = "https://as.example.com"


def fails(message: str) -> Any:
    return pytest.raises(AuthorizationError, match="^" + re.escape(message) + "$")


def as_metadata(**changes: Any) -> o.AuthorizationServerMetadata:
    fields: dict[str, Any] = {
        "issuer": AS,
        "authorization_endpoint": f"{AS}/authorize",
        "token_endpoint": f"{AS}/token",
        "registration_endpoint": f"{AS}/register",
        "code_challenge_methods_supported": ("S256",),
        "authorization_response_iss_parameter_supported": True,
    }
    return o.AuthorizationServerMetadata(**{**fields, **changes})


def body(document: Any) -> bytes:
    return json.dumps(document).encode()


# ---------------------------------------------------------------------------------------------- errors


def test_error_message_and_fields() -> None:
    error = AuthorizationError(
        "the token endpoint answered HTTP 400",
        state="exchanging",
        error="invalid_grant",
        error_description="code used",
    )
    assert (
        str(error)
        == "exchanging: the token endpoint answered HTTP 400 (error='invalid_grant', error_description='code used')"
    )
    assert (error.state, error.reason, error.error, error.error_description) == (
        "exchanging",
        "the token endpoint answered HTTP 400",
        "invalid_grant",
        "code used",
    )
    assert str(AuthorizationError("x", state="failed", error="e")) == "failed: x (error='e')"
    assert str(AuthorizationError("x", state="failed")) == "failed: x"
    assert isinstance(error, McpError)


# ---------------------------------------------------------------------------------------------- WWW-Authenticate


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param(
            'Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="a b"',
            BearerChallenge(
                resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope=("a", "b")
            ),
            id="quoted-params",
        ),
        pytest.param('bEaReR error="invalid_token"', BearerChallenge(error="invalid_token"), id="scheme-any-case"),
        pytest.param(
            "Bearer error=insufficient_scope, scope=files:read",
            BearerChallenge(error="insufficient_scope", scope=("files:read",)),
            id="token-values",
        ),
        pytest.param(
            r'Bearer error_description="say \"hi\" \\ now"',
            BearerChallenge(error_description='say "hi" \\ now'),
            id="backslash-escapes",
        ),
        pytest.param(
            'Bearer error_description="a, b=c", scope="x"',
            BearerChallenge(error_description="a, b=c", scope=("x",)),
            id="comma-inside-quotes",
        ),
        pytest.param(
            'Basic realm="x", Bearer scope="s"', BearerChallenge(scope=("s",)), id="second-challenge-one-value"
        ),
        pytest.param(['Basic realm="x"', 'Bearer scope="s"'], BearerChallenge(scope=("s",)), id="second-field-value"),
        pytest.param(
            'Basic realm="a, Bearer scope=no", Bearer scope="yes"',
            BearerChallenge(scope=("yes",)),
            id="scheme-inside-quotes-ignored",
        ),
        pytest.param('Bearer Scope="s" ERROR="e"', BearerChallenge(scope=("s",), error="e"), id="names-any-case"),
        pytest.param(
            'Bearer realm="r", foo=bar, scope="s"', BearerChallenge(scope=("s",)), id="unknown-params-ignored"
        ),
        pytest.param('Bearer scope="", resource_metadata=""', BearerChallenge(), id="empty-means-absent"),
        pytest.param('Bearer scope="  a   b a "', BearerChallenge(scope=("a", "b")), id="scope-whitespace-and-dupes"),
        pytest.param("Bearer", BearerChallenge(), id="no-params"),
        pytest.param('Negotiate abc==, Bearer scope="s"', BearerChallenge(scope=("s",)), id="token68-before"),
        pytest.param('Bearer scope="a", Bearer scope="b"', BearerChallenge(scope=("a",)), id="first-bearer-wins"),
        pytest.param('Bearer scope="a", scope="b"', BearerChallenge(scope=("a",)), id="first-param-wins"),
        pytest.param(
            'Bearer scope = "a" ,error= e', BearerChallenge(scope=("a",), error="e"), id="whitespace-around-eq"
        ),
        pytest.param('Bearer scope="a" error="e"', BearerChallenge(scope=("a",), error="e"), id="missing-comma"),
        pytest.param('Bearer scope="a b', BearerChallenge(scope=("a", "b")), id="unterminated-quote"),
        pytest.param(
            "Bearer resource_metadata=https://h/.well-known/oauth-protected-resource",
            BearerChallenge(resource_metadata="https://h/.well-known/oauth-protected-resource"),
            id="unquoted-url",
        ),
        pytest.param(",, Bearer ,, scope=s,,", BearerChallenge(scope=("s",)), id="empty-list-elements"),
        pytest.param('Basic realm="x"', None, id="no-bearer"),
        pytest.param('Bearerx scope="s"', None, id="other-scheme-prefix"),
        pytest.param("", None, id="empty-value"),
        pytest.param([], None, id="no-values"),
        pytest.param('"Bearer" scope="s"', None, id="quoted-scheme"),
    ],
)
def test_bearer_challenge(values: str | list[str], expected: BearerChallenge | None) -> None:
    assert o.bearer_challenge(values) == expected


def test_dpop_challenge() -> None:
    values = ['Bearer scope="s"', 'DPoP error="use_dpop_nonce", error_description="nonce", algs="ES256 PS256"']
    assert o.bearer_challenge(values, scheme="DPoP") == BearerChallenge(
        error="use_dpop_nonce", error_description="nonce", algs=("ES256", "PS256")
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("Basic/abc==", (Challenge(scheme="Basic"),), id="no-space-before-token68"),
        pytest.param('Basic "x", Bearer', (Challenge(scheme="Basic"), Challenge(scheme="Bearer")), id="quoted-token68"),
        pytest.param("a=b, Bearer", (Challenge(scheme="Bearer"),), id="param-before-any-scheme"),
        pytest.param("Bearer ;x, y=z", (Challenge(scheme="Bearer", params=(("y", "z"),)),), id="junk-element-skipped"),
    ],
)
def test_parse_challenges_lenient(value: str, expected: tuple[Challenge, ...]) -> None:
    assert o.parse_challenges(value) == expected


def test_parse_challenges_whole_value() -> None:
    values = [
        'Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"',
        "Negotiate abc/+==, Bearer , DPoP algs=ES256",
    ]
    assert o.parse_challenges(values) == (
        Challenge(scheme="Newauth", params=(("realm", "apps"), ("type", "1"), ("title", 'Login to "apps"'))),
        Challenge(scheme="Basic", params=(("realm", "simple"),)),
        Challenge(scheme="Negotiate", token68="abc/+=="),
        Challenge(scheme="Bearer"),
        Challenge(scheme="DPoP", params=(("algs", "ES256"),)),
    )
    assert o.parse_challenges(values)[0].param("TITLE") == 'Login to "apps"'
    assert o.parse_challenges(values)[0].param("missing") is None


@pytest.mark.parametrize(
    "garbage",
    ["=", '"', "\\", '="', 'Bearer ="', 'Bearer a="\\', ", ,", "\x00\x7f", "Bearer \t", "Bearer a=b=c=", "é=ü, Bearer"],
)
def test_garbage_never_raises(garbage: str) -> None:
    o.parse_challenges(garbage)
    o.bearer_challenge(garbage)


@given(st.one_of(st.text(), st.lists(st.text(), max_size=4)))
def test_parser_never_raises(values: str | list[str]) -> None:
    challenges = o.parse_challenges(values)
    assert all(isinstance(challenge, Challenge) for challenge in challenges)
    o.bearer_challenge(values)
    o.bearer_challenge(values, scheme="DPoP")


TCHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
tokens = st.text(TCHARS, min_size=1, max_size=8)
token68s = st.from_regex(r"[A-Za-z0-9\-._~+/]{1,10}={0,2}", fullmatch=True)
values = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.just("\t"), max_size=12)


@st.composite
def challenges(draw: st.DrawFn) -> tuple[Challenge, str]:
    scheme = draw(tokens)
    if draw(st.booleans()) and draw(st.booleans()):
        token68 = draw(token68s)
        return Challenge(scheme=scheme, token68=token68), f"{scheme} {token68}"
    names = draw(st.lists(tokens, max_size=4, unique_by=str.lower))
    params: list[tuple[str, str]] = []
    rendered: list[str] = []
    for name in names:
        value = draw(values)
        params.append((name.lower(), value))
        if value and all(char in TCHARS for char in value) and draw(st.booleans()):
            rendered.append(f"{name}={value}")
        else:
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')
            rendered.append(f'{name}="{escaped}"')
    text = f"{scheme} {', '.join(rendered)}" if rendered else scheme
    return Challenge(scheme=scheme, params=tuple(params)), text


@given(st.lists(challenges(), min_size=1, max_size=4), st.data())
def test_challenges_round_trip(drawn: list[tuple[Challenge, str]], data: st.DataObject) -> None:
    expected = tuple(challenge for challenge, _ in drawn)
    texts = [text for _, text in drawn]
    assert o.parse_challenges(", ".join(texts)) == expected
    cut = data.draw(st.integers(min_value=0, max_value=len(texts)))
    fields = [", ".join(texts[:cut]), ", ".join(texts[cut:])]
    assert o.parse_challenges(fields) == expected


# ---------------------------------------------------------------------------------------------- PRM discovery


@pytest.mark.parametrize(
    ("mcp_url", "hint", "expected"),
    [
        pytest.param(
            "https://h/public/mcp",
            None,
            (
                "https://h/.well-known/oauth-protected-resource/public/mcp",
                "https://h/.well-known/oauth-protected-resource",
            ),
            id="path-then-root",
        ),
        pytest.param(
            "https://h/public/mcp",
            "https://h/.well-known/oauth-protected-resource/public/mcp",
            (
                "https://h/.well-known/oauth-protected-resource/public/mcp",
                "https://h/.well-known/oauth-protected-resource",
            ),
            id="hint-equal-to-path-deduplicated",
        ),
        pytest.param(
            "https://h/mcp",
            "https://h/custom/metadata/location.json",
            (
                "https://h/custom/metadata/location.json",
                "https://h/.well-known/oauth-protected-resource/mcp",
                "https://h/.well-known/oauth-protected-resource",
            ),
            id="hint-first",
        ),
        pytest.param("https://h/", None, ("https://h/.well-known/oauth-protected-resource",), id="root-path"),
        pytest.param("https://h", None, ("https://h/.well-known/oauth-protected-resource",), id="empty-path"),
        pytest.param(
            "https://user:pw@H:8443/mcp/?x=1#f",
            None,
            (
                "https://H:8443/.well-known/oauth-protected-resource/mcp/",
                "https://H:8443/.well-known/oauth-protected-resource",
            ),
            id="port-kept-userinfo-query-fragment-dropped",
        ),
        pytest.param(
            "https://h/mcp",
            "/relative",
            ("https://h/.well-known/oauth-protected-resource/mcp", "https://h/.well-known/oauth-protected-resource"),
            id="relative-hint",
        ),
        pytest.param(
            "https://h/mcp",
            "ftp://h/x",
            ("https://h/.well-known/oauth-protected-resource/mcp", "https://h/.well-known/oauth-protected-resource"),
            id="ftp-hint",
        ),
        pytest.param(
            "https://h/mcp",
            "http://[::1",
            ("https://h/.well-known/oauth-protected-resource/mcp", "https://h/.well-known/oauth-protected-resource"),
            id="broken-hint",
        ),
    ],
)
def test_protected_resource_metadata_urls(mcp_url: str, hint: str | None, expected: tuple[str, ...]) -> None:
    challenge = None if hint is None else BearerChallenge(resource_metadata=hint)
    assert o.protected_resource_metadata_urls(mcp_url, challenge) == expected


def test_read_protected_resource_metadata_usable() -> None:
    document = {
        "resource": "https://mcp.example.com/mcp",
        "authorization_servers": ["https://as.example.com", "https://as2.example.com/t"],
        "scopes_supported": ["mcp:basic", "mcp:read"],
        "dpop_signing_alg_values_supported": ["ES256"],
        "dpop_bound_access_tokens_required": True,
        "bearer_methods_supported": ["header"],
    }
    assert o.read_protected_resource_metadata(200, body(document)) == o.ProtectedResourceMetadata(
        resource="https://mcp.example.com/mcp",
        authorization_servers=("https://as.example.com", "https://as2.example.com/t"),
        scopes_supported=("mcp:basic", "mcp:read"),
        dpop_signing_alg_values_supported=("ES256",),
        dpop_bound_access_tokens_required=True,
    )
    minimal = {"resource": MCP, "authorization_servers": [AS], "scopes_supported": "mcp:basic"}
    assert o.read_protected_resource_metadata(200, body(minimal)) == o.ProtectedResourceMetadata(
        resource=MCP, authorization_servers=(AS,)
    )


@pytest.mark.parametrize(
    ("status", "content"),
    [
        pytest.param(404, body({"resource": MCP, "authorization_servers": [AS]}), id="404"),
        pytest.param(302, b"", id="redirect"),
        pytest.param(401, b"", id="401"),
        pytest.param(204, b"", id="204"),
        pytest.param(200, b"<html>", id="not-json"),
        pytest.param(200, body([MCP]), id="array"),
        pytest.param(200, body({"authorization_servers": [AS]}), id="no-resource"),
        pytest.param(200, body({"resource": 1, "authorization_servers": [AS]}), id="resource-not-string"),
        pytest.param(200, body({"resource": MCP, "authorization_servers": []}), id="no-servers"),
        pytest.param(200, body({"resource": MCP, "authorization_servers": AS}), id="servers-not-list"),
        pytest.param(200, body({"resource": MCP, "authorization_servers": [AS, 3]}), id="server-not-string"),
        pytest.param(200, body({"resource": MCP, "authorization_servers": [""]}), id="server-empty"),
        pytest.param(200, b"\xff\xfe", id="not-utf8"),
    ],
)
def test_read_protected_resource_metadata_next_candidate(status: int, content: bytes) -> None:
    assert o.read_protected_resource_metadata(status, content) is None


@pytest.mark.parametrize("status", [429, 500, 503])
def test_read_protected_resource_metadata_raises(status: int) -> None:
    with fails(f"discovering_resource: the protected resource metadata endpoint answered HTTP {status}"):
        o.read_protected_resource_metadata(status, b"")


@pytest.mark.parametrize(
    ("resource", "mcp_url", "expected"),
    [
        pytest.param("https://h/mcp", "https://h/mcp", True, id="identical"),
        pytest.param("https://h/mcp/", "https://h/mcp", True, id="resource-trailing-slash"),
        pytest.param("https://h/mcp", "https://h/mcp/", True, id="url-trailing-slash"),
        pytest.param("https://h/mcp", "https://h/mcp/x", True, id="segment-prefix"),
        pytest.param("https://h", "https://h/mcp", True, id="bare-origin"),
        pytest.param("https://h/", "https://h/mcp", True, id="origin-slash"),
        pytest.param("https://H.Example.COM/mcp", "https://h.example.com/mcp", True, id="host-case"),
        pytest.param("HTTPS://h/mcp", "https://h/mcp", True, id="scheme-case"),
        pytest.param("https://h:443/mcp", "https://h/mcp", True, id="explicit-default-port"),
        pytest.param("http://h/mcp", "http://h:80/mcp", True, id="implicit-default-port"),
        pytest.param("https://h/mcp", "https://h/mcp?x=1", True, id="url-query-ignored"),
        pytest.param("https://h/mcp?x=1", "https://h/mcp?x=1", True, id="same-query"),
        pytest.param("https://h/mcp", "https://h/mcpx", False, id="not-a-segment-prefix"),
        pytest.param("https://h/mcp/x", "https://h/mcp", False, id="longer-path"),
        pytest.param("https://h/MCP", "https://h/mcp", False, id="path-case"),
        pytest.param("https://h/mcp//", "https://h/mcp", False, id="two-trailing-slashes"),
        pytest.param("http://h/mcp", "https://h/mcp", False, id="scheme"),
        pytest.param("https://evil.example.com/mcp", "https://h/mcp", False, id="host"),
        pytest.param("https://h.evil/mcp", "https://h/mcp", False, id="host-suffix"),
        pytest.param("https://h:8443/mcp", "https://h/mcp", False, id="port"),
        pytest.param("https://h/mcp#f", "https://h/mcp", False, id="fragment"),
        pytest.param("https://u@h/mcp", "https://h/mcp", False, id="userinfo"),
        pytest.param("https://h/mcp?x=2", "https://h/mcp?x=1", False, id="other-query"),
        pytest.param("https://h:99999/mcp", "https://h/mcp", False, id="bad-port"),
        pytest.param("mcp", "https://h/mcp", False, id="relative"),
        pytest.param("", "https://h/mcp", False, id="empty"),
    ],
)
def test_resource_matches(resource: str, mcp_url: str, expected: bool) -> None:
    assert o.resource_matches(resource, mcp_url) is expected


def test_check_resource() -> None:
    o.check_resource(o.ProtectedResourceMetadata(resource="https://mcp.example.com", authorization_servers=(AS,)), MCP)
    evil = o.ProtectedResourceMetadata(resource="https://evil.example.com/mcp", authorization_servers=(AS,))
    with fails(
        "discovering_resource: the protected resource metadata names resource 'https://evil.example.com/mcp',"
        " not this server 'https://mcp.example.com/mcp'"
    ):
        o.check_resource(evil, MCP)


hosts = st.from_regex(r"[a-z][a-z0-9]{0,8}(\.[a-z][a-z0-9]{0,8}){0,2}", fullmatch=True)
segments = st.lists(st.text("abcxyz019-._~%", min_size=1, max_size=5), max_size=4)


def randomly_cased(data: st.DataObject, text: str) -> str:
    flips = data.draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(char.upper() if flip else char for char, flip in zip(text, flips, strict=True))


@given(st.data(), st.sampled_from(["http", "https"]), hosts, st.none() | st.integers(1, 65535), segments)
def test_resource_matches_properties(
    data: st.DataObject, scheme: str, host: str, port: int | None, path: list[str]
) -> None:
    netloc = host if port is None else f"{host}:{port}"
    mcp_url = f"{scheme}://{netloc}/" + "/".join(path)
    cut = data.draw(st.integers(0, len(path)))
    prefix = "/".join(path[:cut])
    default = {"http": 80, "https": 443}[scheme]
    same_port = data.draw(st.sampled_from([port, default] if port in (None, default) else [port]))
    resource_netloc = randomly_cased(data, host) + ("" if same_port is None else f":{same_port}")
    resource = f"{scheme}://{resource_netloc}/{prefix}" + (data.draw(st.sampled_from(["", "/"])) if prefix else "")
    assert o.resource_matches(resource, mcp_url)
    assert o.resource_matches(mcp_url, mcp_url)
    assert not o.resource_matches(f"{scheme}://x{host}/{prefix}", mcp_url)
    assert not o.resource_matches(f"{'https' if scheme == 'http' else 'http'}://{netloc}/{prefix}", mcp_url)
    if path and cut == len(path):
        assert not o.resource_matches(f"{scheme}://{netloc}/{prefix}x", mcp_url)
    other_port = (port or default) % 65535 + 1
    assert not o.resource_matches(f"{scheme}://{host}:{other_port}/{prefix}", mcp_url)


@pytest.mark.parametrize(
    ("servers", "known", "expected"),
    [
        pytest.param(("https://a", "https://b"), (), "https://a", id="first"),
        pytest.param(("https://a", "https://b"), ("https://b",), "https://b", id="known"),
        pytest.param(("https://a", "https://b"), ("https://b", "https://a"), "https://a", id="first-known"),
        pytest.param(("https://a/",), ("https://a",), "https://a/", id="verbatim"),
    ],
)
def test_choose_authorization_server(servers: tuple[str, ...], known: tuple[str, ...], expected: str) -> None:
    metadata = o.ProtectedResourceMetadata(resource=MCP, authorization_servers=servers)
    assert o.choose_authorization_server(metadata, known) == expected


# ---------------------------------------------------------------------------------------------- AS metadata


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


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("localhost", True),
        ("LOCALHOST", True),
        ("127.0.0.1", True),
        ("127.255.0.9", True),
        ("::1", True),
        ("[::1]", True),
        ("128.0.0.1", False),
        ("localhost.example.com", False),
        ("10.0.0.1", False),
        ("", False),
        (None, False),
    ],
)
def test_is_loopback_host(host: str | None, expected: bool) -> None:
    assert o.is_loopback_host(host) is expected


# ---------------------------------------------------------------------------------------------- legacy 2025-03-26


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


# ---------------------------------------------------------------------------------------------- client identification

PRE = o.PreRegisteredClient(issuer=AS, client_id="pre", client_secret="s")
OTHER = o.PreRegisteredClient(issuer="https://other.example.com", client_id="x")
CIMD_URL = "https://client.example.com/client-metadata.json"


@pytest.mark.parametrize(
    ("metadata", "pre_registered", "cimd_url", "expected"),
    [
        pytest.param(
            as_metadata(client_id_metadata_document_supported=True),
            (OTHER, PRE),
            CIMD_URL,
            o.ClientIdentification.pre_registered,
            id="pre-registered-first",
        ),
        pytest.param(
            as_metadata(client_id_metadata_document_supported=True),
            (),
            CIMD_URL,
            o.ClientIdentification.client_metadata_document,
            id="cimd",
        ),
        pytest.param(
            as_metadata(client_id_metadata_document_supported=True),
            (),
            None,
            o.ClientIdentification.dynamic_registration,
            id="cimd-unconfigured",
        ),
        pytest.param(as_metadata(), (), CIMD_URL, o.ClientIdentification.dynamic_registration, id="cimd-unsupported"),
    ],
)
def test_choose_client_identification(
    metadata: o.AuthorizationServerMetadata,
    pre_registered: tuple[o.PreRegisteredClient, ...],
    cimd_url: str | None,
    expected: o.ClientIdentification,
) -> None:
    assert (
        o.choose_client_identification(metadata, pre_registered=pre_registered, client_metadata_url=cimd_url)
        == expected
    )


def test_choose_client_identification_refuses() -> None:
    with fails(
        "registering: the pre-registered credentials belong to ['https://other.example.com'], not to"
        " 'https://as.example.com'"
    ):
        o.choose_client_identification(
            as_metadata(client_id_metadata_document_supported=True),
            pre_registered=(OTHER,),
            client_metadata_url=CIMD_URL,
        )
    with fails(
        "registering: 'https://as.example.com' offers no client registration and no credentials are configured for it"
    ):
        o.choose_client_identification(as_metadata(registration_endpoint=None))


@pytest.mark.parametrize(
    ("supported", "has_secret", "configured", "expected"),
    [
        pytest.param(None, True, None, "client_secret_basic", id="absent-means-basic"),
        pytest.param(("client_secret_post",), True, None, "client_secret_post", id="post-only"),
        pytest.param(
            ("client_secret_post", "client_secret_basic"), True, None, "client_secret_basic", id="basic-preferred"
        ),
        pytest.param(("none",), True, None, "client_secret_post", id="secret-but-none-listed"),
        pytest.param(("client_secret_basic",), False, None, "none", id="no-secret"),
        pytest.param(("client_secret_basic",), True, "client_secret_post", "client_secret_post", id="configured"),
    ],
)
def test_pre_registered_auth_method(
    supported: tuple[str, ...] | None, has_secret: bool, configured: Any, expected: str
) -> None:
    metadata = as_metadata(token_endpoint_auth_methods_supported=supported)
    assert o.pre_registered_auth_method(metadata, has_secret=has_secret, configured=configured) == expected


@pytest.mark.parametrize(
    ("supported", "expected"),
    [
        pytest.param(None, "client_secret_basic", id="absent"),
        pytest.param(("client_secret_basic", "none"), "none", id="none-first"),
        pytest.param(("client_secret_post", "client_secret_basic"), "client_secret_basic", id="basic"),
        pytest.param(("client_secret_post",), "client_secret_post", id="post"),
        pytest.param(("private_key_jwt",), "client_secret_post", id="otherwise-post"),
    ],
)
def test_registration_auth_method(supported: tuple[str, ...] | None, expected: str) -> None:
    assert o.registration_auth_method(as_metadata(token_endpoint_auth_methods_supported=supported)) == expected


def test_registration_request() -> None:
    assert o.registration_request(
        client_name="mcpfsm", redirect_uris=["http://127.0.0.1:27418/callback"], token_endpoint_auth_method="none"
    ) == {
        "client_name": "mcpfsm",
        "redirect_uris": ["http://127.0.0.1:27418/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    }


def test_client_metadata_document() -> None:
    assert o.client_metadata_document(
        client_metadata_url=CIMD_URL, client_name="mcpfsm", redirect_uris=("http://localhost:3000/callback",)
    ) == {
        "client_id": CIMD_URL,
        "client_name": "mcpfsm",
        "redirect_uris": ["http://localhost:3000/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


@pytest.mark.parametrize("url", ["http://c.example.com/m.json", "https://c.example.com", "https://c.example.com/", "x"])
def test_check_client_metadata_url(url: str) -> None:
    with pytest.raises(
        ValueError, match="^" + re.escape(f"client_metadata_url {url!r} must be an https URL with a path") + "$"
    ):
        o.check_client_metadata_url(url)


@pytest.mark.parametrize(
    ("status", "answer", "requested", "expected"),
    [
        pytest.param(
            201,
            {"client_id": "c1", "client_secret": "s1", "token_endpoint_auth_method": "client_secret_basic"},
            "none",
            o.ClientRegistration(
                issuer=AS, client_id="c1", client_secret="s1", token_endpoint_auth_method="client_secret_basic"
            ),
            id="server-assigns-basic",
        ),
        pytest.param(
            200,
            {"client_id": "c2"},
            "none",
            o.ClientRegistration(issuer=AS, client_id="c2", token_endpoint_auth_method="none"),
            id="requested-kept",
        ),
        pytest.param(
            201,
            {"client_id": "c3", "client_secret": "s3"},
            "client_secret_post",
            o.ClientRegistration(
                issuer=AS, client_id="c3", client_secret="s3", token_endpoint_auth_method="client_secret_post"
            ),
            id="post",
        ),
    ],
)
def test_read_registration_response(
    status: int, answer: dict[str, Any], requested: Any, expected: o.ClientRegistration
) -> None:
    assert o.read_registration_response(status, body(answer), issuer=AS, requested_method=requested) == expected


@pytest.mark.parametrize(
    ("status", "content", "message"),
    [
        pytest.param(
            400,
            body({"error": "invalid_redirect_uri", "error_description": "no"}),
            "registering: the registration endpoint answered HTTP 400 (error='invalid_redirect_uri',"
            " error_description='no')",
            id="error",
        ),
        pytest.param(500, b"oops", "registering: the registration endpoint answered HTTP 500", id="500"),
        pytest.param(
            201, body({"client_secret": "s"}), "registering: the registration answer has no client_id", id="no-id"
        ),
        pytest.param(201, b"x", "registering: the registration answer has no client_id", id="not-json"),
        pytest.param(
            201,
            body({"client_id": "c", "token_endpoint_auth_method": "tls_client_auth"}),
            "registering: the registration answer assigns token endpoint auth method 'tls_client_auth'",
            id="unknown-method",
        ),
        pytest.param(
            201,
            body({"client_id": "c", "token_endpoint_auth_method": "client_secret_basic"}),
            "registering: the registration answer assigns client_secret_basic but no client_secret",
            id="basic-without-secret",
        ),
    ],
)
def test_read_registration_response_fails(status: int, content: bytes, message: str) -> None:
    with fails(message):
        o.read_registration_response(status, content, issuer=AS, requested_method="none")


# ---------------------------------------------------------------------------------------------- scopes


@pytest.mark.parametrize(
    ("challenge", "prm_scopes", "expected"),
    [
        pytest.param(BearerChallenge(scope=("mcp:basic",)), ("a", "b"), ("mcp:basic",), id="challenge-wins"),
        pytest.param(BearerChallenge(), ("a", "b", "a"), ("a", "b"), id="prm-scopes"),
        pytest.param(None, ("a",), ("a",), id="no-challenge"),
        pytest.param(BearerChallenge(), None, (), id="none"),
        pytest.param(BearerChallenge(), (), (), id="empty-prm-list"),
    ],
)
def test_requested_scopes(
    challenge: BearerChallenge | None, prm_scopes: tuple[str, ...] | None, expected: tuple[str, ...]
) -> None:
    prm = o.ProtectedResourceMetadata(resource=MCP, authorization_servers=(AS,), scopes_supported=prm_scopes)
    assert o.requested_scopes(challenge, prm) == expected


def test_requested_scopes_without_metadata() -> None:
    assert o.requested_scopes(None, None) == ()


@pytest.mark.parametrize(
    ("scopes", "supported", "wanted", "expected"),
    [
        pytest.param(
            ("mcp:basic",), ("mcp:basic", "offline_access"), True, ("mcp:basic", "offline_access"), id="added"
        ),
        pytest.param(("mcp:basic",), ("mcp:basic", "mcp:read"), True, ("mcp:basic",), id="not-supported"),
        pytest.param(("mcp:basic",), None, True, ("mcp:basic",), id="no-list"),
        pytest.param((), ("offline_access",), True, (), id="empty-scope-set"),
        pytest.param(("mcp:basic",), ("offline_access",), False, ("mcp:basic",), id="refresh-unwanted"),
        pytest.param(("offline_access", "a"), ("offline_access",), True, ("offline_access", "a"), id="already-there"),
    ],
)
def test_with_offline_access(
    scopes: tuple[str, ...], supported: tuple[str, ...] | None, wanted: bool, expected: tuple[str, ...]
) -> None:
    assert o.with_offline_access(scopes, as_metadata(scopes_supported=supported), refresh_wanted=wanted) == expected


def test_step_up_scopes_and_parameter() -> None:
    assert o.step_up_scopes(("mcp:basic", "offline_access"), ("mcp:write", "mcp:basic")) == (
        "mcp:basic",
        "offline_access",
        "mcp:write",
    )
    assert o.scope_parameter(("a", "b")) == "a b"
    assert o.scope_parameter(()) is None


# ---------------------------------------------------------------------------------------------- authorization request

VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_code_challenge_rfc7636_vector() -> None:
    assert o.code_challenge(VERIFIER) == CHALLENGE


@pytest.mark.parametrize("verifier", ["short", "x" * 129, "a" * 42 + "!", "é" * 43])
def test_code_challenge_refuses(verifier: str) -> None:
    with pytest.raises(ValueError, match=r"^a PKCE code verifier is 43-128 characters of \[A-Za-z0-9-._~\]$"):
        o.code_challenge(verifier)


def test_fresh_values() -> None:
    verifier, state, jti = o.new_code_verifier(), o.new_state(), o.new_jti()
    assert re.fullmatch(r"[A-Za-z0-9_-]{86}", verifier)
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", state)
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", jti)
    assert o.code_challenge(verifier)
    assert verifier != o.new_code_verifier()
    assert state != o.new_state()


def make_request(**changes: Any) -> o.AuthorizationRequest:
    arguments: dict[str, Any] = {
        "client_id": "client 1",
        "redirect_uri": "http://127.0.0.1:27418/callback",
        "resource": MCP,
        "scopes": ("mcp:basic", "offline_access"),
        "state": "st-1",
        "code_verifier": VERIFIER,
    }
    metadata = changes.pop("metadata", as_metadata())
    return o.authorization_request(metadata, **{**arguments, **changes})


def test_authorization_request() -> None:
    request = make_request()
    assert request == o.AuthorizationRequest(
        url=(
            "https://as.example.com/authorize?response_type=code&client_id=client+1"
            "&redirect_uri=http%3A%2F%2F127.0.0.1%3A27418%2Fcallback&scope=mcp%3Abasic+offline_access&state=st-1"
            f"&code_challenge={CHALLENGE}&code_challenge_method=S256&resource=https%3A%2F%2Fmcp.example.com%2Fmcp"
        ),
        issuer=AS,
        iss_expected=True,
        client_id="client 1",
        redirect_uri="http://127.0.0.1:27418/callback",
        resource=MCP,
        scopes=("mcp:basic", "offline_access"),
        state="st-1",
        code_verifier=VERIFIER,
    )
    assert repr(request) == (
        "AuthorizationRequest(issuer='https://as.example.com', iss_expected=True, client_id='client 1',"
        " redirect_uri='http://127.0.0.1:27418/callback', resource='https://mcp.example.com/mcp',"
        " scopes=('mcp:basic', 'offline_access'))"
    )


def test_authorization_request_keeps_endpoint_query_and_omits_empty() -> None:
    metadata = as_metadata(
        authorization_endpoint=f"{AS}/authorize?tenant=t1", authorization_response_iss_parameter_supported=False
    )
    request = make_request(metadata=metadata, scopes=(), resource=None)
    assert request.url == (
        "https://as.example.com/authorize?tenant=t1&response_type=code&client_id=client+1"
        f"&redirect_uri=http%3A%2F%2F127.0.0.1%3A27418%2Fcallback&state=st-1&code_challenge={CHALLENGE}"
        "&code_challenge_method=S256"
    )
    assert request.iss_expected is False


def test_authorization_request_needs_endpoint() -> None:
    with fails("authorizing: 'https://as.example.com' has no authorization endpoint"):
        make_request(metadata=as_metadata(authorization_endpoint=None))


CALLBACK = "http://127.0.0.1:27418/callback"


@pytest.mark.parametrize(
    ("iss_expected", "query", "outcome"),
    [
        pytest.param(True, f"code=c1&state=st-1&iss={AS}", "c1", id="advertised-correct"),
        pytest.param(False, "code=c1&state=st-1", "c1", id="unadvertised-absent"),
        pytest.param(False, f"state=st-1&code=c1&iss={AS}", "c1", id="unadvertised-correct"),
        pytest.param(True, "code=c1", "the redirect's state is missing or does not match the request", id="no-state"),
        pytest.param(
            True,
            f"code=c1&state=st-2&iss={AS}",
            "the redirect's state is missing or does not match the request",
            id="state-mismatch",
        ),
        pytest.param(
            True,
            f"code=c1&state=st-1&state=st-1&iss={AS}",
            "the redirect's state is missing or does not match the request",
            id="state-twice",
        ),
        pytest.param(
            True,
            "state=st-%C3%A9&code=c1",
            "the redirect's state is missing or does not match the request",
            id="state-non-ascii",
        ),
        pytest.param(
            True,
            "error=access_denied",
            "the redirect's state is missing or does not match the request",
            id="state-checked-before-error",
        ),
        pytest.param(
            True,
            "code=c1&state=st-1",
            "the redirect has no iss though 'https://as.example.com' advertises"
            " authorization_response_iss_parameter_supported",
            id="advertised-missing",
        ),
        pytest.param(
            True,
            "code=c1&state=st-1&iss=https://evil.example.com",
            "the redirect's iss 'https://evil.example.com' is not the issuer 'https://as.example.com'",
            id="advertised-wrong",
        ),
        pytest.param(
            False,
            "code=c1&state=st-1&iss=https://evil.example.com",
            "the redirect's iss 'https://evil.example.com' is not the issuer 'https://as.example.com'",
            id="unadvertised-wrong",
        ),
        pytest.param(
            True,
            f"code=c1&state=st-1&iss={AS}/",
            "the redirect's iss 'https://as.example.com/' is not the issuer 'https://as.example.com'",
            id="no-normalisation-slash",
        ),
        pytest.param(
            True,
            "code=c1&state=st-1&iss=https://AS.example.com",
            "the redirect's iss 'https://AS.example.com' is not the issuer 'https://as.example.com'",
            id="no-normalisation-case",
        ),
        pytest.param(
            True, f"code=c1&state=st-1&iss={AS}&iss={AS}", "the redirect carries iss more than once", id="iss-twice"
        ),
        pytest.param(
            True,
            "error=access_denied&state=st-1&iss=https://evil.example.com",
            "the redirect's iss 'https://evil.example.com' is not the issuer 'https://as.example.com'",
            id="iss-checked-before-error",
        ),
        pytest.param(True, f"state=st-1&iss={AS}", "the redirect carries no single authorization code", id="no-code"),
        pytest.param(
            True, f"code=&state=st-1&iss={AS}", "the redirect carries no single authorization code", id="empty-code"
        ),
        pytest.param(
            True,
            f"code=a&code=b&state=st-1&iss={AS}",
            "the redirect carries no single authorization code",
            id="two-codes",
        ),
    ],
)
def test_read_authorization_response(iss_expected: bool, query: str, outcome: str) -> None:
    request = make_request(metadata=as_metadata(authorization_response_iss_parameter_supported=iss_expected))
    if outcome == "c1":
        assert o.read_authorization_response(request, f"{CALLBACK}?{query}") == "c1"
    else:
        with fails(f"authorizing: {outcome}"):
            o.read_authorization_response(request, f"{CALLBACK}?{query}")


def test_read_authorization_response_error_fields() -> None:
    request = make_request()
    url = f"{CALLBACK}?error=access_denied&error_description=User+said+no&state=st-1&iss={AS}"
    with fails(
        "authorizing: the authorization server refused the authorization request"
        " (error='access_denied', error_description='User said no')"
    ) as caught:
        o.read_authorization_response(request, url)
    assert (caught.value.error, caught.value.error_description) == ("access_denied", "User said no")


def test_read_authorization_response_garbage_url() -> None:
    with fails("authorizing: the redirect's state is missing or does not match the request"):
        o.read_authorization_response(make_request(), "http://[::1")


# ---------------------------------------------------------------------------------------------- token requests

FORM = ("Content-Type", "application/x-www-form-urlencoded")
ACCEPT = ("Accept", "application/json")


@pytest.mark.parametrize(
    ("client", "extra_headers", "client_form"),
    [
        pytest.param(o.ClientAuthentication(client_id="c1"), (), (("client_id", "c1"),), id="none"),
        pytest.param(
            o.ClientAuthentication(client_id="c1", method="client_secret_post", client_secret="s1"),
            (),
            (("client_id", "c1"), ("client_secret", "s1")),
            id="post",
        ),
        pytest.param(
            o.ClientAuthentication(client_id="id:1", method="client_secret_basic", client_secret="s p&c"),
            (("Authorization", "Basic " + base64.b64encode(b"id%3A1:s+p%26c").decode()),),
            (),
            id="basic-form-encoded",
        ),
        pytest.param(
            o.ClientAuthentication(client_id="c1", method="private_key_jwt", client_assertion="a.b.c"),
            (),
            (
                ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
                ("client_assertion", "a.b.c"),
            ),
            id="private-key-jwt",
        ),
    ],
)
def test_code_exchange_request(
    client: o.ClientAuthentication, extra_headers: tuple[tuple[str, str], ...], client_form: tuple[tuple[str, str], ...]
) -> None:
    request = make_request()
    token_request = o.code_exchange_request(as_metadata(), client, request=request, code="code-1")
    assert token_request == o.TokenRequest(
        url=f"{AS}/token",
        grant_type="authorization_code",
        headers=(ACCEPT, FORM, *extra_headers),
        form=(
            ("grant_type", "authorization_code"),
            ("code", "code-1"),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
            ("resource", MCP),
            *client_form,
        ),
    )
    assert repr(token_request) == "TokenRequest(url='https://as.example.com/token', grant_type='authorization_code')"


def test_code_exchange_without_resource() -> None:
    token_request = o.code_exchange_request(
        as_metadata(), o.ClientAuthentication(client_id="c"), request=make_request(resource=None), code="x"
    )
    assert token_request.body == (
        b"grant_type=authorization_code&code=x&redirect_uri=http%3A%2F%2F127.0.0.1%3A27418%2Fcallback"
        b"&code_verifier=" + VERIFIER.encode() + b"&client_id=c"
    )


def test_refresh_request() -> None:
    client = o.ClientAuthentication(client_id="c1", method="client_secret_post", client_secret="s1")
    assert o.refresh_request(as_metadata(), client, refresh_token="rt-1", resource=MCP) == o.TokenRequest(
        url=f"{AS}/token",
        grant_type="refresh_token",
        headers=(ACCEPT, FORM),
        form=(
            ("grant_type", "refresh_token"),
            ("refresh_token", "rt-1"),
            ("resource", MCP),
            ("client_id", "c1"),
            ("client_secret", "s1"),
        ),
    )


def test_client_credentials_request_basic() -> None:
    client = o.ClientAuthentication(
        client_id="conformance-test-client", method="client_secret_basic", client_secret="conformance-test-secret"
    )
    basic = base64.b64encode(b"conformance-test-client:conformance-test-secret").decode()
    assert o.client_credentials_request(as_metadata(), client, resource=MCP, scopes=("a", "b")) == o.TokenRequest(
        url=f"{AS}/token",
        grant_type="client_credentials",
        headers=(ACCEPT, FORM, ("Authorization", f"Basic {basic}")),
        form=(("grant_type", "client_credentials"), ("resource", MCP), ("scope", "a b")),
    )


def ec_private_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def test_client_assertion_and_private_key_jwt_request() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    assertion = o.client_assertion(
        client_id="cc-client", audience=AS, private_key_pem=ec_private_pem(key), now=1_700_000_000.7, jti="j-1"
    )
    assert jwt.get_unverified_header(assertion) == {"alg": "ES256", "typ": "JWT"}
    claims = jwt.decode(assertion, key.public_key(), algorithms=["ES256"], audience=AS, options={"verify_exp": False})
    assert claims == {
        "iss": "cc-client",
        "sub": "cc-client",
        "aud": AS,
        "iat": 1_700_000_000,
        "exp": 1_700_000_300,
        "jti": "j-1",
    }
    client = o.ClientAuthentication(client_id="cc-client", method="private_key_jwt", client_assertion=assertion)
    assert o.client_credentials_request(as_metadata(), client, resource=MCP, scopes=()).form == (
        ("grant_type", "client_credentials"),
        ("resource", MCP),
        ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
        ("client_assertion", assertion),
    )


def test_client_assertion_bad_key() -> None:
    with pytest.raises(ValueError, match=r"^the private key cannot sign a client assertion with ES256$"):
        o.client_assertion(client_id="c", audience=AS, private_key_pem="not a key", now=0, jti="j")


def test_jwt_bearer_request() -> None:
    client = o.ClientAuthentication(client_id="wl")
    assert o.jwt_bearer_request(
        as_metadata(), client, assertion="h.p.s", resource=MCP, scopes=("s",)
    ) == o.TokenRequest(
        url=f"{AS}/token",
        grant_type="urn:ietf:params:oauth:grant-type:jwt-bearer",
        headers=(ACCEPT, FORM),
        form=(
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
            ("assertion", "h.p.s"),
            ("resource", MCP),
            ("scope", "s"),
            ("client_id", "wl"),
        ),
    )


def test_token_exchange_request() -> None:
    client = o.ClientAuthentication(client_id="idp-client")
    assert o.token_exchange_request(
        "https://idp.example.com/token", client, subject_token="id-token", audience=AS, resource=MCP, scopes=("a",)
    ) == o.TokenRequest(
        url="https://idp.example.com/token",
        grant_type="urn:ietf:params:oauth:grant-type:token-exchange",
        headers=(ACCEPT, FORM),
        form=(
            ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
            ("requested_token_type", "urn:ietf:params:oauth:token-type:id-jag"),
            ("audience", AS),
            ("resource", MCP),
            ("scope", "a"),
            ("subject_token", "id-token"),
            ("subject_token_type", "urn:ietf:params:oauth:token-type:id_token"),
            ("client_id", "idp-client"),
        ),
    )


def test_with_dpop_proof_replaces() -> None:
    request = o.refresh_request(as_metadata(), o.ClientAuthentication(client_id="c"), refresh_token="r", resource=None)
    once = request.with_dpop_proof("p1")
    assert once.with_dpop_proof("p2").headers == (ACCEPT, FORM, ("DPoP", "p2"))
    assert once.headers == (ACCEPT, FORM, ("DPoP", "p1"))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param({"method": "client_secret_basic"}, "client_secret_basic needs a client secret", id="basic"),
        pytest.param(
            {"method": "client_secret_post", "client_secret": ""},
            "client_secret_post needs a client secret",
            id="post-empty",
        ),
        pytest.param({"method": "private_key_jwt"}, "private_key_jwt needs a client assertion", id="jwt"),
        pytest.param(
            {"method": "tls_client_auth"}, "unknown token endpoint auth method 'tls_client_auth'", id="unknown"
        ),
    ],
)
def test_client_authentication_validation(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        o.ClientAuthentication(client_id="c", **fields)


# ---------------------------------------------------------------------------------------------- token responses


def read(status: int, answer: Any, **changes: Any) -> o.TokenSet:
    arguments: dict[str, Any] = {"now": 1000.0, "issuer": AS, "resource": MCP, "requested_scopes": ("mcp:basic",)}
    content = answer if isinstance(answer, bytes) else body(answer)
    return o.read_token_response(status, content, **{**arguments, **changes})


def test_read_token_response() -> None:
    tokens = read(
        200,
        {
            "access_token": "at",
            "token_type": "bearer",
            "expires_in": 3600,
            "refresh_token": "rt",
            "scope": "mcp:basic mcp:write",
        },
    )
    assert tokens == o.TokenSet(
        access_token="at",
        token_type="Bearer",
        refresh_token="rt",
        expires_at=4600.0,
        issued_at=1000.0,
        scopes=("mcp:basic", "mcp:write"),
        issuer=AS,
        resource=MCP,
    )
    assert tokens.authorization == "Bearer at"
    assert repr(tokens) == (
        "TokenSet(token_type='Bearer', expires_at=4600.0, issued_at=1000.0, scopes=('mcp:basic', 'mcp:write'),"
        " issuer='https://as.example.com', resource='https://mcp.example.com/mcp')"
    )


def test_read_token_response_minimal() -> None:
    assert read(200, {"access_token": "at", "token_type": "Bearer"}) == o.TokenSet(
        access_token="at", issued_at=1000.0, scopes=("mcp:basic",), issuer=AS, resource=MCP
    )


@pytest.mark.parametrize(
    ("expires_in", "expected"),
    [
        (3600, 4600.0),
        ("3600", 4600.0),
        (0, 1000.0),
        (1.5, 1001.5),
        (-1, None),
        (True, None),
        ("soon", None),
        (None, None),
        (float("inf"), None),
        # A server's number is clamped to a year before any float arithmetic (an OverflowError before).
        (o.MAX_TOKEN_LIFETIME, 1000.0 + 31_536_000),
        (o.MAX_TOKEN_LIFETIME + 1, 1000.0 + 31_536_000),
        (10**400, 1000.0 + 31_536_000),
        (1e308, 1000.0 + 31_536_000),
        ("9" * 5000, 1000.0 + 31_536_000),
        ("\u00b2", None),
        ("\u0661", None),
    ],
    ids=repr,
)
def test_expires_in(expires_in: Any, expected: float | None) -> None:
    answer = {"access_token": "at", "token_type": "Bearer", "expires_in": expires_in}
    assert read(200, json.dumps(answer).encode()).expires_at == expected


def test_dpop_token_type() -> None:
    answer = {"access_token": "at", "token_type": "DPoP"}
    assert read(200, answer, dpop=True).token_type == "DPoP"
    assert read(200, answer, dpop=True).authorization == "DPoP at"
    assert read(200, {"access_token": "at", "token_type": "Bearer"}, dpop=True).token_type == "Bearer"
    with fails("exchanging: the token endpoint's token_type 'DPoP' is not Bearer"):
        read(200, answer)
    with fails("exchanging: the token endpoint's token_type 'mac' is not Bearer or DPoP"):
        read(200, {"access_token": "at", "token_type": "mac"}, dpop=True)


def test_refresh_keeps_what_is_omitted() -> None:
    previous = o.TokenSet(
        access_token="old", refresh_token="rt-old", scopes=("a", "offline_access"), issuer=AS, resource=MCP
    )
    kept = read(200, {"access_token": "new", "token_type": "Bearer"}, previous=previous, state="refreshing")
    assert kept == o.TokenSet(
        access_token="new",
        refresh_token="rt-old",
        issued_at=1000.0,
        scopes=("a", "offline_access"),
        issuer=AS,
        resource=MCP,
    )
    rotated = read(
        200, {"access_token": "new", "token_type": "Bearer", "refresh_token": "rt-new", "scope": "a"}, previous=previous
    )
    assert (rotated.refresh_token, rotated.scopes) == ("rt-new", ("a",))


@pytest.mark.parametrize(
    ("status", "content", "state", "message"),
    [
        pytest.param(
            400,
            body({"error": "invalid_grant", "error_description": "used"}),
            "exchanging",
            "exchanging: the token endpoint answered HTTP 400 (error='invalid_grant', error_description='used')",
            id="oauth-error",
        ),
        pytest.param(
            401,
            body({"error": "invalid_client"}),
            "refreshing",
            "refreshing: the token endpoint answered HTTP 401 (error='invalid_client')",
            id="refresh-refused",
        ),
        pytest.param(
            502,
            b"<html>",
            "exchanging",
            "exchanging: the token endpoint answered HTTP 502",
            id="not-json",
        ),
        pytest.param(
            200,
            b"<html>",
            "exchanging",
            "exchanging: the token endpoint's answer is not a JSON object",
            id="200-not-json",
        ),
        pytest.param(
            200,
            b'{"access_token":"at","token_type":"Bearer","scope":"\\ud800"}',
            "exchanging",
            "exchanging: the token endpoint's answer is not a JSON object",
            id="lone-surrogate",
        ),
        pytest.param(
            200,
            b"[" * 100_000 + b"]" * 100_000,
            "exchanging",
            "exchanging: the token endpoint's answer is not a JSON object",
            id="too-deep",
        ),
        pytest.param(
            200,
            body({"token_type": "Bearer"}),
            "exchanging",
            "exchanging: the token endpoint's answer has no access_token",
            id="no-access-token",
        ),
        pytest.param(
            200,
            body({"access_token": "SECRET"}),
            "exchanging",
            "exchanging: the token endpoint's token_type None is not Bearer",
            id="no-token-type",
        ),
    ],
)
def test_read_token_response_fails(status: int, content: bytes, state: str, message: str) -> None:
    with fails(message):
        read(status, content, state=state)


@pytest.mark.parametrize(
    "token",
    [
        pytest.param("SECRET-ACCESS\u00e9", id="non-ascii"),
        pytest.param("SECRET-ACCESS\n", id="newline"),
        pytest.param("SECRET ACCESS", id="space"),
        pytest.param("SECRET-ACCESS\x7f", id="del"),
    ],
)
@pytest.mark.parametrize("state", ["exchanging", "refreshing"])
def test_an_access_token_no_header_can_carry_is_refused_without_quoting_it(token: str, state: str) -> None:
    with fails(
        f"{state}: the token endpoint's access_token holds characters other than visible ASCII, which no"
        " Authorization header can carry (RFC 6750 §2.1)"
    ):
        read(200, {"access_token": token, "token_type": "Bearer"}, state=state)


def test_expiring() -> None:
    tokens = o.TokenSet(access_token="a", expires_at=1000.0, issuer=AS, resource=MCP)
    assert [tokens.expiring(now) for now in (939.0, 940.0, 1000.0)] == [False, True, True]
    assert tokens.expiring(995.0, margin=0) is False
    assert o.TokenSet(access_token="a", issuer=AS, resource=MCP).expiring(1e12) is False


@pytest.mark.parametrize(
    ("issued_at", "expires_at", "refresh_at"),
    [
        (1000.0, 4600.0, 4540.0),  # an hour: 60 s ahead
        (1000.0, 1030.0, 1027.0),  # 30 s: a tenth of it, not a refresh before every request
        (1000.0, 1600.0, 1540.0),  # ten minutes: a tenth is 60 s
        (1000.0, 1000.0, 1000.0),  # expired at once
        (None, 1030.0, 970.0),  # a record stored without issued_at: 60 s
        (1000.0, None, None),  # no expiry known: never refreshed ahead
    ],
    ids=["hour", "30s", "10min", "zero", "no-issued_at", "no-expiry"],
)
def test_a_refresh_falls_due_a_margin_proportionate_to_the_lifetime_ahead(
    issued_at: float | None, expires_at: float | None, refresh_at: float | None
) -> None:
    tokens = o.TokenSet(access_token="a", issued_at=issued_at, expires_at=expires_at, issuer=AS, resource=MCP)
    assert tokens.refresh_at == refresh_at
    if refresh_at is None:
        assert tokens.refresh_due(1e12) is False and tokens.expired(1e12) is False
    else:
        assert [tokens.refresh_due(refresh_at - 0.5), tokens.refresh_due(refresh_at)] == [False, True]
        assert expires_at is not None
        assert [tokens.expired(expires_at - 0.5), tokens.expired(expires_at)] == [False, True]


def test_tokens_round_trip_through_a_store_record_with_their_issue_time() -> None:
    tokens = o.TokenSet(
        access_token="a", refresh_token="r", issued_at=1000.0, expires_at=1030.0, issuer=AS, resource=MCP
    )
    assert o.TokenSet.from_dict(tokens.to_dict()) == tokens
    assert o.TokenSet.from_dict({**tokens.to_dict(), "issued_at": None}) == o.TokenSet(
        access_token="a", refresh_token="r", expires_at=1030.0, issuer=AS, resource=MCP
    )
    record = tokens.to_dict()
    del record["issued_at"]  # written before issued_at existed
    assert o.TokenSet.from_dict(record) == o.TokenSet(
        access_token="a", refresh_token="r", expires_at=1030.0, issuer=AS, resource=MCP
    )
    for bad in (True, "soon", float("nan"), 10**400):
        assert o.TokenSet.from_dict({**tokens.to_dict(), "issued_at": bad}) is None


def test_read_token_exchange_response() -> None:
    answer = {"issued_token_type": o.TOKEN_TYPE_ID_JAG, "access_token": "jag", "token_type": "N_A", "expires_in": 300}
    assert o.read_token_exchange_response(200, body(answer)) == "jag"
    with fails("asserting: the token exchange answer did not issue an ID-JAG"):
        o.read_token_exchange_response(200, body({**answer, "issued_token_type": "urn:x"}))
    with fails("asserting: the token exchange answer has no access_token"):
        o.read_token_exchange_response(200, body({**answer, "access_token": None}))
    with fails("asserting: the token exchange endpoint answered HTTP 400 (error='invalid_grant')"):
        o.read_token_exchange_response(400, body({"error": "invalid_grant"}))


# ---------------------------------------------------------------------------------------------- DPoP


def test_dpop_proof_for_token_endpoint() -> None:
    key = o.DPoPKey.generate()
    proof = o.dpop_proof(key, method="post", url=f"{AS}/token?x=1#f", now=1700000000.9, jti="j1")
    header = jwt.get_unverified_header(proof)
    assert header == {"alg": "ES256", "typ": "dpop+jwt", "jwk": key.public_jwk}
    assert sorted(key.public_jwk) == ["crv", "kty", "x", "y"]
    public = jwt.PyJWK(header["jwk"], algorithm="ES256").key
    assert jwt.decode(proof, public, algorithms=["ES256"], options={"verify_iat": False}) == {
        "jti": "j1",
        "htm": "POST",
        "htu": f"{AS}/token",
        "iat": 1700000000,
    }


def test_dpop_proof_for_resource_with_nonce() -> None:
    key = o.DPoPKey.generate()
    token = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
    proof = o.dpop_proof(key, method="GET", url=MCP, now=5, jti="j2", nonce="n-1", access_token=token)
    claims = jwt.decode(proof, key.private_key.public_key(), algorithms=["ES256"], options={"verify_iat": False})
    assert claims == {
        "jti": "j2",
        "htm": "GET",
        "htu": MCP,
        "iat": 5,
        "nonce": "n-1",
        "ath": "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo",
    }


def test_dpop_key_loading() -> None:
    private = ec.generate_private_key(ec.SECP256R1())
    key = o.DPoPKey.from_pem(ec_private_pem(private).decode())
    assert key.public_jwk == o.DPoPKey(private_key=private).public_jwk
    assert repr(key) == "DPoPKey()"
    with pytest.raises(ValueError, match=r"^a DPoP key for ES256 is on the P-256 curve$"):
        o.DPoPKey(private_key=ec.generate_private_key(ec.SECP384R1()))
    with pytest.raises(ValueError, match=r"^the DPoP key is not an unencrypted PEM private key$"):
        o.DPoPKey.from_pem("nope")


@pytest.mark.parametrize(
    ("url", "expected"),
    [(f"{AS}/token", f"{AS}/token"), (f"{AS}/token?a=1", f"{AS}/token"), (f"{MCP}#x", MCP), ("https://h", "https://h")],
)
def test_dpop_htu(url: str, expected: str) -> None:
    assert o.dpop_htu(url) == expected


@pytest.mark.parametrize(
    ("as_algs", "rs_algs", "outcome"),
    [
        pytest.param(None, None, "ES256", id="unlisted"),
        pytest.param(("ES256", "RS256"), ("ES256",), "ES256", id="listed"),
        pytest.param(("RS256",), None, "DPoP signing algorithms ['RS256'] do not include ES256", id="as-lacks"),
        pytest.param(("ES256",), ("PS256",), "DPoP signing algorithms ['PS256'] do not include ES256", id="rs-lacks"),
    ],
)
def test_dpop_signing_algorithm(as_algs: tuple[str, ...] | None, rs_algs: tuple[str, ...] | None, outcome: str) -> None:
    metadata = as_metadata(dpop_signing_alg_values_supported=as_algs)
    prm = o.ProtectedResourceMetadata(
        resource=MCP, authorization_servers=(AS,), dpop_signing_alg_values_supported=rs_algs
    )
    if outcome == "ES256":
        assert o.dpop_signing_algorithm(metadata, prm) == "ES256"
    else:
        with fails(f"discovering_issuer: {outcome}"):
            o.dpop_signing_algorithm(metadata, prm)


@pytest.mark.parametrize(
    ("status", "content", "nonce", "expected"),
    [
        pytest.param(400, body({"error": "use_dpop_nonce"}), "n-1", "n-1", id="challenge"),
        pytest.param(400, body({"error": "use_dpop_nonce"}), None, None, id="no-header"),
        pytest.param(400, body({"error": "use_dpop_nonce"}), 'bad"nonce', None, id="bad-header"),
        pytest.param(400, body({"error": "invalid_grant"}), "n-1", None, id="other-error"),
        pytest.param(401, body({"error": "use_dpop_nonce"}), "n-1", None, id="other-status"),
        pytest.param(400, b"x", "n-1", None, id="not-json"),
    ],
)
def test_token_endpoint_nonce_challenge(status: int, content: bytes, nonce: str | None, expected: str | None) -> None:
    assert o.token_endpoint_nonce_challenge(status, content, nonce) == expected


@pytest.mark.parametrize(
    ("status", "challenge", "nonce", "expected"),
    [
        pytest.param(401, ['Bearer realm="x"', 'DPoP error="use_dpop_nonce"'], "n-2", "n-2", id="challenge"),
        pytest.param(401, 'Bearer error="use_dpop_nonce"', "n-2", None, id="bearer-scheme"),
        pytest.param(401, 'DPoP error="invalid_token"', "n-2", None, id="other-error"),
        pytest.param(403, 'DPoP error="use_dpop_nonce"', "n-2", None, id="other-status"),
        pytest.param(401, 'DPoP error="use_dpop_nonce"', None, None, id="no-header"),
    ],
)
def test_resource_nonce_challenge(
    status: int, challenge: str | list[str], nonce: str | None, expected: str | None
) -> None:
    assert o.resource_nonce_challenge(status, challenge, nonce) == expected


# ---------------------------------------------------------------------------------------------- secrets stay hidden

SENTINEL = "SENTINEL-secret-value"


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(o.PreRegisteredClient(issuer=AS, client_id="c", client_secret=SENTINEL), id="pre-registered"),
        pytest.param(
            o.ClientAuthentication(client_id="c", method="client_secret_post", client_secret=SENTINEL),
            id="client-secret",
        ),
        pytest.param(
            o.ClientAuthentication(client_id="c", method="private_key_jwt", client_assertion=SENTINEL),
            id="client-assertion",
        ),
        pytest.param(o.ClientRegistration(issuer=AS, client_id="c", client_secret=SENTINEL), id="registration"),
        pytest.param(o.TokenSet(access_token=SENTINEL, refresh_token=SENTINEL, issuer=AS, resource=None), id="tokens"),
        pytest.param(make_request(state=SENTINEL, code_verifier="v" * 43 + SENTINEL), id="authorization-request"),
        pytest.param(
            o.code_exchange_request(
                as_metadata(), o.ClientAuthentication(client_id="c"), request=make_request(), code=SENTINEL
            ),
            id="token-request",
        ),
    ],
)
def test_repr_hides_secrets(value: object) -> None:
    assert SENTINEL not in repr(value)


def test_errors_never_quote_tokens() -> None:
    with pytest.raises(AuthorizationError) as caught:
        read(200, {"access_token": SENTINEL, "refresh_token": SENTINEL, "token_type": "mac"})
    assert SENTINEL not in str(caught.value)
    with pytest.raises(AuthorizationError) as caught:
        o.read_authorization_response(make_request(), f"{CALLBACK}?code={SENTINEL}&state=wrong")
    assert SENTINEL not in str(caught.value)


# ---------------------------------------------------------------------------------------------- the module


def test_all_is_sorted_and_complete() -> None:
    assert o.__all__ == sorted(o.__all__, key=lambda name: (not name.isupper(), name.islower(), name))
    public = {
        name
        for name, value in vars(o).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and getattr(value, "__module__", o.__name__) == o.__name__
    }
    assert public - {"annotations"} <= set(o.__all__)


# ---------------------------------------------------------------------------------------------- store records


def test_token_and_registration_records_round_trip() -> None:
    tokens = o.TokenSet(
        access_token="a",
        token_type="DPoP",
        refresh_token="r",
        expires_at=12.5,
        scopes=("x", "y"),
        issuer=AS,
        resource=MCP,
    )
    assert o.TokenSet.from_dict(json.loads(json.dumps(tokens.to_dict()))) == tokens
    registration = o.ClientRegistration(
        issuer=AS, client_id="c", client_secret="s", token_endpoint_auth_method="client_secret_post"
    )
    assert o.ClientRegistration.from_dict(json.loads(json.dumps(registration.to_dict()))) == registration


@pytest.mark.parametrize(
    "change",
    [
        {"access_token": ""},
        {"access_token": 5},
        {"token_type": "bearer"},
        {"issuer": None},
        {"refresh_token": 3},
        {"resource": []},
        {"expires_at": True},
        {"expires_at": "soon"},
        {"scopes": "x y"},
        {"scopes": [1]},
        {"access_token": "a\u00e9"},
        {"access_token": "a b"},
        {"expires_at": 10**400},
    ],
    ids=repr,
)
def test_a_malformed_token_record_is_no_tokens(change: dict[str, Any]) -> None:
    record = o.TokenSet(access_token="a", issuer=AS, resource=MCP).to_dict()
    assert o.TokenSet.from_dict({**record, **change}) is None


@pytest.mark.parametrize(
    "change",
    [
        {"client_id": ""},
        {"issuer": 1},
        {"token_endpoint_auth_method": "private_key_jwt"},
        {"client_secret": None, "token_endpoint_auth_method": "client_secret_basic"},
    ],
    ids=repr,
)
def test_a_malformed_registration_record_is_no_registration(change: dict[str, Any]) -> None:
    record = o.ClientRegistration(issuer=AS, client_id="c").to_dict()
    assert o.ClientRegistration.from_dict({**record, **change}) is None
