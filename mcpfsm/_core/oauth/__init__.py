"""OAuth 2.1 authorization for an MCP client: the pure core, one module per concept.

Every function in this package turns protocol input (a header, an HTTP status and body, a redirect
URL) into a frozen value or an :class:`AuthorizationError`; none of them performs I/O or reads a clock.
The driver passes ``now``, ``state``, ``code_verifier`` and ``jti`` in; only ``new_state()``,
``new_code_verifier()``, ``new_jti()`` and ``DPoPKey.generate()`` draw randomness (from :mod:`secrets`
and ``cryptography``). This package imports neither trio, httpx, anyio nor loguru; signatures come from
PyJWT over ``cryptography`` and hashes from :mod:`hashlib`: nothing cryptographic is written here.

The modules, one concept each, with their sources:

- ``answers``: what a server answers (:class:`Answer`), the headers of a metadata GET, JSON bodies;
- ``challenges``: ``WWW-Authenticate`` (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1, RFC 9449 §7.1);
- ``urls``: loopback hosts and the https-or-loopback rule;
- ``resource``: Protected Resource Metadata (RFC 9728) and the resource (RFC 8707, RFC 9728 §3.3);
- ``issuer``: authorization server metadata (RFC 8414, OpenID Connect Discovery 1.0; the MCP specification
  revision 2026-07-28 "Authorization" and "Authorization Server Discovery" pages, SEP-985, SEP-2468; the
  2025-03-26 revision for the legacy path);
- ``identification``: the client: RFC 7591 (dynamic registration), OAuth Client ID Metadata Documents
  (SEP-991), SEP-837, SEP-2352 (authorization server binding);
- ``scopes``: SEP-835, SEP-2350 (union on step-up), SEP-2207 (``offline_access``);
- ``authorization_request``: the request and response, OAuth 2.1 (draft-ietf-oauth-v2-1) §4.1, RFC 7636
  (PKCE), RFC 9207 (``iss``);
- ``token_request`` and ``tokens``: the token endpoint, RFC 6749 §2.3.1, §5; RFC 7523 (JWT assertions,
  ``private_key_jwt``); RFC 8693 (token exchange); the MCP extensions ``oauth-client-credentials``
  (SEP-1046) and enterprise-managed authorization (SEP-990, draft-ietf-oauth-identity-assertion-authz-grant);
- ``redaction``: which values are secret, and taking them out of what a server says back;
- ``dpop``: proof of possession, RFC 9449 (DPoP), SEP-1932.

Secrets never leave the values that hold them: every field holding a token, code, verifier, secret,
assertion or key is ``repr=False``, and no error message quotes one.

PyJWT and ``cryptography`` are imported inside the functions that sign (:mod:`.token_request`,
:mod:`.dpop`), not at import time: ``import mcpfsm`` imports neither.

This ``__init__`` re-exports every public name of the concept modules, for callers that want the whole
vocabulary under one name (``from mcpfsm._core import oauth``); new code imports from the module that owns
the concept.
"""

from __future__ import annotations

from .answers import (
    LEGACY_METADATA_HEADERS,
    METADATA_REQUEST_HEADERS,
    Answer,
)
from .authorization_request import (
    AuthorizationRequest,
    authorization_request,
    code_challenge,
    new_code_verifier,
    new_jti,
    new_state,
    read_authorization_response,
)
from .challenges import (
    BearerChallenge,
    Challenge,
    ResourceChallenge,
    bearer_challenge,
    parse_challenges,
    read_resource_challenge,
    resource_challenge,
)
from .dpop import (
    USE_DPOP_NONCE,
    DPoPKey,
    access_token_hash,
    dpop_htu,
    dpop_proof,
    dpop_signing_algorithm,
    resource_nonce,
    resource_nonce_challenge,
    token_endpoint_nonce_challenge,
)
from .identification import (
    ClientAuthentication,
    ClientIdentification,
    ClientRegistration,
    PreRegisteredClient,
    TokenEndpointAuthMethod,
    check_client_metadata_url,
    choose_client_identification,
    client_metadata_document,
    pre_registered_auth_method,
    read_registration_response,
    registration_auth_method,
    registration_request,
)
from .issuer import (
    AuthorizationServerMetadata,
    authorization_server_metadata_urls,
    legacy_issuer,
    legacy_metadata_url,
    read_authorization_server_metadata,
    read_legacy_authorization_server_metadata,
)
from .redaction import (
    REDACTED,
    SECRET_FORM_FIELDS,
    redact_server_text,
)
from .resource import (
    ProtectedResourceMetadata,
    check_resource,
    choose_authorization_server,
    protected_resource_metadata_urls,
    read_protected_resource_metadata,
    resource_matches,
)
from .scopes import (
    requested_scopes,
    scope_parameter,
    step_up_scopes,
    with_offline_access,
)
from .token_request import (
    CLIENT_ASSERTION_LIFETIME,
    CLIENT_ASSERTION_TYPE_JWT_BEARER,
    GRANT_TYPE_JWT_BEARER,
    GRANT_TYPE_TOKEN_EXCHANGE,
    TOKEN_TYPE_ID_JAG,
    TOKEN_TYPE_ID_TOKEN,
    TokenRequest,
    client_assertion,
    client_credentials_request,
    code_exchange_request,
    jwt_bearer_request,
    refresh_request,
    token_exchange_request,
)
from .tokens import (
    ACCESS_TOKEN_REFRESH_MARGIN,
    MAX_TOKEN_LIFETIME,
    REFRESH_MARGIN_SHARE,
    TokenSet,
    read_token_exchange_response,
    read_token_response,
)
from .urls import (
    is_loopback_host,
)

__all__ = [
    "ACCESS_TOKEN_REFRESH_MARGIN",
    "CLIENT_ASSERTION_LIFETIME",
    "CLIENT_ASSERTION_TYPE_JWT_BEARER",
    "GRANT_TYPE_JWT_BEARER",
    "GRANT_TYPE_TOKEN_EXCHANGE",
    "LEGACY_METADATA_HEADERS",
    "MAX_TOKEN_LIFETIME",
    "METADATA_REQUEST_HEADERS",
    "REDACTED",
    "REFRESH_MARGIN_SHARE",
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
    "ResourceChallenge",
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
    "read_resource_challenge",
    "read_token_exchange_response",
    "read_token_response",
    "redact_server_text",
    "refresh_request",
    "registration_auth_method",
    "registration_request",
    "requested_scopes",
    "resource_challenge",
    "resource_matches",
    "resource_nonce",
    "resource_nonce_challenge",
    "scope_parameter",
    "step_up_scopes",
    "token_endpoint_nonce_challenge",
    "token_exchange_request",
    "with_offline_access",
]
