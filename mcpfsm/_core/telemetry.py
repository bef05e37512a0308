"""What the OpenTelemetry layer records of MCP traffic: span names, attributes, error types (docs/telemetry.md).

Pure: names and values only, no OpenTelemetry import, no clock. The layer that builds spans and records the
metric (``mcpfsm._client.otel``) takes everything it writes from here, so the conventions are in one place:

- "Semantic conventions for Model Context Protocol (MCP)" (OpenTelemetry, status Development): the CLIENT span
  of each request is named ``{mcp.method.name} {target}`` (the tool or prompt name, else the method alone) and
  carries ``mcp.method.name``, ``jsonrpc.request.id``, ``gen_ai.tool.name``, ``gen_ai.prompt.name``,
  ``mcp.resource.uri``, ``gen_ai.operation.name = "execute_tool"`` on ``tools/call``, ``mcp.protocol.version``,
  ``mcp.session.id``, ``network.transport``, ``server.address``/``server.port``, and on failure ``error.type``
  (the JSON-RPC code as a string, an exception class name, or ``tool_error`` for a result with ``isError``) and
  ``rpc.response.status_code``; the histogram ``mcp.client.operation.duration`` in seconds with the
  convention's advised bucket boundaries; context propagated as ``traceparent``, ``tracestate`` and
  ``baggage`` in ``params._meta`` (unprefixed, as SEP-414 asks).
- mcpfsm's own spans: one INTERNAL span per run of a machine, ``tool-call {tool}`` and ``authorization``, with
  ``mcpfsm.call_id``, the last state entered as ``mcpfsm.state``, and one span event per audit event.
- the gate's (``mcpfsm.gate``): one INTERNAL span ``gate`` per request, the child of the ``traceparent`` the
  request carried, with ``mcp.method.name``, ``gen_ai.tool.name``, ``mcpfsm.call_id``, ``mcpfsm.state`` (its end:
  ``forwarded``, ``reported``, ``rejected``) and, for a refusal, ``error.type`` (the JSON-RPC code),
  ``http.response.status_code`` and ``mcpfsm.gate.header`` (a name, never a value); the counter
  ``mcpfsm.gate.requests`` and the histogram ``mcpfsm.gate.duration`` (seconds, until the answer ended) by
  method, end state and ``error.type``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

from .errors import RpcError
from .events import CallEvent
from .events.authorization import AuthEvent

__all__ = [
    "ARGUMENTS",
    "CALL_ID",
    "CAPTURE_CONTENT_ENV",
    "DURATION_BUCKETS",
    "ENTRY",
    "ERROR_TYPE",
    "GATE_DURATION",
    "GATE_HEADER",
    "GATE_METRIC_KEYS",
    "GATE_REQUESTS",
    "HTTP_STATUS",
    "ISSUER",
    "METHOD",
    "METRIC_KEYS",
    "OPERATION_DURATION",
    "PROPAGATED_KEYS",
    "PROTOCOL_VERSION",
    "RESOURCE",
    "RESULT",
    "SCOPES",
    "SESSION_ID",
    "STATE",
    "STATUS_CODE",
    "TOOL_ERROR",
    "TOOL_NAME",
    "captures_content",
    "endpoint_attributes",
    "error_type",
    "event_attributes",
    "flow_attributes",
    "gate_attributes",
    "request_attributes",
    "request_span_name",
]

METHOD: Final = "mcp.method.name"
REQUEST_ID: Final = "jsonrpc.request.id"
TOOL_NAME: Final = "gen_ai.tool.name"
PROMPT_NAME: Final = "gen_ai.prompt.name"
RESOURCE_URI: Final = "mcp.resource.uri"
OPERATION: Final = "gen_ai.operation.name"
PROTOCOL_VERSION: Final = "mcp.protocol.version"
SESSION_ID: Final = "mcp.session.id"
ERROR_TYPE: Final = "error.type"
STATUS_CODE: Final = "rpc.response.status_code"
ARGUMENTS: Final = "gen_ai.tool.call.arguments"
RESULT: Final = "gen_ai.tool.call.result"
TRANSPORT: Final = "network.transport"
PROTOCOL_NAME: Final = "network.protocol.name"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"

CALL_ID: Final = "mcpfsm.call_id"
"""The run's id (``CallEvent.call_id``: a tool call, or an authorization flow)."""
STATE: Final = "mcpfsm.state"
"""The last state the run entered: its terminal state once it is over."""
TRIGGER: Final = "mcpfsm.trigger"
ATTEMPT: Final = "mcpfsm.attempt"
ROUND: Final = "mcpfsm.round"
ENTRY: Final = "mcpfsm.entry"
"""Why an authorization flow runs: ``unauthorized`` (401), ``forbidden`` (403 step-up) or ``expiring``."""
ISSUER: Final = "mcpfsm.issuer"
RESOURCE: Final = "mcpfsm.resource"
SCOPES: Final = "mcpfsm.scopes"

TOOL_ERROR: Final = "tool_error"
"""``error.type`` of a ``tools/call`` whose result has ``isError: true``."""

OPERATION_DURATION: Final = "mcp.client.operation.duration"
DURATION_BUCKETS: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""The explicit bucket boundaries the MCP conventions advise for ``mcp.client.operation.duration``."""

METRIC_KEYS: Final = frozenset(
    {
        METHOD,
        ERROR_TYPE,
        TOOL_NAME,
        PROMPT_NAME,
        STATUS_CODE,
        OPERATION,
        PROTOCOL_VERSION,
        TRANSPORT,
        PROTOCOL_NAME,
        SERVER_ADDRESS,
        SERVER_PORT,
    }
)
"""The span attributes the histogram keeps: the conventions' low-cardinality ones (no request or session id,
no resource URI)."""

GATE_REQUESTS: Final = "mcpfsm.gate.requests"
"""The counter of requests through the gate, by ``mcp.method.name``, ``mcpfsm.state`` and ``error.type``."""
GATE_DURATION: Final = "mcpfsm.gate.duration"
"""The histogram of a request's time through the gate, its answer included, in seconds (same attributes)."""
GATE_HEADER: Final = "mcpfsm.gate.header"
"""The header a refusal or a report blames (its name only)."""
HTTP_STATUS: Final = "http.response.status_code"

