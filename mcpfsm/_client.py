"""The public client: connection, era negotiation, listings and tool calls (SPEC §1, §6, §8).

``Client`` owns one :class:`~mcpfsm._transport.Transport`, negotiates the protocol era, keeps
the newest definition of every listed tool, and runs each tool call as a
:class:`~mcpfsm._call.ToolCall` state machine.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final, Literal, overload

import httpx
import trio
from loguru import logger

from ._audit import AuditBus
from ._call import ToolCall
from ._catalog import Exclusion, PageCursor, ToolCatalog, ToolDefinition, build_catalog
from ._errors import McpError, ProtocolError, RpcError, TransportError
from ._events import CallEvent
from ._http import HttpTransport, SessionExpired
from ._jsonrpc import (
    METHOD_NOT_FOUND,
    Notification,
    Request,
    Response,
    decode_message,
    encode_error,
    encode_notification,
    encode_request,
    encode_result,
    modern_meta,
    parse_message,
)
from ._plan import LEGACY_VERSIONS, MODERN_VERSION, HeaderPlan, is_modern, plan_request
from ._stdio import StdioTransport
from ._transport import Transport

__all__ = ["Client", "Protocol", "Tool", "ToolList", "ToolResult"]

Protocol = Literal["auto", "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
"""What ``protocol=`` accepts: ``"auto"`` probes (SPEC §1); a version pins it."""

_VERSION: Final = "0.1.0"
_SPOKEN: Final = (MODERN_VERSION, *LEGACY_VERSIONS)
_UNSUPPORTED_VERSION: Final = -32022
# SPEC §1: codes that mean "a modern server answered"; anything else on the probe means legacy.
_MODERN_CODES: Final = frozenset({-32020, -32021, -32022})
_LEGACY_CODES: Final = frozenset({-32600, -32601, -32700})
_CANCEL_NOTICE_TIMEOUT: Final = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The result of a tools/call (SPEC §8).

    Attributes:
        content: the content blocks, as dicts.
        structured_content: ``structuredContent`` when the tool returned one.
        is_error: the tool's own error flag (not raised: the call itself succeeded).
        raw: the whole JSON-RPC result object.
    """

    content: list[dict[str, Any]]
    structured_content: dict[str, Any] | None
    is_error: bool
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> ToolResult:
        """Validate a tools/call result object.

        Raises:
            ProtocolError: ``content`` is not a list of objects, ``structuredContent`` is not an
                object, ``isError`` is not a boolean, or ``resultType`` is not ``"complete"``.
        """
        result_type = result.get("resultType", "complete")
        if result_type != "complete":
            raise ProtocolError(f"tools/call result type {result_type!r} is not supported (only 'complete')")
        content = result.get("content", [])
        if not isinstance(content, list) or not all(isinstance(block, dict) for block in content):
            raise ProtocolError("tools/call result \"content\" is not a list of objects")
        structured = result.get("structuredContent")
        if structured is not None and not isinstance(structured, dict):
            raise ProtocolError("tools/call result \"structuredContent\" is not an object")
        is_error = result.get("isError", False)
        if not isinstance(is_error, bool):
            raise ProtocolError("tools/call result \"isError\" is not a boolean")
        return cls(content=content, structured_content=structured, is_error=is_error, raw=result)

    @property
    def text(self) -> str:
        """The text of every ``text`` content block, joined with newlines."""
        return "\n".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")


