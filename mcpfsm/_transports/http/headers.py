"""The headers of each request: fixed ones made once, credentials to the endpoint's origin only, cookies.

- ``User-Agent: mcpfsm/<version>`` unless the caller's headers set one; ``Accept-Encoding: gzip, deflate``
  (:mod:`~mcpfsm._core.content_coding`); the caller's headers, except names starting with ``mcp-``
  (protocol-owned, SEP-2243); every one checked at construction (a header that cannot be sent is refused
  there, never quoted);
- **credentials**: the caller's ``Authorization`` and ``Cookie``, the URL's credentials (as ``Authorization:
  Basic``, which wins as in httpx) and the token of :class:`~mcpfsm._transports.base.RequestCredentials` only
  ever go to the origin of the URL the transport was made with; when a redirect changes the origin,
  ``Mcp-Session-Id`` stays behind too, unless that origin issued it: a session id belongs to the origin that
  issued it (a front that answers 307 to a stateful back end on another origin: the back end's id goes to the
  back end on every later hop, never to the front);
- **cookies** (RFC 6265), as an ``AsyncClient`` keeps them: what a response sets goes back on later requests
  where the jar's rules say it applies (:mod:`~mcpfsm._transports.cookies`), after a ``Cookie`` header of the
  caller's own; one jar per transport, in memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

from ..._core.constants import MCPFSM_VERSION
from ..._core.content_coding import ACCEPT_ENCODING
from ..._core.h1 import connection_header_problem, field_problem
from ..base import SESSION_HEADER, RequestCredentials, filter_custom_headers
from ..cookies import Cookies
from .urls import Origin, basic, names_credentials

if TYPE_CHECKING:
    import httpx

__all__ = ["USER_AGENT", "RequestHeaders", "field_values", "header_value", "session_headers"]

USER_AGENT: Final = f"mcpfsm/{MCPFSM_VERSION}"
"""The ``User-Agent`` sent unless the caller's headers set one."""

# Sent only to the origin they were meant for.
_CREDENTIAL_HEADERS: Final = frozenset({"authorization", "cookie"})

_SESSION: Final = SESSION_HEADER.lower()
# Session ids remembered with the origin that issued them (one session at a time, a few renewals).
_MAX_ISSUERS: Final = 8

Headers = tuple[tuple[str, str], ...]


