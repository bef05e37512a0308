"""A tool's behaviour hints, :class:`ToolAnnotations` (pure: no I/O).

Its own module, imported with the first ``Tool.annotations`` (``mcpfsm.ToolAnnotations`` loads it too): a
client that never reads the hints never creates this class, and ``import mcpfsm`` stays quick
(bench/startup.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolAnnotations"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolAnnotations:
    """A tool's ``annotations``: hints about its behaviour (MCP 2025-11-25 and 2026-07-28 "Tools", ToolAnnotations).

    They are hints from the server, not guarantees: never trust them from a server you do not trust. A hint
    that is absent (or not a boolean) takes the specification's default, so ``destructive_hint`` is True
    unless the server said otherwise; ``raw`` tells what was sent. ``destructive_hint`` and
    ``idempotent_hint`` mean something only when ``read_only_hint`` is False.

    Attributes:
        title: ``annotations.title``, a display name, or ``None``.
        read_only_hint: the tool does not modify its environment (default False).
        destructive_hint: it may perform destructive updates (default True).
        idempotent_hint: calling it again with the same arguments has no additional effect (default False).
        open_world_hint: it may interact with an open world of external entities (default True).
        raw: the ``annotations`` object as listed (``{}`` when absent or not an object).
    """

    title: str | None = None
    read_only_hint: bool = False
    destructive_hint: bool = True
    idempotent_hint: bool = False
    open_world_hint: bool = True
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> ToolAnnotations:
        """Read the ``annotations`` of a tool entry; never raises (a malformed hint takes its default)."""
        raw = entry.get("annotations")
        if not isinstance(raw, Mapping):
            return cls()

        def hint(key: str, default: bool) -> bool:
            value = raw.get(key)
            return value if isinstance(value, bool) else default

        title = raw.get("title")
        return cls(
            title=title if isinstance(title, str) else None,
            read_only_hint=hint("readOnlyHint", False),
            destructive_hint=hint("destructiveHint", True),
            idempotent_hint=hint("idempotentHint", False),
            open_world_hint=hint("openWorldHint", True),
            raw=raw,
        )
