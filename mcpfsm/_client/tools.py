"""Tool handles: :class:`Tool` (one listed tool bound to its client) and :class:`ToolList` (one listing)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, overload

from .._core.catalog import Exclusion, ToolDefinition
from .._core.results import ToolResult
from .._core.tool_search import DefinitionStyle, SearchIndex, context_bytes, definition, tool_words

if TYPE_CHECKING:
    from .._core.tool_annotations import ToolAnnotations
    from .task import Task

__all__ = ["NO_DEFINITIONS", "Definitions", "Tool", "ToolList"]

CallTool = Callable[["Tool", "Mapping[str, Any] | None"], Awaitable[ToolResult]]
StartTool = Callable[["Tool", "Mapping[str, Any] | None"], Awaitable["Task"]]


class Definitions(Protocol):
    """Where a handle finds the newest definition of its tool: a client's catalog (``mcpfsm._client.catalog``)."""

    def known(self, name: str) -> ToolDefinition | None:
        """The newest definition of ``name`` listed, or ``None``."""
        ...


class _NoDefinitions:
    __slots__ = ()

    def known(self, name: str) -> ToolDefinition | None:
        return None


NO_DEFINITIONS: Definitions = _NoDefinitions()
"""The definitions of a handle that no client listed: a tool from a client group's known listing."""


