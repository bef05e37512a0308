"""The demo's MCP server: `mcpfsm demo`'s, the manual's try-outs' and the tests' peer, on the official SDK.

Built on `mcp==2.3.0`; imported only by the demo and the tests: `mcp` is an optional extra
(`pip install mcpfsm[demo]`), never a runtime dependency of the client. Shipped, because `mcpfsm demo` runs it
(and the manual's examples talk to it); the tests call it "the peer" (`tests/support/peer/README.md`)::

    python -m mcpfsm._tooling.demo_server [--mode dual|modern|legacy] [--port 0] [--json-response]
                                          [--page-size N] [--event-store] [--retry-ms MS] [--ttl-ms MS]
                                          [--bad-header-tool] [--public-listings MS]
    python -m mcpfsm._tooling.demo_server --stdio [--page-size N] [--ttl-ms MS]

`--ttl-ms MS` makes its 2026-07-28 `tools/list` results say `ttlMs: MS` (SEP-2549; the SDK says 0 by itself), as
the control surface's `cache_hints` does: a client group may then answer from its known listing that long.

Over HTTP it serves the MCP endpoint at `/mcp` on 127.0.0.1, prints exactly one line
`READY http://127.0.0.1:PORT/mcp` to stdout once listening, and exits with status 0 on SIGTERM or
SIGINT. Next to `/mcp` it serves a control surface for tests (`POST /control`, `GET /control/log`,
`POST /control/log/clear`); it is plain HTTP, not MCP. `tests/support/peer/README.md` documents the wire.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import warnings
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from types import FrameType
from typing import Annotated, Any, Final, Literal, TypeVar, cast

import anyio
import uvicorn
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import CallToolResult, JSONRPCMessage, TextContent
from mcp_types.jsonrpc import HEADER_MISMATCH, INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import demo_input, demo_surface

__all__ = [
    "MCP_PATH",
    "MODES",
    "PEER_INSTRUCTIONS",
    "PEER_NAME",
    "PEER_TITLE",
    "PEER_VERSION",
    "TOOL_NAMES",
    "Mode",
    "PeerGate",
    "PeerState",
    "build_http_app",
    "build_server",
    "main",
]

PEER_NAME: Final = "mcpfsm-test-peer"
"""`serverInfo.name` the peer reports."""

PEER_VERSION: Final = "1.0.0"
"""`serverInfo.version` the peer reports."""

PEER_TITLE: Final = "mcpfsm test peer"
"""`serverInfo.title` the peer reports."""

PEER_INSTRUCTIONS: Final = "Use execute-sql for queries; echo repeats text."
"""The `instructions` of the peer's `server/discover` and `initialize` results."""

MCP_PATH: Final = "/mcp"
"""Path of the MCP endpoint."""

Mode = Literal["dual", "modern", "legacy"]
"""Which protocol eras the HTTP endpoint serves (see the README)."""

MODES: Final[tuple[Mode, ...]] = ("dual", "modern", "legacy")
"""Every `Mode`, default first."""

TOOL_NAMES: Final[tuple[str, ...]] = ("execute-sql", "echo", "slow", "fail")
BAD_HEADER_TOOL: Final = "bad-header"
"""The tool `--bad-header-tool` lists last (`x-mcp-header: "Bad Header"` on `region`)."""
"""The tools of the initial state, in listing order."""

_LOGGED_HEADERS: Final = frozenset({"accept", "content-type", "last-event-id"})
_SLOW_STEPS: Final = 4


class Options(BaseModel):
    """The `options` argument of `execute-sql`."""

    model_config = ConfigDict(extra="forbid")

    readOnly: bool | None = None


# Written by hand so the annotated property sits on a pure `properties` chain: pydantic would put a
# nested model under `$defs` behind a `$ref`, where an `x-mcp-header` annotation is invalid.
_OPTIONS_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"readOnly": {"type": "boolean", "x-mcp-header": "Read-Only"}},
    "additionalProperties": False,
}

DatabaseArg = Annotated[str, Field(json_schema_extra={"x-mcp-header": "Database"})]
OptionsArg = Annotated[Options | None, WithJsonSchema(_OPTIONS_SCHEMA)]
# After `evolve`: `type` must be the plain string "string" for the annotation to be valid, so the
# `anyOf [string, null]` pydantic would derive from `str | None` is replaced.
RegionArg = Annotated[str | None, WithJsonSchema({"type": "string", "x-mcp-header": "Region"})]
BAD_HEADER: Final = "Bad Header"
"""The annotation of `--bad-header-tool`: a space is not allowed in an RFC 9110 token, so a client that mirrors
excludes the tool (the SDK refuses to register it, so the listed schema is changed after registration)."""


