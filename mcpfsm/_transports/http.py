"""Streamable HTTP transport (MCP "Transports"), behaving like an httpx client wherever a user can tell.

One :class:`HttpTransport` per client. By default it drives mcpfsm's own keep-alive
:class:`~mcpfsm._transports.pool.ConnectionPool` (HTTP/1.1 over trio sockets, one pool per origin):
a pool does constant work per request, where httpx's ``AsyncClient`` and httpcore's pool spend more
CPU on each request than the rest of a tool call together. Any ``httpx.AsyncBaseTransport`` given as
``transport`` (``httpx.MockTransport`` in unit tests) is driven instead, unchanged; both answer with
a :class:`~mcpfsm._transports.pool.HttpResponse`.

What ``httpx.AsyncClient(follow_redirects=True, trust_env=True)`` does, this does on either path, one
layer per concern (as httpx's ``send → _send_handling_redirects → _send_single_request``):

- **redirects** (RFC 9110 §15.4): 307 and 308 are followed with method, body and headers, at most
  :data:`MAX_REDIRECTS` hops; a 308 moves the endpoint for the transport's life (while every hop so
  far was a 308), a 307 does not. 301/302/303 would turn a POST into a GET, so they are not followed
  for a POST: the error names the ``Location``. When a hop changes the origin, ``Authorization``,
  ``Cookie``, ``Mcp-Session-Id`` and the URL's credentials stay behind; the caller's credentials
  only ever go to the origin of the URL the transport was made with;
- **credentials in the URL** (``http://user:pass@host/mcp``) become ``Authorization: Basic``
  (percent-decoded, RFC 7617) and appear nowhere else: not in the request target, :attr:`url`, a
  log line or an error; an empty userinfo (``http://@host/mcp``) carries none and is dropped
  (:func:`carries_credentials` is the one rule, also for ``Client.http`` and the CLI);
- **cookies** (RFC 6265), as an ``AsyncClient`` keeps them: what a response sets goes back on later requests
  where the jar's rules say it applies (:mod:`~mcpfsm._transports.cookies`, ``http.cookiejar``), after a
  ``Cookie`` header of the caller's own; one jar per transport, in memory;
- ``User-Agent: mcpfsm/<version>`` unless the caller's headers set one;
  ``Accept-Encoding: gzip, deflate``, and such bodies are decoded
  (:mod:`~mcpfsm._core.content_coding`);
- **limits**: ``max_response_bytes`` bounds a JSON body and one event of a stream, counted after
  decoding; beyond it the request fails, nothing more is buffered and the connection is closed;
- **proxies**, TLS trust and client certificates (default pool only; a caller's ``transport``
  brings its own): ``proxy=``, or with ``trust_env`` the ``HTTP(S)_PROXY``/``ALL_PROXY``/``NO_PROXY``
  rules (:mod:`~mcpfsm._core.proxies`); ``verify``/``cert`` (:mod:`~mcpfsm._transports.tls`);
- **no silent resend**: only a read-only request (:func:`~mcpfsm._core.constants.is_read_only`)
  may be resent by the pool after a keep-alive race (RFC 9110 §9.2.2); the transport learns the
  method from the JSON-RPC message itself, so the :class:`~mcpfsm.Transport` contract is unchanged;
- **strict framing** (RFC 9112 §6.3): ``Content-Length`` together with ``Transfer-Encoding`` is an
  error on both paths, and the connection is closed.

Replies: ``application/json`` bodies, ``text/event-stream`` streams (notifications and
server-to-client requests before the response are handed to the inbound handler), and JSON-RPC
error bodies on 4xx/5xx. A legacy session also keeps the standalone ``GET`` stream open
(:meth:`HttpTransport.open_stream`), read by a background task. Every connection-layer exception
(httpx, trio, OS, HTTP framing) becomes a :class:`~mcpfsm.TransportError` in :func:`_mapped`, the
one mapping point.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import ssl
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, cast

import trio

from .._core.constants import DEFAULT_MAX_RESPONSE_BYTES, MCPFSM_VERSION, is_long_lived, is_modern, is_read_only
from .._core.content_coding import ACCEPT_ENCODING, BodyTooLarge, ContentDecodeError, ContentDecoder
from .._core.errors import McpError, ProtocolError, TransportError
from .._core.h1 import H1Error, field_problem
from .._core.jsonrpc import Response, decode_message, outgoing_request, parse_message
from .._core.proxies import ProxyRules
from .._core.sse import SseError, SseEvent, SseParser, SseTooLarge, reconnection_delay
from .._log import logger
from .background import BackgroundTask, BackgroundTasks
from .base import NO_HEADERS, SESSION_HEADER, InboundHandler, Reply, RequestCredentials, filter_custom_headers
from .cookies import Cookies
from .pool import ConnectionPool, HttpResponse, ProxyRoute, Timeouts, WireError, WireReply, WireTimeout
from .tls import CertTypes, VerifyTypes, ssl_context

if TYPE_CHECKING:
    import httpx

    DEFAULT_TIMEOUT: httpx.Timeout

__all__ = ["DEFAULT_TIMEOUT", "MAX_REDIRECTS", "USER_AGENT", "HttpTransport", "carries_credentials"]

# DEFAULT_TIMEOUT: ``httpx.Timeout(30.0, read=300.0)``, made on first use (module __getattr__ below).
_DEFAULT_TIMEOUTS: Final = Timeouts(connect=30.0, write=30.0, read=300.0, pool=30.0)

MAX_REDIRECTS: Final = 5
"""Redirect hops followed for one request."""

USER_AGENT: Final = f"mcpfsm/{MCPFSM_VERSION}"
"""The ``User-Agent`` sent unless the caller's headers set one."""

