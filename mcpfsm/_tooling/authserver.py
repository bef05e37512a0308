"""A local OAuth 2.1 authorization server and protected MCP resource, for mcpfsm's tests, walkthrough and demo.

Run ``python -m mcpfsm._tooling.authserver --config JSON [--port N]``: it listens on 127.0.0.1 (a free port
unless ``--port`` names one) and prints exactly one line, ``READY http://127.0.0.1:PORT``, once it accepts
connections (:func:`mcpfsm._tooling.peer_process.run_authserver` starts it and waits for that line). The
JSON object sets the fields of :class:`Scenario`; each field mirrors a variation the official MCP
conformance scenarios serve (PRM location, metadata paths, issuer mismatch, ``iss`` variants, token endpoint
auth methods, pre-registration, Client ID Metadata Documents, dynamic registration, scopes, step-up, retry
limit, authorization server migration, the 2025-03-26 fallbacks, client credentials, JWT bearer,
enterprise-managed token exchange, DPoP with nonces, refresh token rotation, expiring tokens). Unknown
fields are an error.

It serves, on one origin:

- ``POST /mcp``: minimal MCP JSON-RPC behind bearer (or DPoP) tokens; 401 with ``WWW-Authenticate`` when
  no valid token is presented, 403 ``insufficient_scope`` for step-up;
- Protected Resource Metadata (RFC 9728) and authorization server metadata (RFC 8414, OIDC Discovery);
- ``/authorize`` (auto-approves: 302 to the redirect URI with ``code``, ``state`` and ``iss``), ``/token``,
  ``/register`` (RFC 7591); a second server under ``/as2`` for migration; an IdP token exchange endpoint at
  ``/idp/token`` (RFC 8693) that issues ID-JAGs;
- ``GET /_log`` (every request received, in order, with its answer's status) and ``POST /_log/clear``;
- ``POST /_revoke``: every access token dies, with ``{"refresh_tokens": true}`` every refresh token too
  (clients stay);
- ``POST /_config`` with a JSON object of :class:`Scenario` fields: start afresh with that scenario (new
  clients, codes and tokens, an empty log), so one process serves many tests.

It is written from the public specifications (RFC 6749, 6750, 7523, 7591, 7636, 7638, 8414, 8693, 8707,
9207, 9449, 9728, OAuth 2.1, the MCP authorization pages) and is test infrastructure, not a product: all
state is in memory and every token is opaque and random.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import dataclasses
import hashlib
import json
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, parse_qsl, quote, unquote_plus, urlencode, urlsplit

import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["Scenario", "build_app", "main"]

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
            "public_key_pem"}`` (private_key_jwt, ES256).
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
        expires_in: access token lifetime in seconds (0: expired at once).
        token_suffix: appended to every access token issued (a non-ASCII one makes a token no header can carry).
        sessions: answer ``initialize`` with an ``Mcp-Session-Id`` and accept the session ``DELETE`` (legacy).
        echo_secrets: a careless server: a refused token request's ``error_description`` quotes the secrets it
            was sent (form fields, the Basic secret and the whole Authorization value), as is and percent-encoded.
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
    client_credentials: dict[str, str] | None = None
    jwt_bearer: dict[str, str] | None = None
    idp: dict[str, str] | None = None
    dpop: bool = False
    dpop_required: bool = False
    dpop_nonce_as: bool = False
    dpop_nonce_resource: bool = False
    refresh_tokens: bool = False
    rotate_refresh_tokens: bool = True
    expires_in: int = 3600
    token_suffix: str = ""
    sessions: bool = False
    echo_secrets: bool = False

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


class AuthorizationServer:
    """One authorization server: metadata, clients, codes and the grants it issues."""

    def __init__(self, world: World, *, issuer: str, prefix: str, metadata_paths: list[str]) -> None:
        self.world = world
        self.scenario = world.scenario
        self.issuer = issuer
        self.prefix = prefix
        self.metadata_paths = metadata_paths
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.refresh_tokens: dict[str, Grant] = {}
        self.nonce = secrets.token_urlsafe(12)

    def url(self, name: str) -> str:
        """The absolute URL of an endpoint of this server."""
        return f"{self.world.base}{self.prefix}/{name}"

    def routes(self) -> dict[tuple[str, str], Handler]:
        """This server's routes, keyed by (method, path)."""
        table: dict[tuple[str, str], Handler] = {(("GET", path)): self.metadata for path in self.metadata_paths}
        table[("GET", f"{self.prefix}/authorize")] = self.authorize
        table[("POST", f"{self.prefix}/token")] = self.token
        if self.scenario.registration:
            table[("POST", f"{self.prefix}/register")] = self.register
        return table

    def metadata_document(self) -> dict[str, Any]:
        """The RFC 8414 metadata this server publishes."""
        s = self.scenario
        grants = ["authorization_code", "refresh_token", "client_credentials", JWT_BEARER]
        document: dict[str, Any] = {
            "issuer": s.metadata_issuer or self.issuer,
            "authorization_endpoint": self.url("authorize"),
            "token_endpoint": self.url("token"),
            "response_types_supported": ["code"],
            "grant_types_supported": grants,
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": s.token_endpoint_auth_methods_supported,
            "authorization_response_iss_parameter_supported": s.iss_supported,
        }
        if s.registration:
            document["registration_endpoint"] = self.url("register")
        if s.cimd:
            document["client_id_metadata_document_supported"] = True
        if s.scopes_supported is not None:
            document["scopes_supported"] = s.scopes_supported
        if s.dpop:
            document["dpop_signing_alg_values_supported"] = ["ES256"]
        return document

    async def metadata(self, request: Request) -> Response:
        """GET metadata."""
        return JSONResponse(self.metadata_document())

    def client(self, client_id: str | None) -> Client | None:
        """The client known by that id; with CIMD on, any https client id with a path is a public client."""
        if client_id is None:
            return None
        if client_id in self.clients:
            return self.clients[client_id]
        parts = urlsplit(client_id)
        if self.scenario.cimd and parts.scheme == "https" and parts.path not in ("", "/"):
            return Client(client_id=client_id, method="none")
        return None

    async def register(self, request: Request) -> Response:
        """RFC 7591 §3: register a client, assigning a method the scenario allows."""
        try:
            asked = json.loads(await request.body())
        except ValueError:
            asked = None
        if (
            not isinstance(asked, dict)
            or not isinstance(asked.get("redirect_uris"), list)
            or not asked["redirect_uris"]
        ):
            return Rejected(400, "invalid_redirect_uri", "redirect_uris is required").response()
        supported = self.scenario.token_endpoint_auth_methods_supported
        method = asked.get("token_endpoint_auth_method", "client_secret_basic")
        if self.scenario.registration_auth_method is not None:
            method = self.scenario.registration_auth_method
        elif method not in supported:
            method = supported[0]
        client = Client(
            client_id=f"client-{secrets.token_hex(6)}",
            method=method,
            secret=None if method == "none" else secrets.token_urlsafe(24),
            redirect_uris=list(asked["redirect_uris"]),
        )
        self.clients[client.client_id] = client
        answer = {**asked, "client_id": client.client_id, "client_id_issued_at": int(time.time())}
        answer["token_endpoint_auth_method"] = method
        if client.secret is not None:
            answer["client_secret"] = client.secret
            answer["client_secret_expires_at"] = 0
        return JSONResponse(answer, status_code=201)

    async def authorize(self, request: Request) -> Response:
        """Auto-approve a valid authorization request: 302 to the redirect URI with code, state and iss."""
        s = self.scenario
        q = request.query_params
        client = self.client(q.get("client_id"))
        redirect_uri = q.get("redirect_uri")
        if client is None:
            return Rejected(400, "invalid_client", "unknown client_id").response()
        if redirect_uri is None or (client.redirect_uris and redirect_uri not in client.redirect_uris):
            return Rejected(400, "invalid_request", "redirect_uri is not registered").response()
        if q.get("response_type") != "code":
            return Rejected(400, "unsupported_response_type", "response_type must be code").response()
        if not q.get("code_challenge") or q.get("code_challenge_method") != "S256":
            return Rejected(400, "invalid_request", "PKCE S256 is required").response()
        if s.legacy is None and q.get("resource") != self.world.resource:
            return Rejected(400, "invalid_target", "resource must name the MCP server").response()
        code = secrets.token_urlsafe(24)
        self.codes[code] = {
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "code_challenge": q["code_challenge"],
            "resource": q.get("resource"),
            "scopes": q.get("scope", "").split(),
        }
        answer = {"code": code}
        if "state" in q:
            answer["state"] = q["state"]
        iss = {"correct": self.issuer, "wrong": "https://evil.example.com", "slash": self.issuer + "/"}.get(s.iss_mode)
        if iss is not None:
            answer["iss"] = iss
        separator = "&" if urlsplit(redirect_uri).query else "?"
        return Response(status_code=302, headers={"Location": redirect_uri + separator + urlencode(answer)})

    def authenticate(self, request: Request, form: dict[str, str]) -> Client:
        """Authenticate the client of a token request with exactly the method it registered."""
        header = request.headers.get("authorization", "")
        if header.lower().startswith("basic "):
            try:
                decoded = base64.b64decode(header[6:], validate=True).decode()
            except ValueError as exc:
                raise Rejected(401, "invalid_client", "malformed Basic credentials") from exc
            raw_id, _, raw_secret = decoded.partition(":")
            client_id, secret, used = unquote_plus(raw_id), unquote_plus(raw_secret), "client_secret_basic"
            if "client_secret" in form:
                raise Rejected(400, "invalid_request", "more than one client authentication method")
        elif "client_assertion" in form:
            client_id, secret, used = self.assertion_subject(form), None, "private_key_jwt"
        elif "client_secret" in form:
            client_id, secret, used = form.get("client_id", ""), form["client_secret"], "client_secret_post"
        else:
            client_id, secret, used = form.get("client_id", ""), None, "none"
        client = self.client(client_id)
        if client is None:
            raise Rejected(401, "invalid_client", "unknown client")
        if client.method != used:
            raise Rejected(401, "invalid_client", f"the client must authenticate with {client.method}")
        if used == "private_key_jwt":
            self.verify_client_assertion(client, form)
        elif client.secret is not None and not secrets.compare_digest(client.secret, secret or ""):
            raise Rejected(401, "invalid_client", "wrong client secret")
        return client

    def assertion_subject(self, form: dict[str, str]) -> str:
        """The unverified ``sub`` of a client assertion, to find the client's key."""
        if form.get("client_assertion_type") != ASSERTION_TYPE:
            raise Rejected(400, "invalid_request", "unsupported client_assertion_type")
        if "client_id" in form:
            raise Rejected(400, "invalid_request", "client_id must not accompany this client assertion")
        try:
            claims = jwt.decode(form["client_assertion"], options={"verify_signature": False})
        except jwt.PyJWTError as exc:
            raise Rejected(401, "invalid_client", "malformed client assertion") from exc
        return str(claims.get("sub", ""))

    def verify_client_assertion(self, client: Client, form: dict[str, str]) -> None:
        """RFC 7523 §3: signature, iss = sub = client id, aud = this issuer, exp at most 5 minutes out, fresh jti."""
        try:
            claims = jwt.decode(
                form["client_assertion"],
                client.public_key,
                algorithms=["ES256"],
                audience=[self.issuer, self.issuer + "/"],
                options={"require": ["iss", "sub", "aud", "exp", "iat", "jti"]},
            )
        except jwt.PyJWTError as exc:
            raise Rejected(401, "invalid_client", f"client assertion rejected: {exc}") from exc
        if claims["iss"] != client.client_id or claims["sub"] != client.client_id:
            raise Rejected(401, "invalid_client", "client assertion iss and sub must be the client id")
        if claims["exp"] - claims["iat"] > PROOF_WINDOW:
            raise Rejected(401, "invalid_client", "client assertion lives longer than 5 minutes")
        self.world.fresh_jti(claims["jti"])

    def dpop_binding(self, request: Request) -> str | None:
        """Check a DPoP proof on a token request (RFC 9449 §4.3, §8); return its key thumbprint, or None."""
        proofs = request.headers.getlist("dpop")
        if not proofs or not self.scenario.dpop:
            return None
        nonce = self.nonce if self.scenario.dpop_nonce_as else None
        try:
            return self.world.verify_proof(proofs, method="POST", url=self.url("token"), nonce=nonce)
        except NonceNeeded:
            raise Rejected(400, "use_dpop_nonce", "a nonce is required", {"DPoP-Nonce": self.nonce}) from None
        except ProofRejected as exc:
            raise Rejected(400, "invalid_dpop_proof", str(exc)) from exc

    async def token(self, request: Request) -> Response:
        """The token endpoint: every grant this server knows."""
        form = dict(parse_qsl((await request.body()).decode(), keep_blank_values=True))
        try:
            jkt = self.dpop_binding(request)
            client = self.authenticate(request, form)
            grant_type = form.get("grant_type")
            if grant_type == "authorization_code":
                grant = self.code_grant(client, form)
            elif grant_type == "refresh_token":
                grant = self.refresh_grant(client, form, jkt)
            elif grant_type == "client_credentials":
                grant = self.client_credentials_grant(client, form)
            elif grant_type == JWT_BEARER:
                grant = self.jwt_bearer_grant(client, form)
            else:
                raise Rejected(400, "unsupported_grant_type", f"grant_type {grant_type!r} is not supported")
        except Rejected as rejected:
            if self.scenario.echo_secrets:
                rejected.description += _echo(form, request.headers.get("authorization", ""))
            return rejected.response()
        grant.jkt = jkt if grant_type != "refresh_token" else grant.jkt
        return JSONResponse(self.issue(grant, refresh=grant_type in ("authorization_code", "refresh_token")))

    def issue(self, grant: Grant, *, refresh: bool) -> dict[str, Any]:
        """Issue an access token (and a refresh token when the scenario says so)."""
        token = f"at-{secrets.token_urlsafe(24)}{self.scenario.token_suffix}"
        grant.expires_at = time.time() + self.scenario.expires_in
        self.world.access_tokens[token] = grant
        answer: dict[str, Any] = {
            "access_token": token,
            "token_type": "DPoP" if grant.jkt else "Bearer",
            "expires_in": self.scenario.expires_in,
        }
        if grant.scopes:
            answer["scope"] = " ".join(grant.scopes)
        if refresh and self.scenario.refresh_tokens:
            refresh_token = f"rt-{secrets.token_urlsafe(24)}"
            self.refresh_tokens[refresh_token] = dataclasses.replace(grant, expires_at=None)
            answer["refresh_token"] = refresh_token
        return answer

    def code_grant(self, client: Client, form: dict[str, str]) -> Grant:
        """RFC 6749 §4.1.3 with PKCE (RFC 7636 §4.6) and the resource (RFC 8707 §2.2)."""
        code = self.codes.pop(form.get("code", ""), None)
        if code is None or code["client_id"] != client.client_id:
            raise Rejected(400, "invalid_grant", "unknown, used or foreign authorization code")
        if form.get("redirect_uri") != code["redirect_uri"]:
            raise Rejected(400, "invalid_grant", "redirect_uri differs from the authorization request")
        verifier = form.get("code_verifier", "")
        if b64url(hashlib.sha256(verifier.encode()).digest()) != code["code_challenge"]:
            raise Rejected(400, "invalid_grant", "code_verifier does not match the code challenge")
        if form.get("resource") != code["resource"]:
            raise Rejected(400, "invalid_target", "resource differs from the authorization request")
        return Grant(issuer=self.issuer, client_id=client.client_id, scopes=code["scopes"], resource=code["resource"])

    def refresh_grant(self, client: Client, form: dict[str, str], jkt: str | None) -> Grant:
        """RFC 6749 §6, with rotation; a DPoP-bound refresh token needs a proof of the same key (RFC 9449 §5)."""
        old = form.get("refresh_token", "")
        grant = self.refresh_tokens.get(old)
        if grant is None or grant.client_id != client.client_id:
            raise Rejected(400, "invalid_grant", "unknown or retired refresh token")
        if form.get("resource", grant.resource) != grant.resource:
            raise Rejected(400, "invalid_target", "resource differs from the original grant")
        if grant.jkt is not None and grant.jkt != jkt:
            raise Rejected(400, "invalid_dpop_proof", "the refresh token is bound to another key")
        if "scope" in form:
            raise Rejected(400, "invalid_scope", "this server expects no scope on refresh")
        if self.scenario.rotate_refresh_tokens:
            del self.refresh_tokens[old]
        return dataclasses.replace(grant)

    def client_credentials_grant(self, client: Client, form: dict[str, str]) -> Grant:
        """OAuth 2.1 §4.2 for the one configured client-credentials client."""
        configured = self.scenario.client_credentials or {}
        if client.client_id != configured.get("client_id"):
            raise Rejected(400, "unauthorized_client", "this client may not use client_credentials")
        if form.get("resource") != self.world.resource:
            raise Rejected(400, "invalid_target", "resource must name the MCP server")
        scopes = form.get("scope", "").split()
        return Grant(issuer=self.issuer, client_id=client.client_id, scopes=scopes, resource=form["resource"])

    def jwt_bearer_grant(self, client: Client, form: dict[str, str]) -> Grant:
        """RFC 7523 §2.1: a workload assertion or an ID-JAG from this server's IdP (SEP-990)."""
        assertion = form.get("assertion", "")
        try:
            header = jwt.get_unverified_header(assertion)
        except jwt.PyJWTError as exc:
            raise Rejected(400, "invalid_grant", "malformed assertion") from exc
        if header.get("typ") == "oauth-id-jag+jwt":
            claims = self.world.verify_id_jag(assertion, audience=self.issuer)
            if claims.get("client_id") != client.client_id:
                raise Rejected(400, "invalid_grant", "the ID-JAG was issued to another client")
            resource = claims.get("resource")
            scopes = str(claims.get("scope", "")).split()
        else:
            workload = self.scenario.jwt_bearer or {}
            if client.client_id != workload.get("client_id"):
                raise Rejected(400, "unauthorized_client", "this client may not present assertions")
            try:
                jwt.decode(
                    assertion,
                    load_public_key(workload["public_key_pem"]),
                    algorithms=["ES256"],
                    audience=self.issuer,
                    issuer=workload["issuer"],
                    options={"require": ["iss", "sub", "aud", "exp"]},
                )
            except jwt.PyJWTError as exc:
                raise Rejected(400, "invalid_grant", f"assertion rejected: {exc}") from exc
            resource = form.get("resource")
            scopes = form.get("scope", "").split()
        if resource != self.world.resource:
            raise Rejected(400, "invalid_target", "resource must name the MCP server")
        return Grant(issuer=self.issuer, client_id=client.client_id, scopes=scopes, resource=resource)


