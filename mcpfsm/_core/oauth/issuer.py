"""Authorization server metadata (RFC 8414, OpenID Connect Discovery 1.0) and the 2025-03-26 legacy path."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

from ..errors import AuthorizationError
from ._steps import DISCOVERING_ISSUER
from .answers import _json_object, _raise_for_server_failure, _string_tuple
from .urls import _drop_one_slash, _is_secure_url, _origin, url_host

__all__ = [
    "AuthorizationServerMetadata",
    "authorization_server_metadata_urls",
    "check_confidential_issuer",
    "legacy_issuer",
    "legacy_metadata_url",
    "read_authorization_server_metadata",
    "read_legacy_authorization_server_metadata",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthorizationServerMetadata:
    """Validated authorization server metadata (RFC 8414 §2).

    Attributes:
        issuer: the issuer identifier, equal to the expected issuer.
        authorization_endpoint: the authorization endpoint (None only for flows that never authorize).
        token_endpoint: the token endpoint.
        registration_endpoint: the RFC 7591 registration endpoint, or None.
        scopes_supported: the scopes the server lists, or None.
        grant_types_supported: the grant types the server lists, or None.
        code_challenge_methods_supported: the PKCE methods the server lists (empty when absent).
        token_endpoint_auth_methods_supported: the methods the server lists, or None (RFC 8414 §2 default).
        authorization_response_iss_parameter_supported: RFC 9207 §3.
        client_id_metadata_document_supported: whether a Client ID Metadata Document URL may be the client id.
        dpop_signing_alg_values_supported: RFC 9449 §5.1, or None.
    """

    issuer: str
    authorization_endpoint: str | None
    token_endpoint: str
    registration_endpoint: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    grant_types_supported: tuple[str, ...] | None = None
    code_challenge_methods_supported: tuple[str, ...] = ()
    token_endpoint_auth_methods_supported: tuple[str, ...] | None = None
    authorization_response_iss_parameter_supported: bool = False
    client_id_metadata_document_supported: bool = False
    dpop_signing_alg_values_supported: tuple[str, ...] | None = None


def _check_issuer_url(issuer: str, state: str) -> None:
    try:
        parts = urlsplit(issuer)
    except ValueError:
        parts = None
    if parts is None or parts.query or parts.fragment or not _is_secure_url(issuer):
        raise AuthorizationError(
            f"issuer {issuer!r} is not an https URL (or http on a loopback host) without query and fragment",
            state=state,
        )


def check_confidential_issuer(issuer: str, *, mcp_url: str, credential: str) -> None:
    """Refuse to send a confidential credential the caller named no issuer for to ``issuer`` on another host.

    A client secret, a private-key assertion, a workload or an enterprise assertion is presented only to an
    authorization server the caller named (``issuer=``), or, when none is named, to one on the MCP server's
    own host, any port (docs/authorization.md): otherwise any MCP server could name an authorization server
    of its choosing in its protected resource metadata (RFC 9728 §2) and collect the credential there
    (RFC 9700 §4.1, the RFC 6749 §10.1 duty to keep client credentials confidential). Hosts are compared as
    :func:`~mcpfsm._core.oauth.urls.url_host` writes them: names are never resolved. Called before the
    authorization server is first contacted.

    Args:
        issuer: the authorization server the MCP server's metadata chose.
        mcp_url: the MCP endpoint.
        credential: what would be sent, for the message (``"the client secret"``).

    Raises:
        AuthorizationError: ``issuer`` is not on the MCP server's host; the message names the ``issuer=`` to
            pass to send the credential there.
    """
    host = url_host(mcp_url)
    if host is not None and url_host(issuer) == host:
        return
    raise AuthorizationError(
        f"the MCP server's metadata names the authorization server {issuer!r}, which is not on the MCP server's"
        f" host {host!r}; {credential} goes only to an authorization server you name: pass issuer={issuer!r} to"
        " send it there",
        state=DISCOVERING_ISSUER,
    )


def authorization_server_metadata_urls(issuer: str) -> tuple[str, ...]:
    """List the metadata URLs to try for ``issuer``, in order.

    For an issuer with a path (one trailing ``/`` dropped first): RFC 8414 §3.1 path insertion, OpenID
    Connect path insertion, then OpenID Connect Discovery 1.0 §4 path appending; for a root issuer the two
    well-known URLs at the root. Never the root URLs for a path issuer (MCP 2025-11-25 "Authorization Server
    Metadata Discovery").

    Args:
        issuer: the expected issuer.

    Returns:
        The candidate URLs.

    Raises:
        AuthorizationError: when the issuer is not https (or http on a loopback host) or has a query or
            fragment (RFC 8414 §2).
    """
    _check_issuer_url(issuer, DISCOVERING_ISSUER)
    origin = _origin(issuer)
    path = _drop_one_slash(urlsplit(issuer).path)
    if not path:
        return (f"{origin}/.well-known/oauth-authorization-server", f"{origin}/.well-known/openid-configuration")
    return (
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    )


def _metadata_from(
    document: Mapping[str, Any], *, expected_issuer: str, authorization_code: bool
) -> AuthorizationServerMetadata:
    state = DISCOVERING_ISSUER
    issuer = document.get("issuer")
    # RFC 8414 §3.3 and SEP-2468: simple string comparison, no normalisation of case, port, slash or escapes.
    if issuer != expected_issuer:
        raise AuthorizationError(
            f"the metadata issuer {issuer!r} is not the expected issuer {expected_issuer!r}", state=state
        )
    _check_issuer_url(expected_issuer, state)
    endpoints = {"token_endpoint": document.get("token_endpoint")}
    if authorization_code:
        endpoints["authorization_endpoint"] = document.get("authorization_endpoint")
    if document.get("registration_endpoint") is not None:
        endpoints["registration_endpoint"] = document.get("registration_endpoint")
    for name, value in endpoints.items():
        if not _is_secure_url(value):
            raise AuthorizationError(f"{name} {value!r} is not an https URL (or http on a loopback host)", state=state)
    methods = _string_tuple(document.get("code_challenge_methods_supported")) or ()
    # MCP 2025-11-25 "Authorization Code Protection": no advertised S256, no authorization.
    if authorization_code and "S256" not in methods:
        raise AuthorizationError("the authorization server does not advertise PKCE S256", state=state)
    authorization_endpoint = document.get("authorization_endpoint")
    return AuthorizationServerMetadata(
        issuer=expected_issuer,
        authorization_endpoint=authorization_endpoint if _is_secure_url(authorization_endpoint) else None,
        token_endpoint=cast(str, endpoints["token_endpoint"]),
        registration_endpoint=cast("str | None", endpoints.get("registration_endpoint")),
        scopes_supported=_string_tuple(document.get("scopes_supported")),
        grant_types_supported=_string_tuple(document.get("grant_types_supported")),
        code_challenge_methods_supported=methods,
        token_endpoint_auth_methods_supported=_string_tuple(document.get("token_endpoint_auth_methods_supported")),
        authorization_response_iss_parameter_supported=(
            document.get("authorization_response_iss_parameter_supported") is True
        ),
        client_id_metadata_document_supported=document.get("client_id_metadata_document_supported") is True,
        dpop_signing_alg_values_supported=_string_tuple(document.get("dpop_signing_alg_values_supported")),
    )


def read_authorization_server_metadata(
    status: int, body: bytes, *, expected_issuer: str, authorization_code: bool = True
) -> AuthorizationServerMetadata | None:
    """Read one authorization server metadata answer and validate it.

    In order: ``issuer`` equals ``expected_issuer`` as raw strings (RFC 8414 §3.3, SEP-2468); the token
    endpoint (and, for the authorization-code flow, the authorization endpoint) and any registration
    endpoint are https or loopback http (OAuth 2.1 §1.5); for the authorization-code flow
    ``code_challenge_methods_supported`` lists ``S256`` (MCP 2025-11-25 "Authorization Code Protection").

    Args:
        status: the HTTP status of the GET (redirects are not followed).
        body: the response body.
        expected_issuer: the issuer string taken from the resource metadata.
        authorization_code: True for the authorization-code flow; False for grants that never authorize
            (client credentials, JWT bearer), which need neither the PKCE gate nor an authorization endpoint.

    Returns:
        The metadata; None when the next candidate should be tried (1xx-4xx but 429, or a 200 whose body is
        not a JSON object).

    Raises:
        AuthorizationError: on HTTP 429 or 5xx, and on any failed check, which ends discovery at once:
            nothing from a rejected document is used and no further candidate is tried.
    """
    state = DISCOVERING_ISSUER
    _raise_for_server_failure(status, "the authorization server metadata endpoint", state)
    if status != 200:
        return None
    document = _json_object(body)
    if document is None:
        return None
    return _metadata_from(document, expected_issuer=expected_issuer, authorization_code=authorization_code)


def legacy_issuer(mcp_url: str) -> str:
    """Return the authorization base URL of the 2025-03-26 revision: the MCP URL's origin."""
    return _origin(mcp_url)


def legacy_metadata_url(mcp_url: str) -> str:
    """Return the only metadata URL the 2025-03-26 revision fetches: RFC 8414 at the MCP URL's origin."""
    return f"{_origin(mcp_url)}/.well-known/oauth-authorization-server"


def read_legacy_authorization_server_metadata(status: int, body: bytes, *, mcp_url: str) -> AuthorizationServerMetadata:
    """Read the 2025-03-26 metadata answer, or fall back to that revision's default endpoints.

    HTTP 200 is validated against the origin as expected issuer like :func:`read_authorization_server_metadata`;
    HTTP 404 means ``/authorize``, ``/token`` and ``/register`` at the origin, with no PKCE gate and no ``iss``
    expected (MCP 2025-03-26 "Fallbacks for Servers without Metadata Discovery").

    Args:
        status: the HTTP status of the GET.
        body: the response body.
        mcp_url: the MCP endpoint URL.

    Returns:
        The metadata to use.

    Raises:
        AuthorizationError: on any other status, an unreadable 200, a failed check, or an origin that is
            neither https nor loopback http.
    """
    state = DISCOVERING_ISSUER
    origin = legacy_issuer(mcp_url)
    if status == 404:
        _check_issuer_url(origin, state)
        return AuthorizationServerMetadata(
            issuer=origin,
            authorization_endpoint=f"{origin}/authorize",
            token_endpoint=f"{origin}/token",
            registration_endpoint=f"{origin}/register",
        )
    if status != 200:
        raise AuthorizationError(f"the authorization server metadata endpoint answered HTTP {status}", state=state)
    document = _json_object(body)
    if document is None:
        raise AuthorizationError("the authorization server metadata is not a JSON object", state=state)
    return _metadata_from(document, expected_issuer=origin, authorization_code=True)