# The pool policy (mcpfsm._transports.pool, README "Benchmarks"): 8 connections per origin for quick calls,
# up to 100 while every busy one is slow; all kept alive.
_SOFT_CONNECTIONS: Final = 8
_MAX_CONNECTIONS: Final = 100
_KEEPALIVE_EXPIRY: Final = 30.0
_MAX_RESUMES: Final = 3
_STATUS_HINTS: Final = {
    413: "the request was too large for the server (body or headers)",
    431: "the request headers were too large for the server (mirrored Mcp-Param-* values count)",
}
_FOLLOWED: Final = frozenset({307, 308})
_NOT_FOLLOWED_FOR_POST: Final = frozenset({301, 302, 303})
# Sent only to the origin they were meant for.
_CREDENTIAL_HEADERS: Final = frozenset({"authorization", "cookie"})
_ERROR_BODY_SNIPPET: Final = 200

_CONNECTION_ERRORS: Final = (
    WireError,
    H1Error,
    OSError,
    trio.BrokenResourceError,
    trio.ClosedResourceError,
)

Origin = tuple[str, str, int]


def __getattr__(name: str) -> object:
    # DEFAULT_TIMEOUT is an httpx value: made on first use, so that `import mcpfsm` does not import httpx.
    if name == "DEFAULT_TIMEOUT":
        import httpx

        return httpx.Timeout(30.0, read=300.0)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _mapped:
    # The one place connection-layer exceptions become TransportError (STYLE: one mapping point). A class,
    # not a @contextmanager generator: entered several times per request, it costs a third as much.
    # httpx exceptions are mapped only when httpx is imported: a process without httpx raises none.
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
        _raise_mapped(self._what, exc)


def _raise_mapped(what: str, exc: Exception) -> None:
    # The mapping itself: raises the TransportError for a connection-layer exception, returns for any other
    # (the caller re-raises it). The request path calls it from an `except Exception` clause instead of
    # entering `_mapped`: a try statement costs nothing until something is raised, a context manager three
    # calls per use, three times per request.
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


def _media_type(response: HttpResponse) -> str:
    content_type = response.headers.get("content-type", "")
    return content_type.partition(";")[0].strip().lower()


def _timeouts(timeout: httpx.Timeout | float | None) -> Timeouts:
    if timeout is None:
        return _DEFAULT_TIMEOUTS
    if isinstance(timeout, int | float):
        return Timeouts(connect=timeout, write=timeout, read=timeout, pool=timeout)

    def seconds(value: float | None) -> float:
        return math.inf if value is None else value

    return Timeouts(
        connect=seconds(timeout.connect),
        write=seconds(timeout.write),
        read=seconds(timeout.read),
        pool=seconds(timeout.pool),
    )


def _origin(url: httpx.URL) -> Origin:
    return url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80)


def _target(url: httpx.URL) -> str:
    # The request target (RFC 9112 §3.2.1 origin-form): the path and query as they go on the wire.
    return url.raw_path.decode("ascii")


def _redacted(url: httpx.URL) -> str:
    # Credentials never appear in a message (nor does a fragment, which never goes on the wire).
    return str(url.copy_with(username=None, password=None, fragment=None))


def carries_credentials(url: str) -> bool:
    """True when ``url`` names a user or a password: :class:`HttpTransport` sends them as ``Authorization: Basic``.

    An empty userinfo (``http://@host/mcp``, ``http://:@host/mcp``) carries no credentials: nothing is sent
    for it. A URL httpx cannot parse carries none here (the transport says what is wrong with it).
    """
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return False
    return _names_credentials(parsed)


def _names_credentials(url: httpx.URL) -> bool:
    return bool(url.username or url.password)


def _basic(username: str, password: str) -> str:
    # RFC 7617, with UTF-8 as httpx encodes it.
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def _parse_url(url: str | httpx.URL, what: str) -> httpx.URL:
    # httpx parses and normalises URLs (its URL is what this transport keeps); imported here, on first use.
    import httpx

    shown = url if isinstance(url, str) else str(url)
    try:
        parsed = httpx.URL(url)
        shown = _redacted(parsed)
    except (httpx.InvalidURL, TypeError) as exc:
        raise TransportError(f"invalid {what} {shown!r}: {exc}") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise TransportError(f"invalid {what} {shown!r}: expected an absolute http:// or https:// URL")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise TransportError(f"invalid {what} {shown!r}: port {parsed.port} is not between 1 and 65535")
    return parsed


