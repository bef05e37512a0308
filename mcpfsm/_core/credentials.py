"""What ``Client.http(url, auth=...)`` accepts: one client's credentials, as frozen values (docs/authorization.md).

- :class:`OAuth` — the authorization code grant with PKCE for an interactive user (MCP "Authorization");
- :class:`ClientCredentials` — the ``client_credentials`` grant for a headless agent (the MCP extension
  ``io.modelcontextprotocol/oauth-client-credentials``, SEP-1046), with a secret or a private key;
- :class:`JwtBearer` — a workload's own JWT presented with the RFC 7523 ``jwt-bearer`` grant (SEP-1933);
- :class:`EnterpriseManaged` — SEP-990: an RFC 8693 token exchange at the enterprise identity provider for an
  ID-JAG, then the ``jwt-bearer`` grant at the MCP server's authorization server;
- a plain ``str``: a static bearer token, sent as is (no flow).

And :class:`TokenStore`, the protocol of where registrations and tokens are kept between flows (and, with a
file store, between processes), with the keys it is addressed by. Every key names the credential it belongs to
by :func:`credential_holder` (its kind and a digest of its public identity), so that credentials sharing a
store never use each other's tokens.

Every value validates itself when built (a ``ValueError`` names what is wrong) and hides its secrets from
``repr``. Pure: no I/O; imports neither trio, httpx nor loguru.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

from .oauth.identification import TokenEndpointAuthMethod, check_client_metadata_url

__all__ = [
    "DEFAULT_REDIRECT_URI",
    "Authorize",
    "ClientCredentials",
    "Credential",
    "EnterpriseManaged",
    "JwtBearer",
    "OAuth",
    "Store",
    "TokenStore",
    "binding_key",
    "credential_holder",
    "legacy_binding_key",
    "legacy_registration_key",
    "legacy_tokens_key",
    "registration_key",
    "scope_tuple",
    "tokens_key",
]

DEFAULT_REDIRECT_URI: Final = "http://127.0.0.1:27418/callback"
"""Where the default ``authorize`` listens for the browser's redirect (RFC 8252 §7.3: a loopback IP literal).

