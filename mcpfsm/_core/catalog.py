"""Tool catalog: one ``tools/list`` listing, checked against the SEP-2243 x-mcp-header rules (pure: no I/O).

:func:`build_catalog` turns the raw tool entries of every page into :class:`ToolDefinition`
values. On connections that mirror (HTTP, modern era) a tool with an invalid annotation is
excluded with its reason; elsewhere annotations are inert, the tool is kept and the reason is
reported as ``inert`` so the caller can log it at DEBUG. Logging is the caller's job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .constants import MAX_PAGES
from .errors import ProtocolError
from .schema import MirroredParam, inspect_input_schema

__all__ = ["Exclusion", "PageCursor", "ToolCatalog", "ToolDefinition", "build_catalog"]

@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDefinition:
    """One tool as the server listed it, with its mirrored parameters (SEP-2243).

    Attributes:
        name: the tool name.
        description: the description, ``""`` when absent.
        input_schema: the ``inputSchema`` object as listed.
        mirrored: the valid ``x-mcp-header`` annotations (empty where annotations are inert).
        raw: the whole tool entry as listed.
    """

    name: str
    description: str
    input_schema: Mapping[str, Any]
    mirrored: tuple[MirroredParam, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Exclusion:
    """A tool entry left out of the listing, or whose annotations are inert, and why."""

    name: str
    reason: str


class ToolCatalog(NamedTuple):
    """The usable tools of one complete listing, in server order.

    Attributes:
        tools: the definitions kept.
        excluded: the tools left out, with the reason (log each at WARNING).
        inert: tools kept although their annotations are invalid, on connections that do not
            mirror (log each at DEBUG).
    """

    tools: tuple[ToolDefinition, ...] = ()
    excluded: tuple[Exclusion, ...] = ()
    inert: tuple[Exclusion, ...] = ()

    def get(self, name: str) -> ToolDefinition | None:
        """The definition named exactly ``name``, or ``None``."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None


def build_catalog(entries: Iterable[object], *, mirroring: bool, inert_reasons: bool = True) -> ToolCatalog:
    """Check every listed tool entry (SEP-2243).

    ``mirroring`` is true on connections that send ``Mcp-Param-*`` headers (HTTP, modern era).
    Entries that are not tool objects (no string ``name``, a non-object ``inputSchema``) are
    excluded with a reason rather than failing the whole listing. ``inert_reasons=False`` skips reading the
    annotations where they are inert (``mirroring`` false): ``ToolCatalog.inert`` is then empty (a client group
    reading a known listing, which logs nothing; bench/group.py). Never raises.
    """
    tools: list[ToolDefinition] = []
    excluded: list[Exclusion] = []
    inert: list[Exclusion] = []
    names: set[str] = set()
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            excluded.append(Exclusion(name=f"#{index}", reason="tool entry has no string \"name\""))
            continue
        name: str = entry["name"]
        schema = entry.get("inputSchema", {})
        if not isinstance(schema, Mapping):
            excluded.append(Exclusion(name=name, reason="inputSchema is not a JSON object"))
            continue
        if name in names:
            # Two definitions of one name make "the tool by exact name" ambiguous (SEP-2243).
            excluded.append(Exclusion(name=name, reason="listed more than once; the first definition is kept"))
            continue
        if not mirroring and not inert_reasons:
            names.add(name)
            description = entry.get("description")
            tools.append(
                ToolDefinition(
                    name=name,
                    description=description if isinstance(description, str) else "",
                    input_schema=schema,
                    mirrored=(),
                    raw=entry,
                )
            )
            continue
        verdict = inspect_input_schema(schema)
        if verdict.reason is not None:
            if mirroring:
                excluded.append(Exclusion(name=name, reason=verdict.reason))
                continue
            inert.append(Exclusion(name=name, reason=verdict.reason))
        description = entry.get("description")
        names.add(name)
        tools.append(
            ToolDefinition(
                name=name,
                description=description if isinstance(description, str) else "",
                input_schema=schema,
                mirrored=verdict.mirrored if mirroring else (),
                raw=entry,
            )
        )
    return ToolCatalog(tools=tuple(tools), excluded=tuple(excluded), inert=tuple(inert))


class PageCursor:
    """Tracks ``nextCursor`` across the pages of one listing of any paginated method.

    MCP "Pagination": cursors are opaque strings and a missing ``nextCursor`` ends the listing. A
    cursor that repeats, or a listing past :data:`~mcpfsm._core.constants.MAX_PAGES` pages, would
    never end, so either is a protocol error. Call :meth:`advance` with each page's result; it
    returns the cursor for the next request or ``None`` when the listing is complete.

    Args:
        method: the list method, for error messages (``"tools/list"``, ``"prompts/list"``, ...).
    """

    __slots__ = ("_method", "_pages", "_seen")

    def __init__(self, method: str = "tools/list") -> None:
        """Start a listing at its first page."""
        self._method = method
        self._seen: set[str] = set()
        self._pages = 0

    def advance(self, result: Mapping[str, Any]) -> str | None:
        """Account for one page and return the next cursor.

        Raises:
            ProtocolError: ``nextCursor`` is not a string, repeats an earlier cursor, or the
                listing passes :data:`~mcpfsm._core.constants.MAX_PAGES` pages.
        """
        self._pages += 1
        cursor = result.get("nextCursor")
        if cursor is None:
            return None
        method = self._method
        if not isinstance(cursor, str):
            raise ProtocolError(f"{method} nextCursor is not a string")
        if cursor in self._seen:
            raise ProtocolError(f"{method} repeated cursor {cursor!r}: the listing would never end")
        if self._pages >= MAX_PAGES:
            raise ProtocolError(f"{method} has more than {MAX_PAGES} pages")
        self._seen.add(cursor)
        return cursor
