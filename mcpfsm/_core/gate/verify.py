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
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from ..codec import SENTINEL_PREFIX, decode_sentinel, is_sentinel_shaped
from ..constants import INVALID_REQUEST, NAME_PARAM, PROTOCOL_VERSION_KEY
from ..schema import MirroredParam, inspect_input_schema
from .body import lossless_decimal
from .learning import ToolSchema, declared_headers
from .outcomes import OK, ParamValue, Verdict
from .request import HeaderPairs, McpHeaders, ParsedRequest, parse_request

__all__ = ["MAX_SAFE_INTEGER", "check", "verify"]

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""The largest magnitude an integer parameter may have (the range every JSON reader holds exactly)."""

_VERSION: Final = "MCP-Protocol-Version"
_METHOD: Final = "Mcp-Method"
_NAME: Final = "Mcp-Name"
_STANDARD: Final = ((_VERSION, "mcp-protocol-version"), (_METHOD, "mcp-method"), (_NAME, "mcp-name"))
_SENTINEL: Final = SENTINEL_PREFIX
_SAFE_DIGITS: Final = len(str(MAX_SAFE_INTEGER))


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
    *,
    params: bool = True,
) -> Verdict:
    """:func:`verify` for a body already parsed (:func:`~mcpfsm._core.gate.request.parse_request`).

    ``headers`` may be read already (:meth:`McpHeaders.read`); ``request`` may be the verdict ``parse_request``
    gave for a body that is no request, which is returned as it is. With ``params=False`` an ok verdict is
    :data:`~mcpfsm._core.gate.OK`, without the verified values (for a caller with no policy to show them to; the
    same rules are checked). Never raises.
    """
    try:
        return _check(headers, request, schema, params)
    except Exception:  # totality's backstop: every rule is written not to raise, and a bug must not become a 500
        return Verdict.malformed(INVALID_REQUEST, "the request could not be read")


def _check(
    headers: HeaderPairs | McpHeaders,
    request: ParsedRequest | Verdict,
    schema: Mapping[str, Any] | ToolSchema | None,
    keep: bool = True,
) -> Verdict:
    # The hot path (bench/gate.py): each rule inline, in the order of the module's description, the usual request
    # (every header once, literal values that match) through the fewest calls; every refusal leaves through a helper.
    if isinstance(request, Verdict):
        return request
    sent = headers if isinstance(headers, McpHeaders) else McpHeaders.read(headers)
    if sent.malformed:
        return Verdict.malformed(INVALID_REQUEST, "a header is not a (name, value) pair of strings")
    declared = _declared(request, schema)
    if sent.repeated:  # some Mcp-* header came more than once: is it one the rules recognize?
        repeated = _repeated(sent.values, declared)
        if repeated is not None:
            return repeated
    params = request.params
    method = request.method
    # 2. MCP-Protocol-Version, where the body's _meta carries one.
    meta = params.get("_meta")
    if (type(meta) is dict or isinstance(meta, Mapping)) and PROTOCOL_VERSION_KEY in meta:
        # Read once per request (bench/gate.py): the era asked first; a repeated one was refused above.
        text = sent.protocol_version
        if text is None:
            return Verdict.mismatch(_VERSION, f"{_VERSION} is missing but the body's _meta carries a protocol version")
        if text != meta[PROTOCOL_VERSION_KEY] or not (text.isascii() and text.isprintable()):
            if not (text.isascii() and text.isprintable()):
                return _invalid(_VERSION)
            return Verdict.mismatch(_VERSION, f"{_VERSION} does not match the body's _meta protocol version")
    # 3. Mcp-Method.
    text = sent.one("mcp-method")
    if text is None:
        if not request.notification:
            return Verdict.mismatch(_METHOD, f"{_METHOD} is missing")
    else:
        if text != method or not (text.isascii() and text.isprintable()):
            if not (text.isascii() and text.isprintable()):
                return _invalid(_METHOD)
            return Verdict.mismatch(_METHOD, f"{_METHOD} does not match the body's method")
    # 4. Mcp-Name, on a method that names something.
    key = NAME_PARAM.get(method)
    if key is None and method[:6] == "tasks/":
        key = "taskId"
    if key is not None:
        text, named = sent.one("mcp-name"), params.get(key)
        # The usual name (sent, equal, plain text) decides here; every other case in _name (bench/gate.py).
        if text is None or text != named or text[:9] == _SENTINEL or not (text.isascii() and text.isprintable()):
            failed = _name(text, named, key, request.notification)
            if failed is not None:
                return failed
    # 5. Each declared Mcp-Param-*.
    if not declared:
        return OK
    arguments = params.get("arguments")
    verified: dict[str, ParamValue] = {}
    for param, header, lowered in declared:
        outcome = _param(param, header, sent.one(lowered), arguments)
        if type(outcome) is Verdict:
            return outcome
        if outcome is not None:
            verified[header] = outcome  # type: ignore[assignment]
    return Verdict(ok=True, params=MappingProxyType(verified)) if verified and keep else OK


def _declared(
    request: ParsedRequest, schema: Mapping[str, Any] | ToolSchema | None
) -> tuple[tuple[MirroredParam, str, str], ...]:
    # The parameters whose headers are recognized: those of the tool a tools/call names, from a valid schema only. A
    # call that names no tool (no string params.name) calls none, so it declares nothing: the server refuses it.
    if schema is None or request.method != "tools/call" or not isinstance(request.params.get("name"), str):
        return ()
    if type(schema) is ToolSchema:
        return schema.declared
    if isinstance(schema, ToolSchema):
        return schema.declared
    verdict = inspect_input_schema(schema)
    return declared_headers(verdict.mirrored) if verdict.valid else ()


def _repeated(
    values: Mapping[str, tuple[str, ...]], declared: tuple[tuple[MirroredParam, str, str], ...]
) -> Verdict | None:
    # 1. Every recognized header at most once.
    for header, lowered in _STANDARD:
        if len(values.get(lowered, ())) > 1:
            return Verdict.mismatch(header, f"{header} is sent more than once")
    for _, header, lowered in declared:
        if len(values.get(lowered, ())) > 1:
            return Verdict.mismatch(header, f"{header} is sent more than once")
    return None


def _name(text: str | None, body: object, key: str, notification: bool) -> Verdict | None:
    if text is None:
        if body is None or notification:
            return None
        return Verdict.mismatch(_NAME, f"{_NAME} is missing but the body carries params.{key}")
    if body is None:
        return Verdict.mismatch(_NAME, f"{_NAME} is present but the body carries no params.{key}")
    if text != body or text[:9] == _SENTINEL or not (text.isascii() and text.isprintable()):
        decoded, problem = _decoded(text)
        if decoded is None:
            return Verdict.mismatch(_NAME, f"{_NAME} {problem}")
        if not isinstance(body, str):
            return Verdict.mismatch(_NAME, f"{_NAME} cannot match the body's params.{key}, which is not a string")
        if decoded != body:
            return Verdict.mismatch(_NAME, f"{_NAME} does not match the body's params.{key}")
    return None


def _param(param: MirroredParam, header: str, text: str | None, arguments: object) -> Verdict | ParamValue | None:
    # The verified value of one declared parameter (None: no header, rightly), or the verdict against it.
    value = arguments
    for segment in param.path:
        # SEP-2243: the value at the exact property path; a missing key, a null or a non-object parent is none.
        if type(value) is not dict and not isinstance(value, Mapping):  # a dict first: the ABC check costs ten times
            value = None
            break
        value = value.get(segment)
        if value is None:
            break
    if value is None:
        if text is not None:
            return _against(param, header, "is present but the {where} is absent or null")
        return None
    kind = param.type
    # A string or a boolean inline, as _mirrorable reads them: the usual parameters (bench/gate.py).
    if kind == "string":
        expected: ParamValue | None = value if type(value) is str or isinstance(value, str) else None
    elif kind == "boolean":
        expected = value if type(value) is bool else None
    else:
        expected = _mirrorable(kind, value)
    if text is None:
        if expected is None:
            return None  # a value that cannot be mirrored goes without a header (docs/gate.md)
        return _against(param, header, "is missing but the {where} is present")
    if text[:9] == _SENTINEL or not (text.isascii() and text.isprintable()):
        decoded, problem = _decoded(text)
        if decoded is None:
            return Verdict.mismatch(header, f"{header} {problem}")
        text = decoded
    if expected is None:
        return _against(param, header, f"cannot match the {{where}}, which is no mirrorable {kind}")
    if kind == "string":
        if text != expected:
            return _against(param, header, "does not match the {where} (string)")
        return text
    if kind == "boolean":
        if text != "true" and text != "false":
            return _against(param, header, "is neither true nor false (the {where} is a boolean)")
        if (text == "true") is not expected:
            return _against(param, header, "does not match the {where} (boolean)")
        return expected
    number = _integer(text)
    if number is None:
        return _against(param, header, "is not an integer (the {where} is one)")
    if number > MAX_SAFE_INTEGER or number < -MAX_SAFE_INTEGER:
        return Verdict.mismatch(header, f"{header} is outside ±(2^53-1)")
    if number != expected:
        return _against(param, header, "does not match the {where} (integer)")
    return number


def _integer(text: str) -> int | None:
    # The integer a header writes as -?(0|[1-9][0-9]*)(\.0+)?, or None: ASCII digits only, no sign but a minus, no
    # leading zero, and a fraction of zeros only (the official Python client sends 42.0 for a float-typed 42).
    whole, dot, fraction = text.partition(".")
    digits = whole[1:] if whole[:1] == "-" else whole
    if not digits or not digits.isascii() or not digits.isdigit() or (digits[0] == "0" and len(digits) > 1):
        return None
    if dot and (not fraction or fraction.strip("0")):
        return None
    if len(digits) > _SAFE_DIGITS:  # past ±(2^53-1) whatever the digits; int() of thousands of digits would refuse
        return MAX_SAFE_INTEGER + 1
    return int(whole)


def _against(param: MirroredParam, header: str, template: str) -> Verdict:
    # A mismatch naming the header and the argument's path (a JSON pointer, built only when there is one to report).
    return Verdict.mismatch(header, f"{header} " + template.format(where=f"argument {param.pointer}"))


def _mirrorable(declared: str, value: object) -> ParamValue | None:
    # The value the header must equal, as the client mirrors it (docs/calls.md); None when it cannot be mirrored at all.
    if declared == "string":
        return value if isinstance(value, str) else None
    if declared == "boolean" or isinstance(value, bool):
        return value if declared == "boolean" and isinstance(value, bool) else None
    if isinstance(value, int):
        return int(value) if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else None
    if isinstance(value, float):  # a body another reader parsed: a binary float
        if not math.isfinite(value) or not value.is_integer() or abs(value) > MAX_SAFE_INTEGER:
            return None
        return int(value)
    exact = lossless_decimal(value)
    # A number written with a fraction or an exponent is an integer only when its text says exactly one: a binary
    # float rounds 9007199254740990.9999 to an integer, which a reader of decimals does not (docs/gate.md).
    if exact is None or not exact.is_finite() or exact.copy_abs() > MAX_SAFE_INTEGER:
        return None
    if exact != exact.to_integral_value():
        return None
    return int(exact)


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
