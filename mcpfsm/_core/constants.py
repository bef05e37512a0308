"""Protocol constants: versions, JSON-RPC error codes, ``_meta`` keys and limits (pure: no I/O).

One module, so that a code or a version string is spelled once. Sources: the MCP specification
revisions ``2026-07-28`` (per-request headers, ``server/discover``, SEP-2243 "HTTP Header
Standardization", SEP-2322 multi round-trip requests) and ``2025-11-25`` (the ``initialize``
handshake), and JSON-RPC 2.0 §5.1 for the reserved error codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = [
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LEGACY_VERSIONS",
    "LOG_LEVEL_KEY",
    "MAX_PAGES",
    "MCPFSM_VERSION",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CAPABILITY",
    "MODERN_VERSION",
    "NAME_PARAM",
    "TASKS_EXTENSION",
    "DECLARES_TASKS",
    "PARSE_ERROR",
    "PROTOCOL_VERSION_KEY",
    "LONG_LIVED_METHODS",
    "READ_ONLY_METHODS",
    "SERVER_INFO_KEY",
    "SPOKEN_VERSIONS",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "is_long_lived",
    "is_modern",
    "is_read_only",
]

MCPFSM_VERSION: Final = "0.1.0"
"""mcpfsm's own version: ``clientInfo.version`` and the ``User-Agent`` (``mcpfsm/0.1.0``)."""

MODERN_VERSION: Final = "2026-07-28"
"""The protocol revision with per-request headers and no handshake."""

LEGACY_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26")
"""Handshake-era revisions mcpfsm speaks, newest first."""

SPOKEN_VERSIONS: Final = (MODERN_VERSION, *LEGACY_VERSIONS)
"""Every revision mcpfsm speaks, newest first."""

NAME_PARAM: Final[Mapping[str, str]] = MappingProxyType(
    {
        "tools/call": "name",
        "prompts/get": "name",
        "resources/read": "uri",
        "tasks/get": "taskId",
        "tasks/update": "taskId",
        "tasks/cancel": "taskId",
    }
)
"""Methods that carry ``Mcp-Name``, and the params member it mirrors (SEP-2243; SEP-2663 for ``tasks/*``)."""

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
"""The tasks extension's identifier (SEP-2663), declared in ``clientCapabilities.extensions``."""

DECLARES_TASKS: Final = frozenset({"tools/call", "tasks/get", "tasks/update", "tasks/cancel", "subscriptions/listen"})
"""The requests that declare the tasks extension when the client opted in (SEP-2663)."""

# JSON-RPC 2.0 §5.1 reserved codes.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

# MCP 2026-07-28 codes.
HEADER_MISMATCH: Final = -32020
"""The server's view of the ``Mcp-*`` headers differs from the body (SEP-2243)."""
MISSING_REQUIRED_CAPABILITY: Final = -32021
"""The request needs a client capability that was not declared (MCP 2026-07-28)."""
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
"""The server does not speak the requested revision; ``data.supported`` lists what it does."""

PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
"""Where a 2026-07-28 result's ``_meta`` names the server (its ``Implementation``: name, version, title)."""

MAX_PAGES: Final = 1000
"""A listing longer than this many pages is a protocol error (it would never end)."""

DEFAULT_MAX_RESPONSE_BYTES: Final = 16 * 1024 * 1024
"""The default bound on one JSON body, one SSE event and one stdio line (16 MiB)."""

READ_ONLY_METHODS: Final = frozenset(
    {"server/discover", "initialize", "resources/read", "prompts/get", "completion/complete", "ping"}
)
"""Requests that ask and change nothing on the server (every ``*/list`` too, see :func:`is_read_only`)."""

LONG_LIVED_METHODS: Final = frozenset({"subscriptions/listen"})
"""Requests whose response stream stays open for as long as the client wants it (MCP 2026-07-28
"Subscriptions") and may be silent for any time in between: no read timeout bounds the stream."""


def is_modern(protocol_version: str | None) -> bool:
    """True for the per-request-header era (``2026-07-28``)."""
    return protocol_version == MODERN_VERSION


def is_read_only(method: str | None) -> bool:
    """True for a request the client may resend by itself after a connection failure.

    RFC 9110 §9.2.2: a client must not resend by itself a request the server may have acted on; a
    ``tools/call`` may have side effects, so only these read-only methods (and every ``*/list``)
    qualify. A notification or a response of ours (``None``) never does.
    """
    return method is not None and (method in READ_ONLY_METHODS or method.endswith("/list"))


def is_long_lived(method: str | None) -> bool:
    """True for a request whose response stream is expected to be silent for long (:data:`LONG_LIVED_METHODS`)."""
    return method in LONG_LIVED_METHODS
