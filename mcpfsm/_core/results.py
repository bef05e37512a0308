"""Typed results of MCP requests (pure: no I/O).

Each result type validates the JSON-RPC ``result`` object (or listing entry) it wraps and raises
:class:`~mcpfsm.ProtocolError` naming what is malformed, so a bad server answer never surfaces as an
unrelated ``KeyError`` or ``TypeError``. ``raw`` always keeps the object exactly as received. The
shapes are those of MCP 2026-07-28 ("Tools", "Resources", "Prompts", "Completion"), which the
2025-11-25 revision shares for every field read here.

This module holds what every client uses (a tool's result, the server's identity); the results of
resources, prompts and completion are in :mod:`mcpfsm._core.surface`, imported with the first such
request (``import mcpfsm`` stays quick: bench/startup.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .constants import SERVER_INFO_KEY
from .errors import ProtocolError

__all__ = [
    "ServerInfo",
    "ToolResult",
    "check_result_type",
]


def check_result_type(method: str, result: Mapping[str, Any]) -> None:
    """Refuse a result that is not complete (MCP 2026-07-28 "Result Types": absent means ``complete``).

    Raises:
        ProtocolError: ``resultType`` is present and is not ``"complete"``.
    """
    result_type = result.get("resultType", "complete")
    if result_type != "complete":
        raise ProtocolError(f"{method} result type {result_type!r} is not supported (only 'complete')")


def _optional_str(what: str, entry: Mapping[str, Any], key: str) -> str | None:
    value = entry.get(key)
    if value is not None and not isinstance(value, str):
        raise ProtocolError(f'{what} "{key}" is not a string')
    return value


def _required_str(what: str, entry: Mapping[str, Any], key: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str):
        raise ProtocolError(f'{what} has no string "{key}"')
    return value


def _object(what: str, value: object) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ProtocolError(f"{what} is not an object")
    return value


def _objects(what: str, value: object) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise ProtocolError(f"{what} is not a list of objects")
    # A loop, not all() over a generator: no generator object for the content of every tool result.
    for item in value:
        if not isinstance(item, dict):
            raise ProtocolError(f"{what} is not a list of objects")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The result of a ``tools/call``.

    Attributes:
        content: the content blocks, as dicts.
        structured_content: ``structuredContent``: any JSON value (MCP 2026-07-28 allows arrays, strings,
            numbers, booleans and ``null``, not only objects); ``None`` when absent or JSON ``null``.
        has_structured_content: True when the result carried ``structuredContent`` (even ``null``):
            tells an absent value from JSON ``null``.
        is_error: the tool's own error flag (not raised: the call itself succeeded).
        raw: the whole JSON-RPC result object.
    """

    content: list[dict[str, Any]]
    structured_content: Any
    has_structured_content: bool = False
    is_error: bool
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> ToolResult:
        """Validate a tools/call result object.

        Raises:
            ProtocolError: ``content`` is not a list of objects, ``isError`` is not a boolean, or
                ``resultType`` is not ``"complete"``.
        """
        check_result_type("tools/call", result)
        return cls.from_complete(result)

    @classmethod
    def from_complete(cls, result: dict[str, Any]) -> ToolResult:
        """Validate a tools/call result object whose ``resultType`` is known to be ``complete``.

        What :meth:`from_result` does after checking ``resultType``, for a caller that has checked it (the
        tool-call driver: the session checked it once for every result, and the driver read it).

        Raises:
            ProtocolError: ``content`` is not a list of objects, or ``isError`` is not a boolean.
        """
        content = _objects('tools/call result "content"', result.get("content", []))
        is_error = result.get("isError", False)
        if not isinstance(is_error, bool):
            raise ProtocolError('tools/call result "isError" is not a boolean')
        # A new instance filled as __init__ fills it, without packing keywords into a dict first: one result
        # per tool call (bench/layer.py, bench/instructions.py).
        made: ToolResult = _new(cls)
        _fill(made, content, result.get("structuredContent"), "structuredContent" in result, is_error, result)
        return made

    @property
    def text(self) -> str:
        """The text of every ``text`` content block, joined with newlines."""
        return "\n".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")


