"""Protected Resource Metadata (RFC 9728) and the resource indicator (RFC 8707, RFC 9728 §3.3)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..errors import AuthorizationError
from ._steps import DISCOVERING_RESOURCE
from .answers import _json_object, _raise_for_server_failure, _string_tuple
from .challenges import BearerChallenge, _ordered_unique
from .urls import _DEFAULT_PORTS, _drop_one_slash, _effective_port, _origin

__all__ = [
    "ProtectedResourceMetadata",
    "check_resource",
    "choose_authorization_server",
    "protected_resource_metadata_urls",
    "read_protected_resource_metadata",
    "resource_matches",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProtectedResourceMetadata:
    """A usable Protected Resource Metadata document (RFC 9728 §2).

    Attributes:
        resource: the resource identifier, verbatim (it is also the ``resource`` parameter, RFC 8707).
        authorization_servers: the issuers, in the server's order (at least one).
        scopes_supported: the scopes the resource names, or None when absent.
        dpop_signing_alg_values_supported: the DPoP algorithms the resource accepts, or None.
        dpop_bound_access_tokens_required: whether the resource only accepts DPoP-bound tokens.
    """

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None = None
    dpop_signing_alg_values_supported: tuple[str, ...] | None = None
    dpop_bound_access_tokens_required: bool = False


def protected_resource_metadata_urls(mcp_url: str, challenge: BearerChallenge | None = None) -> tuple[str, ...]:
    """List the Protected Resource Metadata URLs to try, in order; the first usable document wins.

    The challenge's ``resource_metadata`` (RFC 9728 §5.1) when it is an absolute http(s) URL, then the
    path-based well-known URL (unless the MCP URL's path is empty or ``/``), then the root one (RFC 9728
    §3.1; MCP 2025-11-25 Authorization, SEP-985). The MCP URL's query is never copied into a candidate.

    Args:
        mcp_url: the MCP endpoint URL.
        challenge: the Bearer challenge of the 401, if any.

    Returns:
        The candidate URLs, without duplicates.
    """
    candidates: list[str] = []
    if challenge is not None and challenge.resource_metadata is not None:
        try:
            hinted = urlsplit(challenge.resource_metadata)
            if hinted.scheme in _DEFAULT_PORTS and hinted.hostname:
                candidates.append(challenge.resource_metadata)
        except ValueError:
            pass
    origin = _origin(mcp_url)
    path = urlsplit(mcp_url).path
    if path not in ("", "/"):
        candidates.append(f"{origin}/.well-known/oauth-protected-resource{path}")
    candidates.append(f"{origin}/.well-known/oauth-protected-resource")
    return _ordered_unique(candidates)


def read_protected_resource_metadata(status: int, body: bytes) -> ProtectedResourceMetadata | None:
    """Read one Protected Resource Metadata answer (RFC 9728 §3.2).

    Usable means HTTP 200 and a JSON object with a string ``resource`` and a non-empty array of non-empty
    strings ``authorization_servers``.

    Args:
        status: the HTTP status of the GET (redirects are not followed).
        body: the response body.

    Returns:
        The metadata when usable; None when the next candidate should be tried (any other 1xx-4xx answer).

    Raises:
        AuthorizationError: on HTTP 429 or 5xx, which end discovery instead of skipping a candidate.
    """
    state = DISCOVERING_RESOURCE
    _raise_for_server_failure(status, "the protected resource metadata endpoint", state)
    if status != 200:
        return None
    document = _json_object(body)
    if document is None:
        return None
    resource = document.get("resource")
    servers = _string_tuple(document.get("authorization_servers"))
    if not isinstance(resource, str) or not resource or not servers or not all(servers):
        return None
    required = document.get("dpop_bound_access_tokens_required")
    return ProtectedResourceMetadata(
        resource=resource,
        authorization_servers=servers,
        scopes_supported=_string_tuple(document.get("scopes_supported")),
        dpop_signing_alg_values_supported=_string_tuple(document.get("dpop_signing_alg_values_supported")),
        dpop_bound_access_tokens_required=required is True,
    )


def resource_matches(resource: str, mcp_url: str) -> bool:
    """Tell whether a PRM ``resource`` names the server at ``mcp_url``.

    Same scheme and host (case-insensitive), same port (a default port equals an omitted one), no fragment
    and no user info in ``resource``, its path a segment prefix of the MCP URL's path (one trailing ``/``
    ignored on each side: ``/mcp`` matches ``/mcp``, ``/mcp/`` and ``/mcp/x``, not ``/mcpx``), and its query,
    if any, equal to the MCP URL's. RFC 9728 §3.3 and §7.3 want the resource to be this server; the origin
    plus path-prefix reading is the MCP 2025-11-25 "Canonical Server URI" one.

    Args:
        resource: the ``resource`` member of the metadata.
        mcp_url: the MCP endpoint URL.

    Returns:
        True when the resource names this server.
    """
    try:
        named, ours = urlsplit(resource), urlsplit(mcp_url)
        named_port, our_port = named.port, ours.port
        named_host, our_host = named.hostname, ours.hostname
    except ValueError:
        return False
    if named.fragment or "@" in named.netloc or not named_host or not our_host:
        return False
    scheme = named.scheme.lower()
    if scheme != ours.scheme.lower() or named_host != our_host:
        return False
    if _effective_port(scheme, named_port) != _effective_port(scheme, our_port):
        return False
    if named.query and named.query != ours.query:
        return False
    prefix, path = _drop_one_slash(named.path), _drop_one_slash(ours.path)
    return path == prefix or path.startswith(prefix + "/")


def check_resource(metadata: ProtectedResourceMetadata, mcp_url: str) -> None:
    """Refuse metadata whose ``resource`` does not name this server, before any authorization server is contacted.

    Args:
        metadata: the usable Protected Resource Metadata.
        mcp_url: the MCP endpoint URL.

    Raises:
        AuthorizationError: when :func:`resource_matches` is false (RFC 9728 §3.3, RFC 8707 §2).
    """
    if not resource_matches(metadata.resource, mcp_url):
        raise AuthorizationError(
            f"the protected resource metadata names resource {metadata.resource!r}, not this server {mcp_url!r}",
            state=DISCOVERING_RESOURCE,
        )


def choose_authorization_server(metadata: ProtectedResourceMetadata, known_issuers: Collection[str] = ()) -> str:
    """Pick the authorization server: the first listed one the client holds credentials for, else the first.

    The returned string, verbatim, is the expected issuer (RFC 8414 §3.3, MCP 2026-07-28 "Authorization
    Server Binding", SEP-2352).

    Args:
        metadata: the usable Protected Resource Metadata.
        known_issuers: issuers the client holds a registration or pre-registered credentials for.

    Returns:
        The expected issuer.
    """
    return next(
        (issuer for issuer in metadata.authorization_servers if issuer in known_issuers),
        metadata.authorization_servers[0],
    )
