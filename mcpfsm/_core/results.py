"""Typed results of MCP requests (pure: no I/O).

Each result type validates the JSON-RPC ``result`` object it wraps and raises
:class:`~mcpfsm.ProtocolError` naming what is malformed, so a bad server answer never surfaces as an
unrelated ``KeyError`` or ``TypeError``. ``raw`` always keeps the object exactly as received.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import ProtocolError

__all__ = ["ToolResult"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The result of a ``tools/call``.

    Attributes:
        content: the content blocks, as dicts.
        structured_content: ``structuredContent`` when the tool returned one.
        is_error: the tool's own error flag (not raised: the call itself succeeded).
        raw: the whole JSON-RPC result object.
    """

    content: list[dict[str, Any]]
    structured_content: dict[str, Any] | None
    is_error: bool
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> ToolResult:
        """Validate a tools/call result object.

        Raises:
            ProtocolError: ``content`` is not a list of objects, ``structuredContent`` is not an
                object, ``isError`` is not a boolean, or ``resultType`` is not ``"complete"``.
        """
        result_type = result.get("resultType", "complete")
        if result_type != "complete":
            raise ProtocolError(f"tools/call result type {result_type!r} is not supported (only 'complete')")
        content = result.get("content", [])
        if not isinstance(content, list) or not all(isinstance(block, dict) for block in content):
            raise ProtocolError("tools/call result \"content\" is not a list of objects")
        structured = result.get("structuredContent")
        if structured is not None and not isinstance(structured, dict):
            raise ProtocolError("tools/call result \"structuredContent\" is not an object")
        is_error = result.get("isError", False)
        if not isinstance(is_error, bool):
            raise ProtocolError("tools/call result \"isError\" is not a boolean")
        return cls(content=content, structured_content=structured, is_error=is_error, raw=result)

    @property
    def text(self) -> str:
        """The text of every ``text`` content block, joined with newlines."""
        return "\n".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")
