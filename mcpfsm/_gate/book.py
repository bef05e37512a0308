"""The gate's schema book: each tool's ``inputSchema``, learned from listings and kept without per-call cost.

A call is checked against the schema of the tool it names (its declared ``Mcp-Param-*`` headers). The book keeps
the ``tools/list`` listings the gate has seen, so a call costs a dict lookup, not a ``tools/list``:

- **learned in passing**: every ``tools/list`` answer that goes through the gate is read before it is passed on
  (:mod:`.listing`), and kept for its ``ttlMs`` (SEP-2549), else the gate's ``learn_ttl``;
- **whose**: a listing whose ``cacheScope`` is ``"public"`` serves every caller of that server; any other listing
  is private to one authorization identity (a fingerprint of the caller's ``Authorization`` field,
  ``mcpfsm._core.gate_edge.identity_of``; never the field);
- **preloaded**: ``schemas=`` seeds the book with a saved listing, public and without expiry, until a forget;
- **fetched once**: a call to a tool the book does not know makes one ``tools/list`` (:meth:`SchemaBook.fill`),
  single flight per server and identity in this process, and, with a shared store, in the whole fleet: the
  first gate takes the store's lock on the listing, the others wait for it and read what it wrote;
- **shared**: with ``store=`` every listing learned is written to the store and read from it on a miss of the
  book's memory, so a fleet of gates on one store fetches each listing once per TTL;
- **forgotten**: an upstream -32020 or a ``notifications/tools/list_changed`` forgets the server's listings
  (:meth:`SchemaBook.forget`), in memory and in the store, where a mark makes every gate ignore what was
  written before it (another gate's memory keeps its copy until its TTL runs out, or until a ``tools/list``
  passes through it).

Keys and values in the store hold digests of the server and identity, tool names and schemas: no header value
and no token. Every store operation is bounded (:data:`STORE_TIMEOUT`); one that fails or runs out of time marks
the store down for :data:`DOWN_FOR` seconds, during which the gate works from its memory and the upstream (one
WARNING per outage, naming the store's type, never its URL). A store's operations run in a trio event loop
(:class:`~mcpfsm._gate.portal.StoreLoop`), whichever loop the gate runs in.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio

from .._core.cache import cache_hint
from .._core.schema import inspect_input_schema
from .._log import logger
from .portal import StoreLoop

if TYPE_CHECKING:
    from .._core.credentials import Store

__all__ = ["DOWN_FOR", "FILL_WAIT", "STORE_TIMEOUT", "Listing", "SchemaBook", "listing_of"]

STORE_TIMEOUT: Final = 2.0
"""Seconds one store operation may take before the gate goes on without the store."""

FILL_WAIT: Final = 5.0
"""Seconds a gate waits for the fleet's lock on a listing (another gate fetching it); also that lock's ``ttl``."""

DOWN_FOR: Final = 5.0
"""Seconds a store counts as down after an operation failed or timed out."""

MAX_LISTINGS: Final = 4096
"""Listings kept in memory (public ones and one per identity); the least recently used goes first."""

_NO_SCHEMA: Final = None
PUBLIC: Final = "public"
"""The owner of a listing whose ``cacheScope`` is ``"public"``: every caller of the server."""
_ANONYMOUS: Final = "anonymous"
T = TypeVar("T")


def _owner(identity: str | None) -> str:
    # A private listing's owner: the caller's identity, or every caller without credentials.
    return identity if identity is not None else _ANONYMOUS


@dataclass(frozen=True, slots=True)
class Listing:
    """What the book knows of one server's tools for one owner.

    Attributes:
        tools: each tool's ``inputSchema`` by name; ``None`` for a tool whose ``x-mcp-header`` annotations are
            invalid (it has no schema: its calls are forwarded and the server must refuse them).
        complete: the whole listing (every page) is known, so a tool missing from it is not a tool of the server.
        public: the listing's ``cacheScope`` is ``"public"``.
        ttl: seconds it may be kept, from when it was learned.
    """

    tools: Mapping[str, Mapping[str, Any] | None]
    complete: bool
    public: bool
    ttl: float


def listing_of(result: Mapping[str, Any], *, learn_ttl: float, complete: bool) -> Listing | None:
    """The listing a ``tools/list`` result holds, or ``None`` when it holds no ``tools`` array.

    A result's ``ttlMs`` and ``cacheScope`` (SEP-2549) say how long and for whom; without a ``ttlMs``, ``learn_ttl``.
    """
    entries = result.get("tools")
    if not isinstance(entries, list):
        return None
    tools: dict[str, Mapping[str, Any] | None] = {}
    for entry in entries:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            continue
        schema = entry.get("inputSchema")
        valid = isinstance(schema, Mapping) and inspect_input_schema(schema).valid
        tools[entry["name"]] = schema if valid else _NO_SCHEMA
    hint = cache_hint(result)
    ttl = hint.ttl_ms / 1000 if hint is not None else learn_ttl
    public = result.get("cacheScope") == "public"
    return Listing(tools=tools, complete=complete, public=public, ttl=ttl)


class _Kept:
    __slots__ = ("expires", "listing")

    def __init__(self, listing: Listing, expires: float) -> None:
        self.listing = listing
        self.expires = expires


class SchemaBook:
    """The schemas one gate knows, by server and owner (see the module's description).

    Args:
        learn_ttl: seconds a listing without ``ttlMs`` is kept.
        store: the fleet's shared store, or ``None``.
        preload: a listing every server starts with (``schemas=``), or ``None``.
        loop: where store operations run (a trio loop).
        clock: seconds on a monotonic clock (memory expiry).
        wall: seconds since the epoch (expiry in the store, which every process reads).
    """

    def __init__(
        self,
        *,
        learn_ttl: float,
        store: Store | None = None,
        preload: Listing | None = None,
        loop: StoreLoop | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """An empty book (but for ``preload``); the store is read on the first miss."""
        self.learn_ttl = learn_ttl
        self.store = store
        self.loop = loop or StoreLoop()
        self._preload = preload
        self._dropped: set[str] = set()
        self._clock = clock
        self._wall = wall
        self._kept: OrderedDict[tuple[str, str], _Kept] = OrderedDict()
        self._flights: dict[tuple[str, str], anyio.Event] = {}
        self._down_until = float("-inf")
        self.fetches = 0
        """``tools/list`` requests this book made (a fill that found nothing in memory or the store)."""
        self.store_failures = 0
        """Store operations that failed or timed out."""

    def __repr__(self) -> str:
        return f"SchemaBook({len(self._kept)} listings, store={type(self.store).__name__ if self.store else None})"

    # --- lookups ---------------------------------------------------------------------------------------------

    def lookup(self, server: str, identity: str | None, tool: str) -> tuple[bool, Mapping[str, Any] | None]:
        """``(known, schema)`` of ``tool`` from memory: known with its schema (``None``: it has none), or unknown.

        A tool missing from a complete listing is known, with no schema (the server will refuse the call).
        """
        now = self._clock()
        for owner in (_owner(identity), PUBLIC):
            kept = self._kept.get((server, owner))
            if kept is None:
                continue
            if kept.expires <= now:
                del self._kept[(server, owner)]
                continue
            tools = kept.listing.tools
            if tool in tools:
                return True, tools[tool]
            if kept.listing.complete:
                return True, _NO_SCHEMA
        preload = self._preload
        if preload is not None and server not in self._dropped and tool in preload.tools:
            return True, preload.tools[tool]
        return False, _NO_SCHEMA

    # --- learning --------------------------------------------------------------------------------------------

    async def learn(self, server: str, identity: str | None, listing: Listing, *, page: bool = False) -> None:
        """Keep ``listing`` (a ``tools/list`` answer seen in passing, or fetched) and share it through the store.

        ``page``: a page of a longer listing: its tools join what is kept, which stays incomplete.
        """
        owner = PUBLIC if listing.public else _owner(identity)
        if page:
            kept = self._kept.get((server, owner))
            if kept is not None and kept.expires > self._clock():
                merged = {**kept.listing.tools, **listing.tools}
                listing = Listing(tools=merged, complete=False, public=listing.public, ttl=listing.ttl)
        self._keep(server, owner, listing)
        self._dropped.discard(server)
        if self.store is not None and not page:
            await self._write(server, owner, listing)

    def _keep(self, server: str, owner: str, listing: Listing) -> None:
        key = (server, owner)
        self._kept[key] = _Kept(listing, self._clock() + listing.ttl)
        self._kept.move_to_end(key)
        while len(self._kept) > MAX_LISTINGS:
            self._kept.popitem(last=False)

    async def fill(
        self, server: str, identity: str | None, fetch: Callable[[], Awaitable[Listing | None]]
    ) -> None:
        """Make the book know ``server``'s listing for ``identity``: from the store, else from ``fetch()``.

        Single flight: concurrent fills of the same server and identity in this process wait for the first;
        with a store, the first gate of the fleet to take the listing's lock fetches, the others read what it
        wrote. ``fetch``'s errors propagate (to the one caller whose fill ran it).
        """
        key = (server, _owner(identity))
        flight = self._flights.get(key)
        if flight is not None:
            await flight.wait()
            return
        flight = self._flights[key] = anyio.Event()
        try:
            await self._fill(server, identity, fetch)
        finally:
            del self._flights[key]
            flight.set()

    async def _fill(self, server: str, identity: str | None, fetch: Callable[[], Awaitable[Listing | None]]) -> None:
        if await self._read_into_memory(server, identity):
            return
        if self.store is None or self._down():
            await self._fetched(server, identity, fetch)
            return
        store = self.store
        stack = contextlib.AsyncExitStack()
        held = False
        try:
            await stack.enter_async_context(
                self.loop.held(lambda: store.lock(self._lock_key(server, identity), FILL_WAIT, wait=FILL_WAIT))  # type: ignore[call-arg]
            )
            held = True
        except Exception as exc:  # a lock that fails or is not had in time: fill without it
            logger.debug("no fleet lock on {}'s listing ({}); fetching without it", "the server", type(exc).__name__)
        try:
            if held and await self._read_into_memory(server, identity):
                return
            await self._fetched(server, identity, fetch)
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await stack.aclose()
                except Exception as exc:  # a lock that fails to release expires by its ttl
                    self._failed(exc)

    async def _fetched(
        self, server: str, identity: str | None, fetch: Callable[[], Awaitable[Listing | None]]
    ) -> None:
        self.fetches += 1
        listing = await fetch()
        if listing is not None:
            await self.learn(server, identity, listing)

    async def forget(self, server: str, identity: str | None) -> None:
        """Forget ``server``'s listings (an upstream -32020, a ``notifications/tools/list_changed``).

        In memory every owner's; in the store the public one and ``identity``'s, and a mark that makes every gate
        ignore the listings of that server written before it.
        """
        for key in [key for key in self._kept if key[0] == server]:
            del self._kept[key]
        self._dropped.add(server)
        if self.store is None:
            return
        store = self.store
        mark = {"at": self._wall()}
        await self._bounded(lambda: store.set(self._mark_key(server), mark))
        for owner in {PUBLIC, _owner(identity)}:
            await self._bounded(lambda owner=owner: store.delete(self._key(server, owner)))  # type: ignore[misc]

    # --- the store, bounded ----------------------------------------------------------------------------------

    @staticmethod
    def _digest(*parts: object) -> str:
        return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()

    def _key(self, server: str, owner: str) -> str:
        return f"gate listing {self._digest('gate listing', server, owner)}"

    def _lock_key(self, server: str, identity: str | None) -> str:
        return f"gate fill {self._digest('gate fill', server, identity)}"

    def _mark_key(self, server: str) -> str:
        return f"gate forgotten {self._digest('gate forgotten', server)}"

    async def _read_into_memory(self, server: str, identity: str | None) -> bool:
        # The store's public listing, then the identity's; True when one was fresh and is now in memory.
        if self.store is None:
            return False
        store = self.store
        mark = await self._bounded(lambda: store.get(self._mark_key(server)))
        forgotten_at = mark.get("at") if isinstance(mark, Mapping) else None
        found = False
        for owner in (PUBLIC, _owner(identity)):
            value = await self._bounded(lambda owner=owner: store.get(self._key(server, owner)))  # type: ignore[misc]
            listing, remaining = self._valid(value, forgotten_at)
            if listing is not None:
                self._keep(server, owner, Listing(listing.tools, listing.complete, listing.public, remaining))
                found = True
        return found

    def _valid(self, value: object, forgotten_at: object) -> tuple[Listing | None, float]:
        # A value another gate wrote: used only when whole, unexpired, and written after the last forget.
        if not isinstance(value, Mapping):
            return None, 0.0
        tools, expires_at, learned_at = value.get("tools"), value.get("expires_at"), value.get("learned_at")
        if (
            not isinstance(tools, Mapping)
            or not isinstance(expires_at, (int, float))
            or not isinstance(learned_at, (int, float))
            or not all(schema is None or isinstance(schema, Mapping) for schema in tools.values())
        ):
            return None, 0.0
        if isinstance(forgotten_at, (int, float)) and learned_at <= forgotten_at:
            return None, 0.0
        remaining = expires_at - self._wall()
        if remaining <= 0:
            return None, 0.0
        listing = Listing(
            tools=dict(tools), complete=value.get("complete") is True, public=value.get("public") is True, ttl=remaining
        )
        return listing, remaining

    async def _write(self, server: str, owner: str, listing: Listing) -> None:
        store = self.store
        assert store is not None
        now = self._wall()
        value = {
            "tools": dict(listing.tools),
            "complete": listing.complete,
            "public": listing.public,
            "learned_at": now,
            "expires_at": now + listing.ttl,
        }
        await self._bounded(lambda: store.set(self._key(server, owner), value))

    def _down(self) -> bool:
        return self._clock() < self._down_until

    def _failed(self, error: BaseException) -> None:
        self.store_failures += 1
        self._down_until = self._clock() + DOWN_FOR
        # The type only: a store's message may quote its URL, and a Redis URL may carry a password.
        logger.warning(
            "the gate's store ({}) failed: {}; working without it for {} s",
            type(self.store).__name__,
            type(error).__name__,
            DOWN_FOR,
        )

    async def _bounded(self, operation: Callable[[], Awaitable[T]]) -> T | None:
        # The operation's value, or None when the store is down, failed or timed out.
        if self._down():
            return None

        async def bounded() -> tuple[bool, T | None]:
            import trio  # the operation runs in a trio loop (StoreLoop)

            with trio.move_on_after(STORE_TIMEOUT):
                try:
                    return True, await operation()
                except Exception as exc:  # any store failure means "go on without it"
                    return False, exc  # type: ignore[return-value]
            return False, None

        done, value = await self.loop.run(bounded)
        if not done:
            self._failed(value if isinstance(value, BaseException) else TimeoutError())
            return None
        return value