class NonceNeeded(Exception):
    """A DPoP proof lacks the server's current nonce."""


class ProofRejected(Exception):
    """A DPoP proof fails a check of RFC 9449 §4.3."""


class World:
    """Everything one server process holds: the scenario, both authorization servers, the IdP and the log."""

    def __init__(self, scenario: Scenario, base: str) -> None:
        self.scenario = scenario
        self.base = base
        self.log: list[dict[str, Any]] = []
        self.access_tokens: dict[str, Grant] = {}
        self.seen_jtis: set[str] = set()
        self.authorized_requests = 0
        self.forbidden_requests = 0
        self.migrated = False
        self.resource_nonce = secrets.token_urlsafe(12)
        self.idp_key = ec.generate_private_key(ec.SECP256R1())
        s = scenario
        if s.prm_resource is None:
            self.resource = f"{base}/mcp"
        else:
            self.resource = base if s.prm_resource == "origin" else s.prm_resource
        self.main = self.build_main()
        self.second = AuthorizationServer(
            self, issuer=f"{base}/as2", prefix="/as2", metadata_paths=["/.well-known/oauth-authorization-server/as2"]
        )
        self.add_clients()
        self.table = self.routes()

    def build_main(self) -> AuthorizationServer:
        """The main authorization server, wherever the scenario puts it."""
        s = self.scenario
        if s.legacy == "metadata":
            paths = ["/.well-known/oauth-authorization-server"]
            return AuthorizationServer(self, issuer=self.base, prefix="/oauth", metadata_paths=paths)
        if s.legacy == "defaults":
            return AuthorizationServer(self, issuer=self.base, prefix="", metadata_paths=[])
        path = s.issuer_path
        variants = {
            "oauth": f"/.well-known/oauth-authorization-server{path}",
            "oidc": f"/.well-known/openid-configuration{path}",
            "oidc-suffix": f"{path}/.well-known/openid-configuration",
        }
        paths = [variants[name] for name in s.metadata_at]
        return AuthorizationServer(self, issuer=self.base + path, prefix=path, metadata_paths=paths)

    def add_clients(self) -> None:
        """Register the clients the scenario configures with the main server."""
        s = self.scenario
        clients = self.main.clients
        if s.pre_registered is not None:
            p = s.pre_registered
            method = p.get("method", "client_secret_basic" if p.get("client_secret") else "none")
            clients[p["client_id"]] = Client(client_id=p["client_id"], method=method, secret=p.get("client_secret"))
        if s.client_credentials is not None:
            c = s.client_credentials
            if "public_key_pem" in c:
                key = load_public_key(c["public_key_pem"])
                clients[c["client_id"]] = Client(client_id=c["client_id"], method="private_key_jwt", public_key=key)
            else:
                clients[c["client_id"]] = Client(
                    client_id=c["client_id"], method="client_secret_basic", secret=c["client_secret"]
                )
        if s.jwt_bearer is not None:
            clients[s.jwt_bearer["client_id"]] = Client(client_id=s.jwt_bearer["client_id"], method="none")

    @property
    def current(self) -> AuthorizationServer:
        """The server the PRM lists now."""
        return self.second if self.migrated else self.main

    @property
    def prm_url(self) -> str | None:
        """Where the PRM is served, or None."""
        where = {
            "path": "/.well-known/oauth-protected-resource/mcp",
            "root": "/.well-known/oauth-protected-resource",
            "custom": "/custom/metadata/location.json",
        }.get(self.scenario.prm_at)
        return None if where is None or self.scenario.legacy else self.base + where

    def fresh_jti(self, jti: object) -> None:
        """Refuse a ``jti`` seen before (RFC 7523 §3, RFC 9449 §11.1)."""
        if not isinstance(jti, str) or jti in self.seen_jtis:
            raise Rejected(401, "invalid_client", "jti missing or replayed")
        self.seen_jtis.add(jti)

    def verify_proof(
        self, proofs: list[str], *, method: str, url: str, nonce: str | None, access_token: str | None = None
    ) -> str:
        """RFC 9449 §4.3 checks of a DPoP proof; return the RFC 7638 thumbprint of its key."""
        if len(proofs) != 1:
            raise ProofRejected("exactly one DPoP header is required")
        proof = proofs[0]
        try:
            header = jwt.get_unverified_header(proof)
        except jwt.PyJWTError as exc:
            raise ProofRejected("the DPoP header is not a JWT") from exc
        jwk = header.get("jwk")
        if header.get("typ") != "dpop+jwt" or header.get("alg") != "ES256":
            raise ProofRejected("typ must be dpop+jwt and alg ES256")
        if not isinstance(jwk, dict) or "d" in jwk or jwk.get("kty") != "EC" or jwk.get("crv") != "P-256":
            raise ProofRejected("jwk must be a public P-256 key")
        try:
            claims = jwt.decode(
                proof,
                jwt.PyJWK(jwk, algorithm="ES256").key,
                algorithms=["ES256"],
                options={"require": ["jti", "htm", "htu", "iat"], "verify_iat": False},
            )
        except jwt.PyJWTError as exc:
            raise ProofRejected(f"bad proof: {exc}") from exc
        if claims["htm"] != method or claims["htu"] != url:
            raise ProofRejected("htm or htu does not match the request")
        if abs(time.time() - claims["iat"]) > PROOF_WINDOW:
            raise ProofRejected("iat is outside the acceptance window")
        if claims["jti"] in self.seen_jtis:
            raise ProofRejected("jti replayed")
        if access_token is not None and claims.get("ath") != b64url(hashlib.sha256(access_token.encode()).digest()):
            raise ProofRejected("ath does not match the access token")
        if nonce is not None and claims.get("nonce") != nonce:
            raise NonceNeeded
        self.seen_jtis.add(claims["jti"])
        return jwk_thumbprint(jwk)

    def verify_id_jag(self, assertion: str, *, audience: str) -> dict[str, Any]:
        """Verify an ID-JAG this world's IdP signed for ``audience``."""
        try:
            claims: dict[str, Any] = jwt.decode(
                assertion,
                self.idp_key.public_key(),
                algorithms=["ES256"],
                audience=audience,
                issuer=f"{self.base}/idp",
                options={"require": ["iss", "sub", "aud", "exp", "iat", "jti", "client_id"]},
            )
        except jwt.PyJWTError as exc:
            raise Rejected(400, "invalid_grant", f"ID-JAG rejected: {exc}") from exc
        return claims

    # ---- the routes of this world

    def routes(self) -> dict[tuple[str, str], Handler]:
        """Every route, keyed by (method, path)."""
        table: dict[tuple[str, str], Handler] = {
            ("POST", "/mcp"): self.mcp,
            ("GET", "/mcp"): self.mcp,
            ("DELETE", "/mcp"): self.mcp,
        }
        prm = self.prm_url
        if prm is not None:
            table[("GET", urlsplit(prm).path)] = self.protected_resource_metadata
        table.update(self.main.routes())
        if self.scenario.migrate_after is not None:
            table.update(self.second.routes())
        if self.scenario.idp is not None:
            table[("POST", "/idp/token")] = self.idp_token
        return table

    async def protected_resource_metadata(self, request: Request) -> Response:
        """RFC 9728 §3.2."""
        s = self.scenario
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": [self.current.issuer],
            "bearer_methods_supported": ["header"],
        }
        if s.prm_scopes_supported is not None:
            document["scopes_supported"] = s.prm_scopes_supported
        if s.dpop:
            document["dpop_signing_alg_values_supported"] = ["ES256"]
            document["dpop_bound_access_tokens_required"] = s.dpop_required
        return JSONResponse(document)

    def challenge(
        self, status: int, *, error: str | None = None, scope: str | None = None, extra: dict[str, str] | None = None
    ) -> Response:
        """A 401/403 with Bearer (and DPoP) challenges naming the PRM (RFC 6750 §3, RFC 9728 §5.1, RFC 9449 §7.1)."""
        params: list[str] = []
        if self.prm_url is not None and self.scenario.prm_in_challenge:
            params.append(f'resource_metadata="{self.prm_url}"')
        if scope:
            params.append(f'scope="{scope}"')
        if error:
            params.append(f'error="{error}"')
        headers = [("www-authenticate", "Bearer " + ", ".join(params) if params else "Bearer")]
        if self.scenario.dpop:
            headers.append(("www-authenticate", 'DPoP algs="ES256"' + "".join(f", {p}" for p in params)))
        response = JSONResponse(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "Unauthorized"}}, status_code=status
        )
        for name, value in [*headers, *(extra or {}).items()]:
            response.headers.append(name, value)
        return response

    def authorized_grant(self, request: Request) -> Grant | Response:
        """The grant of the presented token, or the 401 to answer (RFC 6750 §3.1, RFC 9449 §7)."""
        s = self.scenario
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if not token:
            return self.challenge(401, scope=s.challenge_scope)
        grant = self.access_tokens.get(token)
        expired = grant is not None and grant.expires_at is not None and time.time() >= grant.expires_at
        old_issuer = grant is not None and grant.issuer != self.current.issuer
        if grant is None or expired or old_issuer or grant.resource not in (self.resource, None):
            return self.challenge(401, error="invalid_token", scope=s.challenge_scope)
        if grant.jkt is None and (scheme.lower() != "bearer" or s.dpop_required):
            return self.challenge(401, error="invalid_token", scope=s.challenge_scope)
        if grant.jkt is not None:
            if scheme.lower() != "dpop":
                return self.challenge(401, error="invalid_token", scope=s.challenge_scope)
            nonce = self.resource_nonce if s.dpop_nonce_resource else None
            try:
                jkt = self.verify_proof(
                    request.headers.getlist("dpop"),
                    method=request.method,
                    url=f"{self.base}/mcp",
                    nonce=nonce,
                    access_token=token,
                )
            except NonceNeeded:
                response = JSONResponse({"error": "use_dpop_nonce"}, status_code=401)
                response.headers.append("www-authenticate", 'DPoP error="use_dpop_nonce", algs="ES256"')
                response.headers.append("dpop-nonce", self.resource_nonce)
                return response
            except ProofRejected:
                return self.challenge(401, error="invalid_dpop_proof")
            if jkt != grant.jkt:
                return self.challenge(401, error="invalid_token")
        return grant

    async def mcp(self, request: Request) -> Response:
        """The protected MCP endpoint."""
        s = self.scenario
        grant = self.authorized_grant(request)
        if isinstance(grant, Response):
            return grant
        if s.forbid_scope is not None:
            self.forbidden_requests += 1
            if self.forbidden_requests > s.forbid_limit:
                return JSONResponse({"error": "gone"}, status_code=410)
            return self.challenge(403, error="insufficient_scope", scope=s.forbid_scope)
        if request.method == "DELETE" and s.sessions:
            return Response(status_code=204)
        if request.method != "POST":
            return Response(status_code=405, headers={"Allow": "POST"})
        try:
            message = json.loads(await request.body())
        except ValueError:
            return JSONResponse(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}, status_code=400
            )
        if not isinstance(message, dict):
            return JSONResponse(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid"}}, status_code=400
            )
        method = message.get("method")
        if method == "tools/call" and s.step_up_scope is not None and s.step_up_scope not in grant.scopes:
            return self.challenge(403, error="insufficient_scope", scope=s.step_up_scope)
        self.authorized_requests += 1
        if s.migrate_after is not None and self.authorized_requests >= s.migrate_after:
            self.migrated = True
        if "id" not in message:
            return Response(status_code=202)
        answer = JSONResponse({"jsonrpc": "2.0", "id": message["id"], **self.answer(method, message.get("params"))})
        if method == "initialize" and s.sessions:
            answer.headers["Mcp-Session-Id"] = "session-1"
        return answer

    def answer(self, method: object, params: object) -> dict[str, Any]:
        """The JSON-RPC result (or error) of one request."""
        tool = {
            "name": "test-tool",
            "description": "A tool for authorization tests.",
            "inputSchema": {"type": "object", "properties": {}},
        }
        if method == "server/discover":
            return {
                "result": {
                    "resultType": "complete",
                    "supportedVersions": [MODERN_VERSION],
                    "capabilities": {"tools": {}},
                }
            }
        if method == "initialize":
            asked = params.get("protocolVersion") if isinstance(params, dict) else None
            version = asked if asked in LEGACY_VERSIONS else LEGACY_VERSIONS[0]
            return {
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "authserver", "version": "0"},
                }
            }
        if method == "tools/list":
            return {"result": {"resultType": "complete", "tools": [tool]}}
        if method == "tools/call":
            name = params.get("name") if isinstance(params, dict) else None
            if name != "test-tool":
                return {"error": {"code": -32602, "message": f"Unknown tool: {name}"}}
            return {
                "result": {
                    "resultType": "complete",
                    "content": [{"type": "text", "text": "test-tool called"}],
                    "isError": False,
                }
            }
        return {"error": {"code": -32601, "message": f"Method not found: {method}"}}

    async def idp_token(self, request: Request) -> Response:
        """RFC 8693 token exchange at the IdP: an ID token for an ID-JAG (SEP-990)."""
        idp = self.scenario.idp or {}
        form = dict(parse_qsl((await request.body()).decode(), keep_blank_values=True))
        checks = [
            (form.get("grant_type") == TOKEN_EXCHANGE, "unsupported_grant_type", "token exchange only"),
            (form.get("client_id") == idp.get("client_id"), "invalid_client", "unknown IdP client"),
            (form.get("requested_token_type") == ID_JAG, "invalid_request", "only ID-JAGs are issued"),
            (form.get("subject_token_type") == ID_TOKEN, "invalid_request", "the subject is an ID token"),
            (form.get("subject_token") == idp.get("id_token"), "invalid_grant", "unknown ID token"),
            (form.get("audience") == self.main.issuer, "invalid_target", "unknown audience"),
        ]
        for ok, error, description in checks:
            if not ok:
                echoed = _echo(form, "") if self.scenario.echo_secrets else ""
                return Rejected(400, error, description + echoed).response()
        now = int(time.time())
        claims = {
            "iss": f"{self.base}/idp",
            "sub": "user-1",
            "aud": form["audience"],
            "client_id": (self.scenario.pre_registered or {}).get("client_id"),
            "jti": secrets.token_urlsafe(12),
            "iat": now,
            "exp": now + 300,
            "scope": form.get("scope", ""),
        }
        if "resource" in form:
            claims["resource"] = form["resource"]
        jag = jwt.encode(claims, self.idp_key, algorithm="ES256", headers={"typ": "oauth-id-jag+jwt"})
        return JSONResponse(
            {
                "issued_token_type": ID_JAG,
                "access_token": jag,
                "token_type": "N_A",
                "expires_in": 300,
                "scope": claims["scope"],
            }
        )

    async def read_log(self, request: Request) -> Response:
        """GET /_log: every request so far."""
        return JSONResponse(self.log)

    async def clear_log(self, request: Request) -> Response:
        """POST /_log/clear."""
        self.log.clear()
        return Response(status_code=204)

    async def dispatch(self, request: Request) -> Response:
        """Record the request, route it, record the answer's status."""
        path = request.url.path
        if path == "/_log" and request.method == "GET":
            return await self.read_log(request)
        if path == "/_log/clear" and request.method == "POST":
            return await self.clear_log(request)
        if path == "/_revoke" and request.method == "POST":
            # Every access token dies (with {"refresh_tokens": true} every refresh token too; clients stay).
            self.access_tokens.clear()
            try:
                asked = json.loads(await request.body() or b"{}")
            except ValueError:
                asked = {}
            if isinstance(asked, dict) and asked.get("refresh_tokens") is True:
                self.main.refresh_tokens.clear()
                self.second.refresh_tokens.clear()
            return Response(status_code=204)
        body = await request.body()
        headers: dict[str, str] = {}
        for name, value in request.headers.items():
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        entry: dict[str, Any] = {
            "method": request.method,
            "path": path,
            "query": {k: v[0] if len(v) == 1 else v for k, v in parse_qs(request.url.query).items()},
            "headers": headers,
            "body": body.decode(errors="replace"),
            "form": None,
            "json": None,
        }
        content_type = headers.get("content-type", "")
        if content_type.startswith("application/x-www-form-urlencoded"):
            entry["form"] = dict(parse_qsl(entry["body"], keep_blank_values=True))
        elif content_type.startswith("application/json"):
            try:
                entry["json"] = json.loads(body)
            except ValueError:
                entry["json"] = None
        self.log.append(entry)
        handler = self.table.get((request.method, path))
        if handler is None:
            response: Response = JSONResponse({"error": "not_found"}, status_code=404)
        else:
            response = await handler(request)
        entry["status"] = response.status_code
        return response


