"""The rest of the peer's surface: resources, prompts, completion, subscriptions, cache hints, output schemas.

Installed on the peer's `MCPServer` by `mcpfsm._tooling.demo_server.build_server` (official SDK `mcp==2.3.0`; a test
and demo server only, never a runtime dependency of the client). What it adds, in both eras unless noted:

- **resources** `res://static/readme` (text), `res://static/logo` (blob), the template
  `res://items/{item_id}` (JSON text), and **prompt** `greet(name, style="plain")`;
- **input rounds** (SEP-2322) on `prompts/get` and `resources/read`: prompt `ask-greet` and template
  `res://ask/{key}` each ask for a name (form elicitation, `NAME_SCHEMA`): in 2026-07-28 by answering
  `input_required`, in 2025-11-25 by a real `elicitation/create` on the calling POST's stream;
- **completion** for `greet.style` (`plain`, `fancy`, `formal`) and the template's `item_id` (`1`, `2`, `3`, `42`);
- **legacy** `resources/subscribe`/`unsubscribe` and `logging/setLevel` handlers (MCPServer has none), and
  `listChanged: true` in the `initialize` result (the SDK's HTTP session manager always says false);
- **modern** `subscriptions/listen` over a bus the control surface publishes to;
- **cache hints**: `ttlMs`/`cacheScope` per method set by the control surface (2026-07-28 results only);
- **output tools** (after the `output_tools` action): `weather` (object schema, conforming; title `Weather`,
  annotations `readOnlyHint`/`openWorldHint` true), `bad-weather`
  (violates its schema), `no-structured` (schema, no structuredContent), `schema-error` (schema, `isError`),
  and, on 2026-07-28 only (a 2025-11-25 `tools/list` must not list them), `raw-array` (an array) and
  `raw-null` (JSON `null`).

Control actions (`POST /control`; `tests/support/peer/README.md`): `tools_changed`, `prompts_changed`,
`resources_changed`, `resource_updated` (`uri`), `close_listens`, `cache_hints` (`hints`:
`{method: {"ttlMs": N, "cacheScope": S}}`; `"legacy": true` adds them to 2025-11-25 results too, which a
conforming server never does), `output_tools`. A change is announced to every legacy session
(on its standalone GET stream) and to every modern listen stream.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final, cast

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp.shared.message import ServerMessageMetadata
from mcp_types import (
    CallToolResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmptyResult,
    InputRequiredResult,
    PromptReference,
    ResourceTemplateReference,
    SetLevelRequestParams,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    TextContent,
    ToolAnnotations,
    UnsubscribeRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .demo_input import NAME_SCHEMA

__all__ = ["ACTIONS", "OUTPUT_TOOLS", "Surface", "install"]

ACTIONS: Final = frozenset(
    {
        "tools_changed",
        "prompts_changed",
        "resources_changed",
        "resource_updated",
        "close_listens",
        "cache_hints",
        "output_tools",
    }
)
"""The control actions this module serves."""

WEATHER_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
}
_MODERN_ONLY: Final = ("raw-array", "raw-null")
OUTPUT_TOOLS: Final = ("weather", "bad-weather", "no-structured", "schema-error", *_MODERN_ONLY)
"""The tools the `output_tools` action adds, in listing order."""

_LEGACY_REQUEST: ContextVar[bool] = ContextVar("legacy_request", default=False)

_CACHEABLE: Final = frozenset(
    {"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)
_LISTINGS: Final = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")
"""What the peer's ``--public-listings`` marks public."""


