"""One place that builds a client: every part made once, in order, with what it needs, through its constructor.

:class:`Parts` takes what the client talks to — a :class:`~mcpfsm.Transport`, or the description of the
connection ``Client.http`` (:class:`HttpServer`) or ``Client.stdio`` (:class:`StdioServer`) makes — and one
:class:`~mcpfsm._client.options.ClientOptions`, and makes, in this order:

1. the response cache (``cache=``) and the input handlers (``on_elicitation=``, ...);
2. the telemetry layer (``None`` unless an application configured OpenTelemetry: ``mcpfsm._client.telemetry``)
   and the audit bus (``on_event=``, ``server=``; it takes the client's secrets out of every event's error);
3. for HTTP, the authorization layer (``auth=``: its flows publish on that bus and run under that telemetry,
   keep their tokens in the client's store, empty that cache on a new token) or the secrets of a caller's
   ``Authorization`` header, then the transport, which asks the layer for each request's credentials;
4. the shared listings (``store=``, HTTP), then the session over the transport (wrapped first when the
   connection says so: the ``mcpfsm`` command's :class:`~mcpfsm._tooling.cli.wire.Wire`), holding each of them;
5. the catalog, the tool-call driver's port, the lifecycle (one handshake at a time), and the tasks layer when
   ``tasks=`` or a timeout asks for it.

No part has an attribute set on it after it is made (``tests/client/test_assembly.py`` scans the package for
such assignments): each gets what it needs as constructor arguments, and a part that needs one made later gets
a callable (the audit bus's ``redact`` asks this value for the secrets of the layer made after it).

**Laziness lives here.** What a client may never use is imported by the method that makes it, with the
option that asks for it or the first use: the HTTP stack (``Client.http``), the stdio transport, the
authorization side (``auth=``), the store guard and shared listings (``store=``, ``auth=``), tasks (``tasks=``, a
timeout, or the first task handle), resources, prompts and completion (the first such request), and skills.
``import mcpfsm`` thus stays close to ``import trio`` (``bench/startup.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import trio

from .._core.cache import ResponseCache
from .._core.catalog import ToolCatalog, ToolDefinition
from .._core.constants import DEFAULT_MAX_RESPONSE_BYTES, MCPFSM_VERSION
from .._core.errors import OutputValidationError
from .._core.output import OutputCheck, ValidateOutput
from .._core.plan import HeaderPlan
from .._core.results import ToolResult
from .._drivers.audit import AuditBus
from .._drivers.input import InputHandlers
from .._drivers.tool_call import ToolCall
from .._log import logger
from .._transports.base import Transport
from . import negotiation, telemetry
from .catalog import Catalog
from .lifecycle import Lifecycle
from .options import Auth, ClientOptions, EventSink
from .session import Session

if TYPE_CHECKING:
    import httpx

    from .._core.credentials import Store
    from .._core.oauth.redaction import Secrets
    from .._transports.tls import CertTypes, VerifyTypes
    from .authorization import AuthorizationLayer, StaticToken
    from .skills import Skills
    from .surface import Surface
    from .task import TaskSupport
    from .telemetry import Telemetry

__all__ = ["HttpServer", "Parts", "Port", "StdioServer", "Wrap"]

Wrap = Callable[[Transport], Transport]
"""A layer of the caller's between the session and the transport: given the transport, returns what wraps it."""

_END_BOUND: Final = 5.0
"""Seconds the ``DELETE`` ending a legacy session may take when the client closes (best effort)."""