class Site:
    """The served origin: the current :class:`World`, replaced by ``POST /_config``."""

    def __init__(self, scenario: Scenario, base: str) -> None:
        self.base = base
        self.world = World(scenario, base)

    async def dispatch(self, request: Request) -> Response:
        """Reconfigure on ``POST /_config``; hand everything else to the current world."""
        if request.url.path == "/_config" and request.method == "POST":
            try:
                scenario = Scenario.from_json((await request.body()).decode())
            except (ValueError, TypeError) as exc:
                return JSONResponse({"error": "invalid_config", "error_description": str(exc)}, status_code=400)
            self.world = World(scenario, self.base)
            return Response(status_code=204)
        return await self.world.dispatch(request)


def build_app(scenario: Scenario, base: str) -> Starlette:
    """Build the Starlette application of one scenario served at ``base``."""
    site = Site(scenario, base)
    methods = ["GET", "POST", "DELETE", "PUT", "PATCH"]
    return Starlette(routes=[Route("/{path:path}", site.dispatch, methods=methods)])


class ReadyServer(uvicorn.Server):
    """A uvicorn server that prints ``READY <base>`` once it accepts connections."""

    def __init__(self, config: uvicorn.Config, base: str) -> None:
        super().__init__(config)
        self.base = base

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start listening, then announce readiness on stdout."""
        await super().startup(sockets=sockets)
        if self.started and not self.should_exit:
            print(f"READY {self.base}", flush=True)


def main(argv: list[str] | None = None) -> None:
    """Parse ``--config JSON``, bind 127.0.0.1:0 and serve until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--config", default="{}", help="a JSON object of Scenario fields")
    parser.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    scenario = Scenario.from_json(args.config)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(build_app(scenario, base), log_level="warning", lifespan="off", access_log=False)
    asyncio.run(ReadyServer(config, base).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
