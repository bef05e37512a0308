"""The response cache of one client (SEP-2549 "Caching"; MCP 2026-07-28 ``ttlMs``/``cacheScope``). Pure: no I/O.

What is cached, and for how long, follows the server's hints, read by :func:`cache_hint`:

- **Only** complete modern results of the cacheable methods (:data:`CACHEABLE_METHODS`); a result that
  is ``input_required``, and any request that carries ``inputResponses`` or ``requestState`` (a retry of a
  multi round-trip request, SEP-2322), is never stored nor served. Legacy results carry no hints and are
  never cached; the caller passes the era in the key.
- **Key**: the protocol version, the method and the params that change the result: ``cursor`` for a
  page of a listing, ``uri`` for ``resources/read`` and ``skills/get``; never ``_meta``.
- **Freshness**: ``now < received + ttlMs`` on the caller's clock (monotonic; the clock is an argument, so
  tests use a fake one). ``ttlMs`` absent, negative or not an integer counts as 0, and 0 is not stored; a
  larger one than :data:`MAX_TTL_MS` (24 hours, as the official SDKs clamp it) counts as that, so no server
  number, however large, reaches the clock arithmetic.
- **Scope**: ``cacheScope`` absent or unknown counts as ``private``. Entries live in one client and are
  never shared; :meth:`ResponseCache.clear` empties the cache for a new authorization context, and
  ``clear(keep_public=True)`` keeps the entries a server marked ``public`` (which MAY be shared).
- **Invalidation** by notifications (:meth:`ResponseCache.invalidate`): ``tools/list_changed`` drops every
  ``tools/list`` page, ``prompts/list_changed`` every ``prompts/list`` page, ``resources/list_changed``
  every ``resources/list`` and ``resources/templates/list`` page, ``resources/updated`` the
  ``resources/read`` entries of that URI and of the URIs it lies under or that lie under it.

Entries are handed out as deep copies, so a caller mutating a result cannot change a later hit. At most
``max_entries`` entries and ``max_bytes`` bytes are kept (a result's size is its JSON encoding in UTF-8, as it
came over the wire); the least recently used goes first, and a result larger than ``max_bytes`` on its own is
not stored at all (a dropped 10 MB resource must not stay in memory because it was once read).
"""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, NamedTuple

__all__ = [
    "CACHEABLE_METHODS",
    "DEFAULT_MAX_BYTES",
    "LISTINGS",
    "MAX_TTL_MS",
    "CacheHint",
    "CacheKey",
    "CacheStats",
    "ResponseCache",
    "cache_hint",
    "cache_key",
    "encoded_size",
]

CACHEABLE_METHODS: Final = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "skills/list",
        "skills/get",
    }
)
"""The methods whose complete results carry ``ttlMs`` and ``cacheScope`` (SEP-2549; the skills ones: SEP-2640)."""

LISTINGS: Final = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
"""The methods whose pages a client shares through a store (docs/cache.md, "Shared listings")."""

MAX_TTL_MS: Final = 24 * 60 * 60 * 1000
"""The longest time a result is kept, in milliseconds (24 hours); a larger ``ttlMs`` is clamped to it."""

_BY_URI: Final = frozenset({"resources/read", "skills/get"})

DEFAULT_MAX_BYTES: Final = 32 * 1024 * 1024
"""The default byte budget of one client's response cache (32 MiB of encoded results)."""

_MRTR_PARAMS: Final = ("inputResponses", "requestState")

# notification method -> the cached methods it invalidates (SEP-2549 "Invalidation").
_INVALIDATES: Final[Mapping[str, tuple[str, ...]]] = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    # The templates listing is part of the resource listing; the specification names only
    # resources/list, so dropping the templates too costs at most one refetch.
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}

Scope = Literal["public", "private"]

CacheKey = tuple[str, str, str | None]
"""(protocol version, method, the one param that matters: ``cursor`` or ``uri``, else None)."""


class CacheHint(NamedTuple):
    """How long a result may be reused and by whom (SEP-2549)."""

    ttl_ms: int
    scope: Scope


@dataclass(slots=True)
class CacheStats:
    """Counts since the cache was made.

    Attributes:
        hits: lookups this client's memory served.
        misses: lookups this client's memory could not serve.
        shared_hits: misses that a shared store served (entries another client stored; docs/cache.md).
        store_failures: shared-store operations that failed or timed out; the client asked the server instead.
    """

    hits: int = 0
    misses: int = 0
    shared_hits: int = 0
    store_failures: int = 0


class _Entry(NamedTuple):
    result: dict[str, Any]
    expires: float
    scope: Scope
    size: int


def encoded_size(result: Mapping[str, Any]) -> int:
    """The size in bytes of ``result`` encoded as compact JSON in UTF-8 (what a cache budget counts)."""
    return len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


def cache_key(version: str, method: str, params: Mapping[str, Any] | None) -> CacheKey | None:
    """The key of a request, or ``None`` when the request must not touch the cache.

    ``None`` for methods that are not cacheable and for retries of a multi round-trip request (they
    carry ``inputResponses`` or ``requestState``). ``_meta`` never counts.
    """
    if method not in CACHEABLE_METHODS:
        return None
    params = params or {}
    if any(name in params for name in _MRTR_PARAMS):
        return None
    selector = params.get("uri") if method in _BY_URI else params.get("cursor")
    if selector is not None and not isinstance(selector, str):
        return None
    return (version, method, selector)