class HttpServer(NamedTuple):
    """What ``Client.http`` connects to, and how: its arguments of the HTTP connection (docs/http.md).

    ``sleep`` (the delay before resuming a stream), ``clock`` (the authorization side's wall clock) and
    ``oauth_transport`` (the authorization side's httpx transport) are there for tests. ``secrets`` are values
    held secret like credentials, never in an error, an event or a log line (what a configuration's variables
    were replaced by: ``ServerConfig.secrets``). ``wrap`` puts a layer between the session and the transport
    (the ``mcpfsm`` command's). A named tuple, not a dataclass: it is
    made by ``import mcpfsm``, where a dataclass of its size costs start-up (bench/startup.py).
    """

    url: str
    headers: Mapping[str, str] | None = None
    timeout: httpx.Timeout | float | None = None
    http_transport: httpx.AsyncBaseTransport | None = None
    verify: VerifyTypes = True
    cert: CertTypes | None = None
    proxy: str | None = None
    trust_env: bool = True
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    auth: Auth | None = None
    sleep: Callable[[float], Any] = trio.sleep
    clock: Callable[[], float] = time.time
    oauth_transport: httpx.AsyncBaseTransport | None = None
    secrets: Collection[str] = ()
    wrap: Wrap | None = None


class StdioServer(NamedTuple):
    """What ``Client.stdio`` runs: the server's command and its environment.

    ``secrets`` and ``wrap`` as for :class:`HttpServer`.
    """

    command: Sequence[str]
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    secrets: Collection[str] = ()
    wrap: Wrap | None = None


def _recorded(transport: Transport) -> str | list[str]:
    # What a cassette's header names: the endpoint's URL (HTTP), the command (stdio).
    url = getattr(transport, "url", None)
    if isinstance(url, str):
        return url
    command = getattr(transport, "command", None)
    if isinstance(command, list) and command and all(isinstance(word, str) for word in command):
        return command
    return type(transport).__name__ if transport.carries_headers else [type(transport).__name__]


