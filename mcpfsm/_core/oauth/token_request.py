"""Requests to the token endpoint (RFC 6749 §2.3.1, §4.1.3, §6; RFC 7523; RFC 8693; RFC 8707; SEP-1046, SEP-990)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Final, cast
from urllib.parse import quote_plus, urlencode

from .authorization_request import AuthorizationRequest
from .identification import ClientAuthentication
from .issuer import AuthorizationServerMetadata
from .scopes import scope_parameter

__all__ = [
    "CLIENT_ASSERTION_LIFETIME",
    "CLIENT_ASSERTION_TYPE_JWT_BEARER",
    "GRANT_TYPE_JWT_BEARER",
    "GRANT_TYPE_TOKEN_EXCHANGE",
    "TOKEN_TYPE_ID_JAG",
    "TOKEN_TYPE_ID_TOKEN",
    "TokenRequest",
    "client_assertion",
    "client_credentials_request",
    "code_exchange_request",
    "jwt_bearer_request",
    "refresh_request",
    "token_exchange_request",
]


CLIENT_ASSERTION_LIFETIME: Final = 300
"""Seconds a ``private_key_jwt`` client assertion stays valid (the client-credentials extension: at most 5 min)."""

CLIENT_ASSERTION_TYPE_JWT_BEARER: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
"""``client_assertion_type`` of a JWT client assertion (RFC 7523 §2.2)."""

GRANT_TYPE_JWT_BEARER: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
"""``grant_type`` of the JWT authorization grant (RFC 7523 §2.1)."""

GRANT_TYPE_TOKEN_EXCHANGE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
"""``grant_type`` of token exchange (RFC 8693 §2.1)."""

TOKEN_TYPE_ID_JAG: Final = "urn:ietf:params:oauth:token-type:id-jag"
"""Token type of an Identity Assertion JWT Authorization Grant (SEP-990)."""

TOKEN_TYPE_ID_TOKEN: Final = "urn:ietf:params:oauth:token-type:id_token"
"""Token type of an OpenID Connect ID token (RFC 8693 §3)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenRequest:
    """A POST to a token endpoint, form-encoded.

    Attributes:
        url: the token endpoint.
        grant_type: the ``grant_type`` sent (also the first form field).
        headers: the request headers (``Accept``, ``Content-Type``, and ``Authorization: Basic`` or ``DPoP``
            when used), in order.
        form: the form fields, in order.
    """

    url: str
    grant_type: str
    headers: tuple[tuple[str, str], ...] = field(repr=False)
    form: tuple[tuple[str, str], ...] = field(repr=False)

    @property
    def body(self) -> bytes:
        """The ``application/x-www-form-urlencoded`` body."""
        return urlencode(self.form).encode("ascii")

    def with_dpop_proof(self, proof: str) -> TokenRequest:
        """Return this request with its ``DPoP`` header set to ``proof`` (RFC 9449 §5), replacing any earlier one."""
        headers = tuple((name, value) for name, value in self.headers if name != "DPoP")
        return replace(self, headers=(*headers, ("DPoP", proof)))


def _token_request(url: str, client: ClientAuthentication, grant: Sequence[tuple[str, str]]) -> TokenRequest:
    headers = [("Accept", "application/json"), ("Content-Type", "application/x-www-form-urlencoded")]
    form = list(grant)
    if client.method == "client_secret_basic":
        # RFC 6749 §2.3.1: each part form-urlencoded before the Basic encoding.
        pair = f"{quote_plus(client.client_id)}:{quote_plus(cast(str, client.client_secret))}"
        headers.append(("Authorization", "Basic " + base64.b64encode(pair.encode()).decode("ascii")))
    elif client.method == "client_secret_post":
        form += [("client_id", client.client_id), ("client_secret", cast(str, client.client_secret))]
    elif client.method == "private_key_jwt":
        form += [
            ("client_assertion_type", CLIENT_ASSERTION_TYPE_JWT_BEARER),
            ("client_assertion", cast(str, client.client_assertion)),
        ]
    else:
        form.append(("client_id", client.client_id))
    return TokenRequest(url=url, grant_type=grant[0][1], headers=tuple(headers), form=tuple(form))


def _optional(name: str, value: str | None) -> list[tuple[str, str]]:
    return [] if value is None else [(name, value)]


