"""Cassettes: a recorded MCP session as versioned JSON Lines, and the key a request is matched by (docs/testing.md).

Pure: no I/O. The recorder (``mcpfsm._transports.recorder``) builds each line with :func:`header_record` and
:func:`exchange_record` and writes :func:`encode_line`; :func:`parse_cassette` reads a file's lines back into a
:class:`Cassette`, naming the line at fault; the replay rules (``mcpfsm._core.replay``) match a request by its
:class:`MatchKey`.

The format, version 1. Line 1 is the header::

    {"mcpfsm_cassette": 1, "recorded_at": "2026-12-01T10:00:00Z", "server": URL or argv, "protocol": "2026-07-28"}

then one line per exchange, in the order the exchanges completed::

    {"seq": 1, "request": {"message": {...}, "headers": {...}},
     "response": {"status": 200, "headers": {...}, "messages": [...]}, "elapsed_ms": 3.2}

``messages`` holds, in order, every JSON-RPC message the server sent in answer: the requests and notifications
of an event stream, then the response (empty for a notification accepted with 202, or for an HTTP error without
a JSON-RPC body). The headers kept are exactly :data:`REQUEST_HEADERS` and :data:`RESPONSE_HEADERS`, those the
exchange carried; a stdio exchange has neither headers nor status. Nothing that authorizes a request is kept
(``Authorization``, cookies, ``DPoP``), and every string is passed through the caller's redaction (the client's
held secrets become ``[redacted]``, the audit log's marker).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from .constants import CLIENT_INFO_KEY, LEGACY_VERSIONS, MODERN_VERSION, NAME_PARAM, PROTOCOL_VERSION_KEY
from .errors import CassetteError

__all__ = [
    "CASSETTE_VERSION",
    "IGNORED_META",
    "REQUEST_HEADERS",
    "RESPONSE_HEADERS",
    "Cassette",
    "Exchange",
    "MatchKey",
    "canonical_json",
    "encode_line",
    "exchange_record",
    "header_record",
    "match_key",
    "mirrored",
    "parse_cassette",
    "recorded_headers",
    "settled_protocol",
    "target_of",
]

CASSETTE_VERSION: Final = 1
"""The cassette format this mcpfsm writes and reads (the header line's ``mcpfsm_cassette``)."""

REQUEST_HEADERS: Final = ("MCP-Protocol-Version", "Mcp-Method", "Mcp-Name", "Mcp-Session-Id")
"""The request headers a cassette keeps, besides every ``Mcp-Param-*`` (SEP-2243; MCP 2025-11-25 sessions)."""

RESPONSE_HEADERS: Final = ("Content-Type", "Mcp-Session-Id", "WWW-Authenticate")
"""The response headers a cassette keeps."""

PARAM_PREFIX: Final = "mcp-param-"

IGNORED_META: Final = frozenset({"progressToken", CLIENT_INFO_KEY, "traceparent", "tracestate", "baggage"})
"""``params._meta`` entries matching ignores: they name the request or describe the client or its trace, so
another client (or a newer mcpfsm) matches what this one recorded."""

_SPELLING: Final = {name.lower(): name for name in (*REQUEST_HEADERS, *RESPONSE_HEADERS)}

Transport = Literal["http", "stdio"]


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON: keys sorted, no whitespace, integral numbers written as integers (``1.0`` is ``1``).

    Two values compare equal as JSON exactly when their canonical texts are equal.
    """
    return json.dumps(_integral(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _integral(value: Any) -> Any:
    if type(value) is float and math.isfinite(value) and value == int(value):
        return int(value)
    if isinstance(value, dict):
        return {key: _integral(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral(item) for item in value]
    return value


ANSWER: Final = "[answer]"
"""What a cassette holds in place of each answer a user gave (``params.inputResponses``), unless the client was
made with ``audit_answers=True``; matching reads answers the same way, so a replay matches either."""


def without_answers(message: Any) -> Any:
    """``message`` with the user's answers of a resend (``params.inputResponses``, SEP-2322) masked as :data:`ANSWER`.

    Each answer keeps its ``action`` (accept, decline, cancel: what the server's next step depends on); its
    ``content`` (what the user typed, a password among it perhaps) and any other value become :data:`ANSWER`.
    Anything else is returned as it is.
    """
    if not isinstance(message, Mapping):
        return message
    params = message.get("params")
    responses = params.get("inputResponses") if isinstance(params, Mapping) else None
    if not isinstance(params, Mapping) or not isinstance(responses, Mapping):
        return message
    masked = {
        key: (
            {name: (item if name == "action" else ANSWER) for name, item in value.items()}
            if isinstance(value, Mapping)
            else ANSWER
        )
        for key, value in responses.items()
    }
    return {**message, "params": {**params, "inputResponses": masked}}


@dataclass(frozen=True, slots=True)
class MatchKey:
    """What a request is matched by: its method, its params as canonical JSON, and (HTTP) ``Mcp-Method``/``Mcp-Name``.

    The request id, ``_meta.progressToken`` and the ``_meta`` entries of :data:`IGNORED_META` are left out, and so
    is ``clientInfo`` in ``initialize`` (the same fact, spelled the 2025-11-25 way); answers are read as
    :func:`without_answers` shows them.
    """

    method: str
    params: str
    mcp_method: str | None = None
    mcp_name: str | None = None


def match_key(message: Mapping[str, Any], headers: Mapping[str, str] | None) -> MatchKey:
    """The :class:`MatchKey` of a JSON-RPC request or notification and the headers it came with (``None``: stdio)."""
    method = message.get("method")
    params = without_answers(message).get("params")
    kept: dict[str, Any] = dict(params) if isinstance(params, Mapping) else {}
    meta = kept.get("_meta")
    if isinstance(meta, Mapping):
        meta = {key: value for key, value in meta.items() if key not in IGNORED_META}
        if meta:
            kept["_meta"] = meta
        else:
            del kept["_meta"]
    if method == "initialize":
        kept.pop("clientInfo", None)
    found = {} if headers is None else {name.lower(): value for name, value in headers.items()}
    return MatchKey(
        method if isinstance(method, str) else "",
        canonical_json(kept),
        found.get("mcp-method"),
        found.get("mcp-name"),
    )


def mirrored(headers: Mapping[str, str] | None) -> frozenset[tuple[str, str]]:
    """The ``Mcp-Param-*`` headers among ``headers``, as a set of (lower-case name, value): how plans compare (§6)."""
    if not headers:
        return frozenset()
    return frozenset((name.lower(), value) for name, value in headers.items() if name.lower().startswith(PARAM_PREFIX))


def recorded_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]], names: Sequence[str]) -> dict[str, str]:
    """The headers among ``headers`` a cassette keeps: ``names`` (spelled as listed), every ``Mcp-Param-*`` as sent.

    A header given twice keeps its first value (mcpfsm sends each header once, SEP-2243).
    """
    wanted = {name.lower() for name in names}
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    kept: dict[str, str] = {}
    for name, value in pairs:
        lower = name.lower()
        if lower in wanted:
            kept.setdefault(_SPELLING.get(lower, name), value)
        elif lower.startswith(PARAM_PREFIX):
            kept.setdefault(name, value)
    return kept


def target_of(method: str, params: Any) -> str | None:
    """What a request acts on, for a message naming it: a tool's or a prompt's name, a resource's URI."""
    member = NAME_PARAM.get(method)
    if member is None or not isinstance(params, Mapping):
        return None
    value = params.get(member)
    return value if isinstance(value, str) else None


def settled_protocol(
    message: Mapping[str, Any], headers: Mapping[str, str] | None, messages: Sequence[Any]
) -> str | None:
    """The protocol version an exchange settles, or ``None`` when it settles none.

    An ``initialize`` answered with a result settles the version it names; a ``server/discover`` answered with a
    result whose ``supportedVersions`` holds 2026-07-28 settles that; any other request of the modern era (its
    ``MCP-Protocol-Version`` header, or on stdio its ``_meta`` version) answered with a result settles 2026-07-28,
    and a legacy request answered with a result (after ``initialize``) its own version.
    """
    final = messages[-1] if messages else None
    result = final.get("result") if isinstance(final, Mapping) else None
    if not isinstance(result, Mapping):
        return None
    method = message.get("method")
    if method == "initialize":
        version = result.get("protocolVersion")
        return version if isinstance(version, str) else None
    if method == "server/discover":
        supported = result.get("supportedVersions")
        return MODERN_VERSION if isinstance(supported, list) and MODERN_VERSION in supported else None
    version = None
    if headers is not None:
        version = next((value for name, value in headers.items() if name.lower() == "mcp-protocol-version"), None)
    if version is None:
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, Mapping) else None
        version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, Mapping) else None
    if version == MODERN_VERSION or version in LEGACY_VERSIONS:
        return str(version)
    return None


