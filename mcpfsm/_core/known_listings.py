"""Known listings: a group member's last complete ``tools/list``, kept in a store to answer before it connects.

A client group given ``store=`` writes each member's last complete live listing (every page) to the store under
the member's identity, so that a later group — another process, tomorrow — lists an idle member's tools without
starting its process or opening a connection (docs/groups.md, "Many servers").

- **identity**: for an HTTP member, its URL without credentials or fragment (the query is kept: it may name a
  tenant); for a stdio member, its command and arguments, its working directory and the *names* of its ``env``.
  The store key is ``known tools/list`` and a SHA-256 of that identity, so no part of it is ever written as text.
- **value**: the raw tool entries, the protocol version and era they were listed in, when (UNIX seconds) and the
  smallest ``ttlMs`` of the listing's pages. No header value, ``env`` value or token: a listing whose text quotes
  one of the member's configured values (eight characters or more: a header's, an ``env`` value, a token, what a
  ``${env:NAME}`` was replaced by) is not written at all.
- **freshness**: younger than the smallest ``ttlMs`` of its pages when the server gave one (SEP-2549; a negative
  one counts as 0), else than the group's ``known_ttl``.

Pure: the caller reads the clocks and the store.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from .config import ServerConfig
from .constants import is_modern

__all__ = [
    "DEFAULT_KNOWN_TTL",
    "KnownListing",
    "member_identity",
    "known_key",
    "member_values",
    "quotes_a_value",
]

DEFAULT_KNOWN_TTL: Final = 86_400.0
"""Seconds a known listing stays fresh when its server gave no ``ttlMs`` (one day)."""

_KEY_PREFIX: Final = "known tools/list "
_SHORTEST_SECRET: Final = 8
_FORMAT: Final = 1


def _public_url(url: str) -> str:
    # RFC 3986 §3.2.1: user information is a credential; the fragment is never sent. The query stays.
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path, parts.query, ""))


def member_identity(server: ServerConfig) -> dict[str, Any]:
    """What names a member's server across processes (the module docstring says what, and why no more)."""
    if server.transport == "http":
        assert server.url is not None
        return {"transport": "http", "url": _public_url(server.url)}
    return {
        "transport": "stdio",
        "command": list(server.command),
        "cwd": server.cwd,
        "env": sorted(server.env or {}),
    }


def known_key(server: ServerConfig) -> str:
    """The store key of ``server``'s known listing: a digest of :func:`member_identity`, nothing readable."""
    text = json.dumps(member_identity(server), separators=(",", ":"), sort_keys=True)
    return _KEY_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()


def member_values(server: ServerConfig) -> list[str]:
    """What a stored listing must not quote: ``server``'s headers, ``env`` values, token, expanded variables."""
    values = [*server.headers.values(), *(server.env or {}).values(), *server.secrets]
    if isinstance(server.auth, str):
        values.append(server.auth)
    if server.url is not None:
        parts = urlsplit(server.url)
        values += [part for part in (parts.username, parts.password) if part]
    return values


def quotes_a_value(text: str, values: Iterable[str]) -> bool:
    """Whether ``text`` contains one of ``values`` that is at least eight characters long."""
    return any(len(value) >= _SHORTEST_SECRET and value in text for value in values)


@dataclass(frozen=True, slots=True, kw_only=True)
class KnownListing:
    """One member's last complete listing as the store keeps it.

    Attributes:
        tools: the tool entries as the server listed them (every page, in order).
        protocol: the protocol version they were listed in.
        listed_at: when, in UNIX seconds.
        ttl_ms: the smallest ``ttlMs`` of the pages, or ``None`` when the server gave none.
    """

    tools: tuple[Mapping[str, Any], ...]
    protocol: str
    listed_at: float
    ttl_ms: int | None

    @property
    def modern(self) -> bool:
        """Whether it was listed in the 2026-07-28 era."""
        return is_modern(self.protocol)

    def lifetime(self, known_ttl: float) -> float:
        """Seconds it stays fresh after :attr:`listed_at`: its ``ttlMs``, else ``known_ttl``."""
        return known_ttl if self.ttl_ms is None else self.ttl_ms / 1000

    def fresh(self, now: float, known_ttl: float) -> bool:
        """Whether it is younger than :meth:`lifetime` at UNIX time ``now`` (a listing from the future is new)."""
        return max(0.0, now - self.listed_at) < self.lifetime(known_ttl)

    def to_value(self) -> dict[str, Any]:
        """The store's value: JSON, holding what the attributes hold and the era."""
        return {
            "format": _FORMAT,
            "era": "modern" if self.modern else "legacy",
            "protocol": self.protocol,
            "listed_at": self.listed_at,
            "ttl_ms": self.ttl_ms,
            "tools": [dict(tool) for tool in self.tools],
        }

    @classmethod
    def from_value(cls, value: object) -> KnownListing | None:
        """Read a store's value back; ``None`` when it is not one this version wrote (it is then ignored)."""
        if not isinstance(value, Mapping) or value.get("format") != _FORMAT:
            return None
        tools, protocol, listed_at, ttl_ms = (value.get(key) for key in ("tools", "protocol", "listed_at", "ttl_ms"))
        if type(tools) is not list or not all(type(tool) is dict or isinstance(tool, Mapping) for tool in tools):
            return None
        if not isinstance(protocol, str) or isinstance(listed_at, bool) or not isinstance(listed_at, int | float):
            return None
        if ttl_ms is not None and (isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms < 0):
            return None
        if not math.isfinite(listed_at):
            return None
        return cls(tools=tuple(tools), protocol=protocol, listed_at=float(listed_at), ttl_ms=ttl_ms)
