"""What one client holds between authorization flows, and the values a flow starts from.

- :class:`Entry`: why a flow runs (the session layer's reason);
- :class:`Identity`: how the client identifies itself to one issuer;
- :class:`Bound`: what the held tokens are bound to (issuer metadata, resource, identity, scopes), one value
  replaced whole when a flow grants tokens;
- :func:`known_identity`: the client's identity at an issuer that needs no registration;
- :class:`Binding`: the client's held state (one per client): the tokens and their generation, the
  :class:`Bound` value, the DPoP key and nonces. The session layer (``mcpfsm._client.authorization``) and
  the flow (``mcpfsm._drivers.authorization``) change it only through its methods.

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
        await self.store.delete(tokens_key(tokens.issuer, tokens.resource))

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
        await self.store.set(tokens_key(tokens.issuer, tokens.resource), tokens.to_dict())
        await self.store.set(binding_key(self.mcp_url), {"issuer": tokens.issuer, "resource": tokens.resource})
        for callback in self.on_change:
            callback()


async def known_identity(
    credential: Credential, metadata: AuthorizationServerMetadata, store: TokenStore
) -> Identity | None:
    """The client's identity at ``metadata``'s issuer without registering anew; ``None`` when none is known.

    Credentials that name their client (client credentials, JWT bearer, enterprise-managed, a pre-registered
    or a Client ID Metadata Document client) give it at once; otherwise a registration stored for this issuer
    (RFC 7591) does.

    Raises:
        AuthorizationError: the only credentials configured belong to another issuer (SEP-2352).
    """
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
    record = await store.get(registration_key(issuer))
    registration = ClientRegistration.from_dict(record) if record is not None else None
    if registration is None or registration.issuer != issuer:
        return None
    return Identity(
        issuer=issuer,
        client_id=registration.client_id,
        method=registration.token_endpoint_auth_method,
        client_secret=registration.client_secret,
    )
