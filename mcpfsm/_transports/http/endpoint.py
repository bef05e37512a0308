"""Requests to the MCP endpoint: redirects followed as ``httpx.AsyncClient(follow_redirects=True)`` follows them.

RFC 9110 §15.4: 307 and 308 are followed with method, body and headers, at most :data:`MAX_REDIRECTS` hops; a
308 moves the endpoint for the transport's life (while every hop so far was a 308), a 307 does not.
301/302/303 would turn a POST into a GET, so they are not followed for a POST: the error names the
``Location``. Each hop's headers come from :class:`~.headers.RequestHeaders` (credentials stay behind when the
origin changes), and it goes out on the :class:`~.routing.Route`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from ..._core.errors import TransportError
from ..._log import logger
from ..pool import ConnectError, HttpResponse
from .headers import RequestHeaders
from .routing import Hop, Route
from .urls import Origin, origin, redacted, redirect_target, target

if TYPE_CHECKING:
    import httpx

__all__ = ["MAX_REDIRECTS", "Endpoint"]

MAX_REDIRECTS: Final = 5
"""Redirect hops followed for one request."""

_FOLLOWED: Final = frozenset({307, 308})
_NOT_FOLLOWED_FOR_POST: Final = frozenset({301, 302, 303})


class Endpoint:
    """The MCP endpoint requests go to (where a 308 moved it), and the redirect loop; see the module docstring.

    Args:
        url: the endpoint, without credentials or fragment.
        headers: the headers of each hop.
        route: where each hop goes.
    """

    __slots__ = ("_headers", "_place", "_route", "_url")

    def __init__(self, url: httpx.URL, headers: RequestHeaders, route: Route) -> None:
        self._url = url
        # The endpoint's origin and request target, worked out once (and again when a 308 moves it).
        self._place: tuple[Origin, str] = origin(url), target(url)
        self._headers = headers
        self._route = route

    @property
    def url(self) -> httpx.URL:
        """The endpoint (where a 308 moved it, if one did), without credentials."""
        return self._url

    async def request(
        self,
        method: str,
        extra: Mapping[str, str],
        body: bytes = b"",
        *,
        resendable: bool,
        long_lived: bool = False,
        crossed: list[str] | None = None,
    ) -> HttpResponse:
        """Send ``method`` with the message's headers ``extra`` and ``body``, following redirects.

        Returns the first response that is no followed redirect; the caller closes it. A legacy session id that
        response assigns belongs to the origin it came from (:meth:`~.headers.RequestHeaders.issued`). When a
        redirect took the request to another origin, ``crossed`` (if given) gets ``"<from> to <to>"`` (what an
        error message says about it).

        Raises:
            TransportError: a redirect that is not followed, or more than :data:`MAX_REDIRECTS` of them.
            ConnectError: connecting failed (its ``url`` is the hop's, without credentials).
            Exception: what the route raises (``http.errors`` maps it).
        """
        url = first = self._url
        where, path = self._place
        start = where
        permanent = True
        for hops in range(MAX_REDIRECTS + 1):
            fixed, headers = self._headers.for_hop(url, where, start, method, extra)
            hop = Hop(url, where, path, method, fixed, headers, body, resendable, long_lived)
            try:
                response = await self._route.request(hop)
            except ConnectError as exc:
                exc.url = redacted(url)  # the message names the URL (never its credentials), not only host:port
                raise
            if response.set_cookie:
                # RFC 6265 §5.3: what a response sets (a redirect's included) applies from the next request on.
                self._headers.keep_cookies(url, method, response.set_cookie)
            status = response.status
            location = response.headers.get("location")
            if location is None or (status not in _FOLLOWED and (status not in _NOT_FOLLOWED_FOR_POST)):
                if where != start:
                    if (session := response.headers.get("mcp-session-id")) is not None:
                        self._headers.issued(session, where)
                    if crossed is not None:
                        crossed.append(f"{redacted(first)} to {redacted(url)}")
                return response
            await response.aclose()
            moved = redirect_target(url, location)
            if status in _NOT_FOLLOWED_FOR_POST and method != "GET":
                raise TransportError(
                    f"HTTP {status}: the server redirects to {redacted(moved)}, which would turn this {method}"
                    f" into a GET; mcpfsm follows only 307 and 308 for a {method} (point the client at that URL)",
                    status=status,
                )
            if hops == MAX_REDIRECTS:
                raise TransportError(
                    f"more than {MAX_REDIRECTS} redirects (the last to {redacted(moved)})", status=status
                )
            permanent = permanent and status == 308
            if permanent:
                # A 308 (and only while every hop so far was one) moves the endpoint for good.
                self._url = moved
                self._place = origin(moved), target(moved)
            logger.debug("following HTTP {} to {}", status, redacted(moved))
            url = moved
            where, path = origin(url), target(url)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
