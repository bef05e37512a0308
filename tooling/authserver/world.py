"""One test server process's world: the scenario, both authorization servers, the IdP, the MCP resource, the log."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .issuer import AuthorizationServer
from .scenario import (
    ID_JAG,
    ID_TOKEN,
    LEGACY_VERSIONS,
    MODERN_VERSION,
    PROOF_WINDOW,
    TOKEN_EXCHANGE,
    Client,
    Grant,
    Handler,
    NonceNeeded,
    ProofRejected,
    Rejected,
    Scenario,
    _echo,
    b64url,
    jwk_thumbprint,
    load_public_key,
)

__all__ = ["World"]


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
        for c in s.credentials_clients:
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
        answered = self.answer(method, message.get("params"))
        if s.echo_credentials and method == "tools/call" and "result" in answered:
            quoted = {name: request.headers.get(name, "") for name in ("authorization", "dpop")}
            answered["result"]["content"].append({"type": "text", "text": f"called with {json.dumps(quoted)}"})
        answer = JSONResponse({"jsonrpc": "2.0", "id": message["id"], **answered})
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

    async def read_stats(self, request: Request) -> Response:
        """GET /_stats: token requests by grant type, refresh token reuses, grants revoked for a reuse."""
        servers = (self.main, self.second)
        requests: dict[str, int] = {}
        for server in servers:
            for grant_type, count in server.token_requests.items():
                requests[grant_type] = requests.get(grant_type, 0) + count
        return JSONResponse(
            {
                "token_requests": requests,
                "refresh_reuses": sum(server.refresh_reuses for server in servers),
                "revoked_grants": sum(server.revoked_grants for server in servers),
            }
        )

    async def token_outage(self, request: Request) -> Response:
        """POST /_token_outage ``{"count": N, "status": 503}``: the next N token requests get that status."""
        try:
            asked = json.loads(await request.body() or b"{}")
        except ValueError:
            asked = None
        count = asked.get("count") if isinstance(asked, dict) else None
        status = asked.get("status", 503) if isinstance(asked, dict) else None
        if not isinstance(count, int) or not isinstance(status, int) or count < 0 or not 400 <= status <= 599:
            body = {"error": "invalid_request", "error_description": "a count >= 0 and an error status"}
            return JSONResponse(body, status_code=400)
        for server in (self.main, self.second):
            server.outage_left, server.outage_status = count, status
        return Response(status_code=204)

    async def dispatch(self, request: Request) -> Response:
        """Record the request, route it, record the answer's status."""
        path = request.url.path
        if path == "/_stats" and request.method == "GET":
            return await self.read_stats(request)
        if path == "/_token_outage" and request.method == "POST":
            return await self.token_outage(request)
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
        if path == "/mcp":
            # Whom the request acted for: the client its token was granted to (None without a valid token).
            granted = self.access_tokens.get(headers.get("authorization", "").partition(" ")[2])
            entry["client_id"] = granted.client_id if granted is not None else None
        return response
