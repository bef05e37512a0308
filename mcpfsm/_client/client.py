"""The public client: its factories, its lifecycle and its public methods, over parts made in one place.

``Client`` adds no protocol logic of its own. Its options are one value
(:class:`~mcpfsm._client.options.ClientOptions`); its parts are made by :class:`~mcpfsm._client.assembly.Parts`,
each with what it needs:

- :class:`~mcpfsm._client.session.Session` — ids, ``_meta``, the legacy session, inbound messages, session renewal
  and the -32022 switch, with the response cache, the authorization layer and telemetry on its path;
- :mod:`~mcpfsm._client.negotiation` — which protocol era the connection speaks, and what the server says about
  itself;
- :class:`~mcpfsm._client.catalog.Catalog` — known tool definitions, paginated listings and the shared
  (single-flight) relist;
- :class:`~mcpfsm._drivers.tool_call.ToolCall` — one tool call as one run of the state machine, reaching the
  client through a narrow port (:class:`~mcpfsm._client.assembly.Port`);
- :mod:`~mcpfsm._client.task` — tasks (SEP-2663) and the timeouts of long calls;
- :class:`~mcpfsm._client.surface.Surface` and :class:`~mcpfsm._client.skills.Skills` — resources, prompts,
  completion and skills, a request each;
- :mod:`~mcpfsm._client.subscriptions` — ``listen()`` in both eras.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Unpack

import trio

from .._core.cache import ResponseCache
from .._core.constants import DEFAULT_MAX_RESPONSE_BYTES
from .._core.events import CallEvent
from .._core.input import MRTR_METHODS
from .._core.results import ServerInfo, ToolResult
from .._drivers.tool_call import ToolCall
from .._transports.base import Transport
from . import negotiation, subscriptions
from .assembly import HttpServer, Parts, StdioServer
from .lifecycle import Stage
from .options import Auth, ClientKeywords, ClientOptions
from .subscriptions import Subscription
from .tools import Tool, ToolList

if TYPE_CHECKING:
    import httpx

    from .._core.credentials import Store
    from .._core.surface import Completion, Prompt, PromptResult, Resource, ResourceResult, ResourceTemplate
    from .._transports.tls import CertTypes, VerifyTypes
    from .skills import Skill
    from .task import Task

__all__ = ["Client"]

class Client:
    """An MCP client whose tool calls are explicit, audited state machines.

    Use ``async with Client.http(url) as client`` or ``Client.stdio([...])``; any
    :class:`~mcpfsm.Transport` works with ``Client(transport)``. Every factory takes the options of
    :class:`~mcpfsm.ClientOptions` as keywords (``protocol=``, ``on_event=``, ``tasks=``, ...) or as one value
    (``options=``; keywords given beside it replace its fields).

    Args:
        transport: carries the messages (``Client.http`` and ``Client.stdio`` pass a description of the
            connection to make instead).
        options: the client's options as one value.
        **keywords: the client's options (:class:`~mcpfsm.ClientOptions` documents each).

    Raises:
        ValueError, TypeError: an option is not one mcpfsm accepts (:class:`~mcpfsm.ClientOptions` says which).
    """

    def __init__(
        self,
        transport: Transport | HttpServer | StdioServer,
        *,
        options: ClientOptions | None = None,
        **keywords: Unpack[ClientKeywords],
    ) -> None:
        """Wrap ``transport``; nothing is sent until the client is entered."""
        parts = Parts(transport, ClientOptions.of(options, keywords))
        self._parts = parts
        self._session = parts.session
        self._catalog = parts.catalog
        self._port = parts.port
        self._lifecycle = parts.lifecycle
        self._telemetry = parts.telemetry
        self._timed = parts.timed

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
        http_transport: httpx.AsyncBaseTransport | None = None,
        verify: VerifyTypes = True,
        cert: CertTypes | None = None,
        proxy: str | None = None,
        trust_env: bool = True,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        auth: Auth | None = None,
        options: ClientOptions | None = None,
        **keywords: Unpack[ClientKeywords],
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
        one event of a stream. ``auth`` authorizes the client (docs/authorization.md): :class:`~mcpfsm.OAuth`,
        :class:`~mcpfsm.ClientCredentials`, :class:`~mcpfsm.JwtBearer`, :class:`~mcpfsm.EnterpriseManaged`, or a
        static bearer token; the token goes on every request to ``url`` and nowhere else. ``options`` and
        ``**keywords`` are the client's options (:class:`~mcpfsm.ClientOptions`).

        Raises:
            TransportError: ``url`` or ``proxy`` is not an absolute http(s) URL, or a CA bundle or
                client certificate cannot be loaded.
            ImportError: ``verify="system"`` without the ``truststore`` package (the ``system-trust`` extra).
            ValueError: ``verify``, ``cert`` or ``proxy`` together with ``http_transport``; ``auth``
                together with an ``Authorization`` header or credentials in ``url``, or a malformed ``auth``; a
                header in ``headers`` that cannot be sent (named, its value never quoted), or that the
                connection sets itself (``Content-Length``, ``Transfer-Encoding``, ``TE``, ``Trailer``,
                ``Upgrade``; a ``Host`` or ``Connection`` of your own is sent as given).
            ValueError, TypeError: an option as :class:`~mcpfsm.ClientOptions` says; ``auth`` of none of the
                accepted kinds.
        """
        server = HttpServer(
            url=url,
            headers=headers,
            timeout=timeout,
            http_transport=http_transport,
            verify=verify,
            cert=cert,
            proxy=proxy,
            trust_env=trust_env,
            max_response_bytes=max_response_bytes,
            auth=auth,
        )
        return cls(server, options=options, **keywords)

    @classmethod
    def stdio(
        cls,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        options: ClientOptions | None = None,
        **keywords: Unpack[ClientKeywords],
    ) -> Client:
        """A client for a server run as a subprocess speaking newline-delimited JSON-RPC on stdio.

        ``env`` is merged over the parent's environment, ``cwd`` is the child's working directory, and
        ``max_response_bytes`` bounds one line from the server. ``options`` and ``**keywords`` are the client's
        options (:class:`~mcpfsm.ClientOptions`).

        Raises:
            TransportError: ``command`` is empty.
            ValueError, TypeError: an option as :class:`~mcpfsm.ClientOptions` says.
        """
        server = StdioServer(command=command, env=env, cwd=cwd, max_response_bytes=max_response_bytes)
        return cls(server, options=options, **keywords)

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
            await self._parts.aclose()

    @property
    def options(self) -> ClientOptions:
        """The options this client was made with."""
        return self._parts.options

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
        return negotiation.known_server(self._session)

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
        return await negotiation.discover(self._session, fresh=fresh)

    @property
    def transport(self) -> Transport:
        """The transport this client talks through."""
        return self._parts.transport

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

    # --- tools --------------------------------------------------------------------------------------

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
        if isinstance(tool, Tool):
            name, handle = tool.name, tool.definition
        elif isinstance(tool, str):
            name, handle = tool, None
        else:
            raise TypeError(f"tool must be a Tool or a tool name, got {type(tool).__name__}")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise TypeError(f"arguments must be a mapping, got {type(arguments).__name__}")
        tasks = self._parts.tasks()
        await self.connect()
        return await tasks.start(ToolCall(self._port, name, arguments or {}, handle))

    def task(self, task_id: str, tool: str | None = None) -> Task:
        """A handle for a task created earlier, by this process or another (docs/tasks.md); sends nothing.

        Its record in the client's store (the answered input keys, the tool) is read with its first request.

        Raises:
            TypeError: ``task_id`` is not a non-empty string, or ``tool`` is neither a name nor ``None``.
        """
        return self._parts.tasks().handle(task_id, tool)

    async def pending_tasks(self) -> list[Task]:
        """Handles for the unfinished tasks of this server recorded in the client's store, oldest first.

        A restarted process resumes polling where it stopped (``await task.wait()``).
        """
        return await self._parts.tasks().pending()

    # --- resources, prompts, completion, skills ----------------------------------------------------

    async def resources(self, *, fresh: bool = False) -> list[Resource]:
        """Every page of ``resources/list`` (MCP "Resources"); cached pages are reused unless ``fresh``.

        Raises:
            ProtocolError: an entry is malformed, a cursor repeats or the listing is too long.
            McpError: the request failed.
        """
        return await self._parts.surface().resources(fresh=fresh)

    async def resource_templates(self, *, fresh: bool = False) -> list[ResourceTemplate]:
        """Every page of ``resources/templates/list`` (MCP "Resources"); cached pages are reused unless ``fresh``.

        Raises:
            ProtocolError: an entry is malformed, a cursor repeats or the listing is too long.
            McpError: the request failed.
        """
        return await self._parts.surface().resource_templates(fresh=fresh)

    async def prompts(self, *, fresh: bool = False) -> list[Prompt]:
        """Every page of ``prompts/list`` (MCP "Prompts"); cached pages are reused unless ``fresh``.

        Raises:
            ProtocolError: an entry is malformed, a cursor repeats or the listing is too long.
            McpError: the request failed.
        """
        return await self._parts.surface().prompts(fresh=fresh)

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
        return await self._parts.surface().read_resource(uri, fresh=fresh)

    async def get_prompt(self, name: str | Prompt, arguments: Mapping[str, str] | None = None) -> PromptResult:
        """``prompts/get`` of prompt ``name`` with string ``arguments`` (MCP "Prompts"); ``Mcp-Name`` carries the name.

        Raises:
            TypeError: ``name`` is neither a string nor a :class:`Prompt`, or an argument is not a string.
            MirroringError: the name cannot go into ``Mcp-Name`` (nothing was sent).
            ProtocolError: the result is malformed.
            McpError: the request failed (a missing required argument is the server's error).
        """
        return await self._parts.surface().get_prompt(name, arguments)

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
        return await self._parts.surface().complete(ref, argument, context)

    async def skills(self, *, fresh: bool = False) -> list[Skill]:
        """Every page of ``skills/list`` (SEP-2640): the skills the server serves; no skill file is read.

        Only asked of a server that declares the ``io.modelcontextprotocol/skills`` extension. Pages still fresh
        in the response cache are reused unless ``fresh``. :meth:`Skill.load <mcpfsm.Skill.load>` reads and
        verifies one (docs/skills.md).

        Raises:
            McpError: the server does not declare the extension, or the request failed.
            ProtocolError: an entry is malformed, a cursor repeats or the listing is too long.
        """
        return await self._parts.skills().listed(fresh=fresh)

    async def skill(self, uri: str, *, fresh: bool = False) -> Skill:
        """``skills/get`` (SEP-2640): the entry of the skill whose ``SKILL.md`` is at ``uri``, listed or not.

        Only asked of a server that declares the extension; a fresh cached answer is reused unless ``fresh``. A
        server that serves no skill there answers an :class:`RpcError` (-32602).

        Raises:
            TypeError: ``uri`` is not a string.
            McpError: the server does not declare the extension, or the request failed.
            ProtocolError: the entry is malformed.
        """
        return await self._parts.skills().get(uri, fresh=fresh)

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
        wanted = subscriptions.requested(
            tools=tools, prompts=prompts, resources=resources, resource_uris=resource_uris, task_ids=tasks
        )
        await self.connect()
        async with subscriptions.listen(self._session, wanted, buffer=buffer) as subscription:
            yield subscription

    # --- stores, cache, events, any request --------------------------------------------------------

    @property
    def store(self) -> Store:
        """Where this client keeps what outlives a call (docs/stores.md).

        The ``store=`` it was given, else a :class:`~mcpfsm.MemoryStore` of its own, made on first use.
        """
        return self._parts.store()

    @property
    def shared_store(self) -> Store:
        """:attr:`store` as this client uses it: every operation bounded, memory while it is down (docs/stores.md).

        A ``MemoryStore`` as it is; any other store in a guard of this client's own (2 s per operation, then
        5 s on the client's memory after a failure, one WARNING per outage).
        """
        return self._parts.shared_store()

    @property
    def store_fallbacks(self) -> int:
        """How many times a store of this client failed and the client went on with its memory (docs/stores.md).

        Counts the client's ``store=`` and the ``store=`` of its ``auth=`` credential, one per outage.
        """
        return self._parts.store_fallbacks()

    @property
    def cache(self) -> ResponseCache | None:
        """The response cache (SEP-2549), or ``None`` with ``cache=False``; ``cache.stats`` counts hits and misses."""
        return self._session.cache

    def events(self, buffer: int = 1024) -> AbstractAsyncContextManager[trio.MemoryReceiveChannel[CallEvent]]:
        """Subscribe to every :class:`CallEvent` of this client.

        ``async with client.events() as events: async for event in events: ...``. A subscriber
        that falls ``buffer`` events behind loses events (with one WARNING) instead of slowing
        calls down.
        """
        return self._parts.audit.subscribe(buffer)

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
            return await self._parts.surface().input_request(method, params or {})
        return await self._session.request(method, params)
