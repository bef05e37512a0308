"""One authorization server of the test site: metadata, clients, codes, and the grants it issues."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import json
import secrets
import time
from collections import Counter
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote_plus, urlencode, urlsplit

import jwt
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .scenario import (
    ASSERTION_TYPE,
    JWT_BEARER,
    PROOF_WINDOW,
    Client,
    Grant,
    Handler,
    NonceNeeded,
    ProofRejected,
    Rejected,
    Scenario,
    _echo,
    b64url,
    load_public_key,
)

__all__ = ["AuthorizationServer", "Holder"]


class Holder(Protocol):
    """What an authorization server asks of the world that holds it (``world.World``)."""

    @property
    def scenario(self) -> Scenario:
        """The scenario served."""

    @property
    def base(self) -> str:
        """The served origin."""

    @property
    def resource(self) -> str:
        """The protected resource's identifier."""

    @property
    def access_tokens(self) -> dict[str, Grant]:
        """Every live access token, of either authorization server."""

    def fresh_jti(self, jti: object) -> None:
        """Refuse a ``jti`` seen before."""

    def verify_proof(
        self, proofs: list[str], *, method: str, url: str, nonce: str | None, access_token: str | None = None
    ) -> str:
        """Check a DPoP proof; return its key's thumbprint."""

    def verify_id_jag(self, assertion: str, *, audience: str) -> dict[str, Any]:
        """Verify an ID-JAG the world's IdP signed for ``audience``."""


class AuthorizationServer:
    """One authorization server: metadata, clients, codes and the grants it issues."""

    def __init__(self, world: Holder, *, issuer: str, prefix: str, metadata_paths: list[str]) -> None:
        self.world = world
        self.scenario = world.scenario
        self.issuer = issuer
        self.prefix = prefix
        self.metadata_paths = metadata_paths
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.refresh_tokens: dict[str, Grant] = {}
        self.spent_refresh_tokens: dict[str, str] = {}
        """Every refresh token a rotation retired, and the grant family it belonged to."""
        self.nonce = secrets.token_urlsafe(12)
        self.token_requests: Counter[str] = Counter()
        """Token requests received, by ``grant_type`` (those an outage answered included)."""
        self.refresh_reuses = 0
        """Retired refresh tokens presented again."""
        self.revoked_grants = 0
        """Grant families revoked because a retired refresh token came back (``revoke_on_reuse``)."""
        self.outage_status = 503
        self.outage_left = 0
        """The next this many token requests are answered ``outage_status`` (``POST /_token_outage``)."""

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
        self.token_requests[form.get("grant_type", "")] += 1
        if form.get("grant_type") == "refresh_token" and self.scenario.refresh_delay > 0:
            await asyncio.sleep(self.scenario.refresh_delay)
        if self.outage_left > 0:
            self.outage_left -= 1
            body = {"error": "temporarily_unavailable", "error_description": "the token service is down"}
            return JSONResponse(body, status_code=self.outage_status)
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
        family = self.spent_refresh_tokens.get(old) if grant is None else None
        if family is not None:
            # RFC 6749 §10.4, RFC 9700 §4.14.2: a rotated-away refresh token came back, so either the client
            # or an attacker holds a stolen one; the server cannot tell which and revokes the whole grant.
            self.refresh_reuses += 1
            if self.scenario.revoke_on_reuse:
                self.revoke_family(family)
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
            self.spent_refresh_tokens[old] = grant.family
        return dataclasses.replace(grant)

    def revoke_family(self, family: str) -> None:
        """Revoke every access and refresh token of one grant family."""
        self.revoked_grants += 1
        for tokens in (self.refresh_tokens, self.world.access_tokens):
            for token in [token for token, grant in tokens.items() if grant.family == family]:
                del tokens[token]

    def client_credentials_grant(self, client: Client, form: dict[str, str]) -> Grant:
        """OAuth 2.1 §4.2 for the configured client-credentials clients."""
        if client.client_id not in {configured.get("client_id") for configured in self.scenario.credentials_clients}:
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