class Tool:
    """A listed tool, bound to the client that listed it (SPEC §8).

    ``tool.call(args)`` mirrors the annotated arguments of the newest definition of this tool
    the client has seen, so a handle kept across a -32020 recovery uses the fresh schema.
    """

    __slots__ = ("_client", "_definition")

    def __init__(self, client: Client, definition: ToolDefinition) -> None:
        """Bind ``definition`` to ``client``; users get tools from :meth:`Client.tools`."""
        self._client = client
        self._definition = definition

    @property
    def name(self) -> str:
        """The tool's name."""
        return self._definition.name

    @property
    def description(self) -> str:
        """The tool's description (``""`` when the server gave none)."""
        return self._definition.description

    @property
    def input_schema(self) -> Mapping[str, Any]:
        """The ``inputSchema`` as listed."""
        return self._definition.input_schema

    @property
    def mirrored(self) -> dict[tuple[str, ...], str]:
        """Argument path -> ``Mcp-Param-*`` header name, for the annotations in effect (SPEC §3)."""
        definition = self._client._known_definition(self.name) or self._definition
        return {param.path: param.header for param in definition.mirrored}

    @property
    def definition(self) -> ToolDefinition:
        """The definition this handle was listed with."""
        return self._definition

    @property
    def raw(self) -> Mapping[str, Any]:
        """The tool entry exactly as listed."""
        return self._definition.raw

    async def call(self, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Call this tool; same as ``client.call_tool(tool, arguments)``."""
        return await self._client.call_tool(self, arguments)

    def __repr__(self) -> str:
        """Show the name and mirrored headers."""
        return f"Tool({self.name!r}, mirrored={self.mirrored!r})"


class ToolList:
    """The tools of one complete listing, in server order (SPEC §8).

    Supports ``len()``, iteration, indexing, ``name in tools`` and :meth:`get`. Tools excluded
    because of invalid ``x-mcp-header`` annotations are in :attr:`excluded`. It is deliberately
    not a ``Sequence[Tool]``: ``"name" in tools`` must type-check under ``mypy --strict``.
    """

    __slots__ = ("_by_name", "_tools", "excluded")

    def __init__(self, tools: Sequence[Tool], excluded: Sequence[Exclusion] = ()) -> None:
        """Wrap listed tools; users get lists from :meth:`Client.tools`."""
        self._tools = tuple(tools)
        self._by_name = {tool.name: tool for tool in self._tools}
        self.excluded: tuple[Exclusion, ...] = tuple(excluded)
        """Tools left out of this listing and why (SPEC §3)."""

    def get(self, name: str) -> Tool | None:
        """The tool named exactly ``name``, or ``None``."""
        return self._by_name.get(name)

    @property
    def names(self) -> list[str]:
        """The tool names, in order."""
        return [tool.name for tool in self._tools]

    def __len__(self) -> int:
        """Number of usable tools."""
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        """Iterate the tools in server order."""
        return iter(self._tools)

    @overload
    def __getitem__(self, index: int) -> Tool: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Tool, ...]: ...

    def __getitem__(self, index: int | slice) -> Tool | tuple[Tool, ...]:
        """Index or slice like a list (a slice gives a tuple)."""
        return self._tools[index]

    def __contains__(self, item: object) -> bool:
        """``name in tools`` or ``tool in tools``."""
        if isinstance(item, str):
            return item in self._by_name
        return item in self._tools

    def __repr__(self) -> str:
        """Show the names."""
        return f"ToolList({self.names!r})"


class Client:
    """An MCP client whose tool calls are explicit, audited state machines (SPEC §8).

    Use ``async with Client.http(url) as client`` or ``Client.stdio([...])``; any
    :class:`Transport` works with ``Client(transport)``.

    Args:
        transport: carries the messages.
        protocol: ``"auto"`` (probe ``server/discover``, fall back to ``initialize``), or a
            version to pin: ``"2026-07-28"`` or ``"2025-11-25"`` (SPEC §1).
        on_event: called with each :class:`CallEvent` (SPEC §9).
        on_notification: called as ``on_notification(method, params)`` for each notification
            the server sends while a request is open (progress, log messages); may be async.
            With it, each tools/call carries ``_meta.progressToken`` (its request id) so that
            servers send progress. Without it, notifications are logged at DEBUG.
        client_name: the ``clientInfo.name`` sent to the server.

    Raises:
        ValueError: ``protocol`` is not one mcpfsm speaks.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        protocol: str = "auto",
        on_event: Callable[[CallEvent], object] | None = None,
        on_notification: Callable[[str, dict[str, Any]], object] | None = None,
        client_name: str = "mcpfsm",
    ) -> None:
        """Wrap ``transport``; nothing is sent until the client is entered."""
        if protocol != "auto" and protocol not in _SPOKEN:
            raise ValueError(f"protocol must be 'auto' or one of {list(_SPOKEN)}, got {protocol!r}")
        self._transport = transport
        self._requested = protocol
        self._version: str | None = None
        self._client_info = {"name": client_name, "version": _VERSION}
        self._on_notification = on_notification
        self._audit = AuditBus(on_event)
        self._definitions: dict[str, ToolDefinition] = {}
        self._next_id = 0
        self._connected = False
        self._closed = False
        self._entered: AbstractAsyncContextManager[Any] | None = None
        self._meta: dict[str, Any] | None = None
        self._handshake = trio.Lock()
        self._lost_session: str | None = None
        if hasattr(transport, "on_inbound"):
            transport.on_inbound = self._inbound

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        protocol: str = "auto",
        on_event: Callable[[CallEvent], object] | None = None,
        on_notification: Callable[[str, dict[str, Any]], object] | None = None,
        timeout: httpx.Timeout | float | None = None,
        http_transport: httpx.AsyncBaseTransport | None = None,
    ) -> Client:
        """A client for a Streamable HTTP server at ``url`` (SPEC §7).

        ``headers`` are sent on every request, except names starting with ``mcp-``.
        ``http_transport`` replaces the keep-alive connection pool (e.g. ``httpx.MockTransport``).

        Raises:
            TransportError: ``url`` is not an absolute http(s) URL.
        """
        transport = HttpTransport(url, headers=headers, timeout=timeout, transport=http_transport)
        return cls(transport, protocol=protocol, on_event=on_event, on_notification=on_notification)

    @classmethod
    def stdio(
        cls,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        protocol: str = "auto",
        on_event: Callable[[CallEvent], object] | None = None,
        on_notification: Callable[[str, dict[str, Any]], object] | None = None,
    ) -> Client:
        """A client for a server run as a subprocess speaking stdio (SPEC §7)."""
        transport = StdioTransport(command, env=env, cwd=cwd)
        return cls(transport, protocol=protocol, on_event=on_event, on_notification=on_notification)

    async def __aenter__(self) -> Client:
        """Start the transport and negotiate the protocol era (SPEC §1)."""
        if isinstance(self._transport, AbstractAsyncContextManager) or hasattr(self._transport, "__aenter__"):
            entered: Any = self._transport
            await entered.__aenter__()
            self._entered = entered
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
        """End the session and release the transport. Idempotent."""
        if self._closed:
            return
        self._closed = True
        with trio.CancelScope(shield=True):
            if self._entered is not None:
                entered, self._entered = self._entered, None
                await entered.__aexit__(None, None, None)
            else:
                await self._transport.aclose()

    # --- public API -----------------------------------------------------------------------------

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol version, ``None`` before connecting."""
        return self._version

    @property
    def mirrors(self) -> bool:
        """True when this connection mirrors ``x-mcp-header`` arguments into ``Mcp-Param-*`` headers.

        That is HTTP (any transport carrying headers) in the modern era; on stdio and legacy
        connections annotations are inert and tools with invalid ones are kept (SPEC §3).
        """
        return is_modern(self._version) and getattr(self._transport, "carries_headers", True)

    @property
    def transport(self) -> Transport:
        """The transport this client talks through."""
        return self._transport

    async def connect(self) -> None:
        """Negotiate the protocol era (SPEC §1); ``async with`` calls this for you.

        Raises:
            McpError: the server could not be reached or speaks no version mcpfsm speaks.
        """
        if self._connected:
            return
        if self._requested == MODERN_VERSION:
            self._set_version(MODERN_VERSION)
        elif self._requested != "auto":
            try:
                await self._initialize(self._requested)
            except RpcError as exc:
                # SPEC §1: -32022 on any request, the pinned handshake included, names what the server speaks.
                if exc.code != _UNSUPPORTED_VERSION:
                    raise
                await self._switch_version(exc, rejected=self._requested)
        else:
            await self._probe()
        self._connected = True

    async def tools(self) -> ToolList:
        """Fetch every page of ``tools/list`` (SPEC §3, §6).

        Tools with invalid ``x-mcp-header`` annotations are left out with one WARNING each on
        connections that mirror (HTTP, modern era); elsewhere they are kept.

        Raises:
            ProtocolError: a cursor repeats, the listing has more than 1000 pages, or a page is
                malformed.
            McpError: the request failed.
        """
        catalog = await self._relist()
        return ToolList([Tool(self, definition) for definition in catalog.tools], catalog.excluded)

    async def call_tool(self, tool: Tool | str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Call a tool as one state machine run (SPEC §5, §6).

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
        elif not isinstance(arguments, Mapping):
            raise TypeError(f"arguments must be a mapping, got {type(arguments).__name__}")
        await self.connect()
        return await ToolCall(self, name, arguments, handle).run()

    def events(self, buffer: int = 1024) -> AbstractAsyncContextManager[trio.MemoryReceiveChannel[CallEvent]]:
        """Subscribe to every :class:`CallEvent` of this client (SPEC §9).

        ``async with client.events() as events: async for event in events: ...``. A subscriber
        that falls ``buffer`` events behind loses events (with one WARNING) instead of slowing
        calls down.
        """
        return self._audit.subscribe(buffer)

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send any MCP request and return its result object (modern ``_meta`` added for you).

        Raises:
            RpcError, TransportError, ProtocolError: as for tool calls.
        """
        await self.connect()
        return await self._request(method, params)

    # --- internals used by ToolCall -------------------------------------------------------------

    def _known_definition(self, name: str) -> ToolDefinition | None:
        return self._definitions.get(name)


    async def _relist(self) -> ToolCatalog:
        await self.connect()
        cursor: str | None = None
        pages = PageCursor()
        entries: list[object] = []
        while True:
            params = None if cursor is None else {"cursor": cursor}
            result = await self._request("tools/list", params)
            tools = result.get("tools")
            if not isinstance(tools, list):
                raise ProtocolError("tools/list result has no \"tools\" list")
            entries.extend(tools)
            cursor = pages.advance(result)
            if cursor is None:
                break
        catalog = build_catalog(entries, mirroring=self.mirrors)
        for exclusion in catalog.excluded:
            logger.warning("excluded MCP tool {!r}: {}", exclusion.name, exclusion.reason)
        for inert in catalog.inert:
            logger.debug("x-mcp-header annotations of MCP tool {!r} are inert here: {}", inert.name, inert.reason)
        # SPEC §6: later calls through old Tool handles mirror the fresh definitions.
        self._definitions = {definition.name: definition for definition in catalog.tools}
        return catalog

    async def _call_once(self, params: dict[str, Any], plan: HeaderPlan) -> ToolResult:
        return ToolResult.from_result(await self._request("tools/call", params, plan))

    # --- the request path -------------------------------------------------------------------------

    async def _request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        plan: HeaderPlan | None = None,
        *,
        retried: bool = False,
    ) -> dict[str, Any]:
        # `plan=None`: the protocol headers of the version in effect. A resend always re-plans so:
        # a renewed session or a version switch leaves either the legacy era (no mirrored headers)
        # or enters the modern era from it (where the legacy catalog mirrored nothing either).
        if self._lost_session is not None and not retried:
            await self._renew_session(self._lost_session)
            plan = None
        if method == "tools/call" and self._on_notification is not None:
            params = self._with_progress_token(params)
        try:
            return await self._exchange(method, params, plan)
        except SessionExpired as exc:
            if retried:
                # Without a session every later request would fail: the next one opens a new session.
                self._lost_session = exc.session_id
                raise
            # SPEC §7: a 404 on a request with a session id ends the session: initialize once more
            # and resend (with a new request id).
            await self._renew_session(exc.session_id)
            return await self._request(method, params, retried=True)
        except RpcError as exc:
            if exc.code != _UNSUPPORTED_VERSION or retried:
                raise
            await self._switch_version(exc, rejected=self._version)
            return await self._request(method, params, retried=True)

    async def _renew_session(self, expired: str) -> None:
        async with self._handshake:
            # Concurrent requests share one expiry: only the first of them re-initializes.
            if getattr(self._transport, "session_id", None) in (None, expired):
                await self._initialize(self._version or LEGACY_VERSIONS[0])
            self._lost_session = None

    def _with_progress_token(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        # Servers send progress only for requests that carry a token; a caller who asked for
        # notifications wants them. The token is the request id _exchange is about to assign; a
        # resend (session expiry, -32022) keeps it, since the first attempt is over by then.
        params = dict(params or {})
        meta = params.get("_meta")
        meta = dict(meta) if isinstance(meta, Mapping) else {}
        meta.setdefault("progressToken", self._next_id + 1)
        params["_meta"] = meta
        return params

    async def _exchange(
        self, method: str, params: Mapping[str, Any] | None, plan: HeaderPlan | None = None
    ) -> dict[str, Any]:
        if plan is None:
            plan = plan_request(method, params, protocol_version=self._version)
        self._next_id += 1
        request_id = self._next_id
        if is_modern(self._version):
            params = dict(params or {})
            meta = params.get("_meta")
            params["_meta"] = {**meta, **self._modern_meta()} if isinstance(meta, dict) else self._modern_meta()
        message = encode_request(request_id, method, params)
        try:
            reply = await self._transport.send(message, plan.as_dict())
        except trio.Cancelled:
            if method != "initialize" and self._cancel_by_notification:
                await self._notify_cancelled(request_id)
            raise
        if reply is None:
            raise ProtocolError(f"the server accepted {method} without answering it")
        response = parse_message(decode_message(reply))
        if not isinstance(response, Response):
            raise ProtocolError(f"expected the response to {method}, got a {type(response).__name__.lower()}")
        if response.error is not None:
            if response.id not in (request_id, None):
                raise ProtocolError(f"error response id {response.id!r} does not match request id {request_id}")
            raise response.error
        if response.id != request_id:
            raise ProtocolError(f"response id {response.id!r} does not match request id {request_id}")
        assert response.result is not None
        return response.result

    @property
    def _cancel_by_notification(self) -> bool:
        # MCP cancellation: on modern Streamable HTTP closing the response stream is the signal; on
        # stdio (no stream to close) and on legacy HTTP (a disconnect is not a cancellation) the
        # client sends notifications/cancelled.
        return not is_modern(self._version) or not getattr(self._transport, "carries_headers", True)

    async def _notify_cancelled(self, request_id: int) -> None:
        # Best effort, shielded and bounded: the caller's cancellation must not wait on the server.
        with trio.CancelScope(shield=True), trio.move_on_after(_CANCEL_NOTICE_TIMEOUT):
            try:
                params = {"requestId": request_id, "reason": "cancelled by the caller"}
                await self._notify("notifications/cancelled", params)
            except McpError as exc:
                logger.debug("could not tell the server that request {} was cancelled: {}", request_id, exc)

    def _modern_meta(self) -> dict[str, Any]:
        if self._meta is None:
            self._meta = modern_meta(MODERN_VERSION, self._client_info)
        return self._meta

    async def _notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        plan = plan_request(method, params, protocol_version=self._version)
        await self._transport.send(encode_notification(method, params), plan.as_dict())

    # --- era negotiation (SPEC §1) ------------------------------------------------------------------

    def _set_version(self, version: str) -> None:
        self._version = version
        if hasattr(self._transport, "resumable"):
            # SPEC §7: only legacy streams are resumable.
            self._transport.resumable = not is_modern(version)
        if is_modern(version) and getattr(self._transport, "session_id", None) is not None:
            # Modern requests carry no session: a legacy session left behind by a -32022 switch ends here.
            transport: Any = self._transport
            transport.session_id = None

    async def _probe(self) -> None:
        self._set_version(MODERN_VERSION)
        try:
            result = await self._exchange("server/discover", {})
        except RpcError as exc:
            if exc.code == _UNSUPPORTED_VERSION:
                await self._switch_version(exc, rejected=MODERN_VERSION)
                return
            status = getattr(self._transport, "last_status", None)
            if exc.code in _MODERN_CODES or (exc.code not in _LEGACY_CODES and status not in (400, 404, 405)):
                self._version = None
                raise
        except TransportError as exc:
            if exc.status not in (400, 404, 405):
                self._version = None
                raise
        except ProtocolError:
            pass  # A non-JSON answer: a server that predates server/discover.
        else:
            versions = result.get("supportedVersions")
            if isinstance(versions, list) and MODERN_VERSION in versions:
                return
            spoken = [v for v in LEGACY_VERSIONS if isinstance(versions, list) and v in versions]
            await self._initialize(spoken[0] if spoken else LEGACY_VERSIONS[0])
            return
        await self._initialize(LEGACY_VERSIONS[0])

    async def _switch_version(self, error: RpcError, *, rejected: str | None) -> None:
        # SPEC §1: the newest version in data.supported that mcpfsm speaks, other than the one refused.
        data = error.data if isinstance(error.data, dict) else {}
        supported = data.get("supported")
        choices = [v for v in _SPOKEN if isinstance(supported, list) and v in supported and v != rejected]
        if not choices:
            raise error
        if is_modern(choices[0]):
            self._set_version(MODERN_VERSION)
        else:
            await self._initialize(choices[0])

    async def _initialize(self, offer: str) -> None:
        self._version = None
        if hasattr(self._transport, "session_id"):
            self._transport.session_id = None
        params = {"protocolVersion": offer, "capabilities": {}, "clientInfo": self._client_info}
        result = await self._exchange("initialize", params)  # no version yet: no protocol headers
        version = result.get("protocolVersion")
        if version not in LEGACY_VERSIONS:
            raise ProtocolError(f"server chose protocol version {version!r}, which mcpfsm does not speak")
        self._set_version(version)
        await self._notify("notifications/initialized")

    # --- messages the server sends us ---------------------------------------------------------------

    async def _inbound(self, message: Notification | Request) -> str | None:
        if isinstance(message, Notification):
            if self._on_notification is None:
                logger.debug("notification {} from the server: {}", message.method, message.params)
                return None
            try:
                outcome = self._on_notification(message.method, message.params)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception as exc:
                logger.warning("on_notification callback raised {!r}; the request goes on", exc)
            return None
        if message.method == "ping":
            return encode_result(message.id, {})
        # Sampling, elicitation and roots are not offered: answer instead of hanging the call.
        return encode_error(message.id, METHOD_NOT_FOUND, f"mcpfsm does not support {message.method!r}")
