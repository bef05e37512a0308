"""Protected Resource Metadata discovery and the resource indicator (mcpfsm._core.oauth.resource; RFC 9728,
RFC 8707): the candidate URLs, reading the document, matching the resource, choosing an authorization server."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpfsm._core import oauth as o
from mcpfsm._core.oauth import BearerChallenge
from tests.core.oauth_cases import (
    AS,
    MCP,
    body,
    fails,
    hosts,
)


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
