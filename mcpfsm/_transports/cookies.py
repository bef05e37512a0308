"""The cookies of one HTTP transport (RFC 6265), kept by the standard library's ``http.cookiejar``.

An ``httpx.AsyncClient`` keeps a cookie jar; mcpfsm's own connection pool does the same, so a load balancer
that pins a client to a replica with a cookie (a "sticky session") sees that cookie on every later request,
and a legacy ``Mcp-Session-Id`` reaches the replica that holds the session. The rules are the jar's, never
written here: a cookie goes back only to the hosts its ``Domain`` (or, without one, the host that set it)
covers, only under its ``Path``, a ``Secure`` one only over https, and not after ``Expires``/``Max-Age``;
a ``Domain`` that does not cover the host setting it is refused. (RFC 6265 §8.5: cookies do not isolate
ports, so a cookie of ``127.0.0.1`` also goes to another port of that host, as in every browser.)

Each transport has its own jar, in memory, never shared and never stored. What this module adds are bounds
against a hostile server: a ``Set-Cookie`` value longer than 4096 bytes, or one that could not be sent back
as an HTTP field, is ignored, as is every value past the 50th of one response, and a jar that holds 3000
cookies takes no new one (those it holds are still replaced and expired; RFC 6265 §6.1 minimums).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from .._core.h1 import field_problem

if TYPE_CHECKING:
    import http.cookiejar
    import urllib.request

__all__ = ["Cookies"]

MAX_COOKIE_BYTES: Final = 4096
"""The longest ``Set-Cookie`` value kept (RFC 6265 §6.1: at least 4096 bytes per cookie)."""
MAX_PER_RESPONSE: Final = 50
"""The most ``Set-Cookie`` fields of one response that are read (RFC 6265 §6.1: at least 50 per domain)."""
MAX_COOKIES: Final = 3000
"""The most cookies one jar holds (RFC 6265 §6.1: at least 3000 in total); beyond it new names are dropped."""


class _Headers:
    # What http.cookiejar reads off a response: response.info().get_all(name, default).
    __slots__ = ("_values",)

    def __init__(self, values: Sequence[str]) -> None:
        self._values = list(values)

    def get_all(self, name: str, default: list[str] | None = None) -> list[str] | None:
        return list(self._values) if name.lower() == "set-cookie" else default


class _Response:
    __slots__ = ("_headers",)

    def __init__(self, values: Sequence[str]) -> None:
        self._headers = _Headers(values)

    def info(self) -> _Headers:
        return self._headers


class Cookies:
    """One transport's cookie jar; see the module docstring."""

    __slots__ = ("_jar",)

    def __init__(self) -> None:
        """An empty jar with the standard policy (RFC 6265-style rules; RFC 2965 cookies off)."""
        import http.cookiejar  # here: it imports urllib.request, which `import mcpfsm` does not

        self._jar: http.cookiejar.CookieJar = http.cookiejar.CookieJar()

    def __len__(self) -> int:
        """How many cookies are held (expired ones included until the next send)."""
        return len(self._jar)

    def keep(self, url: str, method: str, set_cookie: Sequence[str]) -> None:
        """Store what the response to ``method url`` set, as the jar's rules allow (an ignored value is dropped)."""
        usable = [
            value
            for value in set_cookie[:MAX_PER_RESPONSE]
            if len(value) <= MAX_COOKIE_BYTES and field_problem("Set-Cookie", value) is None
        ]
        if not usable:
            return
        jar, request, response = self._jar, _request(url, method), _Response(usable)
        if len(jar) + len(usable) <= MAX_COOKIES:
            jar.extract_cookies(response, request)  # type: ignore[arg-type]
            return
        # Near the bound: a cookie the jar already names is replaced as usual; a new name only while there is room.
        jar.clear_expired_cookies()
        held = {(cookie.domain, cookie.path, cookie.name) for cookie in jar}
        for cookie in jar.make_cookies(response, request):  # type: ignore[arg-type]
            if (cookie.domain, cookie.path, cookie.name) in held or len(jar) < MAX_COOKIES:
                jar.set_cookie_if_ok(cookie, request)
                held.add((cookie.domain, cookie.path, cookie.name))

    def header(self, url: str, method: str) -> str | None:
        """The ``Cookie`` header value for a request ``method url``, or ``None`` when no cookie applies."""
        request = _request(url, method)
        self._jar.add_cookie_header(request)
        return request.get_header("Cookie")


def _request(url: str, method: str) -> urllib.request.Request:
    import urllib.request

    return urllib.request.Request(url, method=method)

