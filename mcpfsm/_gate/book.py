"""The gate's schema book: each tool's ``inputSchema``, learned from listings and kept without per-call cost.

A call is checked against the schema of the tool it names (its declared ``Mcp-Param-*`` headers). The book keeps
the ``tools/list`` listings the gate has seen, so a call costs a dict lookup, not a ``tools/list``:

- **learned in passing**: every ``tools/list`` answer that goes through the gate is read before it is passed on
  (:mod:`.listing`), and kept for its ``ttlMs`` (SEP-2549), else (absent or 0) the gate's ``learn_ttl``;
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
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio

from .._core.gate import Listing, ToolSchema
from .._core.store_lock import taking_lock
from .._log import logger
from .portal import StoreLoop

if TYPE_CHECKING:
    from .._core.credentials import Store

__all__ = ["DOWN_FOR", "FILL_WAIT", "PUBLIC", "STORE_TIMEOUT", "Known", "SchemaBook"]

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
class Known:
    """What the book knows of one server's tools for one owner: one listing, maybe several pages long.

    Attributes:
        tools: each tool's schema by name (a :class:`~mcpfsm._core.gate.ToolSchema`; one whose annotations are
            invalid declares nothing, and the server must refuse its calls).
        complete: the whole listing (every page) is known, so a tool missing from it is not a tool of the server.
        public: the listing's ``cacheScope`` is ``"public"``.
        ttl: seconds it may be kept, from when it was learned.
    """

    tools: Mapping[str, ToolSchema]
    complete: bool
    public: bool
    ttl: float

    def schema(self, tool: str) -> tuple[bool, ToolSchema | None]:
        """``(known, schema)`` of ``tool`` in this listing (see :meth:`SchemaBook.lookup`)."""
        found = self.tools.get(tool)
        if found is not None:
            return True, found
        return self.complete, _NO_SCHEMA

    def to_json(self, now: float) -> dict[str, Any]:
        """The store's record: the schemas (no header value, no token), the scope, when it was learned and expires."""
        return {
            "tools": [schema.to_json() for schema in self.tools.values()],
            "complete": self.complete,
            "public": self.public,
            "learned_at": now,
            "expires_at": now + self.ttl,
        }


def known_of(page: Listing, *, learn_ttl: float, complete: bool) -> Known:
    """What one ``tools/list`` page teaches: its tools, for its ``ttlMs`` (SEP-2549), else ``learn_ttl`` seconds.

    A ``ttlMs`` of 0 counts as none: it tells a client not to reuse the page, and the official SDK's servers send
    it by default, so honouring it would cost a ``tools/list`` per call. The gate keeps such a listing for
    ``learn_ttl`` and forgets it on the server's own signals (an upstream -32020, ``notifications/tools/list_changed``).
    """
    ttl = page.ttl_ms / 1000 if page.ttl_ms else learn_ttl
    return Known(tools=page.tools, complete=complete, public=page.cache_scope == "public", ttl=ttl)


def _fill_lock(store: Store, key: str) -> AbstractAsyncContextManager[None]:
    # The fleet's lock on one fill, waited for at most FILL_WAIT seconds (the store's own bound, `wait=`). A store
    # whose lock takes no `wait=` is waited for as long as its holder holds it (at most its ttl, FILL_WAIT, on Redis).
    return taking_lock(store, key, FILL_WAIT, FILL_WAIT)


class _Kept:
    __slots__ = ("expires", "known")

    def __init__(self, known: Known, expires: float) -> None:
        self.known = known
        self.expires = expires


