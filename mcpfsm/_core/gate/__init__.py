"""The gate's pure core: read a request once, verify its headers against its body, learn schemas.

Pure: no I/O, no logging. One concept per module:

- :mod:`.request`: the ``Mcp-*`` headers read once (:class:`McpHeaders`), the body parsed once
  (:func:`parse_request`), the limits before any decoding, the request's era, the headers a proxy drops;
- :mod:`.verify`: :func:`verify` and :func:`check`, the rules of MCP 2026-07-28 "Server Validation";
- :mod:`.learning`: what ``tools/list`` teaches (:class:`ToolSchema`, :class:`Listing`), from a result, a JSON or SSE
  body, or a ``schemas=PATH`` file;
- :mod:`.settings`: the rules one gate applies (:class:`GateSettings`);
- :mod:`.outcomes`: what the gate gives out (:class:`Verdict`, :class:`VerifiedCall`, :class:`GateRefusal`,
  :class:`Refusal`).
"""

from __future__ import annotations

from .learning import (
    CacheScope,
    Listing,
    ToolSchema,
    listing_from_body,
    listing_from_message,
    listing_from_result,
    read_schemas,
)
from .outcomes import OK, GateRefusal, ParamValue, Refusal, Verdict, VerifiedCall
from .request import (
    DEFAULT_MAX_BODY,
    HOP_BY_HOP,
    LEGACY_REQUEST_VERSIONS,
    MAX_MCP_HEADER_BYTES,
    MAX_MCP_HEADERS,
    HeaderPairs,
    McpHeaders,
    ParsedRequest,
    end_to_end,
    name_param,
    parse_request,
    without_params,
)
from .settings import DEFAULT_LEARN_TTL, GateSettings, Legacy, Mode, OnUnknown, Policy
from .verify import MAX_SAFE_INTEGER, check, verify

__all__ = [
    "DEFAULT_LEARN_TTL",
    "DEFAULT_MAX_BODY",
    "HOP_BY_HOP",
    "LEGACY_REQUEST_VERSIONS",
    "MAX_MCP_HEADERS",
    "MAX_MCP_HEADER_BYTES",
    "MAX_SAFE_INTEGER",
    "OK",
    "CacheScope",
    "GateRefusal",
    "GateSettings",
    "HeaderPairs",
    "Legacy",
    "Listing",
    "McpHeaders",
    "Mode",
    "OnUnknown",
    "ParamValue",
    "ParsedRequest",
    "Policy",
    "Refusal",
    "ToolSchema",
    "Verdict",
    "VerifiedCall",
    "check",
    "end_to_end",
    "listing_from_body",
    "listing_from_message",
    "listing_from_result",
    "name_param",
    "parse_request",
    "read_schemas",
    "verify",
    "without_params",
]
