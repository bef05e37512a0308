"""Tokens: what the token endpoint grants and how its answer is read (RFC 6749 §5, RFC 8693 §2.2)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from ..errors import AuthorizationError
from ._steps import ASSERTING, EXCHANGING
from .answers import _json_object, _oauth_error, _string_tuple
from .challenges import _VISIBLE_ASCII, _ordered_unique
from .token_request import TOKEN_TYPE_ID_JAG

__all__ = [
    "ACCESS_TOKEN_REFRESH_MARGIN",
    "MAX_TOKEN_LIFETIME",
    "REFRESH_MARGIN_SHARE",
    "TokenSet",
    "read_token_exchange_response",
    "read_token_response",
]


ACCESS_TOKEN_REFRESH_MARGIN: Final = 60.0
"""Seconds before ``expires_at`` from which a held access token counts as expiring, at most."""

REFRESH_MARGIN_SHARE: Final = 0.1
"""The share of a token's lifetime its refresh margin takes when that is less than the 60 s: a token that lives
30 s is refreshed 3 s before it expires, not before every request (a margin as long as the lifetime would make
every request refresh first)."""

MAX_TOKEN_LIFETIME: Final = 365 * 24 * 3600
"""The longest ``expires_in`` taken as given, in seconds (a year); a larger one counts as this.

A server's number goes into clock arithmetic: an integer of hundreds of digits is no float. A year is far
beyond the lifetime of a real access token, so the clamp shortens none in practice."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenSet:
    """Tokens granted for one (issuer, resource).

    Attributes:
        access_token: the access token.
        token_type: ``Bearer``, or ``DPoP`` for a token bound to the client's DPoP key.
        refresh_token: the refresh token, or None.
        expires_at: when the access token expires (absolute, in the clock the driver passed: seconds since the
            epoch, so that another process reading a shared store agrees), or None when unknown.
        issued_at: when it was granted, in the same clock, or None when unknown (a record stored before this
            field existed); with ``expires_at`` it gives the lifetime the refresh margin is a share of.
        scopes: the granted scopes (the requested ones when the server does not say).
        issuer: the issuer that granted them.
        resource: the resource they are for.
    """

    access_token: str = field(repr=False)
    token_type: Literal["Bearer", "DPoP"] = "Bearer"
    refresh_token: str | None = field(default=None, repr=False)
    expires_at: float | None = None
    issued_at: float | None = None
    scopes: tuple[str, ...] = ()
    issuer: str
    resource: str | None

    @property
    def authorization(self) -> str:
        """The ``Authorization`` header value for the MCP endpoint (RFC 6750 §2.1, RFC 9449 §7.1)."""
        return f"{self.token_type} {self.access_token}"

    def expiring(self, now: float, margin: float = ACCESS_TOKEN_REFRESH_MARGIN) -> bool:
        """Tell whether the access token expires within ``margin`` seconds of ``now``."""
        return self.expires_at is not None and now >= self.expires_at - margin

    @property
    def refresh_at(self) -> float | None:
        """When a refresh falls due: ``expires_at`` less the smaller of 60 s and a tenth of the lifetime.

        ``None`` when the expiry is unknown (never refreshed ahead). Without ``issued_at`` the margin is 60 s.
        """
        if self.expires_at is None:
            return None
        margin = ACCESS_TOKEN_REFRESH_MARGIN
        if self.issued_at is not None:
            margin = min(margin, REFRESH_MARGIN_SHARE * max(self.expires_at - self.issued_at, 0.0))
        return self.expires_at - margin

    def refresh_due(self, now: float) -> bool:
        """Tell whether a refresh is due at ``now`` (:attr:`refresh_at` has passed)."""
        refresh_at = self.refresh_at
        return refresh_at is not None and now >= refresh_at

    def expired(self, now: float) -> bool:
        """Tell whether the access token has expired at ``now`` (an unknown expiry never has)."""
        return self.expires_at is not None and now >= self.expires_at

    def to_dict(self) -> dict[str, Any]:
        """The tokens as a JSON-ready record, for a token store (it holds the tokens)."""
        return {
            "access_token": self.access_token,
            "token_type": self.token_type,
            "refresh_token": self.refresh_token,
            "expires_at": self.expires_at,
            "issued_at": self.issued_at,
            "scopes": list(self.scopes),
            "issuer": self.issuer,
            "resource": self.resource,
        }

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> TokenSet | None:
        """Rebuild tokens from :meth:`to_dict` output; ``None`` for a record that is not one."""
        access, kind, refresh = record.get("access_token"), record.get("token_type"), record.get("refresh_token")
        expires_at, scopes = record.get("expires_at"), record.get("scopes")
        issued_at = record.get("issued_at")
        issuer, resource = record.get("issuer"), record.get("resource")
        if not isinstance(access, str) or not _header_safe(access) or kind not in ("Bearer", "DPoP"):
            return None
        if not isinstance(issuer, str):
            return None
        if not (refresh is None or isinstance(refresh, str)) or not (resource is None or isinstance(resource, str)):
            return None
        if not (_time(expires_at) and _time(issued_at)):
            return None
        scope_list = _string_tuple(scopes)
        if scope_list is None:
            return None
        return cls(
            access_token=access,
            token_type=cast('Literal["Bearer", "DPoP"]', kind),
            refresh_token=refresh or None,
            expires_at=None if expires_at is None else float(expires_at),
            issued_at=None if issued_at is None else float(issued_at),
            scopes=scope_list,
            issuer=issuer,
            resource=resource,
        )


