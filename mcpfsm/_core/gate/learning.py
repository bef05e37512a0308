"""What the gate learns from ``tools/list``: each tool's mirrored headers, and for how long.

Pure: no I/O. A listing is read from a ``tools/list`` result (a dict), a decoded JSON-RPC response, or a response
body as it passes through the gate (``application/json`` or ``text/event-stream``); a ``schemas=PATH`` file holds a
result or a whole response. Each tool's ``inputSchema`` goes through the client's own rules
(:func:`~mcpfsm._core.schema.inspect_input_schema`, SEP-2243): a tool whose annotations are invalid has no schema,
so its calls are checked for the standard headers only and the server must refuse them.

A learned :class:`ToolSchema` holds the tool's name, the property paths, header tokens and types it declares, and
nothing else: no header value and no token of the caller's, so it may be written to a shared store as it is
(:meth:`ToolSchema.to_json`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

from ..errors import ProtocolError
from ..jsonrpc import decode_message
from ..schema import MIRRORABLE_TYPES, MirroredParam, inspect_input_schema
from ..sse import SseError, SseParser

__all__ = [
    "CacheScope",
    "Listing",
    "ToolSchema",
    "declared_headers",
    "listing_from_body",
    "listing_from_message",
    "listing_from_result",
    "read_schemas",
]

CacheScope = Literal["public", "private"]
"""Who may share a listing (MCP 2026-07-28 "Caching": ``cacheScope``); absent or unknown counts as private."""

_MAX_BODY_EVENTS: Final = 10_000


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSchema:
    """What the gate knows of one tool: the headers its ``inputSchema`` declares (SEP-2243).

    Attributes:
        name: the tool's name.
        mirrored: the valid annotations in document order (empty when ``reason`` is set).
        reason: ``None`` when the annotations are valid; else the first reason they are not, and the tool then has
            no schema for the gate (its ``Mcp-Param-*`` headers are not checked; the server must refuse them).
    """

    name: str
    mirrored: tuple[MirroredParam, ...] = ()
    reason: str | None = None
    # What each call's check reads, worked out once per learned tool rather than once per call (bench/gate.py):
    # per declared parameter, the parameter, its header's name and that name in lowercase. Empty when not valid.
    declared: tuple[tuple[MirroredParam, str, str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        declared = declared_headers(self.mirrored) if self.reason is None else ()
        object.__setattr__(self, "declared", declared)

    @property
    def valid(self) -> bool:
        """True when the tool's annotations are valid, so its ``Mcp-Param-*`` headers are verified."""
        return self.reason is None

    @classmethod
    def of(cls, name: str, input_schema: object) -> ToolSchema:
        """The schema of tool ``name`` from its ``inputSchema`` (any value; never raises)."""
        verdict = inspect_input_schema(input_schema)
        return cls(name=name, mirrored=verdict.mirrored, reason=verdict.reason)

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable record (for a shared store): the name, and the paths, tokens and types declared."""
        record: dict[str, Any] = {
            "name": self.name,
            "mirrored": [{"path": list(p.path), "token": p.token, "type": p.type} for p in self.mirrored],
        }
        if self.reason is not None:
            record["reason"] = self.reason
        return record

    @classmethod
    def from_json(cls, record: object) -> ToolSchema:
        """Rebuild a schema from :meth:`to_json` output.

        Raises:
            ValueError: the record is not one :meth:`to_json` writes.
        """
        if not isinstance(record, Mapping) or not isinstance(record.get("name"), str):
            raise ValueError("not a ToolSchema record: no string name")
        reason = record.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise ValueError("not a ToolSchema record: reason is not a string")
        entries = record.get("mirrored")
        if not isinstance(entries, list):
            raise ValueError("not a ToolSchema record: mirrored is not a list")
        mirrored: list[MirroredParam] = []
        for entry in entries:
            if not isinstance(entry, Mapping):
                raise ValueError("not a ToolSchema record: a mirrored entry is not an object")
            path, token, kind = entry.get("path"), entry.get("token"), entry.get("type")
            if (
                not isinstance(path, list)
                or not path
                or not all(isinstance(segment, str) for segment in path)
                or not isinstance(token, str)
                or kind not in MIRRORABLE_TYPES
            ):
                raise ValueError("not a ToolSchema record: a mirrored entry lacks a path, a token or a type")
            mirrored.append(MirroredParam(path=tuple(path), token=token, type=kind))
        return cls(name=record["name"], mirrored=tuple(mirrored), reason=reason)


def declared_headers(mirrored: tuple[MirroredParam, ...]) -> tuple[tuple[MirroredParam, str, str], ...]:
    """Per declared parameter: the parameter, its header's name (``Mcp-Param-`` and token) and that name lowercased."""
    return tuple((param, param.header, param.header.lower()) for param in mirrored)


