"""The gate's OpenTelemetry: a span per request under the caller's traceparent, its events, two metrics; no value."""

from __future__ import annotations

import json
import sys

from mcpfsm._gate.middleware import HeaderGate
from tests.gate.conftest import asgi, call, headers, request, upstream_app
from tests.support.oteltest import configured, traceparent

LIE = "analytics-lie"


async def test_each_request_is_a_span_with_its_events_and_metrics() -> None:
    with configured() as otel:
        app = upstream_app()
        gate = HeaderGate(app)
        with otel.tracer.start_as_current_span("client") as client:
            parent = traceparent(client)  # type: ignore[arg-type]
        traced = [("traceparent", parent)]
        assert (await asgi(gate, [*headers("tools/list"), *traced], request("tools/list"))).status == 200
        lie = [*headers(name="query", Database=LIE), *traced]
        assert (await asgi(gate, lie, call("query", {"database": "prod", "sql": "s"}))).status == 400
        spans = [span for span in otel.spans() if span.name == "gate"]
        assert len(spans) == 2
        listed, refused = spans
        assert listed.parent is not None and listed.parent.span_id == client.get_span_context().span_id
        assert dict(listed.attributes or {})["mcpfsm.state"] == "forwarded"
        assert [event.name for event in listed.events] == ["received", "parsed", "schema_known", "checked", "forwarded"]
        attributes = dict(refused.attributes or {})
        assert {key: attributes[key] for key in attributes if key != "mcpfsm.call_id"} == {
            "mcpfsm.state": "rejected",
            "mcp.method.name": "tools/call",
            "gen_ai.tool.name": "query",
            "error.type": "-32020",
            "http.response.status_code": 400,
            "mcpfsm.gate.header": "Mcp-Param-Database",
        }
        assert refused.status.status_code.name == "ERROR"
        everything = json.dumps([dict(span.attributes or {}) for span in spans]) + str(
            [(event.name, dict(event.attributes or {})) for span in spans for event in span.events]
        )
        assert LIE not in everything
        data = otel.reader.get_metrics_data()
        assert data is not None
        points = {
            metric.name: [
                (dict(point.attributes), getattr(point, "value", None) or point.count)
                for point in metric.data.data_points
            ]
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name.startswith("mcpfsm.gate.")
        }
        rejected = {"mcp.method.name": "tools/call", "mcpfsm.state": "rejected", "error.type": "-32020"}
        forwarded = {"mcp.method.name": "tools/list", "mcpfsm.state": "forwarded"}
        expected = sorted([(sorted(rejected.items()), 1), (sorted(forwarded.items()), 1)])
        for name in ("mcpfsm.gate.requests", "mcpfsm.gate.duration"):
            assert sorted((sorted(attrs.items()), value) for attrs, value in points[name]) == expected


async def test_without_a_provider_nothing_is_built() -> None:
    gate = HeaderGate(upstream_app())
    assert (await asgi(gate, headers("tools/list"), request("tools/list"))).status == 200
    assert gate._telemetry is None and ("opentelemetry.sdk.trace" in sys.modules) in (True, False)
