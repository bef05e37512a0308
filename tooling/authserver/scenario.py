"""The test authorization server's scenario (what it serves), its records and the helpers every part shares."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote_plus

from cryptography.hazmat.primitives import serialization
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

__all__ = ["Client", "Grant", "NonceNeeded", "ProofRejected", "Rejected", "Scenario"]

Handler = Callable[[Request], Awaitable[Response]]

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
PROOF_WINDOW = 300
MODERN_VERSION = "2026-07-28"
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")


@dataclass(kw_only=True)
class Scenario:
    """What the server serves; every field has the default of the conformance suite's mock server.

    Attributes:
        issuer_path: path of the main issuer (``""`` = the origin, ``"/tenant1"``); its endpoints live under it.
        metadata_at: where its metadata is served: ``oauth`` (RFC 8414 path insertion), ``oidc`` (OIDC path
            insertion), ``oidc-suffix`` (OIDC Discovery path appending).
        metadata_issuer: an ``issuer`` to publish instead of the real one (issuer mismatch).
        prm_at: ``path`` (``/.well-known/oauth-protected-resource/mcp``), ``root``, ``custom``
            (``/custom/metadata/location.json``) or ``none``.
        prm_in_challenge: whether the 401 names the PRM URL in ``resource_metadata``.
        prm_resource: the PRM ``resource``: None = ``{origin}/mcp``, ``"origin"`` = the bare origin, or a URL.
        prm_scopes_supported: the PRM ``scopes_supported``.
        challenge_scope: the ``scope`` of the 401 challenge.
        scopes_supported: the authorization server's ``scopes_supported``.
        token_endpoint_auth_methods_supported: as published; registration assigns the first unless asked one is listed.
        registration: whether a ``registration_endpoint`` exists.
        registration_auth_method: a method registration always assigns, whatever was asked.
        cimd: ``client_id_metadata_document_supported``; any https client id with a path is then accepted.
        iss_supported: ``authorization_response_iss_parameter_supported``.
        iss_mode: the redirect's ``iss``: ``correct``, ``omit``, ``wrong`` (``https://evil.example.com``) or
            ``slash`` (issuer + ``/``).
        pre_registered: ``{"client_id", "client_secret"?, "method"?}`` known to the main server.
        step_up_scope: a scope ``tools/call`` needs; without it 403 ``insufficient_scope``.
        forbid_scope: every authenticated MCP request draws 403 ``insufficient_scope`` with this scope ...
        forbid_limit: ... until this many were answered; later ones get 410.
        migrate_after: after this many authorized MCP requests the PRM lists ``/as2`` and old tokens die.
        legacy: ``metadata`` (no PRM; metadata at the origin with ``/oauth/*`` endpoints) or ``defaults`` (no PRM,
            no metadata; ``/authorize``, ``/token``, ``/register`` at the origin).
        client_credentials: ``{"client_id", "client_secret"}`` (client_secret_basic) or ``{"client_id",
            "public_key_pem"}`` (private_key_jwt, ES256), or a list of such clients.
        jwt_bearer: ``{"client_id", "issuer", "public_key_pem"}``: a public client presenting assertions of that
            issuer (workload identity, RFC 7523).
        idp: ``{"client_id", "id_token"}``: the IdP at ``/idp/token`` exchanges that ID token for an ID-JAG for
            the ``pre_registered`` client, which the main server accepts (SEP-990).
        dpop: advertise ES256 DPoP and bind tokens to proofs that come with token requests.
        dpop_required: the resource only accepts DPoP-bound tokens.
        dpop_nonce_as: the token endpoint requires its nonce (400 ``use_dpop_nonce``).
        dpop_nonce_resource: the resource requires its nonce (401 ``use_dpop_nonce``).
        refresh_tokens: issue refresh tokens.
        rotate_refresh_tokens: a refresh returns a new refresh token and retires the old one.
        revoke_on_reuse: a retired refresh token presented again revokes its whole grant, every access and
            refresh token descended from the same authorization (RFC 6749 §10.4; RFC 9700 §4.14.2).
        refresh_delay: seconds the token endpoint takes to answer a refresh (a slow server, so that clients
            refreshing together overlap).
        expires_in: access token lifetime in seconds (0: expired at once).
        token_suffix: appended to every access token issued (a non-ASCII one makes a token no header can carry).
        sessions: answer ``initialize`` with an ``Mcp-Session-Id`` and accept the session ``DELETE`` (legacy).
        echo_secrets: a careless server: a refused token request's ``error_description`` quotes the secrets it
            was sent (form fields, the Basic secret and the whole Authorization value), as is and percent-encoded.
        echo_credentials: a careless MCP endpoint: the result of ``test-tool`` quotes the ``Authorization`` and
            ``DPoP`` headers of the call (a recording must not keep them, docs/testing.md).
    """

    issuer_path: str = ""
    metadata_at: list[str] = field(default_factory=lambda: ["oauth"])
    metadata_issuer: str | None = None
    prm_at: str = "path"
    prm_in_challenge: bool = True
    prm_resource: str | None = None
    prm_scopes_supported: list[str] | None = None
    challenge_scope: str | None = None
    scopes_supported: list[str] | None = None
    token_endpoint_auth_methods_supported: list[str] = field(default_factory=lambda: ["none"])
    registration: bool = True
    registration_auth_method: str | None = None
    cimd: bool = False
    iss_supported: bool = True
    iss_mode: str = "correct"
    pre_registered: dict[str, str] | None = None
    step_up_scope: str | None = None
    forbid_scope: str | None = None
    forbid_limit: int = 3
    migrate_after: int | None = None
    legacy: str | None = None
    client_credentials: dict[str, str] | list[dict[str, str]] | None = None
    jwt_bearer: dict[str, str] | None = None
    idp: dict[str, str] | None = None
    dpop: bool = False
    dpop_required: bool = False
    dpop_nonce_as: bool = False
    dpop_nonce_resource: bool = False
    refresh_tokens: bool = False
    rotate_refresh_tokens: bool = True
    revoke_on_reuse: bool = False
    refresh_delay: float = 0.0
    expires_in: int = 3600
    token_suffix: str = ""
    sessions: bool = False
    echo_secrets: bool = False
    echo_credentials: bool = False

    @property
    def credentials_clients(self) -> list[dict[str, str]]:
        """The clients that may use the ``client_credentials`` grant (``client_credentials`` as a list)."""
        configured = self.client_credentials
        if configured is None:
            return []
        return [configured] if isinstance(configured, dict) else list(configured)

    @classmethod
    def from_json(cls, text: str) -> Scenario:
        """Build a scenario from a JSON object; unknown fields raise ValueError."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("the config is a JSON object")
        known = {spec.name for spec in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown scenario fields: {unknown}")
        return cls(**data)


@dataclass(kw_only=True)
class Client:
    """A client one authorization server knows."""

    client_id: str
    method: str
    secret: str | None = None
    public_key: Any = None
    redirect_uris: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class Grant:
    """What an access or refresh token stands for."""

    issuer: str
    client_id: str
    scopes: list[str]
    resource: str | None
    jkt: str | None = None
    expires_at: float | None = None
    family: str = field(default_factory=lambda: secrets.token_hex(8))
    """The authorization every token of this grant descends from (refreshes keep it): what a reuse revokes."""


class Rejected(Exception):
    """An OAuth error answer: status, ``error``, description and extra headers."""

    def __init__(self, status: int, error: str, description: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"{status} {error}: {description}")
        self.status = status
        self.error = error
        self.description = description
        self.headers = headers or {}

    def response(self) -> Response:
        """The JSON error response (RFC 6749 §5.2)."""
        body = {"error": self.error, "error_description": self.description}
        return JSONResponse(body, status_code=self.status, headers=self.headers)


class NonceNeeded(Exception):
    """A DPoP proof lacks the server's current nonce."""


class ProofRejected(Exception):
    """A DPoP proof fails a check of RFC 9449 §4.3."""


_ECHOED = ("client_secret", "client_assertion", "code", "code_verifier", "refresh_token", "assertion", "subject_token")


def _echo(form: dict[str, str], authorization: str) -> str:
    # What a careless server says back (Scenario.echo_secrets): every secret it received, raw and encoded.
    received = [(name, form[name]) for name in _ECHOED if name in form]
    if authorization.lower().startswith("basic "):
        decoded = base64.b64decode(authorization[6:]).decode()
        received.append(("client_secret", unquote_plus(decoded.partition(":")[2])))
        received.append(("authorization", authorization))
    return "; received " + ", ".join(f"{name}={value} ({quote(value, safe='')})" for name, value in received)


def b64url(data: bytes) -> str:
    """Unpadded base64url."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def jwk_thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638 thumbprint of an EC public JWK (required members, sorted, no whitespace, SHA-256)."""
    canonical = json.dumps({name: jwk[name] for name in ("crv", "kty", "x", "y")}, separators=(",", ":"))
    return b64url(hashlib.sha256(canonical.encode()).digest())


def load_public_key(pem: str) -> Any:
    """Load a PEM public key."""
    return serialization.load_pem_public_key(pem.encode())
