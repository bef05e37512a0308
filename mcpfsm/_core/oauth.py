r"""OAuth 2.1 authorization for an MCP client: the pure core.

Every function here turns protocol input (a header, an HTTP status and body, a redirect URL) into a frozen
value or an :class:`AuthorizationError`; none of them performs I/O or reads a clock. The driver passes
``now``, ``state``, ``code_verifier`` and ``jti`` in; only ``new_state()``, ``new_code_verifier()``,
``new_jti()`` and ``DPoPKey.generate()`` draw randomness (from :mod:`secrets` and ``cryptography``). This
module imports neither trio, httpx, anyio nor loguru; signatures come from PyJWT over ``cryptography`` and
hashes from :mod:`hashlib`: nothing cryptographic is written here.

The sources, by step of the flow:

- discovery: RFC 9728 (Protected Resource Metadata), RFC 8414 and OpenID Connect Discovery 1.0
  (authorization server metadata), the MCP specification revision 2026-07-28 "Authorization" and
  "Authorization Server Discovery" pages, SEP-985, SEP-2468; the 2025-03-26 revision for the legacy path;
- the resource: RFC 8707, RFC 9728 §3.3;
- the client: RFC 7591 (dynamic registration), OAuth Client ID Metadata Documents (SEP-991), SEP-837,
  SEP-2352 (authorization server binding);
- scopes: SEP-835, SEP-2350 (union on step-up), SEP-2207 (``offline_access``);
- the request and response: OAuth 2.1 (draft-ietf-oauth-v2-1) §4.1, RFC 7636 (PKCE), RFC 9207 (``iss``);
- the token endpoint: RFC 6749 §2.3.1, §5; RFC 7523 (JWT assertions, ``private_key_jwt``); RFC 8693
  (token exchange); the MCP extensions ``oauth-client-credentials`` (SEP-1046) and enterprise-managed
  authorization (SEP-990, draft-ietf-oauth-identity-assertion-authz-grant);
- proof of possession: RFC 9449 (DPoP), SEP-1932.

Secrets never leave the values that hold them: every field holding a token, code, verifier, secret,
assertion or key is ``repr=False``, and no error message quotes one.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import math
import re
import secrets
import typing
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final, Literal, cast
from urllib.parse import parse_qs, quote, quote_plus, urlencode, urlsplit, urlunsplit

from .errors import AuthorizationError
from .jsonrpc import holds_lone_surrogate

if typing.TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import ec

# PyJWT and cryptography are imported where they sign, not here: `import mcpfsm` imports neither.

__all__ = [
    "ACCESS_TOKEN_REFRESH_MARGIN",
    "ASSERTING",
    "AUTHORIZING",
    "CLIENT_ASSERTION_LIFETIME",
    "CLIENT_ASSERTION_TYPE_JWT_BEARER",
    "DISCOVERING_ISSUER",
    "DISCOVERING_RESOURCE",
    "EXCHANGING",
    "GRANT_TYPE_JWT_BEARER",
    "GRANT_TYPE_TOKEN_EXCHANGE",
    "LEGACY_METADATA_HEADERS",
    "MAX_TOKEN_LIFETIME",
    "METADATA_REQUEST_HEADERS",
    "REDACTED",
    "REFRESHING",
    "REGISTERING",
    "SECRET_FORM_FIELDS",
    "TOKEN_TYPE_ID_JAG",
    "TOKEN_TYPE_ID_TOKEN",
    "USE_DPOP_NONCE",
    "Answer",
    "AuthorizationRequest",
    "AuthorizationServerMetadata",
    "BearerChallenge",
    "Challenge",
    "ClientAuthentication",
    "ClientIdentification",
    "ClientRegistration",
    "DPoPKey",
    "PreRegisteredClient",
    "ProtectedResourceMetadata",
    "TokenEndpointAuthMethod",
    "TokenRequest",
    "TokenSet",
    "access_token_hash",
    "authorization_request",
    "authorization_server_metadata_urls",
    "bearer_challenge",
    "check_client_metadata_url",
    "check_resource",
    "choose_authorization_server",
    "choose_client_identification",
    "client_assertion",
    "client_credentials_request",
    "client_metadata_document",
    "code_challenge",
    "code_exchange_request",
    "dpop_htu",
    "dpop_proof",
    "dpop_signing_algorithm",
    "is_loopback_host",
    "jwt_bearer_request",
    "legacy_issuer",
    "legacy_metadata_url",
    "new_code_verifier",
    "new_jti",
    "new_state",
    "parse_challenges",
    "pre_registered_auth_method",
    "protected_resource_metadata_urls",
    "read_authorization_response",
    "read_authorization_server_metadata",
    "read_legacy_authorization_server_metadata",
    "read_protected_resource_metadata",
    "read_registration_response",
    "read_token_exchange_response",
    "read_token_response",
    "redact_server_text",
    "refresh_request",
    "registration_auth_method",
    "registration_request",
    "requested_scopes",
    "resource_challenge",
    "resource_matches",
    "resource_nonce_challenge",
    "scope_parameter",
    "step_up_scopes",
    "token_endpoint_nonce_challenge",
    "token_exchange_request",
    "with_offline_access",
]

# --------------------------------------------------------------------------------------------------
# Constants


METADATA_REQUEST_HEADERS: Final[Mapping[str, str]] = MappingProxyType({"Accept": "application/json"})
"""Headers of every metadata GET (RFC 9728 §3.1, RFC 8414 §3.1); never an ``Authorization`` header."""

LEGACY_METADATA_HEADERS: Final[Mapping[str, str]] = MappingProxyType(
    {"Accept": "application/json", "MCP-Protocol-Version": "2025-03-26"}
)
"""Headers of the 2025-03-26 metadata GET, which that revision says should carry the protocol version."""

ACCESS_TOKEN_REFRESH_MARGIN: Final = 60.0
"""Seconds before ``expires_at`` from which a held access token counts as expiring."""

MAX_TOKEN_LIFETIME: Final = 365 * 24 * 3600
"""The longest ``expires_in`` taken as given, in seconds (a year); a larger one counts as this.