def header_record(*, recorded_at: str, server: str | Sequence[str], protocol: str | None) -> dict[str, Any]:
    """The header line's record: the format version, when, which server (URL or argv), which protocol."""
    return {
        "mcpfsm_cassette": CASSETTE_VERSION,
        "recorded_at": recorded_at,
        "server": server if isinstance(server, str) else list(server),
        "protocol": protocol,
    }


def exchange_record(
    *,
    seq: int,
    message: Any,
    request_headers: Mapping[str, str] | None,
    status: int | None,
    response_headers: Mapping[str, str] | None,
    messages: Sequence[Any],
    elapsed_ms: float,
) -> dict[str, Any]:
    """One exchange's record; ``request_headers=None`` (stdio) leaves out every header and the status."""
    request: dict[str, Any] = {"message": message}
    response: dict[str, Any] = {}
    if request_headers is not None:
        request["headers"] = dict(request_headers)
        response["status"] = status
        response["headers"] = dict(response_headers or {})
    response["messages"] = list(messages)
    return {"seq": seq, "request": request, "response": response, "elapsed_ms": round(elapsed_ms, 1)}


def encode_line(record: Mapping[str, Any], redact: Callable[[str], str] | None = None) -> str:
    """``record`` as one JSON line (with its newline), every string of it passed through ``redact`` first."""
    value: Any = record if redact is None else _redacted(record, redact)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


