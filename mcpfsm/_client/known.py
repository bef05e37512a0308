"""A client group's known listings in its store: read for idle members, written after live listings.

The rules (identity, key, value, freshness) are ``mcpfsm._core.known_listings``'; this module does the store's
I/O for a group, through the store guard (``mcpfsm._client.store_guard``): every operation bounded (2 s), the
group's memory while the store is down, one WARNING per outage. A store that fails never fails a listing: the
member is then connected as if it had no known listing.

- :meth:`KnownListings.fresh` answers for an idle member: its known listing while fresh, read from the store when
  the group holds none or a stale one (another process may have written a newer one).
- :meth:`KnownListings.remember` writes a connected member's last complete live listing, once per listing (the
  client's catalog counts them), unless it quotes one of the member's configured values.
- :meth:`KnownListings.settle` discards, once the member connected, a known listing of another era than the one
  it negotiated: from the store and from the group.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from .._core.catalog import Exclusion, ToolDefinition, build_catalog
from .._core.constants import is_modern
from .._core.known_listings import KnownListing, known_key, member_values, quotes_a_value
from .._log import logger

if TYPE_CHECKING:
    from .._core.credentials import Store
    from .client import Client
    from .members import Member

__all__ = ["KnownListings", "known_definitions"]


class KnownListings:
    """The known listings of one group's members, in its store.

    Args:
        store: the group's ``store=`` (guarded here), or ``None``: no known listings.
        known_ttl: seconds a listing without ``ttlMs`` stays fresh.
        clock: UNIX seconds (the listings' ``listed_at``).
    """

    __slots__ = ("_clock", "_store", "known_ttl")

    def __init__(self, store: Store | None, *, known_ttl: float, clock: Callable[[], float] = time.time) -> None:
        """Guard ``store``; nothing is read until the first listing."""
        from .store_guard import GuardedStore  # with a store only

        self._store = None if store is None else GuardedStore(store)
        self.known_ttl = known_ttl
        self._clock = clock

    @property
    def kept(self) -> bool:
        """Whether the group keeps known listings (it was given a store)."""
        return self._store is not None

    def now(self) -> float:
        """The clock's UNIX time."""
        return self._clock()

    async def fresh(self, member: Member) -> KnownListing | None:
        """``member``'s known listing while fresh (read from the store unless the group holds a fresh one)."""
        if self._store is None:
            return None
        now = self._clock()
        known = member.known
        if known is None or not known.fresh(now, self.known_ttl):
            known = member.known = KnownListing.from_value(await self._store.peek(self._store_key(member)))
        return known if known is not None and known.fresh(now, self.known_ttl) else None

    async def remember(self, member: Member, client: Client) -> None:
        """Write ``client``'s last complete listing as ``member``'s known one, if it is live and not written yet."""
        catalog = client._catalog  # the package's own: the catalog keeps the listing, the group keeps it longer
        if self._store is None or catalog.listings == member.written:
            return
        member.written = catalog.listings
        listed = catalog.listed
        version = client.protocol_version
        if listed is None or not listed.live or version is None:
            return
        tools = tuple(entry for entry in listed.entries if isinstance(entry, Mapping))
        known = KnownListing(tools=tools, protocol=version, listed_at=self._clock(), ttl_ms=listed.ttl_ms)
        value = known.to_value()
        if quotes_a_value(json.dumps(value, ensure_ascii=False), member_values(member.config)):
            logger.warning(
                "the listing of server {!r} quotes a value of its configuration; it is not kept as a known listing",
                member.name,
            )
            return
        member.known = known
        await self._store.set(self._store_key(member), value)

    def key(self, member: Member) -> str | None:
        """``member``'s store key (a digest, computed once: reload makes a new member), or ``None`` without a store."""
        if self._store is None:
            return None
        if member.store_key is None:
            member.store_key = known_key(member.config)
        return member.store_key

    def _store_key(self, member: Member) -> str:
        key = self.key(member)
        assert key is not None
        return key

    async def settle(self, member: Member, client: Client) -> None:
        """Discard ``member``'s known listing when it is of another era than the one ``client`` negotiated."""
        if self._store is None:
            return
        key = self._store_key(member)
        known = member.known or KnownListing.from_value(await self._store.peek(key))
        if known is not None and known.modern != is_modern(client.protocol_version):
            member.known = None
            await self._store.delete(key)
            logger.info("the known listing of server {!r} was of another era; it is discarded", member.name)


def known_definitions(
    known: KnownListing, *, mirroring: bool
) -> tuple[tuple[ToolDefinition, ...], tuple[Exclusion, ...]]:
    """The tool definitions of a known listing, checked as a live one would be (SEP-2243), and the exclusions."""
    catalog = build_catalog(known.tools, mirroring=mirroring, inert_reasons=False)
    return catalog.tools, catalog.excluded