@dataclass(slots=True)
class Surface:
    """The state behind this module's control actions; one per peer."""

    server: MCPServer[Any]
    bus: InMemorySubscriptionBus = field(default_factory=InMemorySubscriptionBus)
    listen: ListenHandler | None = None
    sessions: dict[str, ServerSession] = field(default_factory=dict)
    subscribers: dict[str, set[str]] = field(default_factory=dict)
    log_levels: dict[str, str] = field(default_factory=dict)
    hints: dict[str, dict[str, Any]] = field(default_factory=dict)
    hints_legacy: bool = False
    output_tools: bool = False
    kept_hints: dict[str, dict[str, Any]] = field(default_factory=dict)

    def keep_hints(self, hint: dict[str, Any]) -> None:
        """Put ``hint`` (``ttlMs``, ``cacheScope``) on every cacheable listing, now and after each reset."""
        self.kept_hints = {method: dict(hint) for method in _LISTINGS}
        self.hints = {method: dict(value) for method, value in self.kept_hints.items()}

    def reset(self) -> None:
        """Forget hints (but those of ``--public-listings``) and subscriptions, and remove the output tools."""
        self.hints = {method: dict(value) for method, value in self.kept_hints.items()}
        self.hints_legacy = False
        self.subscribers.clear()
        self.log_levels.clear()
        if self.output_tools:
            for name in OUTPUT_TOOLS:
                self.server.remove_tool(name)
            self.output_tools = False

    async def apply(self, action: dict[str, Any]) -> tuple[int, str] | None:
        """Apply one control action of :data:`ACTIONS`; return (status, error text) when refused."""
        kind = action.get("action")
        if kind == "close_listens":
            assert self.listen is not None
            self.listen.close()
        elif kind == "cache_hints":
            hints = action.get("hints")
            if not isinstance(hints, dict) or not set(hints) <= _CACHEABLE:
                return 400, f"cache_hints needs 'hints': {{method: {{ttlMs, cacheScope}}}} for {sorted(_CACHEABLE)}"
            self.hints = {method: dict(value) for method, value in hints.items()}
            self.hints_legacy = action.get("legacy") is True
        elif kind == "output_tools":
            if not self.output_tools:
                for tool in _output_tools():
                    self.server.add_tool(
                        tool.fn, name=tool.name, title=tool.title, description=tool.description,
                        annotations=tool.annotations, structured_output=False,
                    )
                    _adopt_schema(self.server, tool)
                self.output_tools = True
        elif kind == "resource_updated":
            uri = action.get("uri")
            if not isinstance(uri, str):
                return 400, "resource_updated needs 'uri' (str)"
            await self.announce(kind, uri)
        else:
            await self.announce(cast(str, kind))
        return None

    async def announce(self, kind: str, uri: str | None = None) -> None:
        """Send one change to every legacy session (GET stream) and every modern listen stream."""
        for key, session in list(self.sessions.items()):
            if kind == "tools_changed":
                await session.send_tool_list_changed()
            elif kind == "prompts_changed":
                await session.send_prompt_list_changed()
            elif kind == "resources_changed":
                await session.send_resource_list_changed()
            elif uri is not None and key in self.subscribers.get(uri, set()):
                await session.send_resource_updated(uri)
        event: ServerEvent
        if kind == "tools_changed":
            event = ToolsListChanged()
        elif kind == "prompts_changed":
            event = PromptsListChanged()
        elif kind == "resources_changed":
            event = ResourcesListChanged()
        else:
            event = ResourceUpdated(uri=uri or "")
        await self.bus.publish(event)


def _key(ctx: ServerRequestContext[Any, Any]) -> str:
    request = ctx.request  # the Starlette request over HTTP, None on stdio
    headers = getattr(request, "headers", None)
    session_id = headers.get("mcp-session-id") if headers is not None else None
    return session_id or "stdio"


async def _asked_name(ctx: Context, state: str) -> str | InputRequiredResult:
    # SEP-2322 in 2026-07-28 (an input_required answer, then the resend's inputResponses); a real
    # elicitation/create on the calling request's stream in 2025-11-25.
    request = ElicitRequest(params=ElicitRequestFormParams(message="Who is asking?", requested_schema=NAME_SCHEMA))
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        answers = dict(ctx.input_responses or {})
        if "name" not in answers:
            return InputRequiredResult(input_requests={"name": request}, request_state=state)
        answer = answers["name"]
    else:
        metadata = ServerMessageMetadata(related_request_id=ctx.request_id)
        answer = await ctx.session.send_request(request, ElicitResult, metadata=metadata)
    if not isinstance(answer, ElicitResult) or answer.action != "accept" or not answer.content:
        return "nobody"
    return str(answer.content.get("name"))


def _output_tools() -> list[Tool]:
    def tool(
        name: str, schema: dict[str, Any], structured: Any, *, error: bool = False, title: str | None = None,
        annotations: ToolAnnotations | None = None,
    ) -> Tool:
        def fn() -> CallToolResult:
            return CallToolResult(
                content=[TextContent(type="text", text=f"{name} result")],
                structured_content=structured,
                is_error=error,
            )

        made = Tool.from_function(
            fn, name=name, title=title, description=f"output schema test tool {name}", annotations=annotations,
            structured_output=False,
        )
        # Advertised verbatim and never validated by the SDK: the client is what is under test.
        made.fn_metadata.output_schema = schema
        return made

    return [
        tool(
            "weather", WEATHER_SCHEMA, {"city": "Oslo", "celsius": 21.5}, title="Weather",
            annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
        ),
        tool("bad-weather", WEATHER_SCHEMA, {"city": 42}),
        tool("no-structured", WEATHER_SCHEMA, None),
        tool("schema-error", WEATHER_SCHEMA, None, error=True),
        tool("raw-array", {"type": "array", "items": {"type": "integer"}}, [1, 2, 3]),
        tool("raw-null", {"type": "null"}, None),
    ]