def _redacted(value: Any, redact: Callable[[str], str]) -> Any:
    # Each string on its own: a redaction marker never cuts across the JSON around it.
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {redact(key) if isinstance(key, str) else key: _redacted(item, redact) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(item, redact) for item in value]
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class Exchange:
    """One recorded request and everything the server sent in answer.

    Attributes:
        seq: its ``seq`` (the order in which the recorded exchanges completed).
        line: its line in the file (1-based; the header is line 1).
        message: the request (or notification) as sent, a JSON-RPC object.
        request_headers: the recorded request headers; ``None`` on stdio.
        status: the HTTP status of the answer; ``None`` on stdio.
        response_headers: the recorded response headers; ``None`` on stdio.
        messages: every JSON-RPC message of the answer, in order, the response last.
        elapsed_ms: how long the exchange took when it was recorded.
        key: what a request must match to be answered with it.
    """

    seq: int
    line: int
    message: Mapping[str, Any]
    request_headers: Mapping[str, str] | None
    status: int | None
    response_headers: Mapping[str, str] | None
    messages: tuple[Any, ...]
    elapsed_ms: float
    key: MatchKey

    @property
    def method(self) -> str:
        """The request's method."""
        return self.key.method


@dataclass(frozen=True, slots=True, kw_only=True)
class Cassette:
    """A parsed cassette: its header and its exchanges, in file order.

    Attributes:
        source: where it was read from (a path), for messages.
        recorded_at: when the recording started (ISO-8601).
        server: the server recorded: a URL (HTTP) or an argv tuple (stdio).
        protocol: the protocol version the session spoke, or ``None`` when the recording settled none.
        exchanges: the exchanges, in file order.
    """

    source: str
    recorded_at: str
    server: str | tuple[str, ...]
    protocol: str | None
    exchanges: tuple[Exchange, ...]

    @property
    def transport(self) -> Transport:
        """``"http"`` for a cassette recorded from a URL, ``"stdio"`` for one recorded from a command."""
        return "http" if isinstance(self.server, str) else "stdio"


