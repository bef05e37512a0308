"""DPoP: sender-constrained tokens (RFC 9449; SEP-1932)."""

from __future__ import annotations

import hashlib
import re
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from ..errors import AuthorizationError
from ._steps import DISCOVERING_ISSUER
from .answers import _json_object, _oauth_error
from .authorization_request import _b64url
from .challenges import ResourceChallenge, read_resource_challenge
from .issuer import AuthorizationServerMetadata
from .resource import ProtectedResourceMetadata

if typing.TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import ec

__all__ = [
    "USE_DPOP_NONCE",
    "DPoPKey",
    "access_token_hash",
    "dpop_htu",
    "dpop_proof",
    "dpop_signing_algorithm",
    "resource_nonce",
    "resource_nonce_challenge",
    "token_endpoint_nonce_challenge",
]


USE_DPOP_NONCE: Final = "use_dpop_nonce"
"""The error a server answers when a DPoP proof must carry its nonce (RFC 9449 §8, §9)."""

_NONCE: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class DPoPKey:
    """The client's DPoP key: an EC P-256 private key, signing ES256 proofs (RFC 9449 §4.2).

    Raises:
        ValueError: when the key is not on P-256.
    """

    private_key: ec.EllipticCurvePrivateKey = field(repr=False)

    def __post_init__(self) -> None:
        from cryptography.hazmat.primitives.asymmetric import ec

        if not isinstance(self.private_key.curve, ec.SECP256R1):
            raise ValueError("a DPoP key for ES256 is on the P-256 curve")

    @classmethod
    def generate(cls) -> DPoPKey:
        """Draw a fresh P-256 key."""
        from cryptography.hazmat.primitives.asymmetric import ec

        return cls(private_key=ec.generate_private_key(ec.SECP256R1()))

    @classmethod
    def from_pem(cls, pem: str | bytes) -> DPoPKey:
        """Load a PKCS#8 PEM private key (unencrypted).

        Raises:
            ValueError: when the PEM is not an unencrypted P-256 private key.
        """
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        data = pem.encode("ascii") if isinstance(pem, str) else pem
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise ValueError("the DPoP key is not an unencrypted PEM private key") from exc
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("a DPoP key for ES256 is on the P-256 curve")
        return cls(private_key=key)

    @property
    def public_jwk(self) -> dict[str, str]:
        """The public key as a JWK (RFC 7517, RFC 7518 §6.2.1): ``kty``, ``crv``, ``x``, ``y`` only."""
        import jwt

        jwk = jwt.algorithms.ECAlgorithm.to_jwk(self.private_key.public_key(), as_dict=True)
        return {name: str(jwk[name]) for name in ("kty", "crv", "x", "y")}


def dpop_htu(url: str) -> str:
    """Return the ``htu`` of a request to ``url``: the URL without query and fragment (RFC 9449 §4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def access_token_hash(access_token: str) -> str:
    """Return ``ath``: unpadded base64url of SHA-256 of the ASCII access token (RFC 9449 §4.2)."""
    return _b64url(hashlib.sha256(access_token.encode("ascii")).digest())


def dpop_proof(
    key: DPoPKey,
    *,
    method: str,
    url: str,
    now: float,
    jti: str,
    nonce: str | None = None,
    access_token: str | None = None,
) -> str:
    """Sign a DPoP proof JWT (RFC 9449 §4.2).

    Header ``typ: dpop+jwt``, ``alg: ES256``, ``jwk`` = the public key; claims ``jti``, ``htm``, ``htu`` (no
    query or fragment), ``iat``, ``nonce`` when the server supplied one, and ``ath`` when presenting
    ``access_token`` to a resource (RFC 9449 §7.1).

    Args:
        key: the client's DPoP key.
        method: the HTTP method of the request.
        url: the request URL.
        now: the current time (seconds since the epoch).
        jti: a fresh value from :func:`new_jti`.
        nonce: the last ``DPoP-Nonce`` of this server, if any.
        access_token: the access token the request presents, if any.

    Returns:
        The compact JWT for the ``DPoP`` header.
    """
    claims: dict[str, Any] = {"jti": jti, "htm": method.upper(), "htu": dpop_htu(url), "iat": int(now)}
    if nonce is not None:
        claims["nonce"] = nonce
    if access_token is not None:
        claims["ath"] = access_token_hash(access_token)
    import jwt

    return jwt.encode(claims, key.private_key, algorithm="ES256", headers={"typ": "dpop+jwt", "jwk": key.public_jwk})


def dpop_signing_algorithm(
    metadata: AuthorizationServerMetadata, resource_metadata: ProtectedResourceMetadata | None = None
) -> str:
    """Return ``ES256`` when the servers that list DPoP algorithms accept it (RFC 9449 §5.1, RFC 9728 §2).

    Raises:
        AuthorizationError: when the authorization server or the resource lists algorithms without ES256.
    """
    for listed in (
        metadata.dpop_signing_alg_values_supported,
        None if resource_metadata is None else resource_metadata.dpop_signing_alg_values_supported,
    ):
        if listed is not None and "ES256" not in listed:
            raise AuthorizationError(
                f"DPoP signing algorithms {list(listed)!r} do not include ES256",
                state=DISCOVERING_ISSUER,
            )
    return "ES256"


def _nonce(value: str | None) -> str | None:
    return value if value is not None and _NONCE.fullmatch(value) else None


def token_endpoint_nonce_challenge(status: int, body: bytes, dpop_nonce: str | None) -> str | None:
    """Tell whether a token endpoint asks for a retry with its nonce (RFC 9449 §8).

    Args:
        status: the HTTP status of the token request.
        body: the response body.
        dpop_nonce: the ``DPoP-Nonce`` response header, if any.

    Returns:
        The nonce to put in a fresh proof for one retry, or None when the answer is not that challenge.
    """
    if status != 400:
        return None
    error, _ = _oauth_error(_json_object(body))
    return _nonce(dpop_nonce) if error == USE_DPOP_NONCE else None


def resource_nonce_challenge(status: int, www_authenticate: str | Iterable[str], dpop_nonce: str | None) -> str | None:
    """Tell whether a resource asks for a retry with its nonce (RFC 9449 §9).

    Args:
        status: the HTTP status of the resource request.
        www_authenticate: the ``WWW-Authenticate`` field values.
        dpop_nonce: the ``DPoP-Nonce`` response header, if any.

    Returns:
        The nonce to put in a fresh proof for one retry, or None when the answer is not that challenge.
    """
    return resource_nonce(read_resource_challenge(status, www_authenticate, dpop_nonce))


def resource_nonce(challenged: ResourceChallenge) -> str | None:
    """The nonce a resource's already-parsed challenge asks a fresh proof to carry (RFC 9449 §9), or None."""
    if challenged.status != 401:
        return None
    challenge = challenged.dpop
    return _nonce(challenged.dpop_nonce) if challenge is not None and challenge.error == USE_DPOP_NONCE else None