def code_exchange_request(
    metadata: AuthorizationServerMetadata, client: ClientAuthentication, *, request: AuthorizationRequest, code: str
) -> TokenRequest:
    """Build the authorization-code exchange (OAuth 2.1 §4.1.3): the same ``redirect_uri`` and ``resource``."""
    grant = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", request.redirect_uri),
        ("code_verifier", request.code_verifier),
        *_optional("resource", request.resource),
    ]
    return _token_request(metadata.token_endpoint, client, grant)


def refresh_request(
    metadata: AuthorizationServerMetadata, client: ClientAuthentication, *, refresh_token: str, resource: str | None
) -> TokenRequest:
    """Build a refresh (OAuth 2.1 §4.3): the same ``resource`` and client authentication, no ``scope``."""
    grant = [("grant_type", "refresh_token"), ("refresh_token", refresh_token), *_optional("resource", resource)]
    return _token_request(metadata.token_endpoint, client, grant)


def client_credentials_request(
    metadata: AuthorizationServerMetadata,
    client: ClientAuthentication,
    *,
    resource: str | None,
    scopes: Sequence[str],
) -> TokenRequest:
    """Build a ``client_credentials`` grant (OAuth 2.1 §4.2; the MCP client-credentials extension, SEP-1046)."""
    grant = [
        ("grant_type", "client_credentials"),
        *_optional("resource", resource),
        *_optional("scope", scope_parameter(scopes)),
    ]
    return _token_request(metadata.token_endpoint, client, grant)


def jwt_bearer_request(
    metadata: AuthorizationServerMetadata,
    client: ClientAuthentication,
    *,
    assertion: str,
    resource: str | None,
    scopes: Sequence[str],
) -> TokenRequest:
    """Build a JWT authorization grant (RFC 7523 §2.1), e.g. with an ID-JAG from :func:`token_exchange_request`."""
    grant = [
        ("grant_type", GRANT_TYPE_JWT_BEARER),
        ("assertion", assertion),
        *_optional("resource", resource),
        *_optional("scope", scope_parameter(scopes)),
    ]
    return _token_request(metadata.token_endpoint, client, grant)


def token_exchange_request(
    token_endpoint: str,
    client: ClientAuthentication,
    *,
    subject_token: str,
    audience: str,
    resource: str | None,
    scopes: Sequence[str],
    subject_token_type: str = TOKEN_TYPE_ID_TOKEN,
    requested_token_type: str = TOKEN_TYPE_ID_JAG,
) -> TokenRequest:
    """Build an RFC 8693 token exchange at the enterprise IdP for an ID-JAG (SEP-990).

    Args:
        token_endpoint: the IdP's token endpoint.
        client: the client's authentication at the IdP.
        subject_token: the identity assertion (an ID token by default).
        audience: the issuer of the MCP server's authorization server.
        resource: the MCP server's resource identifier, or None.
        scopes: the scopes wanted at the MCP server.
        subject_token_type: the type of ``subject_token``.
        requested_token_type: the type wanted back.

    Returns:
        The token request.
    """
    grant = [
        ("grant_type", GRANT_TYPE_TOKEN_EXCHANGE),
        ("requested_token_type", requested_token_type),
        ("audience", audience),
        *_optional("resource", resource),
        *_optional("scope", scope_parameter(scopes)),
        ("subject_token", subject_token),
        ("subject_token_type", subject_token_type),
    ]
    return _token_request(token_endpoint, client, grant)


def client_assertion(
    *,
    client_id: str,
    audience: str,
    private_key_pem: str | bytes,
    now: float,
    jti: str,
    algorithm: str = "ES256",
) -> str:
    """Sign a ``private_key_jwt`` client assertion (RFC 7523 §3; the MCP client-credentials extension).

    Claims: ``iss`` = ``sub`` = ``client_id``, ``aud`` = the authorization server's issuer (not the token
    endpoint), ``iat`` = ``now``, ``exp`` = ``now`` + :data:`CLIENT_ASSERTION_LIFETIME`, ``jti``.

    Raises:
        ValueError: when the key cannot sign with ``algorithm``.
    """
    issued = int(now)
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": issued,
        "exp": issued + CLIENT_ASSERTION_LIFETIME,
        "jti": jti,
    }
    import jwt

    try:
        return jwt.encode(claims, private_key_pem, algorithm=algorithm)
    except (ValueError, TypeError, jwt.exceptions.PyJWTError) as exc:
        raise ValueError(f"the private key cannot sign a client assertion with {algorithm}") from exc