_NO_TOOLS: Final[Mapping[str, ToolSchema]] = MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class Listing:
    """One page of a ``tools/list`` result, as the gate learns it.

    Attributes:
        tools: each listed tool's schema, by name. A name listed twice with different schemas is ambiguous: that
            tool has no schema (``reason`` says so).
        ttl_ms: the page's ``ttlMs`` (a negative one counts as 0, MCP 2026-07-28 "Caching"), or ``None`` when
            absent or not an integer: the gate then keeps it for its ``learn_ttl``.
        cache_scope: ``"public"`` or ``"private"`` (absent or unknown: private, kept per authorization identity).
        next_cursor: the page's ``nextCursor``, or ``None`` on the last page.
    """

    tools: Mapping[str, ToolSchema] = field(default_factory=lambda: _NO_TOOLS)
    ttl_ms: int | None = None
    cache_scope: CacheScope = "private"
    next_cursor: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable record (for a shared store): the tools' schemas, the TTL, the scope and the cursor."""
        return {
            "tools": [schema.to_json() for schema in self.tools.values()],
            "ttl_ms": self.ttl_ms,
            "cache_scope": self.cache_scope,
            "next_cursor": self.next_cursor,
        }

    @classmethod
    def from_json(cls, record: object) -> Listing:
        """Rebuild a listing from :meth:`to_json` output.

        Raises:
            ValueError: the record is not one :meth:`to_json` writes.
        """
        if not isinstance(record, Mapping) or not isinstance(record.get("tools"), list):
            raise ValueError("not a Listing record: no tools list")
        ttl, scope, cursor = record.get("ttl_ms"), record.get("cache_scope"), record.get("next_cursor")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0):
            raise ValueError("not a Listing record: ttl_ms is not a non-negative integer")
        if scope not in ("public", "private") or not (cursor is None or isinstance(cursor, str)):
            raise ValueError("not a Listing record: bad cache_scope or next_cursor")
        tools = [ToolSchema.from_json(each) for each in record["tools"]]
        return cls(
            tools=MappingProxyType({schema.name: schema for schema in tools}),
            ttl_ms=ttl,
            cache_scope="public" if scope == "public" else "private",
            next_cursor=cursor,
        )


def listing_from_result(result: object) -> Listing | None:
    """The listing a ``tools/list`` result carries, or ``None`` when ``result`` is not one (no ``tools`` list).

    Entries that are not objects with a string ``name`` are skipped. Never raises.
    """
    if not isinstance(result, Mapping):
        return None
    tools = result.get("tools")
    if not isinstance(tools, list):
        return None
    found: dict[str, ToolSchema] = {}
    for tool in tools:
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            continue
        schema = ToolSchema.of(tool["name"], tool.get("inputSchema"))
        known = found.get(schema.name)
        if known is not None and known != schema:
            schema = ToolSchema(name=schema.name, reason="the listing names this tool twice, with different schemas")
        found[schema.name] = schema
    ttl = result.get("ttlMs")
    ttl_ms = max(ttl, 0) if isinstance(ttl, int) and not isinstance(ttl, bool) else None
    scope: CacheScope = "public" if result.get("cacheScope") == "public" else "private"
    cursor = result.get("nextCursor")
    return Listing(
        tools=MappingProxyType(found),
        ttl_ms=ttl_ms,
        cache_scope=scope,
        next_cursor=cursor if isinstance(cursor, str) else None,
    )


def listing_from_message(message: object) -> Listing | None:
    """The listing a decoded JSON-RPC success response carries, or ``None`` (an error, a notification, no listing).

    Never raises.
    """
    if not isinstance(message, Mapping) or message.get("jsonrpc") != "2.0" or "method" in message:
        return None
    if "error" in message or "id" not in message:
        return None
    return listing_from_result(message.get("result"))


def listing_from_body(body: bytes, content_type: str | None) -> Listing | None:
    """The listing in a ``tools/list`` response body as the gate forwards it, or ``None``.

    ``content_type`` picks the reading: ``text/event-stream`` is read event by event (the response is the event
    whose data is a JSON-RPC response; notifications before it are passed over), anything else as one JSON value.
    Never raises.
    """
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media != "text/event-stream":
        return listing_from_message(_decoded(body))
    parser = SseParser()
    try:
        events = [*parser.feed(body), *parser.close()]
    except SseError:
        return None
    for event in events[:_MAX_BODY_EVENTS]:
        if event.event == "message" and event.data:
            listing = listing_from_message(_decoded(event.data))
            if listing is not None:
                return listing
    return None


def _decoded(text: bytes | str) -> object:
    try:
        return decode_message(text)
    except ProtocolError:
        return None


def read_schemas(content: bytes | str) -> Listing:
    """The listing of a ``schemas=PATH`` file: a ``tools/list`` result, or a whole JSON-RPC response carrying one.

    Raises:
        ValueError: the content is not UTF-8 JSON, or holds neither a ``tools/list`` result nor a response with one
            (the message says which).
    """
    try:
        value = decode_message(content)
    except ProtocolError:
        raise ValueError("a schemas file must hold UTF-8 JSON") from None
    if isinstance(value, Mapping) and "tools" not in value and "result" in value:
        if "error" in value:
            raise ValueError("a schemas file holds a JSON-RPC error response, not a tools/list result")
        value = value["result"]
    listing = listing_from_result(value)
    if listing is None:
        raise ValueError('a schemas file must hold a tools/list result ({"tools": [...]}) or a response carrying one')
    return listing