def _time(value: object) -> bool:
    # A stored time: absent, or a finite number of seconds (a bool is no number here).
    return value is None or (not isinstance(value, bool) and isinstance(value, int | float) and _finite(value))


def _finite(number: int | float) -> bool:
    # An int too large for a float is not a usable time either.
    try:
        return math.isfinite(number)
    except OverflowError:
        return False


def _expires_in(value: object) -> float | None:
    # RFC 6749 §5.1: seconds. Clamped to MAX_TOKEN_LIFETIME before any conversion to float (an integer too
    # large for one would raise OverflowError); a string of ASCII digits counts as its number.
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if not (value.isascii() and value.isdigit()):
            return None
        value = int(value) if len(value) <= 12 else MAX_TOKEN_LIFETIME
    if isinstance(value, int):
        return float(min(value, MAX_TOKEN_LIFETIME)) if value >= 0 else None
    if isinstance(value, float) and math.isfinite(value) and value >= 0:
        return min(value, float(MAX_TOKEN_LIFETIME))
    return None


def _header_safe(token: str) -> bool:
    # RFC 6750 §2.1 / RFC 9449 §7.1: the token goes into an Authorization header, so visible ASCII only.
    return _VISIBLE_ASCII.fullmatch(token) is not None


def read_token_response(
    status: int,
    body: bytes,
    *,
    now: float,
    issuer: str,
    resource: str | None,
    requested_scopes: Sequence[str],
    dpop: bool = False,
    previous: TokenSet | None = None,
    state: str = EXCHANGING,
) -> TokenSet:
    """Read a token endpoint answer (RFC 6749 §5.1, §5.2; RFC 9449 §5).

    ``token_type`` compares case-insensitively: ``Bearer``; or, when the request carried a DPoP proof,
    ``DPoP`` (a bound token) or ``Bearer`` (a server that does not bind). ``expires_at`` = ``now`` +
    ``expires_in``, ``issued_at`` = ``now``. On a refresh (``previous`` given) an omitted refresh token keeps
    the previous one and an omitted scope keeps the previous scopes (RFC 6749 §6).

    Args:
        status: the HTTP status.
        body: the response body.
        now: the current time, in the clock ``expires_at`` is kept in.
        issuer: the issuer asked.
        resource: the resource asked for.
        requested_scopes: the scopes asked for (ignored on a refresh).
        dpop: whether the request carried a DPoP proof.
        previous: the tokens a refresh replaces.
        state: the state the request was made in (``exchanging`` or ``refreshing``).

    Returns:
        The tokens.

    Raises:
        AuthorizationError: on an error answer (with the server's ``error``), a body that is not a JSON
            object, a missing ``access_token`` or an unusable ``token_type``.
    """
    document = _json_object(body)
    if status != 200:
        error, description = _oauth_error(document)
        raise AuthorizationError(
            f"the token endpoint answered HTTP {status}", state=state, error=error, error_description=description
        )
    if document is None:
        raise AuthorizationError("the token endpoint's answer is not a JSON object", state=state)
    access_token = document.get("access_token")
    if not isinstance(access_token, str) or not access_token:
        raise AuthorizationError("the token endpoint's answer has no access_token", state=state)
    if not _header_safe(access_token):
        # Never quoted: it is the token.
        raise AuthorizationError(
            "the token endpoint's access_token holds characters other than visible ASCII, which no Authorization"
            " header can carry (RFC 6750 §2.1)",
            state=state,
        )
    raw_type = document.get("token_type")
    kind = raw_type.lower() if isinstance(raw_type, str) else None
    if kind == "bearer":
        token_type: Literal["Bearer", "DPoP"] = "Bearer"
    elif kind == "dpop" and dpop:
        token_type = "DPoP"
    else:
        wanted = "Bearer or DPoP" if dpop else "Bearer"
        raise AuthorizationError(f"the token endpoint's token_type {raw_type!r} is not {wanted}", state=state)
    refresh_token = document.get("refresh_token")
    if not isinstance(refresh_token, str) or not refresh_token:
        refresh_token = previous.refresh_token if previous is not None else None
    scope = document.get("scope")
    if isinstance(scope, str) and scope.split():
        scopes = _ordered_unique(scope.split())
    else:
        scopes = previous.scopes if previous is not None else tuple(requested_scopes)
    lifetime = _expires_in(document.get("expires_in"))
    return TokenSet(
        access_token=access_token,
        token_type=token_type,
        refresh_token=refresh_token,
        expires_at=None if lifetime is None else now + lifetime,
        issued_at=now,
        scopes=scopes,
        issuer=issuer,
        resource=resource,
    )


def read_token_exchange_response(status: int, body: bytes) -> str:
    """Read the IdP's token exchange answer and return the ID-JAG (RFC 8693 §2.2; SEP-990).

    Raises:
        AuthorizationError: on an error answer, or when ``issued_token_type`` is not the ID-JAG type or the
            ``access_token`` member is missing.
    """
    state = ASSERTING
    document = _json_object(body)
    if status != 200:
        error, description = _oauth_error(document)
        raise AuthorizationError(
            f"the token exchange endpoint answered HTTP {status}",
            state=state,
            error=error,
            error_description=description,
        )
    if document is None or document.get("issued_token_type") != TOKEN_TYPE_ID_JAG:
        raise AuthorizationError("the token exchange answer did not issue an ID-JAG", state=state)
    assertion = document.get("access_token")
    if not isinstance(assertion, str) or not assertion:
        raise AuthorizationError("the token exchange answer has no access_token", state=state)
    return assertion
