"""WWW-Authenticate: parsing challenges (RFC 9110 §11.6.1, §11.3; RFC 6750 §3; RFC 9728 §5.1; RFC 9449 §7.1)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

__all__ = [
    "BearerChallenge",
    "Challenge",
    "ResourceChallenge",
    "bearer_challenge",
    "parse_challenges",
    "read_resource_challenge",
    "resource_challenge",
]


_TCHARS: Final = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_TOKEN68: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
# RFC 6749 §A.12 VSCHAR without the space: what an Authorization header can carry after "Bearer ".
_VISIBLE_ASCII: Final = re.compile(r"[\x21-\x7e]+")
_OWS: Final = " \t"


@dataclass(frozen=True, slots=True, kw_only=True)
class Challenge:
    """One authentication challenge of a ``WWW-Authenticate`` field (RFC 9110 §11.3).

    Attributes:
        scheme: the auth-scheme as sent (compare it case-insensitively).
        token68: the token68 form of the challenge, if it used one.
        params: the auth-params in order, names lower-cased, the first of a repeated name kept.
    """

    scheme: str
    token68: str | None = None
    params: tuple[tuple[str, str], ...] = ()

    def param(self, name: str) -> str | None:
        """Return the value of the parameter ``name`` (case-insensitive), or None when absent."""
        wanted = name.lower()
        return next((value for key, value in self.params if key == wanted), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class BearerChallenge:
    """What a client reads from a Bearer (or DPoP) challenge.

    Attributes:
        resource_metadata: the Protected Resource Metadata URL (RFC 9728 §5.1), or None.
        scope: the challenged scopes, space-separated on the wire (RFC 6750 §3); empty when absent.
        error: ``invalid_token``, ``insufficient_scope``, ``use_dpop_nonce``, ... or None.
        error_description: the server's human-readable text, or None.
        algs: the DPoP algorithms a DPoP challenge lists (RFC 9449 §7.1); empty otherwise.
    """

    resource_metadata: str | None = None
    scope: tuple[str, ...] = ()
    error: str | None = None
    error_description: str | None = None
    algs: tuple[str, ...] = ()


def _skip_ows(text: str, i: int) -> int:
    while i < len(text) and text[i] in _OWS:
        i += 1
    return i


def _token_end(text: str, i: int) -> int:
    while i < len(text) and text[i] in _TCHARS:
        i += 1
    return i


def _quoted_string(text: str, i: int) -> tuple[str, int]:
    """Read the quoted-string opening at ``text[i]``; an unterminated one runs to the end of the text."""
    out: list[str] = []
    i += 1
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
        elif char == '"':
            return "".join(out), i + 1
        else:
            out.append(char)
            i += 1
    return "".join(out), i


def _next_element(text: str, i: int) -> int:
    """Return the index just past the next comma outside a quoted-string (or the end)."""
    while i < len(text):
        if text[i] == '"':
            i = _quoted_string(text, i)[1]
        elif text[i] == ",":
            return i + 1
        else:
            i += 1
    return i


def _challenges_in(text: str) -> list[Challenge]:
    found: list[Challenge] = []
    scheme: str | None = None
    token68: str | None = None
    params: dict[str, str] = {}

    def close() -> None:
        if scheme is not None:
            found.append(Challenge(scheme=scheme, token68=token68, params=tuple(params.items())))

    i = 0
    while i < len(text):
        if text[i] in _OWS:
            i += 1
            continue
        end = _token_end(text, i)
        if end == i:
            i = _next_element(text, i)
            continue
        word = text[i:end]
        after = _skip_ows(text, end)
        if after < len(text) and text[after] == "=":
            start = _skip_ows(text, after + 1)
            if start < len(text) and text[start] == '"':
                value, i = _quoted_string(text, start)
            else:
                # Lenient: an unquoted value runs to whitespace or a comma, so an unquoted URL survives.
                i = start
                while i < len(text) and text[i] not in _OWS and text[i] not in ',"':
                    i += 1
                value = text[start:i]
            if scheme is not None:
                params.setdefault(word.lower(), value)
            continue
        close()
        scheme, token68, params = word, None, {}
        i = after
        if after > end:
            match = _TOKEN68.match(text, after)
            if match is not None:
                stop = _skip_ows(text, match.end())
                if stop == len(text) or text[stop] == ",":
                    token68 = match.group()
                    i = stop
    close()
    return found


def parse_challenges(values: str | Iterable[str]) -> tuple[Challenge, ...]:
    """Parse ``WWW-Authenticate`` field values into challenges (RFC 9110 §11.6.1).

    Several challenges may share one field value or span several; auth-params are ``name=token`` or
    ``name="quoted-string"`` (backslash escapes, commas inside quotes). Unparseable parts are skipped:
    this function never raises on garbage.

    Args:
        values: one field value, or every value of the field in order.

    Returns:
        The challenges in order of appearance.
    """
    texts = [values] if isinstance(values, str) else list(values)
    return tuple(challenge for text in texts if isinstance(text, str) for challenge in _challenges_in(text))


def _ordered_unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def bearer_challenge(values: str | Iterable[str], *, scheme: str = "Bearer") -> BearerChallenge | None:
    """Read the first challenge of ``scheme`` (case-insensitive) from ``WWW-Authenticate`` values.

    ``scheme="DPoP"`` reads the DPoP challenge of RFC 9449 §7.1 the same way. Empty ``resource_metadata``,
    ``scope``, ``error`` and ``error_description`` count as absent; unknown parameters are ignored.

    Args:
        values: one field value, or every value of the field in order.
        scheme: the auth-scheme to look for.

    Returns:
        The challenge's parameters, or None when no challenge of that scheme is present.
    """
    return _first_of(parse_challenges(values), scheme)


def _first_of(challenges: Iterable[Challenge], scheme: str) -> BearerChallenge | None:
    wanted = scheme.casefold()
    for challenge in challenges:
        if challenge.scheme.casefold() == wanted:
            return BearerChallenge(
                resource_metadata=challenge.param("resource_metadata") or None,
                scope=_ordered_unique((challenge.param("scope") or "").split()),
                error=challenge.param("error") or None,
                error_description=challenge.param("error_description") or None,
                algs=_ordered_unique((challenge.param("algs") or "").split()),
            )
    return None


def resource_challenge(values: str | Iterable[str]) -> BearerChallenge | None:
    """Read the challenge a protected resource answered with: the Bearer one, else the DPoP one.

    A resource that only accepts DPoP-bound tokens challenges with ``DPoP`` alone (RFC 9449 §7.1); its
    ``resource_metadata``, ``scope`` and ``error`` parameters mean what they mean in a Bearer challenge.
    """
    parsed = parse_challenges(values)
    return _first_of(parsed, "Bearer") or _first_of(parsed, "DPoP")


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceChallenge:
    """A protected resource's HTTP 401 or 403, its ``WWW-Authenticate`` values parsed once.

    Attributes:
        status: the HTTP status.
        challenge: the Bearer challenge, else the DPoP one (:func:`resource_challenge`), or None.
        dpop: the DPoP challenge (RFC 9449 §7.1), or None.
        dpop_nonce: the answer's ``DPoP-Nonce`` header, if any (RFC 9449 §9).
    """

    status: int
    challenge: BearerChallenge | None
    dpop: BearerChallenge | None
    dpop_nonce: str | None = None

    @property
    def insufficient_scope(self) -> bool:
        """Whether the challenge says ``error="insufficient_scope"`` (RFC 6750 §3.1)."""
        return self.challenge is not None and self.challenge.error == "insufficient_scope"


def read_resource_challenge(
    status: int, www_authenticate: str | Iterable[str], dpop_nonce: str | None = None
) -> ResourceChallenge:
    """Parse a protected resource's challenge once: its Bearer (else DPoP) challenge and its DPoP one."""
    parsed = parse_challenges(www_authenticate)
    dpop = _first_of(parsed, "DPoP")
    return ResourceChallenge(
        status=status, challenge=_first_of(parsed, "Bearer") or dpop, dpop=dpop, dpop_nonce=dpop_nonce
    )
