"""Scopes (MCP 2026-07-28 "Scope Selection Strategy"; SEP-835, SEP-2350, SEP-2207)."""

from __future__ import annotations

from collections.abc import Sequence

from .challenges import BearerChallenge, _ordered_unique
from .issuer import AuthorizationServerMetadata
from .resource import ProtectedResourceMetadata

__all__ = [
    "requested_scopes",
    "scope_parameter",
    "step_up_scopes",
    "with_offline_access",
]


def requested_scopes(
    challenge: BearerChallenge | None, resource_metadata: ProtectedResourceMetadata | None
) -> tuple[str, ...]:
    """Choose the initial scopes: the challenge's ``scope``, else every PRM ``scopes_supported``, else none.

    The authorization server's own ``scopes_supported`` is never a source.
    """
    if challenge is not None and challenge.scope:
        return challenge.scope
    if resource_metadata is not None and resource_metadata.scopes_supported:
        return _ordered_unique(resource_metadata.scopes_supported)
    return ()


def with_offline_access(
    scopes: Sequence[str], metadata: AuthorizationServerMetadata, *, refresh_wanted: bool = True
) -> tuple[str, ...]:
    """Append ``offline_access`` iff the server lists it, ``scopes`` is non-empty and refresh is wanted (SEP-2207)."""
    ordered = _ordered_unique(scopes)
    if ordered and refresh_wanted and "offline_access" in (metadata.scopes_supported or ()):
        return _ordered_unique((*ordered, "offline_access"))
    return ordered


def step_up_scopes(held: Sequence[str], challenged: Sequence[str]) -> tuple[str, ...]:
    """Return the scopes of a step-up: the held ones then the challenged ones, duplicates dropped (SEP-2350)."""
    return _ordered_unique((*held, *challenged))


def scope_parameter(scopes: Sequence[str]) -> str | None:
    """Join scopes with single spaces (RFC 6749 §3.3); None for no scope, so ``scope=`` is never sent."""
    return " ".join(scopes) if scopes else None