class Parts:
    """The parts of one client, made in the order the module docstring gives.

    Args:
        connection: the transport, or the description of the connection to make.
        options: the client's options.

    Raises:
        TransportError: the URL or the proxy is not an absolute http(s) URL, or a CA bundle or client
            certificate cannot be loaded.
        ImportError: ``verify="system"`` without the ``truststore`` package.
        ValueError, TypeError: an HTTP argument or ``auth`` that cannot be used (``Client.http`` says which).
    """

    def __init__(self, connection: Transport | HttpServer | StdioServer, options: ClientOptions) -> None:
        """Make every part; nothing is sent until the client connects."""
        self.options = options
        self.cache = ResponseCache() if options.cache else None
        self._store = options.store
        self._guarded: Store | None = None
        self._own_store: Store | None = None
        self._retained: list[Any] | None = None
        self._tasks: TaskSupport | None = None
        self._surface: Surface | None = None
        self._skills: Skills | None = None
        inputs = InputHandlers(
            on_elicitation=options.on_elicitation,
            on_sampling=options.on_sampling,
            on_roots=options.on_roots,
            elicitation_modes=options.elicitation_modes,
            max_input_rounds=options.max_input_rounds,
            audit_answers=options.audit_answers,
        )
        self.authorization: AuthorizationLayer | StaticToken | None = None
        """The authorization layer every message goes through (``auth=``), or ``None``."""
        self.secrets: Callable[[], Secrets] | None = None
        """The secrets the client holds now, or ``None``: none (no ``auth=``, no ``Authorization`` header)."""
        self.telemetry: Telemetry | None = None
        """The telemetry layer (``None`` unless an application configured OpenTelemetry)."""
        self.audit: AuditBus
        if isinstance(connection, HttpServer):
            transport: Transport = self._http(connection)
            wrap = connection.wrap
        else:
            if isinstance(connection, StdioServer):
                self.secrets = _holding(None, connection.secrets)
                transport, wrap = self._stdio(connection), connection.wrap
            else:
                transport, wrap = connection, None
            self.telemetry = telemetry.probe(transport)
            redact = self._redact if self.secrets is not None else None
            self.audit = AuditBus(self._observed(options.on_event), server=options.server, redact=redact)
        if options.record is not None:
            # docs/testing.md: a recorder around the transport; without record= nothing of it is in the path.
            from .._transports.recorder import RecordingTransport

            transport = RecordingTransport(
                transport,
                options.record,
                server=_recorded(transport),
                redaction=self._redaction,
                answers=options.audit_answers,  # the user's answers, as the audit trail keeps them
            )
        self.transport = transport
        """The transport as made (or given), or the recorder around it (``record=``): ``Client.transport``."""
        shared = None
        if options.store is not None and options.record is None:
            # A recording lists for itself: a listing the store answered would be missing from the cassette.
            from . import sharing

            shared = sharing.for_client(
                options.store,
                transport=transport,
                cache=self.cache,
                authorization=self.authorization,
                secrets=self.secrets,
            )
        self.session = Session(
            wrap(transport) if wrap is not None else transport,
            client_info={"name": options.client_name, "version": MCPFSM_VERSION},
            on_notification=options.on_notification,
            inputs=inputs,
            cache=self.cache,
            log_level=options.log_level,
            shared=shared,
            authorization=self.authorization,
            secrets=self.secrets,
            telemetry=self.telemetry,
            audit=self.audit,
            tasks=options.tasks,
            progress_tokens=options.progress_timeout is not None,
        )
        self.catalog = Catalog(self.session)
        self.port = Port(self.session, self.catalog, self.audit, options.validate_output, self.tasks)
        self.lifecycle = Lifecycle(self._handshake)
        timed = options.progress_timeout is not None or options.total_timeout is not None
        self.timed = self.tasks() if timed else None
        """The tasks layer when a timeout bounds every call (``progress_timeout``, ``total_timeout``), else ``None``."""
        if options.tasks:
            self.tasks()

    def _http(self, server: HttpServer) -> Transport:
        from .._transports.http import HttpTransport, carries_credentials  # with the first HTTP client

        options = self.options
        verify = server.verify
        if isinstance(verify, str) and verify == "system":
            from .._transports.tls import system_trust

            verify = system_trust()
        url, headers = server.url, server.headers
        typed = any(name.lower() == "authorization" for name in headers or {}) or carries_credentials(url)
        held: Secrets | None = None
        if server.auth is not None:
            if typed:
                raise ValueError("give either auth= or an Authorization header (or credentials in the URL), not both")
        elif typed:
            from .authorization import header_secrets

            held = header_secrets(headers, url)
        # OpenTelemetry providers are read now (docs/telemetry.md); without one nothing is built per call.
        self.telemetry = telemetry.probe(url)
        knows = server.auth is not None or held is not None or bool(server.secrets)
        self.audit = AuditBus(
            self._observed(options.on_event), server=options.server, redact=self._redact if knows else None
        )
        base: Callable[[], Secrets] | None = None
        if server.auth is not None:
            layer = self._authorization(server, verify)
            self.authorization, base = layer, layer.secrets
        elif held is not None:
            base = lambda: held  # noqa: E731
        self.secrets = _holding(base, server.secrets)
        return HttpTransport(
            url,
            headers=headers,
            timeout=server.timeout,
            transport=server.http_transport,
            sleep=server.sleep,
            verify=verify,
            cert=server.cert,
            proxy=server.proxy,
            trust_env=server.trust_env,
            max_response_bytes=server.max_response_bytes,
            credentials=self.authorization,
            scrub=self._scrub if self.secrets is not None else None,
        )

    def _authorization(self, server: HttpServer, verify: VerifyTypes) -> AuthorizationLayer | StaticToken:
        from .._core.credentials import ClientCredentials, EnterpriseManaged, JwtBearer, OAuth
        from .._transports.oauth_http import OAuthHttp
        from .authorization import AuthorizationLayer, StaticToken
        from .store_guard import guarded

        auth = server.auth
        if isinstance(auth, str):
            return StaticToken(auth)
        if not isinstance(auth, OAuth | ClientCredentials | JwtBearer | EnterpriseManaged):
            raise TypeError(
                "auth must be mcpfsm.OAuth, ClientCredentials, JwtBearer, EnterpriseManaged or a token string,"
                f" got {type(auth).__name__}"
            )
        if auth.store is not None:
            self._own_store = guarded(auth.store)
        http = OAuthHttp(
            timeout=server.timeout,
            transport=server.oauth_transport,
            verify=verify,
            cert=server.cert,
            proxy=server.proxy,
            trust_env=server.trust_env,
            user_agent=f"mcpfsm/{MCPFSM_VERSION}",
        )
        # §18: tokens and registrations go to the client's store unless the credential names its own; either way
        # every operation is bounded, with memory while the store is down (docs/stores.md). SEP-2549: cached
        # answers never cross authorization contexts, so a new token or issuer empties the cache.
        return AuthorizationLayer(
            auth,
            mcp_url=server.url,
            protocol=self.options.protocol,
            http=http,
            clock=server.clock,
            store=self._own_store if self._own_store is not None else self.shared_store(),
            audit=self.audit,
            telemetry=self.telemetry,
            on_change=(self.cache.clear,) if self.cache is not None else (),
        )

    def _stdio(self, server: StdioServer) -> Transport:
        from .._transports.stdio import StdioTransport  # with the first stdio client

        return StdioTransport(
            server.command,
            env=server.env,
            cwd=server.cwd,
            max_response_bytes=server.max_response_bytes,
            redact=self._redact if self.secrets is not None else None,
        )

    def _observed(self, on_event: EventSink | None) -> EventSink | None:
        return on_event if self.telemetry is None else self.telemetry.observe(on_event)

    def _redaction(self) -> Callable[[str], str] | None:
        # What a recording passes every string through: the secrets the client holds at that moment.
        return None if self.secrets is None else self.secrets().text

    def _redact(self, text: str) -> str:
        # No text leaving the client quotes a secret it holds (docs/authorization.md).
        assert self.secrets is not None
        return self.secrets().text(text)

    def _scrub(self, error: BaseException) -> None:
        assert self.secrets is not None
        self.secrets().scrub(error)

    async def _handshake(self) -> None:
        if self._retained is None and (self._store is not None or self._own_store is not None):
            # The client holds its stores' connections open for its life, from its first handshake to its close
            # (docs/stores.md): one pool to a RedisStore nobody entered, shared with the clients of other tasks.
            from .store_guard import retain

            self._retained = retain(self.shared_store() if self._store is not None else None, self._own_store)
        await negotiation.connect(self.session, self.options.protocol)

    async def aclose(self) -> None:
        """Release what the parts hold, once the client is closing (``Client.aclose`` shields this).

        The session's answers still running, the legacy session (its ``DELETE`` given 5 s), the transport, the
        authorization side's HTTP client, and the stores' connections the client held open.
        """
        try:
            await self.session.aclose()
            with trio.move_on_after(_END_BOUND):
                await self.session.end()
        finally:
            await self.transport.aclose()
            if self.authorization is not None:
                await self.authorization.aclose()
            if self._retained:
                from .store_guard import release

                await release(self._retained)

    # --- parts made on first use ----------------------------------------------------------------------

    def store(self) -> Store:
        """The client's store: ``store=``, else a :class:`~mcpfsm.MemoryStore` of its own, made on first use."""
        if self._store is None:
            from .stores import MemoryStore

            self._store = MemoryStore()
        return self._store

    def shared_store(self) -> Store:
        """:meth:`store` in a guard of this client's own (every operation bounded, memory while it is down)."""
        if self._guarded is None:
            from .store_guard import guarded

            self._guarded = guarded(self.store())
        return self._guarded

    def store_fallbacks(self) -> int:
        """How many times the client's store, or its credential's, failed and the client used its memory."""
        stores = [store for store in (self._guarded, self._own_store) if store is not None]
        if not stores:
            return 0
        from .store_guard import GuardedStore  # loaded already: it guarded them

        return sum(store.fallbacks for store in stores if isinstance(store, GuardedStore))

    def tasks(self) -> TaskSupport:
        """The tasks layer (SEP-2663 and the timeouts of long calls), made on first use."""
        if self._tasks is None:
            from .task import TaskSupport

            options, transport = self.options, self.transport
            self._tasks = TaskSupport(
                self.session,
                self.audit,
                self.shared_store,
                tasks=options.tasks,
                progress_timeout=options.progress_timeout,
                total_timeout=options.total_timeout,
                check_output=self.port.check_output,
                endpoint=lambda: getattr(transport, "url", None),
            )
        return self._tasks

    def surface(self) -> Surface:
        """Resources, prompts and completion, made with the first such request."""
        if self._surface is None:
            from .surface import Surface

            self._surface = Surface(self.session, self.catalog, self.audit, self.lifecycle.connect)
        return self._surface

    def skills(self) -> Skills:
        """``skills/list`` and ``skills/get``, made with the first of them."""
        if self._skills is None:
            from .skills import Skills

            surface = self.surface()

            def read(uri: str) -> Coroutine[Any, Any, Any]:
                # Skill files are read from the server, never from the response cache: a stale cached copy would
                # fail verification against a newer entry (SEP-2640 "Lazy Retrieval"); a LoadedSkill keeps what
                # it verified.
                return surface.read_resource(uri, fresh=True)

            self._skills = Skills(self.session, self.catalog, self.lifecycle.connect, read)
        return self._skills


