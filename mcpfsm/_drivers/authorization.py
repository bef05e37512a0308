"""The trio driver of one authorization flow (the machine in ``mcpfsm._machines.authorization``).

For the current state the driver (:func:`~mcpfsm._drivers.driver.drive`, the loop every machine shares)
performs one effect, the effect reports one fact as a trigger, the compiled table gives the next state, and
one :class:`~mcpfsm._core.events.AuthEvent` is published. What the
effects compute comes from the pure core (``mcpfsm._core.oauth``: parsing, validation, request building,
signing); what they send goes through :class:`AuthorizationPort`, a narrow port the client implements with
its own HTTP client for metadata, registration and token endpoints (never the MCP endpoint's connections,
never following redirects, never carrying the MCP token: MCP "Authorization", "Token Theft").

The flow reads and updates one :class:`Binding` per client: the tokens held, the authorization server and
client they are bound to, the DPoP key and nonces. The session layer (``mcpfsm._client.authorization``)
decides when a flow runs and resends the request after it; one flow runs at a time per client (single flight:
specs/authorization.md).

Nothing secret reaches an event, a log line or an error message: tokens, codes, verifiers, secrets and
assertions stay in the values that hold them, whose reprs hide them.
"""

from __future__ import annotations

import itertools
import json
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Protocol

import trio

from .._core import oauth
from .._core.credentials import (
    ClientCredentials,
    Credential,
    EnterpriseManaged,
    JwtBearer,
    OAuth,
    TokenStore,
    binding_key,
    registration_key,
    tokens_key,
)
from .._core.errors import AuthorizationError, McpError
from .._core.events import AuthEvent, error_summary, utc_timestamp
from .._core.oauth import Answer
from .._machines.authorization import COMPILED, State, Trigger
from .audit import AuditBus
from .driver import Effect, cancellation_summary, drive, plain

__all__ = ["AuthorizationFlow", "AuthorizationPort", "Binding", "Entry", "Identity"]

_FLOW_PREFIX = secrets.token_hex(4)
_FLOW_COUNTER = itertools.count(1)
_JSON_HEADERS: Final = (("Accept", "application/json"), ("Content-Type", "application/json"))


class AuthorizationPort(Protocol):
    """What the driver needs from the client: HTTP to the authorization side, the user agent, a clock, the bus."""

    @property
    def audit(self) -> AuditBus:
        """Where the flow's events go."""
        ...

    async def fetch(
        self, method: str, url: str, headers: Sequence[tuple[str, str]], body: bytes | None = None
    ) -> Answer:
        """Send one request to a metadata, registration or token endpoint; redirects are not followed.

        Raises:
            TransportError: the request failed (network, timeout).
        """
        ...

    async def authorize(self, url: str) -> str:
        """Send the user agent to the authorization URL and return the URL it was redirected to."""
        ...

    def now(self) -> float:
        """Wall-clock seconds since the epoch (``expires_at``, proof and assertion times)."""
        ...


