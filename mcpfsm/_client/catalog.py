"""The client's tool catalog: the newest definition of every listed tool, and the paginated listings.

A listing fetches every page (MCP "Pagination"), guarded by :class:`~mcpfsm._core.catalog.PageCursor`
against cursors that repeat and listings that never end. Each complete ``tools/list`` replaces the
known definitions, so a ``Tool`` handle kept across a -32020 recovery mirrors the fresh schema at
once (SEP-2243: a client whose listing went stale re-lists).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loguru import logger

from .._core.catalog import PageCursor, ToolCatalog, ToolDefinition, build_catalog
from .._core.errors import ProtocolError
from .session import Session

__all__ = ["Catalog"]


class Catalog:
    """Known tool definitions of one client, and the listings that refresh them."""

    __slots__ = ("_definitions", "_session")

    def __init__(self, session: Session) -> None:
        """Start with no known definitions."""
        self._session = session
        self._definitions: dict[str, ToolDefinition] = {}

    def known(self, name: str) -> ToolDefinition | None:
        """The newest definition of ``name`` this client has listed, or ``None``."""
        return self._definitions.get(name)

    async def list_all(self, method: str, key: str) -> list[object]:
        """Every entry of every page of ``method`` (the entries are under ``key`` in each result).

        Raises:
            ProtocolError: a page lacks the ``key`` list, a cursor repeats, or the listing is too long.
            McpError: a request failed.
        """
        cursor: str | None = None
        pages = PageCursor(method)
        entries: list[object] = []
        while True:
            params: Mapping[str, Any] | None = None if cursor is None else {"cursor": cursor}
            result = await self._session.request(method, params)
            page = result.get(key)
            if not isinstance(page, list):
                raise ProtocolError(f'{method} result has no "{key}" list')
            entries.extend(page)
            cursor = pages.advance(result)
            if cursor is None:
                return entries

    async def relist(self) -> ToolCatalog:
        """A complete ``tools/list``, checked for ``x-mcp-header`` rules, that refreshes the known definitions.

        Tools with invalid annotations are left out with one WARNING each where the connection
        mirrors; elsewhere they are kept and the reason is logged at DEBUG.

        Raises:
            ProtocolError: a cursor repeats, the listing is too long, or a page is malformed.
            McpError: a request failed.
        """
        entries = await self.list_all("tools/list", "tools")
        catalog = build_catalog(entries, mirroring=self._session.mirrors)
        for exclusion in catalog.excluded:
            logger.warning("excluded MCP tool {!r}: {}", exclusion.name, exclusion.reason)
        for inert in catalog.inert:
            logger.debug("x-mcp-header annotations of MCP tool {!r} are inert here: {}", inert.name, inert.reason)
        self._definitions = {definition.name: definition for definition in catalog.tools}
        return catalog
