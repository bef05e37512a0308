"""The test peer's tools that ask the client for input: elicitation, sampling, roots, in both eras.

Registered by ``mcpfsm._tooling.demo_server`` (:func:`install` once, :func:`add_tools` whenever the peer
re-registers its tools). Each tool asks through the protocol of the era it is called in:

- **2026-07-28**: it *returns* ``InputRequiredResult`` (SEP-2322 multi round-trip requests) and reads
  the answers from ``ctx.input_responses`` on the client's resend; the SDK seals its ``requestState``.
- **2025-11-25**: it sends real ``elicitation/create``, ``sampling/createMessage`` or ``roots/list``
  requests with ``ctx.session.send_request``: on the stream of the POST that called it (``stream:
  "post"``, the default) or on the standalone GET stream (``stream: "get"``).

Tools, what they ask for, and their structured content:

- ``ask-name``: one form elicitation (``name``, default ``"Ada"``) → ``{"action", "content"}`` as answered;
- ``ask-model``: one sampling request → ``{"text", "model"}`` of the answer;
- ``list-roots``: ``roots/list`` → ``{"roots": [uri, ...]}``;
- ``interview``: round 1 two elicitations (``first``, ``last``), round 2 one sampling (``greeting``) →
  ``{"first", "last", "greeting"}``;
- ``ask-url``: one URL-mode elicitation → ``{"action"}``;
- ``state-only``: ``rounds`` state-only rounds (modern only) → ``{"rounds"}``;
- ``echo-state``: one elicitation (``confirm``) with ``requestState`` = argument ``state`` verbatim, or none
  when absent (modern only; answered by an outermost middleware, so the state is not sealed) →
  ``{"requestState", "inputResponses"}`` exactly as the resend carried them (``"absent"`` when missing);
- ``elicit-defaults``: one form elicitation whose five properties all have defaults, on the GET stream only
  (legacy; the conformance scenario ``elicitation-sep1034-client-defaults``) → ``{"action", "content"}``.

``tests/support/peer/README.md`` documents the wire.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any, Final, Literal

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import (
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    SamplingMessage,
    TextContent,
)

__all__ = ["DEFAULTS_SCHEMA", "INPUT_TOOL_NAMES", "NAME_SCHEMA", "add_tools", "install"]

INPUT_TOOL_NAMES: Final[tuple[str, ...]] = (
    "ask-name",
    "ask-model",
    "list-roots",
    "interview",
    "ask-url",
    "state-only",
    "echo-state",
    "elicit-defaults",
)
"""The tools this module adds, in listing order (after the peer's own)."""

MODERN: Final = "2026-07-28"

NAME_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"name": {"type": "string", "title": "Name", "default": "Ada"}},
    "required": ["name"],
}
"""The ``requestedSchema`` of ``ask-name`` and of each ``interview`` elicitation."""

DEFAULTS_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}
"""The schema of the conformance scenario ``elicitation-sep1034-client-defaults``: every property has a default."""

CONFIRM_SCHEMA: Final[dict[str, Any]] = {"type": "object", "properties": {"confirmed": {"type": "boolean"}}}
_SIGN_IN_URL: Final = "https://example.test/sign-in?session=42"

Stream = Literal["post", "get"]


def _elicit(message: str, schema: dict[str, Any]) -> ElicitRequest:
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def _sample(text: str) -> CreateMessageRequest:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=text))
    return CreateMessageRequest(params=CreateMessageRequestParams(messages=[message], max_tokens=50))


