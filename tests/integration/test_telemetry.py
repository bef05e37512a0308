"""OpenTelemetry (README, "Telemetry"): whole span trees, the trace context the server receives, the metric.

Real parts only: the SDK's in-memory exporter and reader as the global providers (tests/support/oteltest.py), the
official-SDK peer over HTTP, and a stdio server in a subprocess that logs what each request carried
(tests/support/stdio_traced.py). Every test runs under an ``agent`` span of its own, so its spans form one tree.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import trio
from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

import mcpfsm
from mcpfsm._client.assembly import HttpServer, Parts
from mcpfsm._client.options import ClientOptions
from mcpfsm._core.telemetry import DURATION_BUCKETS
from tests.support.oteltest import Otel, configured, traceparent
from tests.support.peer.fixtures import REPO_ROOT, HttpPeer

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
SQL: Final = {"query": "select 1", "database": "analytics"}
PIPE: Final = {"network.transport": "pipe"}


@pytest.fixture
def fresh(dual: HttpPeer) -> HttpPeer:
    dual.control({"action": "reset"})
    return dual


@pytest.fixture
def otel() -> Iterator[Otel]:
    with configured() as providers:
        yield providers


def http(dual: HttpPeer) -> dict[str, Any]:
    port = int(dual.url.rsplit(":", 1)[1].split("/", 1)[0])
    return {
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "server.address": "127.0.0.1",
        "server.port": port,
    }


def node(
    name: str,
    kind: str,
    attributes: dict[str, Any],
    *,
    events: list[tuple[str, dict[str, Any]]] | None = None,
    status: tuple[str, str | None] = ("UNSET", None),
    children: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "attributes": attributes,
        "events": events or [],
        "status": status,
        "children": children or [],
    }


def request(
    method: str,
    request_id: int,
    endpoint: dict[str, Any],
    *,
    tool: str | None = None,
    version: str | None = MODERN,
    session: str | None = None,
    error: str | None = None,
    message: str | None = None,
    children: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The CLIENT span of one request, as the MCP semantic conventions describe it."""
    attributes: dict[str, Any] = {"mcp.method.name": method, "jsonrpc.request.id": str(request_id)}
    if tool is not None:
        attributes |= {"gen_ai.tool.name": tool, "gen_ai.operation.name": "execute_tool"}
    attributes |= endpoint
    if version is not None:
        attributes["mcp.protocol.version"] = version
    if session is not None:
        attributes["mcp.session.id"] = session
    status: tuple[str, str | None] = ("UNSET", None)
    if error is not None:
        attributes["error.type"] = error
        if error.lstrip("-").isdigit():
            attributes["rpc.response.status_code"] = error
        status = ("ERROR", message)
    name = method if tool is None else f"{method} {tool}"
    return node(name, "CLIENT", attributes, status=status, children=children)


def event(state: str, trigger: str | None, attempt: int = 1, **extra: Any) -> tuple[str, dict[str, Any]]:
    attributes: dict[str, Any] = {"mcpfsm.attempt": attempt}
    if trigger is not None:
        attributes["mcpfsm.trigger"] = trigger
    return state, attributes | {key.replace("_", "."): value for key, value in extra.items()}


def tool_call(
    tool: str,
    call_id: str,
    state: str,
    events: list[tuple[str, dict[str, Any]]],
    children: list[dict[str, Any]],
    *,
    error: str | None = None,
    message: str | None = None,
) -> dict[str, Any]:
    attributes = {"gen_ai.tool.name": tool, "mcpfsm.call_id": call_id, "mcpfsm.state": state}
    status: tuple[str, str | None] = ("UNSET", None)
    if error is not None:
        attributes["error.type"] = error
        status = ("ERROR", message)
    return node(f"tool-call {tool}", "INTERNAL", attributes, events=events, status=status, children=children)


def agent(*children: dict[str, Any]) -> list[dict[str, Any]]:
    return [node("agent", "INTERNAL", {}, children=list(children))]


PLAIN: Final = [
    event("resolving", None),
    event("planning", "resolved"),
    event("sending", "planned"),
    event("succeeded", "answered"),
]


