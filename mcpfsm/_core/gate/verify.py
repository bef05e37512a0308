r"""The verifier: do a request's headers say what its body says? (MCP 2026-07-28, Streamable HTTP; docs/gate.md).

Pure and total: no I/O, no logging, and any header list with any body gives a :class:`Verdict`, never an exception.
:func:`verify` parses the body and calls :func:`check`; the middleware and the proxy parse once
(:func:`~mcpfsm._core.gate.request.parse_request`) and call :func:`check` themselves.

The rules, in the order they are checked (the first failure is the verdict):

1. Every recognized header at most once: ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` (on any method) and
   each ``Mcp-Param-*`` the tool's schema declares. Header names compare case-insensitively.
2. ``MCP-Protocol-Version`` equals the body's ``_meta`` protocol version where the body carries one; absent while the
   body carries one is a mismatch, absent from both is not counted.
3. ``Mcp-Method`` equals the body's ``method`` (never decoded); a request without it is a mismatch, a notification
   (whose headers this revision does not define) only when it carries a different one.
4. ``Mcp-Name`` equals ``params.name`` (``tools/call``, ``prompts/get``), ``params.uri`` (``resources/read``) or
   ``params.taskId`` (``tasks/*``) after decoding; present iff that member is present and not null. On a method that
   names nothing it is ignored.
5. For a ``tools/call`` naming a tool whose schema is known and valid, each declared ``Mcp-Param-*`` is present iff
   its argument is present, not null and can be mirrored (docs/calls.md), and equals it after decoding: strings
   exactly, integers as numbers within ±(2^53-1) (a header is an integer iff it matches
   ``-?(0|[1-9][0-9]*)(\\.0+)?``), booleans as ``true``/``false``. A body integer outside that range cannot be
   mirrored, so any header for it is a mismatch.

A header value is either the ``=?base64?…?=`` form (lowercase markers), whose payload must be canonical padded
Base64 of UTF-8 text, or a literal of visible ASCII and interior spaces; optional whitespace around it is trimmed.
Anything else is a mismatch ("invalid characters"). ``Mcp-Method`` and ``MCP-Protocol-Version`` are never encoded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from ..codec import decode_sentinel, is_sentinel_shaped
from ..constants import INVALID_REQUEST
from ..schema import MirroredParam, inspect_input_schema
from .learning import ToolSchema
from .outcomes import OK, ParamValue, Verdict
from .request import HeaderPairs, McpHeaders, ParsedRequest, parse_request

__all__ = ["MAX_SAFE_INTEGER", "check", "verify"]

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""The largest magnitude an integer parameter may have (the range every JSON reader holds exactly)."""

_VERSION: Final = "MCP-Protocol-Version"
_METHOD: Final = "Mcp-Method"
_NAME: Final = "Mcp-Name"
_STANDARD: Final = ((_VERSION, "mcp-protocol-version"), (_METHOD, "mcp-method"), (_NAME, "mcp-name"))
_INTEGER: Final = re.compile(r"-?(0|[1-9][0-9]*)(\.0+)?")
_NUMBERS: Final = (int, float)  # a tuple: isinstance against `int | float` builds the union on every call


def verify(headers: HeaderPairs, body: bytes | str, schema: Mapping[str, Any] | ToolSchema | None) -> Verdict:
    """Judge one request as the 2026-07-28 era does: do its headers say what its body says?

    Args:
        headers: the request's headers as received, duplicates kept: ``(name, value)`` pairs of ``str`` (or of
            ``bytes``, read as Latin-1).
        body: the request body.
        schema: the called tool's ``inputSchema`` (or its learned :class:`ToolSchema`); ``None`` when no schema is
            known, and then only the standard headers are checked. A schema whose annotations are invalid declares
            nothing (SEP-2243: such a tool is not used with mirroring).

    Returns:
        A :class:`Verdict`: ``ok``, or the first header that differs and a reason that names it and never quotes a
        value. A body that is no JSON-RPC request gives a verdict that is not ok, with no header. Never raises.
    """
    return check(headers, parse_request(body), schema)