def _sql_result(query: str, database: str, region: str | None, options: Options | None) -> CallToolResult:
    received: dict[str, Any] = {"query": query, "database": database}
    if region is not None:
        received["region"] = region
    if options is not None:
        received["options"] = options.model_dump(exclude_none=True)
    return CallToolResult(
        content=[TextContent(type="text", text=f"executed {query!r} on {database!r}")],
        structured_content=received,
    )


def execute_sql(
    query: str, database: DatabaseArg, region: str | None = None, options: OptionsArg = None
) -> CallToolResult:
    """Pretend to run a SQL query; echoes the arguments it received as structured content."""
    return _sql_result(query, database, region, options)


def execute_sql_evolved(
    query: str, database: DatabaseArg, region: RegionArg = None, options: OptionsArg = None
) -> CallToolResult:
    """Pretend to run a SQL query; echoes the arguments it received as structured content."""
    return _sql_result(query, database, region, options)


def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def bad_header(region: RegionArg = None) -> str:
    """A tool whose only annotation is invalid (`--bad-header-tool`): clients that mirror leave it out."""
    return f"region {region!r}"


def fail() -> str:
    """Always fail as a tool (a result with isError true, not a JSON-RPC error)."""
    raise ToolError("deliberate failure")


# --- state shared by the tools, the gate and the control surface -------------------------------


@dataclass(slots=True, kw_only=True)
class _Mismatch:
    count: int
    delivery: str


@dataclass(slots=True, kw_only=True)
class _InjectedError:
    count: int
    code: int
    message: str


@dataclass(slots=True, kw_only=True)
class PeerState:
    """Everything the control surface can change; one instance per peer process."""

    mode: Mode
    json_response: bool
    initial_page_size: int | None
    bad_header_tool: bool = False
    page_size: int | None = None
    evolved: bool = False
    removed: set[str] = field(default_factory=set)
    mismatches: dict[str, _Mismatch] = field(default_factory=dict)
    errors: dict[str, _InjectedError] = field(default_factory=dict)
    drop_streams: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)
    surface: demo_surface.Surface | None = None

    def __post_init__(self) -> None:
        self.page_size = self.initial_page_size

    def reset(self) -> None:
        """Return to the state the process started in (tools, mismatches, errors, paging, dropped streams, log)."""
        self.page_size = self.initial_page_size
        self.evolved = False
        self.removed.clear()
        self.mismatches.clear()
        self.errors.clear()
        self.drop_streams = 0
        self.log.clear()
        if self.surface is not None:
            self.surface.reset()


_Armed = TypeVar("_Armed", _Mismatch, _InjectedError)


def _take(armed: dict[str, _Armed], tool: str) -> _Armed | None:
    """Consume one use of what is armed for `tool` (an injected -32020 or JSON-RPC error), if any is left."""
    entry = armed.get(tool)
    if entry is None or entry.count <= 0:
        return None
    entry.count -= 1
    return entry


def _sync_tools(server: MCPServer[Any], state: PeerState) -> None:
    """Re-register every tool in canonical order so the listing reflects `state`."""
    for name in TOOL_NAMES:
        with contextlib.suppress(ToolError):
            server.remove_tool(name)
    for name in TOOL_NAMES:
        if name not in state.removed:
            _add_tool(server, state, name)
    demo_input.add_tools(server)
    if state.bad_header_tool:
        with contextlib.suppress(ToolError):
            server.remove_tool(BAD_HEADER_TOOL)
        description = "Its x-mcp-header is invalid."
        server.add_tool(bad_header, name=BAD_HEADER_TOOL, description=description, structured_output=False)
        registered = server._tool_manager.get_tool(BAD_HEADER_TOOL)  # the SDK has no public way to list a bad schema
        assert registered is not None
        registered.parameters["properties"]["region"]["x-mcp-header"] = BAD_HEADER