def _holding(held: Callable[[], Secrets] | None, values: Collection[str]) -> Callable[[], Secrets] | None:
    # The secrets a client holds now: its credentials' (``held``) and the values held secret besides them.
    if not values:
        return held
    from .._core.oauth.redaction import Secrets  # with the first configuration that has secrets

    extra = Secrets().with_values(*values)
    if held is None:
        return lambda: extra
    base = held
    return lambda: base().with_values(*extra.values)


class Port:
    """The narrow port a :class:`~mcpfsm._drivers.tool_call.ToolCall` talks to (its ``CallPort``).

    Args:
        session: the client's session.
        catalog: its catalog.
        audit: its audit bus.
        validate: ``validate_output``.
        tasks: the client's tasks layer, made on first use (a call answered with a task needs it).
    """

    __slots__ = ("_catalog", "_output", "_session", "_tasks", "_validate", "audit")

    def __init__(
        self,
        session: Session,
        catalog: Catalog,
        audit: AuditBus,
        validate: ValidateOutput,
        tasks: Callable[[], TaskSupport],
    ) -> None:
        """Serve the calls of the client these parts belong to."""
        self._session = session
        self._catalog = catalog
        self._validate = validate
        self._output = OutputCheck()
        self._tasks = tasks
        self.audit = audit

    @property
    def inputs(self) -> InputHandlers:
        """The client's input handlers."""
        return self._session.inputs

    @property
    def protocol_version(self) -> str | None:
        """The negotiated version."""
        return self._session.version

    @property
    def relist_generation(self) -> int:
        """How many relists completed (a call reads it before it sends)."""
        return self._catalog.generation

    def known_definition(self, name: str) -> ToolDefinition | None:
        """The newest listed definition of ``name``."""
        return self._catalog.known(name)

    def call_once(self, params: dict[str, Any], plan: HeaderPlan) -> Coroutine[Any, Any, dict[str, Any]]:
        """One ``tools/call``: straight to the renewal layer (never cached: ``caching.CACHEABLE_METHODS``).

        The driver awaits the coroutine (no frame of its own here). A legacy server request on this call's own
        stream is read in this task: ``tool=`` has its events name the tool.
        """
        return self._session.renew_and_request("tools/call", params, plan, tool=params["name"])

    def check_output(self, name: str, result: ToolResult) -> None:
        """MCP 2026-07-28 "Output Schema": ``result`` against the newest listed definition of the tool."""
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
        """The shared relist after a -32020."""
        return await self._catalog.refresh(since)

    async def hand_over(self, call: ToolCall, result: dict[str, Any]) -> dict[str, Any] | None:
        """SEP-2663: the task machine (``mcpfsm._client.task``) takes over a call answered with a task."""
        return await self._tasks().hand_over(call, result)
