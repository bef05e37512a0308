"""OpenTelemetry spans, context propagation and the duration metric (docs/telemetry.md).

Imported only by :func:`mcpfsm._client.telemetry.probe`, once an application has loaded OpenTelemetry: this
is the one module of mcpfsm that imports it (the ``otel`` extra, ``opentelemetry-api``). Every name and
value it records comes from the pure ``mcpfsm._core.telemetry``, which says which conventions they follow.

- :meth:`Instrumentation.request` — one CLIENT span per request (one JSON-RPC id), the current span while
  the request is on its way (so an authorization flow it runs is its child); the current context injected
  into ``params._meta`` with the global propagator (W3C ``traceparent``, ``tracestate``, ``baggage`` by
  default); ``mcp.client.operation.duration`` recorded when it ends, answered or not.
- :meth:`Instrumentation.run` (for the tool-call machine :meth:`Instrumentation.tool_call`, for the
  authorization machine :meth:`Instrumentation.flow`) — one INTERNAL span per run of a machine, named by the
  machine's definition (``MachineDefinition.span``), current while it runs, so a call's requests (the
  ``-32020`` relist and the retry, every input round) are its children; the run's audit events reach it
  through :meth:`Instrumentation.observe` as span events.

A span's status is ``ERROR`` exactly when ``error.type`` is set, with the JSON-RPC error's message as its
description (MCP semantic conventions, "Span status"). Exceptions are not recorded as span events: their
class is ``error.type``, and their text (which may quote an argument or a result) stays out of the trace.
Tool arguments and results are recorded only with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
set (read when the client is created).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace

# The API has no public way to ask whether a meter provider was set; the proxy is what it hands out until then.
from opentelemetry.metrics._internal import _ProxyMeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from .._core import telemetry as conventions
from .._core.constants import MCPFSM_VERSION
from .._core.errors import RpcError
from .._core.events import CallEvent
from .._core.events.authorization import AuthEvent
from .._core.results import ToolResult
from .._drivers.authorization import AuthorizationFlow
from .._drivers.tool_call import ToolCall
from .._machines.authorization import AUTHORIZATION
from .._machines.definition import MachineDefinition
from .._machines.tool_call import TOOL_CALL
from .._transports.base import Transport
from .._transports.http import HttpTransport
from .._transports.http.urls import parse_url, redacted
from .._transports.stdio import StdioTransport

__all__ = ["Instrumentation", "from_globals"]

R = TypeVar("R")

_SCOPE = "mcpfsm"
_UNSET_TRACERS = (trace.ProxyTracer, trace.NoOpTracer)
_UNSET_METER_PROVIDERS = (_ProxyMeterProvider, metrics.NoOpMeterProvider)


class _SessionState(Protocol):
    @property
    def version(self) -> str | None: ...

    @property
    def session_id(self) -> str | None: ...


def from_globals(endpoint: Transport | str) -> Instrumentation | None:
    """An :class:`Instrumentation` over the global tracer and meter providers; ``None`` when neither is set.

    ``endpoint`` is the client's transport, or the URL of its HTTP endpoint.
    """
    tracer: trace.Tracer | None = trace.get_tracer(_SCOPE, MCPFSM_VERSION)
    if isinstance(tracer, _UNSET_TRACERS):
        tracer = None
    provider = metrics.get_meter_provider()
    meter = None if isinstance(provider, _UNSET_METER_PROVIDERS) else provider.get_meter(_SCOPE, MCPFSM_VERSION)
    if tracer is None and meter is None:
        return None
    if isinstance(endpoint, str):
        url: str | None = redacted(parse_url(endpoint, "MCP server URL"))  # what HttpTransport.url will say
    else:
        url = endpoint.url if isinstance(endpoint, HttpTransport) else None
    attributes = conventions.endpoint_attributes(url, pipe=isinstance(endpoint, StdioTransport))
    capture = conventions.captures_content(os.environ.get(conventions.CAPTURE_CONTENT_ENV))
    return Instrumentation(tracer, meter, endpoint=attributes, capture=capture)


class Instrumentation:
    """Telemetry switched on for one client: a tracer, a meter, or both.

    Args:
        tracer: where spans go, or ``None`` (metrics only).
        meter: where the duration histogram goes, or ``None`` (spans only).
        endpoint: the connection's attributes (``network.transport``, ``server.address``, ...).
        capture: record tool arguments and results (opt-in: they may hold anything).
    """

    __slots__ = ("_capture", "_duration", "_endpoint", "_last", "_runs", "_tracer")

    def __init__(
        self,
        tracer: trace.Tracer | None,
        meter: metrics.Meter | None,
        *,
        endpoint: Mapping[str, Any],
        capture: bool = False,
    ) -> None:
        """Hold the providers' tracer and meter; the histogram is created here, once per client."""
        self._tracer = tracer
        self._duration = None
        if meter is not None:
            self._duration = meter.create_histogram(
                conventions.OPERATION_DURATION,
                unit="s",
                description="The duration of the MCP request as observed on the client, until its answer.",
                explicit_bucket_boundaries_advisory=conventions.DURATION_BUCKETS,
            )
        self._endpoint = dict(endpoint)
        self._capture = capture
        self._runs: dict[str, Span] = {}
        self._last: dict[str, CallEvent] = {}

    # --- the session layer ------------------------------------------------------------------------------

    async def request(
        self,
        session: _SessionState,
        method: str,
        params: Mapping[str, Any] | None,
        request_id: int,
        send: Callable[[Mapping[str, Any] | None], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """Send one request through ``send`` under its CLIENT span and record its duration.

        The span is the current span while ``send`` runs; ``params._meta`` gains the propagator's fields of
        that context. Whatever ``send`` raises propagates unchanged (cancellation included).
        """
        attributes = conventions.request_attributes(method, params, request_id)
        attributes.update(self._endpoint)
        carried = session.session_id
        span: Span | None = None
        token = None
        if self._tracer is not None:
            name = conventions.request_span_name(method, params)
            span = self._tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)
            current = trace.set_span_in_context(span)
            params = _with_context(params, current)
            if self._capture and method == "tools/call" and params is not None and "arguments" in params:
                span.set_attribute(conventions.ARGUMENTS, _json(params["arguments"]))
            token = otel_context.attach(current)
        failure: tuple[str, str | None, str | None] | None = None
        settled: str | None = None
        started = time.perf_counter()
        try:
            result = await send(params)
        except BaseException as exc:
            failure = _failure(exc)
            raise
        else:
            if method == "initialize" and session.version is None:
                # The handshake's version is settled after this layer returns: take it from the answer.
                version = result.get("protocolVersion")
                if isinstance(version, str):
                    settled = version
            if method == "tools/call" and result.get("isError") is True:
                failure = (conventions.TOOL_ERROR, None, None)
            if span is not None and self._capture and method == "tools/call":
                span.set_attribute(conventions.RESULT, _json(result))
            return result
        finally:
            elapsed = time.perf_counter() - started
            if token is not None:
                otel_context.detach(token)
            outcome = _outcome(session, carried, failure)
            if settled is not None:
                outcome[conventions.PROTOCOL_VERSION] = settled
            attributes.update(outcome)
            if span is not None:
                span.set_attributes(outcome)
                if failure is not None:
                    span.set_status(Status(StatusCode.ERROR, failure[2]))
                span.end()
            if self._duration is not None:
                kept = {key: value for key, value in attributes.items() if key in conventions.METRIC_KEYS}
                self._duration.record(elapsed, kept)

    # --- the machines' runs ---------------------------------------------------------------------------

    async def run(
        self,
        machine: MachineDefinition[Any, Any],
        run_id: str,
        attributes: Mapping[str, Any],
        body: Callable[[], Awaitable[R]],
        *,
        tool: str = "",
    ) -> R:
        """Run ``body`` under the INTERNAL span ``machine`` names (``{tool}`` replaced); its result, or what it raised.

        A machine whose definition names no span, or no tracer, runs ``body`` alone.
        """
        if self._tracer is None or machine.span is None:
            return await body()
        with self._tracer.start_as_current_span(
            machine.span.format(tool=tool),
            kind=SpanKind.INTERNAL,
            attributes=dict(attributes),
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            self._runs[run_id] = span
            try:
                return await body()
            except BaseException as exc:
                _fail(span, exc)
                raise
            finally:
                self._ended(run_id, span)

    async def tool_call(self, call: ToolCall) -> ToolResult:
        """Run ``call`` under its INTERNAL span ``tool-call {tool}``; its result, or what it raised, unchanged."""

        async def body() -> ToolResult:
            result = await call.run()
            span = self._runs.get(call.call_id)
            if result.is_error and span is not None:
                span.set_attribute(conventions.ERROR_TYPE, conventions.TOOL_ERROR)
                span.set_status(Status(StatusCode.ERROR))
            return result

        attributes = {conventions.TOOL_NAME: call.name, conventions.CALL_ID: call.call_id}
        return await self.run(TOOL_CALL, call.call_id, attributes, body, tool=call.name)

    async def flow(self, flow: AuthorizationFlow) -> None:
        """Run an authorization ``flow`` under its INTERNAL span ``authorization``; what it raised, unchanged."""
        attributes: dict[str, Any] = {conventions.CALL_ID: flow.flow_id, conventions.ENTRY: str(flow.entry)}
        if flow.tool:
            attributes[conventions.TOOL_NAME] = flow.tool
        await self.run(AUTHORIZATION, flow.flow_id, attributes, flow.run, tool=flow.tool)

    def _ended(self, run_id: str, span: Span) -> None:
        # The last state entered, and what an authorization flow learnt, once: each attribute set costs.
        del self._runs[run_id]
        last = self._last.pop(run_id, None)
        if last is not None:
            span.set_attribute(conventions.STATE, last.state)
            if isinstance(last, AuthEvent):
                span.set_attributes(conventions.flow_attributes(last))

    def observe(self, on_event: Callable[[CallEvent], object] | None) -> Callable[[CallEvent], object] | None:
        """The client's ``on_event``: each event becomes a span event of its run's span, then goes to ``on_event``."""
        if self._tracer is None:
            return on_event
        runs, last = self._runs, self._last

        def sink(event: CallEvent) -> None:
            span = runs.get(event.call_id)
            if span is not None:
                span.add_event(event.state, conventions.event_attributes(event))
                last[event.call_id] = event
            if on_event is not None:
                on_event(event)

        return sink


def _with_context(params: Mapping[str, Any] | None, current: otel_context.Context) -> Mapping[str, Any] | None:
    # MCP semantic conventions, "Context propagation": the propagator's fields go into params._meta, unprefixed.
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=current)
    if not carrier:
        return params
    copied = dict(params or {})
    meta = copied.get("_meta")
    copied["_meta"] = {**meta, **carrier} if isinstance(meta, Mapping) else carrier
    return copied


def _failure(error: BaseException) -> tuple[str, str | None, str | None]:
    # error.type, rpc.response.status_code, and the span status description: the server's JSON-RPC message
    # only, since mcpfsm's own messages may quote an argument (MirroringError) or a result (OutputValidationError).
    if isinstance(error, RpcError):
        return conventions.error_type(error), str(error.code), error.message
    return conventions.error_type(error), None, None


def _outcome(
    session: _SessionState, carried: str | None, failure: tuple[str, str | None, str | None] | None
) -> dict[str, Any]:
    outcome: dict[str, Any] = {}
    if session.version is not None:
        outcome[conventions.PROTOCOL_VERSION] = session.version
    # The session the request carried, or the one its answer opened (initialize).
    session_id = carried if carried is not None else session.session_id
    if session_id is not None:
        outcome[conventions.SESSION_ID] = session_id
    if failure is not None:
        outcome[conventions.ERROR_TYPE] = failure[0]
        if failure[1] is not None:
            outcome[conventions.STATUS_CODE] = failure[1]
    return outcome


def _fail(span: Span, error: BaseException) -> None:
    kind, _, description = _failure(error)
    span.set_attribute(conventions.ERROR_TYPE, kind)
    span.set_status(Status(StatusCode.ERROR, description))


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