The port is fixed because registration names the redirect URI, and it lies below every common ephemeral
range (Linux 32768 to 60999, IANA and Windows 49152 to 65535): an outgoing connection's local port, or a
server listening on port 0, can never be holding it when the login starts.
"""

Authorize = Callable[[str], Awaitable[str]]
"""``await authorize(authorization_url) -> redirect_url``: send the user agent to the URL and return the URL it
was sent back to (carrying ``code``, ``state``, ``iss``)."""

_AUTH_METHODS: Final = ("client_secret_basic", "client_secret_post", "none", "private_key_jwt")
_SIGNING_ALGORITHMS: Final = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA")


class TokenStore(Protocol):
    """Where a client keeps registrations and tokens (docs/authorization.md).

    Keys are strings made by :func:`registration_key` (a registration belongs to one issuer and one holder),
    :func:`tokens_key` (tokens belong to an issuer, a resource and one holder) and :func:`binding_key` (which
    issuer and resource a holder last authorized an MCP URL with); the holder is :func:`credential_holder`.
    Values are JSON-ready dicts that hold secrets, so a store that persists them must protect them
    (``FileTokenStore`` writes 0600 files).
    """

    async def get(self, key: str) -> dict[str, Any] | None:
        """The value stored under ``key``, or ``None``."""
        ...

    async def set(self, key: str, value: Mapping[str, Any]) -> None:
        """Store ``value`` under ``key``, replacing what was there."""
        ...

    async def delete(self, key: str) -> None:
        """Forget ``key``; nothing happens when it is absent."""
        ...


class Store(TokenStore, Protocol):
    """Where everything that outlives a call is kept, shareable between processes (docs/stores.md).

    A :class:`TokenStore` (``get``/``set``/``delete`` of JSON-ready dicts) plus the two operations that make
    it safe to share between processes: ``MemoryStore`` (one process), ``FileStore`` (one machine) and
    ``RedisStore`` (many machines) implement it. Tokens and registrations, task records and shared cache
    entries live in it.
    """

    def lock(self, key: str, ttl: float, *, wait: float | None = None) -> AbstractAsyncContextManager[None]:
        """An async context manager that excludes every other holder of ``key`` on this store.

        ``ttl`` and ``wait`` are in seconds. It waits at most ``wait`` seconds for the lock (``None``: until it
        holds it) and then raises :class:`~mcpfsm.StoreLockTimeout`. The bound lives inside the store, so that
        no caller wraps the lock in a cancel scope of its own that could end while the lock is held. A holder
        that dies stops excluding others at most ``ttl`` after it took the lock.
        """
        ...

    async def compare_and_delete(self, key: str, expected: Mapping[str, Any]) -> bool:
        """Delete ``key`` if and only if its value equals ``expected`` as a JSON value; return whether it did."""
        ...


def registration_key(issuer: str, holder: str) -> str:
    """The store key of the client registration ``holder`` made with ``issuer`` (RFC 7591; SEP-2352: per issuer).

    ``holder`` is :func:`credential_holder` of the credential that registered.
    """
    return f"registration {issuer} {holder}"


def tokens_key(issuer: str, resource: str | None, holder: str) -> str:
    """The store key of the tokens ``issuer`` granted ``holder`` for ``resource`` (RFC 8707); ``-``: no resource."""
    return f"tokens {issuer} {resource or '-'} {holder}"


def binding_key(mcp_url: str, holder: str) -> str:
    """The store key of the issuer and resource ``holder`` last authorized the MCP endpoint ``mcp_url`` with."""
    return f"binding {mcp_url} {holder}"


def legacy_registration_key(issuer: str) -> str:
    """The key of a registration an earlier mcpfsm stored, before keys named their holder."""
    return f"registration {issuer}"


def legacy_tokens_key(issuer: str, resource: str | None) -> str:
    """The key of tokens an earlier mcpfsm stored, before keys named their holder."""
    return f"tokens {issuer} {resource or ''}".rstrip()


def legacy_binding_key(mcp_url: str) -> str:
    """The key of a binding an earlier mcpfsm stored, before keys named their holder."""
    return f"binding {mcp_url}"


def credential_holder(credential: Credential) -> str:
    """Whom ``credential``'s registrations and tokens belong to, as store keys name it: ``KIND:DIGEST``.

    ``KIND`` is ``oauth``, ``client-credentials``, ``jwt-bearer`` or ``enterprise``; ``DIGEST`` is 32 hex
    digits of a SHA-256 over the credential's public identity, never over a secret:

    - :class:`OAuth`: the pre-registered ``client_id`` and ``client_issuer`` and the ``client_metadata_url``
      (all ``None`` for a client that registers itself). Who logs in is only known after the login, so two
      people who log in with the same settings on one store share its tokens: give each user a store.
    - :class:`ClientCredentials`: the client id and, with ``private_key_pem``, the key's id (a SHA-256 of its
      public key); the secret never counts.
    - :class:`JwtBearer`: the client id and the issuer and subject (``iss``, ``sub``) of the assertion when it
      is a JWT; a callable assertion stands for one workload, its client id.
    - :class:`EnterpriseManaged`: the client ids, the IdP's token endpoint, and the issuer and subject of the
      user's ID token. An ID token that names no subject gets a fresh random holder: nothing is shared.

    A static bearer token (``auth="..."``) runs no flow and stores nothing, so it has no holder.
    """
    parts: tuple[str | None, ...]
    if isinstance(credential, OAuth):
        kind = "oauth"
        parts = (credential.client_issuer, credential.client_id, credential.client_metadata_url)
    elif isinstance(credential, ClientCredentials):
        kind = "client-credentials"
        key = None if credential.private_key_pem is None else _public_key_id(credential.private_key_pem)
        parts = (credential.client_id, key)
    elif isinstance(credential, JwtBearer):
        kind = "jwt-bearer"
        subject = _jwt_subject(credential.assertion) if isinstance(credential.assertion, str) else None
        parts = (credential.client_id, *(subject or (None, None)))
    else:
        kind = "enterprise"
        subject = _jwt_subject(credential.idp_id_token)
        if subject is None:
            return f"{kind}:{secrets.token_hex(16)}"
        parts = (credential.idp_token_endpoint, credential.idp_client_id, credential.client_id, *subject)
    digest = hashlib.sha256(json.dumps([kind, *parts]).encode("utf-8")).hexdigest()
    return f"{kind}:{digest[:32]}"


def _public_key_id(private_key_pem: str | bytes) -> str:
    # The key's public half (SubjectPublicKeyInfo, DER), hashed: a public identifier of the key.
    from cryptography.hazmat.primitives import serialization  # with PyJWT's crypto extra, as the signing

    pem = private_key_pem.encode("ascii") if isinstance(private_key_pem, str) else private_key_pem
    public = serialization.load_pem_private_key(pem, password=None).public_key()
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def _jwt_subject(token: str) -> tuple[str, str] | None:
    # The issuer and subject a JWT names (RFC 7519 §4.1.1, §4.1.2), read without checking its signature: only to
    # tell holders apart. Its payload is all that is read; the token is never kept.
    pieces = token.split(".")
    if len(pieces) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(pieces[1] + "=" * (-len(pieces[1]) % 4)))
    except (ValueError, RecursionError):
        return None
    if not isinstance(claims, dict):
        return None
    issuer, subject = claims.get("iss"), claims.get("sub")
    if not isinstance(subject, str) or not subject:
        return None
    return (issuer if isinstance(issuer, str) else "", subject)


def scope_tuple(scope: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """Normalise a ``scope=`` argument: a space-separated string or a sequence, duplicates dropped; ``None`` stays.

    Raises:
        ValueError: a scope is empty or contains a space, or a sequence holds something other than strings.
    """
    if scope is None:
        return None
    items = scope.split() if isinstance(scope, str) else list(scope)
    if not all(isinstance(item, str) and item and " " not in item for item in items):
        raise ValueError(f"scope must be a space-separated string or a sequence of scope tokens, got {scope!r}")
    return tuple(dict.fromkeys(items))


def _check_http_url(name: str, url: str) -> None:
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        host = None
    if parts.scheme not in ("http", "https") or not host:
        raise ValueError(f"{name} must be an absolute http(s) URL, got {url!r}")


def _check_signing_key(private_key_pem: str | bytes, algorithm: str) -> None:
    if algorithm not in _SIGNING_ALGORITHMS:
        raise ValueError(f"signing_algorithm must be one of {list(_SIGNING_ALGORITHMS)}, got {algorithm!r}")
    import jwt  # here, not at module level: `import mcpfsm` does not import PyJWT

    try:
        jwt.encode({"probe": True}, private_key_pem, algorithm=algorithm)
    except (ValueError, TypeError, jwt.exceptions.PyJWTError) as exc:
        raise ValueError(f"private_key_pem is not a private key that can sign {algorithm}") from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class OAuth:
    """The authorization code grant with PKCE, for a user who logs in through a browser (MCP "Authorization").

    Attributes:
        redirect_uri: where the authorization server sends the browser back; the default ``authorize``
            listens there (a loopback URL, RFC 8252 §7.3).
        authorize: ``await authorize(url) -> redirect_url``; ``None`` opens the system browser and listens on
            ``redirect_uri`` (``mcpfsm.LoopbackAuthorizer``).
        client_id: a pre-registered client id (MCP "Client Registration": pre-registration comes first).
        client_secret: its secret, if it has one.
        client_issuer: the issuer the pre-registered client belongs to; required with ``client_id``, because
            credentials only ever go to the authorization server they were issued by (SEP-2352).
        token_endpoint_auth_method: how the pre-registered client authenticates; ``None`` chooses from the
            server's metadata.
        client_metadata_url: the https URL of a Client ID Metadata Document the application hosts (SEP-991);
            used as the client id where a server supports it, before dynamic registration.
        client_name: the ``client_name`` of a dynamic registration.
        scope: the scopes to request instead of those the server challenges with or lists.
        offline_access: ask for ``offline_access`` (a refresh token) where the server lists it (SEP-2207).
        store: where registrations and tokens are kept; ``None`` keeps them in memory.
        dpop: bind tokens to a key of this client with DPoP proofs (RFC 9449, SEP-1932).

    Raises:
        ValueError: an argument is malformed, or ``client_id`` comes without ``client_issuer``.
    """

    redirect_uri: str = DEFAULT_REDIRECT_URI
    authorize: Authorize | None = field(default=None, repr=False)
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    client_issuer: str | None = None
    token_endpoint_auth_method: TokenEndpointAuthMethod | None = None
    client_metadata_url: str | None = None
    client_name: str = "mcpfsm"
    scope: str | Sequence[str] | None = None
    offline_access: bool = True
    store: TokenStore | None = field(default=None, repr=False)
    dpop: bool = False

    def __post_init__(self) -> None:
        _check_http_url("redirect_uri", self.redirect_uri)
        if self.client_secret is not None and self.client_id is None:
            raise ValueError("client_secret needs client_id")
        if self.client_id is not None and self.client_issuer is None:
            raise ValueError(
                "client_id needs client_issuer: pre-registered credentials are only sent to the authorization"
                " server that issued them"
            )
        if self.client_issuer is not None:
            _check_http_url("client_issuer", self.client_issuer)
        if self.token_endpoint_auth_method is not None:
            if self.token_endpoint_auth_method not in _AUTH_METHODS[:3]:
                raise ValueError(
                    "token_endpoint_auth_method must be client_secret_basic, client_secret_post or none,"
                    f" got {self.token_endpoint_auth_method!r}"
                )
            if self.token_endpoint_auth_method != "none" and not self.client_secret:
                raise ValueError(f"token_endpoint_auth_method {self.token_endpoint_auth_method} needs client_secret")
        if self.client_metadata_url is not None:
            check_client_metadata_url(self.client_metadata_url)
        scope_tuple(self.scope)

    @property
    def scopes(self) -> tuple[str, ...] | None:
        """``scope`` as a tuple of scope tokens, or ``None`` when the server's choice applies."""
        return scope_tuple(self.scope)


