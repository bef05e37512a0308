"""Client identification (MCP 2026-07-28 "Client Registration"; RFC 7591; SEP-991; SEP-837; SEP-2352)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Literal, cast
from urllib.parse import urlsplit

from ..errors import AuthorizationError
from ._steps import REGISTERING
from .answers import _json_object, _oauth_error
from .issuer import AuthorizationServerMetadata

__all__ = [
    "ClientAuthentication",
    "ClientIdentification",
    "ClientRegistration",
    "PreRegisteredClient",
    "TokenEndpointAuthMethod",
    "check_client_metadata_url",
    "choose_client_identification",
    "client_metadata_document",
    "pre_registered_auth_method",
    "read_registration_response",
    "registration_auth_method",
    "registration_request",
]


TokenEndpointAuthMethod = Literal["client_secret_basic", "client_secret_post", "none", "private_key_jwt"]
"""The token endpoint authentication methods this client speaks (RFC 7591 §2, RFC 7523 §2.2)."""

_AUTH_METHODS: Final[frozenset[str]] = frozenset(
    ("client_secret_basic", "client_secret_post", "none", "private_key_jwt")
)


class ClientIdentification(StrEnum):
    """How the client identifies itself to an authorization server, in order of preference."""

    pre_registered = "pre_registered"
    client_metadata_document = "client_metadata_document"
    dynamic_registration = "dynamic_registration"


@dataclass(frozen=True, slots=True, kw_only=True)
class PreRegisteredClient:
    """Credentials registered out of band with one authorization server; they only ever go to ``issuer``.

    Attributes:
        issuer: the issuer the credentials belong to.
        client_id: the client identifier.
        client_secret: the client secret, or None for a public client.
        token_endpoint_auth_method: the configured method, or None to choose from the metadata.
    """

    issuer: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth_method: TokenEndpointAuthMethod | None = None


def check_client_metadata_url(url: str) -> None:
    """Refuse a Client ID Metadata Document URL that is not https with a path other than ``/``.

    Raises:
        ValueError: when the URL cannot be a client id (draft-ietf-oauth-client-id-metadata-document §3).
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        host = None
    if host is None or parts.scheme != "https" or parts.path in ("", "/") or parts.fragment:
        raise ValueError(f"client_metadata_url {url!r} must be an https URL with a path")


def choose_client_identification(
    metadata: AuthorizationServerMetadata,
    *,
    pre_registered: Sequence[PreRegisteredClient] = (),
    client_metadata_url: str | None = None,
) -> ClientIdentification:
    """Choose how to identify the client: pre-registered, then a metadata document, then registration.

    Args:
        metadata: the validated metadata of the chosen authorization server.
        pre_registered: every pre-registered credential configured, each bound to its issuer.
        client_metadata_url: the Client ID Metadata Document URL, if the application hosts one.

    Returns:
        The way to identify the client to ``metadata.issuer``.

    Raises:
        AuthorizationError: when credentials are configured only for other issuers (they are never sent to
            this one), or when the server offers neither a metadata document nor registration.
    """
    state = REGISTERING
    if any(client.issuer == metadata.issuer for client in pre_registered):
        return ClientIdentification.pre_registered
    if pre_registered:
        issuers = sorted({client.issuer for client in pre_registered})
        raise AuthorizationError(
            f"the pre-registered credentials belong to {issuers!r}, not to {metadata.issuer!r}", state=state
        )
    if metadata.client_id_metadata_document_supported and client_metadata_url is not None:
        return ClientIdentification.client_metadata_document
    if metadata.registration_endpoint is not None:
        return ClientIdentification.dynamic_registration
    raise AuthorizationError(
        f"{metadata.issuer!r} offers no client registration and no credentials are configured for it", state=state
    )


def pre_registered_auth_method(
    metadata: AuthorizationServerMetadata, *, has_secret: bool, configured: TokenEndpointAuthMethod | None = None
) -> TokenEndpointAuthMethod:
    """Choose the token endpoint authentication method for pre-registered credentials.

    The configured method wins; otherwise, from ``token_endpoint_auth_methods_supported`` (absent means
    ``["client_secret_basic"]``, RFC 8414 §2): with a secret ``client_secret_basic`` if listed, else
    ``client_secret_post``; without a secret ``none``.
    """
    if configured is not None:
        return configured
    if not has_secret:
        return "none"
    supported = metadata.token_endpoint_auth_methods_supported or ("client_secret_basic",)
    return "client_secret_basic" if "client_secret_basic" in supported else "client_secret_post"


def registration_auth_method(metadata: AuthorizationServerMetadata) -> TokenEndpointAuthMethod:
    """Choose the method a dynamic registration asks for: ``none`` if listed, else basic, else post."""
    supported = metadata.token_endpoint_auth_methods_supported or ("client_secret_basic",)
    if "none" in supported:
        return "none"
    return "client_secret_basic" if "client_secret_basic" in supported else "client_secret_post"