def smallest_ttl(pages: Iterable[Mapping[str, Any]]) -> int | None:
    """The smallest ``ttlMs`` of a listing's pages, or ``None`` when none gave one (a client group's known listing).

    A negative ``ttlMs`` counts as 0; one that is not an integer counts as absent, as for :func:`cache_hint`.
    """
    ttls = [max(0, ttl) for page in pages if isinstance(ttl := page.get("ttlMs"), int) and not isinstance(ttl, bool)]
    return min(ttls) if ttls else None


def cache_hint(result: Mapping[str, Any]) -> CacheHint | None:
    """The hint a result carries, or ``None`` when it must not be stored.

    ``None`` for a result that is not complete (``input_required`` carries no hints) and for a ``ttlMs``
    that is absent, not an integer, zero or negative (all of which mean "immediately stale"). A ``ttlMs``
    above :data:`MAX_TTL_MS` is clamped to it.
    """
    if result.get("resultType", "complete") != "complete":
        return None
    ttl = result.get("ttlMs")
    if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0:
        return None
    scope: Scope = "public" if result.get("cacheScope") == "public" else "private"
    return CacheHint(ttl_ms=min(ttl, MAX_TTL_MS), scope=scope)


class ResponseCache:
    """Results of cacheable requests of one client, until their ``ttlMs`` runs out or a notification drops them.

    Args:
        max_entries: the bound on entries kept (least recently used evicted first).
        max_bytes: the bound on the encoded size of the results kept (least recently used evicted first); a
            result larger than this is not stored.

    Raises:
        ValueError: a bound is below 1.
    """

    __slots__ = ("_entries", "bytes", "max_bytes", "max_entries", "stats")

    def __init__(self, max_entries: int = 1024, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        """An empty cache."""
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[CacheKey, _Entry] = OrderedDict()
        self.bytes = 0
        """The encoded size of the results held."""
        self.stats = CacheStats()

    def __len__(self) -> int:
        """Number of entries held (fresh or not yet noticed to be stale)."""
        return len(self._entries)

    def get(self, key: CacheKey, now: float) -> dict[str, Any] | None:
        """A copy of the fresh result stored under ``key``, or ``None`` (a stale entry is dropped)."""
        entry = self._entries.get(key)
        if entry is not None and now < entry.expires:
            self._entries.move_to_end(key)
            self.stats.hits += 1
            return copy.deepcopy(entry.result)
        if entry is not None:
            self._drop(key)
        self.stats.misses += 1
        return None

    def put(self, key: CacheKey, result: Mapping[str, Any], received: float, *, ttl_ms: int | None = None) -> bool:
        """Store a copy of ``result`` if its hints allow it and it fits ``max_bytes``; True when stored.

        A result that may not be stored also drops what was stored under ``key``: it is newer. ``ttl_ms``
        replaces the result's own ``ttlMs`` (what remains of an entry another client stored).
        """
        hint = cache_hint(result)
        self._drop(key)
        if hint is None:
            return False
        size = encoded_size(result)
        if size > self.max_bytes:
            return False
        ttl = hint.ttl_ms if ttl_ms is None else min(ttl_ms, hint.ttl_ms)
        self._entries[key] = _Entry(copy.deepcopy(dict(result)), received + ttl / 1000, hint.scope, size)
        self.bytes += size
        while len(self._entries) > self.max_entries or self.bytes > self.max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self.bytes -= evicted.size
        return True

    def _drop(self, key: CacheKey) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self.bytes -= entry.size

    def forget(self, method: str) -> None:
        """Drop every entry of ``method`` (e.g. all pages of a listing whose cursor the server refused)."""
        for key in [key for key in self._entries if key[1] == method]:
            self._drop(key)

    def invalidate(self, notification: str, params: Mapping[str, Any] | None = None) -> None:
        """Drop what a server notification says has changed (SEP-2549 "Invalidation"); others are ignored."""
        for method in _INVALIDATES.get(notification, ()):
            self.forget(method)
        if notification == "notifications/resources/updated":
            uri = (params or {}).get("uri")
            if isinstance(uri, str):
                stale = [
                    key
                    for key in self._entries
                    if key[1] == "resources/read" and key[2] is not None and _related(key[2], uri)
                ]
                for key in stale:
                    self._drop(key)

    def clear(self, *, keep_public: bool = False) -> None:
        """Empty the cache (a new authorization context); ``keep_public`` keeps entries marked ``public``."""
        if keep_public:
            for key in [key for key, entry in self._entries.items() if entry.scope != "public"]:
                self._drop(key)
        else:
            self._entries.clear()
            self.bytes = 0


def _related(cached: str, updated: str) -> bool:
    # MCP "Resources": an update may name a sub-resource of the subscribed URI; a change below or above a
    # cached URI may change it, and dropping one entry too many costs one refetch.
    if cached == updated:
        return True
    shorter, longer = sorted((cached, updated), key=len)
    if not longer.startswith(shorter):
        return False
    return shorter.endswith("/") or longer[len(shorter)] in "/?#"