def _result(text: str, structured: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def _modern(ctx: Context) -> bool:
    version: str | None = ctx.protocol_version
    return version == MODERN


async def _ask(ctx: Context, request: Any, result_type: type[Any], stream: Stream) -> Any:
    # Legacy: a real server-to-client request, on the calling POST's stream or the standalone GET stream.
    metadata = ServerMessageMetadata(related_request_id=ctx.request_id) if stream == "post" else None
    return await ctx.session.send_request(request, result_type, metadata=metadata)


def _elicited(answer: Any) -> dict[str, Any]:
    if not isinstance(answer, ElicitResult):
        raise ToolError(f"expected an elicitation result, got {type(answer).__name__}")
    return {"action": answer.action, "content": answer.content}


def _text(answer: Any) -> tuple[str, str]:
    if not isinstance(answer, CreateMessageResult) or not isinstance(answer.content, TextContent):
        raise ToolError("expected a text sampling result")
    return answer.content.text, answer.model


def _answers(ctx: Context) -> dict[str, Any]:
    return dict(ctx.input_responses or {})


async def ask_name(ctx: Context, stream: Stream = "post") -> CallToolResult | InputRequiredResult:
    """Ask the user for a name (form elicitation, default "Ada"); return the action and content."""
    request = _elicit("What is your name?", NAME_SCHEMA)
    if _modern(ctx):
        answers = _answers(ctx)
        if "name" not in answers:
            return InputRequiredResult(input_requests={"name": request}, request_state="ask-name:1")
        answer = _elicited(answers["name"])
    else:
        answer = _elicited(await _ask(ctx, request, ElicitResult, stream))
    name = (answer["content"] or {}).get("name")
    return _result(f"Hello, {name}!" if answer["action"] == "accept" else answer["action"], answer)


async def ask_model(ctx: Context, stream: Stream = "post") -> CallToolResult | InputRequiredResult:
    """Ask the client's model for a haiku (one sampling request); return its text and model."""
    request = _sample("Write a haiku about state machines.")
    if _modern(ctx):
        answers = _answers(ctx)
        if "haiku" not in answers:
            return InputRequiredResult(input_requests={"haiku": request})
        text, model = _text(answers["haiku"])
    else:
        text, model = _text(await _ask(ctx, request, CreateMessageResult, stream))
    return _result(text, {"text": text, "model": model})


async def list_roots(ctx: Context, stream: Stream = "post") -> CallToolResult | InputRequiredResult:
    """Ask the client for its roots; return their URIs."""
    if _modern(ctx):
        answers = _answers(ctx)
        if "roots" not in answers:
            return InputRequiredResult(input_requests={"roots": ListRootsRequest()}, request_state="list-roots:1")
        listed = answers["roots"]
    else:
        listed = await _ask(ctx, ListRootsRequest(), ListRootsResult, stream)
    if not isinstance(listed, ListRootsResult):
        raise ToolError("expected a roots result")
    uris = [str(root.uri) for root in listed.roots]
    return _result(", ".join(uris), {"roots": uris})


async def interview(ctx: Context, stream: Stream = "post") -> CallToolResult | InputRequiredResult:
    """Ask for a first and a last name (round 1), then for a greeting from the model (round 2)."""
    first_request = _elicit("First name?", NAME_SCHEMA)
    last_request = _elicit("Last name?", NAME_SCHEMA)
    if _modern(ctx):
        step: dict[str, Any] = json.loads(ctx.request_state) if ctx.request_state else {"step": 0}
        answers = _answers(ctx)
        if step["step"] == 0:
            return InputRequiredResult(
                input_requests={"first": first_request, "last": last_request},
                request_state=json.dumps({"step": 1}),
            )
        if step["step"] == 1:
            names = [(_elicited(answers[key])["content"] or {}).get("name") for key in ("first", "last")]
            return InputRequiredResult(
                input_requests={"greeting": _sample(f"Greet {names[0]} {names[1]}.")},
                request_state=json.dumps({"step": 2, "names": names}),
            )
        first, last = step["names"]
        greeting, _ = _text(answers["greeting"])
    else:
        first = (_elicited(await _ask(ctx, first_request, ElicitResult, stream))["content"] or {}).get("name")
        last = (_elicited(await _ask(ctx, last_request, ElicitResult, stream))["content"] or {}).get("name")
        greeting, _ = _text(await _ask(ctx, _sample(f"Greet {first} {last}."), CreateMessageResult, stream))
    return _result(greeting, {"first": first, "last": last, "greeting": greeting})


async def ask_url(ctx: Context, stream: Stream = "post") -> CallToolResult | InputRequiredResult:
    """Ask the user to visit a sign-in page (URL-mode elicitation); return the action."""
    params = ElicitRequestURLParams(message="Sign in to continue.", url=_SIGN_IN_URL)
    if _modern(ctx):
        answers = _answers(ctx)
        if "sign-in" not in answers:
            return InputRequiredResult(input_requests={"sign-in": ElicitRequest(params=params)})
        answer = _elicited(answers["sign-in"])
    else:
        legacy = ElicitRequestURLParams(message=params.message, url=params.url, elicitation_id="sign-in-1")
        answer = _elicited(await _ask(ctx, ElicitRequest(params=legacy), ElicitResult, stream))
    return _result(answer["action"], {"action": answer["action"]})


async def state_only(rounds: int, ctx: Context) -> CallToolResult | InputRequiredResult:
    """Answer ``rounds`` times with a state-only input_required (no input requests), then complete."""
    if not _modern(ctx):
        raise ToolError("state-only rounds exist only in 2026-07-28")
    done = int(ctx.request_state or "0")
    if done < rounds:
        return InputRequiredResult(request_state=str(done + 1))
    return _result(f"completed after {done} state-only rounds", {"rounds": done})


def echo_state(state: str | None = None) -> str:
    """Answered by the outermost middleware (``echo-state`` in the module docstring); never runs."""
    return "never reached"


async def elicit_defaults(ctx: Context) -> CallToolResult:
    """Elicit a five-field form whose properties all have defaults, on the standalone GET stream (legacy)."""
    if _modern(ctx):
        raise ToolError("elicit-defaults uses the 2025-11-25 standalone stream")
    message = "Test client default value handling - please accept with defaults"
    answer = _elicited(await _ask(ctx, _elicit(message, DEFAULTS_SCHEMA), ElicitResult, "get"))
    return _result(json.dumps(answer["content"]), answer)


async def _echo_state(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    # Outside the SDK's RequestStateBoundary (index 0), so requestState goes out and comes back verbatim.
    params = ctx.params or {}
    if ctx.method != "tools/call" or params.get("name") != "echo-state" or ctx.protocol_version != MODERN:
        return await call_next(ctx)
    if "inputResponses" not in params and "requestState" not in params:
        asked: dict[str, Any] = {
            "resultType": "input_required",
            "inputRequests": {
                "confirm": {
                    "method": "elicitation/create",
                    "params": {"message": "Confirm?", "requestedSchema": CONFIRM_SCHEMA},
                }
            },
        }
        state = (params.get("arguments") or {}).get("state")
        if state is not None:
            asked["requestState"] = state
        return asked
    echoed = {key: params.get(key, "absent") for key in ("requestState", "inputResponses")}
    return {
        "resultType": "complete",
        "content": [{"type": "text", "text": json.dumps(echoed)}],
        "structuredContent": echoed,
    }


def install(server: MCPServer[Any]) -> None:
    """Add the ``echo-state`` middleware (outermost, so it sees and sends requestState unsealed)."""
    server.middleware.insert(0, _echo_state)


def add_tools(server: MCPServer[Any]) -> None:
    """(Re-)register every tool of :data:`INPUT_TOOL_NAMES`, in that order."""
    for name in INPUT_TOOL_NAMES:
        with contextlib.suppress(ToolError):
            server.remove_tool(name)
    described: dict[str, tuple[Callable[..., Any], str]] = {
        "ask-name": (ask_name, "Ask the user for a name (form elicitation)."),
        "ask-model": (ask_model, "Ask the client's model for a haiku (sampling)."),
        "list-roots": (list_roots, "List the client's roots."),
        "interview": (interview, "Elicit a first and a last name, then sample a greeting (two rounds)."),
        "ask-url": (ask_url, "Ask the user to visit a sign-in page (URL-mode elicitation)."),
        "state-only": (state_only, "Answer with state-only input_required rounds, then complete."),
        "echo-state": (echo_state, "Echo the requestState and inputResponses of the resend (verbatim state)."),
        "elicit-defaults": (elicit_defaults, "Elicit a form of defaults on the standalone stream (legacy)."),
    }
    for name in INPUT_TOOL_NAMES:
        function, description = described[name]
        server.add_tool(function, name=name, description=description, structured_output=False)
