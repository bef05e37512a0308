"""The Streamable HTTP transport (MCP "Transports"): one POST per message, JSON or event-stream answers.

:class:`HttpTransport` composes the modules of this package (see its ``__init__``): the
:class:`~.endpoint.Endpoint` follows redirects with the :class:`~.headers.RequestHeaders` of each hop over a
:class:`~.routing.Route` (mcpfsm's pools, or a caller's httpx transport); the answer is a JSON body
(:mod:`.body`), an event stream (:mod:`.event_stream`) or an error (:mod:`.errors`); a legacy session also
keeps the standalone ``GET`` stream (:mod:`.standalone`) and ends with a ``DELETE``.

**No silent resend**: only a read-only request (:func:`~mcpfsm._core.constants.is_read_only`) may be resent
by the pool after a keep-alive race (RFC 9110 §9.2.2); the transport learns the method from the
:class:`~mcpfsm._transports.base.OutgoingMessage` the session hands it. **Strict framing** (RFC 9112 §6.3):
``Content-Length`` together with ``Transfer-Encoding`` is an error on both paths, and the connection is closed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import trio

from ..._core.constants import DEFAULT_MAX_RESPONSE_BYTES, is_read_only
from ..._core.errors import ProtocolError, TransportError
from ..._log import logger
from ..background import BackgroundTasks
from ..base import (
    NO_HEADERS,
    SESSION_HEADER,
    InboundHandler,
    OutgoingMessage,
    Reply,
    RequestCredentials,
    StreamedReply,
)
from ..pool import HttpResponse, WireReply
from ..tls import CertTypes, VerifyTypes
from .body import media_type, read_body
from .endpoint import Endpoint
from .errors import MAX_STRAYS, decoded_json, is_jsonrpc_error, mapped, raise_mapped, status_message, stray_id
from .event_stream import EventStreams
from .headers import RequestHeaders, field_values, header_value, session_headers
from .httpx_route import HttpxRoute
from .routing import PoolRoute, Route
from .standalone import StandaloneStream
from .urls import origin, parse_url

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpTransport"]


class HttpTransport:
    """Streamable HTTP transport: POST per message, JSON or SSE replies (MCP "Transports").

    Args:
        url: the MCP endpoint; credentials in it become ``Authorization: Basic``.
        headers: custom headers for every request; names starting with ``mcp-`` are dropped.
        timeout: connect, write, read and pool timeouts (default 30 s each, 300 s to read); the read
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
        scrub: takes the client's secrets out of an error in place; applied to what this transport raises or
            logs on its own, outside any message's trip (the standalone stream): a server may quote a token
            back in an error body. ``None``: the client holds no secret.

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
        scrub: Callable[[BaseException], None] | None = None,
    ) -> None:
        """Prepare the transport; no connection is made until the first message."""
        if max_response_bytes < 1:
            raise ValueError(f"max_response_bytes must be at least 1, got {max_response_bytes}")
        if transport is not None and (verify is not True or cert is not None or proxy is not None):
            raise ValueError(
                "verify, cert and proxy configure mcpfsm's own connection layer; configure them on the http_transport"
            )
        parsed = parse_url(url, "MCP server URL")
        endpoint = parsed.copy_with(username=None, password=None, fragment=None)
        self._headers = RequestHeaders(parsed, origin(endpoint), headers, credentials)
        self._route: Route = (
            PoolRoute(endpoint, timeout=timeout, verify=verify, cert=cert, proxy=proxy, trust_env=trust_env)
            if transport is None
            else HttpxRoute(transport, timeout)
        )
        self._endpoint = Endpoint(endpoint, self._headers, self._route)
        self._max = max_response_bytes
        self._streams = EventStreams(self._endpoint, max_response_bytes, sleep)
        self._background = BackgroundTasks()
        self._standalone = StandaloneStream(
            self._endpoint, self._headers, self._streams, self._background, max_response_bytes, sleep, scrub
        )
        self._closed = False

    @property
    def carries_headers(self) -> bool:
        """True: HTTP carries the per-request headers, so ``x-mcp-header`` annotations apply."""
        return True

    @property
    def url(self) -> str:
        """The MCP endpoint (where a 308 moved it, if one did), without credentials."""
        return str(self._endpoint.url)

    async def open(self, inbound: InboundHandler) -> None:
        """Route notifications and server-to-client requests from event streams to ``inbound``."""
        self._streams.inbound = inbound

    async def send(self, message: str, headers: Mapping[str, str] = NO_HEADERS) -> Reply | None:
        """POST one JSON-RPC message and return its JSON-RPC answer with the HTTP status.

        Returns ``None`` when the server accepts a notification or a response of ours (202). The text is
        read for its id and method (:meth:`OutgoingMessage.of`); a session hands :meth:`send_message` both.

        Raises:
            TransportError: network failure, timeout, an HTTP error without a JSON-RPC body, a
                redirect that is not followed, an answer beyond ``max_response_bytes``, or a
                stream that ended before its response.
            ProtocolError: the reply is not JSON-RPC, or has an unexpected content type or coding.
        """
        return await self.send_message(OutgoingMessage.of(message), headers)

    async def send_message(self, message: OutgoingMessage, headers: Mapping[str, str] = NO_HEADERS) -> Reply | None:
        """POST ``message``'s text as :meth:`send` does, matching the answer by the id beside it.

        Raises:
            As :meth:`send`.
        """
        if self._closed:
            raise TransportError("the HTTP transport is closed")
        request_id = message.request_id
        resendable = request_id is not None and is_read_only(message.method)
        crossed: list[str] = []
        try:
            response = await self._endpoint.request(
                "POST",
                headers,
                message.text.encode(),
                resendable=resendable,
                long_lived=message.long_lived,
                crossed=crossed,
            )
        except Exception as exc:
            raise_mapped("POST to MCP server", exc)
            raise
        try:
            return await self._answer(response, request_id, headers, crossed)
        finally:
            if not (isinstance(response, WireReply) and response.released):
                # Hot path (bench/instructions.py): a pooled reply whose body was read has released its connection,
                # so nothing is left to close.
                try:
                    await response.aclose()
                except Exception as exc:
                    raise_mapped("closing HTTP response", exc)
                    raise

    async def _skip(
        self,
        response: WireReply,
        stray: object,
        request_id: object,
        sent: Mapping[str, str],
        crossed: list[str],
        skipped: int,
    ) -> Reply | None:
        # An answer for another id came first on this connection: it belongs to no request of this call, and never
        # becomes its answer or error. The connection's framing is known, so the next response on it is read.
        logger.warning("ignoring a response for unknown request id {!r} from the MCP server", stray)
        if skipped >= MAX_STRAYS:
            await response.abort()
            raise TransportError(
                f"the server sent {skipped + 1} answers for other requests before answering request {request_id!r}"
            )
        try:
            following = await response.following()
        except Exception as exc:
            raise_mapped(f"reading the answer to request {request_id!r} after a stray one", exc)
            raise
        try:
            return await self._answer(following, request_id, sent, crossed, skipped + 1)
        finally:
            with mapped("closing HTTP response"):
                await following.aclose()

    @staticmethod
    async def _foreign_stray(response: HttpResponse, stray: object, request_id: object) -> None:
        # Through the caller's transport, an answer for another id cannot be skipped (its framing is httpcore's, and
        # what followed is in its buffer): the connection is closed so that what is left on it reaches no later
        # request, and the call fails for want of its answer, never with the stray's result or error.
        if stray is None:
            return
        drop = getattr(response, "drop_connection", None)
        if drop is None or not drop():
            return  # no connection behind the response (httpx.MockTransport): the session judges the id
        logger.warning("ignoring a response for unknown request id {!r} from the MCP server", stray)
        raise TransportError(
            f"the server answered request {request_id!r} with a response for request {stray!r}, which was dropped;"
            " the caller's http_transport cannot read the next response on that connection, so it was closed"
            f" and the answer to request {request_id!r} is unknown (the server may have run it)"
        )

    async def _answer(
        self,
        response: HttpResponse,
        request_id: object,
        sent: Mapping[str, str],
        crossed: list[str],
        skipped: int = 0,
    ) -> Reply | None:
        status = response.status
        headers = response.headers
        if "content-length" in headers and "transfer-encoding" in headers:
            # RFC 9112 §6.3 (the default pool refuses these in its framing; a caller's transport may not).
            raise TransportError(f"HTTP {status} with both Content-Length and Transfer-Encoding (RFC 9112 §6.3)")
        session_id = headers.get("mcp-session-id")
        nonce = headers.get("dpop-nonce")
        media = media_type(response)
        if 200 <= status < 300:
            if status in (202, 204):
                return None
            if media == "application/json":
                # A pooled reply keeps its connection until the answer is known to be this request's (a stray
                # one is skipped, and the next response on the connection read).
                held = request_id is not None and type(response) is WireReply
                body = None
                if held and "content-encoding" not in headers:
                    # Hot path (bench/repeatable.py): an identity body already here and within the limit, read at once.
                    assert isinstance(response, WireReply)
                    length = headers.get("content-length", "")
                    if length.isdigit() and int(length) <= self._max:
                        body = response.read_received(keep=True)
                if body is None:
                    body = await read_body(response, self._max, keep=held)
                decoded = decoded_json(body)
                if held:
                    assert isinstance(response, WireReply)
                    # Hot path (bench/repeatable.py): the answer to this very request needs no further look.
                    answered = decoded.get("id") if type(decoded) is dict else None
                    if answered != request_id or type(answered) is not type(request_id):
                        stray = stray_id(decoded, request_id)
                        if stray is not None:
                            return await self._skip(response, stray, request_id, sent, crossed, skipped)
                    response.release()
                elif request_id is not None:
                    await self._foreign_stray(response, stray_id(decoded, request_id), request_id)
                return Reply(body, status, session_id, (), nonce, decoded)
            if media == "text/event-stream":
                answer = await self._streams.answer(response, request_id, sent)
                return StreamedReply(answer, status, session_id, dpop_nonce=nonce)
            raise ProtocolError(
                f"HTTP {status} with Content-Type {media or 'none'!r}; expected application/json or text/event-stream"
            )
        held = request_id is not None and type(response) is WireReply and media == "application/json"
        body = await read_body(response, self._max, what="reading HTTP error response", keep=held)
        challenges = field_values(headers, "www-authenticate")
        if held:
            assert isinstance(response, WireReply)
            stray = stray_id(decoded_json(body), request_id)
            if stray is not None:
                return await self._skip(response, stray, request_id, sent, crossed, skipped)
            response.release()
        elif request_id is not None and media == "application/json":
            await self._foreign_stray(response, stray_id(decoded_json(body), request_id), request_id)
        # A 401 is the transport's to raise whatever its body (MCP "Authorization", RFC 9110 §15.5.2): a JSON-RPC
        # error in it (-32001 "Unauthorized", as servers often send) answers no message, and as a reply it would
        # reach the caller as an RpcError without its challenges. An authorization layer turns it into a flow.
        if media == "application/json" and status != 401 and is_jsonrpc_error(body):
            return Reply(body, status, session_id, challenges, nonce)
        message = status_message(response, body, self._headers.refusal_hint(status))
        if crossed:
            # The refusal came from another origin than the endpoint's: credentials stayed behind (MCP
            # "Authorization"), and so did a session id that origin did not issue.
            message += f" (after a redirect from {crossed[0]}, another origin)"
        raise TransportError(
            message,
            status=status,
            www_authenticate=challenges,
            dpop_nonce=nonce,
        )

    async def open_stream(self, headers: Mapping[str, str]) -> bool:
        """Open the standalone ``GET`` stream with ``headers`` (session id, version) and keep it.

        Returns once the server has accepted the stream (so a request it sends there right after
        cannot be lost), or with False when it answers 405 (it offers none) or fails (logged at
        WARNING). A background task routes what arrives to the inbound handler. The stream may be silent
        for any time (no read timeout bounds it: server requests arrive whenever the server has one). A
        stream that breaks (network), or that the server ends after giving event ids, is reopened with
        ``Last-Event-ID`` after the server's ``retry`` delay (default 1 s; never below 250 ms, doubled for
        each further stream in a row that carried no message, at most 60 s), until ten streams in a row carry
        no message or the server refuses one; a stream the server ends without ids stays closed, and so does one
        that sends an event beyond ``max_response_bytes``. A second call replaces the
        stream; :meth:`end_session` and :meth:`aclose` close it.
        """
        await self._standalone.close()
        if self._closed:
            return False
        return await self._standalone.open(headers)

    async def end_session(self, headers: Mapping[str, str]) -> None:
        """``DELETE`` the legacy session named in ``headers`` (MCP 2025-11-25; a 405 is fine).

        The standalone stream, if open, is closed first.
        """
        await self._standalone.close()
        if self._closed or header_value(headers, SESSION_HEADER) is None:
            return
        try:
            with mapped("DELETE of the MCP session"):
                response = await self._endpoint.request("DELETE", dict(session_headers(headers)), resendable=True)
                await response.aclose()
        except TransportError as exc:
            logger.debug("could not end the MCP session: {}", exc)

    async def aclose(self) -> None:
        """Close the standalone stream and release the connection pools; idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._background.aclose()
        await self._route.aclose()
