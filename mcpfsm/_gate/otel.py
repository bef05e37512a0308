"""OpenTelemetry for the gate: a span per request, its events, two metrics (docs/gate.md, docs/telemetry.md).

Imported only by :func:`probe`, once an application has loaded OpenTelemetry and configured a tracer or meter
provider (the ``otel`` extra); every name and value recorded comes from the pure ``mcpfsm._core.telemetry``.

- :meth:`GateTelemetry.run` — one INTERNAL span per request, named by the gate machine's definition (``gate``), the
  child of the W3C context the request carried (``traceparent``, read with the global propagator); the request's
  ``GateEvent`` values become its span events (:meth:`GateTelemetry.observe`) and its last one its attributes;
  ``mcpfsm.gate.requests`` (a counter) and ``mcpfsm.gate.duration`` (seconds, until the answer ended) by method,
  end state and ``error.type``. A span's status is ``ERROR`` for a refused request.

Exceptions are not recorded as span events (their text may quote a request); a header's value never reaches a
span, an event or a metric.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from opentelemetry import metrics, propagate, trace
from opentelemetry.metrics._internal import _ProxyMeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from .._core import telemetry as conventions
from .._core.constants import MCPFSM_VERSION
from .._core.events import CallEvent
from .._core.events.gate import GateEvent
from .._machines.gate import GATE

__all__ = ["GateTelemetry", "probe"]

R = TypeVar("R")

_SCOPE = "mcpfsm"
_UNSET_TRACERS = (trace.ProxyTracer, trace.NoOpTracer)
_UNSET_METER_PROVIDERS = (_ProxyMeterProvider, metrics.NoOpMeterProvider)


def probe() -> GateTelemetry | None:
    """Telemetry from the global OpenTelemetry providers, or ``None`` when neither a tracer nor a meter is set."""
    tracer: trace.Tracer | None = trace.get_tracer(_SCOPE, MCPFSM_VERSION)
    if isinstance(tracer, _UNSET_TRACERS):
        tracer = None
    provider = metrics.get_meter_provider()
    meter = None if isinstance(provider, _UNSET_METER_PROVIDERS) else provider.get_meter(_SCOPE, MCPFSM_VERSION)
    if tracer is None and meter is None:
        return None
    return GateTelemetry(tracer, meter)


class GateTelemetry:
    """Telemetry switched on for one gate: a tracer, a meter, or both."""

    __slots__ = ("_count", "_duration", "_last", "_spans", "_tracer")

    def __init__(self, tracer: trace.Tracer | None, meter: metrics.Meter | None) -> None:
        """Hold the providers' tracer and meter; the two instruments are created here, once per gate."""
        self._tracer = tracer
        self._count = self._duration = None
        if meter is not None:
            self._count = meter.create_counter(
                conventions.GATE_REQUESTS, unit="{request}", description="Requests through the gate, by outcome."
            )
            self._duration = meter.create_histogram(
                conventions.GATE_DURATION,
                unit="s",
                description="A request's time through the gate, its answer included.",
                explicit_bucket_boundaries_advisory=conventions.DURATION_BUCKETS,
            )
        self._spans: dict[str, Span] = {}
        self._last: dict[str, CallEvent] = {}

    async def run(self, run_id: str, fields: list[tuple[bytes, bytes]], body: Callable[[], Awaitable[R]]) -> R:
        """Run ``body`` (one request's run, ``run_id``) under its span and record it; its result, or what it raised."""
        began = time.perf_counter()
        try:
            if self._tracer is None:
                return await body()
            carrier = {name.decode("latin-1"): value.decode("latin-1") for name, value in fields}
            parent = propagate.extract(carrier)
            with self._tracer.start_as_current_span(
                GATE.span or "gate",
                context=parent,
                kind=SpanKind.INTERNAL,
                attributes={conventions.CALL_ID: run_id},
                record_exception=False,
                set_status_on_exception=False,
            ) as span:
                self._spans[run_id] = span
                try:
                    return await body()
                except BaseException as exc:
                    span.set_attribute(conventions.ERROR_TYPE, type(exc).__name__)
                    span.set_status(Status(StatusCode.ERROR))
                    raise
                finally:
                    del self._spans[run_id]
                    last = self._last.get(run_id)
                    if last is not None:
                        span.set_attributes(conventions.gate_attributes(last))
                        if last.state == "rejected":
                            span.set_status(Status(StatusCode.ERROR))
        finally:
            self._record(run_id, time.perf_counter() - began)

    def _record(self, run_id: str, seconds: float) -> None:
        last = self._last.pop(run_id, None)
        if last is None or (self._count is None and self._duration is None):
            return
        attributes = {
            key: value
            for key, value in conventions.gate_attributes(last).items()
            if key in conventions.GATE_METRIC_KEYS
        }
        if self._count is not None:
            self._count.add(1, attributes)
        if self._duration is not None:
            self._duration.record(seconds, attributes)

    def observe(self, on_event: Callable[[GateEvent], object] | None) -> Callable[[GateEvent], object]:
        """The gate's ``on_event``: each event becomes a span event of its request's span, then goes to ``on_event``."""
        spans, last = self._spans, self._last

        def sink(event: GateEvent) -> None:
            last[event.call_id] = event
            span = spans.get(event.call_id)
            if span is not None:
                span.add_event(event.state, conventions.event_attributes(event))
            if on_event is not None:
                on_event(event)

        return sink
