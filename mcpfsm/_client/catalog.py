"""The client's catalog: the newest definition of every listed tool, the paginated listings, and the shared relist.

A listing fetches every page (MCP "Pagination"), guarded by :class:`~mcpfsm._core.catalog.PageCursor`
against cursors that repeat and listings that never end; the same guard serves ``tools/list``,
``prompts/list``, ``resources/list`` and ``resources/templates/list``. Pages come from the response
cache when it holds them fresh (SEP-2549); when the server refuses a cursor (-32602) after cached
pages, every cached page of that method is dropped and the listing restarts from the first page.

Each complete ``tools/list`` replaces the known definitions, so a ``Tool`` handle kept across a -32020
recovery mirrors the fresh schema at once (SEP-2243: a client whose listing went stale re-lists).

**Single flight.** Concurrent calls that hit -32020 share one relist (:meth:`Catalog.refresh`): a call
records :attr:`Catalog.generation` (relists completed so far) before it sends; on -32020 it uses the
newest relist's catalog if one completed after its request was sent, joins the relist in flight if
there is one, and starts a relist only otherwise. So N concurrent stale calls cost one ``tools/list``,
and each still retries at most once (the tool-call machine's ``joined`` edge tells who did not start it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import trio

from .._core.cache import smallest_ttl
from .._core.catalog import PageCursor, ToolCatalog, ToolDefinition, build_catalog
from .._core.constants import INVALID_PARAMS
from .._core.errors import McpError, ProtocolError, RpcError
from .._log import logger
from .session import Session

__all__ = ["Catalog", "Listed"]


class Listed(NamedTuple):
    """The last complete ``tools/list`` of a client: what a client group keeps as a member's known listing.

    Attributes:
        entries: every page's tool entries, as the server sent them.
        ttl_ms: the smallest ``ttlMs`` of the pages, or ``None`` when none gave one (SEP-2549).
        live: every page came from the server (none from the response cache or a shared store).
    """

    entries: tuple[object, ...]
    ttl_ms: int | None
    live: bool


class _Flight:
    # One relist in progress; the calls that join it wait for `done`.
    __slots__ = ("catalog", "done", "error")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.catalog: ToolCatalog | None = None
        self.error: McpError | None = None


class Catalog:
    """Known tool definitions of one client, the listings that refresh them, and the shared relist."""

    __slots__ = ("_definitions", "_flight", "_latest", "_session", "generation", "listed", "listings")

    def __init__(self, session: Session) -> None:
        """Start with no known definitions."""
        self._session = session
        self._definitions: dict[str, ToolDefinition] = {}
        self._flight: _Flight | None = None
        self._latest: ToolCatalog | None = None
        self.generation = 0
        """How many uncached tools listings have completed; a call reads it before sending."""
        self.listed: Listed | None = None
        """The last complete ``tools/list`` (a client group's known listing of the member), or ``None``."""
        self.listings = 0
        """How many complete ``tools/list`` listings this client has made (a client group writes each once)."""

    def known(self, name: str) -> ToolDefinition | None:
        """The newest definition of ``name`` this client has listed, or ``None``."""
        return self._definitions.get(name)

    async def list_all(
        self, method: str, key: str, *, fresh: bool = False, pages: list[Mapping[str, Any]] | None = None
    ) -> list[object]:
        """Every entry of every page of ``method`` (the entries are under ``key`` in each result).

        ``fresh=True`` reads no page from the cache (and refreshes it with every page). ``pages`` receives every
        page's result, in order (those of a listing that restarted from the first page included).

        Raises:
            ProtocolError: a page lacks the ``key`` list, a cursor repeats, or the listing is too long.
            McpError: a request failed.
        """
        entries = await self._pages(method, key, fresh=fresh, pages=pages)
        if entries is None:
            # SEP-2549 "Pagination": a cursor refused while pages may come from the cache means those
            # pages went stale: drop them all and list again from the first page.
            assert self._session.cache is not None
            self._session.cache.forget(method)
            entries = await self._pages(method, key, fresh=True, pages=pages)
            assert entries is not None
        return entries

    async def _pages(
        self, method: str, key: str, *, fresh: bool, pages: list[Mapping[str, Any]] | None
    ) -> list[object] | None:
        # None: the server refused a cursor (-32602) of a listing that may have read cached pages.
        cursor: str | None = None
        guard = PageCursor(method)
        entries: list[object] = []
        while True:
            params: Mapping[str, Any] | None = None if cursor is None else {"cursor": cursor}
            try:
                result = await self._session.request(method, params, fresh=fresh)
            except RpcError as exc:
                if exc.code == INVALID_PARAMS and cursor is not None and not fresh and self._session.cache is not None:
                    return None
                raise
            page = result.get(key)
            if not isinstance(page, list):
                raise ProtocolError(f'{method} result has no "{key}" list')
            entries.extend(page)
            if pages is not None:
                pages.append(result)
            cursor = guard.advance(result)
            if cursor is None:
                return entries

    async def relist(self, *, fresh: bool = False) -> ToolCatalog:
        """A complete ``tools/list``, checked for ``x-mcp-header`` rules, that refreshes the known definitions.

        Pages come from the response cache unless ``fresh``. Tools with invalid annotations are left out
        with one WARNING each where the connection mirrors; elsewhere they are kept and the reason is
        logged at DEBUG.

        Raises:
            ProtocolError: a cursor repeats, the listing is too long, or a page is malformed.
            McpError: a request failed.
        """
        cache = self._session.cache
        served = None if cache is None else (cache.stats.hits, cache.stats.shared_hits)
        pages: list[Mapping[str, Any]] = []
        entries = await self.list_all("tools/list", "tools", fresh=fresh, pages=pages)
        # Live when no page was served by the cache meanwhile (another request's hit only makes this cautious).
        live = cache is None or (cache.stats.hits, cache.stats.shared_hits) == served
        self.listed = Listed(tuple(entries), smallest_ttl(pages), live)
        self.listings += 1
        catalog = build_catalog(entries, mirroring=self._session.mirrors)
        for exclusion in catalog.excluded:
            logger.warning("excluded MCP tool {!r}: {}", exclusion.name, exclusion.reason)
        for inert in catalog.inert:
            logger.debug("x-mcp-header annotations of MCP tool {!r} are inert here: {}", inert.name, inert.reason)
        self._definitions = {definition.name: definition for definition in catalog.tools}
        if fresh:
            self.generation += 1
            self._latest = catalog
        return catalog

    async def refresh(self, since: int) -> tuple[ToolCatalog, bool]:
        """The catalog of a fresh relist that completed after generation ``since``; True when another call's.

        Uses the newest relist if one completed since, joins the one in flight, or starts one (the
        -32020 recovery of SEP-2243, single flight). Bounded: a joined relist that was cancelled is
        replaced by the next one started, at most once per call that was cancelled.

        Raises:
            McpError: the relist failed (every call that joined it gets the same error).
        """
        while True:
            if self.generation > since and self._latest is not None:
                return self._latest, True
            flight = self._flight
            if flight is None:
                return await self._fly(), False
            await flight.done.wait()
            if flight.catalog is not None:
                return flight.catalog, True
            if flight.error is not None:
                raise flight.error
            # The relist was cancelled with the call that started it: start or join the next one.

    async def _fly(self) -> ToolCatalog:
        flight = self._flight = _Flight()
        try:
            flight.catalog = await self.relist(fresh=True)
        except McpError as exc:
            flight.error = exc
            raise
        finally:
            self._flight = None
            flight.done.set()
        return flight.catalog
