"""Faults a replay injects over its cassette, so that an agent's robustness is tested on purpose (docs/testing.md).

Pure values: a :class:`Fault` says what goes wrong and how many times; the replay rules
(:mod:`mcpfsm._core.replay`) apply it. ``mcpfsm.testing`` exports the helpers that make them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "HTTP_ONLY",
    "Fault",
    "FaultKind",
    "delay",
    "drop_after_request",
    "http_error",
    "mismatch_once",
    "session_expired",
]

FaultKind = Literal["mismatch_once", "drop_after_request", "delay", "http_error", "session_expired"]
"""What a :class:`Fault` does."""

HTTP_ONLY: Final = frozenset({"http_error", "session_expired"})
"""The faults that need HTTP: a status, a session. A stdio cassette refuses them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """One fault of a replay; :func:`mismatch_once` and the other helpers make them.

    Attributes:
        kind: what it does.
        method: the JSON-RPC method it fires on (``drop_after_request``, ``delay``, ``http_error``).
        tool: the tool whose call it fires on (``mismatch_once``).
        seconds: how long ``delay`` holds the answer back.
        status: the HTTP status ``http_error`` answers with.
        after: how many requests of a session ``session_expired`` lets through before its 404.
        times: how many times it fires (once by default).
    """

    kind: FaultKind
    method: str | None = None
    tool: str | None = None
    seconds: float = 0.0
    status: int | None = None
    after: int | None = None
    times: int = 1

    def __str__(self) -> str:
        what = {
            "mismatch_once": f"mismatch_once({self.tool!r})",
            "drop_after_request": f"drop_after_request({self.method!r})",
            "delay": f"delay({self.method!r}, {self.seconds:g})",
            "http_error": f"http_error({self.method!r}, {self.status})",
            "session_expired": f"session_expired(after={self.after})",
        }[self.kind]
        return what if self.times == 1 else f"{what[:-1]}, times={self.times})"


def _times(times: int) -> int:
    if type(times) is not int or times < 1:
        raise ValueError(f"times must be a whole number of at least 1, got {times!r}")
    return times


def _name(value: str, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value


def mismatch_once(tool: str, *, times: int = 1) -> Fault:
    """Answer ``tool``'s next call with -32020 (HeaderMismatch), as a server whose schema just changed.

    The next ``tools/list`` then shows ``tool`` with the ``x-mcp-header`` token of its first annotated property
    (in ``properties`` order, depth first) changed, so the client relists, compares, finds a new plan and
    retries (SEP-2243; the tool-call machine's ``relisting``, ``comparing``, ``retrying``); that retry gets the
    recorded answer whatever it mirrors. A tool without annotations keeps its listing, and its call then fails.

    Raises:
        ValueError: ``tool`` is empty, or ``times`` is not a whole number of at least 1.
    """
    return Fault(kind="mismatch_once", tool=_name(tool, "tool"), times=_times(times))


def drop_after_request(method: str, *, times: int = 1) -> Fault:
    """Read the next request of ``method``, then close the connection without answering it.

    Over HTTP the client sees a connection closed before any answer: a read-only request may be resent on a
    fresh connection, a ``tools/call`` never is (docs/http.md). On stdio the server's process is gone.

    Raises:
        ValueError: ``method`` is empty, or ``times`` is not a whole number of at least 1.
    """
    return Fault(kind="drop_after_request", method=_name(method, "method"), times=_times(times))


def delay(method: str, seconds: float, *, times: int = 1) -> Fault:
    """Hold the answer to the next request of ``method`` back for ``seconds``.

    Raises:
        ValueError: ``method`` is empty, ``seconds`` is not a finite number of at least 0, or ``times`` is not
            a whole number of at least 1.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"seconds must be a finite number of at least 0, got {seconds!r}")
    return Fault(kind="delay", method=_name(method, "method"), seconds=float(seconds), times=_times(times))


def http_error(method: str, status: int, *, times: int = 1) -> Fault:
    """Answer the next request of ``method`` with HTTP ``status`` (400 to 599) and an empty body (HTTP only).

    Raises:
        ValueError: ``method`` is empty, ``status`` is not an error status, or ``times`` is not a whole number
            of at least 1.
    """
    if type(status) is not int or not 400 <= status <= 599:
        raise ValueError(f"status must be an HTTP error status (400 to 599), got {status!r}")
    return Fault(kind="http_error", method=_name(method, "method"), status=status, times=_times(times))


def session_expired(*, after: int = 0, times: int = 1) -> Fault:
    """Answer 404 on the session once ``after`` of its requests went through, and forget the session (HTTP only).

    Requests with an ``id`` count (notifications and answers do not), on the current session: the count starts
    again with each new session (each ``initialize``). A 2025-11-25 client then opens a new session and resends
    (MCP 2025-11-25 "Session Management"); a 2026-07-28 client, which has no session, sees the 404.

    Raises:
        ValueError: ``after`` is not a whole number of at least 0, or ``times`` is not a whole number of at
            least 1.
    """
    if type(after) is not int or after < 0:
        raise ValueError(f"after must be a whole number of at least 0, got {after!r}")
    return Fault(kind="session_expired", after=after, times=_times(times))