@dataclass(frozen=True, slots=True)
class ClientCredentials:
    """The ``client_credentials`` grant for a headless agent (SEP-1046; OAuth 2.1 §4.2).

    With ``client_secret`` the client authenticates with ``client_secret_basic``; with ``private_key_pem`` it
    signs a fresh ``private_key_jwt`` assertion per token request (RFC 7523 §2.2).

    Attributes:
        client_id: the client id the authorization server knows.
        client_secret: the secret (``client_secret_basic``), or ``None``.
        private_key_pem: a PEM private key (``private_key_jwt``), or ``None``.
        signing_algorithm: the JWS algorithm of the assertion (``ES256`` by default).
        scope: the scopes to request; ``None`` requests what the server challenges with or lists.
        store: where tokens are kept; ``None`` keeps them in memory.
        issuer: the issuer the credentials belong to: they are only ever sent there (SEP-2352). ``None``: only
            to an authorization server on the MCP server's own host (any port); another one is an
            ``AuthorizationError`` that names the ``issuer=`` to pass.

    Raises:
        ValueError: not exactly one of ``client_secret`` and ``private_key_pem``, or a key that cannot sign.
    """

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    private_key_pem: str | bytes | None = field(default=None, repr=False)
    signing_algorithm: str = "ES256"
    scope: str | Sequence[str] | None = None
    store: TokenStore | None = field(default=None, repr=False, kw_only=True)
    issuer: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.client_id, str) or not self.client_id:
            raise ValueError("client_id must be a non-empty string")
        if (self.client_secret is None) == (self.private_key_pem is None):
            raise ValueError("give exactly one of client_secret and private_key_pem")
        if self.private_key_pem is not None:
            _check_signing_key(self.private_key_pem, self.signing_algorithm)
        if self.issuer is not None:
            _check_http_url("issuer", self.issuer)
        scope_tuple(self.scope)

    @property
    def scopes(self) -> tuple[str, ...] | None:
        """``scope`` as a tuple of scope tokens, or ``None``."""
        return scope_tuple(self.scope)


