"""The public client: factories, lifecycle and the public methods.

``Client`` composes the layers below it and adds no protocol logic of its own:

- :class:`~mcpfsm._client.session.Session` — ids, ``_meta``, the legacy session, inbound messages,
  session renewal and the -32022 switch;
- :mod:`~mcpfsm._client.negotiation` — which protocol era the connection speaks;
- :class:`~mcpfsm._client.catalog.Catalog` — known tool definitions, paginated listings and the
  shared (single-flight) relist;
- :class:`~mcpfsm._drivers.tool_call.ToolCall` — one tool call as one run of the state machine,
  reaching the client through a narrow :class:`~mcpfsm._drivers.tool_call.CallPort`;
- :class:`~mcpfsm._client.authorization.AuthorizationLayer` — with ``auth=``, the token on every request
  to the MCP endpoint and an authorization flow (the second machine) when the server asks for one;
- :class:`~mcpfsm._drivers.input.InputHandlers` — the user's input handlers (elicitation, sampling,
  roots), shared by the machine, :meth:`Client.request` and the session's answers to legacy server requests;
- :mod:`~mcpfsm._client.subscriptions` — ``listen()`` in both eras.

The rest of the request surface (resources, prompts, completion; MCP 2026-07-28 "Resources",
"Prompts", "Completion") is a request each, its result checked by a typed value from
``mcpfsm._core.surface`` (imported with the first such request).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

import trio

from .._core.cache import ResponseCache
from .._core.catalog import ToolCatalog, ToolDefinition
from .._core.constants import DEFAULT_MAX_RESPONSE_BYTES, MCPFSM_VERSION, SPOKEN_VERSIONS, is_modern
from .._core.errors import McpError, OutputValidationError
from .._core.events import CallEvent
from .._core.input import MRTR_METHODS
from .._core.output import OutputCheck, ValidateOutput
from .._core.plan import HeaderPlan
from .._core.results import ServerInfo, ToolResult
from .._drivers.audit import AuditBus
from .._drivers.input import (
    DEFAULT_MAX_INPUT_ROUNDS,
    InputHandler,
    InputHandlers,
)
from .._drivers.tool_call import ToolCall
from .._log import logger
from .._transports.base import Transport
from . import negotiation, telemetry
from .catalog import Catalog
from .lifecycle import Lifecycle, Stage
from .session import NotificationCallback, Session
from .tools import Tool, ToolList

if TYPE_CHECKING:
    import httpx

    # The authorization side (the OAuth core, PyJWT, the second machine) is imported with the first auth=.
    from .._core.credentials import ClientCredentials, EnterpriseManaged, JwtBearer, OAuth, Store

    # The results of resources, prompts and completion: imported with the first such request; the stdio
    # transport with the first Client.stdio(), subscriptions with the first listen().
    from .._core.surface import Completion, Prompt, PromptResult, Resource, ResourceResult, ResourceTemplate

    # The HTTP stack (mcpfsm's connection pool, redirects, proxies, TLS, event streams) is imported with the first
    # Client.http(): a stdio client, and `import mcpfsm`, do without it (bench/startup.py).
    from .._transports.tls import CertTypes, VerifyTypes
    from .authorization import AuthorizationLayer, StaticToken
    from .skills import Skill
    from .subscriptions import Subscription
    from .tasks import Task, TaskSupport

    Auth = OAuth | ClientCredentials | JwtBearer | EnterpriseManaged | str
    """What ``auth=`` accepts: credentials that run authorization flows, or a static bearer token."""

__all__ = ["Auth", "Client", "LogLevel", "Protocol"]

Protocol = Literal["auto", "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
"""What ``protocol=`` accepts: ``"auto"`` probes; a version pins it."""

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
"""What ``log_level=`` accepts: the syslog severities of MCP "Logging", least severe first."""


def __getattr__(name: str) -> object:
    # Auth is a union of the credential classes: made on first use, like them.
    if name == "Auth":
        from .._core.credentials import ClientCredentials, EnterpriseManaged, JwtBearer, OAuth

        return OAuth | ClientCredentials | JwtBearer | EnterpriseManaged | str
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_VERSION: Final = MCPFSM_VERSION
_END_BOUND: Final = 5.0
"""Seconds the ``DELETE`` ending a legacy session may take when the client closes (best effort)."""
_VALIDATE_OUTPUT: Final = get_args(ValidateOutput)


class _Port:
    # The narrow port a ToolCall driver talks to (CallPort): its operations, the input handlers, the audit bus.
    __slots__ = ("_catalog", "_output", "_session", "_validate", "audit", "tasks")

    def __init__(self, session: Session, catalog: Catalog, audit: AuditBus, validate: ValidateOutput) -> None:
        self._session = session
        self._catalog = catalog
        self._validate = validate
        self._output = OutputCheck()
        self.audit = audit
        self.tasks: Callable[[], TaskSupport] | None = None

    @property
    def inputs(self) -> InputHandlers:
        return self._session.inputs

    @property
    def protocol_version(self) -> str | None:
        return self._session.version

    @property
    def relist_generation(self) -> int:
        return self._catalog.generation

    def known_definition(self, name: str) -> ToolDefinition | None:
        return self._catalog.known(name)

    def call_once(self, params: dict[str, Any], plan: HeaderPlan) -> Coroutine[Any, Any, dict[str, Any]]:
        # tools/call is never cached (caching.CACHEABLE_METHODS): straight to the renewal layer, whose coroutine
        # the driver awaits (no frame of its own here). A legacy server request on this call's own stream is
        # read in this task: tool= has its events name the tool.
        return self._session.renew_and_request("tools/call", params, plan, tool=params["name"])

    def check_output(self, name: str, result: ToolResult) -> None:
        # MCP 2026-07-28 "Output Schema": checked against the newest listed definition of the tool.
        if self._validate == "off":
            return
        problems = self._output.problems(self._catalog.known(name), result)
        if not problems:
            return
        if self._validate == "raise":
            raise OutputValidationError(name, problems, result)
        logger.warning(
            "structured content of tool {!r} does not match its outputSchema: {}", name, "; ".join(problems)
        )

    async def relist(self, since: int) -> tuple[ToolCatalog, bool]:
        return await self._catalog.refresh(since)

    async def hand_over(self, call: ToolCall, result: dict[str, Any]) -> dict[str, Any] | None:
        # SEP-2663: the task machine (mcpfsm._client.tasks) takes over a call answered with a task.
        assert self.tasks is not None
        return await self.tasks().hand_over(call, result)


class Client:
    """An MCP client whose tool calls are explicit, audited state machines.

    Use ``async with Client.http(url) as client`` or ``Client.stdio([...])``; any
    :class:`~mcpfsm.Transport` works with ``Client(transport)``.

    Args:
        transport: carries the messages.
        protocol: ``"auto"`` (probe ``server/discover``, fall back to ``initialize``), or a
            version to pin: ``"2026-07-28"`` or ``"2025-11-25"``.
        on_event: called with each :class:`CallEvent`.
        on_notification: called as ``on_notification(method, params)`` for each notification
            the server sends while a request is open (progress, log messages); may be async.
            With it, each tools/call carries ``_meta.progressToken`` (its request id) so that
            servers send progress. Without it, notifications are logged at DEBUG.
        client_name: the ``clientInfo.name`` sent to the server.
        on_elicitation: ``async (params) -> ElicitResult`` answering the server's
            ``elicitation/create`` (a multi round-trip input request in 2026-07-28, a server request in
            2025-11-25): ``params`` is the request's params, the return value the result object
            (``{"action": "accept", "content": {...}}``, ``decline`` or ``cancel``). The ``default`` of
            every ``requestedSchema`` property an accepted form leaves out is filled in (SEP-1034).
        on_sampling: ``async (params) -> CreateMessageResult`` for ``sampling/createMessage``.
        on_roots: ``async (params) -> ListRootsResult`` (``{"roots": [{"uri": "file://..."}]}``) for
            ``roots/list``.
        elicitation_modes: the modes ``on_elicitation`` handles: ``("form",)`` (default), ``("url",)``
            or ``("form", "url")``. URL mode: show the full URL and ask for consent; never open it unasked.
        max_input_rounds: input rounds one request may take (default 10); one more is a ``ProtocolError``.
        audit_answers: also record the handlers' answers in the audit events
            (``CallEvent.input_responses``); off by default, so what a user typed never reaches an event.
        log_level: ask the server for its log messages at this level and above (MCP "Logging"):
            modern requests carry ``_meta["io.modelcontextprotocol/logLevel"]`` unless the server's
            ``server/discover`` result does not declare ``logging`` (SEP-2577 deprecates it), a legacy session
            sends ``logging/setLevel`` after ``initialize`` when the server declares ``logging``; the messages
            reach ``on_notification``.
        cache: keep cacheable modern results for the ``ttlMs`` the server allows (SEP-2549); ``False``
            sends every request.
        validate_output: check ``structuredContent`` against a listed tool's ``outputSchema``:
            ``"raise"`` (:class:`OutputValidationError`), ``"warn"`` (one WARNING) or ``"off"``.
        server: the name every event of this client carries in ``CallEvent.server`` (a
            :class:`~mcpfsm.ClientGroup` gives each member its name in the configuration); ``None`` by default.
        store: where what outlives a call is kept (docs/stores.md): task records and shared cache entries,
            and the tokens of ``auth=`` unless the credential names its own ``store=``. ``None`` (the default)
            is a :class:`~mcpfsm.MemoryStore` of this client's own.
        tasks: declare the tasks extension (SEP-2663, docs/tasks.md) on ``tools/call``, so that a server may
            answer a call with a task that the client then polls to its end.
        progress_timeout: fail a call (plain or task) with :class:`~mcpfsm.TransportError` when neither its
            answer, a progress notification nor a task status change arrived for this many seconds; off
            (``None``) by default.
        total_timeout: fail a call with :class:`~mcpfsm.TransportError` when it is not over after this many
            seconds, task polling included; off (``None``) by default.

    The client declares exactly the capabilities of the handlers given: in every modern request's
    ``_meta`` and in the legacy ``initialize``. A handler raising aborts the request with that error
    (a modern input round), or answers the server's request with a JSON-RPC error (legacy: an
    :class:`~mcpfsm.RpcError` raised by the handler gives its code and message, e.g. ``-1`` for a
    refused sampling request; any other exception gives ``-32603``).

    Raises:
        ValueError: ``protocol`` is not one mcpfsm speaks, ``elicitation_modes`` names an unknown mode,
            ``max_input_rounds`` is less than 1, ``log_level``/``validate_output`` is not one mcpfsm knows, or
            ``progress_timeout``/``total_timeout`` is not a positive number.
        TypeError: a handler is not callable.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        protocol: str = "auto",
        on_event: Callable[[CallEvent], object] | None = None,
        on_notification: NotificationCallback | None = None,
        client_name: str = "mcpfsm",
        on_elicitation: InputHandler | None = None,
        on_sampling: InputHandler | None = None,
        on_roots: InputHandler | None = None,
        elicitation_modes: Sequence[str] = ("form",),
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        audit_answers: bool = False,
        log_level: LogLevel | None = None,
        cache: bool = True,
        validate_output: ValidateOutput = "raise",
        server: str | None = None,
        store: Store | None = None,
        tasks: bool = False,
        progress_timeout: float | None = None,
        total_timeout: float | None = None,
    ) -> None:
        """Wrap ``transport``; nothing is sent until the client is entered."""
        if protocol != "auto" and protocol not in SPOKEN_VERSIONS:
            raise ValueError(f"protocol must be 'auto' or one of {list(SPOKEN_VERSIONS)}, got {protocol!r}")
        if log_level is not None and log_level not in get_args(LogLevel):
            raise ValueError(f"log_level must be None or one of {list(get_args(LogLevel))}, got {log_level!r}")
        if validate_output not in _VALIDATE_OUTPUT:
            raise ValueError(f"validate_output must be one of {list(_VALIDATE_OUTPUT)}, got {validate_output!r}")
        for name, seconds in (("progress_timeout", progress_timeout), ("total_timeout", total_timeout)):
            if seconds is not None and not (isinstance(seconds, (int, float)) and seconds > 0):
                raise ValueError(f"{name} must be None or a number of seconds above 0, got {seconds!r}")
        inputs = InputHandlers(
            on_elicitation=on_elicitation,
            on_sampling=on_sampling,
            on_roots=on_roots,
            elicitation_modes=elicitation_modes,
            max_input_rounds=max_input_rounds,
            audit_answers=audit_answers,
        )
        self._transport = transport
        self._requested = protocol
        self._session = Session(
            transport,
            client_info={"name": client_name, "version": _VERSION},
            on_notification=on_notification,
            inputs=inputs,
            cache=ResponseCache() if cache else None,
            log_level=log_level,
        )
        self._catalog = Catalog(self._session)
        # OpenTelemetry providers are read now (docs/telemetry.md); without one nothing is built per call.
        self._telemetry = telemetry.probe(transport)
        self._session.telemetry = self._telemetry
        self._audit = AuditBus(
            on_event if self._telemetry is None else self._telemetry.observe(on_event), server=server
        )
        self._session.audit = self._audit
        self._port = _Port(self._session, self._catalog, self._audit, validate_output)
        self._lifecycle = Lifecycle(self._handshake)
        self._opened = False
        self._store = store
        self._guarded: Store | None = None
        if store is not None:
            # A caller's store shares listings with the other clients of the same server (docs/cache.md); the
            # store and sharing modules are imported only then (bench/startup.py).
            from . import sharing

            self._session.shared = sharing.for_session(self._session, store)
        self._tasks = bool(tasks)
        self._progress_timeout = progress_timeout
        self._total_timeout = total_timeout
        # Tasks and timeouts (docs/tasks.md) live in mcpfsm._client.tasks, imported only when asked for.
        self._task_support: TaskSupport | None = None
        self._port.tasks = self._tasks_support
        self._timed = None if progress_timeout is None and total_timeout is None else self._tasks_support()
        if self._tasks:
            self._tasks_support()

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        protocol: str = "auto",
        on_event: Callable[[CallEvent], object] | None = None,
        on_notification: NotificationCallback | None = None,
        timeout: httpx.Timeout | float | None = None,
        http_transport: httpx.AsyncBaseTransport | None = None,
        verify: VerifyTypes = True,
        cert: CertTypes | None = None,
        proxy: str | None = None,
        trust_env: bool = True,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        on_elicitation: InputHandler | None = None,
        on_sampling: InputHandler | None = None,
        on_roots: InputHandler | None = None,
        elicitation_modes: Sequence[str] = ("form",),
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        audit_answers: bool = False,
        log_level: LogLevel | None = None,
        cache: bool = True,
        validate_output: ValidateOutput = "raise",
        auth: Auth | None = None,
        server: str | None = None,
        store: Store | None = None,
        tasks: bool = False,
        progress_timeout: float | None = None,
        total_timeout: float | None = None,
    ) -> Client:
        """A client for a Streamable HTTP server at ``url``, behaving like an httpx client (docs/http.md).

        ``headers`` are sent on every request, except names starting with ``mcp-``; credentials in
        ``url`` become ``Authorization: Basic``. ``timeout`` bounds each connect, write and read (as
        httpx); bound a whole call with the caller's cancel scope (``trio.fail_after``).
        ``http_transport`` replaces the keep-alive connection pool (e.g. ``httpx.MockTransport``);
        ``verify`` (``True``, ``False``, a CA bundle path, an ``ssl.SSLContext``, or ``"system"``: the
        operating system's trust store through the ``truststore`` package, ``pip install
        'mcpfsm[system-trust]'``), ``cert`` (a client certificate), ``proxy`` and ``trust_env``
        (``HTTP(S)_PROXY``, ``ALL_PROXY``, ``NO_PROXY``, ``SSL_CERT_FILE``, ``SSL_CERT_DIR``) configure that
        pool, and the HTTP client of the authorization side. ``max_response_bytes`` bounds a JSON body and
        one event of a stream. The input handlers and their options are those of :class:`Client`. ``auth``
        authorizes the client (docs/authorization.md): :class:`~mcpfsm.OAuth`, :class:`~mcpfsm.ClientCredentials`,
        :class:`~mcpfsm.JwtBearer`, :class:`~mcpfsm.EnterpriseManaged`, or a static bearer token; the token
        goes on every request to ``url`` and nowhere else. ``store``, ``tasks``, ``progress_timeout`` and
        ``total_timeout`` are those of :class:`Client`.

        Raises:
            TransportError: ``url`` or ``proxy`` is not an absolute http(s) URL, or a CA bundle or
                client certificate cannot be loaded.
            ImportError: ``verify="system"`` without the ``truststore`` package (the ``system-trust`` extra).
            ValueError: ``verify``, ``cert`` or ``proxy`` together with ``http_transport``; ``auth``
                together with an ``Authorization`` header or credentials in ``url``, or a malformed ``auth``; a
                header in ``headers`` that cannot be sent (named, its value never quoted), or that the
                connection sets itself (``Content-Length``, ``Transfer-Encoding``, ``TE``, ``Trailer``,
                ``Upgrade``; a ``Host`` or ``Connection`` of your own is sent as given).
            ValueError, TypeError: as for :class:`Client`; ``auth`` of none of the accepted kinds.
        """
        from .._transports.http import HttpTransport, carries_credentials  # with the first HTTP client (start-up)

        if isinstance(verify, str) and verify == "system":
            verify = system_trust()
        layer: AuthorizationLayer | StaticToken | None = None
        if auth is not None:
            if any(name.lower() == "authorization" for name in headers or {}) or carries_credentials(url):
                raise ValueError("give either auth= or an Authorization header (or credentials in the URL), not both")
            layer = _authorization(
                auth, url=url, protocol=protocol, timeout=timeout, verify=verify, cert=cert, proxy=proxy,
                trust_env=trust_env,
            )
        transport = HttpTransport(
            url,
            headers=headers,
            timeout=timeout,
            transport=http_transport,
            verify=verify,
            cert=cert,
            proxy=proxy,
            trust_env=trust_env,
            max_response_bytes=max_response_bytes,
            credentials=layer,
        )
        client = cls(
            transport,
            protocol=protocol,
            on_event=on_event,
            on_notification=on_notification,
            on_elicitation=on_elicitation,
            on_sampling=on_sampling,
            on_roots=on_roots,
            elicitation_modes=elicitation_modes,
            max_input_rounds=max_input_rounds,
            audit_answers=audit_answers,
            log_level=log_level,
            cache=cache,
            validate_output=validate_output,
            server=server,
            store=store,
            tasks=tasks,
            progress_timeout=progress_timeout,
            total_timeout=total_timeout,
        )
        if layer is not None:
            client._authorize_with(layer)
        elif any(name.lower() == "authorization" for name in headers or {}) or carries_credentials(url):
            from .authorization import header_secrets

            held = header_secrets(headers, url)
            if held is not None:
                client._session.secrets = lambda: held
                client._audit.redact = held.text
                transport.scrub = held.scrub
        return client

    def _authorize_with(self, layer: AuthorizationLayer | StaticToken) -> None:
        # The layer publishes its flows' events on this client's bus and sits in the session path.
        from .authorization import AuthorizationLayer

        if isinstance(layer, AuthorizationLayer):
            layer.audit = self._audit
            layer.telemetry = self._telemetry
            # §18: tokens and registrations go to the client's store unless the credential names its own;
            # either way every operation is bounded, with memory while the store is down (docs/stores.md).
            from .store_guard import guarded

            own = layer.binding.credential.store
            layer.binding.store = guarded(own) if own is not None else self.shared_store
            cache = self._session.cache
            if cache is not None:
                # SEP-2549: cached answers never cross authorization contexts; a new token or issuer empties it.
                layer.binding.on_change.append(cache.clear)
        self._session.authorization = layer
        # No text leaving the client quotes a secret it holds (docs/authorization.md).
        self._session.secrets = layer.secrets
        self._audit.redact = lambda text: layer.secrets().text(text)
        from .._transports.http import HttpTransport  # imported already: only an HTTP client has a layer

        transport = self._session.transport
        if isinstance(transport, HttpTransport):
            transport.scrub = lambda error: layer.secrets().scrub(error)

    def _hold_secrets(self, values: Iterable[str]) -> None:
        # Values the application holds secret besides credentials (a configuration's expanded variables, in
        # a URL's query or a header): taken out of every error, event and log line, like the credentials.
        from .._core.oauth.redaction import Secrets

        held = Secrets().with_values(*values)
        before = self._session.secrets
        self._session.secrets = (lambda: before().with_values(*held.values)) if before is not None else lambda: held
        redact = self._audit.redact
        self._audit.redact = (lambda text: held.text(redact(text))) if redact is not None else held.text
        transport: Any = self._session.transport
        if hasattr(type(transport), "scrub"):  # the HTTP transport scrubs the errors it only logs
            scrub = transport.scrub

            def both(error: BaseException) -> None:
                if scrub is not None:
                    scrub(error)
                held.scrub(error)

            transport.scrub = both
        if hasattr(transport, "redact"):  # the stdio transport logs the server's stderr
            transport.redact = held.text

    @classmethod
    def stdio(
        cls,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        protocol: str = "auto",
        on_event: Callable[[CallEvent], object] | None = None,
        on_notification: NotificationCallback | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        on_elicitation: InputHandler | None = None,
        on_sampling: InputHandler | None = None,
        on_roots: InputHandler | None = None,
        elicitation_modes: Sequence[str] = ("form",),
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        audit_answers: bool = False,
        log_level: LogLevel | None = None,
        cache: bool = True,
        validate_output: ValidateOutput = "raise",
        server: str | None = None,
        store: Store | None = None,
        tasks: bool = False,
        progress_timeout: float | None = None,
        total_timeout: float | None = None,
    ) -> Client:
        """A client for a server run as a subprocess speaking newline-delimited JSON-RPC on stdio.

        ``max_response_bytes`` bounds one line from the server. The input handlers and their options,
        ``store``, ``tasks``, ``progress_timeout`` and ``total_timeout`` are those of :class:`Client`.
        """
        from .._transports.stdio import StdioTransport

        transport = StdioTransport(command, env=env, cwd=cwd, max_response_bytes=max_response_bytes)
        return cls(
            transport,
            protocol=protocol,
            on_event=on_event,
            on_notification=on_notification,
            on_elicitation=on_elicitation,
            on_sampling=on_sampling,
            on_roots=on_roots,
            elicitation_modes=elicitation_modes,
            max_input_rounds=max_input_rounds,
            audit_answers=audit_answers,
            log_level=log_level,
            cache=cache,
            validate_output=validate_output,
            server=server,
            store=store,
            tasks=tasks,
            progress_timeout=progress_timeout,
            total_timeout=total_timeout,
        )

    async def __aenter__(self) -> Client:
        """Start the transport and negotiate the protocol era."""
        try:
            await self.connect()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the connection."""
        await self.aclose()

    async def aclose(self) -> None:
        """End the session (a legacy ``DELETE`` is given 5 s) and release the transport. Idempotent."""
        if not self._lifecycle.close():
            return
        with trio.CancelScope(shield=True):
            try:
                await self._session.aclose()
                with trio.move_on_after(_END_BOUND):
                    await self._session.end()
            finally:
                await self._transport.aclose()
                if self._session.authorization is not None:
                    await self._session.authorization.aclose()

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol version, ``None`` before connecting."""
        return self._session.version

    @property
    def mirrors(self) -> bool:
        """True when this connection mirrors ``x-mcp-header`` arguments into ``Mcp-Param-*`` headers.

        That is HTTP (any transport carrying headers) in the modern era; on stdio and legacy
        connections annotations are inert and tools with invalid ones are kept.
        """
        return self._session.mirrors

    @property
    def server(self) -> ServerInfo:
        """What the server said about itself: name, version, title, capabilities, ``instructions``.

        Known once the client is connected (inside ``async with``, or after any method): from the
        ``server/discover`` result that settled the 2026-07-28 era, or from ``initialize`` in the
        2025-11-25 era (renewed with the legacy session). A client pinned to ``2026-07-28`` sends no
        ``server/discover`` when it connects; :meth:`discover` asks for it.

        Raises:
            McpError: not known yet: the client has not connected, or is pinned to 2026-07-28 and has not
                called :meth:`discover`.
        """
        info = self._session.server
        if info is None:
            if self._session.version is None:
                raise McpError("the server is not known before the client connects: use async with, or await connect()")
            raise McpError(
                "a client pinned to 2026-07-28 does not send server/discover when it connects:"
                " await client.discover() asks for it"
            )
        return info

    async def discover(self, *, fresh: bool = False) -> ServerInfo:
        """Return :attr:`server`, connecting first, and asking the server when that is needed or wanted.

        In the 2026-07-28 era this sends ``server/discover`` (MCP 2026-07-28 "Discovery") when the client has
        no answer yet (it was pinned to 2026-07-28), or with ``fresh=True`` (an answer still fresh in the
        response cache is reused otherwise, SEP-2549); :attr:`server` then holds it. In the 2025-11-25 era
        the ``initialize`` result is all there is and nothing is sent.

        Raises:
            McpError: the connection or the request failed.
        """
        await self.connect()
        session = self._session
        if is_modern(session.version) and (session.server is None or fresh):
            result = await session.request("server/discover", {}, fresh=fresh)
            session.server = ServerInfo.from_discover(result, session.version or "")
        return self.server

    @property
    def transport(self) -> Transport:
        """The transport this client talks through."""
        return self._transport

    @property
    def session_id(self) -> str | None:
        """The legacy ``Mcp-Session-Id`` in effect, or ``None`` (always in the modern era and on stdio)."""
        return self._session.session_id

    async def connect(self) -> None:
        """Open the transport and negotiate the protocol era; ``async with`` and every public method call this.

        One handshake at a time: concurrent first uses of a client share one (the others wait for it,
        mcpfsm._client.lifecycle). A failed handshake leaves the client unconnected, so the next use tries
        again; every task that waited for it gets the same error.

        Raises:
            McpError: the server could not be reached or speaks no version mcpfsm speaks.
            TransportError: the client is closed.
        """
        await self._lifecycle.connect()

    async def _handshake(self) -> None:
        if not self._opened:
            await self._transport.open(self._session.inbound)
            self._opened = True
        await negotiation.negotiate(self._session, self._requested)
        self._keep_log_level_if_offered()

    def _keep_log_level_if_offered(self) -> None:
        # SEP-2577 deprecates logging in 2026-07-28: a modern server whose server/discover result does not declare
        # `logging` is not asked for log messages (unknown, pinned without discover: asked, as before).
        session = self._session
        if session.log_level is None or not is_modern(session.version) or session.server is None:
            return
        if "logging" not in session.server.capabilities:
            logger.debug("the server does not declare logging; log level {!r} not asked for", session.log_level)
            session.log_level = None
            session._meta = None  # rebuilt without the level on the next request

    # --- public API -----------------------------------------------------------------------------

    async def tools(self, *, fresh: bool = False) -> ToolList:
        """Every page of ``tools/list``; pages still fresh in the response cache are not requested again.

        ``fresh=True`` requests every page (and refreshes the cache). Tools with invalid
        ``x-mcp-header`` annotations are left out with one WARNING each on connections that mirror
        (HTTP, modern era); elsewhere they are kept (SEP-2243).

        Raises:
            ProtocolError: a cursor repeats, the listing has more than 1000 pages, or a page is
                malformed.
            McpError: the request failed.
        """
        await self.connect()
        catalog = await self._catalog.relist(fresh=fresh)
        tools = [Tool(definition, self._catalog, self.call_tool, self.start_tool) for definition in catalog.tools]
        return ToolList(tools, catalog.excluded)

    async def call_tool(self, tool: Tool | str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Call a tool as one run of the tool-call state machine.

        A :class:`Tool` mirrors its annotated arguments into ``Mcp-Param-*`` headers; a plain
        name sends ``Mcp-Method`` and ``Mcp-Name`` only.

        Raises:
            TypeError: ``tool`` is neither a Tool nor a str, or ``arguments`` is not a mapping.
            MirroringError: an argument cannot be mirrored (nothing was sent).
            HeaderMismatchError: -32020 that one relist-and-retry could not resolve.
            RpcError, TransportError, ProtocolError: the request failed.
        """
        if isinstance(tool, Tool):
            name, handle = tool.name, tool.definition
        elif isinstance(tool, str):
            name, handle = tool, None
        else:
            raise TypeError(f"tool must be a Tool or a tool name, got {type(tool).__name__}")
        if arguments is None:
            arguments = {}
        elif type(arguments) is not dict and not isinstance(arguments, Mapping):
            # A plain dict first: the ABC check costs ten times as much, and arguments are nearly always dicts.
            raise TypeError(f"arguments must be a mapping, got {type(arguments).__name__}")
        if self._lifecycle.stage is not Stage.connected:
            await self.connect()
        call = ToolCall(self._port, name, arguments, handle)
        if self._timed is not None:
            return await self._timed.bounded(partial(self._run, call))
        if self._telemetry is None:
            return await call.run()
        return await self._telemetry.tool_call(call)

    async def _run(self, call: ToolCall) -> ToolResult:
        if self._telemetry is None:
            return await call.run()
        return await self._telemetry.tool_call(call)

    async def start_tool(self, tool: Tool | str, arguments: Mapping[str, Any] | None = None) -> Task:
        """Call a tool and return a :class:`Task` handle once the server answered (SEP-2663, docs/tasks.md).

        With ``tasks=True`` the server may answer with a task: the handle's ``wait()`` polls it to its end. A
        synchronous answer gives a handle whose ``id`` is ``None`` and whose ``wait()`` returns that result.

        Raises:
            As :meth:`call_tool`, for the ``tools/call`` itself.
        """
        from .tasks import Task

        if isinstance(tool, Tool):
            name, handle = tool.name, tool.definition
        elif isinstance(tool, str):
            name, handle = tool, None
        else:
            raise TypeError(f"tool must be a Tool or a tool name, got {type(tool).__name__}")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise TypeError(f"arguments must be a mapping, got {type(arguments).__name__}")
        await self.connect()
        call = ToolCall(self._port, name, arguments or {}, handle)
        started = await call.start()
        if isinstance(started, Task):
            return started
        assert isinstance(started, ToolResult)
        return Task(None, result=started)

    def task(self, task_id: str, tool: str | None = None) -> Task:
        """A handle for a task created earlier, by this process or another (docs/tasks.md); sends nothing.

        Its record in the client's store (the answered input keys, the tool) is read with its first request.

        Raises:
            TypeError: ``task_id`` is not a non-empty string, or ``tool`` is neither a name nor ``None``.
        """
        return self._tasks_support().handle(task_id, tool)

    async def pending_tasks(self) -> list[Task]:
        """Handles for the unfinished tasks of this server recorded in the client's store, oldest first.

        A restarted process resumes polling where it stopped (``await task.wait()``).
        """
        from .tasks import resume_all

        return await resume_all(self._tasks_support())

    def _tasks_support(self) -> TaskSupport:
        if self._task_support is None:
            from .tasks import TaskSupport

            self._task_support = TaskSupport(
                self._session,
                self._audit,
                lambda: self.shared_store,
                tasks=self._tasks,
                progress_timeout=self._progress_timeout,
                total_timeout=self._total_timeout,
                check_output=self._port.check_output,
            )
        return self._task_support

    async def resources(self, *, fresh: bool = False) -> list[Resource]:
        """Every page of ``resources/list`` (MCP "Resources"); cached pages are reused unless ``fresh``.

        Raises:
            ProtocolError: an entry is malformed, a cursor repeats or the listing is too long.
            McpError: the request failed.
        """
        from .._core.surface import Resource

        entries = await self._list("resources/list", "resources", fresh)
        return [Resource.from_entry(entry, index) for index, entry in enumerate(entries)]

    async def resource_templates(self, *, fresh: bool = False) -> list[ResourceTemplate]:
        """Every page of ``resources/templates/list`` (MCP "Resources"); cached pages are reused unless ``fresh``.

        Raises:
            ProtocolError: an entry is malformed, a cursor repeats or the listing is too long.
            McpError: the request failed.
        """
        from .._core.surface import ResourceTemplate

        entries = await self._list("resources/templates/list", "resourceTemplates", fresh)
        return [ResourceTemplate.from_entry(entry, index) for index, entry in enumerate(entries)]

    async def prompts(self, *, fresh: bool = False) -> list[Prompt]:
        """Every page of ``prompts/list`` (MCP "Prompts"); cached pages are reused unless ``fresh``.

        Raises:
            ProtocolError: an entry is malformed, a cursor repeats or the listing is too long.
            McpError: the request failed.
        """
        from .._core.surface import Prompt

        entries = await self._list("prompts/list", "prompts", fresh)
        return [Prompt.from_entry(entry, index) for index, entry in enumerate(entries)]

    async def read_resource(self, uri: str | Resource, *, fresh: bool = False) -> ResourceResult:
        """``resources/read`` of ``uri`` (MCP "Resources"); ``Mcp-Name`` carries the URI (SEP-2243).

        A result still fresh in the response cache is reused unless ``fresh``. A server that does not
        know the URI answers an :class:`RpcError` (-32602, or -32002 in the legacy era).

        Raises:
            TypeError: ``uri`` is neither a string nor a :class:`Resource`.
            MirroringError: the URI cannot go into ``Mcp-Name`` (nothing was sent).
            ProtocolError: the result is malformed.
            McpError: the request failed.
        """
        from .._core.surface import Resource, ResourceResult

        if isinstance(uri, Resource):
            uri = uri.uri
        if not isinstance(uri, str):
            raise TypeError(f"uri must be a str or a Resource, got {type(uri).__name__}")
        return ResourceResult.from_result(await self._input_request("resources/read", {"uri": uri}, fresh=fresh))

    async def get_prompt(self, name: str | Prompt, arguments: Mapping[str, str] | None = None) -> PromptResult:
        """``prompts/get`` of prompt ``name`` with string ``arguments`` (MCP "Prompts"); ``Mcp-Name`` carries the name.

        Raises:
            TypeError: ``name`` is neither a string nor a :class:`Prompt`, or an argument is not a string.
            MirroringError: the name cannot go into ``Mcp-Name`` (nothing was sent).
            ProtocolError: the result is malformed.
            McpError: the request failed (a missing required argument is the server's error).
        """
        from .._core.surface import Prompt, PromptResult

        if isinstance(name, Prompt):
            name = name.name
        if not isinstance(name, str):
            raise TypeError(f"name must be a str or a Prompt, got {type(name).__name__}")
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = _strings("arguments", arguments)
        return PromptResult.from_result(await self._input_request("prompts/get", params))

    async def skills(self, *, fresh: bool = False) -> list[Skill]:
        """Every page of ``skills/list`` (SEP-2640): the skills the server serves; no skill file is read.

        Only asked of a server that declares the ``io.modelcontextprotocol/skills`` extension. Pages still fresh
        in the response cache are reused unless ``fresh``. :meth:`Skill.load <mcpfsm.Skill.load>` reads and
        verifies one (docs/skills.md).

        Raises:
            McpError: the server does not declare the extension, or the request failed.
            ProtocolError: an entry is malformed, a cursor repeats or the listing is too long.
        """
        from .skills import require_declared, skills_from_entries

        require_declared((await self.discover()).capabilities)
        return skills_from_entries(await self._list("skills/list", "skills", fresh), self._skill_reader)

    async def skill(self, uri: str, *, fresh: bool = False) -> Skill:
        """``skills/get`` (SEP-2640): the entry of the skill whose ``SKILL.md`` is at ``uri``, listed or not.

        Only asked of a server that declares the extension; a fresh cached answer is reused unless ``fresh``. A
        server that serves no skill there answers an :class:`RpcError` (-32602).

        Raises:
            TypeError: ``uri`` is not a string.
            McpError: the server does not declare the extension, or the request failed.
            ProtocolError: the entry is malformed.
        """
        from .skills import require_declared, skill_from_result

        if not isinstance(uri, str):
            raise TypeError(f"uri must be a str, got {type(uri).__name__}")
        require_declared((await self.discover()).capabilities)
        result = await self._session.request("skills/get", {"uri": uri}, fresh=fresh)
        return skill_from_result(result, self._skill_reader)

    def _skill_reader(self, uri: str) -> Coroutine[Any, Any, ResourceResult]:
        # Skill files are read from the server, never from the response cache: a stale cached copy would fail
        # verification against a newer entry (SEP-2640 "Lazy Retrieval": such a copy must be fetched again); a
        # LoadedSkill keeps what it verified.
        return self.read_resource(uri, fresh=True)

    async def complete(
        self,
        ref: Prompt | ResourceTemplate | Mapping[str, Any],
        argument: tuple[str, str] | Mapping[str, str],
        context: Mapping[str, str] | None = None,
    ) -> Completion:
        """``completion/complete``: suggestions for one argument of a prompt or resource template (MCP "Completion").

        ``ref`` is a :class:`Prompt`, a :class:`ResourceTemplate` or the wire object
        (``{"type": "ref/prompt", "name": ...}`` or ``{"type": "ref/resource", "uri": ...}``); ``argument``
        is ``(name, value so far)`` or ``{"name": ..., "value": ...}``; ``context`` holds the values of
        arguments already chosen. Never cached (SEP-2549).

        Raises:
            TypeError: ``ref``, ``argument`` or ``context`` has the wrong shape.
            ProtocolError: the result is malformed.
            McpError: the request failed.
        """
        from .._core.surface import Completion

        params: dict[str, Any] = {"ref": _completion_ref(ref), "argument": _completion_argument(argument)}
        if context is not None:
            params["context"] = {"arguments": _strings("context", context)}
        await self.connect()
        return Completion.from_result(await self._session.request("completion/complete", params))

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        tasks: Sequence[str] = (),
        buffer: int = 1024,
    ) -> AsyncIterator[Subscription]:
        """Subscribe to change notifications: ``async with client.listen(tools=True) as sub: async for n in sub``.

        ``tools``/``prompts``/``resources`` ask for the ``notifications/*/list_changed`` of each,
        ``resource_uris`` for ``notifications/resources/updated`` of those URIs, ``tasks`` for the
        ``notifications/tasks`` of those task ids (SEP-2663, modern era: a handle waiting for one of them polls at
        once when its notification arrives; polling stays the backstop). Modern: one
        ``subscriptions/listen`` stream, entered once the server acknowledged it
        (:attr:`Subscription.acknowledged` is the subset it honours). Legacy: the standalone ``GET``
        stream plus ``resources/subscribe`` per URI (``unsubscribe`` on exit). Either way the
        notifications also invalidate the response cache and reach ``on_notification``. Leaving the
        block ends the subscription.

        Raises:
            TypeError: ``resource_uris`` is not a sequence of strings.
            RpcError: the server refused the subscription.
            TransportError: it could not be opened, or its modern stream broke (raised from the block).
            ProtocolError: the server ended it before acknowledging it.
        """
        if isinstance(resource_uris, str) or not all(isinstance(uri, str) for uri in resource_uris):
            raise TypeError("resource_uris must be a sequence of URI strings")
        if isinstance(tasks, str) or not all(isinstance(each, str) for each in tasks):
            raise TypeError("tasks must be a sequence of task id strings")
        from . import subscriptions

        wanted = subscriptions.requested(
            tools=tools, prompts=prompts, resources=resources, resource_uris=resource_uris, task_ids=tasks
        )
        await self.connect()
        async with subscriptions.listen(self._session, wanted, buffer=buffer) as subscription:
            yield subscription

    @property
    def store(self) -> Store:
        """Where this client keeps what outlives a call (docs/stores.md).

        The ``store=`` it was given, else a :class:`~mcpfsm.MemoryStore` of its own, made on first use.
        """
        if self._store is None:
            from .stores import MemoryStore

            self._store = MemoryStore()
        return self._store

    @property
    def shared_store(self) -> Store:
        """:attr:`store` as this client uses it: every operation bounded, memory while it is down (docs/stores.md).

        A ``MemoryStore`` as it is; any other store in a guard of this client's own (2 s per operation, then
        5 s on the client's memory after a failure, one WARNING per outage).
        """
        if self._guarded is None:
            from .store_guard import guarded

            self._guarded = guarded(self.store)
        return self._guarded

    @property
    def store_fallbacks(self) -> int:
        """How many times a store of this client failed and the client went on with its memory (docs/stores.md).

        Counts the client's ``store=`` and the ``store=`` of its ``auth=`` credential, one per outage.
        """
        from .authorization import AuthorizationLayer
        from .store_guard import GuardedStore

        stores: list[object] = [self._guarded]
        layer = self._session.authorization
        if isinstance(layer, AuthorizationLayer) and layer.binding.store is not self._guarded:
            stores.append(layer.binding.store)
        return sum(store.fallbacks for store in stores if isinstance(store, GuardedStore))

    @property
    def cache(self) -> ResponseCache | None:
        """The response cache (SEP-2549), or ``None`` with ``cache=False``; ``cache.stats`` counts hits and misses."""
        return self._session.cache

    async def _list(self, method: str, key: str, fresh: bool) -> list[object]:
        await self.connect()
        return await self._catalog.list_all(method, key, fresh=fresh)

    def events(self, buffer: int = 1024) -> AbstractAsyncContextManager[trio.MemoryReceiveChannel[CallEvent]]:
        """Subscribe to every :class:`CallEvent` of this client.

        ``async with client.events() as events: async for event in events: ...``. A subscriber
        that falls ``buffer`` events behind loses events (with one WARNING) instead of slowing
        calls down.
        """
        return self._audit.subscribe(buffer)

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send any MCP request and return its result object (modern ``_meta`` added for you).

        ``tools/call``, ``prompts/get`` and ``resources/read`` run their input rounds (SEP-2322) with
        the client's handlers and return the complete result; a ``tools/call`` sent this way is not a
        run of the tool-call machine (no events, no mirroring, no -32020 recovery, no output
        validation). Results of cacheable methods go through the response cache (SEP-2549).

        Raises:
            RpcError, TransportError, ProtocolError: as for tool calls.
            Exception: whatever an input handler raised.
        """
        await self.connect()
        if method in MRTR_METHODS:
            return await self._input_request(method, params or {})
        return await self._session.request(method, params)

    async def _input_request(self, method: str, params: Mapping[str, Any], *, fresh: bool = False) -> dict[str, Any]:
        # The input loop for a request that is not a run of the tool-call machine (prompts/get,
        # resources/read): mcpfsm._drivers.input_machine.request_with_input with this client's handlers. Its
        # first round may come from the response cache; a round carrying inputResponses or requestState
        # never does (SEP-2549), and an input_required answer is never stored.
        from .._drivers.input_machine import request_with_input  # the input machine, with its first use

        await self.connect()
        send = partial(self._session.request, fresh=fresh)
        return await request_with_input(send, self._session.inputs, method, params, audit=self._audit)


def _strings(what: str, values: Mapping[str, str]) -> dict[str, str]:
    if not isinstance(values, Mapping) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in values.items()
    ):
        raise TypeError(f"{what} must map names to string values")
    return dict(values)


def _completion_ref(ref: Prompt | ResourceTemplate | Mapping[str, Any]) -> dict[str, Any]:
    from .._core.surface import Prompt, ResourceTemplate

    if isinstance(ref, Prompt):
        return {"type": "ref/prompt", "name": ref.name}
    if isinstance(ref, ResourceTemplate):
        return {"type": "ref/resource", "uri": ref.uri_template}
    if isinstance(ref, Mapping):
        kind = ref.get("type")
        if kind == "ref/prompt" and isinstance(ref.get("name"), str):
            return dict(ref)
        if kind == "ref/resource" and isinstance(ref.get("uri"), str):
            return dict(ref)
    raise TypeError(
        "ref must be a Prompt, a ResourceTemplate, {'type': 'ref/prompt', 'name': ...}"
        " or {'type': 'ref/resource', 'uri': ...}"
    )


def _completion_argument(argument: tuple[str, str] | Mapping[str, str]) -> dict[str, str]:
    if isinstance(argument, tuple) and len(argument) == 2 and all(isinstance(part, str) for part in argument):
        return {"name": argument[0], "value": argument[1]}
    if isinstance(argument, Mapping):
        name, value = argument.get("name"), argument.get("value")
        if isinstance(name, str) and isinstance(value, str):
            return {"name": name, "value": value}
    raise TypeError("argument must be (name, value) or {'name': ..., 'value': ...} with string name and value")


def system_trust() -> ssl.SSLContext:
    """A client TLS context that verifies with the operating system's trust store (``verify="system"``).

    It comes from the ``truststore`` package (the ``system-trust`` extra): the platform's verifier on macOS and
    Windows, the system's CA bundle on Linux, so certificates an administrator installed are trusted as they
    are by the system's own programs.

    Raises:
        ImportError: ``truststore`` is not installed; the message says how to install it.
    """
    try:
        import truststore
    except ImportError as exc:
        raise ImportError(
            "verify='system' uses the operating system's trust store through the truststore package, which is not"
            " installed: pip install 'mcpfsm[system-trust]' (or pass verify=True, a CA bundle path or an SSLContext)"
        ) from exc
    context: ssl.SSLContext = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return context


def _authorization(
    auth: Auth,
    *,
    url: str,
    protocol: str,
    timeout: httpx.Timeout | float | None,
    verify: VerifyTypes,
    cert: CertTypes | None,
    proxy: str | None,
    trust_env: bool,
) -> AuthorizationLayer | StaticToken:
    from .._core.credentials import ClientCredentials, EnterpriseManaged, JwtBearer, OAuth
    from .._transports.oauth_http import OAuthHttp
    from .authorization import AuthorizationLayer, StaticToken

    if isinstance(auth, str):
        return StaticToken(auth)
    if not isinstance(auth, OAuth | ClientCredentials | JwtBearer | EnterpriseManaged):
        raise TypeError(
            "auth must be mcpfsm.OAuth, ClientCredentials, JwtBearer, EnterpriseManaged or a token string,"
            f" got {type(auth).__name__}"
        )
    http = OAuthHttp(
        timeout=timeout, verify=verify, cert=cert, proxy=proxy, trust_env=trust_env, user_agent=f"mcpfsm/{_VERSION}"
    )
    return AuthorizationLayer(auth, mcp_url=url, protocol=protocol, http=http)