class _Flight:
    # One fill in progress: its waiters wait for `done` and take `known`.
    __slots__ = ("done", "known")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.known: Known | None = None


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
        self._preload = (
            None if preload is None else Known(tools=preload.tools, complete=False, public=True, ttl=float("inf"))
        )
        self._dropped: set[str] = set()
        self._clock = clock
        self._wall = wall
        self._kept: OrderedDict[tuple[str, str], _Kept] = OrderedDict()
        self._flights: dict[tuple[str, str], _Flight] = {}
        self._down_until = float("-inf")
        self.fetches = 0
        """``tools/list`` fetches this book asked for (a fill that found nothing in memory or the store)."""
        self.shared_hits = 0
        """Fills the store answered (a listing another gate learned)."""
        self.store_failures = 0
        """Store operations that failed or timed out."""

    def __repr__(self) -> str:
        return f"SchemaBook({len(self._kept)} listings, store={type(self.store).__name__ if self.store else None})"

    # --- lookups ---------------------------------------------------------------------------------------------

    def lookup(self, server: str, identity: str | None, tool: str) -> tuple[bool, ToolSchema | None]:
        """``(known, schema)`` of ``tool`` from memory: known with its schema, known absent, or unknown.

        The caller's own listing first, then the public one, then the preloaded schemas. A tool missing from a
        complete listing is known, with no schema (the server will refuse the call).
        """
        now = self._clock()
        # Hot path (bench/gate.py): the caller's own listing, current, naming the tool; else every case below.
        kept = self._kept.get((server, identity if identity is not None else _ANONYMOUS))
        if kept is not None and kept.expires > now:
            found = kept.known.tools.get(tool)
            if found is not None:
                return True, found
        for owner in (_owner(identity), PUBLIC):
            kept = self._kept.get((server, owner))
            if kept is None:
                continue
            if kept.expires <= now:
                del self._kept[(server, owner)]
                continue
            known, schema = kept.known.schema(tool)
            if known:
                return True, schema
        preload = self._preload
        if preload is not None and server not in self._dropped and tool in preload.tools:
            return True, preload.tools[tool]
        return False, _NO_SCHEMA

    # --- learning --------------------------------------------------------------------------------------------

    async def learn(self, server: str, identity: str | None, page: Listing, *, first: bool) -> Known:
        """Keep what a ``tools/list`` page teaches (seen in passing, or fetched) and share a whole listing.

        ``first``: the page answered a request without ``cursor``: with no ``nextCursor`` either, it is the whole
        listing and replaces what was kept; any other page joins what is kept, which stays incomplete (and is not
        written to the store). Returns what is now kept.
        """
        complete = first and page.next_cursor is None
        known = known_of(page, learn_ttl=self.learn_ttl, complete=complete)
        owner = PUBLIC if known.public else _owner(identity)
        if not complete:
            kept = self._kept.get((server, owner))
            if kept is not None and kept.expires > self._clock() and not first:
                known = Known({**kept.known.tools, **known.tools}, False, known.public, known.ttl)
        self._keep(server, owner, known)
        self._dropped.discard(server)
        if self.store is not None and complete:
            store, record = self.store, known.to_json(self._wall())
            await self._bounded(lambda: store.set(self._key(server, owner), record))
        return known

    def _keep(self, server: str, owner: str, known: Known) -> None:
        key = (server, owner)
        self._kept[key] = _Kept(known, self._clock() + known.ttl)
        self._kept.move_to_end(key)
        while len(self._kept) > MAX_LISTINGS:
            self._kept.popitem(last=False)

    async def fill(
        self, server: str, identity: str | None, fetch: Callable[[], Awaitable[Listing | None]]
    ) -> Known | None:
        """What ``server`` lists for ``identity``: from the store, else from ``fetch()`` (the whole listing).

        Single flight: concurrent fills of the same server and identity in this process wait for the first and
        get what it got; with a store, the first gate of the fleet to take the listing's lock fetches, the others
        read what it wrote. ``None`` when the fetch failed (``fetch`` returned ``None``; its errors propagate to
        the one caller whose fill ran it, and the waiters get ``None``). The listing is returned as well as kept,
        so a call uses it even when its ``ttlMs`` is 0.
        """
        key = (server, _owner(identity))
        flight = self._flights.get(key)
        if flight is not None:
            await flight.done.wait()
            return flight.known
        flight = self._flights[key] = _Flight()
        try:
            flight.known = await self._fill(server, identity, fetch)
            return flight.known
        finally:
            del self._flights[key]
            flight.done.set()

    async def _fill(
        self, server: str, identity: str | None, fetch: Callable[[], Awaitable[Listing | None]]
    ) -> Known | None:
        found = await self._read_into_memory(server, identity)
        if found is not None:
            return found
        if self.store is None or self._down():
            return await self._fetched(server, identity, fetch)
        store = self.store
        stack = contextlib.AsyncExitStack()
        held = False
        try:
            await stack.enter_async_context(self.loop.held(lambda: _fill_lock(store, self._lock_key(server, identity))))
            held = True
        except Exception as exc:  # a lock that fails or is not had in time: fill without it
            logger.debug("no fleet lock on a listing ({}); fetching without it", type(exc).__name__)
        try:
            if held:
                found = await self._read_into_memory(server, identity)
                if found is not None:
                    return found
            return await self._fetched(server, identity, fetch)
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await stack.aclose()
                except Exception as exc:  # a lock that fails to release expires by its ttl
                    self._failed(exc)

    async def _fetched(
        self, server: str, identity: str | None, fetch: Callable[[], Awaitable[Listing | None]]
    ) -> Known | None:
        self.fetches += 1
        listing = await fetch()
        if listing is None:
            return None
        return await self.learn(server, identity, listing, first=True)

    async def forget(self, server: str, identity: str | None) -> None:
        """Forget ``server``'s listings (an upstream -32020, a ``notifications/tools/list_changed``).

        In memory every owner's and the preloaded ones; in the store the public one and ``identity``'s, and a mark
        that makes every gate ignore the listings of that server written before it.
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
            name = self._key(server, owner)
            await self._bounded(lambda name=name: store.delete(name))  # type: ignore[misc]

    # --- the store, bounded ----------------------------------------------------------------------------------

    @staticmethod
    def _digest(*parts: object) -> str:
        return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()

    def _key(self, server: str, owner: str) -> str:
        return f"gate listing {self._digest('gate listing', server, owner)}"

    def _lock_key(self, server: str, identity: str | None) -> str:
        return f"gate fill {self._digest('gate fill', server, _owner(identity))}"

    def _mark_key(self, server: str) -> str:
        return f"gate forgotten {self._digest('gate forgotten', server)}"

    async def _read_into_memory(self, server: str, identity: str | None) -> Known | None:
        # The store's public listing, then the identity's: the fresh one that answers, now in memory too.
        if self.store is None:
            return None
        store = self.store
        mark = await self._bounded(lambda: store.get(self._mark_key(server)))
        forgotten_at = mark.get("at") if isinstance(mark, Mapping) else None
        for owner in (_owner(identity), PUBLIC):
            key = self._key(server, owner)
            value = await self._bounded(lambda key=key: store.get(key))  # type: ignore[misc]
            known = self._valid(value, forgotten_at)
            if known is not None:
                self._keep(server, owner, known)
                self.shared_hits += 1
                return known
        return None

    def _valid(self, value: object, forgotten_at: object) -> Known | None:
        # A record another gate wrote: used only when whole, unexpired, and written after the last forget.
        if not isinstance(value, Mapping):
            return None
        records, expires_at, learned_at = value.get("tools"), value.get("expires_at"), value.get("learned_at")
        if (
            not isinstance(records, list)
            or not isinstance(expires_at, int | float)
            or not isinstance(learned_at, int | float)
        ):
            return None
        if isinstance(forgotten_at, int | float) and learned_at <= forgotten_at:
            return None
        remaining = expires_at - self._wall()
        if remaining <= 0:
            return None
        try:
            tools = {schema.name: schema for schema in map(ToolSchema.from_json, records)}
        except ValueError:
            return None
        return Known(
            tools=tools, complete=value.get("complete") is True, public=value.get("public") is True, ttl=remaining
        )

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

        async def bounded() -> tuple[bool, object]:
            import trio  # the operation runs in a trio loop (StoreLoop)

            with trio.move_on_after(STORE_TIMEOUT):
                try:
                    return True, await operation()
                except Exception as exc:  # any store failure means "go on without it"
                    return False, exc
            return False, TimeoutError()

        done, value = await self.loop.run(bounded)
        if not done:
            self._failed(value if isinstance(value, BaseException) else TimeoutError())
            return None
        return value  # type: ignore[return-value]