def registration_request(
    *,
    client_name: str,
    redirect_uris: Sequence[str],
    token_endpoint_auth_method: TokenEndpointAuthMethod,
    application_type: Literal["native", "web"] = "native",
) -> dict[str, Any]:
    """Build the JSON body of a dynamic client registration (RFC 7591 §2, §3.1).

    ``application_type`` is ``native`` for a client on the user's machine and ``web`` only for a remote
    browser application (OpenID Connect Registration §2; SEP-837).

    Returns:
        The registration metadata, ready to be sent as JSON.
    """
    return {
        "client_name": client_name,
        "redirect_uris": list(redirect_uris),
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": token_endpoint_auth_method,
        "application_type": application_type,
    }


def client_metadata_document(
    *, client_metadata_url: str, client_name: str, redirect_uris: Sequence[str]
) -> dict[str, Any]:
    """Build the Client ID Metadata Document an application hosts at ``client_metadata_url``.

    Raises:
        ValueError: when the URL cannot be a client id (see :func:`check_client_metadata_url`).
    """
    check_client_metadata_url(client_metadata_url)
    return {
        "client_id": client_metadata_url,
        "client_name": client_name,
        "redirect_uris": list(redirect_uris),
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientAuthentication:
    """How one token request authenticates the client (RFC 6749 §2.3.1, RFC 7523 §2.2, RFC 7591 §2).

    ``client_secret_basic`` and ``client_secret_post`` need ``client_secret``; ``private_key_jwt`` needs a
    fresh ``client_assertion`` (see :func:`client_assertion`); ``none`` sends the client id alone.

    Raises:
        ValueError: when the method lacks what it needs.
    """

    client_id: str
    method: TokenEndpointAuthMethod = "none"
    client_secret: str | None = field(default=None, repr=False)
    client_assertion: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.method not in _AUTH_METHODS:
            raise ValueError(f"unknown token endpoint auth method {self.method!r}")
        if self.method in ("client_secret_basic", "client_secret_post") and not self.client_secret:
            raise ValueError(f"{self.method} needs a client secret")
        if self.method == "private_key_jwt" and not self.client_assertion:
            raise ValueError("private_key_jwt needs a client assertion")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientRegistration:
    """A client registered with one authorization server (RFC 7591 §3.2.1); it never goes to another.

    Attributes:
        issuer: the issuer the registration belongs to.
        client_id: the issued client identifier.
        client_secret: the issued secret, or None.
        token_endpoint_auth_method: the method to use at the token endpoint.
    """

    issuer: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth_method: TokenEndpointAuthMethod = "none"

    def authentication(self) -> ClientAuthentication:
        """Return the client authentication for a token request with this registration."""
        return ClientAuthentication(
            client_id=self.client_id, method=self.token_endpoint_auth_method, client_secret=self.client_secret
        )

    def to_dict(self) -> dict[str, Any]:
        """The registration as a JSON-ready record, for a token store (it holds the secret)."""
        return {
            "issuer": self.issuer,
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "token_endpoint_auth_method": self.token_endpoint_auth_method,
        }

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> ClientRegistration | None:
        """Rebuild a registration from :meth:`to_dict` output; ``None`` for a record that is not one."""
        issuer, client_id = record.get("issuer"), record.get("client_id")
        secret, method = record.get("client_secret"), record.get("token_endpoint_auth_method")
        if not isinstance(issuer, str) or not isinstance(client_id, str) or not client_id:
            return None
        if method not in ("client_secret_basic", "client_secret_post", "none"):
            return None
        if not (secret is None or isinstance(secret, str)) or (method != "none" and not secret):
            return None
        return cls(
            issuer=issuer,
            client_id=client_id,
            client_secret=secret,
            token_endpoint_auth_method=cast(TokenEndpointAuthMethod, method),
        )


def read_registration_response(
    status: int, body: bytes, *, issuer: str, requested_method: TokenEndpointAuthMethod
) -> ClientRegistration:
    """Read a dynamic registration answer (RFC 7591 §3.2).

    The method is the one the server answers, else the one requested.

    Args:
        status: the HTTP status of the POST.
        body: the response body.
        issuer: the issuer the registration was made with.
        requested_method: the ``token_endpoint_auth_method`` sent.

    Returns:
        The registration.

    Raises:
        AuthorizationError: unless HTTP 200/201 with a JSON object holding a string ``client_id``; when the
            answered method is unknown or needs a secret the answer lacks.
    """
    state = REGISTERING
    document = _json_object(body)
    if status not in (200, 201):
        error, description = _oauth_error(document)
        raise AuthorizationError(
            f"the registration endpoint answered HTTP {status}", state=state, error=error, error_description=description
        )
    if document is None or not isinstance(document.get("client_id"), str) or not document["client_id"]:
        raise AuthorizationError("the registration answer has no client_id", state=state)
    method = document.get("token_endpoint_auth_method", requested_method)
    if method not in ("client_secret_basic", "client_secret_post", "none"):
        raise AuthorizationError(f"the registration answer assigns token endpoint auth method {method!r}", state=state)
    secret = document.get("client_secret")
    secret = secret if isinstance(secret, str) and secret else None
    if method != "none" and secret is None:
        raise AuthorizationError(f"the registration answer assigns {method} but no client_secret", state=state)
    return ClientRegistration(
        issuer=issuer,
        client_id=document["client_id"],
        client_secret=secret,
        token_endpoint_auth_method=cast(TokenEndpointAuthMethod, method),
    )