class Entry(StrEnum):
    """Why a flow runs (the session layer's reason; ``starting`` turns it into a trigger)."""

    unauthorized = "unauthorized"
    """HTTP 401 from the MCP endpoint."""
    forbidden = "forbidden"
    """HTTP 403 with a Bearer challenge ``error="insufficient_scope"``."""
    expiring = "expiring"
    """The held access token expires within the refresh margin, and a refresh token is held."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    """How the client identifies itself to one issuer; ``authentication()`` builds each token request's part.

    Attributes:
        issuer: the issuer it belongs to (never presented to another, SEP-2352).
        client_id: the client id.
        method: the token endpoint authentication method.
        client_secret: the secret for ``client_secret_basic`` and ``client_secret_post``.
        private_key_pem: the key that signs a fresh ``private_key_jwt`` assertion per request.
        signing_algorithm: the assertion's JWS algorithm.
    """

    issuer: str
    client_id: str
    method: oauth.TokenEndpointAuthMethod
    client_secret: str | None = field(default=None, repr=False)
    private_key_pem: str | bytes | None = field(default=None, repr=False)
    signing_algorithm: str = "ES256"

    def authentication(self, *, now: float) -> oauth.ClientAuthentication:
        """The client authentication of one token request (a fresh assertion for ``private_key_jwt``)."""
        assertion = None
        if self.method == "private_key_jwt":
            assert self.private_key_pem is not None
            assertion = oauth.client_assertion(
                client_id=self.client_id,
                audience=self.issuer,
                private_key_pem=self.private_key_pem,
                now=now,
                jti=oauth.new_jti(),
                algorithm=self.signing_algorithm,
            )
        return oauth.ClientAuthentication(
            client_id=self.client_id, method=self.method, client_secret=self.client_secret, client_assertion=assertion
        )


class Binding:
    """What one client holds between flows: tokens and what they are bound to (one per client).

    Attributes:
        credential: the client's credentials.
        mcp_url: the MCP endpoint the tokens are for.
        pinned_modern: the client is pinned to ``2026-07-28``, which forbids the 2025-03-26 path (MCP 2026-07-28
            "Authorization": clients MUST use Protected Resource Metadata, RFC 9728).
        store: where registrations and tokens are kept.
        tokens: the tokens held, or ``None``.
        generation: increases with every new token; a request that used an older one just resends (single
            flight: specs/authorization.md).
        metadata: the bound authorization server's metadata, once discovered.
        resource_metadata: the protected resource metadata, once discovered (``None`` on the 2025-03-26 path).
        resource: the ``resource`` parameter, verbatim (RFC 8707).
        identity: the client's identity at the bound issuer.
        requested: the scopes requested for the held token (the base of a step-up union, SEP-2350).
        stepped_up: (issuer, scope set) pairs whose step-up still drew a 403 (specs/authorization.md,
            "A scope that never suffices").
        dpop_key: the client's DPoP key (RFC 9449), or ``None``.
        issuer_nonces: the last ``DPoP-Nonce`` of each authorization server (RFC 9449 §8).
        resource_nonce: the last ``DPoP-Nonce`` of the MCP server (RFC 9449 §9).
        on_change: called after every new token (a new authorization context empties the response cache).
    """

    def __init__(self, credential: Credential, *, mcp_url: str, pinned_modern: bool, store: TokenStore) -> None:
        """Start with no tokens; ``dpop`` credentials get a fresh key."""
        self.credential = credential
        self.mcp_url = mcp_url
        self.pinned_modern = pinned_modern
        self.store = store
        self.tokens: oauth.TokenSet | None = None
        self.generation = 0
        self.metadata: oauth.AuthorizationServerMetadata | None = None
        self.resource_metadata: oauth.ProtectedResourceMetadata | None = None
        self.resource: str | None = None
        self.identity: Identity | None = None
        self.requested: tuple[str, ...] = ()
        self.stepped_up: set[tuple[str, frozenset[str]]] = set()
        dpop = isinstance(credential, OAuth) and credential.dpop
        self.dpop_key: oauth.DPoPKey | None = oauth.DPoPKey.generate() if dpop else None
        self.issuer_nonces: dict[str, str] = {}
        self.resource_nonce: str | None = None
        self.on_change: list[Callable[[], object]] = []

    @property
    def interactive(self) -> bool:
        """True for the authorization code grant (a user agent, PKCE, refresh tokens)."""
        return isinstance(self.credential, OAuth)

    async def drop_tokens(self) -> None:
        """Forget the held tokens, here and in the store."""
        if self.tokens is not None:
            await self.forget(self.tokens)

    async def forget(self, tokens: oauth.TokenSet) -> None:
        """Forget ``tokens`` in the store, and here when they are the ones held."""
        if self.tokens is not None and self.tokens.issuer == tokens.issuer:
            self.tokens = None
        await self.store.delete(tokens_key(tokens.issuer, tokens.resource))

    async def keep(self, tokens: oauth.TokenSet) -> None:
        """Hold and store new tokens; a new generation starts and the ``on_change`` callbacks run."""
        self.tokens = tokens
        self.generation += 1
        await self.store.set(tokens_key(tokens.issuer, tokens.resource), tokens.to_dict())
        await self.store.set(binding_key(self.mcp_url), {"issuer": tokens.issuer, "resource": tokens.resource})
        for callback in self.on_change:
            callback()


class AuthorizationFlow:
    """The mutable context of one flow while the driver runs it; one instance per flow.

    Args:
        port: the client's side of the driver.
        binding: the client's held state, read and updated by the flow.
        entry: why the flow runs.
        www_authenticate: the challenge's ``WWW-Authenticate`` values (empty for ``expiring``).
        again: the request already went through a flow and was challenged once more (specs/authorization.md,
            "Why every flow ends").
        tool: the tool whose call drew the challenge, for the events (``""`` for other requests).
        attempt: 1 for the first flow of a request, 2 for a step-up after it.
    """

    def __init__(
        self,
        port: AuthorizationPort,
        binding: Binding,
        entry: Entry,
        *,
        www_authenticate: Sequence[str] = (),
        again: bool = False,
        tool: str = "",
        attempt: int = 1,
    ) -> None:
        """Prepare a flow; nothing is sent until :meth:`run`."""
        self.port = port
        self.binding = binding
        self.entry = entry
        self.again = again
        self.tool = tool
        self.attempt = attempt
        self.flow_id = f"{_FLOW_PREFIX}-a{next(_FLOW_COUNTER)}"
        self.challenge = oauth.resource_challenge(www_authenticate) if www_authenticate else None
        self.seq = 0
        self.started = 0.0
        self.error: BaseException | None = None
        self.issuer: str | None = binding.metadata.issuer if binding.metadata is not None else None
        self.resource: str | None = binding.resource
        self.scopes: tuple[str, ...] = binding.requested
        self.legacy = False
        self.resource_metadata = binding.resource_metadata
        self.metadata = binding.metadata
        self.previous: oauth.TokenSet | None = binding.tokens
        self.identity = binding.identity
        self.request: oauth.AuthorizationRequest | None = None
        self.code: str | None = None
        self.assertion: str | None = None
        self._sent: set[str] = set()

    # --- helpers ----------------------------------------------------------------------------------------

    def _refuse(self, error: BaseException) -> Trigger:
        if isinstance(error, AuthorizationError):
            # The server's own text may echo what it was sent: never a secret in an error or an event.
            error = oauth.redact_server_text(error, self._held())
        self.error = error
        return Trigger.refused

    def _held(self) -> set[str]:
        # Every secret this flow holds or has sent: credentials, tokens, the code and verifier, assertions.
        credential = self.binding.credential
        held = set(self._sent)
        for name in ("client_secret", "private_key_pem", "idp_id_token", "assertion"):
            value = getattr(credential, name, None)
            if isinstance(value, str):
                held.add(value)
        if self.identity is not None and self.identity.client_secret is not None:
            held.add(self.identity.client_secret)
        for tokens in (self.previous, self.binding.tokens):
            if tokens is not None:
                held.add(tokens.access_token)
                if tokens.refresh_token is not None:
                    held.add(tokens.refresh_token)
        for value in (self.code, self.assertion, self.request.code_verifier if self.request is not None else None):
            if value is not None:
                held.add(value)
        return held

    def _sending(self, request: oauth.TokenRequest) -> None:
        self._sent.update(value for name, value in request.form if name in oauth.SECRET_FORM_FIELDS)
        for name, value in request.headers:
            if name.lower() in ("authorization", "dpop"):
                # client_secret_basic (RFC 6749 §2.3.1): the whole value and its Base64 credentials.
                self._sent.add(value)
                scheme, _, credentials = value.partition(" ")
                if scheme.lower() == "basic" and credentials:
                    self._sent.add(credentials)

    async def _get(self, url: str, headers: Mapping[str, str], state: str) -> Answer:
        try:
            return await self.port.fetch("GET", url, tuple(headers.items()))
        except McpError as exc:
            raise AuthorizationError(f"GET {url} failed: {exc}", state=state) from exc

    async def _post(self, url: str, headers: Sequence[tuple[str, str]], body: bytes, state: str) -> Answer:
        try:
            return await self.port.fetch("POST", url, headers, body)
        except McpError as exc:
            raise AuthorizationError(f"POST {url} failed: {exc}", state=state) from exc

    async def _token(self, build: Callable[[], oauth.TokenRequest], state: str) -> Answer:
        # RFC 9449 §8: a token endpoint that wants its nonce answers 400 use_dpop_nonce; one retry with it.
        # Each attempt builds its request afresh: a private_key_jwt assertion and a DPoP proof are single-use.
        key = self.binding.dpop_key
        assert self.metadata is not None
        issuer = self.metadata.issuer
        answer = Answer(0, b"")
        for _ in range(2):
            request = build()
            self._sending(request)
            if key is not None:
                proof = oauth.dpop_proof(
                    key,
                    method="POST",
                    url=request.url,
                    now=self.port.now(),
                    jti=oauth.new_jti(),
                    nonce=self.binding.issuer_nonces.get(issuer),
                )
                request = request.with_dpop_proof(proof)
            answer = await self._post(request.url, request.headers, request.body, state)
            nonce = oauth.token_endpoint_nonce_challenge(answer.status, answer.body, answer.dpop_nonce)
            if key is None or nonce is None:
                break
            self.binding.issuer_nonces[issuer] = nonce
        if key is not None and answer.dpop_nonce is not None and answer.status == 200:
            self.binding.issuer_nonces[issuer] = answer.dpop_nonce
        return answer

    def _read_tokens(self, answer: Answer, state: str) -> oauth.TokenSet:
        assert self.metadata is not None
        tokens = oauth.read_token_response(
            answer.status,
            answer.body,
            now=self.port.now(),
            issuer=self.metadata.issuer,
            resource=self.resource,
            requested_scopes=self.scopes,
            dpop=self.binding.dpop_key is not None,
            previous=self.previous if state == oauth.REFRESHING else None,
            state=state,
        )
        required = self.resource_metadata is not None and self.resource_metadata.dpop_bound_access_tokens_required
        if required and tokens.token_type != "DPoP":
            raise AuthorizationError(
                "the resource requires DPoP-bound tokens (dpop_bound_access_tokens_required) and the token is not"
                " bound; use OAuth(dpop=True)",
                state=state,
            )
        return tokens

    async def _grant(self, tokens: oauth.TokenSet) -> None:
        binding = self.binding
        binding.metadata = self.metadata
        binding.resource_metadata = self.resource_metadata
        binding.resource = self.resource
        binding.identity = self.identity
        binding.requested = self.scopes
        self.scopes = tokens.scopes if tokens.scopes else self.scopes
        await binding.keep(tokens)

    async def _known_identity(self) -> Identity | None:
        """The client's identity at the chosen issuer without registering anew; ``None`` when none is known.

        Raises:
            AuthorizationError: the only credentials configured belong to another issuer (SEP-2352).
        """
        assert self.metadata is not None
        metadata = self.metadata
        issuer = metadata.issuer
        credential = self.binding.credential
        state = oauth.REGISTERING
        if isinstance(credential, ClientCredentials):
            if credential.issuer is not None and credential.issuer != issuer:
                raise AuthorizationError(
                    f"the client credentials belong to {credential.issuer!r}, not to {issuer!r}", state=state
                )
            if credential.private_key_pem is not None:
                return Identity(
                    issuer=issuer,
                    client_id=credential.client_id,
                    method="private_key_jwt",
                    private_key_pem=credential.private_key_pem,
                    signing_algorithm=credential.signing_algorithm,
                )
            return Identity(
                issuer=issuer,
                client_id=credential.client_id,
                method="client_secret_basic",
                client_secret=credential.client_secret,
            )
        if isinstance(credential, JwtBearer):
            return Identity(issuer=issuer, client_id=credential.client_id, method="none")
        if isinstance(credential, EnterpriseManaged):
            method = oauth.pre_registered_auth_method(metadata, has_secret=True)
            return Identity(
                issuer=issuer, client_id=credential.client_id, method=method, client_secret=credential.client_secret
            )
        pre_registered: tuple[oauth.PreRegisteredClient, ...] = ()
        if credential.client_id is not None and credential.client_issuer is not None:
            pre_registered = (
                oauth.PreRegisteredClient(
                    issuer=credential.client_issuer,
                    client_id=credential.client_id,
                    client_secret=credential.client_secret,
                    token_endpoint_auth_method=credential.token_endpoint_auth_method,
                ),
            )
        how = oauth.choose_client_identification(
            metadata, pre_registered=pre_registered, client_metadata_url=credential.client_metadata_url
        )
        if how is oauth.ClientIdentification.pre_registered:
            assert credential.client_id is not None
            method = oauth.pre_registered_auth_method(
                metadata,
                has_secret=credential.client_secret is not None,
                configured=credential.token_endpoint_auth_method,
            )
            return Identity(
                issuer=issuer, client_id=credential.client_id, method=method, client_secret=credential.client_secret
            )
        if how is oauth.ClientIdentification.client_metadata_document:
            assert credential.client_metadata_url is not None
            return Identity(issuer=issuer, client_id=credential.client_metadata_url, method="none")
        record = await self.binding.store.get(registration_key(issuer))
        registration = oauth.ClientRegistration.from_dict(record) if record is not None else None
        if registration is None or registration.issuer != issuer:
            return None
        return Identity(
            issuer=issuer,
            client_id=registration.client_id,
            method=registration.token_endpoint_auth_method,
            client_secret=registration.client_secret,
        )

    # --- one effect per state; each returns the trigger naming what happened ---------------------------

    async def _starting(self) -> Trigger:
        binding = self.binding
        state = str(State.starting)
        if self.entry is Entry.expiring:
            return Trigger.expiring
        challenged = self.challenge.scope if self.challenge is not None else ()
        if self.again:
            status = 401 if self.entry is Entry.unauthorized else 403
            if self.entry is Entry.forbidden and self.issuer is not None:
                # Remembered for the connection, so a later identical challenge costs no authorization
                # (specs/authorization.md, "A scope that never suffices").
                binding.stepped_up.add((self.issuer, frozenset(challenged)))
            self.error = AuthorizationError(
                f"the MCP server answered HTTP {status} to the request resent after authorization", state=state
            )
            return Trigger.challenged_again
        if self.entry is Entry.unauthorized:
            return Trigger.unauthorized
        if self.issuer is not None and (self.issuer, frozenset(challenged)) in binding.stepped_up:
            self.error = AuthorizationError(
                f"HTTP 403 insufficient_scope for {' '.join(challenged) or 'no scope'!r} again, after a step-up"
                " with it already failed on this connection",
                state=state,
            )
            return Trigger.already_stepped_up
        # SEP-2350: the union of what was requested for the held token and what is challenged, in order.
        self.scopes = oauth.step_up_scopes(binding.requested, challenged)
        if binding.interactive and self.metadata is not None and self.identity is not None:
            return Trigger.insufficient_scope
        return Trigger.scope_challenged

    async def _discovering_resource(self) -> Trigger:
        state = oauth.DISCOVERING_RESOURCE
        mcp_url = self.binding.mcp_url
        try:
            found: oauth.ProtectedResourceMetadata | None = None
            tried = oauth.protected_resource_metadata_urls(mcp_url, self.challenge)
            for url in tried:
                answer = await self._get(url, oauth.METADATA_REQUEST_HEADERS, state)
                found = oauth.read_protected_resource_metadata(answer.status, answer.body)
                if found is not None:
                    break
            if found is None:
                if self.binding.pinned_modern:
                    raise AuthorizationError(
                        f"no usable protected resource metadata at {', '.join(tried)}; MCP 2026-07-28 requires it",
                        state=state,
                    )
                self.legacy = True
                self.resource_metadata = None
                self.resource = None
                self._choose_scopes(None)
                return Trigger.resource_metadata_absent
            oauth.check_resource(found, mcp_url)
        except AuthorizationError as exc:
            return self._refuse(exc)
        self.resource_metadata = found
        self.resource = found.resource
        self._choose_scopes(found)
        return Trigger.resource_found

    def _choose_scopes(self, resource_metadata: oauth.ProtectedResourceMetadata | None) -> None:
        configured = self.binding.credential.scopes
        if self.entry is Entry.forbidden:
            return  # the step-up union was chosen in `starting`
        if configured is not None:
            self.scopes = configured
        else:
            self.scopes = oauth.requested_scopes(self.challenge, resource_metadata)

    async def _discovering_issuer(self) -> Trigger:
        state = oauth.DISCOVERING_ISSUER
        binding = self.binding
        try:
            if self.legacy:
                answer = await self._get(
                    oauth.legacy_metadata_url(binding.mcp_url), oauth.LEGACY_METADATA_HEADERS, state
                )
                metadata = oauth.read_legacy_authorization_server_metadata(
                    answer.status, answer.body, mcp_url=binding.mcp_url
                )
                self.issuer = metadata.issuer
            else:
                assert self.resource_metadata is not None
                issuer = oauth.choose_authorization_server(self.resource_metadata, await self._known_issuers())
                self.issuer = issuer
                found: oauth.AuthorizationServerMetadata | None = None
                for url in oauth.authorization_server_metadata_urls(issuer):
                    answer = await self._get(url, oauth.METADATA_REQUEST_HEADERS, state)
                    found = oauth.read_authorization_server_metadata(
                        answer.status, answer.body, expected_issuer=issuer, authorization_code=binding.interactive
                    )
                    if found is not None:
                        break
                if found is None:
                    raise AuthorizationError(f"no authorization server metadata for issuer {issuer!r}", state=state)
                metadata = found
            if binding.dpop_key is not None:
                oauth.dpop_signing_algorithm(metadata, self.resource_metadata)
        except AuthorizationError as exc:
            return self._refuse(exc)
        self.metadata = metadata
        held = binding.tokens
        if held is not None and held.issuer != metadata.issuer:
            # SEP-2352: another issuer. Its tokens are dropped unsent and the client is identified afresh.
            await binding.drop_tokens()
            self.identity = None
            self.previous = None
            return Trigger.issuer_changed
        if self.identity is not None and self.identity.issuer != metadata.issuer:
            self.identity = None
        if held is None:
            record = await binding.store.get(tokens_key(metadata.issuer, self.resource))
            held = oauth.TokenSet.from_dict(record) if record is not None else None
        if held is not None and held.resource == self.resource and held.refresh_token is not None:
            self.previous = held
            return Trigger.issuer_kept
        self.previous = None
        return Trigger.issuer_found

    async def _known_issuers(self) -> set[str]:
        # The client chooses among the PRM's authorization_servers (RFC 9728 §2; MCP 2026-07-28 "Authorization
        # Server Discovery"): the first listed issuer it holds credentials for, else the first.
        credential = self.binding.credential
        known = set()
        if isinstance(credential, OAuth) and credential.client_issuer is not None:
            known.add(credential.client_issuer)
        if isinstance(credential, ClientCredentials) and credential.issuer is not None:
            known.add(credential.issuer)
        assert self.resource_metadata is not None
        for issuer in self.resource_metadata.authorization_servers:
            if await self.binding.store.get(registration_key(issuer)) is not None:
                known.add(issuer)
        return known

    async def _refreshing(self) -> Trigger:
        state = oauth.REFRESHING
        binding = self.binding
        previous = self.previous
        assert previous is not None and previous.refresh_token is not None and self.metadata is not None
        refresh_token = previous.refresh_token
        try:
            identity = self.identity or await self._known_identity()
        except AuthorizationError as exc:
            return self._refuse(exc)
        if identity is None:
            await binding.forget(previous)
            self.previous = None
            return Trigger.refresh_refused
        self.identity = identity
        metadata = self.metadata
        # A refresh asks for no scope (OAuth 2.1 §4.3): the token keeps what was requested for it.
        self.scopes = binding.requested or previous.scopes

        def build() -> oauth.TokenRequest:
            client = identity.authentication(now=self.port.now())
            return oauth.refresh_request(metadata, client, refresh_token=refresh_token, resource=previous.resource)

        try:
            answer = await self._token(build, state)
            if answer.status in (400, 401):
                # OAuth 2.1 §5.2: invalid_grant and friends; the refresh token is spent. Identify afresh.
                await binding.forget(previous)
                self.previous = None
                return Trigger.refresh_refused
            tokens = self._read_tokens(answer, state)
        except AuthorizationError as exc:
            return self._refuse(exc)
        await self._grant(tokens)
        return Trigger.refreshed

    async def _registering(self) -> Trigger:
        state = oauth.REGISTERING
        binding = self.binding
        credential = binding.credential
        assert self.metadata is not None
        metadata = self.metadata
        try:
            identity = await self._known_identity()
            if identity is None:
                assert isinstance(credential, OAuth)
                identity = await self._register(credential, metadata, state)
        except AuthorizationError as exc:
            return self._refuse(exc)
        self.identity = identity
        if isinstance(credential, OAuth):
            self.scopes = oauth.with_offline_access(self.scopes, metadata, refresh_wanted=credential.offline_access)
            return Trigger.identified
        if isinstance(credential, EnterpriseManaged):
            return Trigger.identified_enterprise
        return Trigger.identified_headless

    async def _register(self, credential: OAuth, metadata: oauth.AuthorizationServerMetadata, state: str) -> Identity:
        # RFC 7591 dynamic registration; SEP-837: a client on the user's machine is a native application.
        endpoint = metadata.registration_endpoint
        if endpoint is None:
            raise AuthorizationError(f"{metadata.issuer!r} offers no client registration", state=state)
        method = oauth.registration_auth_method(metadata)
        document = oauth.registration_request(
            client_name=credential.client_name,
            redirect_uris=[credential.redirect_uri],
            token_endpoint_auth_method=method,
        )
        answer = await self._post(endpoint, _JSON_HEADERS, json.dumps(document).encode(), state)
        registration = oauth.read_registration_response(
            answer.status, answer.body, issuer=metadata.issuer, requested_method=method
        )
        # Stored at once: a finished registration outlives a flow cancelled later (specs/authorization.md,
        # "Cancelled while the user logs in").
        await self.binding.store.set(registration_key(metadata.issuer), registration.to_dict())
        return Identity(
            issuer=metadata.issuer,
            client_id=registration.client_id,
            method=registration.token_endpoint_auth_method,
            client_secret=registration.client_secret,
        )

    async def _asserting(self) -> Trigger:
        state = oauth.ASSERTING
        credential = self.binding.credential
        assert isinstance(credential, EnterpriseManaged) and self.metadata is not None
        request = oauth.token_exchange_request(
            credential.idp_token_endpoint,
            oauth.ClientAuthentication(client_id=credential.idp_client_id),
            subject_token=credential.idp_id_token,
            audience=self.metadata.issuer,
            resource=self.resource,
            scopes=self.scopes,
        )
        self._sending(request)
        try:
            answer = await self._post(request.url, request.headers, request.body, state)
            self.assertion = oauth.read_token_exchange_response(answer.status, answer.body)
        except AuthorizationError as exc:
            return self._refuse(exc)
        return Trigger.asserted

    async def _authorizing(self) -> Trigger:
        state = oauth.AUTHORIZING
        credential = self.binding.credential
        assert isinstance(credential, OAuth) and self.metadata is not None and self.identity is not None
        try:
            request = oauth.authorization_request(
                self.metadata,
                client_id=self.identity.client_id,
                redirect_uri=credential.redirect_uri,
                resource=self.resource,
                scopes=self.scopes,
                state=oauth.new_state(),
                code_verifier=oauth.new_code_verifier(),
            )
            try:
                redirect = await self.port.authorize(request.url)
            except AuthorizationError:
                raise
            except Exception as exc:
                # Its type only: its message may hold the redirect URL, with the code and state in it.
                # Not chained either: a traceback would print the cause's message.
                raise AuthorizationError(f"authorize raised {type(exc).__name__}", state=state) from None
            if not isinstance(redirect, str):
                raise AuthorizationError(
                    f"authorize returned a {type(redirect).__name__}, not the redirect URL", state=state
                )
            self.code = oauth.read_authorization_response(request, redirect)
        except AuthorizationError as exc:
            return self._refuse(exc)
        self.request = request
        return Trigger.redirected

    async def _exchanging(self) -> Trigger:
        state = oauth.EXCHANGING
        credential = self.binding.credential
        identity = self.identity
        assert self.metadata is not None and identity is not None
        metadata = self.metadata
        try:
            assertion = await self._grant_assertion(credential, state)

            def build() -> oauth.TokenRequest:
                client = identity.authentication(now=self.port.now())
                if isinstance(credential, OAuth):
                    assert self.request is not None and self.code is not None
                    return oauth.code_exchange_request(metadata, client, request=self.request, code=self.code)
                if isinstance(credential, ClientCredentials):
                    return oauth.client_credentials_request(
                        metadata, client, resource=self.resource, scopes=self.scopes
                    )
                assert assertion is not None
                return oauth.jwt_bearer_request(
                    metadata, client, assertion=assertion, resource=self.resource, scopes=self.scopes
                )

            answer = await self._token(build, state)
            tokens = self._read_tokens(answer, state)
        except AuthorizationError as exc:
            return self._refuse(exc)
        await self._grant(tokens)
        return Trigger.granted

    async def _grant_assertion(self, credential: Credential, state: str) -> str | None:
        if isinstance(credential, EnterpriseManaged):
            return self.assertion
        if not isinstance(credential, JwtBearer):
            return None
        if isinstance(credential.assertion, str):
            return credential.assertion
        try:
            fresh = await credential.assertion()
        except Exception as exc:
            # Its type only, and not chained: the message (or a printed cause) may quote the assertion.
            raise AuthorizationError(f"the assertion callable raised {type(exc).__name__}", state=state) from None
        if not isinstance(fresh, str) or not fresh:
            raise AuthorizationError("the assertion callable returned no JWT", state=state)
        return fresh

    # --- the driver ------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Drive the flow to a terminal state (specs/authorization.md); on ``authorized`` the tokens are held.

        Raises:
            AuthorizationError: the flow failed (the last event names the state and reason).
            trio.Cancelled: the caller was cancelled; the flow ends in ``cancelled``.
        """
        self.started = trio.current_time()
        if await drive(COMPILED, _EFFECTS, self) == State.failed:
            assert self.error is not None
            raise self.error

    def entered(self, state: str, previous: str | None, trigger: str | None) -> None:
        """Publish the :class:`~mcpfsm._core.events.AuthEvent` of the state entered (the driver's ``Run``)."""
        state, previous_text, trigger_text = str(state), plain(previous), plain(trigger)
        seq, self.seq = self.seq, self.seq + 1
        audit = self.port.audit
        if not audit.observed:
            audit.log(self.flow_id, self.tool, previous_text, state, trigger_text, machine=AuthEvent.MACHINE)
            return
        error: Mapping[str, Any] | None = None
        if state == State.cancelled:
            error = cancellation_summary("flow")
        elif state == State.failed and self.error is not None:
            error = error_summary(self.error)
        audit.publish(
            AuthEvent(
                call_id=self.flow_id,
                seq=seq,
                tool=self.tool,
                state=state,
                previous=previous_text,
                trigger=trigger_text,
                attempt=self.attempt,
                at=utc_timestamp(time.time_ns()),
                elapsed=trio.current_time() - self.started,
                error=error,
                issuer=self.issuer,
                resource=self.resource,
                scopes=self.scopes,
            )
        )



_EFFECTS: Final[Mapping[str, Effect[AuthorizationFlow, Trigger]]] = {
    State.starting: AuthorizationFlow._starting,
    State.discovering_resource: AuthorizationFlow._discovering_resource,
    State.discovering_issuer: AuthorizationFlow._discovering_issuer,
    State.refreshing: AuthorizationFlow._refreshing,
    State.registering: AuthorizationFlow._registering,
    State.asserting: AuthorizationFlow._asserting,
    State.authorizing: AuthorizationFlow._authorizing,
    State.exchanging: AuthorizationFlow._exchanging,
}
"""One effect per non-terminal state (specs/authorization.md)."""