class _HttpxResponse:
    # An HttpResponse over an httpx response, for a caller's httpx.AsyncBaseTransport. Its chunks are
    # the raw body: content decoding and limits are the transport's, the same on both paths. A
    # response the transport already read (httpx.Response(content=...) in a MockTransport) only has
    # its decoded content left; `decoded` says so.
    __slots__ = ("_chunks", "_response")

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self._chunks: AsyncGenerator[bytes, None] | None = None

    @property
    def status(self) -> int:
        return self._response.status_code

    @property
    def reason(self) -> str:
        return self._response.reason_phrase

    @property
    def headers(self) -> Mapping[str, str]:
        return self._response.headers

    @property
    def set_cookie(self) -> Sequence[str]:
        return self._response.headers.get_list("set-cookie")

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    @property
    def decoded(self) -> bool:
        return self._response.is_stream_consumed

    def chunks(self) -> AsyncIterator[bytes]:
        if self.decoded:
            self._chunks = _once(self._response.content)
        else:
            # httpx annotates aiter_raw as an AsyncIterator, but it is an async generator.
            self._chunks = cast("AsyncGenerator[bytes, None]", self._response.aiter_raw())
        return self._chunks

    async def aclose(self) -> None:
        chunks, self._chunks = self._chunks, None
        if chunks is not None:
            await _unwind(chunks)
        await self._response.aclose()

    async def abort(self) -> None:
        # httpcore closes a connection whose body was not read to its end; one that was is clean.
        await self.aclose()