def check(
    headers: HeaderPairs | McpHeaders,
    request: ParsedRequest | Verdict,
    schema: Mapping[str, Any] | ToolSchema | None,
) -> Verdict:
    """:func:`verify` for a body already parsed (:func:`~mcpfsm._core.gate.request.parse_request`).

    ``headers`` may be read already (:meth:`McpHeaders.read`); ``request`` may be the verdict ``parse_request``
    gave for a body that is no request, which is returned as it is. Never raises.
    """
    try:
        return _check(headers, request, schema)
    except Exception:  # totality's backstop: every rule is written not to raise, and a bug must not become a 500
        return Verdict.malformed(INVALID_REQUEST, "the request could not be read")


def _check(
    headers: HeaderPairs | McpHeaders,
    request: ParsedRequest | Verdict,
    schema: Mapping[str, Any] | ToolSchema | None,
) -> Verdict:
    if isinstance(request, Verdict):
        return request
    sent = headers if isinstance(headers, McpHeaders) else McpHeaders.read(headers)
    if sent.malformed:
        return Verdict.malformed(INVALID_REQUEST, "a header is not a (name, value) pair of strings")
    mirrored = _declared(request, schema)
    values = sent.values
    for header, lowered in _STANDARD:
        if len(values.get(lowered, ())) > 1:
            return Verdict.mismatch(header, f"{header} is sent more than once")
    declared = [(param, param.header) for param in mirrored]
    for _, header in declared:
        if len(values.get(header.lower(), ())) > 1:
            return Verdict.mismatch(header, f"{header} is sent more than once")
    failed = _version(sent, request) or _method(sent, request) or _name(sent, request)
    if failed is not None:
        return failed
    if not mirrored:
        return OK
    arguments = request.arguments
    verified: dict[str, ParamValue] = {}
    for param, header in declared:
        outcome = _param(param, header, values.get(header.lower(), ()), arguments)
        if isinstance(outcome, Verdict):
            return outcome
        if outcome is not None:
            verified[param.header] = outcome
    return Verdict(ok=True, params=MappingProxyType(verified)) if verified else OK


def _declared(request: ParsedRequest, schema: Mapping[str, Any] | ToolSchema | None) -> Sequence[MirroredParam]:
    # The parameters whose headers are recognized: those of the tool a tools/call names, from a valid schema only. A
    # call that names no tool (no string params.name) calls none, so it declares nothing: the server refuses it.
    if schema is None or request.tool is None:
        return ()
    if isinstance(schema, ToolSchema):
        return schema.mirrored if schema.valid else ()
    verdict = inspect_input_schema(schema)
    return verdict.mirrored if verdict.valid else ()


def _version(sent: McpHeaders, request: ParsedRequest) -> Verdict | None:
    values = sent.values.get("mcp-protocol-version", ())
    if not request.carries_version:
        # MCP 2026-07-28: the header must match the body's version; a body without one leaves nothing to match.
        return None
    if not values:
        return Verdict.mismatch(_VERSION, f"{_VERSION} is missing but the body's _meta carries a protocol version")
    if not _visible(values[0]):
        return _invalid(_VERSION)
    if values[0] != request.protocol_version:
        return Verdict.mismatch(_VERSION, f"{_VERSION} does not match the body's _meta protocol version")
    return None


def _method(sent: McpHeaders, request: ParsedRequest) -> Verdict | None:
    values = sent.values.get("mcp-method", ())
    if not values:
        if request.notification:
            return None
        return Verdict.mismatch(_METHOD, f"{_METHOD} is missing")
    if not _visible(values[0]):
        return _invalid(_METHOD)
    if values[0] != request.method:
        return Verdict.mismatch(_METHOD, f"{_METHOD} does not match the body's method")
    return None