class RequestHeaders:
    """What every request of one ``HttpTransport`` carries, by method and origin; see the module docstring.

    Args:
        url: the MCP endpoint as given (credentials in it become ``Authorization: Basic``).
        home: the origin of that URL: the only one credentials go to.
        headers: the caller's custom headers.
        authorization: asked for the ``Authorization`` (and ``DPoP``) headers of every request to ``home``.

    Raises:
        ValueError: a header that cannot be sent (a name that is no token, a value with a control or non-ASCII
            character; the message never quotes the value).
    """

    __slots__ = ("_authorization", "_cookies", "_credentials", "_fixed", "_home", "_issuers")

    def __init__(
        self,
        url: httpx.URL,
        home: Origin,
        headers: Mapping[str, str] | None,
        authorization: RequestCredentials | None,
    ) -> None:
        custom = filter_custom_headers(headers)
        for name, value in custom.items():
            if (problem := field_problem(name, value) or connection_header_problem(name)) is not None:
                raise ValueError(problem)
        lowered = {name.lower() for name in custom}
        credentials = [(name, value) for name, value in custom.items() if name.lower() in _CREDENTIAL_HEADERS]
        if names_credentials(url):
            # As httpx: credentials in the URL win over an Authorization header.
            credentials = [(n, v) for n, v in credentials if n.lower() != "authorization"]
            credentials.append(("Authorization", basic(url.username, url.password)))
        base = [
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "application/json"),
            *((("User-Agent", USER_AGENT),) if "user-agent" not in lowered else ()),
            *((("Accept-Encoding", ACCEPT_ENCODING),) if "accept-encoding" not in lowered else ()),
            *((n, v) for n, v in custom.items() if n.lower() not in _CREDENTIAL_HEADERS),
        ]
        # Hot path (bench/instructions.py): the headers every request to an origin carries, by (GET, the endpoint's
        # origin), are a tuple made once, so the pool checks and encodes them once. A resuming GET has no body and
        # asks for a stream only (its Accept comes with the request); the credentials only ever go to the endpoint's
        # origin.
        get_base = tuple((n, v) for n, v in base if n.lower() not in ("accept", "content-type"))
        self._fixed: dict[tuple[bool, bool], Headers] = {
            (False, True): (*base, *credentials),
            (False, False): tuple(base),
            (True, True): (*get_base, *credentials),
            (True, False): get_base,
        }
        self._credentials = credentials
        self._home = home
        self._authorization = authorization
        self._cookies: Cookies | None = None  # made with the first Set-Cookie
        # Session ids an origin other than the request's first issued (after a redirect), and that origin.
        self._issuers: dict[str, Origin] = {}

    def for_hop(
        self, url: httpx.URL, origin: Origin, start: Origin, method: str, extra: Mapping[str, str]
    ) -> tuple[Headers, Mapping[str, str] | list[tuple[str, str]]]:
        """``(fixed headers, the request's own)`` of ``method`` to ``url`` (at ``origin``), sent in that order.

        ``extra`` are the message's headers (``start`` is the origin its request began at: a redirect to
        another origin leaves ``Mcp-Session-Id`` behind). When nothing is added to them or taken from them
        (no token, no cookie, the first origin), the request's own are ``extra`` itself.
        """
        home = origin == self._home
        fixed = self._fixed[method == "GET", home]
        plain = self._cookies is None and not self._issuers and (not home or self._authorization is None)
        if plain and origin == start:
            # Hot path (bench/repeatable.py): the message's headers as they are, which the pool knows from the last
            # request with them (the header plan's read-only view is the same object every time).
            return fixed, extra
        headers: list[tuple[str, str]] = []
        if home and self._authorization is not None:
            # The token (and a DPoP proof for this method and URL) only ever goes to the endpoint's origin.
            headers += self._authorization.headers(method, str(url))
        if self._issuers:
            # A session id goes to the origin that issued it (a request's first origin, unless a redirect target
            # issued it), and nowhere else.
            session = next((v for n, v in extra.items() if n.lower() == _SESSION), None)
            owner = start if session is None else self._issuers.get(session, start)
            if origin == owner:
                headers += extra.items()
            else:
                headers += ((n, v) for n, v in extra.items() if n.lower() != _SESSION)
        elif origin == start:
            headers += extra.items()
        else:
            headers += ((n, v) for n, v in extra.items() if n.lower() != _SESSION)
        if self._cookies is not None and (cookie := self._cookies.header(str(url), method)) is not None:
            # The jar's cookies for this URL (RFC 6265 §5.4), after a Cookie header of the caller's own (which
            # is among the fixed headers: the request then goes with every header of its own).
            headers = [*fixed, *headers]
            fixed = ()
            mine = next((i for i, (name, _) in enumerate(headers) if name.lower() == "cookie"), None)
            if mine is None:
                headers.append(("Cookie", cookie))
            else:
                headers[mine] = (headers[mine][0], f"{headers[mine][1]}; {cookie}")
        return fixed, headers

    def issued(self, session_id: str, origin: Origin) -> None:
        """Remember that ``origin`` (a redirect target, not the request's first origin) issued ``session_id``."""
        if len(self._issuers) >= _MAX_ISSUERS:
            self._issuers.clear()
        self._issuers[session_id] = origin

    def keep_cookies(self, url: httpx.URL, method: str, set_cookie: Sequence[str]) -> None:
        """Keep what a response to ``method`` at ``url`` set (RFC 6265 §5.3): it applies from the next request on."""
        if self._cookies is None:
            self._cookies = Cookies()
        self._cookies.keep(str(url), method, set_cookie)

    def refusal_hint(self, status: int) -> str | None:
        """What to say about a refusal with ``status`` beyond the status itself (a 401: how to authorize)."""
        # A bare 401 reaches the caller when nothing answers it with a flow (no auth=, or a static token):
        # say what the server wants and how to give it (RFC 9110 §15.5.2, MCP 2026-07-28 "Authorization").
        if status != 401:
            return None
        if self._authorization is not None or any(n.lower() == "authorization" for n, _ in self._credentials):
            return "the server requires authorization and refused the credentials sent"
        return (
            "the server requires authorization: pass auth= to Client.http (mcpfsm.OAuth(), ClientCredentials(...),"
            " or a bearer token)"
        )


def header_value(headers: Mapping[str, str], name: str) -> str | None:
    """The value of header ``name`` in ``headers``, any case; ``None`` when absent."""
    lowered = name.lower()
    return next((value for key, value in headers.items() if key.lower() == lowered), None)


def field_values(headers: Mapping[str, str], name: str) -> tuple[str, ...]:
    """Every value of a header field that may repeat (``WWW-Authenticate``).

    httpx keeps them apart, the pool joins them with ", " (RFC 9110 §5.3: the same field either way).
    """
    get_list = getattr(headers, "get_list", None)  # httpx.Headers
    if get_list is not None:
        return tuple(get_list(name))
    value = headers.get(name)
    return () if value is None else (value,)


def session_headers(sent: Mapping[str, str]) -> list[tuple[str, str]]:
    """Of a request's headers, those of a ``GET`` or a ``DELETE``: the version and the session.

    A GET or a DELETE is no request of a method: never ``Mcp-Method`` or ``Mcp-Name``.
    """
    kept = ("mcp-protocol-version", SESSION_HEADER.lower())
    return [(name, value) for name, value in sent.items() if name.lower() in kept]
