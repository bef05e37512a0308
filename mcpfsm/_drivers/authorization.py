"""The trio driver of one authorization flow (the machine in ``mcpfsm._machines.authorization``).

For the current state the driver (:func:`~mcpfsm._drivers.driver.drive`, the loop every machine shares)
performs one effect, the effect reports one fact as a trigger, the compiled table gives the next state, and
one :class:`~mcpfsm._core.events.AuthEvent` is published. What the
effects compute comes from the pure core (``mcpfsm._core.oauth``: parsing, validation, request building,
signing); what they send goes through :class:`AuthorizationPort`, a narrow port the client implements with
its own HTTP client for metadata, registration and token endpoints (never the MCP endpoint's connections,
never following redirects, never carrying the MCP token: MCP "Authorization", "Token Theft").

The flow reads one :class:`~mcpfsm._drivers.authorization_binding.Binding` per client (the tokens held,
what they are bound to, the DPoP key and nonces) and changes it only through its methods; a flow that
grants tokens hands it one new :class:`~mcpfsm._drivers.authorization_binding.Bound` value. The session layer
(``mcpfsm._client.authorization``) decides when a flow runs, parses the challenge once and hands it over, and
resends the request after it; one flow runs at a time per client (single flight: specs/authorization.md).

Nothing secret reaches an event, a log line or an error message: tokens, codes, verifiers, secrets and
assertions stay in the values that hold them, whose reprs hide them, and every refusal passes through the
flow's :class:`~mcpfsm._core.oauth.redaction.Secrets` before it is recorded.
"""

from __future__ import annotations

import itertools
import json
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

import trio

from .._core.credentials import (
    ClientCredentials,
    Credential,
    EnterpriseManaged,
    JwtBearer,
    OAuth,
)
from .._core.errors import AuthorizationError, McpError
from .._core.events import error_summary, utc_timestamp
from .._core.events.authorization import AuthEvent
from .._core.oauth.answers import LEGACY_METADATA_HEADERS, METADATA_REQUEST_HEADERS, Answer
from .._core.oauth.authorization_request import (
    AuthorizationRequest,
    authorization_request,
    new_code_verifier,
    new_jti,
    new_state,
    read_authorization_response,
)
from .._core.oauth.challenges import BearerChallenge, resource_challenge
from .._core.oauth.dpop import dpop_proof, dpop_signing_algorithm, token_endpoint_nonce_challenge
from .._core.oauth.identification import (
    ClientAuthentication,
    read_registration_response,
    registration_auth_method,
    registration_request,
)
from .._core.oauth.issuer import (
    AuthorizationServerMetadata,
    authorization_server_metadata_urls,
    check_confidential_issuer,
    legacy_metadata_url,
    read_authorization_server_metadata,
    read_legacy_authorization_server_metadata,
)
from .._core.oauth.redaction import Secrets
from .._core.oauth.resource import (
    ProtectedResourceMetadata,
    check_resource,
    choose_authorization_server,
    protected_resource_metadata_urls,
    read_protected_resource_metadata,
)
from .._core.oauth.scopes import requested_scopes, step_up_scopes, with_offline_access
from .._core.oauth.token_request import (
    TokenRequest,
    client_credentials_request,
    code_exchange_request,
    jwt_bearer_request,
    refresh_request,
    token_exchange_request,
)
from .._core.oauth.tokens import TokenSet, read_token_exchange_response, read_token_response
from .._machines.authorization import COMPILED, State, Trigger
from .audit import AuditBus
from .authorization_binding import Binding, Bound, Entry, Identity, known_identity
from .driver import Effect, cancellation_summary, drive, plain
from .token_sharing import Exclusion, delete_if_unchanged, read_store, refresh_lock

__all__ = ["AuthorizationFlow", "AuthorizationPort"]

_FLOW_PREFIX = secrets.token_hex(4)
_FLOW_COUNTER = itertools.count(1)
_JSON_HEADERS: Final = (("Accept", "application/json"), ("Content-Type", "application/json"))
_CREDENTIAL_SECRETS: Final = ("client_secret", "private_key_pem", "idp_id_token", "assertion")
"""The credential attributes that hold a secret (a ``str`` one: an assertion callable is no secret)."""


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