_new = object.__new__


def _fill(
    result: ToolResult,
    content: list[dict[str, Any]],
    structured_content: Any,
    has_structured_content: bool,
    is_error: bool,
    raw: dict[str, Any],
) -> None:
    # Every field of a new result through the slots' own setters, past the frozen __setattr__ (as the generated
    # __init__ goes past it).
    _SET_CONTENT(result, content)
    _SET_STRUCTURED_CONTENT(result, structured_content)
    _SET_HAS_STRUCTURED_CONTENT(result, has_structured_content)
    _SET_IS_ERROR(result, is_error)
    _SET_RAW(result, raw)


_SET_CONTENT: Callable[[ToolResult, Any], None] = ToolResult.__dict__["content"].__set__
_SET_STRUCTURED_CONTENT: Callable[[ToolResult, Any], None] = ToolResult.__dict__["structured_content"].__set__
_SET_HAS_STRUCTURED_CONTENT: Callable[[ToolResult, Any], None] = ToolResult.__dict__["has_structured_content"].__set__
_SET_IS_ERROR: Callable[[ToolResult, Any], None] = ToolResult.__dict__["is_error"].__set__
_SET_RAW: Callable[[ToolResult, Any], None] = ToolResult.__dict__["raw"].__set__


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerInfo:
    """What the server said about itself when the connection's era was settled.

    In the 2026-07-28 era it comes from the ``server/discover`` result (MCP 2026-07-28 "Discovery":
    ``capabilities``, ``instructions``, and the server's ``Implementation`` in
    ``_meta["io.modelcontextprotocol/serverInfo"]``); in the 2025-11-25 era from the ``initialize``
    result (MCP 2025-11-25 "Lifecycle": ``capabilities``, ``instructions``, ``serverInfo``). Both
    revisions call the identity display-only and ``instructions`` optional, so a field that is absent
    or not of its type reads as ``None`` (``{}`` for ``capabilities``) instead of failing the
    connection; ``raw`` keeps what was sent.

    Attributes:
        name: ``serverInfo.name``.
        version: ``serverInfo.version``.
        title: ``serverInfo.title``, a display name, when given.
        protocol_version: the protocol version of the connection it describes.
        capabilities: the server's capabilities (``tools``, ``resources``, ``prompts``, ``logging``, ...).
        instructions: natural-language guidance on using the server, meant for a model's system prompt;
            ``None`` when the server gave none.
        raw: the whole ``server/discover`` or ``initialize`` result object.
    """

    name: str | None
    version: str | None
    title: str | None = None
    protocol_version: str
    capabilities: dict[str, Any]
    instructions: str | None = None
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_discover(cls, result: dict[str, Any], protocol_version: str) -> ServerInfo:
        """Read a ``server/discover`` result of a connection speaking ``protocol_version``."""
        meta = result.get("_meta")
        identity = meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None
        if not isinstance(identity, dict):
            identity = result.get("serverInfo")  # where the initialize era kept it
        return cls._read(result, identity, protocol_version)

    @classmethod
    def from_initialize(cls, result: dict[str, Any]) -> ServerInfo:
        """Read an ``initialize`` result (its ``protocolVersion`` was checked by the session)."""
        version = result.get("protocolVersion")
        return cls._read(result, result.get("serverInfo"), version if isinstance(version, str) else "")

    @classmethod
    def _read(cls, result: dict[str, Any], identity: object, protocol_version: str) -> ServerInfo:
        identity = identity if isinstance(identity, dict) else {}
        capabilities = result.get("capabilities")
        return cls(
            name=_lenient_str(identity.get("name")),
            version=_lenient_str(identity.get("version")),
            title=_lenient_str(identity.get("title")),
            protocol_version=protocol_version,
            capabilities=capabilities if isinstance(capabilities, dict) else {},
            instructions=_lenient_str(result.get("instructions")),
            raw=result,
        )


def _lenient_str(value: object) -> str | None:
    return value if isinstance(value, str) else None
