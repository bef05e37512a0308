"""OpenTelemetry for the telemetry tests: the SDK's in-memory exporter and reader as the global providers.

:func:`configured` sets them for one test and unsets them afterwards (the global providers can be set only
once per process, so this resets the API's globals, as OpenTelemetry's own test utilities do); clients
created meanwhile take them. :func:`tree` turns the finished spans into nested dicts to compare whole.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import opentelemetry.metrics._internal as metrics_internal
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once


@dataclass
class Otel:
    """The providers of one test and what they collected."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer: trace.Tracer

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def tree(self) -> list[dict[str, Any]]:
        return tree(self.spans())

    def histogram(self, name: str) -> tuple[Any, list[Any]]:
        """The metric ``name`` (its one instrument) and its data points."""
        data = self.reader.get_metrics_data()
        assert data is not None
        found = [
            metric
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
        ]
        assert len(found) == 1, found
        return found[0], list(found[0].data.data_points)


def _reset() -> None:
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    trace._PROXY_TRACER_PROVIDER = trace.ProxyTracerProvider()
    metrics_internal._METER_PROVIDER_SET_ONCE = Once()
    metrics_internal._METER_PROVIDER = None
    metrics_internal._PROXY_METER_PROVIDER = metrics_internal._ProxyMeterProvider()


@contextmanager
def configured(*, spans: bool = True, meters: bool = True) -> Iterator[Otel]:
    """Global SDK providers (a tracer provider with ``spans``, a meter provider with ``meters``) for the block."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(shutdown_on_exit=False)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    _reset()
    if spans:
        trace.set_tracer_provider(tracer_provider)
    if meters:
        metrics.set_meter_provider(meter_provider)
    try:
        yield Otel(exporter, reader, tracer_provider.get_tracer("tests"))
    finally:
        _reset()
        tracer_provider.shutdown()
        meter_provider.shutdown()


def tree(spans: Sequence[ReadableSpan]) -> list[dict[str, Any]]:
    """Spans as nested dicts, children in start order; a span whose parent is not among them is a root."""
    known = {span.context.span_id for span in spans}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in sorted(spans, key=lambda span: span.start_time or 0):
        parent = span.parent.span_id if span.parent is not None and span.parent.span_id in known else None
        children.setdefault(parent, []).append(span)

    def node(span: ReadableSpan) -> dict[str, Any]:
        return {
            "name": span.name,
            "kind": span.kind.name,
            "attributes": _plain(dict(span.attributes or {})),
            "events": [(event.name, _plain(dict(event.attributes or {}))) for event in span.events],
            "status": (span.status.status_code.name, span.status.description),
            "children": [node(child) for child in children.get(span.context.span_id, [])],
        }

    return [node(span) for span in children.get(None, [])]


def _plain(attributes: dict[str, Any]) -> dict[str, Any]:
    return {key: list(value) if isinstance(value, tuple) else value for key, value in attributes.items()}


def traceparent(span: ReadableSpan) -> str:
    """The W3C ``traceparent`` of ``span``."""
    context = span.context
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