class AuthorizationFlow:
    """The mutable context of one flow while the driver runs it; one instance per flow.

    Args:
        port: the client's side of the driver.
        binding: the client's held state, read and updated by the flow.
        entry: why the flow runs.
        challenge: the challenge of the 401 or 403, parsed once by the session layer (``None`` for
            ``expiring``).
        www_authenticate: the challenge's raw ``WWW-Authenticate`` values, for a caller that holds no parsed
            challenge; read only when ``challenge`` is not given.
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
        challenge: BearerChallenge | None = None,
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
        if challenge is None and www_authenticate:
            challenge = resource_challenge(www_authenticate)
        self.challenge = challenge
        self.seq = 0
        self.started = 0.0
        self.error: BaseException | None = None
        self.issuer: str | None = binding.metadata.issuer if binding.metadata is not None else None
        self.resource: str | None = binding.resource
        self.scopes: tuple[str, ...] = binding.requested
        self.legacy = False
        self.resource_metadata = binding.resource_metadata
        self.metadata = binding.metadata
        self.previous: TokenSet | None = binding.tokens
        self.identity = binding.identity
        self.request: AuthorizationRequest | None = None
        self.code: str | None = None
        self.assertion: str | None = None
        self.sent = Secrets()
        """The secrets this flow's requests have carried (form fields, ``Authorization``, ``DPoP``)."""

    # --- helpers ----------------------------------------------------------------------------------------

    def _refuse(self, error: BaseException) -> Trigger:
        if isinstance(error, AuthorizationError):
            # The server's own text may echo what it was sent: never a secret in an error or an event.
            error = self._held().redact(error)
        self.error = error
        return Trigger.refused

    def _held(self) -> Secrets:
        # Every secret this flow holds or has sent: credentials, tokens, the code and verifier, assertions.
        credential = self.binding.credential
        identity = self.identity
        return (
            self.sent.with_values(*(getattr(credential, name, None) for name in _CREDENTIAL_SECRETS))
            .with_values(identity.client_secret if identity is not None else None)
            .with_tokens(self.previous)
            .with_tokens(self.binding.tokens)
            .with_values(self.code, self.assertion, self.request.code_verifier if self.request is not None else None)
        )

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

    async def _token(self, build: Callable[[], TokenRequest], state: str) -> Answer:
        # RFC 9449 §8: a token endpoint that wants its nonce answers 400 use_dpop_nonce; one retry with it.
        # Each attempt builds its request afresh: a private_key_jwt assertion and a DPoP proof are single-use.
        key = self.binding.dpop_key
        assert self.metadata is not None
        issuer = self.metadata.issuer
        answer = Answer(0, b"")
        for _ in range(2):
            request = build()
            self.sent = self.sent.with_request(request)
            if key is not None:
                proof = dpop_proof(
                    key,
                    method="POST",
                    url=request.url,
                    now=self.port.now(),
                    jti=new_jti(),
                    nonce=self.binding.issuer_nonce(issuer),
                )
                request = request.with_dpop_proof(proof)
            answer = await self._post(request.url, request.headers, request.body, state)
            nonce = token_endpoint_nonce_challenge(answer.status, answer.body, answer.dpop_nonce)
            if key is None or nonce is None:
                break
            self.binding.keep_issuer_nonce(issuer, nonce)
        if key is not None and answer.dpop_nonce is not None and answer.status == 200:
            self.binding.keep_issuer_nonce(issuer, answer.dpop_nonce)
        return answer

    def _read_tokens(self, answer: Answer, state: str) -> TokenSet:
        assert self.metadata is not None
        tokens = read_token_response(
            answer.status,
            answer.body,
            now=self.port.now(),
            issuer=self.metadata.issuer,
            resource=self.resource,
            requested_scopes=self.scopes,
            dpop=self.binding.dpop_key is not None,
            previous=self.previous if state == State.refreshing else None,
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

    def _bound(self) -> Bound:
        return Bound(
            metadata=self.metadata,
            resource_metadata=self.resource_metadata,
            resource=self.resource,
            identity=self.identity,
            requested=self.scopes,
        )

    async def _grant(self, tokens: TokenSet) -> None:
        bound = self._bound()
        self.scopes = tokens.scopes if tokens.scopes else self.scopes
        await self.binding.keep(tokens, bound)

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
                binding.step_up_failed(self.issuer, challenged)
            self.error = AuthorizationError(
                f"the MCP server answered HTTP {status} to the request resent after authorization", state=state
            )
            return Trigger.challenged_again
        if self.entry is Entry.unauthorized:
            return Trigger.unauthorized
        if self.issuer is not None and binding.stepped_up(self.issuer, challenged):
            self.error = AuthorizationError(
                f"HTTP 403 insufficient_scope for {' '.join(challenged) or 'no scope'!r} again, after a step-up"
                " with it already failed on this connection",
                state=state,
            )
            return Trigger.already_stepped_up
        # SEP-2350: the union of what was requested for the held token and what is challenged, in order.
        self.scopes = step_up_scopes(binding.requested, challenged)
        if binding.interactive and self.metadata is not None and self.identity is not None:
            return Trigger.insufficient_scope
        return Trigger.scope_challenged

    async def _discovering_resource(self) -> Trigger:
        state = State.discovering_resource
        mcp_url = self.binding.mcp_url
        try:
            found: ProtectedResourceMetadata | None = None
            tried = protected_resource_metadata_urls(mcp_url, self.challenge)
            for url in tried:
                answer = await self._get(url, METADATA_REQUEST_HEADERS, state)
                found = read_protected_resource_metadata(answer.status, answer.body)
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
            check_resource(found, mcp_url)
        except AuthorizationError as exc:
            return self._refuse(exc)
        self.resource_metadata = found
        self.resource = found.resource
        self._choose_scopes(found)
        return Trigger.resource_found

    def _choose_scopes(self, resource_metadata: ProtectedResourceMetadata | None) -> None:
        configured = self.binding.credential.scopes
        if self.entry is Entry.forbidden:
            return  # the step-up union was chosen in `starting`
        if configured is not None:
            self.scopes = configured
        else:
            self.scopes = requested_scopes(self.challenge, resource_metadata)

    async def _discovering_issuer(self) -> Trigger:
        state = State.discovering_issuer
        binding = self.binding
        try:
            if self.legacy:
                answer = await self._get(legacy_metadata_url(binding.mcp_url), LEGACY_METADATA_HEADERS, state)
                metadata = read_legacy_authorization_server_metadata(
                    answer.status, answer.body, mcp_url=binding.mcp_url
                )
                self.issuer = metadata.issuer
            else:
                assert self.resource_metadata is not None
                issuer = choose_authorization_server(self.resource_metadata, await self._known_issuers())
                self.issuer = issuer
                confidential = _confidential(binding.credential)
                if confidential is not None:
                    # Before the authorization server is first contacted (docs/authorization.md).
                    check_confidential_issuer(issuer, mcp_url=binding.mcp_url, credential=confidential)
                found: AuthorizationServerMetadata | None = None
                for url in authorization_server_metadata_urls(issuer):
                    answer = await self._get(url, METADATA_REQUEST_HEADERS, state)
                    found = read_authorization_server_metadata(
                        answer.status, answer.body, expected_issuer=issuer, authorization_code=binding.interactive
                    )
                    if found is not None:
                        break
                if found is None:
                    raise AuthorizationError(f"no authorization server metadata for issuer {issuer!r}", state=state)
                metadata = found
            if binding.dpop_key is not None:
                dpop_signing_algorithm(metadata, self.resource_metadata)
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
            record = await binding.store.get(binding.tokens_key(metadata.issuer, self.resource))
            held = TokenSet.from_dict(record) if record is not None else None
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
        if isinstance(credential, ClientCredentials | JwtBearer | EnterpriseManaged) and credential.issuer is not None:
            known.add(credential.issuer)
        assert self.resource_metadata is not None
        for issuer in self.resource_metadata.authorization_servers:
            if await self.binding.registration(issuer) is not None:
                known.add(issuer)
        return known

    async def _refreshing(self) -> Trigger:
        # Single flight across processes (docs/stores.md): under the store's lock on the tokens' key, what is
        # stored is read again; a peer's newer tokens are used without a request, else the newest refresh
        # token stored is spent (rotation: one spent twice may revoke the grant, RFC 6749 §10.4).
        binding = self.binding
        previous = self.previous
        assert previous is not None and previous.refresh_token is not None
        key = binding.tokens_key(previous.issuer, previous.resource)
        # A peer that already finished spares this client the lock: using its tokens sends nothing, so that
        # needs no exclusion; deciding to spend the refresh token does.
        early = await binding.store.get(key)
        stored = TokenSet.from_dict(early) if early is not None else None
        if stored is not None and self._newer(stored, previous):
            binding.adopt(stored, self._bound())
            return Trigger.refreshed
        async with refresh_lock(binding.store, key) as reach:
            if reach is Exclusion.unreachable:
                # docs/stores.md: without the lock, the refresh goes ahead only after a second read of the store itself.
                # A peer may be spending this very refresh token; what this process remembers cannot tell.
                try:
                    record = await read_store(binding.store, key)
                except Exception:
                    return self._refuse(
                        AuthorizationError(
                            "the token store could not be read while another process may be refreshing; the"
                            " refresh token is not sent until it can be (docs/stores.md)",
                            state=State.refreshing,
                        )
                    )
            else:
                record = await binding.store.get(key)
            stored = TokenSet.from_dict(record) if record is not None else None
            if stored is not None and self._newer(stored, previous):
                binding.adopt(stored, self._bound())
                return Trigger.refreshed
            if stored is not None and stored.refresh_token is not None and stored.issuer == previous.issuer:
                self.previous = stored
            return await self._refresh(key, record)

    def _newer(self, stored: TokenSet, previous: TokenSet) -> bool:
        # Another client replaced the tokens this flow started from, and what it stored is not due itself.
        return (
            stored.access_token != previous.access_token
            and stored.issuer == previous.issuer
            and stored.resource == previous.resource
            and not stored.refresh_due(self.port.now())
        )

    async def _refresh(self, key: str, record: Mapping[str, Any] | None) -> Trigger:
        state = State.refreshing
        binding = self.binding
        previous = self.previous
        assert previous is not None and previous.refresh_token is not None and self.metadata is not None
        refresh_token = previous.refresh_token
        try:
            identity = self.identity or await known_identity(self.binding, self.metadata)
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

        def build() -> TokenRequest:
            client = identity.authentication(now=self.port.now())
            return refresh_request(metadata, client, refresh_token=refresh_token, resource=previous.resource)

        try:
            answer = await self._token(build, state)
            if answer.status in (400, 401):
                # OAuth 2.1 §5.2: invalid_grant and friends; the refresh token is spent. The stored tokens go
                # only if they are still the ones spent (a peer's fresh ones stay); once more, what is stored.
                binding.release(previous)
                if record is not None:
                    await delete_if_unchanged(binding.store, key, record)
                again = await binding.store.get(key)
                stored = TokenSet.from_dict(again) if again is not None else None
                if stored is not None and self._newer(stored, previous):
                    binding.adopt(stored, self._bound())
                    return Trigger.refreshed
                self.previous = None
                return Trigger.refresh_refused
            tokens = self._read_tokens(answer, state)
        except AuthorizationError as exc:
            return self._refuse(exc)
        await self._grant(tokens)
        return Trigger.refreshed

    async def _registering(self) -> Trigger:
        state = State.registering
        binding = self.binding
        credential = binding.credential
        assert self.metadata is not None
        metadata = self.metadata
        try:
            identity = await known_identity(self.binding, self.metadata)
            if identity is None:
                assert isinstance(credential, OAuth)
                identity = await self._register(credential, metadata, state)
        except AuthorizationError as exc:
            return self._refuse(exc)
        self.identity = identity
        if isinstance(credential, OAuth):
            self.scopes = with_offline_access(self.scopes, metadata, refresh_wanted=credential.offline_access)
            return Trigger.identified
        if isinstance(credential, EnterpriseManaged):
            return Trigger.identified_enterprise
        return Trigger.identified_headless

    async def _register(self, credential: OAuth, metadata: AuthorizationServerMetadata, state: str) -> Identity:
        # RFC 7591 dynamic registration; SEP-837: a client on the user's machine is a native application.
        endpoint = metadata.registration_endpoint
        if endpoint is None:
            raise AuthorizationError(f"{metadata.issuer!r} offers no client registration", state=state)
        method = registration_auth_method(metadata)
        document = registration_request(
            client_name=credential.client_name,
            redirect_uris=[credential.redirect_uri],
            token_endpoint_auth_method=method,
        )
        answer = await self._post(endpoint, _JSON_HEADERS, json.dumps(document).encode(), state)
        registration = read_registration_response(
            answer.status, answer.body, issuer=metadata.issuer, requested_method=method
        )
        # Stored at once: a finished registration outlives a flow cancelled later (specs/authorization.md,
        # "Cancelled while the user logs in").
        await self.binding.store.set(self.binding.registration_key(metadata.issuer), registration.to_dict())
        return Identity(
            issuer=metadata.issuer,
            client_id=registration.client_id,
            method=registration.token_endpoint_auth_method,
            client_secret=registration.client_secret,
        )

    async def _asserting(self) -> Trigger:
        state = State.asserting
        credential = self.binding.credential
        assert isinstance(credential, EnterpriseManaged) and self.metadata is not None
        request = token_exchange_request(
            credential.idp_token_endpoint,
            ClientAuthentication(client_id=credential.idp_client_id),
            subject_token=credential.idp_id_token,
            audience=self.metadata.issuer,
            resource=self.resource,
            scopes=self.scopes,
        )
        self.sent = self.sent.with_request(request)
        try:
            answer = await self._post(request.url, request.headers, request.body, state)
            self.assertion = read_token_exchange_response(answer.status, answer.body)
        except AuthorizationError as exc:
            return self._refuse(exc)
        return Trigger.asserted

    async def _authorizing(self) -> Trigger:
        state = State.authorizing
        credential = self.binding.credential
        assert isinstance(credential, OAuth) and self.metadata is not None and self.identity is not None
        try:
            request = authorization_request(
                self.metadata,
                client_id=self.identity.client_id,
                redirect_uri=credential.redirect_uri,
                resource=self.resource,
                scopes=self.scopes,
                state=new_state(),
                code_verifier=new_code_verifier(),
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
            self.code = read_authorization_response(request, redirect)
        except AuthorizationError as exc:
            return self._refuse(exc)
        self.request = request
        return Trigger.redirected

    async def _exchanging(self) -> Trigger:
        credential = self.binding.credential
        if isinstance(credential, OAuth):
            return await self._exchange()
        # A headless grant is single flight across processes, like a refresh (docs/stores.md): under the
        # tokens' lock, what is stored is read again, and a peer's fresh tokens spare this client the request.
        assert self.metadata is not None
        key = self.binding.tokens_key(self.metadata.issuer, self.resource)
        async with refresh_lock(self.binding.store, key):
            record = await self.binding.store.get(key)
            stored = TokenSet.from_dict(record) if record is not None else None
            if stored is not None and self._granted_by_peer(stored):
                self.binding.adopt(stored, self._bound())
                return Trigger.granted
            return await self._exchange()

    def _granted_by_peer(self, stored: TokenSet) -> bool:
        # Tokens another client stored for this issuer and resource, not the ones that just failed, not due,
        # with every scope this flow asks for, and not bound to another process's DPoP key (RFC 9449).
        held = self.binding.tokens
        assert self.metadata is not None
        return (
            stored.token_type == "Bearer"
            and stored.issuer == self.metadata.issuer
            and stored.resource == self.resource
            and (held is None or stored.access_token != held.access_token)
            and not stored.refresh_due(self.port.now())
            and set(self.scopes or ()) <= set(stored.scopes)
        )

    async def _exchange(self) -> Trigger:
        state = State.exchanging
        credential = self.binding.credential
        identity = self.identity
        assert self.metadata is not None and identity is not None
        metadata = self.metadata
        try:
            assertion = await self._grant_assertion(credential, state)

            def build() -> TokenRequest:
                client = identity.authentication(now=self.port.now())
                if isinstance(credential, OAuth):
                    assert self.request is not None and self.code is not None
                    return code_exchange_request(metadata, client, request=self.request, code=self.code)
                if isinstance(credential, ClientCredentials):
                    return client_credentials_request(metadata, client, resource=self.resource, scopes=self.scopes)
                assert assertion is not None
                return jwt_bearer_request(
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


def _confidential(credential: Credential) -> str | None:
    """What confidential credential ``credential`` sends to an issuer the caller did not name, or ``None``.

    ``None`` too when the caller named the issuer (``issuer=``; ``OAuth`` needs ``client_issuer`` for any
    secret of its own, and a secret a registration returned belongs to the issuer that returned it).
    """
    if isinstance(credential, OAuth) or credential.issuer is not None:
        return None
    if isinstance(credential, ClientCredentials):
        return "the client secret" if credential.client_secret is not None else "the private-key assertion"
    if isinstance(credential, JwtBearer):
        return "the workload assertion"
    return "the client secret with the enterprise assertion"


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