PROPAGATED_KEYS: Final = ("traceparent", "tracestate", "baggage")
"""The W3C Trace Context and Baggage keys that go into ``params._meta``."""

CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The opt-in of OpenTelemetry's GenAI instrumentations for recording arguments and results."""

_CAPTURING: Final = frozenset({"true", "span_only", "span_and_event"})
_RESOURCE_METHODS: Final = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def request_span_name(method: str, params: Mapping[str, Any] | None) -> str:
    """``{mcp.method.name} {target}``: the tool or prompt named, else the method alone (never a resource URI)."""
    if params is not None and method in ("tools/call", "prompts/get"):
        name = params.get("name")
        if isinstance(name, str):
            return f"{method} {name}"
    return method


def request_attributes(method: str, params: Mapping[str, Any] | None, request_id: int | str) -> dict[str, Any]:
    """The attributes a request has before it is sent: the method, its id and what it names."""
    attributes: dict[str, Any] = {METHOD: method, REQUEST_ID: str(request_id)}
    if params is None:
        return attributes
    if method == "tools/call":
        name = params.get("name")
        if isinstance(name, str):
            attributes[TOOL_NAME] = name
        attributes[OPERATION] = "execute_tool"
    elif method == "prompts/get":
        name = params.get("name")
        if isinstance(name, str):
            attributes[PROMPT_NAME] = name
    elif method in _RESOURCE_METHODS:
        uri = params.get("uri")
        if isinstance(uri, str):
            attributes[RESOURCE_URI] = uri
    return attributes


def endpoint_attributes(url: str | None, *, pipe: bool) -> dict[str, Any]:
    """``network.transport`` and, for an HTTP endpoint ``url``, ``network.protocol.name``, ``server.address``/``.port``.

    ``pipe`` is a stdio connection; neither (a custom transport) gives no attributes.
    """
    if pipe:
        return {TRANSPORT: "pipe"}
    if url is None:
        return {}
    parts = urlsplit(url)
    attributes: dict[str, Any] = {TRANSPORT: "tcp", PROTOCOL_NAME: "http"}
    if parts.hostname:
        attributes[SERVER_ADDRESS] = parts.hostname
        try:
            port = parts.port if parts.port is not None else _DEFAULT_PORTS.get(parts.scheme.lower())
        except ValueError:  # not a port number: none is recorded
            port = None
        if port is not None:
            attributes[SERVER_PORT] = port
    return attributes


def error_type(error: BaseException) -> str:
    """``error.type``: the JSON-RPC code of an error answer as a string, else the exception's class name."""
    if isinstance(error, RpcError):
        return str(error.code)
    return type(error).__name__


def event_attributes(event: CallEvent) -> dict[str, Any]:
    """The attributes of the span event that records ``event`` (named after the state entered).

    The trigger and attempt, the input round once there is one, and the event's ``error.type``; never headers
    (mirrored argument values), input requests or answers.
    """
    attributes: dict[str, Any] = {ATTEMPT: event.attempt}
    if event.trigger is not None:
        attributes[TRIGGER] = event.trigger
    if event.round:
        attributes[ROUND] = event.round
    if event.error is not None:
        code, kind = event.error.get("code"), event.error.get("type")
        attributes[ERROR_TYPE] = str(code) if isinstance(code, int) else str(kind)
    return attributes


def flow_attributes(event: AuthEvent) -> dict[str, Any]:
    """What an authorization event tells its flow's span: the issuer, resource and scopes once known; no secret."""
    attributes: dict[str, Any] = {}
    if event.issuer is not None:
        attributes[ISSUER] = event.issuer
    if event.resource is not None:
        attributes[RESOURCE] = event.resource
    if event.scopes:
        attributes[SCOPES] = list(event.scopes)
    return attributes


def gate_attributes(event: CallEvent) -> dict[str, Any]:
    """What the last event of a request through the gate tells its span and its metrics: never a header's value.

    ``event`` is a ``GateEvent``: its method and tool, the state it ended in and, for a refusal or a report, the
    JSON-RPC code as ``error.type``, the HTTP status and the header at fault.
    """
    attributes: dict[str, Any] = {STATE: event.state}
    method = getattr(event, "method", "")
    if method:
        attributes[METHOD] = method
    if event.tool:
        attributes[TOOL_NAME] = event.tool
    if event.error is not None:
        code = event.error.get("code")
        attributes[ERROR_TYPE] = str(code) if isinstance(code, int) else str(event.error.get("type"))
    status = getattr(event, "status", None)
    if isinstance(status, int):
        attributes[HTTP_STATUS] = status
    header = getattr(event, "header", None)
    if isinstance(header, str):
        attributes[GATE_HEADER] = header
    return attributes


GATE_METRIC_KEYS: Final = frozenset({METHOD, STATE, ERROR_TYPE})
"""The attributes the gate's metrics keep (low cardinality: no tool, no header)."""


def captures_content(value: str | None) -> bool:
    """True when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` opts in to recording arguments and results.

    ``true``, ``span_only`` or ``span_and_event`` (any case) opt in; anything else, or unset, does not.
    """
    return value is not None and value.strip().lower() in _CAPTURING