def parse_cassette(lines: Iterable[str | bytes], *, source: str) -> Cassette:
    """Read a cassette's lines (the file's content split at newlines; blank lines skipped).

    Raises:
        CassetteError: the file is empty, its version is not :data:`CASSETTE_VERSION`, or a line is not JSON or
            lacks a required field; the message names ``source`` and the 1-based line.
    """
    header: dict[str, Any] | None = None
    exchanges: list[Exchange] = []
    transport: Transport = "http"
    for number, raw in enumerate(lines, start=1):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise _malformed(source, number, f"not JSON ({exc})") from None
        if not isinstance(record, dict):
            raise _malformed(source, number, "not a JSON object")
        if header is None:
            header = _header(record, source, number)
            transport = "http" if isinstance(header["server"], str) else "stdio"
            continue
        exchanges.append(_exchange(record, source, number, transport))
    if header is None:
        raise CassetteError(f"{source}: empty: a cassette starts with its header line", line=1)
    server = header["server"]
    return Cassette(
        source=source,
        recorded_at=header["recorded_at"],
        server=server if isinstance(server, str) else tuple(server),
        protocol=header["protocol"],
        exchanges=tuple(exchanges),
    )


def _malformed(source: str, number: int, why: str) -> CassetteError:
    return CassetteError(f"{source}: line {number}: {why}", line=number)


def _header(record: dict[str, Any], source: str, number: int) -> dict[str, Any]:
    if "mcpfsm_cassette" not in record:
        raise _malformed(source, number, "not a cassette header (no mcpfsm_cassette)")
    version = record["mcpfsm_cassette"]
    if version != CASSETTE_VERSION or type(version) is not int:
        raise _malformed(
            source, number, f"cassette version {version!r} is not one this mcpfsm reads (it reads {CASSETTE_VERSION})"
        )
    if not isinstance(record.get("recorded_at"), str):
        raise _malformed(source, number, "the header lacks recorded_at (a string)")
    server = record.get("server")
    argv = isinstance(server, list) and bool(server) and all(isinstance(word, str) for word in server)
    if not (isinstance(server, str) or argv):
        raise _malformed(source, number, "the header's server is neither a URL nor a command (a list of strings)")
    if "protocol" not in record or not (record["protocol"] is None or isinstance(record["protocol"], str)):
        raise _malformed(source, number, "the header lacks protocol (a version string)")
    return record


def _exchange(record: dict[str, Any], source: str, number: int, transport: Transport) -> Exchange:
    def need(ok: bool, what: str) -> None:
        if not ok:
            raise _malformed(source, number, f"an exchange needs {what}")

    seq, request, response, elapsed = (record.get(k) for k in ("seq", "request", "response", "elapsed_ms"))
    need(type(seq) is int, "seq (an integer)")
    need(isinstance(request, dict) and isinstance(request.get("message"), dict), "request.message (an object)")
    need(isinstance(response, dict) and isinstance(response.get("messages"), list), "response.messages (a list)")
    need(isinstance(elapsed, int | float) and not isinstance(elapsed, bool), "elapsed_ms (a number)")
    assert isinstance(request, dict) and isinstance(response, dict)
    message = request["message"]
    need(isinstance(message.get("method"), str), "request.message.method (a string)")
    request_headers: dict[str, str] | None = None
    response_headers: dict[str, str] | None = None
    status: int | None = None
    if transport == "http":
        request_headers, response_headers = request.get("headers"), response.get("headers")
        status = response.get("status")
        need(_string_map(request_headers), "request.headers (an object of strings) on an HTTP cassette")
        need(_string_map(response_headers), "response.headers (an object of strings) on an HTTP cassette")
        need(type(status) is int and 100 <= status <= 599, "response.status (an HTTP status) on an HTTP cassette")
    return Exchange(
        seq=seq,  # type: ignore[arg-type]
        line=number,
        message=message,
        request_headers=request_headers,
        status=status,
        response_headers=response_headers,
        messages=tuple(response["messages"]),
        elapsed_ms=float(elapsed),  # type: ignore[arg-type]
        key=match_key(message, request_headers),
    )


def _string_map(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