def stdio(log: Path, **options: Any) -> mcpfsm.Client:
    argv = [sys.executable, "-m", "tests.support.stdio_traced", str(log)]
    return mcpfsm.Client.stdio(argv, cwd=str(REPO_ROOT), **options)


def stdio_log(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def by_id(otel: Otel) -> dict[str, Any]:
    """The finished CLIENT spans by their ``jsonrpc.request.id`` (an int, as the server sees it)."""
    return {
        int(str(span.attributes["jsonrpc.request.id"])): span
        for span in otel.spans()
        if span.kind is trace.SpanKind.CLIENT and span.attributes is not None
    }


# --- HTTP, against the official-SDK peer ----------------------------------------------------------


async def test_a_plain_call_over_http_is_one_tree_and_its_context_reaches_the_server(
    otel: Otel, fresh: HttpPeer
) -> None:
    events: list[mcpfsm.CallEvent] = []
    with otel.tracer.start_as_current_span("agent"):
        async with mcpfsm.Client.http(fresh.url, on_event=events.append) as client:
            sql = (await client.tools()).get("execute-sql")
            assert sql is not None
            result = await sql.call(SQL)
    assert result.text == "executed 'select 1' on 'analytics'"
    endpoint = http(fresh)
    assert otel.tree() == agent(
        request("server/discover", 1, endpoint),
        request("tools/list", 2, endpoint),
        tool_call(
            "execute-sql",
            events[0].call_id,
            "succeeded",
            PLAIN,
            [request("tools/call", 3, endpoint, tool="execute-sql")],
        ),
    )
    # The user's on_event still gets every event.
    assert [e.state for e in events] == ["resolving", "planning", "sending", "succeeded"]
    spans = by_id(otel)
    assert [(e["jsonrpc_method"], e["id"], e["trace"]) for e in fresh.log()] == [
        ("server/discover", 1, {"traceparent": traceparent(spans[1])}),
        ("tools/list", 2, {"traceparent": traceparent(spans[2])}),
        ("tools/call", 3, {"traceparent": traceparent(spans[3])}),
    ]


async def test_a_32020_recovery_over_http_relists_and_retries_under_the_call_span(otel: Otel, fresh: HttpPeer) -> None:
    with otel.tracer.start_as_current_span("agent"):
        async with mcpfsm.Client.http(fresh.url) as client:
            sql = (await client.tools()).get("execute-sql")
            assert sql is not None
            fresh.control({"action": "evolve"})
            await sql.call({**SQL, "region": "eu-west1"})
            call_id = otel.spans()[-1].attributes  # the last finished span so far: the retry's request
    assert call_id is not None
    [root] = otel.tree()
    call = root["children"][2]
    endpoint = http(fresh)
    mismatch = "Mcp-Param-Region header is missing but the request body's 'region' argument is present"
    assert otel.tree() == agent(
        request("server/discover", 1, endpoint),
        request("tools/list", 2, endpoint),
        tool_call(
            "execute-sql",
            call["attributes"]["mcpfsm.call_id"],
            "succeeded",
            [
                event("resolving", None),
                event("planning", "resolved"),
                event("sending", "planned"),
                event("relisting", "mismatched", error_type="-32020"),
                event("comparing", "relisted"),
                event("retrying", "changed", 2),
                event("succeeded", "answered", 2),
            ],
            [
                request("tools/call", 3, endpoint, tool="execute-sql", error="-32020", message=mismatch),
                request("tools/list", 4, endpoint),
                request("tools/call", 5, endpoint, tool="execute-sql"),
            ],
        ),
    )
    spans = by_id(otel)
    sent = [(e["jsonrpc_method"], e["id"], e["trace"]) for e in fresh.log() if e["id"] is not None]
    assert sent == [
        (method, number, {"traceparent": traceparent(spans[number])})
        for method, number in [
            ("server/discover", 1),
            ("tools/list", 2),
            ("tools/call", 3),
            ("tools/list", 4),
            ("tools/call", 5),
        ]
    ]


async def test_a_failed_call_over_http_marks_the_call_and_its_request(otel: Otel, fresh: HttpPeer) -> None:
    fresh.control({"action": "error", "tool": "echo", "code": -32603, "message": "deliberate failure"})
    with otel.tracer.start_as_current_span("agent"):
        async with mcpfsm.Client.http(fresh.url, protocol=MODERN) as client:
            with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32603: deliberate failure$"):
                await client.call_tool("echo", {"text": "hi"})
            failed = await client.call_tool("fail")
    assert failed.is_error
    # A pinned version sends no server/discover.
    [root] = otel.tree()
    first, second = (child["attributes"]["mcpfsm.call_id"] for child in root["children"])
    endpoint = http(fresh)
    assert otel.tree() == agent(
        tool_call(
            "echo",
            first,
            "failed",
            [
                event("resolving", None),
                event("planning", "resolved"),
                event("sending", "planned"),
                event("failed", "errored", error_type="-32603"),
            ],
            [request("tools/call", 1, endpoint, tool="echo", error="-32603", message="deliberate failure")],
            error="-32603",
            message="deliberate failure",
        ),
        # isError: true is a call that succeeded with a tool error (MCP semantic conventions: "tool_error").
        tool_call(
            "fail",
            second,
            "succeeded",
            PLAIN,
            [request("tools/call", 2, endpoint, tool="fail", error="tool_error")],
            error="tool_error",
        ),
    )


async def test_a_legacy_session_names_its_session_and_initialize_has_a_span(otel: Otel, fresh: HttpPeer) -> None:
    with otel.tracer.start_as_current_span("agent"):
        async with mcpfsm.Client.http(fresh.url, protocol=LEGACY) as client:
            echoed = await client.call_tool("echo", {"text": "hi"})
            session = client.session_id
    assert echoed.text == "hi"
    assert session is not None
    [root] = otel.tree()
    endpoint = http(fresh)
    assert otel.tree() == agent(
        request("initialize", 1, endpoint, version=LEGACY, session=session),
        tool_call(
            "echo",
            root["children"][1]["attributes"]["mcpfsm.call_id"],
            "succeeded",
            PLAIN,
            [request("tools/call", 2, endpoint, tool="echo", version=LEGACY, session=session)],
        ),
    )
    spans = by_id(otel)
    # The legacy era carries the context in params._meta too; notifications and the GET stream carry none.
    assert [(e["http_method"], e["jsonrpc_method"], e["trace"]) for e in fresh.log()] == [
        ("POST", "initialize", {"traceparent": traceparent(spans[1])}),
        ("POST", "notifications/initialized", None),
        ("GET", None, None),
        ("POST", "tools/call", {"traceparent": traceparent(spans[2])}),
        ("DELETE", None, None),
    ]


async def test_input_rounds_are_requests_of_the_call(otel: Otel, fresh: HttpPeer) -> None:
    async def on_elicitation(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Grace"}}

    with otel.tracer.start_as_current_span("agent"):
        async with mcpfsm.Client.http(fresh.url, protocol=MODERN, on_elicitation=on_elicitation) as client:
            result = await client.call_tool("ask-name", {})
    assert result.text == "Hello, Grace!"
    [root] = otel.tree()
    endpoint = http(fresh)
    assert otel.tree() == agent(
        tool_call(
            "ask-name",
            root["children"][0]["attributes"]["mcpfsm.call_id"],
            "succeeded",
            [
                event("resolving", None),
                event("planning", "resolved"),
                event("sending", "planned"),
                event("awaiting_input", "input_required", mcpfsm_round=1),
                event("resending", "gathered", mcpfsm_round=1),
                event("succeeded", "answered", mcpfsm_round=1),
            ],
            [request("tools/call", 1, endpoint, tool="ask-name"), request("tools/call", 2, endpoint, tool="ask-name")],
        ),
    )


async def test_prompts_and_resources_name_their_target(otel: Otel, fresh: HttpPeer) -> None:
    with otel.tracer.start_as_current_span("agent"):
        async with mcpfsm.Client.http(fresh.url, protocol=MODERN) as client:
            prompt = await client.get_prompt("greet", {"name": "Ada"})
            readme = await client.read_resource("res://static/readme")
            with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32602: Unknown resource: res://nope$"):
                await client.read_resource("res://nope")
    assert prompt.messages[0]["content"]["text"] == "Say hello to Ada in a plain style."
    assert readme.contents[0]["text"] == "hello from a static resource"
    endpoint = http(fresh)

    def read(request_id: int, uri: str, **failure: Any) -> dict[str, Any]:
        span = request("resources/read", request_id, endpoint, **failure)
        span["attributes"]["mcp.resource.uri"] = uri
        return span

    greet = request("prompts/get", 1, endpoint)
    greet["name"] = "prompts/get greet"
    greet["attributes"]["gen_ai.prompt.name"] = "greet"
    assert otel.tree() == agent(
        greet,
        read(2, "res://static/readme"),
        read(3, "res://nope", error="-32602", message="Unknown resource: res://nope"),
    )


async def test_tracestate_and_baggage_of_the_callers_context_reach_the_server(otel: Otel, fresh: HttpPeer) -> None:
    remote = SpanContext(
        trace_id=0x4BF92F3577B34DA6A3CE929D0E0E4736,
        span_id=0x00F067AA0BA902B7,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=TraceState([("rojo", "00f067aa0ba902b7")]),
    )
    parent = trace.set_span_in_context(NonRecordingSpan(remote))
    token = otel_context.attach(baggage.set_baggage("tenant", "acme", context=parent))
    try:
        async with mcpfsm.Client.http(fresh.url, protocol=MODERN) as client:
            await client.call_tool("echo", {"text": "hi"})
    finally:
        otel_context.detach(token)
    spans = by_id(otel)
    assert {span.context.trace_id for span in otel.spans()} == {remote.trace_id}
    assert [(e["jsonrpc_method"], e["trace"]) for e in fresh.log()] == [
        (
            method,
            {
                "traceparent": traceparent(spans[number]),
                "tracestate": "rojo=00f067aa0ba902b7",
                "baggage": "tenant=acme",
            },
        )
        for method, number in [("tools/call", 1)]
    ]


async def test_many_concurrent_calls_each_parent_their_own_request(otel: Otel, fresh: HttpPeer) -> None:
    async with mcpfsm.Client.http(fresh.url, protocol=MODERN) as client, trio.open_nursery() as nursery:
        for number in range(20):
            nursery.start_soon(client.call_tool, "echo", {"text": str(number)})
    calls = [span for span in otel.tree() if span["name"] == "tool-call echo"]
    assert len(calls) == 20
    assert [len(call["children"]) for call in calls] == [1] * 20
    ids = sorted(int(call["children"][0]["attributes"]["jsonrpc.request.id"]) for call in calls)
    assert ids == list(range(1, 21))


async def test_arguments_and_results_are_recorded_only_on_opt_in(
    otel: Otel, fresh: HttpPeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with mcpfsm.Client.http(fresh.url, protocol=MODERN) as client:
        await client.call_tool("echo", {"text": "secret"})
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "span_only")
    async with mcpfsm.Client.http(fresh.url, protocol=MODERN) as client:
        await client.call_tool("echo", {"text": "shared"})
    recorded = [
        {
            key: json.loads(str(value))
            for key, value in (span.attributes or {}).items()
            if key.startswith("gen_ai.tool.call.")
        }
        for span in otel.spans()
        if span.name == "tools/call echo"
    ]
    assert recorded == [
        {},
        {
            "gen_ai.tool.call.arguments": {"text": "shared"},
            "gen_ai.tool.call.result": {
                "content": [{"type": "text", "text": "shared"}],
                "isError": False,
                "resultType": "complete",
                "_meta": {
                    "io.modelcontextprotocol/serverInfo": {
                        "name": "mcpfsm-test-peer", "title": "mcpfsm test peer", "version": "1.0.0"
                    }
                },
            },
        },
    ]


async def test_the_duration_histogram_has_one_point_per_method_and_outcome(otel: Otel, fresh: HttpPeer) -> None:
    fresh.control({"action": "error", "tool": "echo", "code": -32603, "message": "deliberate failure"})
    async with mcpfsm.Client.http(fresh.url, protocol=MODERN) as client:
        with pytest.raises(mcpfsm.RpcError):
            await client.call_tool("echo", {"text": "hi"})
        await client.call_tool("echo", {"text": "hi"})
        await client.call_tool("echo", {"text": "again"})
    metric, points = otel.histogram("mcp.client.operation.duration")
    assert (metric.unit, metric.description) == (
        "s",
        "The duration of the MCP request as observed on the client, until its answer.",
    )
    endpoint = http(fresh)
    echo = {"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool"}
    assert sorted(((dict(p.attributes), p.count) for p in points), key=lambda pair: pair[1]) == [
        (
            {
                **echo,
                **endpoint,
                "mcp.protocol.version": MODERN,
                "error.type": "-32603",
                "rpc.response.status_code": "-32603",
            },
            1,
        ),
        ({**echo, **endpoint, "mcp.protocol.version": MODERN}, 2),
    ]
    assert {tuple(p.explicit_bounds) for p in points} == {DURATION_BUCKETS}
    assert all(0 < p.min <= p.max < 60 for p in points)


async def test_metrics_alone_record_durations_without_spans_or_context(fresh: HttpPeer) -> None:
    with configured(spans=False) as otel:
        async with mcpfsm.Client.http(fresh.url, protocol=MODERN) as client:
            await client.call_tool("echo", {"text": "hi"})
        _, points = otel.histogram("mcp.client.operation.duration")
    assert [(p.attributes["mcp.method.name"], p.count) for p in points] == [("tools/call", 1)]
    assert [e["trace"] for e in fresh.log()] == [None]


async def test_a_cancelled_call_ends_its_spans_as_cancelled(otel: Otel, fresh: HttpPeer) -> None:
    with trio.CancelScope() as scope:

        def progressed(method: str, params: dict[str, Any]) -> None:
            if method == "notifications/progress":
                scope.cancel()

        async with mcpfsm.Client.http(fresh.url, protocol=MODERN, on_notification=progressed) as client:
            await client.call_tool("slow", {"seconds": 30})
    assert scope.cancelled_caught
    [call] = [span for span in otel.tree() if span["name"] == "tool-call slow"]
    assert (call["attributes"]["mcpfsm.state"], call["attributes"]["error.type"], call["status"]) == (
        "cancelled",
        "Cancelled",
        ("ERROR", None),
    )
    assert call["events"][-1] == event("cancelled", "cancelled", error_type="Cancelled")
    [sent] = call["children"]
    assert (sent["name"], sent["attributes"]["error.type"], sent["status"]) == (
        "tools/call slow",
        "Cancelled",
        ("ERROR", None),
    )


# --- stdio, against a subprocess that logs what it received ----------------------------------------


async def test_a_plain_call_over_stdio(otel: Otel, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with otel.tracer.start_as_current_span("agent"):
        async with stdio(log) as client:
            echoed = await client.call_tool("echo", {"text": "hi"})
    assert echoed.text == "hi"
    [root] = otel.tree()
    assert otel.tree() == agent(
        request("server/discover", 1, PIPE),
        tool_call(
            "echo",
            root["children"][1]["attributes"]["mcpfsm.call_id"],
            "succeeded",
            PLAIN,
            [request("tools/call", 2, PIPE, tool="echo")],
        ),
    )
    spans = by_id(otel)
    assert stdio_log(log) == [
        {"method": "server/discover", "id": 1, "name": None, "trace": {"traceparent": traceparent(spans[1])}},
        {"method": "tools/call", "id": 2, "name": "echo", "trace": {"traceparent": traceparent(spans[2])}},
    ]


async def test_a_32020_over_stdio_relists_under_the_call_span_and_fails_unchanged(otel: Otel, tmp_path: Path) -> None:
    # stdio carries no headers: the recovery's fresh plan equals the old one, so there is no retry (SEP-2243).
    log = tmp_path / "requests.jsonl"
    with otel.tracer.start_as_current_span("agent"):
        async with stdio(log) as client:
            with pytest.raises(mcpfsm.HeaderMismatchError, match=r"^JSON-RPC error -32020: Header mismatch$"):
                await client.call_tool("stale", {"text": "hi"})
    [root] = otel.tree()
    assert otel.tree() == agent(
        request("server/discover", 1, PIPE),
        tool_call(
            "stale",
            root["children"][1]["attributes"]["mcpfsm.call_id"],
            "failed",
            [
                event("resolving", None),
                event("planning", "resolved"),
                event("sending", "planned"),
                event("relisting", "mismatched", error_type="-32020"),
                event("comparing", "relisted"),
                event("failed", "unchanged", error_type="-32020"),
            ],
            [
                request("tools/call", 2, PIPE, tool="stale", error="-32020", message="Header mismatch"),
                request("tools/list", 3, PIPE),
            ],
            error="-32020",
            message="Header mismatch",
        ),
    )
    spans = by_id(otel)
    assert [(entry["method"], entry["trace"]) for entry in stdio_log(log)] == [
        ("server/discover", {"traceparent": traceparent(spans[1])}),
        ("tools/call", {"traceparent": traceparent(spans[2])}),
        ("tools/list", {"traceparent": traceparent(spans[3])}),
    ]


async def test_a_failed_call_over_stdio(otel: Otel, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with otel.tracer.start_as_current_span("agent"):
        async with stdio(log) as client:
            with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32603: deliberate failure$"):
                await client.call_tool("broken", {"text": "hi"})
            oops = await client.call_tool("oops", {"text": "hi"})
    assert oops.is_error
    [root] = otel.tree()
    first, second = (child["attributes"]["mcpfsm.call_id"] for child in root["children"][1:])
    assert otel.tree() == agent(
        request("server/discover", 1, PIPE),
        tool_call(
            "broken",
            first,
            "failed",
            [
                event("resolving", None),
                event("planning", "resolved"),
                event("sending", "planned"),
                event("failed", "errored", error_type="-32603"),
            ],
            [request("tools/call", 2, PIPE, tool="broken", error="-32603", message="deliberate failure")],
            error="-32603",
            message="deliberate failure",
        ),
        tool_call(
            "oops",
            second,
            "succeeded",
            PLAIN,
            [request("tools/call", 3, PIPE, tool="oops", error="tool_error")],
            error="tool_error",
        ),
    )
    spans = by_id(otel)
    assert [entry["trace"] for entry in stdio_log(log)] == [{"traceparent": traceparent(spans[n])} for n in (1, 2, 3)]


# --- switched off ---------------------------------------------------------------------------------


async def test_with_opentelemetry_loaded_but_no_provider_nothing_is_built(fresh: HttpPeer) -> None:
    assert "opentelemetry.trace" in sys.modules
    made = Parts(HttpServer(url=fresh.url), ClientOptions(protocol=MODERN))
    assert made.telemetry is None and made.session.telemetry is None
    async with mcpfsm.Client.http(fresh.url, protocol=MODERN) as client:
        await client.call_tool("echo", {"text": "hi"})
    assert [e["trace"] for e in fresh.log()] == [None]


async def test_a_client_created_before_the_providers_are_configured_stays_without_telemetry(fresh: HttpPeer) -> None:
    client = mcpfsm.Client.http(fresh.url, protocol=MODERN)
    with configured() as otel:
        async with client:
            await client.call_tool("echo", {"text": "hi"})
        assert otel.spans() == []
    assert [e["trace"] for e in fresh.log()] == [None]


NO_OTEL: Final = """
import sys
sys.modules["opentelemetry"] = None  # the extra is not installed: every import of it fails
import trio, mcpfsm

async def main():
    async with mcpfsm.Client.http(sys.argv[1], protocol="2026-07-28") as client:
        print(client._telemetry, (await client.call_tool("echo", {"text": "hi"})).text)

trio.run(main)
print(sorted(name for name in sys.modules if name.startswith("opentelemetry")))
"""


def test_without_the_extra_calls_work_and_nothing_of_opentelemetry_is_loaded(fresh: HttpPeer, tmp_path: Path) -> None:
    import subprocess

    script = tmp_path / "no_otel.py"
    script.write_text(NO_OTEL, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), fresh.url], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT
    )
    assert (done.returncode, done.stderr, done.stdout.splitlines()) == (0, "", ["None hi", "['opentelemetry']"])
    assert [e["trace"] for e in fresh.log()] == [None]


def test_import_mcpfsm_does_not_import_opentelemetry() -> None:
    import subprocess

    code = "import sys, mcpfsm; print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert (done.returncode, done.stderr, done.stdout) == (0, "", "[]\n")


# --- authorization ----------------------------------------------------------------------------------


HEADLESS_FLOW: Final = [
    event("starting", None),
    event("discovering_resource", "unauthorized"),
    event("discovering_issuer", "resource_found"),
    event("registering", "issuer_found"),
    event("exchanging", "identified_headless"),
]


@pytest.mark.parametrize("secret", ["s3cret", "wrong"], ids=["granted", "refused"])
async def test_an_authorization_flow_is_a_span_under_the_request_that_was_challenged(otel: Otel, secret: str) -> None:
    from tooling.processes import run_authserver

    scenario = {"client_credentials": {"client_id": "agent", "client_secret": "s3cret"}, "prm_scopes_supported": ["x"]}
    with run_authserver(scenario) as server:
        auth = mcpfsm.ClientCredentials("agent", client_secret=secret)
        with otel.tracer.start_as_current_span("agent"):
            async with mcpfsm.Client.http(server.mcp_url, auth=auth, protocol=MODERN) as client:
                try:
                    await client.call_tool("test-tool", {})
                except mcpfsm.AuthorizationError:
                    assert secret == "wrong"
        base, url = server.base_url, server.mcp_url
    port = int(base.rsplit(":", 1)[1])
    endpoint = {
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "server.address": "127.0.0.1",
        "server.port": port,
    }
    [root] = otel.tree()
    [call] = root["children"]
    [sent] = call["children"]
    [flow] = sent["children"]
    granted = secret == "s3cret"
    # The flow's own requests (metadata, token endpoint) are not MCP requests: no spans. Nothing secret is
    # recorded: the issuer, the resource and the scopes are public.
    flow_attributes = {
        "gen_ai.tool.name": "test-tool",
        "mcpfsm.call_id": flow["attributes"]["mcpfsm.call_id"],
        "mcpfsm.entry": "unauthorized",
        "mcpfsm.issuer": base,
        "mcpfsm.resource": url,
        "mcpfsm.scopes": ["x"],
        "mcpfsm.state": "authorized" if granted else "failed",
    }
    last = event("authorized", "granted") if granted else event("failed", "refused", error_type="AuthorizationError")
    if not granted:
        flow_attributes["error.type"] = "AuthorizationError"
    failure: dict[str, Any] = {} if granted else {"error": "AuthorizationError"}
    assert otel.tree() == agent(
        tool_call(
            "test-tool",
            call["attributes"]["mcpfsm.call_id"],
            "succeeded" if granted else "failed",
            PLAIN if granted else [*PLAIN[:3], event("failed", "errored", error_type="AuthorizationError")],
            [
                request(
                    "tools/call",
                    1,
                    endpoint,
                    tool="test-tool",
                    children=[
                        node(
                            "authorization",
                            "INTERNAL",
                            flow_attributes,
                            events=[*HEADLESS_FLOW, last],
                            status=("UNSET", None) if granted else ("ERROR", None),
                        )
                    ],
                    **failure,
                )
            ],
            **failure,
        )
    )


async def test_a_run_is_a_span_named_by_its_machine_and_a_machine_naming_none_has_none(otel: Otel) -> None:
    from mcpfsm._client.otel import Instrumentation
    from mcpfsm._machines.input import INPUT
    from mcpfsm._machines.tool_call import TOOL_CALL

    telemetry = Instrumentation(trace.get_tracer("tests"), None, endpoint={})

    async def body() -> str:
        return "done"

    assert INPUT.span is None
    assert await telemetry.run(INPUT, "run-1", {"mcpfsm.call_id": "run-1"}, body) == "done"
    assert otel.spans() == []
    assert await telemetry.run(TOOL_CALL, "run-2", {"mcpfsm.call_id": "run-2"}, body, tool="echo") == "done"
    assert [(span.name, dict(span.attributes or {})) for span in otel.spans()] == [
        ("tool-call echo", {"mcpfsm.call_id": "run-2"})
    ]