@dataclass(frozen=True, slots=True)
class JwtBearer:
    """A workload identity: the workload's own JWT, presented with the RFC 7523 ``jwt-bearer`` grant (SEP-1933).

    Attributes:
        client_id: the client id the authorization server knows the workload by (public client).
        assertion: the JWT (issued to the workload for this authorization server), or an async callable
            returning a fresh one for each token request (workload tokens rotate).
        scope: the scopes to request; ``None`` requests what the server challenges with or lists.
        store: where tokens are kept; ``None`` keeps them in memory.
        issuer: the authorization server the assertion is for: it is only ever sent there. ``None``: only to
            an authorization server on the MCP server's own host (any port); another one is an
            ``AuthorizationError`` that names the ``issuer=`` to pass.

    Raises:
        ValueError: an empty ``client_id`` or ``assertion``, or an ``issuer`` that is not an http(s) URL.
    """

    client_id: str
    assertion: str | Callable[[], Awaitable[str]] = field(repr=False)
    scope: str | Sequence[str] | None = None
    store: TokenStore | None = field(default=None, repr=False, kw_only=True)
    issuer: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.client_id, str) or not self.client_id:
            raise ValueError("client_id must be a non-empty string")
        if not callable(self.assertion) and (not isinstance(self.assertion, str) or not self.assertion):
            raise ValueError("assertion must be a JWT or an async callable returning one")
        if self.issuer is not None:
            _check_http_url("issuer", self.issuer)
        scope_tuple(self.scope)

    @property
    def scopes(self) -> tuple[str, ...] | None:
        """``scope`` as a tuple of scope tokens, or ``None``."""
        return scope_tuple(self.scope)