class HttpTransport:
    """Streamable HTTP transport: POST per message, JSON or SSE replies (MCP "Transports").

    Args:
        url: the MCP endpoint; credentials in it become ``Authorization: Basic``.
        headers: custom headers for every request; names starting with ``mcp-`` are dropped.
        timeout: connect, write, read and pool timeouts (default :data:`DEFAULT_TIMEOUT`); the read
            timeout bounds each wait for more of a response, not the whole response. A long-lived stream
            (``subscriptions/listen``, the standalone ``GET``) may be silent for any time: the read timeout
            bounds the wait for its head only (on a caller's ``transport``, not even that).
        transport: an ``httpx.AsyncBaseTransport`` to drive instead of mcpfsm's keep-alive pool
            (the caller then owns closing it, and its proxy and TLS settings).
        sleep: the delay function used before resuming a stream (``trio.sleep``).
        verify: TLS trust: ``True``, ``False``, a CA bundle path or an ``ssl.SSLContext`` (as httpx).
        cert: a client certificate: a PEM path, or ``(certificate, key)`` paths.
        proxy: a proxy URL for every request (``http://`` or ``https://``; credentials in it become
            ``Proxy-Authorization``); overrides the environment.
        trust_env: read ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``, ``SSL_CERT_FILE``
            and ``SSL_CERT_DIR`` as httpx does.
        max_response_bytes: the largest JSON body and the largest event of a stream, decoded.
        credentials: asked for the ``Authorization`` (and ``DPoP``) headers of every request to the
            endpoint, and only of those (MCP "Authorization", "Access Token Usage").

    Raises:
        TransportError: ``url`` or ``proxy`` is not an absolute http(s) URL, its port is out of
            range, or a CA bundle or client certificate cannot be loaded.
        ValueError: ``verify``, ``cert`` or ``proxy`` given together with ``transport``,
            ``max_response_bytes`` below 1, or a header in ``headers`` that cannot be sent (a name that is
            no token, a value with a control or non-ASCII character; the message never quotes the value).
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Any] = trio.sleep,
        verify: VerifyTypes = True,
        cert: CertTypes | None = None,
        proxy: str | None = None,
        trust_env: bool = True,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        credentials: RequestCredentials | None = None,
    ) -> None:
        """Prepare the transport; no connection is made until the first message."""
        if max_response_bytes < 1:
            raise ValueError(f"max_response_bytes must be at least 1, got {max_response_bytes}")
        if transport is not None and (verify is not True or cert is not None or proxy is not None):
            raise ValueError(
                "verify, cert and proxy configure mcpfsm's own connection layer; configure them on the http_transport"
            )
        parsed = _parse_url(url, "MCP server URL")
        custom = filter_custom_headers(headers)
        for name, value in custom.items():
            if (problem := field_problem(name, value)) is not None:
                raise ValueError(problem)
        lowered = {name.lower() for name in custom}
        self._credentials: list[tuple[str, str]] = [
            (name, value) for name, value in custom.items() if name.lower() in _CREDENTIAL_HEADERS
        ]
        if _names_credentials(parsed):
            # As httpx: credentials in the URL win over an Authorization header.
            self._credentials = [(n, v) for n, v in self._credentials if n.lower() != "authorization"]
            self._credentials.append(("Authorization", _basic(parsed.username, parsed.password)))
        self._endpoint = parsed.copy_with(username=None, password=None, fragment=None)
        self.scrub: Callable[[BaseException], None] | None = None
        """Takes the client's secrets out of an error in place; set by the client that holds credentials.

        Applied to what this transport raises or logs on its own, outside any message's trip (the
        standalone stream): a server may quote a token back in an error body.
        """
        self._home: Origin = _origin(self._endpoint)
        # The endpoint's origin and request target, worked out once (and again when a 308 moves it).
        self._endpoint_place: tuple[Origin, str] = self._home, _target(self._endpoint)
        self._base: list[tuple[str, str]] = [
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "application/json"),
            *((("User-Agent", USER_AGENT),) if "user-agent" not in lowered else ()),
            *((("Accept-Encoding", ACCEPT_ENCODING),) if "accept-encoding" not in lowered else ()),
            *((n, v) for n, v in custom.items() if n.lower() not in _CREDENTIAL_HEADERS),
        ]
        # The headers every request to an origin carries, by (GET, the endpoint's origin): a tuple made once, so
        # the pool checks and encodes them once. A resuming GET has no body and asks for a stream only (its
        # Accept comes with the request); the credentials only ever go to the endpoint's origin.
        get_base = tuple((n, v) for n, v in self._base if n.lower() not in ("accept", "content-type"))
        self._fixed: dict[tuple[bool, bool], tuple[tuple[str, str], ...]] = {
            (False, True): (*self._base, *self._credentials),
            (False, False): tuple(self._base),
            (True, True): (*get_base, *self._credentials),
            (True, False): get_base,
        }
        if transport is not None:
            import httpx

            timeouts = timeout if isinstance(timeout, httpx.Timeout) else (
                httpx.Timeout(30.0, read=300.0) if timeout is None else httpx.Timeout(timeout)
            )
            self._extensions = {"timeout": timeouts.as_dict()}
            # A long-lived stream's silences are not bounded (httpx cannot tell the head's wait from the body's).
            self._long_lived_extensions = {"timeout": {**timeouts.as_dict(), "read": None}}
            self._timeouts = _timeouts(timeouts)
        else:
            self._extensions = {}
            self._long_lived_extensions = {}
            self._timeouts = _timeouts(timeout)
        self._max = max_response_bytes
        self._httpx = transport
        self._pools: dict[Origin, ConnectionPool] = {}
        self._verify = verify
        self._cert = cert
        self._trust_env = trust_env
        self._tls: ssl.SSLContext | None = None
        if transport is None:
            if proxy is not None:
                _parse_url(proxy, "proxy URL")
                self._proxies = ProxyRules.explicit(proxy)
            else:
                import urllib.request  # here: with http.client and email, it is most of a millisecond

                self._proxies = ProxyRules.from_environment(urllib.request.getproxies() if trust_env else {})
            if verify is not True or cert is not None:
                self._tls = ssl_context(verify, cert, trust_env=trust_env)  # a bad path fails here, not later
            self._pool_for(self._endpoint)
        self._sleep = sleep
        self._authorization = credentials
        self._cookies: Cookies | None = None  # made with the first Set-Cookie
        self._closed = False
        self._inbound: InboundHandler | None = None
        self._background = BackgroundTasks()
        self._stream: BackgroundTask | None = None

    @property
    def carries_headers(self) -> bool:
        """True: HTTP carries the per-request headers, so ``x-mcp-header`` annotations apply."""
        return True

    @property
    def url(self) -> str:
        """The MCP endpoint (where a 308 moved it, if one did), without credentials."""
        return str(self._endpoint)

    async def open(self, inbound: InboundHandler) -> None:
        """Route notifications and server-to-client requests from event streams to ``inbound``."""
        self._inbound = inbound

    async def send(self, message: str, headers: Mapping[str, str] = NO_HEADERS) -> Reply | None:
        """POST one JSON-RPC message and return its JSON-RPC answer with the HTTP status.

        Returns ``None`` when the server accepts a notification or a response of ours (202).

        Raises:
            TransportError: network failure, timeout, an HTTP error without a JSON-RPC body, a
                redirect that is not followed, an answer beyond ``max_response_bytes``, or a
                stream that ended before its response.
            ProtocolError: the reply is not JSON-RPC, or has an unexpected content type or coding.
        """
        if self._closed:
            raise TransportError("the HTTP transport is closed")
        request_id, method = outgoing_request(message)
        resendable = request_id is not None and is_read_only(method)
        try:
            response = await self._follow(
                "POST", headers, message.encode(), resendable=resendable, long_lived=is_long_lived(method)
            )
        except Exception as exc:
            _raise_mapped("POST to MCP server", exc)
            raise
        try:
            return await self._answer(response, request_id, headers)
        finally:
            if not (isinstance(response, WireReply) and response.released):
                # (A pooled reply whose body was read has released its connection: nothing is left to close.)
                try:
                    await response.aclose()
                except Exception as exc:
                    _raise_mapped("closing HTTP response", exc)
                    raise

    # --- redirects, credentials, one request -------------------------------------------------------

    async def _follow(
        self, method: str, extra: Mapping[str, str], body: bytes = b"", *, resendable: bool, long_lived: bool = False
    ) -> HttpResponse:
        # RFC 9110 §15.4, as httpx follows redirects; see the module docstring.
        url = self._endpoint
        origin, path = self._endpoint_place
        start = origin
        permanent = True
        for hops in range(MAX_REDIRECTS + 1):
            fixed, headers = self._headers_for(url, origin, start, method, extra)
            response = await self._request(url, origin, path, method, fixed, headers, body, resendable, long_lived)
            if response.set_cookie:
                # RFC 6265 §5.3: what a response sets (a redirect's included) applies from the next request on.
                if self._cookies is None:
                    self._cookies = Cookies()
                self._cookies.keep(str(url), method, response.set_cookie)
            status = response.status
            location = response.headers.get("location")
            if location is None or (status not in _FOLLOWED and (status not in _NOT_FOLLOWED_FOR_POST)):
                return response
            await response.aclose()
            target = self._redirect_target(url, location)
            if status in _NOT_FOLLOWED_FOR_POST and method != "GET":
                raise TransportError(
                    f"HTTP {status}: the server redirects to {_redacted(target)}, which would turn this {method}"
                    f" into a GET; mcpfsm follows only 307 and 308 for a {method} (point the client at that URL)",
                    status=status,
                )
            if hops == MAX_REDIRECTS:
                raise TransportError(
                    f"more than {MAX_REDIRECTS} redirects (the last to {_redacted(target)})", status=status
                )
            permanent = permanent and status == 308
            if permanent:
                # A 308 (and only while every hop so far was one) moves the endpoint for good.
                self._endpoint = target
                self._endpoint_place = _origin(target), _target(target)
            logger.debug("following HTTP {} to {}", status, _redacted(target))
            url = target
            origin, path = _origin(url), _target(url)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _redirect_target(self, url: httpx.URL, location: str) -> httpx.URL:
        import httpx

        try:
            target = url.join(location)
        except (httpx.InvalidURL, TypeError, ValueError) as exc:
            raise TransportError(f"the server redirects to an invalid URL: {exc}") from exc
        if target.scheme not in ("http", "https") or not target.host:
            raise TransportError(f"the server redirects to {_redacted(target)}, which is no http(s) URL")
        # Credentials in a Location are never used (httpx ignores them too); a fragment is never sent.
        return target.copy_with(username=None, password=None, fragment=None)

    def _headers_for(
        self, url: httpx.URL, origin: Origin, start: Origin, method: str, extra: Mapping[str, str]
    ) -> tuple[tuple[tuple[str, str], ...], list[tuple[str, str]]]:
        # (the fixed headers, the request's own): sent in that order.
        home = origin == self._home
        fixed = self._fixed[method == "GET", home]
        headers: list[tuple[str, str]] = []
        if home and self._authorization is not None:
            # The token (and a DPoP proof for this method and URL) only ever goes to the endpoint's origin.
            headers += self._authorization.headers(method, str(url))
        if origin == start:
            headers += extra.items()
        else:
            headers += ((n, v) for n, v in extra.items() if n.lower() != SESSION_HEADER.lower())
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

    async def _request(
        self,
        url: httpx.URL,
        origin: Origin,
        target: str,
        method: str,
        fixed: tuple[tuple[str, str], ...],
        headers: list[tuple[str, str]],
        body: bytes,
        resendable: bool,
        long_lived: bool,
    ) -> HttpResponse:
        # A long-lived stream (subscriptions/listen, the standalone GET) may be silent for any time: the
        # read timeout bounds the wait for its head only. A request's own answer keeps every timeout.
        if self._httpx is None:
            pool = self._pools.get(origin) or self._pool_for(url)
            # The 2xx body of a POST is read at once (JSON), or streamed (an event stream has no Content-Length).
            prefetch = method == "POST" and not long_lived
            return await pool.request(
                method,
                target,
                headers,
                body,
                resendable=resendable,
                prefetch=prefetch,
                long_lived=long_lived,
                fixed=fixed,
            )
        headers = [*fixed, *headers]
        for name, value in headers:
            # What the pool's framing refuses, refused here too: httpx and h11 would quote the value.
            if (problem := field_problem(name, value)) is not None:
                raise H1Error(problem)
        import httpx

        extensions = self._long_lived_extensions if long_lived else self._extensions
        request = httpx.Request(method, url, headers=headers, content=body or None, extensions=extensions)
        return _HttpxResponse(await self._httpx.handle_async_request(request))

    def _pool_for(self, url: httpx.URL) -> ConnectionPool:
        origin = _origin(url)
        pool = self._pools.get(origin)
        if pool is None:
            scheme, host, port = origin
            proxy = self._proxies.select(scheme, host, url.port)
            tls = self._context() if scheme == "https" else None
            pool = ConnectionPool(
                scheme=scheme,
                host=host,
                port=port,
                timeouts=self._timeouts,
                max_connections=_MAX_CONNECTIONS,
                soft_connections=_SOFT_CONNECTIONS,
                keepalive_expiry=_KEEPALIVE_EXPIRY,
                ssl_context=tls,
                proxy=None if proxy is None else self._route(proxy),
            )
            self._pools[origin] = pool
        return pool

    def _context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl_context(self._verify, self._cert, trust_env=self._trust_env)
        return self._tls

    def _route(self, proxy: str) -> ProxyRoute:
        url = _parse_url(proxy, "proxy URL")
        authorization = _basic(url.username, url.password) if _names_credentials(url) else None
        return ProxyRoute(
            scheme=url.scheme,
            host=url.host,
            port=_origin(url)[2],
            authorization=authorization,
            ssl_context=self._context() if url.scheme == "https" else None,
        )

    # --- the answer ----------------------------------------------------------------------------------

    async def _answer(self, response: HttpResponse, request_id: object, sent: Mapping[str, str]) -> Reply | None:
        status = response.status
        headers = response.headers
        if "content-length" in headers and "transfer-encoding" in headers:
            # RFC 9112 §6.3 (the default pool refuses these in its framing; a caller's transport may not).
            raise TransportError(f"HTTP {status} with both Content-Length and Transfer-Encoding (RFC 9112 §6.3)")
        session_id = headers.get("mcp-session-id")
        nonce = headers.get("dpop-nonce")
        media = _media_type(response)
        if 200 <= status < 300:
            if status in (202, 204):
                return None
            if media == "application/json":
                return Reply(await self._read_body(response), status, session_id, dpop_nonce=nonce)
            if media == "text/event-stream":
                answer = await self._read_stream(response, request_id, sent)
                return Reply(answer, status, session_id, dpop_nonce=nonce)
            raise ProtocolError(
                f"HTTP {status} with Content-Type {media or 'none'!r};"
                " expected application/json or text/event-stream"
            )
        body = await self._read_body(response, what="reading HTTP error response")
        challenges = _field_values(headers, "www-authenticate")
        if media == "application/json" and _is_jsonrpc_error(body):
            return Reply(body, status, session_id, challenges, nonce)
        raise TransportError(
            _status_message(response, body, self._refusal_hint(status)),
            status=status,
            www_authenticate=challenges,
            dpop_nonce=nonce,
        )

    def _refusal_hint(self, status: int) -> str | None:
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

    def _decoder(self, response: HttpResponse, *, limit: int | None) -> ContentDecoder:
        coding = None if isinstance(response, _HttpxResponse) and response.decoded else response.headers.get(
            "content-encoding"
        )
        try:
            return ContentDecoder(coding, limit=limit)
        except ContentDecodeError as exc:
            raise ProtocolError(str(exc)) from exc

    @staticmethod
    async def _abort(response: HttpResponse) -> None:
        with _mapped("closing HTTP response"):
            await response.abort()

    def _too_large(self, what: str) -> TransportError:
        return TransportError(
            f"{what} is larger than max_response_bytes ({self._max} bytes); the rest was not read"
            " and the connection was closed"
        )

    async def _read_body(self, response: HttpResponse, *, what: str = "reading HTTP response") -> bytes:
        limit = self._max
        length = response.headers.get("content-length", "")
        identity = "content-encoding" not in response.headers
        if identity and length.isdigit() and int(length) > limit:
            await self._abort(response)
            raise self._too_large(f"the server's answer (Content-Length {length})")
        if identity and length.isdigit() and isinstance(response, WireReply):
            # No coding, and a length within the limit that framing holds the body to: nothing to decode or count.
            try:
                return await response.read()
            except Exception as exc:
                _raise_mapped(what, exc)
                raise
        decoder = self._decoder(response, limit=limit)
        pieces: list[bytes] = []
        try:
            with _mapped(what):
                async for chunk in response.chunks():
                    pieces.extend(decoder.decode(chunk))
                pieces.extend(decoder.finish())
        except BodyTooLarge as exc:
            await self._abort(response)
            raise self._too_large("the server's answer") from exc
        except ContentDecodeError as exc:
            raise ProtocolError(str(exc)) from exc
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    async def _read_stream(self, response: HttpResponse, request_id: object, sent: Mapping[str, str]) -> str:
        parser = SseParser(max_event_bytes=self._max)
        answer = await self._consume(response, parser, request_id)
        if answer is not None:
            return answer
        resumes = 0
        # MCP 2025-11-25 "Resumability and Redelivery": a legacy stream cut before its response is
        # resumed; 2026-07-28 streams are not resumable, so a modern request is never reconnected.
        version = _header(sent, "mcp-protocol-version")
        resumable = version is not None and not is_modern(version)
        while resumable and parser.last_event_id and resumes < _MAX_RESUMES:
            resumes += 1
            await self._sleep(reconnection_delay(parser.retry))
            # A fresh parser: half a line from the cut stream must not be glued onto the new one.
            parser = SseParser(max_event_bytes=self._max, last_event_id=parser.last_event_id, retry=parser.retry)
            answer = await self._resume(parser, request_id, sent)
            if answer is not None:
                return answer
        raise TransportError(
            f"the server closed the event stream before answering request {request_id!r}"
            + (f" (after {resumes} resume attempts)" if resumes else "")
        )

    async def _resume(self, parser: SseParser, request_id: object, sent: Mapping[str, str]) -> str | None:
        headers = {"Accept": "text/event-stream", **dict(_session_headers(sent))}
        headers["Last-Event-ID"] = parser.last_event_id or ""
        with _mapped("resuming the event stream"):
            response = await self._follow("GET", headers, resendable=True)
        try:
            if response.status != 200 or _media_type(response) != "text/event-stream":
                body = await self._read_body(response, what="reading HTTP error response")
                # No status: it answered the GET, not the message. A 401 here is no challenge to the POST (the
                # authorization layer would resend it, and a tool would run twice), nor a 404 an expired session.
                raise TransportError("could not resume the event stream: " + _status_message(response, body))
            return await self._consume(response, parser, request_id)
        finally:
            with _mapped("closing HTTP response"):
                await response.aclose()

    async def _consume(self, response: HttpResponse, parser: SseParser, request_id: object) -> str | None:
        decoder = self._decoder(response, limit=None)
        try:
            with _mapped("reading the event stream"):
                async for chunk in response.chunks():
                    for piece in decoder.decode(chunk):
                        answer = await self._feed(parser, piece, request_id)
                        if answer is not None:
                            return answer
                for piece in decoder.finish():
                    answer = await self._feed(parser, piece, request_id)
                    if answer is not None:
                        return answer
        except SseTooLarge as exc:
            # The connection goes, with whatever the server still sends on it.
            await self._abort(response)
            raise self._too_large("an event of the server's stream") from exc
        except ContentDecodeError as exc:
            raise ProtocolError(str(exc)) from exc
        finally:
            # Ends the stream before a resuming GET; send() closing it again is a no-op.
            with _mapped("closing HTTP response"):
                await response.aclose()
        parser.close()
        return None

    async def _feed(self, parser: SseParser, piece: bytes, request_id: object) -> str | None:
        try:
            events = parser.feed(piece)
        except SseTooLarge:
            raise  # _consume closes the connection and says so
        except SseError as exc:
            raise ProtocolError(f"malformed event stream: {exc}") from exc
        for event in events:
            answer = await self._dispatch(event, request_id)
            if answer is not None:
                return answer
        return None

    async def _dispatch(self, event: SseEvent, request_id: object) -> str | None:
        if event.event != "message" or not event.data:
            # Priming events (an id and no data) and foreign event types carry no JSON-RPC.
            return None
        message = parse_message(decode_message(event.data))
        if isinstance(message, Response):
            if message.id == request_id:
                return event.data
            logger.warning("ignoring a response for unknown request id {!r} on the event stream", message.id)
            return None
        handler = self._inbound
        if handler is None:
            logger.debug("unhandled {} from the server: {}", type(message).__name__.lower(), message.method)
        else:
            await handler(message)
        return None

    # --- the standalone stream (MCP 2025-11-25 "Listening for Messages from the Server") ---------------

    async def open_stream(self, headers: Mapping[str, str]) -> bool:
        """Open the standalone ``GET`` stream with ``headers`` (session id, version) and keep it.

        Returns once the server has accepted the stream (so a request it sends there right after
        cannot be lost), or with False when it answers 405 (it offers none) or fails (logged at
        WARNING). A background task routes what arrives to the inbound handler. The stream may be silent
        for any time (no read timeout bounds it: server requests arrive whenever the server has one). A
        stream that breaks (network), or that the server ends after giving event ids, is reopened after the
        server's ``retry`` delay (default 1 s, at most 60 s) with ``Last-Event-ID``, until three reopened streams in a
        row bring nothing or the server refuses one; a stream the server ends without ids stays closed,
        and so does one that sends an event beyond ``max_response_bytes``. A second call replaces the
        stream; :meth:`end_session` and :meth:`aclose` close it.
        """
        await self._close_stream()
        if self._closed:
            return False
        try:
            response = await self._open_get(headers, None)
        except TransportError as exc:
            logger.warning("could not open the server's event stream: {}", exc)
            return False
        if response is None:
            return False

        def failed(exc: Exception) -> None:
            logger.warning("the server's event stream failed: {!r}", exc)

        async def listen() -> None:
            await self._listen(response, headers)

        self._stream = self._background.start(listen, name="mcpfsm standalone event stream", on_error=failed)
        return True

    async def _close_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.aclose()

    async def _open_get(self, headers: Mapping[str, str], last_event_id: str | None) -> HttpResponse | None:
        extra = {"Accept": "text/event-stream", **dict(_session_headers(headers))}
        if last_event_id is not None:
            extra["Last-Event-ID"] = last_event_id
        with _mapped("opening the server's event stream"):
            response = await self._follow("GET", extra, resendable=True, long_lived=True)
        if response.status == 200 and _media_type(response) == "text/event-stream":
            return response
        try:
            body = await self._read_body(response, what="reading HTTP error response")
        finally:
            with _mapped("closing HTTP response"):
                await response.aclose()
        if response.status == 405:
            logger.debug("the server offers no standalone event stream (HTTP 405)")
            return None
        refused = TransportError(
            _status_message(response, body, self._refusal_hint(response.status)), status=response.status
        )
        if self.scrub is not None:
            self.scrub(refused)
        raise refused

    async def _listen(self, response: HttpResponse, headers: Mapping[str, str]) -> None:
        # MCP 2025-11-25 "Resumability and Redelivery": a stream that broke (network; silence is no
        # failure: no read timeout bounds this stream) is reopened, and so is one the server ended after
        # giving event ids (it expects a resume with Last-Event-ID); one it ended without ids was closed on
        # purpose. Three reopened streams in a row that bring nothing, any refusal, or an event beyond
        # max_response_bytes end the loop: it is bounded.
        parser = SseParser(max_event_bytes=self._max)
        idle = 0
        while True:
            try:
                received, broken = await self._listen_once(response, parser)
            except TransportError as exc:
                logger.warning("the server's event stream is closed and not reopened: {}", exc)
                return
            idle = 0 if received else idle + 1
            if not broken and parser.last_event_id is None:
                logger.debug("the server closed its event stream")
                return
            if idle >= _MAX_RESUMES:
                logger.debug("the server's event stream brought nothing {} times in a row; not reopening it", idle)
                return
            await self._sleep(reconnection_delay(parser.retry))
            parser = SseParser(max_event_bytes=self._max, last_event_id=parser.last_event_id, retry=parser.retry)
            try:
                reopened = await self._open_get(headers, parser.last_event_id)
            except TransportError as exc:
                logger.debug("could not reopen the server's event stream: {}", exc)
                return
            if reopened is None:
                return
            response = reopened

    async def _listen_once(self, response: HttpResponse, parser: SseParser) -> tuple[bool, bool]:
        # Route every message of one standalone stream until it ends: (any byte arrived, it broke).
        # An event beyond max_response_bytes raises TransportError (the connection is dropped).
        received = broken = False
        try:
            decoder = self._decoder(response, limit=None)
            with _mapped("reading the server's event stream"):
                async for chunk in response.chunks():
                    received = True
                    for piece in decoder.decode(chunk):
                        try:
                            events = parser.feed(piece)
                        except SseTooLarge:
                            raise
                        except SseError as exc:
                            raise ProtocolError(f"malformed event stream: {exc}") from exc
                        for event in events:
                            await self._dispatch(event, None)
        except SseTooLarge as exc:
            await self._abort(response)
            raise self._too_large("an event of the server's event stream") from exc
        except ContentDecodeError as exc:
            logger.debug("the server's event stream broke: {}", exc)
            broken = True
        except McpError as exc:
            logger.debug("the server's event stream broke: {}", exc)
            broken = True
        finally:
            try:
                with _mapped("closing HTTP response"):
                    await response.aclose()
            except TransportError as exc:
                logger.debug("closing the server's event stream: {}", exc)
        return received, broken

    async def end_session(self, headers: Mapping[str, str]) -> None:
        """``DELETE`` the legacy session named in ``headers`` (MCP 2025-11-25; a 405 is fine).

        The standalone stream, if open, is closed first.
        """
        await self._close_stream()
        if self._closed or _header(headers, SESSION_HEADER) is None:
            return
        try:
            with _mapped("DELETE of the MCP session"):
                response = await self._follow("DELETE", dict(_session_headers(headers)), resendable=True)
                await response.aclose()
        except TransportError as exc:
            logger.debug("could not end the MCP session: {}", exc)

    async def aclose(self) -> None:
        """Close the standalone stream and release the connection pools; idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._background.aclose()
        pools, self._pools = self._pools, {}
        for pool in pools.values():
            await pool.aclose()


