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
from typing import Any

import trio

from .._core.catalog import PageCursor, ToolCatalog, ToolDefinition, build_catalog
from .._core.constants import INVALID_PARAMS
from .._core.errors import McpError, ProtocolError, RpcError
from .._log import logger
from .session import Session

__all__ = ["Catalog"]


class _Flight:
    # One relist in progress; the calls that join it wait for `done`.
    __slots__ = ("catalog", "done", "error")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.catalog: ToolCatalog | None = None
        self.error: McpError | None = None


class Catalog:
    """Known tool definitions of one client, the listings that refresh them, and the shared relist."""

    __slots__ = ("_definitions", "_flight", "_latest", "_session", "generation")

    def __init__(self, session: Session) -> None:
        """Start with no known definitions."""
        self._session = session
        self._definitions: dict[str, ToolDefinition] = {}
        self._flight: _Flight | None = None
        self._latest: ToolCatalog | None = None
        self.generation = 0
        """How many uncached tools listings have completed; a call reads it before sending."""

    def known(self, name: str) -> ToolDefinition | None:
        """The newest definition of ``name`` this client has listed, or ``None``."""
        return self._definitions.get(name)

    async def list_all(self, method: str, key: str, *, fresh: bool = False) -> list[object]:
        """Every entry of every page of ``method`` (the entries are under ``key`` in each result).

        ``fresh=True`` reads no page from the cache (and refreshes it with every page).

        Raises:
            ProtocolError: a page lacks the ``key`` list, a cursor repeats, or the listing is too long.
            McpError: a request failed.
        """
        entries = await self._pages(method, key, fresh=fresh)
        if entries is None:
            # SEP-2549 "Pagination": a cursor refused while pages may come from the cache means those
            # pages went stale: drop them all and list again from the first page.
            assert self._session.cache is not None
            self._session.cache.forget(method)
            entries = await self._pages(method, key, fresh=True)
            assert entries is not None
        return entries

    async def _pages(self, method: str, key: str, *, fresh: bool) -> list[object] | None:
        # None: the server refused a cursor (-32602) of a listing that may have read cached pages.
        cursor: str | None = None
        pages = PageCursor(method)
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
            cursor = pages.advance(result)
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
        entries = await self.list_all("tools/list", "tools", fresh=fresh)
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
