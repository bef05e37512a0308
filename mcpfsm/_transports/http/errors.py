"""The one mapping point of the HTTP transport: connection-layer exceptions and HTTP refusals become ``TransportError``.

Every connection-layer exception (httpx, trio, OS, HTTP framing, the pool's own) becomes a
:class:`~mcpfsm.TransportError` here, always ``raise … from exc``; cancellation is never wrapped. httpx
exceptions are mapped only when httpx is imported: a process without httpx raises none. An HTTP status
without a JSON-RPC body becomes a message naming the status, a hint and the start of the body.
"""

from __future__ import annotations

import json
import sys
from types import TracebackType
from typing import Any, Final

import trio

from ..._core.errors import ProtocolError, TransportError
from ..._core.h1 import H1Error
from ..._core.jsonrpc import decode_message
from ..pool import HttpResponse, WireError, WireTimeout

__all__ = [
    "MAX_STRAYS",
    "decoded_json",
    "is_break",
    "is_jsonrpc_error",
    "mapped",
    "raise_mapped",
    "status_message",
    "stray_id",
    "too_large",
]

MAX_STRAYS: Final = 4
"""Answers for other requests skipped on one connection before a request's own; one more is a ``TransportError``."""

_STATUS_HINTS: Final = {
    413: "the request was too large for the server (body or headers)",
    431: "the request headers were too large for the server (mirrored Mcp-Param-* values count)",
}
_ERROR_BODY_SNIPPET: Final = 200

_CONNECTION_ERRORS: Final = (
    WireError,
    H1Error,
    OSError,
    trio.BrokenResourceError,
    trio.ClosedResourceError,
)


class mapped:
    """``with mapped("what was being done"):`` turns a connection-layer exception into ``TransportError``."""

    __slots__ = ("_what",)

    def __init__(self, what: str) -> None:
        self._what = what

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if exc is None or not isinstance(exc, Exception):
            return  # nothing raised, or trio.Cancelled / KeyboardInterrupt: never wrapped
        raise_mapped(self._what, exc)


def raise_mapped(what: str, exc: Exception) -> None:
    """Raise the ``TransportError`` for a connection-layer ``exc``; return for any other (the caller re-raises it).

    Raises:
        TransportError: ``exc`` is a timeout or a connection failure; the message starts with ``what``.
    """
    # Hot path (bench/instructions.py): the request path calls this from an `except Exception` clause instead of
    # entering `mapped`: a try statement costs nothing until something is raised, a context manager three calls.
    httpx = sys.modules.get("httpx")
    if httpx is not None and isinstance(exc, httpx.TimeoutException):
        raise TransportError(f"{what} timed out ({type(exc).__name__})") from exc
    if isinstance(exc, WireTimeout):
        raise TransportError(f"{what} timed out ({exc.kind})") from exc
    if isinstance(exc, _CONNECTION_ERRORS) or (
        httpx is not None and isinstance(exc, httpx.HTTPError | httpx.StreamError | httpx.InvalidURL)
    ):
        # trio wraps socket errors: BrokenResourceError("") from ConnectionResetError(...).
        detail = str(exc) or str(exc.__cause__ or "") or type(exc).__name__
        raise TransportError(f"{what} failed: {detail}") from exc


def is_break(exc: Exception) -> bool:
    """True when ``exc`` says the connection broke (a reset, a truncated body): no timeout, nothing refused.

    A legacy event stream that broke so after an event id is resumed as one the server ended.
    """
    httpx = sys.modules.get("httpx")
    if isinstance(exc, WireTimeout) or (httpx is not None and isinstance(exc, httpx.TimeoutException)):
        return False
    if httpx is not None and isinstance(exc, httpx.TransportError):
        return True
    return isinstance(exc, H1Error | OSError | trio.BrokenResourceError)


def decoded_json(body: bytes) -> Any:
    """``body`` decoded as a JSON-RPC message, or ``None`` when it is none (the session then says what is wrong)."""
    try:
        return decode_message(body)
    except ProtocolError:
        return None


def stray_id(decoded: Any, request_id: object) -> object:
    """The id of a JSON-RPC response for another request than ``request_id``; ``None`` for anything else.

    A response with a ``null`` id (an error the server could not tie to a request) is no stray: it may answer
    this request. Anything that is not a response is the session's to judge.
    """
    if type(decoded) is not dict or "method" in decoded or ("result" not in decoded and "error" not in decoded):
        return None
    answered = decoded.get("id")
    if answered is None or (answered == request_id and type(answered) is type(request_id)):
        return None
    return answered


def too_large(what: str, limit: int) -> TransportError:
    """The error for a body or an event beyond ``max_response_bytes`` (``limit``)."""
    return TransportError(
        f"{what} is larger than max_response_bytes ({limit} bytes); the rest was not read and the connection was closed"
    )


def is_jsonrpc_error(body: bytes) -> bool:
    """True when ``body`` is a JSON-RPC error response (a 4xx/5xx that answers the message)."""
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(payload, dict) and payload.get("jsonrpc") == "2.0" and isinstance(payload.get("error"), dict)


def status_message(response: HttpResponse, body: bytes, hint: str | None = None) -> str:
    """``HTTP <status> <reason>: <hint> (<start of the body>)`` for a refusal without a JSON-RPC answer."""
    status = response.status
    reason = response.reason
    text = f"HTTP {status}" + (f" {reason}" if reason else "")
    hint = hint or _STATUS_HINTS.get(status)
    if hint:
        text += f": {hint}"
    snippet = body[:_ERROR_BODY_SNIPPET].decode("utf-8", "replace").strip()
    if snippet:
        text += f" ({snippet})"
    return text
