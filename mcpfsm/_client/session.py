"""The session layer: one JSON-RPC conversation with one server, over one transport.

It owns what every request shares: request ids, the modern ``params._meta`` (merged once), the
negotiated version and the legacy session id, cancellation notices, and the answers to what the server
sends unasked. A request goes down through one layer per concern, in the manner of httpx's
``send → _send_handling_auth → _send_handling_redirects → _send_single_request``:

- :meth:`Session.request` — the caller's entry point; :meth:`Session.renew_and_request` resends a request at
  most twice, by this policy: a ``-32022`` (UnsupportedProtocolVersion) switches the version once, and only
  when it answers the first attempt; an expired legacy session (HTTP 404 on a request that carried its id) is
  renewed once, and nothing is resent after a renewal. So a request goes out at most three times (switch,
  then renew); any other error, and either one beyond its turn, is raised;
- the response cache (:func:`~mcpfsm._client.caching.through`, SEP-2549): a fresh entry answers a
  cacheable modern request without sending it;
- :meth:`Session.exchange` — one request with one id: ``_meta``, headers, the transport, the reply's
  id checked, a JSON-RPC error raised with the HTTP status it came with;
- :meth:`Session.send` — one message's trip to the server: through the authorization layer
  (``mcpfsm._client.authorization``: the token on the request, a flow on 401 or 403, the message resent
  unchanged) when the client has credentials, else straight to the transport. Every message goes this
  way (requests, notifications, our answers), and so below era negotiation: a 401 is never an era signal.
  The message goes as an :class:`~mcpfsm._transports.base.OutgoingMessage` (its id and method beside the
  text) to a transport with ``send_message``, as its text to any other.

:meth:`Session.exchange` and :meth:`Session.send` are plain functions that return the awaitable of the layer
below when they have nothing to add (no telemetry; no credentials): each layer exists once, and a request's
coroutine chain, which trio resumes at every wait for the answer, has no frame of theirs in it
(bench/repeatable.py).

Telemetry (``mcpfsm._client.telemetry``), when an application configured OpenTelemetry, wraps each
:meth:`Session.exchange` (one span per JSON-RPC id, the trace context in ``_meta``). Notifications
invalidate the cache and reach the open subscriptions (:class:`~mcpfsm._client.notifications.NotificationHub`)
before ``on_notification``.

What the server sends unasked goes to :meth:`Session.inbound`: notifications to ``on_notification``,
requests (``ping``, and in the 2025-11-25 era ``elicitation/create``, ``sampling/createMessage``,
``roots/list``) to a background task that runs the client's handler and answers with the same id, so
the pending call (whose stream brought the request, or which waits while the standalone stream did)
goes on meanwhile. After ``initialize`` the session asks the transport to open that standalone stream.

Sources: MCP 2026-07-28 "Request Metadata" (``_meta`` on every request), MCP 2025-11-25 "Lifecycle"
and "Session Management" (``initialize``, ``Mcp-Session-Id``, a 404 ends the session),
"Cancellation" (which transports need ``notifications/cancelled``), "Transports" ("Listening for
Messages from the Server"), "Elicitation", "Sampling", "Roots" and "Ping".
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Final

import trio

from .._core.cache import CACHEABLE_METHODS, ResponseCache
from .._core.constants import (
    CLIENT_CAPABILITIES_KEY,
    DECLARES_TASKS,
    LEGACY_VERSIONS,
    LOG_LEVEL_KEY,
    MODERN_VERSION,
    TASKS_EXTENSION,
    UNSUPPORTED_PROTOCOL_VERSION,
    is_long_lived,
    is_modern,
)
from .._core.errors import McpError, ProtocolError, RpcError, SessionExpired, TransportError
from .._core.input import result_type
from .._core.jsonrpc import (
    EncodedMeta,
    Notification,
    Request,
    Response,
    decode_message,
    encode_notification,
    encode_request,
    encode_request_with_meta,
    encoded_meta,
    modern_meta,
    parse_message,
    success_result,
)
from .._core.plan import HeaderPlan, plan_request
from .._core.results import ServerInfo
from .._drivers.audit import AuditBus
from .._drivers.input import WAITING_TOOL, InputHandlers
from .._log import logger, loguru_imported
from .._transports.background import BackgroundTasks
from .._transports.base import SESSION_HEADER, OutgoingMessage, Reply, Transport
from . import caching, negotiation
from .notifications import NotificationHub
from .options import NotificationCallback
from .telemetry import Telemetry

if TYPE_CHECKING:
    # Loaded with the first auth= (it brings the OAuth core): `import mcpfsm` stays quick.
    from .._core.oauth.redaction import Secrets
    from .authorization import AuthorizationLayer, StaticToken
    from .sharing import SharedListings

__all__ = ["Session"]

_CANCEL_NOTICE_TIMEOUT: Final = 2.0
_NO_CANCEL_NOTICE: Final = frozenset({"initialize", "tasks/get", "tasks/update", "tasks/cancel"})


class Session:
    """One conversation with one server: ids, ``_meta``, era, legacy session, inbound messages.

    Args:
        transport: the connection.
        client_info: ``clientInfo`` (``name`` and ``version``) sent to the server.
        on_notification: called as ``on_notification(method, params)`` for each notification the
            server sends (may be async); ``None`` logs them at DEBUG.
        inputs: the handlers that answer the server's requests and input requests; they also decide
            the client capabilities declared. ``None``: none (nothing declared).
        cache: the response cache, or ``None`` for none.
        log_level: the minimum level of log messages asked for (``None``: none asked for).
        shared: where listings are shared with the other clients of a store, or ``None``.
        authorization: the authorization layer every message goes through, or ``None`` (no credentials).
        secrets: the secrets the client holds now, or ``None`` (none).
        telemetry: the telemetry layer of every request, or ``None`` (switched off).
        audit: where the answers to legacy server requests are audited (the client's bus), or ``None``.
        tasks: declare the tasks extension (SEP-2663).
        progress_tokens: ask for progress on every ``tools/call``, even without ``on_notification``.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        client_info: Mapping[str, str],
        on_notification: NotificationCallback | None = None,
        inputs: InputHandlers | None = None,
        cache: ResponseCache | None = None,
        log_level: str | None = None,
        shared: SharedListings | None = None,
        authorization: AuthorizationLayer | StaticToken | None = None,
        secrets: Callable[[], Secrets] | None = None,
        telemetry: Telemetry | None = None,
        audit: AuditBus | None = None,
        tasks: bool = False,
        progress_tokens: bool = False,
    ) -> None:
        """Wrap ``transport``; nothing is sent until :meth:`request`."""
        self._transport = transport
        # The message with its metadata to a transport that takes it (send_message), else its text.
        send_message = getattr(transport, "send_message", None)
        self._deliver: Callable[[OutgoingMessage, Mapping[str, str]], Awaitable[Reply | None]] = (
            send_message if send_message is not None else _text_only(transport)
        )
        self.client_info = dict(client_info)
        self.on_notification = on_notification
        self.inputs = inputs if inputs is not None else InputHandlers()
        """The input handlers (also what the session declares as client capabilities)."""
        self.cache = cache
        """The response cache (SEP-2549); a new authorization context calls ``cache.clear()``."""
        self.shared = shared
        """Where listings are shared with the other clients of a store (``mcpfsm._client.sharing``), or ``None``."""
        self.log_level = log_level
        self.hub = NotificationHub()
        """Where open subscriptions receive the server's notifications."""
        self.server_capabilities: dict[str, Any] = {}
        """The ``capabilities`` of the legacy ``initialize`` result (empty in the modern era)."""
        self.server: ServerInfo | None = None
        """What the server said about itself: the last ``server/discover`` or ``initialize`` result read."""
        self.version: str | None = None
        """The negotiated protocol version; ``None`` while no era is settled."""
        self.session_id: str | None = None
        """The legacy ``Mcp-Session-Id`` in effect (never set in the modern era)."""
        self.authorization = authorization
        """The authorization layer every message goes through, or ``None`` (no credentials)."""
        self.unconfirmed = False
        """True while a pinned 2026-07-28 has had no answer in that era (:meth:`pin`)."""
        self.telemetry = telemetry
        """The telemetry layer of every request (``mcpfsm._client.telemetry``), or ``None``: switched off."""
        self.audit = audit
        """Where the answers to legacy server requests are audited (the client's bus), or ``None``."""
        self.secrets = secrets
        """The secrets the client holds now (tokens, client secrets, a caller's ``Authorization``), or ``None``.

        Every error of a message's trip is scrubbed of them in place (:meth:`Secrets.scrub`) before an event,
        a span, a log line or the caller reads it: a server may quote a token back in any text.
        """
        self.tasks = tasks
        """Declare the tasks extension (SEP-2663) on ``tools/call``, ``tasks/*`` and ``subscriptions/listen``."""
        self.progress_tokens = progress_tokens
        """Ask for progress on every ``tools/call`` even without ``on_notification`` (``progress_timeout`` reads it)."""
        self._opened = False
        self._next_id = 0
        self._meta: EncodedMeta | None = None
        self._task_meta: tuple[EncodedMeta, EncodedMeta] | None = None
        self._handshake = trio.Lock()
        self._lost_session: str | None = None
        self._answers = BackgroundTasks()

    # --- era and session state ------------------------------------------------------------------

    @property
    def transport(self) -> Transport:
        """The connection every message goes through (given to the constructor, never replaced)."""
        return self._transport

    @property
    def mirrors(self) -> bool:
        """True when ``x-mcp-header`` arguments become ``Mcp-Param-*`` headers: HTTP, modern era."""
        return is_modern(self.version) and self.transport.carries_headers

    def set_version(self, version: str | None) -> None:
        """Settle the era; entering the modern era drops a legacy session (modern requests carry none)."""
        self.version = version
        if is_modern(version):
            self.session_id = None

    def pin(self, version: str) -> None:
        """Settle a pinned modern ``version`` that no answer has confirmed yet (negotiation)."""
        self.set_version(version)
        self.unconfirmed = True

    def learned(self, server: ServerInfo) -> None:
        """Keep what the server said about itself in a modern ``server/discover`` result, which confirms the era."""
        self.server = server
        self.unconfirmed = False

    def forgo_log_level(self) -> None:
        """Ask for no log messages any more (SEP-2577: a modern server that does not declare ``logging``)."""
        self.log_level = None
        self._meta = None  # rebuilt without the level on the next request

    def _session_headers(self) -> dict[str, str]:
        # What applies to a message that is no request of a method (our answer, a DELETE): the
        # version and the session, never Mcp-Method or Mcp-Name.
        headers = {} if self.version is None else {"MCP-Protocol-Version": self.version}
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        return headers

    def stream_headers(self) -> dict[str, str]:
        """The headers of a message that is no request of a method (a standalone ``GET``): version and session."""
        return self._session_headers()

    async def open(self) -> None:
        """Open the transport, which hands what the server sends unasked to :meth:`inbound`; once only."""
        if not self._opened:
            await self.transport.open(self.inbound)
            self._opened = True

    async def initialize(self, offer: str) -> None:
        """Run the legacy handshake offering ``offer`` (MCP 2025-11-25 "Lifecycle").

        Declares the handlers' capabilities, and after ``notifications/initialized`` opens the
        standalone stream on which the server may send requests unasked (kept for the session).

        Raises:
            ProtocolError: the server chose a version mcpfsm does not speak.
            McpError: the handshake failed.
        """
        self.version = None
        self.session_id = None
        params = {"protocolVersion": offer, "capabilities": self.inputs.capabilities(), "clientInfo": self.client_info}
        result = await self.exchange("initialize", params)  # no version yet: no protocol headers
        version = result.get("protocolVersion")
        if version not in LEGACY_VERSIONS:
            raise ProtocolError(f"server chose protocol version {version!r}, which mcpfsm does not speak")
        self.set_version(version)
        self.server = ServerInfo.from_initialize(result)
        capabilities = result.get("capabilities")
        self.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        await self.notify("notifications/initialized")
        # The stream outlives a call that renews the session inside its own task: its requests name no tool.
        idle = WAITING_TOOL.set("")
        try:
            await self.transport.open_stream(self._session_headers())
        finally:
            WAITING_TOOL.reset(idle)
        if self.log_level is not None:
            await self._set_log_level(self.log_level)

    async def _set_log_level(self, level: str) -> None:
        # MCP 2025-11-25 "Logging": a session-wide minimum, offered by servers with the logging capability.
        if "logging" not in self.server_capabilities:
            logger.debug("the server offers no logging capability; log level {!r} not set", level)
            return
        await self.exchange("logging/setLevel", {"level": level})

    async def end(self) -> None:
        """End a legacy session (``DELETE``), best effort; nothing to do otherwise."""
        if self.session_id is not None:
            headers = self._session_headers()
            self.session_id = None
            await self.transport.end_session(headers)

    async def aclose(self) -> None:
        """Stop answering the server: cancel the answers still running (their handlers included)."""
        await self._answers.aclose()

    # --- the request path -------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        plan: HeaderPlan | None = None,
        *,
        fresh: bool = False,
    ) -> dict[str, Any]:
        """Send one request and return its result: the cache, then session renewal and the version switch.

        ``plan=None`` means the protocol headers of the version in effect. ``fresh=True`` skips the
        cache lookup (the answer still refreshes the cache).

        Raises:
            RpcError: the server answered an error (after at most one switch on ``-32022``).
            SessionExpired: the renewed legacy session expired too.
            TransportError, ProtocolError: the request failed.
        """
        if self.cache is None or method not in CACHEABLE_METHODS:
            # The cache layer is on the path of what a cache may answer only (never tools/call).
            return await self.renew_and_request(method, params, plan)
        return await caching.through(
            self.cache,
            lambda: self.version,
            method,
            params,
            lambda: self.renew_and_request(method, params, plan),
            fresh=fresh,
            shared=self.shared,
        )

    async def renew_and_request(
        self, method: str, params: Mapping[str, Any] | None, plan: HeaderPlan | None = None, *, tool: str | None = None
    ) -> dict[str, Any]:
        """Renew an expired legacy session or switch version on ``-32022``, at most once each.

        A resend always re-plans: a renewed session or a version switch leaves the era the plan was
        made for. ``tool`` names the tool of a ``tools/call``: a legacy server request read on this
        request's own stream (in this task) is audited as that call's.

        Raises:
            RpcError: the server answered an error (after at most one switch on ``-32022``).
            SessionExpired: the renewed legacy session expired too.
            TransportError, ProtocolError: the request failed.
        """
        # Set for the whole request (renewals and resends included), in this frame: every tool call comes this way.
        # Only a legacy server sends requests on a call's stream (MCP 2025-11-25; in 2026-07-28 nothing but a ping,
        # answered unaudited): a modern request sets it only if a version switch takes it to the legacy era.
        waiting = None if tool is None or is_modern(self.version) else WAITING_TOOL.set(tool)
        try:
            if self._lost_session is not None:
                await self._renew_session(self._lost_session)
                plan = None
            if method == "tools/call" and (self.on_notification is not None or self.progress_tokens):
                params = self._with_progress_token(params)
            # The resend policy of the module docstring, as two bounded loops: the outer one switches the version
            # (on the first attempt only), the inner one renews the session (once, and then resends nothing more).
            for switch in range(2):
                for renewal in range(2):
                    try:
                        result = await self.exchange(method, params, plan)
                    except SessionExpired as exc:
                        if renewal:
                            # Without a session every later request would fail: the next one opens a new session.
                            self._lost_session = exc.session_id
                            raise
                        await self._renew_session(exc.session_id)
                    except RpcError as exc:
                        if exc.code != UNSUPPORTED_PROTOCOL_VERSION or switch or renewal:
                            await self._explain(method, exc)
                            raise
                        await negotiation.switch_version(self, exc)
                        if waiting is None and tool is not None and not is_modern(self.version):
                            waiting = WAITING_TOOL.set(tool)
                        plan = None
                        break
                    except (TransportError, ProtocolError) as exc:
                        await self._explain(method, exc)
                        raise
                    else:
                        self.unconfirmed = False
                        return result
                    plan = None
            raise AssertionError("unreachable")  # pragma: no cover - each attempt returns, resends or raises
        finally:
            if waiting is not None:
                WAITING_TOOL.reset(waiting)

    async def _explain(self, method: str, error: McpError) -> None:
        # A pinned 2026-07-28 whose first answer looks like a legacy server's: say so (negotiation).
        # Returns when there is nothing to add; the caller re-raises the error.
        if self.unconfirmed:
            explained = await negotiation.explain_pinned_failure(self, method, error)
            if explained is not error:
                raise explained from error

    async def _renew_session(self, expired: str) -> None:
        async with self._handshake:
            # Concurrent requests share one expiry: only the first of them re-initializes.
            if self.session_id in (None, expired):
                await self.initialize(self.version or LEGACY_VERSIONS[0])
            self._lost_session = None

    def reserve_id(self) -> int:
        """A request id for :meth:`exchange` that no other request of this session will get."""
        self._next_id += 1
        return self._next_id

    def exchange(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        plan: HeaderPlan | None = None,
        *,
        request_id: int | None = None,
    ) -> Coroutine[Any, Any, dict[str, Any]]:
        """One request, one JSON-RPC id (``request_id`` from :meth:`reserve_id`, or a new one): the innermost layer.

        With telemetry on, the request goes through its layer (a span, the trace context in ``_meta``). Returns
        the awaitable of the request (the id is taken now).

        Raises:
            RpcError: the server answered an error (``.status`` is the HTTP status it came with).
            SessionExpired: HTTP 404 on a request that carried a legacy session id.
            TransportError, ProtocolError: the request failed or the answer is malformed.
        """
        if request_id is None:
            request_id = self.reserve_id()
        if self.telemetry is None:
            return self._exchange(method, params, plan, request_id)
        sent = request_id
        return self.telemetry.request(self, method, params, sent, lambda p: self._exchange(method, p, plan, sent))

    async def _exchange(
        self, method: str, params: Mapping[str, Any] | None, plan: HeaderPlan | None, request_id: int
    ) -> dict[str, Any]:
        # Every error of the trip is scrubbed of the client's secrets before an event, a span or the caller
        # sees it; in this frame, not a wrapper's: every request comes this way (bench/instructions.py).
        try:
            version = self.version
            modern = is_modern(version)
            if plan is None:
                plan = plan_request(method, params, protocol_version=version)
            if modern:
                common = self._modern_meta() if not self.tasks or method not in DECLARES_TASKS else self._tasks_meta()
                text = encode_request_with_meta(request_id, method, params, common)
            else:
                text = encode_request(request_id, method, params)
            message = OutgoingMessage(text, request_id, method, is_long_lived(method))
            session = self.session_id
            # The plan's read-only view as it is (no copy), unless a legacy session adds its id.
            headers = plan.mapping if session is None else {**plan.mapping, SESSION_HEADER: session}
            tool = params.get("name") if method == "tools/call" and params is not None else None
            try:
                reply = await self.send(message, headers, tool=tool if isinstance(tool, str) else "")
            except TransportError as exc:
                if exc.status == 404 and session is not None:
                    raise self._expired(session) from exc
                raise
            except trio.Cancelled:
                # SEP-2663: a task is cancelled with tasks/cancel only; its own requests get no cancel notice either.
                if method not in _NO_CANCEL_NOTICE and self._cancel_by_notification:
                    await self._notify_cancelled(request_id)
                raise
            if reply is None:
                raise ProtocolError(f"the server accepted {method} without answering it")
            if reply.status == 404 and session is not None:
                raise self._expired(session)
            assigns = reply.status is None or reply.status < 300
            if reply.session_id is not None and assigns and not is_modern(self.version):
                # Only a successful answer assigns a session: some servers name a discarded session on
                # their 400 to a probe. The modern era has no sessions: it neither checks nor keeps one.
                if not _visible_ascii(reply.session_id):
                    # MCP 2025-11-25 "Session Management": visible ASCII only. Keeping another would make
                    # every later request unsendable; the session in effect (if any) stays.
                    raise ProtocolError(
                        f"the server's answer to {method} carries an Mcp-Session-Id that is not visible ASCII"
                        ' (0x21-0x7E, MCP 2025-11-25 "Session Management"); the answer is refused and the id not kept'
                    )
                self.session_id = reply.session_id
            payload = decode_message(reply.body) if reply.decoded is None else reply.decoded
            result = success_result(payload, request_id)
            if result is None:
                # Not a plain successful answer to this request: parse_message says what it is, or what is wrong.
                response = parse_message(payload)
                if not isinstance(response, Response):
                    raise ProtocolError(f"expected the response to {method}, got a {type(response).__name__.lower()}")
                if response.error is not None:
                    if response.id not in (request_id, None):
                        raise ProtocolError(f"error response id {response.id!r} does not match request id {request_id}")
                    response.error.status = reply.status
                    raise response.error
                if response.id != request_id:
                    raise ProtocolError(f"response id {response.id!r} does not match request id {request_id}")
                assert response.result is not None
                result = response.result
            # SEP-2322: an unknown resultType, or input_required where it cannot be, is malformed on any request.
            result_type(method, result)
            return result
        except McpError as exc:
            if self.secrets is not None:
                self.secrets().scrub(exc)
            raise

    def _expired(self, session: str) -> SessionExpired:
        if self.session_id == session:
            # Not when a concurrent request has already opened the next session.
            self.session_id = None
        return SessionExpired(session)

    def _with_progress_token(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        # Servers send progress only for requests that carry a token; a caller who asked for
        # notifications wants them. The token is the id exchange() is about to assign; a resend
        # (session expiry, -32022) keeps it, since the first attempt is over by then.
        params = dict(params or {})
        meta = params.get("_meta")
        meta = dict(meta) if isinstance(meta, Mapping) else {}
        meta.setdefault("progressToken", self._next_id + 1)
        params["_meta"] = meta
        return params

    def _tasks_meta(self) -> EncodedMeta:
        # The common _meta with the tasks extension declared (SEP-2663), built and encoded once like it.
        base = self._modern_meta()
        cached = self._task_meta
        if cached is None or cached[0] is not base:
            meta = dict(base[0])
            capabilities = dict(meta[CLIENT_CAPABILITIES_KEY])
            capabilities["extensions"] = {**capabilities.get("extensions", {}), TASKS_EXTENSION: {}}
            meta[CLIENT_CAPABILITIES_KEY] = capabilities
            cached = self._task_meta = (base, encoded_meta(meta))
        return cached[1]

    def _modern_meta(self) -> EncodedMeta:
        # The _meta of every modern request, with its JSON text: both made once (None: made again on next use).
        if self._meta is None:
            meta = modern_meta(MODERN_VERSION, self.client_info, self.inputs.capabilities())
            if self.log_level is not None:
                # MCP 2026-07-28 "Logging": log messages are sent only for requests that ask for them.
                meta[LOG_LEVEL_KEY] = self.log_level
            self._meta = encoded_meta(meta)
        return self._meta

    def send(self, message: OutgoingMessage, headers: Mapping[str, str], *, tool: str = "") -> Awaitable[Reply | None]:
        """One message's trip: through the authorization layer when there is one, else to the transport.

        ``tool`` names the tool of a ``tools/call`` for the authorization events. Returns the trip's awaitable.
        """
        if self.authorization is None and self.secrets is None:
            # Nothing to add: the transport's own coroutine (bench/repeatable.py: no frame of this layer's).
            return self._deliver(message, headers)
        return self._guarded_send(message, headers, tool)

    async def _guarded_send(self, message: OutgoingMessage, headers: Mapping[str, str], tool: str) -> Reply | None:
        # With credentials: through the authorization layer, and every error scrubbed of the client's secrets.
        try:
            if self.authorization is None:
                return await self._deliver(message, headers)
            return await self.authorization.send(self._deliver, message, headers, tool=tool)
        except McpError as exc:
            if self.secrets is not None:
                self.secrets().scrub(exc)
            raise

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification with the headers of the version in effect."""
        headers = plan_request(method, params, protocol_version=self.version).as_dict()
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        await self.send(OutgoingMessage(encode_notification(method, params), None, method), headers)

    # --- cancellation -----------------------------------------------------------------------------

    @property
    def _cancel_by_notification(self) -> bool:
        # MCP "Cancellation": on modern Streamable HTTP closing the response stream is the signal; on
        # stdio (no stream to close) and on legacy HTTP (a disconnect is not a cancellation) the
        # client sends notifications/cancelled.
        return not is_modern(self.version) or not self.transport.carries_headers

    async def _notify_cancelled(self, request_id: int) -> None:
        # Best effort, shielded and bounded: the caller's cancellation must not wait on the server.
        with trio.CancelScope(shield=True), trio.move_on_after(_CANCEL_NOTICE_TIMEOUT):
            try:
                params = {"requestId": request_id, "reason": "cancelled by the caller"}
                await self.notify("notifications/cancelled", params)
            except McpError as exc:
                logger.debug("could not tell the server that request {} was cancelled: {}", request_id, exc)

    # --- messages the server sends unasked ----------------------------------------------------------

    async def inbound(self, message: Notification | Request) -> None:
        """Handle a notification or a server-to-client request (the transport's inbound handler).

        A notification goes to ``on_notification`` before this returns. A request is answered in a
        background task and this returns at once, so a handler waiting for its user never blocks the
        transport from routing other messages (the response the call waits for among them).
        """
        if isinstance(message, Notification):
            await self._notification(message)
            return

        def failed(exc: Exception) -> None:
            logger.warning("answering the server's {!r} request failed: {!r}", message.method, exc)

        async def answer() -> None:
            await self._answer(message)

        self._answers.start(answer, name=f"mcpfsm answer to {message.method}", on_error=failed)

    async def _answer(self, request: Request) -> None:
        # MCP 2025-11-25: answered with the handlers by POST, with the session's headers, and audited. This
        # task runs in a copy of the reading task's context: on a call's own stream, WAITING_TOOL names it.
        from .._drivers.input_machine import answer_server_request  # the input machine, with its first use

        async def deliver(answer: str) -> None:
            await self.send(OutgoingMessage(answer), self._session_headers())

        await answer_server_request(self.inputs, request, deliver, audit=self.audit, tool=WAITING_TOOL.get())

    async def _notification(self, message: Notification) -> None:
        if self.cache is not None:
            self.cache.invalidate(message.method, message.params)
        self.hub.dispatch(message)
        if self.on_notification is None:
            if loguru_imported():
                shown = str(message.params) if self.secrets is None else self.secrets().text(str(message.params))
                logger.debug("notification {} from the server: {}", message.method, shown)
            return
        try:
            outcome = self.on_notification(message.method, message.params)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception as exc:
            logger.warning("on_notification callback raised {!r}; the request goes on", exc)


def _text_only(transport: Transport) -> Callable[[OutgoingMessage, Mapping[str, str]], Awaitable[Reply | None]]:
    # A transport without send_message (a custom one) gets the text of each message, as its contract says.
    def deliver(message: OutgoingMessage, headers: Mapping[str, str]) -> Awaitable[Reply | None]:
        return transport.send(message.text, headers)

    return deliver


def _visible_ascii(text: str) -> bool:
    # One or more of 0x21-0x7E (what [\x21-\x7e]+ matches), without a pattern to compile at `import mcpfsm`.
    return bool(text) and text.isascii() and text.isprintable() and " " not in text