class Tool:
    """A listed tool, bound to the client that listed it.

    ``tool.call(args)`` mirrors the annotated arguments of the newest definition of this tool the
    client has seen, so a handle kept across a -32020 recovery uses the fresh schema.
    """

    __slots__ = ("_call", "_catalog", "_definition", "_known_at", "_start")

    def __init__(
        self,
        definition: ToolDefinition,
        catalog: Definitions,
        call: CallTool,
        start: StartTool | None = None,
        *,
        known_at: float | None = None,
    ) -> None:
        """Bind ``definition``; users get tools from :meth:`mcpfsm.Client.tools`."""
        self._definition = definition
        self._catalog = catalog
        self._call = call
        self._start = start
        self._known_at = known_at

    @property
    def known_at(self) -> float | None:
        """When the known listing this tool comes from was listed (UNIX seconds); ``None`` for a live listing.

        A :class:`~mcpfsm.ClientGroup` given ``store=`` answers for an idle member from its known listing while it
        is fresh (docs/groups.md, "Many servers"); calling such a tool connects the member first.
        """
        return self._known_at

    @property
    def name(self) -> str:
        """The tool's name."""
        return self._definition.name

    @property
    def description(self) -> str:
        """The tool's description (``""`` when the server gave none)."""
        return self._definition.description

    @property
    def title(self) -> str | None:
        """The tool's display name: ``title``, else ``annotations.title``, else ``None`` (show :attr:`name` then).

        MCP 2025-11-25 "Tools": ``title`` is for display, ``name`` is the identifier; a tool's ``title``
        takes precedence over ``annotations.title``. A value that is not a string counts as absent.
        """
        title = self._definition.raw.get("title")
        return title if isinstance(title, str) else self.annotations.title

    @property
    def input_schema(self) -> Mapping[str, Any]:
        """The ``inputSchema`` as listed."""
        return self._definition.input_schema

    @property
    def output_schema(self) -> Mapping[str, Any] | bool | None:
        """The ``outputSchema`` as listed (a JSON Schema: an object or a boolean); ``None`` when absent or neither.

        With one, ``structuredContent`` is validated against the newest listed definition of the tool
        (docs/calls.md, "Output validation"); a value that is no schema is reported there, not here.
        """
        schema = self._definition.raw.get("outputSchema")
        return schema if isinstance(schema, Mapping | bool) else None

    @property
    def annotations(self) -> ToolAnnotations:
        """The tool's behaviour hints (``readOnlyHint``, ``destructiveHint``, ...) with the specification's defaults."""
        from .._core.tool_annotations import ToolAnnotations  # with the first use (bench/startup.py)

        return ToolAnnotations.from_entry(self._definition.raw)

    @property
    def mirrored(self) -> dict[tuple[str, ...], str]:
        """Argument path -> ``Mcp-Param-*`` header name, for the annotations in effect (SEP-2243)."""
        definition = self._catalog.known(self.name) or self._definition
        return {param.path: param.header for param in definition.mirrored}

    @property
    def definition(self) -> ToolDefinition:
        """The definition this handle was listed with."""
        return self._definition

    @property
    def raw(self) -> Mapping[str, Any]:
        """The tool entry exactly as listed."""
        return self._definition.raw

    async def call(self, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Call this tool; same as ``client.call_tool(tool, arguments)``."""
        return await self._call(self, arguments)

    async def start(self, arguments: Mapping[str, Any] | None = None) -> Task:
        """Call this tool and return a :class:`~mcpfsm.Task` handle; same as ``client.start_tool(tool, arguments)``.

        Raises:
            RuntimeError: the handle was made without a client that starts tasks.
        """
        if self._start is None:
            raise RuntimeError(f"tool {self.name!r} was not listed by a client; use client.start_tool()")
        return await self._start(self, arguments)

    def __repr__(self) -> str:
        """Show the name and mirrored headers."""
        return f"Tool({self.name!r}, mirrored={self.mirrored!r})"


class ToolList:
    """The tools of one complete listing, in server order.

    Supports ``len()``, iteration, indexing, ``name in tools`` and :meth:`get`. Tools excluded
    because of invalid ``x-mcp-header`` annotations are in :attr:`excluded`. It is deliberately
    not a ``Sequence[Tool]``: ``"name" in tools`` must type-check under ``mypy --strict``.
    """

    __slots__ = ("_by_name", "_index", "_tools", "excluded")

    def __init__(self, tools: Sequence[Tool], excluded: Sequence[Exclusion] = ()) -> None:
        """Wrap listed tools; users get lists from :meth:`mcpfsm.Client.tools`."""
        self._tools = tuple(tools)
        self._by_name = {tool.name: tool for tool in self._tools}
        self.excluded: tuple[Exclusion, ...] = tuple(excluded)
        """Tools left out of this listing and why (SEP-2243: invalid annotations exclude a tool)."""
        self._index: SearchIndex | None = None

    def search(self, query: str, *, limit: int = 10) -> ToolList:
        """The tools that match ``query`` best, ranked by BM25, at most ``limit`` of them.

        Each tool is ranked on the words of its name (split at ``_``, ``-``, ``.``, ``/`` and camelCase), title,
        description and its parameters' names and descriptions (docs/groups.md, "Many servers"). Only tools
        with at least one of the query's words are returned; equal scores keep this list's order. The index is
        built on the first search of a list and kept with it.

        Raises:
            ValueError: ``query`` is empty or only whitespace, or ``limit`` is not a positive integer.
        """
        if self._index is None:
            self._index = SearchIndex.build(tool_words(tool.name, tool.raw) for tool in self._tools)
        return ToolList([self._tools[position] for position in self._index.rank(query, limit)])

    def definitions(self, style: DefinitionStyle = "mcp") -> list[dict[str, Any]]:
        """The tools' definitions in the shape an LLM API takes, named as in this list, ``inputSchema`` unchanged.

        ``"mcp"`` gives MCP ``Tool`` objects (``name``, ``title``, ``description``, ``inputSchema``,
        ``outputSchema`` where the tool has them); ``"openai"`` gives function tools (``{"type": "function",
        "function": {"name", "description", "parameters"}}``); ``"anthropic"`` gives ``{"name", "description",
        "input_schema"}``.

        Raises:
            ValueError: ``style`` is none of those three.
        """
        return [definition(tool.name, tool.raw, style) for tool in self._tools]

    @property
    def context_bytes(self) -> int:
        """What this listing costs a model's context: the UTF-8 bytes of the compact JSON of ``definitions()``."""
        return context_bytes(self.definitions("mcp"))

    def get(self, name: str) -> Tool | None:
        """The tool named exactly ``name``, or ``None``."""
        return self._by_name.get(name)

    @property
    def names(self) -> list[str]:
        """The tool names, in order."""
        return [tool.name for tool in self._tools]

    def __len__(self) -> int:
        """Number of usable tools."""
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        """Iterate the tools in server order."""
        return iter(self._tools)

    @overload
    def __getitem__(self, index: int) -> Tool: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Tool, ...]: ...

    def __getitem__(self, index: int | slice) -> Tool | tuple[Tool, ...]:
        """Index or slice like a list (a slice gives a tuple)."""
        return self._tools[index]

    def __contains__(self, item: object) -> bool:
        """``name in tools`` or ``tool in tools``."""
        if isinstance(item, str):
            return item in self._by_name
        return item in self._tools

    def __repr__(self) -> str:
        """Show the names."""
        return f"ToolList({self.names!r})"