@dataclass(frozen=True, slots=True)
class EnterpriseManaged:
    """Enterprise-managed authorization (SEP-990): the enterprise IdP vouches for the user.

    The client exchanges the user's ID token at the IdP's token endpoint for an Identity Assertion JWT
    Authorization Grant (RFC 8693), then presents it with the ``jwt-bearer`` grant at the MCP server's
    authorization server, authenticating with ``client_id`` and ``client_secret``.

    Attributes:
        client_id: the client id at the MCP server's authorization server.
        client_secret: its secret.
        idp_client_id: the client id at the IdP.
        idp_id_token: the user's ID token from the IdP.
        idp_token_endpoint: the IdP's token endpoint.
        scope: the scopes to request; ``None`` requests what the server challenges with or lists.
        store: where tokens are kept; ``None`` keeps them in memory.
        issuer: the MCP server's authorization server, the only one the secret and the ID-JAG go to. ``None``:
            only one on the MCP server's own host (any port); another one is an ``AuthorizationError`` that
            names the ``issuer=`` to pass.

    Raises:
        ValueError: an empty field, or an ``idp_token_endpoint`` or ``issuer`` that is not an http(s) URL.
    """

    client_id: str
    client_secret: str = field(repr=False)
    idp_client_id: str
    idp_id_token: str = field(repr=False)
    idp_token_endpoint: str
    scope: str | Sequence[str] | None = None
    store: TokenStore | None = field(default=None, repr=False, kw_only=True)
    issuer: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        for name in ("client_id", "client_secret", "idp_client_id", "idp_id_token", "idp_token_endpoint"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name} must be a non-empty string")
        _check_http_url("idp_token_endpoint", self.idp_token_endpoint)
        if self.issuer is not None:
            _check_http_url("issuer", self.issuer)
        scope_tuple(self.scope)

    @property
    def scopes(self) -> tuple[str, ...] | None:
        """``scope`` as a tuple of scope tokens, or ``None``."""
        return scope_tuple(self.scope)


Credential = OAuth | ClientCredentials | JwtBearer | EnterpriseManaged
"""The credentials that run an authorization flow (a plain ``str`` token runs none)."""
