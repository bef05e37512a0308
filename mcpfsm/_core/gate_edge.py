"""The gate's HTTP edge, before and around the verifier: caps, hop-by-hop fields, eras, identity (pure).

What ``mcpfsm.gate`` does to a request before it decodes anything, and to the header fields it forwards
(docs/gate.md, "Defence first"):

- **caps** (:func:`header_caps`): at most :data:`MCP_HEADER_LIMIT` header fields whose name starts with ``mcp-``
  (any case; the standard ones count) and at most :data:`MCP_VALUE_LIMIT` bytes per such value, both inclusive;
  more is answered 431 (RFC 6585 §5). The body's own cap (413, RFC 9110 §15.5.14) is the reader's: it counts
  bytes as they arrive and never holds more than the cap.
- **hop-by-hop fields** (:func:`end_to_end`): RFC 9110 §7.6.1 — ``Connection`` and every field it names,
  ``Keep-Alive``, ``TE``, ``Transfer-Encoding``, ``Upgrade``, ``Proxy-Connection`` — are never forwarded, and
  the verifier judges the fields that are forwarded, so a field named in ``Connection`` counts as absent.
- **eras** (:func:`request_version`): a request whose ``MCP-Protocol-Version`` is not the modern revision (or that
  has none) is legacy; the gate does not verify it and, by default, forwards it without its ``Mcp-Param-*``
  fields (:func:`without_params`), since nothing obliged its sender to make them true.
- **identity** (:func:`identity_of`): who a private ``tools/list`` listing belongs to, as a SHA-256 fingerprint
  of the ``Authorization`` field (never the field itself).

Header fields are ``(name, value)`` pairs of ``bytes`` as an ASGI server hands them over (RFC 9110 §5.1: names
are case-insensitive; ASGI gives them in lowercase), duplicates and order kept.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Final, NamedTuple

from .constants import MODERN_VERSION

__all__ = [
    "DEFAULT_MAX_BODY",
    "HOP_BY_HOP",
    "MCP_HEADER_LIMIT",
    "MCP_VALUE_LIMIT",
    "CapExceeded",
    "Fields",
    "as_text",
    "end_to_end",
    "error_body",
    "field",
    "header_caps",
    "identity_of",
    "request_version",
    "without_params",
]

Fields = Sequence[tuple[bytes, bytes]]
"""Header fields as an ASGI scope holds them: ``(name, value)`` byte pairs, names in lowercase."""

MCP_HEADER_LIMIT: Final = 64
"""The most header fields whose name starts with ``mcp-`` one request may carry (431 beyond)."""

MCP_VALUE_LIMIT: Final = 8192
"""The longest value, in bytes, of one ``mcp-`` header field (431 beyond)."""

DEFAULT_MAX_BODY: Final = 4 * 1024 * 1024
"""The largest request body the gate reads, in bytes (413 beyond): 4 MiB."""

HOP_BY_HOP: Final = frozenset({b"connection", b"keep-alive", b"te", b"transfer-encoding", b"upgrade", b"proxy-connection"})
"""RFC 9110 §7.6.1: the fields meant for one connection only, plus every field ``Connection`` names."""

_MCP: Final = b"mcp-"
_PARAM: Final = b"mcp-param-"
_OWS: Final = b" \t"
_SHOWN_NAME: Final = 64


class CapExceeded(NamedTuple):
    """Why a request's ``mcp-`` header fields are refused (431): a reason key and a message without any value.

    Attributes:
        reason: ``"too_many_mcp_headers"`` or ``"mcp_header_too_large"`` (a key of ``HeaderGate.stats``).
        message: what was wrong, naming at most the field's name.
        header: the name of the field that is too long, or ``None`` when there are too many.
    """

    reason: str
    message: str
    header: str | None


def header_caps(fields: Fields) -> CapExceeded | None:
    """``None`` when ``fields`` keep within the caps of the ``mcp-`` fields, else what they exceed.

    Counts every field whose name starts with ``mcp-`` in any case (``MCP-Protocol-Version`` included); nothing
    is decoded.
    """
    count = 0
    for name, value in fields:
        if name[:4].lower() != _MCP:
            continue
        count += 1
        if len(value) > MCP_VALUE_LIMIT:
            shown = _shown(name)
            return CapExceeded(
                "mcp_header_too_large",
                f"the header {shown} is longer than {MCP_VALUE_LIMIT} bytes",
                shown,
            )
    if count > MCP_HEADER_LIMIT:
        return CapExceeded(
            "too_many_mcp_headers", f"{count} Mcp-* headers; at most {MCP_HEADER_LIMIT} are accepted", None
        )
    return None


def _shown(name: bytes) -> str:
    # A name as a message may quote it: visible ASCII only (RFC 9110 §5.1 token characters), and not too long.
    text = name[:_SHOWN_NAME].decode("latin-1")
    return "".join(char if "!" <= char <= "~" else "?" for char in text)


def end_to_end(fields: Fields, *, also: frozenset[bytes] = frozenset()) -> list[tuple[bytes, bytes]]:
    """``fields`` without the hop-by-hop ones (RFC 9110 §7.6.1) and without the names in ``also``.

    ``also`` holds further lowercase names the caller frames itself (a proxy's ``host`` and ``content-length``).
    """
    named: set[bytes] = set()
    for name, value in fields:
        if name.lower() == b"connection":
            named.update(token.strip(_OWS).lower() for token in value.split(b","))
    dropped = HOP_BY_HOP | named | also if named else HOP_BY_HOP | also
    return [(name, value) for name, value in fields if name.lower() not in dropped]


def without_params(fields: Fields) -> list[tuple[bytes, bytes]]:
    """``fields`` without any ``Mcp-Param-*`` field (a legacy request's, under ``legacy="strip"``)."""
    return [(name, value) for name, value in fields if name[:10].lower() != _PARAM]


def field(fields: Fields, name: bytes) -> bytes | None:
    """The value of the first field called ``name`` (lowercase), or ``None``."""
    for key, value in fields:
        if key == name:
            return value
    return None


def request_version(fields: Fields) -> tuple[str | None, bool]:
    """The request's ``MCP-Protocol-Version`` (trimmed; ``None`` without one) and whether it is the modern era.

    A request without the field, or with any other version, is legacy (2026-07-28, "Protocol Version Header":
    a modern client sends it on every request).
    """
    value = field(fields, b"mcp-protocol-version")
    if value is None:
        return None, False
    version = value.strip(_OWS).decode("latin-1")
    return version, version == MODERN_VERSION


def identity_of(fields: Fields) -> str | None:
    """A fingerprint of the request's ``Authorization`` field, or ``None`` without one.

    The SHA-256 of the field's value under a label of the gate's, in hex: the same in every gate (so a fleet
    shares private listings through a store), never the value itself. A bearer token is a high-entropy secret;
    a slow digest would let any client spend the gate's CPU by sending a new value on each request.
    """
    value = field(fields, b"authorization")
    if value is None:
        return None
    return hashlib.sha256(b"mcpfsm gate identity\n" + value.strip(_OWS)).hexdigest()


def as_text(fields: Iterable[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    """``fields`` as ``(name, value)`` strings (ISO-8859-1, RFC 9110 §5.5), what the verifier reads."""
    return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in fields]


def error_body(request_id: object, code: int, message: str) -> bytes:
    """A JSON-RPC error response (``id`` as the request had it, ``null`` when unknown), as UTF-8 bytes."""
    if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
        request_id = None
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}},
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode("utf-8")