def _add_tool(server: MCPServer[Any], state: PeerState, name: str) -> None:
    if name == "execute-sql":
        server.add_tool(
            execute_sql_evolved if state.evolved else execute_sql,
            name=name,
            description="Pretend to run a SQL query; echoes the arguments it received.",
        )
    elif name == "echo":
        server.add_tool(echo, name=name, description="Return the text unchanged.", structured_output=False)
    elif name == "slow":

        async def slow(seconds: float, ctx: Context) -> str:
            """Sleep, reporting progress and one log message; return "done"."""
            await ctx.info(f"slow: sleeping {seconds:g} s")
            for step in range(1, _SLOW_STEPS + 1):
                await anyio.sleep(seconds / _SLOW_STEPS)
                await ctx.report_progress(step, _SLOW_STEPS, f"step {step} of {_SLOW_STEPS}")
                if step == 1 and state.drop_streams > 0:
                    state.drop_streams -= 1
                    await ctx.close_sse_stream()
            return "done"

        server.add_tool(
            slow,
            name=name,
            description="Sleep for `seconds`, reporting progress and logging; returns 'done'.",
            structured_output=False,
        )
    else:
        server.add_tool(fail, name=name, description="Always fails with isError true.", structured_output=False)


def _pagination(state: PeerState) -> ServerMiddleware[Any]:
    """Middleware paginating `tools/list` (MCPServer's own handler returns every tool on one page)."""

    async def paginate(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        size = state.page_size
        if ctx.method != "tools/list" or size is None or not isinstance(result, dict):
            return result
        cursor = (ctx.params or {}).get("cursor")
        start = 0
        if cursor is not None:
            if not isinstance(cursor, str) or not cursor.startswith("page:") or not cursor[5:].isdigit():
                raise MCPError(code=INVALID_PARAMS, message=f"Invalid cursor: {cursor!r}")
            start = int(cursor[5:])
        tools = cast(list[Any], result.get("tools", []))
        page = {**result, "tools": tools[start : start + size]}
        if start + size < len(tools):
            page["nextCursor"] = f"page:{start + size}"
        return page

    return paginate


def build_server(state: PeerState) -> MCPServer[Any]:
    """The MCPServer with the peer's tools (as `state` says), `tools/list` paging and `demo_surface`."""
    server: MCPServer[Any] = MCPServer(
        PEER_NAME, title=PEER_TITLE, instructions=PEER_INSTRUCTIONS, version=PEER_VERSION, log_level="WARNING"
    )
    server.middleware.append(_pagination(state))
    demo_input.install(server)
    state.surface = demo_surface.install(server)
    _sync_tools(server, state)
    return server


# --- event store (legacy SSE resumability) --------------------------------------------------------


class _MemoryEventStore(EventStore):
    """Keeps every SSE event in memory so a legacy client can resume with `Last-Event-ID`."""

    def __init__(self) -> None:
        self._events: list[tuple[EventId, StreamId, JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = str(len(self._events) + 1)
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        index = next((i for i, (eid, _, _) in enumerate(self._events) if eid == last_event_id), None)
        if index is None:
            return None
        stream_id = self._events[index][1]
        for event_id, sid, message in self._events[index + 1 :]:
            if sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


# --- the gate in front of the SDK app: request log, era emulation, injected mismatches ------------


def _json_body(status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> Response:
    return Response(
        json.dumps(body, separators=(",", ":")),
        status_code=status,
        media_type="application/json",
        headers=headers,
    )


def _rpc_error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


class PeerGate:
    """ASGI middleware in front of the SDK app: logs `/mcp` traffic and answers what the SDK must not.

    - every request to `/mcp` is appended to `state.log`;
    - `modern` mode refuses handshake-era requests with -32022 (the SDK alone serves both eras);
    - `legacy` mode answers 2026-07-28 requests as a 2025 server does;
    - an armed `mismatch` answers a `tools/call` with -32020 before the SDK sees it;
    - an armed `error` answers a `tools/call` with that JSON-RPC error (HTTP 200) before the SDK sees it.
    """

    def __init__(self, app: ASGIApp, state: PeerState) -> None:
        self._app = app
        self._state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != MCP_PATH:
            await self._app(scope, receive, send)
            return
        body = await _read_body(receive)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        try:
            decoded: Any = json.loads(body) if body else None
        except ValueError:
            decoded = None
        message = cast(dict[str, Any], decoded) if isinstance(decoded, dict) else {}
        params = message.get("params")
        params = cast(dict[str, Any], params) if isinstance(params, dict) else {}
        raw_headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]
        entry = _log_entry(scope["method"], message, params, raw_headers)
        self._state.log.append(entry)

        async def record_status(event: Message) -> None:
            if event["type"] == "http.response.start":
                entry["status"] = event["status"]
            await send(event)

        answer = self._answer_without_sdk(scope["method"], message, params, dict(raw_headers))
        if answer is not None:
            entry["answered_by"], response = answer
            await response(scope, replay, record_status)
            return
        if self._state.mode == "legacy":
            scope = _strip_modern_version(scope)
        await self._app(scope, replay, record_status)

    def _answer_without_sdk(
        self, http_method: str, message: dict[str, Any], params: dict[str, Any], headers: dict[str, str]
    ) -> tuple[str, Response] | None:
        version = headers.get("mcp-protocol-version")
        session_id = headers.get("mcp-session-id")
        request_id = message.get("id")
        if self._state.mode == "modern" and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS):
            if http_method != "POST":
                return "peer:modern-only", Response(status_code=405, headers={"Allow": "POST"})
            requested = params.get("protocolVersion") if message.get("method") == "initialize" else version
            data = {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": requested or ""}
            body = _rpc_error(request_id, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", data)
            return "peer:modern-only", _json_body(400, body)
        if (
            self._state.mode == "legacy"
            and version is not None
            and version not in HANDSHAKE_PROTOCOL_VERSIONS
            and session_id is not None
        ):
            # What a 2025 SDK server answers for a version it does not know on an existing session.
            supported = ", ".join(HANDSHAKE_PROTOCOL_VERSIONS)
            text = f"Bad Request: Unsupported protocol version: {version}. Supported versions: {supported}"
            return "peer:legacy-emulation", _json_body(
                400, _rpc_error(None, -32600, text), {"mcp-session-id": session_id}
            )
        name = params.get("name")
        if http_method == "POST" and message.get("method") == "tools/call" and isinstance(name, str):
            armed = _take(self._state.mismatches, name)
            if armed is not None:
                return "peer:mismatch", _mismatch_response(armed.delivery, request_id, name, session_id)
            injected = _take(self._state.errors, name)
            if injected is not None:
                echoed = {"mcp-session-id": session_id} if session_id is not None else None
                return "peer:error", _json_body(200, _rpc_error(request_id, injected.code, injected.message), echoed)
        return None


def _mismatch_response(delivery: str, request_id: Any, tool: str, session_id: str | None) -> Response:
    body = _rpc_error(request_id, HEADER_MISMATCH, f"Mcp-Param header mismatch injected by the test peer for {tool!r}")
    headers = {"mcp-session-id": session_id} if session_id is not None else None
    if delivery == "sse":
        frame = f"event: message\r\ndata: {json.dumps(body, separators=(',', ':'))}\r\n\r\n"
        return Response(frame, status_code=200, media_type="text/event-stream", headers=headers)
    return _json_body(200 if delivery == "json200" else 400, body, headers)


def _strip_modern_version(scope: Scope) -> Scope:
    """Hide a non-handshake `MCP-Protocol-Version` so the SDK's legacy transport serves the request."""
    kept = [
        (k, v)
        for k, v in scope["headers"]
        if k.lower() != b"mcp-protocol-version" or v.decode("latin-1") in HANDSHAKE_PROTOCOL_VERSIONS
    ]
    return {**scope, "headers": kept}


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        event = await receive()
        if event["type"] != "http.request":
            break
        chunks.append(event.get("body", b""))
        if not event.get("more_body", False):
            break
    return b"".join(chunks)


def _log_entry(
    http_method: str, message: dict[str, Any], params: dict[str, Any], raw_headers: list[tuple[str, str]]
) -> dict[str, Any]:
    selected = [(k, v) for k, v in raw_headers if k.startswith("mcp-") or k in _LOGGED_HEADERS]
    headers: dict[str, str] = {}
    for key, value in selected:
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    name = params.get("name")
    method = message.get("method")
    return {
        "http_method": http_method,
        "jsonrpc_method": method if isinstance(method, str) else None,
        "id": message.get("id"),
        "name": name if isinstance(name, str) else None,
        "headers": headers,
        "header_list": [[k, v] for k, v in selected],
        "status": None,
        "answered_by": "sdk",
        "input": _input_members(params),
        "trace": _trace_members(params),
    }


def _trace_members(params: dict[str, Any]) -> dict[str, Any] | None:
    """The W3C trace context and baggage the request carried in ``params._meta`` (MCP semantic conventions)."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return None
    found = {key: meta[key] for key in ("traceparent", "tracestate", "baggage") if key in meta}
    return found or None


def _input_members(params: dict[str, Any]) -> dict[str, Any] | None:
    """What a multi round-trip resend carried (SEP-2322): ``inputResponses`` keys, ``requestState`` or not."""
    if "inputResponses" not in params and "requestState" not in params:
        return None
    responses = params.get("inputResponses")
    keys = sorted(cast(dict[str, Any], responses)) if isinstance(responses, dict) else None
    return {"responses": keys, "state": "requestState" in params}


# --- control surface ------------------------------------------------------------------------------


def _install_control_routes(server: MCPServer[Any], state: PeerState) -> None:
    async def control(request: Request) -> Response:
        try:
            action = cast(Any, await request.json())
        except ValueError:
            return JSONResponse({"error": "body must be a JSON object"}, status_code=400)
        if not isinstance(action, dict):
            return JSONResponse({"error": "body must be a JSON object"}, status_code=400)
        action = cast(dict[str, Any], action)
        if action.get("action") in demo_surface.ACTIONS and state.surface is not None:
            problem = await state.surface.apply(action)
        else:
            problem = _apply(server, state, action)
        if problem is not None:
            status, text = problem
            return JSONResponse({"error": text}, status_code=status)
        return JSONResponse({"ok": True, **_describe(state)})

    async def log(request: Request) -> Response:
        return JSONResponse(state.log)

    async def clear_log(request: Request) -> Response:
        state.log.clear()
        return JSONResponse({"ok": True})

    # Called rather than used as decorators: `custom_route` is unannotated, so mypy would call the
    # decorated functions untyped.
    server.custom_route("/control", methods=["POST"])(control)
    server.custom_route("/control/log", methods=["GET"])(log)
    server.custom_route("/control/log/clear", methods=["POST"])(clear_log)


def _describe(state: PeerState) -> dict[str, Any]:
    return {
        "mode": state.mode,
        "evolved": state.evolved,
        "tools": [name for name in TOOL_NAMES if name not in state.removed],
        "page_size": state.page_size,
        "mismatches": {name: armed.count for name, armed in state.mismatches.items() if armed.count > 0},
        "drop_streams": state.drop_streams,
    }


def _count(action: dict[str, Any], key: str, default: int) -> int | None:
    value = action.get(key, default)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _apply(server: MCPServer[Any], state: PeerState, action: dict[str, Any]) -> tuple[int, str] | None:
    """Apply one control action; return (status, error text) when it is refused."""
    kind = action.get("action")
    tool = action.get("tool")
    if kind == "evolve":
        state.evolved = True
    elif kind == "reset":
        state.reset()
    elif kind == "remove":
        if tool not in TOOL_NAMES or tool in state.removed:
            return 404, f"no such tool: {tool!r}"
        state.removed.add(tool)
    elif kind == "mismatch":
        count = _count(action, "count", 1)
        delivery = action.get("delivery", "http400")
        if not isinstance(tool, str) or count is None or delivery not in ("http400", "json200", "sse"):
            return 400, "mismatch needs 'tool' (str), 'count' (int >= 0), 'delivery' in http400|json200|sse"
        state.mismatches[tool] = _Mismatch(count=count, delivery=delivery)
    elif kind == "error":
        count = _count(action, "count", 1)
        code, message = action.get("code"), action.get("message")
        if not isinstance(tool, str) or count is None or type(code) is not int or not isinstance(message, str):
            return 400, "error needs 'tool' (str), 'code' (int), 'message' (str), 'count' (int >= 0)"
        state.errors[tool] = _InjectedError(count=count, code=code, message=message)
    elif kind == "paginate":
        size = action.get("page_size")
        if size is not None and _count(action, "page_size", 0) in (None, 0):
            return 400, "paginate needs 'page_size': a positive int or null"
        state.page_size = size
    elif kind == "drop_stream":
        count = _count(action, "count", 1)
        if count is None:
            return 400, "drop_stream needs 'count' (int >= 0)"
        state.drop_streams = count
    else:
        return 400, f"unknown action: {kind!r}"
    _sync_tools(server, state)
    return None


# --- entry points ---------------------------------------------------------------------------------


def build_http_app(
    state: PeerState, *, event_store: bool = False, retry_ms: int | None = None
) -> tuple[ASGIApp, MCPServer[Any]]:
    """The ASGI app of an HTTP peer: the SDK's Streamable HTTP app behind `PeerGate`, plus `/control`."""
    server = build_server(state)
    _install_control_routes(server, state)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=state.json_response,
        event_store=_MemoryEventStore() if event_store else None,
        retry_interval=retry_ms,
    )
    return PeerGate(app, state), server


class _PeerUvicorn(uvicorn.Server):
    """uvicorn, except that SIGTERM/SIGINT end `serve()` without re-raising the signal (exit status 0)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        previous = {sig: signal.signal(sig, self._stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _stop(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit:
            self.force_exit = True
        self.should_exit = True


async def _serve_http(app: ASGIApp, port: int) -> None:
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", timeout_graceful_shutdown=1
    )
    server = _PeerUvicorn(config)

    async def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            await anyio.sleep(0.01)
        bound = server.servers[0].sockets[0].getsockname()[1]
        print(f"READY http://127.0.0.1:{bound}{MCP_PATH}", flush=True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await server.serve()
        tg.cancel_scope.cancel()


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m mcpfsm._tooling.demo_server", description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=MODES, default="dual", help="protocol eras served over HTTP")
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: the OS picks)")
    parser.add_argument("--stdio", action="store_true", help="serve over stdio instead of HTTP")
    parser.add_argument("--json-response", action="store_true", help="answer with JSON instead of SSE")
    parser.add_argument("--page-size", type=int, default=None, help="paginate tools/list with N tools per page")
    parser.add_argument("--event-store", action="store_true", help="legacy SSE: event ids and resumability")
    parser.add_argument("--retry-ms", type=int, default=None, help="legacy SSE: `retry:` on priming events")
    parser.add_argument(
        "--bad-header-tool",
        action="store_true",
        help=f"also list {BAD_HEADER_TOOL!r}, whose x-mcp-header is invalid (clients that mirror exclude it)",
    )
    parser.add_argument(
        "--public-listings",
        type=int,
        metavar="MS",
        help="2026-07-28 listings (tools, prompts, resources, templates) say ttlMs: MS, cacheScope: public",
    )
    parser.add_argument("--ttl-ms", type=int, default=None, help="2026-07-28 tools/list results say ttlMs: MS")
    args = parser.parse_args(argv)
    if args.page_size is not None and args.page_size < 1:
        parser.error("--page-size must be at least 1")
    if args.public_listings is not None and args.public_listings < 1:
        parser.error("--public-listings must be at least 1 (milliseconds)")
    if args.stdio and args.mode != "dual":
        parser.error("--stdio serves whatever the SDK's stdio transport serves; --mode must stay 'dual'")
    return args


def main(argv: list[str] | None = None) -> None:
    """Run the peer until SIGTERM/SIGINT (HTTP) or end of stdin (stdio)."""
    args = _parse_args(argv)
    # The SDK marks logging deprecated at 2026-07-28; the peer still exercises it on purpose.
    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    state = PeerState(
        mode=args.mode,
        json_response=args.json_response,
        initial_page_size=args.page_size,
        bad_header_tool=args.bad_header_tool,
    )
    if args.stdio:
        server = build_server(state)
        _hint_tools(state, args.ttl_ms)
        anyio.run(server.run_stdio_async)
        return
    app, _ = build_http_app(state, event_store=args.event_store, retry_ms=args.retry_ms)
    if args.public_listings is not None:
        assert state.surface is not None
        state.surface.keep_hints({"ttlMs": args.public_listings, "cacheScope": "public"})
    _hint_tools(state, args.ttl_ms)
    anyio.run(_serve_http, app, args.port)


def _hint_tools(state: PeerState, ttl_ms: int | None) -> None:
    # --ttl-ms: what the control surface's cache_hints action sets, from the start (over --public-listings').
    if ttl_ms is not None and state.surface is not None:
        state.surface.hints["tools/list"] = {"ttlMs": ttl_ms, "cacheScope": "private"}


if __name__ == "__main__":
    main(sys.argv[1:])
