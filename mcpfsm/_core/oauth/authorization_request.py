"""The authorization request and response (OAuth 2.1 §4.1; RFC 7636; RFC 9207; RFC 8707)."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from ..errors import AuthorizationError
from ._steps import AUTHORIZING
from .issuer import AuthorizationServerMetadata
from .scopes import scope_parameter

__all__ = [
    "AuthorizationRequest",
    "authorization_request",
    "code_challenge",
    "new_code_verifier",
    "new_jti",
    "new_state",
    "read_authorization_response",
]


_VERIFIER: Final = re.compile(r"[A-Za-z0-9\-._~]{43,128}")


def new_state() -> str:
    """Draw a fresh ``state`` value (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def new_code_verifier() -> str:
    """Draw a fresh PKCE code verifier: 86 characters of the RFC 7636 §4.1 alphabet (512 bits)."""
    return secrets.token_urlsafe(64)


def new_jti() -> str:
    """Draw a fresh JWT ID for a client assertion or a DPoP proof."""
    return secrets.token_urlsafe(16)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def code_challenge(verifier: str) -> str:
    """Return the S256 code challenge: unpadded base64url of SHA-256 of the verifier (RFC 7636 §4.2).

    Raises:
        ValueError: when the verifier is not 43-128 characters of ``[A-Za-z0-9-._~]`` (RFC 7636 §4.1).
    """
    if _VERIFIER.fullmatch(verifier) is None:
        raise ValueError("a PKCE code verifier is 43-128 characters of [A-Za-z0-9-._~]")
    return _b64url(hashlib.sha256(verifier.encode("ascii")).digest())


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthorizationRequest:
    """One authorization attempt: the URL to visit and what the response and code exchange are checked against.

    Attributes:
        url: the authorization URL (it carries ``state`` and the code challenge).
        issuer: the issuer the request went to; the response's ``iss`` must equal it.
        iss_expected: whether the server advertised ``authorization_response_iss_parameter_supported``.
        client_id: the client identifier used.
        redirect_uri: the redirect URI, sent again in the code exchange.
        resource: the ``resource`` parameter (RFC 8707), None on the 2025-03-26 path.
        scopes: the scopes requested.
        state: the ``state`` value.
        code_verifier: the PKCE verifier, sent only in the code exchange.
    """

    url: str = field(repr=False)
    issuer: str
    iss_expected: bool
    client_id: str
    redirect_uri: str
    resource: str | None
    scopes: tuple[str, ...]
    state: str = field(repr=False)
    code_verifier: str = field(repr=False)


def authorization_request(
    metadata: AuthorizationServerMetadata,
    *,
    client_id: str,
    redirect_uri: str,
    resource: str | None,
    scopes: Sequence[str],
    state: str,
    code_verifier: str,
) -> AuthorizationRequest:
    """Build the authorization URL (OAuth 2.1 §4.1.1, RFC 7636 §4.3, RFC 8707 §2).

    The endpoint's own query is kept (RFC 6749 §3.1); then ``response_type=code``, ``client_id``,
    ``redirect_uri``, ``scope`` when non-empty, ``state``, ``code_challenge``, ``code_challenge_method=S256``
    and ``resource`` when given.

    Args:
        metadata: the validated metadata (it must have an authorization endpoint).
        client_id: the client identifier.
        redirect_uri: where the user agent is sent back.
        resource: the PRM ``resource`` string verbatim, or None on the 2025-03-26 path.
        scopes: the scopes to request.
        state: a fresh value from :func:`new_state`.
        code_verifier: a fresh value from :func:`new_code_verifier`.

    Returns:
        The request, to be kept until the redirect comes back.

    Raises:
        AuthorizationError: when the metadata has no authorization endpoint.
        ValueError: when ``code_verifier`` is malformed.
    """
    if metadata.authorization_endpoint is None:
        raise AuthorizationError(f"{metadata.issuer!r} has no authorization endpoint", state=AUTHORIZING)
    params: list[tuple[str, str]] = [
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect_uri),
    ]
    scope = scope_parameter(scopes)
    if scope is not None:
        params.append(("scope", scope))
    params += [("state", state), ("code_challenge", code_challenge(code_verifier)), ("code_challenge_method", "S256")]
    if resource is not None:
        params.append(("resource", resource))
    endpoint = urlsplit(metadata.authorization_endpoint)
    query = "&".join(part for part in (endpoint.query, urlencode(params)) if part)
    return AuthorizationRequest(
        url=urlunsplit((endpoint.scheme, endpoint.netloc, endpoint.path, query, "")),
        issuer=metadata.issuer,
        iss_expected=metadata.authorization_response_iss_parameter_supported,
        client_id=client_id,
        redirect_uri=redirect_uri,
        resource=resource,
        scopes=tuple(scopes),
        state=state,
        code_verifier=code_verifier,
    )


def read_authorization_response(request: AuthorizationRequest, redirect_url: str) -> str:
    """Validate the redirect that ended an authorization attempt and return its code.

    In this order (MCP 2026-07-28 "Authorization Response Validation", RFC 9207 §2.4, RFC 6749 §4.1.2):
    ``state`` present once and equal (constant-time); ``iss`` absent while advertised → reject, present
    (advertised or not) → must equal the issuer as a raw string; an ``error`` → reject, showing the
    server's error only now; a ``code`` present once and non-empty.

    Args:
        request: the attempt the redirect answers.
        redirect_url: the URL the user agent was sent back to.

    Returns:
        The authorization code.

    Raises:
        AuthorizationError: when a check fails; the caller must not contact the token endpoint then.
    """
    state = AUTHORIZING
    try:
        query = parse_qs(urlsplit(redirect_url).query, keep_blank_values=True)
    except ValueError:
        query = {}
    states = query.get("state", [])
    if len(states) != 1 or not secrets.compare_digest(states[0].encode(), request.state.encode()):
        raise AuthorizationError("the redirect's state is missing or does not match the request", state=state)
    issuers = query.get("iss", [])
    if not issuers and request.iss_expected:
        raise AuthorizationError(
            f"the redirect has no iss though {request.issuer!r} advertises"
            " authorization_response_iss_parameter_supported",
            state=state,
        )
    if len(issuers) > 1:
        raise AuthorizationError("the redirect carries iss more than once", state=state)
    if issuers and issuers[0] != request.issuer:
        raise AuthorizationError(f"the redirect's iss {issuers[0]!r} is not the issuer {request.issuer!r}", state=state)
    errors = query.get("error", [])
    if errors:
        descriptions = query.get("error_description", [])
        raise AuthorizationError(
            "the authorization server refused the authorization request",
            state=state,
            error=errors[0],
            error_description=descriptions[0] if descriptions else None,
        )
    codes = query.get("code", [])
    if len(codes) != 1 or not codes[0]:
        raise AuthorizationError("the redirect carries no single authorization code", state=state)
    return codes[0]
