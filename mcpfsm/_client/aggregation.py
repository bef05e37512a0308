"""A client group's aggregated names: a member's tool or prompt under ``{server}{separator}{name}`` (docs/groups.md).

Names keep to the characters MCP 2025-11-25 "Tools" recommends (SEP-986): any other character becomes ``_``, and a
name over 128 characters keeps its first 119 and a hash of the whole. A member's ``include_tools`` and
``exclude_tools`` select by the names the server lists; a name two members would still share is a
:class:`~mcpfsm.ConfigError` naming both, never an overwrite. :class:`GroupTool` is a member's tool under its
aggregated name.
"""

from __future__ import annotations

import hashlib
import re
from fnmatch import fnmatchcase
from typing import Final

from .._core.config import TOOL_NAME, ServerConfig
from .._core.errors import ConfigError
from .tools import CallTool, Tool

__all__ = ["GroupTool", "aggregated", "claim", "selected", "valid_separator"]

_INVALID: Final = re.compile(r"[^A-Za-z0-9_.\-]")


class GroupTool(Tool):
    """A tool of a :class:`ClientGroup`'s aggregated listing: a member's tool under its aggregated name.

    :attr:`name` is the aggregated name (``github_search``); :attr:`server` the member, :attr:`member_tool`
    the member's own handle (whose ``name`` is the server's). ``call()`` goes to the member's client with
    that member's headers and -32020 recovery, connecting the member first when it is idle.
    """

    __slots__ = ("_member", "_public", "_server")

    def __init__(self, member: Tool, public: str, server: str, call: CallTool) -> None:
        """Wrap ``member``; users get these from :meth:`ClientGroup.tools`."""
        super().__init__(member.definition, member._catalog, call, known_at=member.known_at)
        self._member = member
        self._public = public
        self._server = server

    @property
    def name(self) -> str:
        """The aggregated name, unique in the group's listing."""
        return self._public

    @property
    def server(self) -> str:
        """The name of the member that listed the tool."""
        return self._server

    @property
    def member_tool(self) -> Tool:
        """The member's own handle (its ``name`` is the server's name for the tool)."""
        return self._member

    @property
    def mirrored(self) -> dict[tuple[str, ...], str]:
        """Argument path -> ``Mcp-Param-*`` header name, as the member mirrors them (SEP-2243)."""
        return self._member.mirrored

    def __repr__(self) -> str:
        """Show the aggregated name, the member and the server's name."""
        return f"GroupTool({self._public!r}, server={self._server!r}, tool={self._member.name!r})"


def valid_separator(separator: str) -> bool:
    """Whether ``separator`` is made of the characters of a tool name (SEP-986)."""
    return not _INVALID.search(separator)


def aggregated(server: ServerConfig, name: str, separator: str) -> str:
    """The name ``name`` of ``server`` has in the group's listings (see the module docstring)."""
    prefix = server.prefix
    if prefix is None:
        prefix = server.name
    public = f"{prefix}{separator}{name}" if prefix else name
    if TOOL_NAME.fullmatch(public):
        return public
    cleaned = _INVALID.sub("_", public) or "_"
    if len(cleaned) > 128:
        cleaned = cleaned[:119] + "_" + hashlib.sha256(public.encode()).hexdigest()[:8]
    return cleaned


def selected(name: str, config: ServerConfig) -> bool:
    """Whether ``config``'s filters keep the tool ``name``."""
    # Filters match the names the server lists: include first, then exclude (exact names or fnmatch patterns).
    if config.include_tools is not None and not any(_matches(name, rule) for rule in config.include_tools):
        return False
    return not any(_matches(name, rule) for rule in config.exclude_tools)


def _matches(name: str, rule: str) -> bool:
    return name == rule or fnmatchcase(name, rule)


def claim(owners: dict[str, tuple[str, str]], public: str, server: str, own: str, what: str) -> None:
    """Record that ``server``'s ``own`` is ``public``.

    Raises:
        ConfigError: another server's tool or prompt has that name already (both named).
    """
    previous = owners.get(public)
    if previous is not None:
        raise ConfigError(
            f"{what} name {public!r} collides: server {previous[0]!r} lists {what} {previous[1]!r} and server"
            f" {server!r} lists {what} {own!r} under it; set a prefix or exclude_tools for one of them",
            path=None,
        )
    owners[public] = (server, own)