def _adopt_schema(server: MCPServer[Any], template: Tool) -> None:
    # add_tool builds a new Tool from the function; give it the hand-set schema before it is listed.
    registered = server._tool_manager.get_tool(template.name)
    assert registered is not None
    registered.fn_metadata.output_schema = template.fn_metadata.output_schema


def install(server: MCPServer[Any]) -> Surface:
    """Add resources, prompts, completion, subscriptions, hints and the output-tool switch to ``server``."""
    surface = Surface(server=server)
    lowlevel = server._lowlevel_server  # MCPServer has no public handle for handlers it does not register
    surface.listen = ListenHandler(surface.bus)
    lowlevel.add_request_handler("subscriptions/listen", SubscriptionsListenRequestParams, surface.listen)

    # The SDK's registration decorators are unannotated (and absent without the demo extra): called, not
    # used as decorators, so the functions keep their types.
    sdk = cast(Any, server)

    def readme() -> str:
        return "hello from a static resource"

    def logo() -> bytes:
        return b"\x89PNG\r\n\x1a\nfake"

    def item(item_id: str) -> dict[str, Any]:
        return {"id": item_id, "label": f"item {item_id}"}

    def greet(name: str, style: str = "plain") -> str:
        return f"Say hello to {name} in a {style} style."

    sdk.resource("res://static/readme", name="readme", description="A static text resource", mime_type="text/plain")(
        readme
    )
    sdk.resource("res://static/logo", name="logo", description="A static binary resource", mime_type="image/png")(logo)
    sdk.resource("res://items/{item_id}", name="item", description="One item by id", mime_type="application/json")(
        item
    )
    sdk.prompt(name="greet", description="Greeting prompt with arguments")(greet)

    async def ask_greet(ctx: Context) -> str | InputRequiredResult:
        name = await _asked_name(ctx, "ask-greet:1")
        return name if isinstance(name, InputRequiredResult) else f"Say hello to {name}."

    async def ask_item(key: str, ctx: Context) -> str | InputRequiredResult:
        name = await _asked_name(ctx, f"ask-item:{key}")
        return name if isinstance(name, InputRequiredResult) else f"{key} for {name}"

    sdk.prompt(name="ask-greet", description="Asks who is asking (an input round), then greets")(ask_greet)
    asking = "Asks who is asking (an input round)"
    sdk.resource("res://ask/{key}", name="ask", description=asking, mime_type="text/plain")(ask_item)

    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion | None:
        if isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "style":
            values = [v for v in ("plain", "fancy", "formal") if v.startswith(argument.value)]
            return Completion(values=values, total=len(values), has_more=False)
        if isinstance(ref, ResourceTemplateReference) and argument.name == "item_id":
            return Completion(values=[v for v in ("1", "2", "3", "42") if v.startswith(argument.value)])
        return None

    sdk.completion()(complete)

    async def subscribe(ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> EmptyResult:
        surface.subscribers.setdefault(str(params.uri), set()).add(_key(ctx))
        return EmptyResult()

    async def unsubscribe(ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams) -> EmptyResult:
        surface.subscribers.get(str(params.uri), set()).discard(_key(ctx))
        return EmptyResult()

    async def set_level(ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> EmptyResult:
        surface.log_levels[_key(ctx)] = params.level
        return EmptyResult()

    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)

    async def surface_middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if not modern and ctx.method != "initialize":
            # The initialize POST carries no Mcp-Session-Id yet: remember the session from the next request on.
            surface.sessions[_key(ctx)] = ctx.session
        token = _LEGACY_REQUEST.set(not modern)
        try:
            result = await call_next(ctx)
        finally:
            _LEGACY_REQUEST.reset(token)
        if not isinstance(result, dict):
            return result
        if ctx.method == "initialize":
            capabilities = result.get("capabilities", {})
            for name in ("tools", "prompts", "resources"):
                if isinstance(capabilities.get(name), dict):
                    capabilities[name]["listChanged"] = True
        elif ctx.method == "tools/call" and (ctx.params or {}).get("name") == "raw-null":
            result = {**result, "structuredContent": None}  # the SDK drops a None field; write JSON null
        hinted = modern or surface.hints_legacy
        if hinted and ctx.method in surface.hints and result.get("resultType", "complete") == "complete":
            result = {**result, **surface.hints[ctx.method]}
        return result

    server.middleware.append(surface_middleware)
    # A 2025-11-25 tools/list may list only object output schemas: the SDK checks the listing before any
    # middleware sees it and fails it whole, so the modern-only tools are left out where it is built.
    manager = server._tool_manager
    list_tools = manager.list_tools

    def list_for_era() -> list[Tool]:
        tools = list_tools()
        return [t for t in tools if t.name not in _MODERN_ONLY] if _LEGACY_REQUEST.get() else tools

    cast(Any, manager).list_tools = list_for_era
    return surface