def _name(sent: McpHeaders, request: ParsedRequest) -> Verdict | None:
    key = request.name_key
    if key is None:
        return None  # docs/gate.md: an Mcp-Name on a method that names nothing is ignored
    values = sent.values.get("mcp-name", ())
    body = request.params.get(key)
    if not values:
        if body is None or request.notification:
            return None
        return Verdict.mismatch(_NAME, f"{_NAME} is missing but the body carries params.{key}")
    if body is None:
        return Verdict.mismatch(_NAME, f"{_NAME} is present but the body carries no params.{key}")
    text, problem = _decoded(values[0])
    if text is None:
        return Verdict.mismatch(_NAME, f"{_NAME} {problem}")
    if not isinstance(body, str):
        return Verdict.mismatch(_NAME, f"{_NAME} cannot match the body's params.{key}, which is not a string")
    if text != body:
        return Verdict.mismatch(_NAME, f"{_NAME} does not match the body's params.{key}")
    return None


def _param(
    param: MirroredParam, header: str, values: tuple[str, ...], arguments: object
) -> Verdict | ParamValue | None:
    # The verified value of one declared parameter (None: no header, rightly), or the verdict against it.
    value = _argument(arguments, param.path)
    if value is None:
        if values:
            return _against(param, header, "is present but the {where} is absent or null")
        return None
    expected = _mirrorable(param.type, value)
    if not values:
        if expected is None:
            return None  # a value that cannot be mirrored goes without a header (docs/gate.md)
        return _against(param, header, "is missing but the {where} is present")
    text, problem = _decoded(values[0])
    if text is None:
        return Verdict.mismatch(header, f"{header} {problem}")
    if expected is None:
        return _against(param, header, f"cannot match the {{where}}, which is no mirrorable {param.type}")
    if param.type == "integer":
        if _INTEGER.fullmatch(text) is None:
            return _against(param, header, "is not an integer (the {where} is one)")
        number = int(text.partition(".")[0])
        if abs(number) > MAX_SAFE_INTEGER:
            return Verdict.mismatch(header, f"{header} is outside ±(2^53-1)")
        if number != expected:
            return _against(param, header, "does not match the {where} (integer)")
        return number
    if param.type == "boolean":
        if text not in ("true", "false"):
            return _against(param, header, "is neither true nor false (the {where} is a boolean)")
        if (text == "true") is not expected:
            return _against(param, header, "does not match the {where} (boolean)")
        return expected
    if text != expected:
        return _against(param, header, "does not match the {where} (string)")
    return text


def _against(param: MirroredParam, header: str, template: str) -> Verdict:
    # A mismatch naming the header and the argument's path (a JSON pointer, built only when there is one to report).
    return Verdict.mismatch(header, f"{header} " + template.format(where=f"argument {param.pointer}"))


def _argument(arguments: object, path: tuple[str, ...]) -> object:
    # SEP-2243: the instance value at the exact property path; a missing key, a null or a non-object parent is none.
    value = arguments
    for segment in path:
        if type(value) is not dict and not isinstance(value, Mapping):  # a dict first: the ABC check costs ten times
            return None
        value = value.get(segment)
        if value is None:
            return None
    return value


def _mirrorable(declared: str, value: object) -> ParamValue | None:
    # The value the header must equal, as the client mirrors it (docs/calls.md); None when it cannot be mirrored at all.
    if declared == "boolean":
        return value if isinstance(value, bool) else None
    if declared == "integer":
        if isinstance(value, bool) or not isinstance(value, _NUMBERS):
            return None
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                return None
            value = int(value)
        return int(value) if abs(value) <= MAX_SAFE_INTEGER else None
    return str.__str__(value) if isinstance(value, str) else None


def _decoded(value: str) -> tuple[str, None] | tuple[None, str]:
    # A header's text after decoding, or why no client could have sent it (the caller names the header).
    if is_sentinel_shaped(value):
        text = decode_sentinel(value)
        if text is None:
            return None, "is not valid Base64 (=?base64?…?= holds canonical padded Base64 of UTF-8)"
        return text, None
    if not _visible(value):
        return None, "holds characters that must be sent Base64-encoded (=?base64?…?=)"
    return value, None


def _invalid(header: str) -> Verdict:
    return Verdict.mismatch(header, f"{header} holds characters a header value may not carry")


def _visible(value: str) -> bool:
    # SEP-2243 "Value Encoding": visible ASCII and space only (the trimmed value has no space at either end).
    return value.isascii() and value.isprintable()
