"""What one client holds between authorization flows, and the values a flow starts from.

- :class:`Entry`: why a flow runs (the session layer's reason);
- :class:`Identity`: how the client identifies itself to one issuer;
- :class:`Bound`: what the held tokens are bound to (issuer metadata, resource, identity, scopes), one value
  replaced whole when a flow grants tokens;
- :func:`known_identity`: the client's identity at an issuer that needs no registration;
- :class:`Binding`: the client's held state (one per client): the tokens and their generation, the
  :class:`Bound` value, the DPoP key and nonces, and the store keys of its holder. The session layer
  (``mcpfsm._client.authorization``) and the flow (``mcpfsm._drivers.authorization``) change it only through
  its methods.

Store keys name the credential's holder (``credential_holder``: its kind and a digest of its public identity),
so two credentials sharing a store never use each other's tokens or registration. Entries an earlier mcpfsm
stored without a holder are taken over by an interactive login (``OAuth``) only, and moved, never copied: the
first holder that finds them stores them under its own keys and deletes the old ones (docs/stores.md).

Secrets stay in the values that hold them (``repr=False``); no repr here prints one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from .._core.credentials import (
    ClientCredentials,
    Credential,
    EnterpriseManaged,
    JwtBearer,
    OAuth,
    TokenStore,
    binding_key,
    credential_holder,
    legacy_binding_key,
    legacy_registration_key,
    legacy_tokens_key,
    registration_key,
    tokens_key,
)
from .._core.errors import AuthorizationError
from .._core.oauth.authorization_request import new_jti
from .._core.oauth.dpop import DPoPKey
from .._core.oauth.identification import (
    ClientAuthentication,
    ClientIdentification,
    ClientRegistration,
    PreRegisteredClient,
    TokenEndpointAuthMethod,
    choose_client_identification,
    pre_registered_auth_method,
)
from .._core.oauth.issuer import AuthorizationServerMetadata
from .._core.oauth.resource import ProtectedResourceMetadata
from .._core.oauth.token_request import client_assertion
from .._core.oauth.tokens import TokenSet
from .._machines.authorization import State
from .token_sharing import delete_if_unchanged, refresh_lock

__all__ = ["Binding", "Bound", "Entry", "Identity", "known_identity"]


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
    method: TokenEndpointAuthMethod
    client_secret: str | None = field(default=None, repr=False)
    private_key_pem: str | bytes | None = field(default=None, repr=False)
    signing_algorithm: str = "ES256"

    def authentication(self, *, now: float) -> ClientAuthentication:
        """The client authentication of one token request (a fresh assertion for ``private_key_jwt``)."""
        assertion = None
        if self.method == "private_key_jwt":
            assert self.private_key_pem is not None
            assertion = client_assertion(
                client_id=self.client_id,
                audience=self.issuer,
                private_key_pem=self.private_key_pem,
                now=now,
                jti=new_jti(),
                algorithm=self.signing_algorithm,
            )
        return ClientAuthentication(
            client_id=self.client_id, method=self.method, client_secret=self.client_secret, client_assertion=assertion
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Bound:
    """What the held tokens are bound to; a flow that grants tokens replaces it whole.

    Attributes:
        metadata: the bound authorization server's metadata, once discovered.
        resource_metadata: the protected resource metadata, once discovered (``None`` on the 2025-03-26 path).
        resource: the ``resource`` parameter, verbatim (RFC 8707).
        identity: the client's identity at the bound issuer.
        requested: the scopes requested for the held token (the base of a step-up union, SEP-2350).
    """

    metadata: AuthorizationServerMetadata | None = None
    resource_metadata: ProtectedResourceMetadata | None = None
    resource: str | None = None
    identity: Identity | None = None
    requested: tuple[str, ...] = ()


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
        bound: what the held tokens are bound to (:class:`Bound`).
        dpop_key: the client's DPoP key (RFC 9449), or ``None``.
        resource_nonce: the last ``DPoP-Nonce`` of the MCP server (RFC 9449 §9).
        on_change: called after every new token (a new authorization context empties the response cache).
        holder: whom the tokens belong to in store keys (``credential_holder`` of ``credential``).
    """

    def __init__(
        self,
        credential: Credential,
        *,
        mcp_url: str,
        pinned_modern: bool,
        store: TokenStore,
        on_change: Sequence[Callable[[], object]] = (),
    ) -> None:
        """Start with no tokens; ``dpop`` credentials get a fresh key."""
        self.credential = credential
        self.holder = credential_holder(credential)
        self.mcp_url = mcp_url
        self.pinned_modern = pinned_modern
        self.store = store
        self.tokens: TokenSet | None = None
        self.generation = 0
        self.bound = Bound()
        dpop = isinstance(credential, OAuth) and credential.dpop
        self.dpop_key: DPoPKey | None = DPoPKey.generate() if dpop else None
        self.resource_nonce: str | None = None
        self.on_change = tuple(on_change)
        self._issuer_nonces: dict[str, str] = {}
        self._stepped_up: set[tuple[str, frozenset[str]]] = set()

    def __repr__(self) -> str:
        return f"Binding({type(self.credential).__name__}, {self.mcp_url!r}, generation={self.generation})"

    @property
    def interactive(self) -> bool:
        """True for the authorization code grant (a user agent, PKCE, refresh tokens)."""
        return isinstance(self.credential, OAuth)

    # --- what the held tokens are bound to --------------------------------------------------------------

    @property
    def metadata(self) -> AuthorizationServerMetadata | None:
        """The bound authorization server's metadata (``bound.metadata``)."""
        return self.bound.metadata

    @property
    def resource_metadata(self) -> ProtectedResourceMetadata | None:
        """The protected resource metadata (``bound.resource_metadata``)."""
        return self.bound.resource_metadata

    @property
    def resource(self) -> str | None:
        """The ``resource`` parameter (``bound.resource``)."""
        return self.bound.resource

    @property
    def identity(self) -> Identity | None:
        """The client's identity at the bound issuer (``bound.identity``)."""
        return self.bound.identity

    @property
    def requested(self) -> tuple[str, ...]:
        """The scopes requested for the held token (``bound.requested``)."""
        return self.bound.requested

    # --- step-ups that did not suffice (specs/authorization.md, "A scope that never suffices") -----------

    def step_up_failed(self, issuer: str, scopes: tuple[str, ...]) -> None:
        """Remember that a step-up to ``scopes`` at ``issuer`` still drew a 403, for this connection."""
        self._stepped_up.add((issuer, frozenset(scopes)))

    def stepped_up(self, issuer: str, scopes: tuple[str, ...]) -> bool:
        """Whether a step-up to ``scopes`` at ``issuer`` already failed on this connection."""
        return (issuer, frozenset(scopes)) in self._stepped_up

    # --- DPoP nonces (RFC 9449 §8, §9) ----------------------------------------------------------------------

    def issuer_nonce(self, issuer: str) -> str | None:
        """The last ``DPoP-Nonce`` of the authorization server ``issuer``, if any."""
        return self._issuer_nonces.get(issuer)

    def keep_issuer_nonce(self, issuer: str, nonce: str) -> None:
        """Keep the ``DPoP-Nonce`` an authorization server answered, for its next proof."""
        self._issuer_nonces[issuer] = nonce

    def keep_resource_nonce(self, nonce: str) -> None:
        """Keep the ``DPoP-Nonce`` the MCP server answered, for the next proof sent to it."""
        self.resource_nonce = nonce

    # --- tokens -----------------------------------------------------------------------------------------------

    def load(self, tokens: TokenSet) -> None:
        """Hold tokens a store kept for this endpoint (nothing is written back); a new generation starts."""
        self.tokens = tokens
        self.generation += 1

    async def drop_tokens(self) -> None:
        """Forget the held tokens, here and in the store."""
        if self.tokens is not None:
            await self.forget(self.tokens)

    async def forget(self, tokens: TokenSet) -> None:
        """Forget ``tokens`` in the store, and here when they are the ones held."""
        if self.tokens is not None and self.tokens.issuer == tokens.issuer:
            self.tokens = None
        await self.store.delete(self.tokens_key(tokens.issuer, tokens.resource))

    def release(self, tokens: TokenSet) -> None:
        """Stop holding tokens of ``tokens``' issuer, as :meth:`forget` does, but leave the store to the caller."""
        if self.tokens is not None and self.tokens.issuer == tokens.issuer:
            self.tokens = None

    def adopt(self, tokens: TokenSet, bound: Bound | None = None) -> None:
        """Hold tokens another client already stored (nothing is written back); the ``on_change`` callbacks run.

        A new generation starts, as with :meth:`keep`.
        """
        if bound is not None:
            self.bound = bound
        self.tokens = tokens
        self.generation += 1
        for callback in self.on_change:
            callback()

    async def keep(self, tokens: TokenSet, bound: Bound | None = None) -> None:
        """Hold and store new tokens, bound to ``bound`` when given; the ``on_change`` callbacks run.

        A new generation starts: a request that used the older token resends with this one.
        """
        if bound is not None:
            self.bound = bound
        self.tokens = tokens
        self.generation += 1
        await self.store.set(self.tokens_key(tokens.issuer, tokens.resource), tokens.to_dict())
        pointer = {"issuer": tokens.issuer, "resource": tokens.resource}
        await self.store.set(binding_key(self.mcp_url, self.holder), pointer)
        for callback in self.on_change:
            callback()

    # --- the store, under this holder's keys ------------------------------------------------------------------

    def tokens_key(self, issuer: str, resource: str | None) -> str:
        """The store key of this holder's tokens from ``issuer`` for ``resource``."""
        return tokens_key(issuer, resource, self.holder)

    def registration_key(self, issuer: str) -> str:
        """The store key of this holder's registration with ``issuer``."""
        return registration_key(issuer, self.holder)

    async def stored(self) -> TokenSet | None:
        """The tokens the store keeps for this holder and endpoint (from ``mcpfsm login``, or another process).

        The issuer and resource this holder last authorized the endpoint with, then that pair's tokens: never
        a token of another authorization server or resource (RFC 8707; SEP-2352), nor of another holder. An
        interactive login also takes over what an earlier mcpfsm stored for the endpoint without a holder.
        """
        record = await self.store.get(binding_key(self.mcp_url, self.holder))
        if record is None:
            return await self._take_legacy() if isinstance(self.credential, OAuth) else None
        issuer, resource = record.get("issuer"), record.get("resource")
        if not isinstance(issuer, str) or not (resource is None or isinstance(resource, str)):
            return None
        stored = await self.store.get(self.tokens_key(issuer, resource))
        return TokenSet.from_dict(stored) if stored is not None else None

    async def _take_legacy(self) -> TokenSet | None:
        # Tokens an earlier mcpfsm kept under (issuer, resource) alone: moved under this holder's keys, under the
        # store's lock on the old key, so that exactly one holder ever takes them (docs/stores.md).
        old_binding = legacy_binding_key(self.mcp_url)
        pointer = await self.store.get(old_binding)
        if pointer is None:
            return None
        issuer, resource = pointer.get("issuer"), pointer.get("resource")
        if not isinstance(issuer, str) or not (resource is None or isinstance(resource, str)):
            return None
        old_tokens = legacy_tokens_key(issuer, resource)
        async with refresh_lock(self.store, old_tokens):
            record = await self.store.get(old_tokens)
            tokens = TokenSet.from_dict(record) if record is not None else None
            if record is None or tokens is None or not await delete_if_unchanged(self.store, old_tokens, record):
                return None
            await self.store.set(self.tokens_key(issuer, resource), record)
            await self.store.set(binding_key(self.mcp_url, self.holder), {"issuer": issuer, "resource": resource})
            await delete_if_unchanged(self.store, old_binding, pointer)
        # The registration the tokens were granted to comes with them: a refresh presents its client id.
        await self.registration(issuer)
        return tokens

    async def registration(self, issuer: str) -> ClientRegistration | None:
        """This holder's registration with ``issuer`` (RFC 7591), or ``None``.

        A registration an earlier mcpfsm stored for the issuer without a holder is moved under this holder's
        key by the first ``OAuth`` client that looks for one (only ``OAuth`` clients register).
        """
        record = await self.store.get(self.registration_key(issuer))
        if record is None and isinstance(self.credential, OAuth):
            old = legacy_registration_key(issuer)
            record = await self.store.get(old)
            if record is not None:
                if not await delete_if_unchanged(self.store, old, record):
                    return None
                await self.store.set(self.registration_key(issuer), record)
        registration = ClientRegistration.from_dict(record) if record is not None else None
        return registration if registration is not None and registration.issuer == issuer else None