async def _once(content: bytes) -> AsyncGenerator[bytes, None]:
    if content:
        yield content


async def _unwind(chunks: AsyncGenerator[bytes, None]) -> None:
    # Leaving a stream early (the answer came, a malformed event, a legacy GET stream that never ends)
    # leaves httpx's and httpcore's stacked byte generators suspended at a yield; aclose() would reach
    # only the outermost, and trio reports each inner one as abandoned when it is collected. Running
    # the stack to its next checkpoint inside a cancelled scope unwinds every layer with Cancelled.
    with trio.CancelScope() as scope:
        scope.cancel()
        with contextlib.suppress(Exception):
            while True:
                await chunks.__anext__()


def _header(headers: Mapping[str, str], name: str) -> str | None:
    lowered = name.lower()
    return next((value for key, value in headers.items() if key.lower() == lowered), None)


def _field_values(headers: Mapping[str, str], name: str) -> tuple[str, ...]:
    # Every value of a header field that may repeat: httpx keeps them apart, the pool joins them with ", "
    # (RFC 9110 §5.3: the same field either way).
    get_list = getattr(headers, "get_list", None)  # httpx.Headers
    if get_list is not None:
        return tuple(get_list(name))
    value = headers.get(name)
    return () if value is None else (value,)


def _session_headers(sent: Mapping[str, str]) -> list[tuple[str, str]]:
    # A GET or a DELETE is no request of a method: of a request's headers only the version and the
    # session apply to it (never Mcp-Method or Mcp-Name).
    kept = ("mcp-protocol-version", SESSION_HEADER.lower())
    return [(name, value) for name, value in sent.items() if name.lower() in kept]


def _is_jsonrpc_error(body: bytes) -> bool:
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(payload, dict) and payload.get("jsonrpc") == "2.0" and isinstance(payload.get("error"), dict)


def _status_message(response: HttpResponse, body: bytes, hint: str | None = None) -> str:
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