A server's number goes into clock arithmetic: an integer of hundreds of digits is no float. A year is far
beyond the lifetime of a real access token, so the clamp shortens none in practice."""

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

USE_DPOP_NONCE: Final = "use_dpop_nonce"
"""The error a server answers when a DPoP proof must carry its nonce (RFC 9449 §8, §9)."""

TokenEndpointAuthMethod = Literal["client_secret_basic", "client_secret_post", "none", "private_key_jwt"]
"""The token endpoint authentication methods this client speaks (RFC 7591 §2, RFC 7523 §2.2)."""

_AUTH_METHODS: Final[frozenset[str]] = frozenset(
    ("client_secret_basic", "client_secret_post", "none", "private_key_jwt")
)
_DEFAULT_PORTS: Final[Mapping[str, int]] = MappingProxyType({"http": 80, "https": 443})


# The states of the authorization machine (``mcpfsm._machines.authorization``) in which each step runs; an
# AuthorizationError names the one it was raised in.
DISCOVERING_RESOURCE: Final = "discovering_resource"
DISCOVERING_ISSUER: Final = "discovering_issuer"
REFRESHING: Final = "refreshing"
REGISTERING: Final = "registering"
ASSERTING: Final = "asserting"
AUTHORIZING: Final = "authorizing"
EXCHANGING: Final = "exchanging"


# --------------------------------------------------------------------------------------------------
# WWW-Authenticate (RFC 9110 §11.6.1, §11.3; RFC 6750 §3; RFC 9728 §5.1; RFC 9449 §7.1)

_TCHARS: Final = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_TOKEN68: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
# RFC 6749 §A.12 VSCHAR without the space: what an Authorization header can carry after "Bearer ".
_VISIBLE_ASCII: Final = re.compile(r"[\x21-\x7e]+")
_OWS: Final = " \t"


@dataclass(frozen=True, slots=True, kw_only=True)
class Challenge:
    """One authentication challenge of a ``WWW-Authenticate`` field (RFC 9110 §11.3).

    Attributes:
        scheme: the auth-scheme as sent (compare it case-insensitively).
        token68: the token68 form of the challenge, if it used one.
        params: the auth-params in order, names lower-cased, the first of a repeated name kept.
    """

    scheme: str
    token68: str | None = None
    params: tuple[tuple[str, str], ...] = ()

    def param(self, name: str) -> str | None:
        """Return the value of the parameter ``name`` (case-insensitive), or None when absent."""
        wanted = name.lower()
        return next((value for key, value in self.params if key == wanted), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class BearerChallenge:
    """What a client reads from a Bearer (or DPoP) challenge.

    Attributes:
        resource_metadata: the Protected Resource Metadata URL (RFC 9728 §5.1), or None.
        scope: the challenged scopes, space-separated on the wire (RFC 6750 §3); empty when absent.
        error: ``invalid_token``, ``insufficient_scope``, ``use_dpop_nonce``, ... or None.
        error_description: the server's human-readable text, or None.
        algs: the DPoP algorithms a DPoP challenge lists (RFC 9449 §7.1); empty otherwise.
    """

    resource_metadata: str | None = None
    scope: tuple[str, ...] = ()
    error: str | None = None
    error_description: str | None = None
    algs: tuple[str, ...] = ()


def _skip_ows(text: str, i: int) -> int:
    while i < len(text) and text[i] in _OWS:
        i += 1
    return i


def _token_end(text: str, i: int) -> int:
    while i < len(text) and text[i] in _TCHARS:
        i += 1
    return i


def _quoted_string(text: str, i: int) -> tuple[str, int]:
    """Read the quoted-string opening at ``text[i]``; an unterminated one runs to the end of the text."""
    out: list[str] = []
    i += 1
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
        elif char == '"':
            return "".join(out), i + 1
        else:
            out.append(char)
            i += 1
    return "".join(out), i


def _next_element(text: str, i: int) -> int:
    """Return the index just past the next comma outside a quoted-string (or the end)."""
    while i < len(text):
        if text[i] == '"':
            i = _quoted_string(text, i)[1]
        elif text[i] == ",":
            return i + 1
        else:
            i += 1
    return i


def _challenges_in(text: str) -> list[Challenge]:
    found: list[Challenge] = []
    scheme: str | None = None
    token68: str | None = None
    params: dict[str, str] = {}

    def close() -> None:
        if scheme is not None:
            found.append(Challenge(scheme=scheme, token68=token68, params=tuple(params.items())))

    i = 0
    while i < len(text):
        if text[i] in _OWS:
            i += 1
            continue
        end = _token_end(text, i)
        if end == i:
            i = _next_element(text, i)
            continue
        word = text[i:end]
        after = _skip_ows(text, end)
        if after < len(text) and text[after] == "=":
            start = _skip_ows(text, after + 1)
            if start < len(text) and text[start] == '"':
                value, i = _quoted_string(text, start)
            else:
                # Lenient: an unquoted value runs to whitespace or a comma, so an unquoted URL survives.
                i = start
                while i < len(text) and text[i] not in _OWS and text[i] not in ',"':
                    i += 1
                value = text[start:i]
            if scheme is not None:
                params.setdefault(word.lower(), value)
            continue
        close()
        scheme, token68, params = word, None, {}
        i = after
        if after > end:
            match = _TOKEN68.match(text, after)
            if match is not None:
                stop = _skip_ows(text, match.end())
                if stop == len(text) or text[stop] == ",":
                    token68 = match.group()
                    i = stop
    close()
    return found


def parse_challenges(values: str | Iterable[str]) -> tuple[Challenge, ...]:
    """Parse ``WWW-Authenticate`` field values into challenges (RFC 9110 §11.6.1).

    Several challenges may share one field value or span several; auth-params are ``name=token`` or
    ``name="quoted-string"`` (backslash escapes, commas inside quotes). Unparseable parts are skipped:
    this function never raises on garbage.

    Args:
        values: one field value, or every value of the field in order.

    Returns:
        The challenges in order of appearance.
    """
    texts = [values] if isinstance(values, str) else list(values)
    return tuple(challenge for text in texts if isinstance(text, str) for challenge in _challenges_in(text))


def _ordered_unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def bearer_challenge(values: str | Iterable[str], *, scheme: str = "Bearer") -> BearerChallenge | None:
    """Read the first challenge of ``scheme`` (case-insensitive) from ``WWW-Authenticate`` values.

    ``scheme="DPoP"`` reads the DPoP challenge of RFC 9449 §7.1 the same way. Empty ``resource_metadata``,
    ``scope``, ``error`` and ``error_description`` count as absent; unknown parameters are ignored.

    Args:
        values: one field value, or every value of the field in order.
        scheme: the auth-scheme to look for.

    Returns:
        The challenge's parameters, or None when no challenge of that scheme is present.
    """
    wanted = scheme.casefold()
    for challenge in parse_challenges(values):
        if challenge.scheme.casefold() == wanted:
            return BearerChallenge(
                resource_metadata=challenge.param("resource_metadata") or None,
                scope=_ordered_unique((challenge.param("scope") or "").split()),
                error=challenge.param("error") or None,
                error_description=challenge.param("error_description") or None,
                algs=_ordered_unique((challenge.param("algs") or "").split()),
            )
    return None


def resource_challenge(values: str | Iterable[str]) -> BearerChallenge | None:
    """Read the challenge a protected resource answered with: the Bearer one, else the DPoP one.

    A resource that only accepts DPoP-bound tokens challenges with ``DPoP`` alone (RFC 9449 §7.1); its
    ``resource_metadata``, ``scope`` and ``error`` parameters mean what they mean in a Bearer challenge.
    """
    return bearer_challenge(values) or bearer_challenge(values, scheme="DPoP")


# --------------------------------------------------------------------------------------------------
# URLs


def is_loopback_host(host: str | None) -> bool:
    """Tell whether ``host`` is ``localhost``, an address in 127.0.0.0/8, or ``::1`` (brackets allowed)."""
    if not host:
        return False
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if bare.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def _is_secure_url(value: object) -> bool:
    """An absolute ``https`` URL, or an ``http`` one on a loopback host; no fragment."""
    if not isinstance(value, str):
        return False
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError:
        return False
    if parts.fragment or not host:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and is_loopback_host(host))


def _effective_port(scheme: str, port: int | None) -> int | None:
    return port if port is not None else _DEFAULT_PORTS.get(scheme)


def _drop_one_slash(path: str) -> str:
    return path[:-1] if path.endswith("/") else path


# --------------------------------------------------------------------------------------------------
# Protected Resource Metadata (RFC 9728)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProtectedResourceMetadata:
    """A usable Protected Resource Metadata document (RFC 9728 §2).

    Attributes:
        resource: the resource identifier, verbatim (it is also the ``resource`` parameter, RFC 8707).
        authorization_servers: the issuers, in the server's order (at least one).
        scopes_supported: the scopes the resource names, or None when absent.
        dpop_signing_alg_values_supported: the DPoP algorithms the resource accepts, or None.
        dpop_bound_access_tokens_required: whether the resource only accepts DPoP-bound tokens.
    """

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None = None
    dpop_signing_alg_values_supported: tuple[str, ...] | None = None
    dpop_bound_access_tokens_required: bool = False


def protected_resource_metadata_urls(mcp_url: str, challenge: BearerChallenge | None = None) -> tuple[str, ...]:
    """List the Protected Resource Metadata URLs to try, in order; the first usable document wins.

    The challenge's ``resource_metadata`` (RFC 9728 §5.1) when it is an absolute http(s) URL, then the
    path-based well-known URL (unless the MCP URL's path is empty or ``/``), then the root one (RFC 9728
    §3.1; MCP 2025-11-25 Authorization, SEP-985). The MCP URL's query is never copied into a candidate.

    Args:
        mcp_url: the MCP endpoint URL.
        challenge: the Bearer challenge of the 401, if any.

    Returns:
        The candidate URLs, without duplicates.
    """
    candidates: list[str] = []
    if challenge is not None and challenge.resource_metadata is not None:
        try:
            hinted = urlsplit(challenge.resource_metadata)
            if hinted.scheme in _DEFAULT_PORTS and hinted.hostname:
                candidates.append(challenge.resource_metadata)
        except ValueError:
            pass
    origin = _origin(mcp_url)
    path = urlsplit(mcp_url).path
    if path not in ("", "/"):
        candidates.append(f"{origin}/.well-known/oauth-protected-resource{path}")
    candidates.append(f"{origin}/.well-known/oauth-protected-resource")
    return _ordered_unique(candidates)


def _json_object(body: bytes) -> dict[str, Any] | None:
    # A document holding a lone UTF-16 surrogate is no Unicode text (RFC 8259 §8.2): none of its strings
    # could be sent on (in a URL, a form, a header), so it counts as no JSON object at all.
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(document, dict) or holds_lone_surrogate(document):
        return None
    return document


def _string_tuple(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    return None


def _raise_for_server_failure(status: int, what: str, state: str) -> None:
    if status == 429 or status >= 500 or status < 100:
        raise AuthorizationError(f"{what} answered HTTP {status}", state=state)


def read_protected_resource_metadata(status: int, body: bytes) -> ProtectedResourceMetadata | None:
    """Read one Protected Resource Metadata answer (RFC 9728 §3.2).

    Usable means HTTP 200 and a JSON object with a string ``resource`` and a non-empty array of non-empty
    strings ``authorization_servers``.

    Args:
        status: the HTTP status of the GET (redirects are not followed).
        body: the response body.

    Returns:
        The metadata when usable; None when the next candidate should be tried (any other 1xx-4xx answer).

    Raises:
        AuthorizationError: on HTTP 429 or 5xx, which end discovery instead of skipping a candidate.
    """
    state = DISCOVERING_RESOURCE
    _raise_for_server_failure(status, "the protected resource metadata endpoint", state)
    if status != 200:
        return None
    document = _json_object(body)
    if document is None:
        return None
    resource = document.get("resource")
    servers = _string_tuple(document.get("authorization_servers"))
    if not isinstance(resource, str) or not resource or not servers or not all(servers):
        return None
    required = document.get("dpop_bound_access_tokens_required")
    return ProtectedResourceMetadata(
        resource=resource,
        authorization_servers=servers,
        scopes_supported=_string_tuple(document.get("scopes_supported")),
        dpop_signing_alg_values_supported=_string_tuple(document.get("dpop_signing_alg_values_supported")),
        dpop_bound_access_tokens_required=required is True,
    )


def resource_matches(resource: str, mcp_url: str) -> bool:
    """Tell whether a PRM ``resource`` names the server at ``mcp_url``.

    Same scheme and host (case-insensitive), same port (a default port equals an omitted one), no fragment
    and no user info in ``resource``, its path a segment prefix of the MCP URL's path (one trailing ``/``
    ignored on each side: ``/mcp`` matches ``/mcp``, ``/mcp/`` and ``/mcp/x``, not ``/mcpx``), and its query,
    if any, equal to the MCP URL's. RFC 9728 §3.3 and §7.3 want the resource to be this server; the origin
    plus path-prefix reading is the MCP 2025-11-25 "Canonical Server URI" one.

    Args:
        resource: the ``resource`` member of the metadata.
        mcp_url: the MCP endpoint URL.

    Returns:
        True when the resource names this server.
    """
    try:
        named, ours = urlsplit(resource), urlsplit(mcp_url)
        named_port, our_port = named.port, ours.port
        named_host, our_host = named.hostname, ours.hostname
    except ValueError:
        return False
    if named.fragment or "@" in named.netloc or not named_host or not our_host:
        return False
    scheme = named.scheme.lower()
    if scheme != ours.scheme.lower() or named_host != our_host:
        return False
    if _effective_port(scheme, named_port) != _effective_port(scheme, our_port):
        return False
    if named.query and named.query != ours.query:
        return False
    prefix, path = _drop_one_slash(named.path), _drop_one_slash(ours.path)
    return path == prefix or path.startswith(prefix + "/")


def check_resource(metadata: ProtectedResourceMetadata, mcp_url: str) -> None:
    """Refuse metadata whose ``resource`` does not name this server, before any authorization server is contacted.

    Args:
        metadata: the usable Protected Resource Metadata.
        mcp_url: the MCP endpoint URL.

    Raises:
        AuthorizationError: when :func:`resource_matches` is false (RFC 9728 §3.3, RFC 8707 §2).
    """
    if not resource_matches(metadata.resource, mcp_url):
        raise AuthorizationError(
            f"the protected resource metadata names resource {metadata.resource!r}, not this server {mcp_url!r}",
            state=DISCOVERING_RESOURCE,
        )


def choose_authorization_server(metadata: ProtectedResourceMetadata, known_issuers: Collection[str] = ()) -> str:
    """Pick the authorization server: the first listed one the client holds credentials for, else the first.

    The returned string, verbatim, is the expected issuer (RFC 8414 §3.3, MCP 2026-07-28 "Authorization
    Server Binding", SEP-2352).

    Args:
        metadata: the usable Protected Resource Metadata.
        known_issuers: issuers the client holds a registration or pre-registered credentials for.

    Returns:
        The expected issuer.
    """
    return next(
        (issuer for issuer in metadata.authorization_servers if issuer in known_issuers),
        metadata.authorization_servers[0],
    )


# --------------------------------------------------------------------------------------------------
# Authorization server metadata (RFC 8414, OpenID Connect Discovery 1.0)


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


# --------------------------------------------------------------------------------------------------
# Client identification (MCP 2026-07-28 "Client Registration"; RFC 7591; SEP-991; SEP-837)


class ClientIdentification(StrEnum):
    """How the client identifies itself to an authorization server, in order of preference."""

    pre_registered = "pre_registered"
    client_metadata_document = "client_metadata_document"
    dynamic_registration = "dynamic_registration"


@dataclass(frozen=True, slots=True, kw_only=True)
class PreRegisteredClient:
    """Credentials registered out of band with one authorization server; they only ever go to ``issuer``.

    Attributes:
        issuer: the issuer the credentials belong to.
        client_id: the client identifier.
        client_secret: the client secret, or None for a public client.
        token_endpoint_auth_method: the configured method, or None to choose from the metadata.
    """

    issuer: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth_method: TokenEndpointAuthMethod | None = None


def check_client_metadata_url(url: str) -> None:
    """Refuse a Client ID Metadata Document URL that is not https with a path other than ``/``.

    Raises:
        ValueError: when the URL cannot be a client id (draft-ietf-oauth-client-id-metadata-document §3).
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        host = None
    if host is None or parts.scheme != "https" or parts.path in ("", "/") or parts.fragment:
        raise ValueError(f"client_metadata_url {url!r} must be an https URL with a path")


def choose_client_identification(
    metadata: AuthorizationServerMetadata,
    *,
    pre_registered: Sequence[PreRegisteredClient] = (),
    client_metadata_url: str | None = None,
) -> ClientIdentification:
    """Choose how to identify the client: pre-registered, then a metadata document, then registration.

    Args:
        metadata: the validated metadata of the chosen authorization server.
        pre_registered: every pre-registered credential configured, each bound to its issuer.
        client_metadata_url: the Client ID Metadata Document URL, if the application hosts one.

    Returns:
        The way to identify the client to ``metadata.issuer``.

    Raises:
        AuthorizationError: when credentials are configured only for other issuers (they are never sent to
            this one), or when the server offers neither a metadata document nor registration.
    """
    state = REGISTERING
    if any(client.issuer == metadata.issuer for client in pre_registered):
        return ClientIdentification.pre_registered
    if pre_registered:
        issuers = sorted({client.issuer for client in pre_registered})
        raise AuthorizationError(
            f"the pre-registered credentials belong to {issuers!r}, not to {metadata.issuer!r}", state=state
        )
    if metadata.client_id_metadata_document_supported and client_metadata_url is not None:
        return ClientIdentification.client_metadata_document
    if metadata.registration_endpoint is not None:
        return ClientIdentification.dynamic_registration
    raise AuthorizationError(
        f"{metadata.issuer!r} offers no client registration and no credentials are configured for it", state=state
    )


def pre_registered_auth_method(
    metadata: AuthorizationServerMetadata, *, has_secret: bool, configured: TokenEndpointAuthMethod | None = None
) -> TokenEndpointAuthMethod:
    """Choose the token endpoint authentication method for pre-registered credentials.

    The configured method wins; otherwise, from ``token_endpoint_auth_methods_supported`` (absent means
    ``["client_secret_basic"]``, RFC 8414 §2): with a secret ``client_secret_basic`` if listed, else
    ``client_secret_post``; without a secret ``none``.
    """
    if configured is not None:
        return configured
    if not has_secret:
        return "none"
    supported = metadata.token_endpoint_auth_methods_supported or ("client_secret_basic",)
    return "client_secret_basic" if "client_secret_basic" in supported else "client_secret_post"


def registration_auth_method(metadata: AuthorizationServerMetadata) -> TokenEndpointAuthMethod:
    """Choose the method a dynamic registration asks for: ``none`` if listed, else basic, else post."""
    supported = metadata.token_endpoint_auth_methods_supported or ("client_secret_basic",)
    if "none" in supported:
        return "none"
    return "client_secret_basic" if "client_secret_basic" in supported else "client_secret_post"


def registration_request(
    *,
    client_name: str,
    redirect_uris: Sequence[str],
    token_endpoint_auth_method: TokenEndpointAuthMethod,
    application_type: Literal["native", "web"] = "native",
) -> dict[str, Any]:
    """Build the JSON body of a dynamic client registration (RFC 7591 §2, §3.1).

    ``application_type`` is ``native`` for a client on the user's machine and ``web`` only for a remote
    browser application (OpenID Connect Registration §2; SEP-837).

    Returns:
        The registration metadata, ready to be sent as JSON.
    """
    return {
        "client_name": client_name,
        "redirect_uris": list(redirect_uris),
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": token_endpoint_auth_method,
        "application_type": application_type,
    }


def client_metadata_document(
    *, client_metadata_url: str, client_name: str, redirect_uris: Sequence[str]
) -> dict[str, Any]:
    """Build the Client ID Metadata Document an application hosts at ``client_metadata_url``.

    Raises:
        ValueError: when the URL cannot be a client id (see :func:`check_client_metadata_url`).
    """
    check_client_metadata_url(client_metadata_url)
    return {
        "client_id": client_metadata_url,
        "client_name": client_name,
        "redirect_uris": list(redirect_uris),
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientAuthentication:
    """How one token request authenticates the client (RFC 6749 §2.3.1, RFC 7523 §2.2, RFC 7591 §2).

    ``client_secret_basic`` and ``client_secret_post`` need ``client_secret``; ``private_key_jwt`` needs a
    fresh ``client_assertion`` (see :func:`client_assertion`); ``none`` sends the client id alone.

    Raises:
        ValueError: when the method lacks what it needs.
    """

    client_id: str
    method: TokenEndpointAuthMethod = "none"
    client_secret: str | None = field(default=None, repr=False)
    client_assertion: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.method not in _AUTH_METHODS:
            raise ValueError(f"unknown token endpoint auth method {self.method!r}")
        if self.method in ("client_secret_basic", "client_secret_post") and not self.client_secret:
            raise ValueError(f"{self.method} needs a client secret")
        if self.method == "private_key_jwt" and not self.client_assertion:
            raise ValueError("private_key_jwt needs a client assertion")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientRegistration:
    """A client registered with one authorization server (RFC 7591 §3.2.1); it never goes to another.

    Attributes:
        issuer: the issuer the registration belongs to.
        client_id: the issued client identifier.
        client_secret: the issued secret, or None.
        token_endpoint_auth_method: the method to use at the token endpoint.
    """

    issuer: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth_method: TokenEndpointAuthMethod = "none"

    def authentication(self) -> ClientAuthentication:
        """Return the client authentication for a token request with this registration."""
        return ClientAuthentication(
            client_id=self.client_id, method=self.token_endpoint_auth_method, client_secret=self.client_secret
        )

    def to_dict(self) -> dict[str, Any]:
        """The registration as a JSON-ready record, for a token store (it holds the secret)."""
        return {
            "issuer": self.issuer,
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "token_endpoint_auth_method": self.token_endpoint_auth_method,
        }

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> ClientRegistration | None:
        """Rebuild a registration from :meth:`to_dict` output; ``None`` for a record that is not one."""
        issuer, client_id = record.get("issuer"), record.get("client_id")
        secret, method = record.get("client_secret"), record.get("token_endpoint_auth_method")
        if not isinstance(issuer, str) or not isinstance(client_id, str) or not client_id:
            return None
        if method not in ("client_secret_basic", "client_secret_post", "none"):
            return None
        if not (secret is None or isinstance(secret, str)) or (method != "none" and not secret):
            return None
        return cls(
            issuer=issuer,
            client_id=client_id,
            client_secret=secret,
            token_endpoint_auth_method=cast(TokenEndpointAuthMethod, method),
        )


def read_registration_response(
    status: int, body: bytes, *, issuer: str, requested_method: TokenEndpointAuthMethod
) -> ClientRegistration:
    """Read a dynamic registration answer (RFC 7591 §3.2).

    The method is the one the server answers, else the one requested.

    Args:
        status: the HTTP status of the POST.
        body: the response body.
        issuer: the issuer the registration was made with.
        requested_method: the ``token_endpoint_auth_method`` sent.

    Returns:
        The registration.

    Raises:
        AuthorizationError: unless HTTP 200/201 with a JSON object holding a string ``client_id``; when the
            answered method is unknown or needs a secret the answer lacks.
    """
    state = REGISTERING
    document = _json_object(body)
    if status not in (200, 201):
        error, description = _oauth_error(document)
        raise AuthorizationError(
            f"the registration endpoint answered HTTP {status}", state=state, error=error, error_description=description
        )
    if document is None or not isinstance(document.get("client_id"), str) or not document["client_id"]:
        raise AuthorizationError("the registration answer has no client_id", state=state)
    method = document.get("token_endpoint_auth_method", requested_method)
    if method not in ("client_secret_basic", "client_secret_post", "none"):
        raise AuthorizationError(f"the registration answer assigns token endpoint auth method {method!r}", state=state)
    secret = document.get("client_secret")
    secret = secret if isinstance(secret, str) and secret else None
    if method != "none" and secret is None:
        raise AuthorizationError(f"the registration answer assigns {method} but no client_secret", state=state)
    return ClientRegistration(
        issuer=issuer,
        client_id=document["client_id"],
        client_secret=secret,
        token_endpoint_auth_method=cast(TokenEndpointAuthMethod, method),
    )


# --------------------------------------------------------------------------------------------------
# Scopes (MCP 2026-07-28 "Scope Selection Strategy"; SEP-835, SEP-2350, SEP-2207)


def requested_scopes(
    challenge: BearerChallenge | None, resource_metadata: ProtectedResourceMetadata | None
) -> tuple[str, ...]:
    """Choose the initial scopes: the challenge's ``scope``, else every PRM ``scopes_supported``, else none.

    The authorization server's own ``scopes_supported`` is never a source.
    """
    if challenge is not None and challenge.scope:
        return challenge.scope
    if resource_metadata is not None and resource_metadata.scopes_supported:
        return _ordered_unique(resource_metadata.scopes_supported)
    return ()


def with_offline_access(
    scopes: Sequence[str], metadata: AuthorizationServerMetadata, *, refresh_wanted: bool = True
) -> tuple[str, ...]:
    """Append ``offline_access`` iff the server lists it, ``scopes`` is non-empty and refresh is wanted (SEP-2207)."""
    ordered = _ordered_unique(scopes)
    if ordered and refresh_wanted and "offline_access" in (metadata.scopes_supported or ()):
        return _ordered_unique((*ordered, "offline_access"))
    return ordered


def step_up_scopes(held: Sequence[str], challenged: Sequence[str]) -> tuple[str, ...]:
    """Return the scopes of a step-up: the held ones then the challenged ones, duplicates dropped (SEP-2350)."""
    return _ordered_unique((*held, *challenged))


def scope_parameter(scopes: Sequence[str]) -> str | None:
    """Join scopes with single spaces (RFC 6749 §3.3); None for no scope, so ``scope=`` is never sent."""
    return " ".join(scopes) if scopes else None


# --------------------------------------------------------------------------------------------------
# Authorization request and response (OAuth 2.1 §4.1; RFC 7636; RFC 9207; RFC 8707)

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
        raise AuthorizationError(
            f"{metadata.issuer!r} has no authorization endpoint", state=AUTHORIZING
        )
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


# --------------------------------------------------------------------------------------------------
# Token endpoint (RFC 6749 §2.3.1, §4.1.3, §5, §6; RFC 7523; RFC 8693; RFC 8707)


@dataclass(frozen=True, slots=True)
class Answer:
    """An authorization server's (or a metadata endpoint's) answer to one request, as the readers here take it.

    Attributes:
        status: the HTTP status (redirects are never followed, so a 3xx is an answer too).
        body: the body, whole.
        dpop_nonce: the ``DPoP-Nonce`` header, if any (RFC 9449 §8).
    """

    status: int
    body: bytes = field(repr=False)
    dpop_nonce: str | None = None


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


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenSet:
    """Tokens granted for one (issuer, resource).

    Attributes:
        access_token: the access token.
        token_type: ``Bearer``, or ``DPoP`` for a token bound to the client's DPoP key.
        refresh_token: the refresh token, or None.
        expires_at: when the access token expires (the clock the driver passed), or None when unknown.
        scopes: the granted scopes (the requested ones when the server does not say).
        issuer: the issuer that granted them.
        resource: the resource they are for.
    """

    access_token: str = field(repr=False)
    token_type: Literal["Bearer", "DPoP"] = "Bearer"
    refresh_token: str | None = field(default=None, repr=False)
    expires_at: float | None = None
    scopes: tuple[str, ...] = ()
    issuer: str
    resource: str | None

    @property
    def authorization(self) -> str:
        """The ``Authorization`` header value for the MCP endpoint (RFC 6750 §2.1, RFC 9449 §7.1)."""
        return f"{self.token_type} {self.access_token}"

    def expiring(self, now: float, margin: float = ACCESS_TOKEN_REFRESH_MARGIN) -> bool:
        """Tell whether the access token expires within ``margin`` seconds of ``now``."""
        return self.expires_at is not None and now >= self.expires_at - margin

    def to_dict(self) -> dict[str, Any]:
        """The tokens as a JSON-ready record, for a token store (it holds the tokens)."""
        return {
            "access_token": self.access_token,
            "token_type": self.token_type,
            "refresh_token": self.refresh_token,
            "expires_at": self.expires_at,
            "scopes": list(self.scopes),
            "issuer": self.issuer,
            "resource": self.resource,
        }

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> TokenSet | None:
        """Rebuild tokens from :meth:`to_dict` output; ``None`` for a record that is not one."""
        access, kind, refresh = record.get("access_token"), record.get("token_type"), record.get("refresh_token")
        expires_at, scopes = record.get("expires_at"), record.get("scopes")
        issuer, resource = record.get("issuer"), record.get("resource")
        if not isinstance(access, str) or not _header_safe(access) or kind not in ("Bearer", "DPoP"):
            return None
        if not isinstance(issuer, str):
            return None
        if not (refresh is None or isinstance(refresh, str)) or not (resource is None or isinstance(resource, str)):
            return None
        if expires_at is not None and (
            isinstance(expires_at, bool) or not isinstance(expires_at, int | float) or not _finite(expires_at)
        ):
            return None
        scope_list = _string_tuple(scopes)
        if scope_list is None:
            return None
        return cls(
            access_token=access,
            token_type=cast('Literal["Bearer", "DPoP"]', kind),
            refresh_token=refresh or None,
            expires_at=None if expires_at is None else float(expires_at),
            scopes=scope_list,
            issuer=issuer,
            resource=resource,
        )


def _finite(number: int | float) -> bool:
    # An int too large for a float is not a usable time either.
    try:
        return math.isfinite(number)
    except OverflowError:
        return False


def _oauth_error(document: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    if document is None:
        return None, None
    error, description = document.get("error"), document.get("error_description")
    return (error if isinstance(error, str) else None, description if isinstance(description, str) else None)


def _expires_in(value: object) -> float | None:
    # RFC 6749 §5.1: seconds. Clamped to MAX_TOKEN_LIFETIME before any conversion to float (an integer too
    # large for one would raise OverflowError); a string of ASCII digits counts as its number.
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if not (value.isascii() and value.isdigit()):
            return None
        value = int(value) if len(value) <= 12 else MAX_TOKEN_LIFETIME
    if isinstance(value, int):
        return float(min(value, MAX_TOKEN_LIFETIME)) if value >= 0 else None
    if isinstance(value, float) and math.isfinite(value) and value >= 0:
        return min(value, float(MAX_TOKEN_LIFETIME))
    return None


def _header_safe(token: str) -> bool:
    # RFC 6750 §2.1 / RFC 9449 §7.1: the token goes into an Authorization header, so visible ASCII only.
    return _VISIBLE_ASCII.fullmatch(token) is not None


def read_token_response(
    status: int,
    body: bytes,
    *,
    now: float,
    issuer: str,
    resource: str | None,
    requested_scopes: Sequence[str],
    dpop: bool = False,
    previous: TokenSet | None = None,
    state: str = EXCHANGING,
) -> TokenSet:
    """Read a token endpoint answer (RFC 6749 §5.1, §5.2; RFC 9449 §5).

    ``token_type`` compares case-insensitively: ``Bearer``; or, when the request carried a DPoP proof,
    ``DPoP`` (a bound token) or ``Bearer`` (a server that does not bind). ``expires_at`` = ``now`` +
    ``expires_in``. On a refresh (``previous`` given) an omitted refresh token keeps the previous one and an
    omitted scope keeps the previous scopes (RFC 6749 §6).

    Args:
        status: the HTTP status.
        body: the response body.
        now: the current time, in the clock ``expires_at`` is kept in.
        issuer: the issuer asked.
        resource: the resource asked for.
        requested_scopes: the scopes asked for (ignored on a refresh).
        dpop: whether the request carried a DPoP proof.
        previous: the tokens a refresh replaces.
        state: the state the request was made in (``exchanging`` or ``refreshing``).

    Returns:
        The tokens.

    Raises:
        AuthorizationError: on an error answer (with the server's ``error``), a body that is not a JSON
            object, a missing ``access_token`` or an unusable ``token_type``.
    """
    document = _json_object(body)
    if status != 200:
        error, description = _oauth_error(document)
        raise AuthorizationError(
            f"the token endpoint answered HTTP {status}", state=state, error=error, error_description=description
        )
    if document is None:
        raise AuthorizationError("the token endpoint's answer is not a JSON object", state=state)
    access_token = document.get("access_token")
    if not isinstance(access_token, str) or not access_token:
        raise AuthorizationError("the token endpoint's answer has no access_token", state=state)
    if not _header_safe(access_token):
        # Never quoted: it is the token.
        raise AuthorizationError(
            "the token endpoint's access_token holds characters other than visible ASCII, which no Authorization"
            " header can carry (RFC 6750 §2.1)",
            state=state,
        )
    raw_type = document.get("token_type")
    kind = raw_type.lower() if isinstance(raw_type, str) else None
    if kind == "bearer":
        token_type: Literal["Bearer", "DPoP"] = "Bearer"
    elif kind == "dpop" and dpop:
        token_type = "DPoP"
    else:
        wanted = "Bearer or DPoP" if dpop else "Bearer"
        raise AuthorizationError(f"the token endpoint's token_type {raw_type!r} is not {wanted}", state=state)
    refresh_token = document.get("refresh_token")
    if not isinstance(refresh_token, str) or not refresh_token:
        refresh_token = previous.refresh_token if previous is not None else None
    scope = document.get("scope")
    if isinstance(scope, str) and scope.split():
        scopes = _ordered_unique(scope.split())
    else:
        scopes = previous.scopes if previous is not None else tuple(requested_scopes)
    lifetime = _expires_in(document.get("expires_in"))
    return TokenSet(
        access_token=access_token,
        token_type=token_type,
        refresh_token=refresh_token,
        expires_at=None if lifetime is None else now + lifetime,
        scopes=scopes,
        issuer=issuer,
        resource=resource,
    )


def read_token_exchange_response(status: int, body: bytes) -> str:
    """Read the IdP's token exchange answer and return the ID-JAG (RFC 8693 §2.2; SEP-990).

    Raises:
        AuthorizationError: on an error answer, or when ``issued_token_type`` is not the ID-JAG type or the
            ``access_token`` member is missing.
    """
    state = ASSERTING
    document = _json_object(body)
    if status != 200:
        error, description = _oauth_error(document)
        raise AuthorizationError(
            f"the token exchange endpoint answered HTTP {status}",
            state=state,
            error=error,
            error_description=description,
        )
    if document is None or document.get("issued_token_type") != TOKEN_TYPE_ID_JAG:
        raise AuthorizationError("the token exchange answer did not issue an ID-JAG", state=state)
    assertion = document.get("access_token")
    if not isinstance(assertion, str) or not assertion:
        raise AuthorizationError("the token exchange answer has no access_token", state=state)
    return assertion


# --------------------------------------------------------------------------------------------------
# Secrets in what a server says back


REDACTED: Final = "[redacted]"
"""What a held secret becomes in the server's error text."""

SECRET_FORM_FIELDS: Final = frozenset(
    {"client_secret", "client_assertion", "code", "code_verifier", "refresh_token", "assertion", "subject_token"}
)
"""Form fields of a token request whose values are secrets (RFC 6749 §2.3.1, §4.1.3, §6; RFC 7636 §4.5;
RFC 7521 §4.2; RFC 7523 §2.1; RFC 8693 §2.1)."""


def redact_server_text(error: AuthorizationError, held: Iterable[str]) -> AuthorizationError:
    """``error`` with every held secret taken out of the text the server chose (``error``, ``error_description``).

    A server may echo what it was sent (a client secret, a refresh token, a code, a verifier, an assertion)
    in its ``error_description`` (RFC 6749 §5.2) or in an authorization response's error (RFC 6749
    §4.1.2.1); that text goes into the error's message, and no secret may (README, "Authorization"). Each
    held value is replaced by :data:`REDACTED` wherever it occurs, as is or percent-encoded (as a form or a
    query carries it), longest first. The reason, mcpfsm's own words, is kept; so is the cause.

    Returns:
        ``error`` itself when nothing needed redacting, else a new :class:`AuthorizationError`.
    """
    forms = sorted({form for value in held if value for form in (value, quote_plus(value), quote(value, safe=""))},
                   key=len, reverse=True)

    def scrub(text: str | None) -> str | None:
        if text is None:
            return None
        for form in forms:
            text = text.replace(form, REDACTED)
        return text

    code, description = scrub(error.error), scrub(error.error_description)
    if (code, description) == (error.error, error.error_description):
        return error
    clean = AuthorizationError(error.reason, state=error.state, error=code, error_description=description)
    clean.__cause__ = error.__cause__
    clean.__suppress_context__ = True
    return clean


# --------------------------------------------------------------------------------------------------
# DPoP (RFC 9449; SEP-1932)

_NONCE: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class DPoPKey:
    """The client's DPoP key: an EC P-256 private key, signing ES256 proofs (RFC 9449 §4.2).

    Raises:
        ValueError: when the key is not on P-256.
    """

    private_key: ec.EllipticCurvePrivateKey = field(repr=False)

    def __post_init__(self) -> None:
        from cryptography.hazmat.primitives.asymmetric import ec

        if not isinstance(self.private_key.curve, ec.SECP256R1):
            raise ValueError("a DPoP key for ES256 is on the P-256 curve")

    @classmethod
    def generate(cls) -> DPoPKey:
        """Draw a fresh P-256 key."""
        from cryptography.hazmat.primitives.asymmetric import ec

        return cls(private_key=ec.generate_private_key(ec.SECP256R1()))

    @classmethod
    def from_pem(cls, pem: str | bytes) -> DPoPKey:
        """Load a PKCS#8 PEM private key (unencrypted).

        Raises:
            ValueError: when the PEM is not an unencrypted P-256 private key.
        """
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        data = pem.encode("ascii") if isinstance(pem, str) else pem
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise ValueError("the DPoP key is not an unencrypted PEM private key") from exc
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("a DPoP key for ES256 is on the P-256 curve")
        return cls(private_key=key)

    @property
    def public_jwk(self) -> dict[str, str]:
        """The public key as a JWK (RFC 7517, RFC 7518 §6.2.1): ``kty``, ``crv``, ``x``, ``y`` only."""
        import jwt

        jwk = jwt.algorithms.ECAlgorithm.to_jwk(self.private_key.public_key(), as_dict=True)
        return {name: str(jwk[name]) for name in ("kty", "crv", "x", "y")}


def dpop_htu(url: str) -> str:
    """Return the ``htu`` of a request to ``url``: the URL without query and fragment (RFC 9449 §4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def access_token_hash(access_token: str) -> str:
    """Return ``ath``: unpadded base64url of SHA-256 of the ASCII access token (RFC 9449 §4.2)."""
    return _b64url(hashlib.sha256(access_token.encode("ascii")).digest())


def dpop_proof(
    key: DPoPKey,
    *,
    method: str,
    url: str,
    now: float,
    jti: str,
    nonce: str | None = None,
    access_token: str | None = None,
) -> str:
    """Sign a DPoP proof JWT (RFC 9449 §4.2).

    Header ``typ: dpop+jwt``, ``alg: ES256``, ``jwk`` = the public key; claims ``jti``, ``htm``, ``htu`` (no
    query or fragment), ``iat``, ``nonce`` when the server supplied one, and ``ath`` when presenting
    ``access_token`` to a resource (RFC 9449 §7.1).

    Args:
        key: the client's DPoP key.
        method: the HTTP method of the request.
        url: the request URL.
        now: the current time (seconds since the epoch).
        jti: a fresh value from :func:`new_jti`.
        nonce: the last ``DPoP-Nonce`` of this server, if any.
        access_token: the access token the request presents, if any.

    Returns:
        The compact JWT for the ``DPoP`` header.
    """
    claims: dict[str, Any] = {"jti": jti, "htm": method.upper(), "htu": dpop_htu(url), "iat": int(now)}
    if nonce is not None:
        claims["nonce"] = nonce
    if access_token is not None:
        claims["ath"] = access_token_hash(access_token)
    import jwt

    return jwt.encode(claims, key.private_key, algorithm="ES256", headers={"typ": "dpop+jwt", "jwk": key.public_jwk})


def dpop_signing_algorithm(
    metadata: AuthorizationServerMetadata, resource_metadata: ProtectedResourceMetadata | None = None
) -> str:
    """Return ``ES256`` when the servers that list DPoP algorithms accept it (RFC 9449 §5.1, RFC 9728 §2).

    Raises:
        AuthorizationError: when the authorization server or the resource lists algorithms without ES256.
    """
    for listed in (
        metadata.dpop_signing_alg_values_supported,
        None if resource_metadata is None else resource_metadata.dpop_signing_alg_values_supported,
    ):
        if listed is not None and "ES256" not in listed:
            raise AuthorizationError(
                f"DPoP signing algorithms {list(listed)!r} do not include ES256",
                state=DISCOVERING_ISSUER,
            )
    return "ES256"


def _nonce(value: str | None) -> str | None:
    return value if value is not None and _NONCE.fullmatch(value) else None


def token_endpoint_nonce_challenge(status: int, body: bytes, dpop_nonce: str | None) -> str | None:
    """Tell whether a token endpoint asks for a retry with its nonce (RFC 9449 §8).

    Args:
        status: the HTTP status of the token request.
        body: the response body.
        dpop_nonce: the ``DPoP-Nonce`` response header, if any.

    Returns:
        The nonce to put in a fresh proof for one retry, or None when the answer is not that challenge.
    """
    if status != 400:
        return None
    error, _ = _oauth_error(_json_object(body))
    return _nonce(dpop_nonce) if error == USE_DPOP_NONCE else None


def resource_nonce_challenge(status: int, www_authenticate: str | Iterable[str], dpop_nonce: str | None) -> str | None:
    """Tell whether a resource asks for a retry with its nonce (RFC 9449 §9).

    Args:
        status: the HTTP status of the resource request.
        www_authenticate: the ``WWW-Authenticate`` field values.
        dpop_nonce: the ``DPoP-Nonce`` response header, if any.

    Returns:
        The nonce to put in a fresh proof for one retry, or None when the answer is not that challenge.
    """
    if status != 401:
        return None
    challenge = bearer_challenge(www_authenticate, scheme="DPoP")
    return _nonce(dpop_nonce) if challenge is not None and challenge.error == USE_DPOP_NONCE else None