async def known_identity(binding: Binding, metadata: AuthorizationServerMetadata) -> Identity | None:
    """The client's identity at ``metadata``'s issuer without registering anew; ``None`` when none is known.

    Credentials that name their client (client credentials, JWT bearer, enterprise-managed, a pre-registered
    or a Client ID Metadata Document client) give it at once; otherwise a registration stored for this issuer
    (RFC 7591) does.

    Raises:
        AuthorizationError: the only credentials configured belong to another issuer (SEP-2352).
    """
    credential = binding.credential
    issuer = metadata.issuer
    state = State.registering
    named = credential.issuer if isinstance(credential, ClientCredentials | JwtBearer | EnterpriseManaged) else None
    if named is not None and named != issuer:
        raise AuthorizationError(f"the client credentials belong to {named!r}, not to {issuer!r}", state=state)
    if isinstance(credential, ClientCredentials):
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
        method = pre_registered_auth_method(metadata, has_secret=True)
        return Identity(
            issuer=issuer, client_id=credential.client_id, method=method, client_secret=credential.client_secret
        )
    pre_registered: tuple[PreRegisteredClient, ...] = ()
    if credential.client_id is not None and credential.client_issuer is not None:
        pre_registered = (
            PreRegisteredClient(
                issuer=credential.client_issuer,
                client_id=credential.client_id,
                client_secret=credential.client_secret,
                token_endpoint_auth_method=credential.token_endpoint_auth_method,
            ),
        )
    how = choose_client_identification(
        metadata, pre_registered=pre_registered, client_metadata_url=credential.client_metadata_url
    )
    if how is ClientIdentification.pre_registered:
        assert credential.client_id is not None
        method = pre_registered_auth_method(
            metadata,
            has_secret=credential.client_secret is not None,
            configured=credential.token_endpoint_auth_method,
        )
        return Identity(
            issuer=issuer, client_id=credential.client_id, method=method, client_secret=credential.client_secret
        )
    if how is ClientIdentification.client_metadata_document:
        assert credential.client_metadata_url is not None
        return Identity(issuer=issuer, client_id=credential.client_metadata_url, method="none")
    registration = await binding.registration(issuer)
    if registration is None:
        return None
    return Identity(
        issuer=issuer,
        client_id=registration.client_id,
        method=registration.token_endpoint_auth_method,
        client_secret=registration.client_secret,
    )
