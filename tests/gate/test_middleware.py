"""HeaderGate in process, around the unchecked upstream's app, under asyncio and trio alike.

Every test runs its scenario on both event loops (``anyio.run``), since the middleware serves the SDK's and fastmcp's
Starlette apps under uvicorn (asyncio) and Hypercorn's trio worker. The app behind the gate checks no header at all,
so what reaches it (``reached``) is what the gate let through.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpfsm import GateEvent
from mcpfsm._gate.middleware import HeaderGate
from mcpfsm.gate import GateRefusal, VerifiedCall
from tests.gate.conftest import META, Answer, asgi, call, headers, reached, request, upstream_app

LIE = "analytics-lie"


@pytest.fixture(params=["asyncio", "trio"])
def loop(request: pytest.FixtureRequest) -> Callable[[Callable[[], Awaitable[None]]], None]:
    """Run a scenario on one event loop."""
    backend = request.param

    def run(scenario: Callable[[], Awaitable[None]]) -> None:
        anyio.run(scenario, backend=backend)

    return run


async def listed(gate: HeaderGate, auth: str | None = None) -> Answer:
    sent = headers("tools/list")
    if auth:
        sent.append(("authorization", auth))
    return await asgi(gate, sent, request("tools/list"))


def error_of(answer: Answer) -> dict[str, Any]:
    error: dict[str, Any] = answer.json()["error"]
    return error


def test_a_matching_call_is_forwarded_and_a_lying_one_never_reaches_the_app(loop: Any) -> None:
    async def scenario() -> None:
        app = upstream_app()
        gate = HeaderGate(app)
        assert (await listed(gate)).status == 200
        ok = await asgi(gate, headers(name="query", Database="prod"), call("query", {"database": "prod", "sql": "s"}))
        assert ok.status == 200 and "prod" in ok.body.decode()
        lie = await asgi(
            gate, headers(name="query", Database=LIE), call("query", {"database": "prod", "sql": "s"}, request_id=7)
        )
        assert lie.status == 400
        error = error_of(lie)
        assert lie.json()["id"] == 7 and error["code"] == -32020
        assert "Mcp-Param-Database" in error["message"] and LIE not in lie.body.decode()
        assert reached(app) == ["tools/list", "tools/call"]
        assert gate.stats["forwarded"] == 2 and gate.stats["rejected"] == 1
        assert gate.stats["rejected:mismatch:Mcp-Param-Database"] == 1

    loop(scenario)


@pytest.mark.parametrize(
    ("sent", "blamed"),
    [
        pytest.param(
            [("mcp-protocol-version", "2026-07-28"), ("content-type", "application/json")],
            "Mcp-Method",
            id="no-Mcp-Method",
        ),
        pytest.param([*headers(name="greet"), ("mcp-name", "greet")], "Mcp-Name", id="Mcp-Name-twice"),
        pytest.param(
            headers(
                name="=?base64?Z3JlZXQ?=",
            ),
            "Mcp-Name",
            id="invalid-base64",
        ),
        pytest.param(headers(name="other"), "Mcp-Name", id="wrong-name"),
        pytest.param(headers(method="TOOLS/CALL", name="greet"), "Mcp-Method", id="method-case"),
    ],
)
def test_standard_headers_that_lie_are_refused(loop: Any, sent: list[tuple[str, str]], blamed: str) -> None:
    async def scenario() -> None:
        app = upstream_app()
        gate = HeaderGate(app)
        answer = await asgi(gate, sent, call("greet", {"name": "x"}))
        assert answer.status == 400 and error_of(answer)["code"] == -32020, answer
        assert blamed in error_of(answer)["message"]
        assert "tools/call" not in reached(app)  # the gate may have fetched greet's schema; the call never went on

    loop(scenario)


def test_the_caps_are_inclusive_and_refusals_never_reach_the_app(loop: Any) -> None:
    async def scenario() -> None:
        app = upstream_app()
        gate = HeaderGate(app, on_unknown="pass")
        body = call("greet", {"name": "x"})
        standard = headers(name="greet")  # 3 mcp- fields
        at_limit = standard + [(f"mcp-param-extra{n}", "v" * 8192) for n in range(61)]
        assert (await asgi(gate, at_limit, body)).status == 200
        too_many = [*at_limit, ("mcp-param-one-more", "v")]
        answer = await asgi(gate, too_many, body)
        assert answer.status == 431 and error_of(answer)["code"] == -32600
        too_long = [*standard, ("mcp-param-long", "v" * 8193)]
        assert (await asgi(gate, too_long, body)).status == 431
        assert reached(app) == ["tools/call"]
        assert gate.stats["rejected:too_many_headers"] == 1 and gate.stats["rejected:header_too_large"] == 1

    loop(scenario)


def test_a_body_over_max_body_is_refused_whether_declared_or_streamed(loop: Any) -> None:
    async def scenario() -> None:
        app = upstream_app()
        body = call("greet", {"name": "x" * 200})
        gate = HeaderGate(app, max_body=len(body) - 1, on_unknown="pass")
        declared = [*headers(name="greet"), ("content-length", str(len(body)))]
        answer = await asgi(gate, declared, body)
        assert answer.status == 413 and error_of(answer)["code"] == -32600
        streamed = await asgi(gate, headers(name="greet"), chunks=[body[:100], body[100:]])
        assert streamed.status == 413
        exact = HeaderGate(app, max_body=len(body), on_unknown="pass")
        assert (await asgi(exact, headers(name="greet"), chunks=[body[:100], body[100:]])).status == 200
        assert reached(app) == ["tools/call"]
        assert gate.stats["rejected:body_too_large"] == 2

    loop(scenario)


def test_hop_by_hop_fields_are_dropped_before_they_are_judged(loop: Any) -> None:
    async def scenario() -> None:
        app = upstream_app()
        gate = HeaderGate(app)
        await listed(gate)
        arguments = {"database": "prod", "sql": "s"}
        # A declared header named in Connection is not forwarded, so the body's argument has no header: refused.
        smuggled = [*headers(name="query", Database="prod"), ("connection", "keep-alive, Mcp-Param-Database")]
        assert (await asgi(gate, smuggled, call("query", arguments))).status == 400
        plain = [
            *headers(name="query", Database="prod"),
            ("connection", "keep-alive, x-private"),
            ("keep-alive", "timeout=5"),
            ("te", "trailers"),
            ("upgrade", "h2c"),
            ("proxy-connection", "keep-alive"),
            ("x-private", "1"),
            ("x-kept", "1"),
        ]
        assert (await asgi(gate, plain, call("query", arguments))).status == 200
        seen = {name for name, _ in app.log[-1]["headers"]}
        assert {"connection", "keep-alive", "te", "upgrade", "proxy-connection", "x-private"}.isdisjoint(seen)
        assert {"x-kept", "mcp-param-database"} <= seen
        assert reached(app) == ["tools/list", "tools/call"]

    loop(scenario)


@pytest.mark.parametrize("version", [None, "2025-11-25"])
def test_legacy_requests_are_not_verified_and_lose_their_params_by_default(loop: Any, version: str | None) -> None:
    async def scenario() -> None:
        app = upstream_app()
        sent = [("content-type", "application/json"), ("mcp-param-database", LIE), ("mcp-name", "wrong")]
        if version:
            sent.append(("mcp-protocol-version", version))
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "query", "arguments": {"database": "prod", "sql": "s"}},
            }
        ).encode()
        strip = HeaderGate(app)
        assert (await asgi(strip, sent, body)).status == 200
        names = [name for name, _ in app.log[-1]["headers"]]
        assert "mcp-param-database" not in names and "mcp-name" in names
        passing = HeaderGate(app, legacy="pass")
        assert (await asgi(passing, sent, body)).status == 200
        assert ["mcp-param-database", LIE] in app.log[-1]["headers"]
        rejecting = HeaderGate(app, legacy="reject")
        refused = await asgi(rejecting, sent, body)
        assert refused.status == 400 and error_of(refused)["code"] == -32600
        assert (version or "MCP-Protocol-Version") in error_of(refused)["message"]
        assert refused.json()["id"] == 3  # the request's own id, read from its body (not verified)
        assert reached(app) == ["tools/call", "tools/call"]
        assert strip.stats["forwarded"] == 1 and rejecting.stats["rejected:legacy"] == 1

    loop(scenario)


def test_report_mode_forwards_a_mismatch_and_counts_it(loop: Any) -> None:
    async def scenario() -> None:
        app = upstream_app()
        events: list[GateEvent] = []
        gate = HeaderGate(app, mode="report", on_event=events.append)
        await listed(gate)
        lie = await asgi(gate, headers(name="query", Database=LIE), call("query", {"database": "prod", "sql": "s"}))
        assert lie.status == 200
        assert reached(app) == ["tools/list", "tools/call"]
        assert gate.stats["reported"] == 1 and gate.stats["forwarded"] == 2 and gate.stats["rejected"] == 0
        assert gate.stats["reported:mismatch:Mcp-Param-Database"] == 1
        last = events[-1]
        assert (last.state, last.header) == ("reported", "Mcp-Param-Database")
        assert LIE not in json.dumps([event.to_dict() for event in events])

    loop(scenario)


def test_the_policy_sees_only_verified_values_and_may_refuse(loop: Any) -> None:
    async def scenario() -> None:
        app = upstream_app()
        seen: list[VerifiedCall] = []

        def tenant_rule(verified: VerifiedCall) -> None:
            seen.append(verified)
            if verified.params.get("Mcp-Param-Database") == "prod":
                raise GateRefusal(403, "writes to prod go through the change board")

        gate = HeaderGate(app, policy=tenant_rule)
        await listed(gate, auth="Bearer alice")
        allowed = await asgi(
            gate,
            [*headers(name="query", Database="staging", Limit="5"), ("authorization", "Bearer alice")],
            call("query", {"database": "staging", "limit": 5, "sql": "s"}),
        )
        assert allowed.status == 200
        refused = await asgi(
            gate, headers(name="query", Database="prod"), call("query", {"database": "prod", "sql": "s"}, 9)
        )
        assert refused.status == 403 and refused.json()["id"] == 9
        assert error_of(refused) == {"code": -32600, "message": "writes to prod go through the change board"}
        lie = await asgi(
            gate, headers(name="query", Database="staging"), call("query", {"database": "prod", "sql": "s"})
        )
        assert lie.status == 400
        assert [(v.method, v.name, dict(v.params)) for v in seen[1:]] == [
            ("tools/call", "query", {"Mcp-Param-Database": "staging", "Mcp-Param-Limit": 5}),
            ("tools/call", "query", {"Mcp-Param-Database": "prod"}),
        ]
        assert seen[1].identity is not None and "alice" not in seen[1].identity
        assert reached(app).count("tools/call") == 1
        assert gate.stats["rejected:policy"] == 1

    loop(scenario)


def test_on_unknown_fetch_pass_and_reject(loop: Any) -> None:
    async def scenario() -> None:
        arguments = {"database": "prod", "sql": "s"}
        app = upstream_app(token=["alice"])
        fetch = HeaderGate(app)
        auth = [("authorization", "Bearer alice")]
        assert (
            await asgi(fetch, headers(name="query", Database="prod") + auth, call("query", arguments))
        ).status == 200
        assert reached(app) == ["tools/list", "tools/call"]
        listing = app.log[0]
        assert ["authorization", "Bearer alice"] in listing["headers"]  # the caller's own credentials
        assert fetch.stats["fetched"] == 1
        lie = await asgi(fetch, headers(name="query", Database=LIE) + auth, call("query", arguments))
        assert lie.status == 400 and reached(app) == ["tools/list", "tools/call"]  # known now: no second fetch

        app = upstream_app()
        passing = HeaderGate(app, on_unknown="pass")
        # Standard headers only: the server must check the rest (this one does not).
        assert (await asgi(passing, headers(name="query", Database=LIE), call("query", arguments))).status == 200
        assert (await asgi(passing, headers(name="other"), call("query", arguments))).status == 400
        assert reached(app) == ["tools/call"]

        rejecting = HeaderGate(app, on_unknown="reject")
        refused = await asgi(rejecting, headers(name="query", Database="prod"), call("query", arguments))
        assert refused.status == 400 and error_of(refused)["code"] == -32020
        assert reached(app) == ["tools/call"] and rejecting.stats["rejected:unknown_schema"] == 1

    loop(scenario)


def test_a_failed_fetch_forwards_without_the_unverified_params(loop: Any) -> None:
    async def scenario() -> None:
        app = upstream_app(token=["alice"])
        gate = HeaderGate(app)
        # The caller's token is refused, so the gate's tools/list is too: nothing is learned, and the call goes on
        # with its standard headers checked and its Mcp-Param-* headers cut (the server answers 401 itself).
        sent = [*headers(name="query", Database=LIE), ("authorization", "Bearer mallory")]
        answer = await asgi(gate, sent, call("query", {"database": "prod", "sql": "s"}))
        assert answer.status == 401
        assert reached(app) == ["tools/list", "tools/call"]
        assert "mcp-param-database" not in [name for name, _ in app.log[-1]["headers"]]
        assert gate.stats["fetch_failed"] == 1

    loop(scenario)


def test_one_fetch_in_flight_per_server_and_identity(loop: Any) -> None:
    async def scenario() -> None:
        app = upstream_app()
        gate = HeaderGate(app)
        answers: list[int] = []

        async def one(n: int) -> None:
            database = f"db{n}"
            answer = await asgi(
                gate, headers(name="query", Database=database), call("query", {"database": database, "sql": "s"})
            )
            answers.append(answer.status)

        async with anyio.create_task_group() as group:
            for n in range(20):
                group.start_soon(one, n)
        assert answers == [200] * 20
        assert reached(app).count("tools/list") == 1 and gate.stats["fetched"] == 1

    loop(scenario)


def test_private_listings_belong_to_one_identity(loop: Any) -> None:
    async def scenario() -> None:
        app = upstream_app(token=["alice", "bob"])
        gate = HeaderGate(app)
        alice, bob = [("authorization", "Bearer alice")], [("authorization", "Bearer bob")]
        assert (await listed(gate, auth="Bearer alice")).status == 200
        lie = await asgi(gate, headers(name="alice_only", Tenant=LIE) + alice, call("alice_only", {"tenant": "t1"}))
        assert lie.status == 400
        # Bob's listing is not Alice's: a call of his makes his own fetch, which does not list alice_only.
        bobs = await asgi(gate, headers(name="alice_only", Tenant="t1") + bob, call("alice_only", {"tenant": "t1"}))
        assert bobs.status == 200
        assert reached(app) == ["tools/list", "tools/list", "tools/call"]
        assert gate.stats["fetched"] == 1

    loop(scenario)


@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
def test_a_listing_passing_through_is_learned_before_it_is_passed_on(loop: Any, sse: bool) -> None:
    async def scenario() -> None:
        app = upstream_app(sse=sse)
        gate = HeaderGate(app)
        learned_first: list[bool] = []
        inner_send = None

        async def observed(scope: Any, receive: Any, send: Any) -> None:
            nonlocal inner_send

            async def spy(message: Any) -> None:
                # A JSON answer's head, or the event stream's chunk that carries the listing.
                if message["type"] == "http.response.start" if not sse else b'"tools"' in message.get("body", b""):
                    known, _ = gate.book.lookup("/mcp", None, "query")
                    learned_first.append(known)
                await send(message)

            await gate(scope, receive, spy)

        answer = await asgi(observed, headers("tools/list"), request("tools/list"))
        assert answer.status == 200
        assert learned_first == [True]  # a JSON answer is held whole, an event until its listing is learned
        assert gate.book.lookup("/mcp", None, "query")[0]
        ok = await asgi(gate, headers(name="query", Database="prod"), call("query", {"database": "prod", "sql": "s"}))
        assert ok.status == 200 and gate.stats["fetched"] == 0 and gate.stats["learned"] == 1
        assert reached(app) == ["tools/list", "tools/call"]

    loop(scenario)


def test_an_upstream_32020_and_a_list_changed_forget_the_listing(loop: Any) -> None:
    async def scenario() -> None:
        app = upstream_app(sse=True)
        gate = HeaderGate(app)
        await listed(gate)
        refused = await asgi(gate, headers(name="refuse"), call("refuse"))
        assert refused.status == 400 and error_of(refused)["code"] == -32020
        assert gate.stats["forgotten"] == 1 and not gate.book.lookup("/mcp", None, "query")[0]
        await listed(gate)
        changed = await asgi(gate, headers(name="change"), call("change"))
        assert changed.status == 200 and b"list_changed" in changed.body
        assert gate.stats["forgotten"] == 2
        # The server now mirrors hello's name as Mcp-Param-Person: the gate fetches the new listing and agrees.
        ok = await asgi(gate, headers(name="hello", Person="ada"), call("hello", {"name": "ada"}))
        assert ok.status == 200 and gate.stats["fetched"] == 1
        stale = await asgi(gate, headers(name="hello", Name="ada"), call("hello", {"name": "ada"}))
        assert stale.status == 400

    loop(scenario)


def test_schemas_preload_a_saved_listing(loop: Any, tmp_path: Path) -> None:
    async def scenario() -> None:
        app = upstream_app()
        saved = tmp_path / "tools.json"
        saved.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": app.tools(None)}}))
        gate = HeaderGate(app, schemas=saved)
        lie = await asgi(gate, headers(name="query", Database=LIE), call("query", {"database": "prod", "sql": "s"}))
        assert lie.status == 400 and reached(app) == [] and gate.stats["fetched"] == 0

    loop(scenario)


def test_each_request_publishes_one_event_per_state_without_any_value(loop: Any) -> None:
    async def scenario() -> None:
        app = upstream_app()
        events: list[GateEvent] = []
        gate = HeaderGate(app, on_event=events.append)
        await asgi(gate, headers(name="query", Database=LIE), call("query", {"database": "prod", "sql": "s"}))
        runs: dict[str, list[GateEvent]] = {}
        for event in events:
            runs.setdefault(event.call_id, []).append(event)
        (run,) = runs.values()
        assert [event.state for event in run] == [
            "received",
            "parsed",
            "learning",
            "schema_known",
            "checked",
            "rejected",
        ]
        assert [event.seq for event in run] == list(range(6))
        last = run[-1]
        assert (last.machine, last.method, last.name, last.header, last.status) == (
            "gate",
            "tools/call",
            "query",
            "Mcp-Param-Database",
            400,
        )
        assert LIE not in json.dumps([event.to_dict() for event in events])

    loop(scenario)


def test_a_legacy_stream_loses_its_params_and_a_modern_get_passes(loop: Any) -> None:
    async def scenario() -> None:
        app = upstream_app()
        gate = HeaderGate(app)
        sent = [
            ("accept", "text/event-stream"),
            ("mcp-session-id", "s1"),
            ("last-event-id", "4"),
            ("mcp-param-database", LIE),
        ]
        answer = await asgi(gate, sent, method="GET")
        assert answer.status == 200 and b'"last_event_id": "4"' in answer.body and b'"session": "s1"' in answer.body
        assert "mcp-param-database" not in [name for name, _ in app.log[-1]["headers"]]
        refused = await asgi(HeaderGate(app, legacy="reject"), sent, method="GET")
        assert refused.status == 400

    loop(scenario)


def test_options_are_checked_when_the_gate_is_built(tmp_path: Path) -> None:
    app = upstream_app()
    with pytest.raises(ValueError, match=r"^mode must be one of 'verify', 'report', got 'audit'$"):
        HeaderGate(app, mode="audit")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^max_body must be a non-negative number of bytes, got -1$"):
        HeaderGate(app, max_body=-1)
    bad = tmp_path / "bad.json"
    bad.write_text('{"nothing": 1}')
    with pytest.raises(ValueError, match=r"holds? .*tools/list result"):
        HeaderGate(app, schemas=bad)
    assert META["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"


def test_a_body_on_another_method_is_held_to_the_same_cap(loop: Any) -> None:
    async def scenario() -> None:
        app = upstream_app()
        gate = HeaderGate(app, max_body=10)
        refused = await asgi(gate, [("content-type", "application/json")], method="PUT", chunks=[b"x" * 8, b"x" * 8])
        assert refused.status == 413 and reached(app) == []
        assert gate.stats["rejected:body_too_large"] == 1

    loop(scenario)
