"""The gate's run (``mcpfsm._drivers.gate.GateRun``) under asyncio and under trio: every path, whole event lists.

The port records what the run asked of it; the upstream side is nothing but that record (the shapes that do the
I/O, ``HeaderGate`` and ``mcpfsm gate``, are tested against real servers in tests/gate/).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpfsm import CallEvent, GateEvent
from mcpfsm._core.gate import GateRefusal, GateSettings, Refusal, ToolSchema, VerifiedCall
from mcpfsm._drivers.gate import GateRun

from ..core.gate_cases import SCHEMA, VERSION, call, std

BACKENDS = ["asyncio", "trio"]
EXECUTE = ToolSchema.of("execute", SCHEMA)
TRUE = [*std(), ("Mcp-Param-Region", "eu")]
LIE = [*std(), ("Mcp-Param-Region", "analytics")]
BODY = call({"region": "eu"})
PROD = call({"region": "prod"})


class Port:
    """A port that records every call the run makes, in order."""

    def __init__(
        self,
        body: bytes = BODY,
        *,
        known: ToolSchema | None = EXECUTE,
        learned: ToolSchema | None = EXECUTE,
        forward: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.body, self.known, self.learned, self._forward = body, known, learned, forward
        self.calls: list[Any] = []
        self.identity = "fp-1"

    async def read_body(self, limit: int) -> bytes | None:
        self.calls.append(("read_body", limit))
        return self.body if len(self.body) <= limit else None

    async def schema(self, tool: str) -> ToolSchema | None:
        self.calls.append(("schema", tool))
        return self.known

    async def learn(self, tool: str) -> ToolSchema | None:
        self.calls.append(("learn", tool))
        return self.learned

    async def forward(self, *, strip_params: bool) -> None:
        self.calls.append(("forward", strip_params))
        if self._forward is not None:
            await self._forward()

    async def refuse(self, refusal: Refusal) -> None:
        self.calls.append(("refuse", refusal.status, json.loads(refusal.body())))


def run(backend: str, port: Port, headers: Any, settings: GateSettings | None = None) -> list[GateEvent]:
    events: list[GateEvent] = []

    async def main() -> None:
        await GateRun(port, headers, settings or GateSettings(), events.append).run()

    anyio.run(main, backend=backend)
    return events


def walk(events: list[GateEvent]) -> list[tuple[Any, ...]]:
    return [(e.state, e.trigger, e.header, e.reason, e.status) for e in events]


def mismatch(request_id: Any, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32020, "message": message}}


REGION = "Mcp-Param-Region does not match the argument /region (string)"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_true_call_is_forwarded(backend: str) -> None:
    port = Port()
    events = run(backend, port, TRUE)
    assert walk(events) == [
        ("received", None, None, None, None),
        ("parsed", "read", None, None, None),
        ("schema_known", "known", None, None, None),
        ("checked", "matched", None, None, None),
        ("forwarded", "forwarded", None, None, None),
    ]
    assert port.calls == [("read_body", 4 * 1024 * 1024), ("schema", "execute"), ("forward", False)]
    assert {(e.method, e.name, e.tool, e.machine, e.attempt) for e in events} - {("", None, "", "gate", 1)} == {
        ("tools/call", "execute", "execute", "gate", 1)
    }
    assert [e.seq for e in events] == [0, 1, 2, 3, 4]
    assert len({e.call_id for e in events}) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_lie_is_rejected_and_never_forwarded(backend: str) -> None:
    port = Port(PROD)
    events = run(backend, port, LIE)
    assert walk(events)[-2:] == [
        ("checked", "mismatched", None, None, None),
        ("rejected", "refused", "Mcp-Param-Region", REGION, 400),
    ]
    assert port.calls == [
        ("read_body", 4 * 1024 * 1024),
        ("schema", "execute"),
        ("refuse", 400, mismatch(1, f"Header mismatch: {REGION}")),
    ]
    assert events[-1].error == {"type": "Refusal", "code": -32020, "message": f"Header mismatch: {REGION}"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_report_mode_forwards_the_lie_and_reports_it(backend: str) -> None:
    port = Port(PROD)
    events = run(backend, port, LIE, GateSettings(mode="report"))
    assert walk(events)[-1] == ("reported", "reported", "Mcp-Param-Region", REGION, None)
    assert events[-1].error == {"type": "HeaderMismatch", "code": -32020, "message": REGION}
    assert port.calls[-1] == ("forward", False)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unknown_schema_is_learned_first(backend: str) -> None:
    port = Port(known=None)
    events = run(backend, port, TRUE)
    assert [(e.state, e.trigger) for e in events][1:4] == [
        ("parsed", "read"),
        ("learning", "unknown"),
        ("schema_known", "learned"),
    ]
    assert port.calls[1:] == [("schema", "execute"), ("learn", "execute"), ("forward", False)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_failed_fetch_checks_the_standard_headers_and_cuts_the_params(backend: str) -> None:
    port = Port(PROD, known=None, learned=None)
    events = run(backend, port, LIE)
    assert [(e.state, e.trigger) for e in events][2:] == [
        ("learning", "unknown"),
        ("schema_known", "unlearned"),
        ("checked", "matched"),
        ("forwarded", "forwarded"),
    ]
    assert port.calls[-1] == ("forward", True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_failed_fetch_still_refuses_a_lying_standard_header(backend: str) -> None:
    port = Port(known=None, learned=None)
    events = run(backend, port, [*std(name="other"), ("Mcp-Param-Region", "eu")])
    assert walk(events)[-1] == (
        "rejected",
        "refused",
        "Mcp-Name",
        "Mcp-Name does not match the body's params.name",
        400,
    )


@pytest.mark.parametrize(
    ("on_unknown", "last", "call"),
    [
        ("pass", ("forwarded", "forwarded", None, None, None), ("forward", False)),
        (
            "reject",
            (
                "rejected",
                "unknown_refused",
                None,
                "no schema is known for the called tool, so its Mcp-Param-* headers cannot be verified",
                400,
            ),
            (
                "refuse",
                400,
                mismatch(
                    1,
                    "Header mismatch: no schema is known for the called tool, so its Mcp-Param-* headers cannot be"
                    " verified",
                ),
            ),
        ),
    ],
)
@pytest.mark.parametrize("backend", BACKENDS)
def test_on_unknown(backend: str, on_unknown: str, last: tuple[Any, ...], call: tuple[Any, ...]) -> None:
    port = Port(PROD, known=None)
    events = run(backend, port, LIE, GateSettings(on_unknown=on_unknown))  # type: ignore[arg-type]
    assert walk(events)[-1] == last
    assert port.calls[-1] == call
    assert ("learn", "execute") not in port.calls


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_call_with_nothing_to_declare_needs_no_schema(backend: str) -> None:
    port = Port(call({}), known=None)
    events = run(backend, port, std())
    assert [e.trigger for e in events][1:] == ["read", "known", "matched", "forwarded"]
    assert [c[0] for c in port.calls] == ["read_body", "forward"]


@pytest.mark.parametrize(
    ("legacy", "last", "call"),
    [
        ("strip", ("forwarded", "legacy", None, None, None), ("forward", True)),
        ("pass", ("forwarded", "legacy", None, None, None), ("forward", False)),
        (
            "reject",
            (
                "rejected",
                "legacy_refused",
                None,
                "protocol version 2025-11-25 is not accepted here: this gate verifies 2026-07-28 requests only",
                400,
            ),
            (
                "refuse",
                400,
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": -32600,
                        "message": "protocol version 2025-11-25 is not accepted here: this gate verifies 2026-07-28"
                        " requests only",
                    },
                },
            ),
        ),
    ],
)
@pytest.mark.parametrize("backend", BACKENDS)
def test_legacy(backend: str, legacy: str, last: tuple[Any, ...], call: tuple[Any, ...]) -> None:
    port = Port(b"not even json")
    headers = [("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Param-Region", "x")]
    events = run(backend, port, headers, GateSettings(legacy=legacy))  # type: ignore[arg-type]
    assert walk(events)[-1] == last
    assert port.calls == [("read_body", 4 * 1024 * 1024), call]
    assert {e.method for e in events} == {""}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("body", "request_id"),
    [
        pytest.param(b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"x"}}', 41, id="integer-id"),
        pytest.param(b'{"jsonrpc":"2.0","id":"r-7","method":"tools/list"}', "r-7", id="string-id"),
        pytest.param(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', None, id="notification"),
        pytest.param(b'{"jsonrpc":"2.0","id":41,"id":42,"method":"tools/list"}', None, id="ambiguous-id"),
        pytest.param(b'[{"jsonrpc":"2.0","id":41,"method":"tools/list"}]', None, id="batch"),
        pytest.param(b"not even json", None, id="not-json"),
    ],
)
def test_a_legacy_refusal_answers_with_the_request_id(backend: str, body: bytes, request_id: object) -> None:
    port = Port(body)
    run(backend, port, [("MCP-Protocol-Version", "2025-11-25")], GateSettings(legacy="reject"))
    assert port.calls[-1][0] == "refuse" and port.calls[-1][2]["id"] == request_id


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_legacy_request_without_a_version_header_is_named_so(backend: str) -> None:
    port = Port()
    events = run(backend, port, [("Mcp-Param-Region", "x")], GateSettings(legacy="reject"))
    assert events[-1].reason == (
        "a request without MCP-Protocol-Version is not accepted here: this gate verifies 2026-07-28 requests only"
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_body_that_is_no_request(backend: str) -> None:
    port = Port(b"[1, 2]")
    events = run(backend, port, std())
    assert walk(events)[-1] == ("rejected", "malformed", None, "the body is not a JSON-RPC request object", 400)
    assert port.calls[-1] == (
        "refuse",
        400,
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": "the body is not a JSON-RPC request object"},
        },
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_too_many_mcp_headers_are_refused_before_the_body_is_read(backend: str) -> None:
    port = Port()
    headers = [*TRUE, *((f"Mcp-Param-X{n}", "1") for n in range(61))]
    events = run(backend, port, headers)
    reason = "the request carries 65 Mcp-* headers; at most 64 are accepted"
    assert walk(events) == [("received", None, None, None, None), ("rejected", "oversized", None, reason, 431)]
    assert port.calls == [
        (
            "refuse",
            431,
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": f"Header fields too large: {reason}"}},
        )
    ]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_body_over_max_body_is_refused(backend: str) -> None:
    port = Port()
    events = run(backend, port, TRUE, GateSettings(max_body=len(BODY) - 1))
    reason = f"the request body is longer than {len(BODY) - 1} bytes"
    assert walk(events)[-1] == ("rejected", "oversized", None, reason, 413)
    assert [c[0] for c in port.calls] == ["read_body", "refuse"]


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_policy_sees_verified_values_only_and_may_refuse(backend: str, asynchronous: bool) -> None:
    seen: list[VerifiedCall] = []

    def rule(call: VerifiedCall) -> None:
        seen.append(call)
        if call.params.get("Mcp-Param-Count") == 3:
            raise GateRefusal(403, "tenant acme may not count to three")

    async def async_rule(call: VerifiedCall) -> None:
        await anyio.lowlevel.checkpoint()
        rule(call)

    policy = GateSettings(policy=async_rule if asynchronous else rule)
    port = Port(call({"region": "eu", "count": 3}))
    events = run(backend, port, [*TRUE, ("Mcp-Param-Count", "3")], policy)
    assert seen == [
        VerifiedCall(
            method="tools/call",
            name="execute",
            params={"Mcp-Param-Region": "eu", "Mcp-Param-Count": 3},
            identity="fp-1",
        )
    ]
    assert walk(events)[-1] == ("rejected", "refused", None, "the policy refused the call", 403)
    assert port.calls[-1] == (
        "refuse",
        403,
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "tenant acme may not count to three"}},
    )
    # A lie never reaches the policy, in either mode.
    seen.clear()
    for mode in ("verify", "report"):
        run(backend, Port(PROD), LIE, GateSettings(mode=mode, policy=rule))  # type: ignore[arg-type]
    assert seen == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_policy_that_breaks_forwards_nothing(backend: str) -> None:
    def broken(call: VerifiedCall) -> None:
        raise RuntimeError("bug in the policy")

    port = Port()
    with pytest.raises(RuntimeError, match=r"^bug in the policy$"):
        run(backend, port, TRUE, GateSettings(policy=broken))
    assert [c[0] for c in port.calls] == ["read_body", "schema"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_client_that_leaves_mid_stream_ends_the_run_cancelled(backend: str) -> None:
    events: list[GateEvent] = []
    started = anyio.Event()

    async def stream_forever() -> None:
        started.set()
        await anyio.sleep_forever()

    async def main() -> None:
        async with anyio.create_task_group() as group:
            run = GateRun(Port(forward=stream_forever), TRUE, GateSettings(), events.append)
            group.start_soon(run.run)
            await started.wait()
            group.cancel_scope.cancel()

    anyio.run(main, backend=backend)
    assert [(e.state, e.trigger) for e in events][-2:] == [("checked", "matched"), ("cancelled", "cancelled")]


class Waiting(Port):
    """A port whose one named I/O waits until the run is cancelled."""

    def __init__(self, waits_in: str, body: bytes = BODY, **kw: Any) -> None:
        super().__init__(body, **kw)
        self.waits_in = waits_in
        self.waiting = anyio.Event()

    async def _wait(self, name: str) -> None:
        if name == self.waits_in:
            self.waiting.set()
            await anyio.sleep_forever()

    async def read_body(self, limit: int) -> bytes | None:
        await self._wait("read_body")
        return await super().read_body(limit)

    async def schema(self, tool: str) -> ToolSchema | None:
        await self._wait("schema")
        return await super().schema(tool)

    async def learn(self, tool: str) -> ToolSchema | None:
        await self._wait("learn")
        return await super().learn(tool)

    async def forward(self, *, strip_params: bool) -> None:
        await self._wait("forward")
        await super().forward(strip_params=strip_params)

    async def refuse(self, refusal: Refusal) -> None:
        await self._wait("refuse")
        await super().refuse(refusal)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("waits_in", "body", "headers", "known", "last"),
    [
        pytest.param("read_body", BODY, TRUE, EXECUTE, ("received", None), id="reading-the-body"),
        pytest.param("schema", BODY, TRUE, EXECUTE, ("parsed", "read"), id="looking-up-the-schema"),
        pytest.param("learn", BODY, TRUE, None, ("learning", "unknown"), id="fetching-a-listing"),
        pytest.param("forward", BODY, TRUE, EXECUTE, ("checked", "matched"), id="forwarding"),
        pytest.param("refuse", PROD, LIE, EXECUTE, ("checked", "mismatched"), id="refusing"),
        pytest.param(
            "forward", BODY, [("MCP-Protocol-Version", "2025-11-25")], EXECUTE, ("parsed", "read"), id="legacy"
        ),
    ],
)
def test_a_cancellation_at_each_wait_ends_the_run_cancelled_from_where_it_waited(
    backend: str, waits_in: str, body: bytes, headers: Any, known: ToolSchema | None, last: tuple[str, str | None]
) -> None:
    # The run checkpoints at its I/O only (no checkpoint between states that only compute): a cancellation that
    # arrives while the port waits follows the machine's cancel edge from the state the run is in, and the port is
    # asked for nothing more.
    events: list[GateEvent] = []
    port = Waiting(waits_in, body, known=known)
    outcome: list[BaseException] = []

    async def main() -> None:
        async with anyio.create_task_group() as group:

            async def runs() -> None:
                try:
                    await GateRun(port, headers, GateSettings(), events.append).run()
                except BaseException as exc:
                    outcome.append(exc)
                    raise

            group.start_soon(runs)
            await port.waiting.wait()
            group.cancel_scope.cancel()

    anyio.run(main, backend=backend)
    assert [(e.state, e.trigger) for e in events][-2:] == [last, ("cancelled", "cancelled")]
    assert len(outcome) == 1 and not isinstance(outcome[0], Exception)  # the cancellation itself, propagated
    assert not any(call[0] in ("forward", "refuse") for call in port.calls)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_auditor_that_raises_breaks_nothing(backend: str) -> None:
    def auditor(event: CallEvent) -> None:
        raise ValueError("disk full")

    port = Port()

    async def main() -> str:
        return str(await GateRun(port, TRUE, GateSettings(), auditor).run())

    assert anyio.run(main, backend=backend) == "forwarded"
    assert port.calls[-1] == ("forward", False)


def test_events_round_trip_through_their_records() -> None:
    events = run("trio", Port(PROD), LIE)
    assert [CallEvent.from_dict(json.loads(e.to_json())) for e in events] == events
    assert all(isinstance(CallEvent.from_dict(e.to_dict()), GateEvent) for e in events)
    with pytest.raises(ValueError, match=r"^not a GateEvent record: status is not an integer$"):
        GateEvent.from_dict({**events[-1].to_dict(), "status": "400"})


# A request through the gate either reaches the upstream once or is refused once, never both; a refused one never
# reaches it; and no header value is ever in an event.
MARK = "\u00a7QJ"


@settings(max_examples=150, deadline=None)
@given(
    region=st.sampled_from(["eu", MARK + "a", None]),
    header=st.sampled_from(["eu", MARK + "a", MARK + "b", None]),
    version=st.sampled_from([VERSION, "2025-11-25", MARK, None]),
    name=st.sampled_from(["execute", MARK + "n"]),
    known=st.booleans(),
    learned=st.booleans(),
    options=st.fixed_dictionaries(
        {
            "mode": st.sampled_from(["verify", "report"]),
            "on_unknown": st.sampled_from(["fetch", "pass", "reject"]),
            "legacy": st.sampled_from(["strip", "pass", "reject"]),
        }
    ),
)
def test_one_answer_per_request_and_no_value_in_any_event(
    region: str | None,
    header: str | None,
    version: str | None,
    name: str,
    known: bool,
    learned: bool,
    options: dict[str, Any],
) -> None:
    headers = [("Mcp-Method", "tools/call"), ("Mcp-Name", name)]
    if version is not None:
        headers.append(("MCP-Protocol-Version", version))
    if header is not None:
        headers.append(("Mcp-Param-Region", header))
    port = Port(
        call({"region": region}),
        known=EXECUTE if known else None,
        learned=EXECUTE if learned else None,
    )
    events = run("trio", port, headers, GateSettings(**options))
    answers = [c for c in port.calls if c[0] in ("forward", "refuse")]
    assert len(answers) == 1
    assert (answers[0][0] == "refuse") == (events[-1].state == "rejected")
    for event in events:
        record = event.to_dict()
        record.pop("name")  # the body's name, which the event records by design (the header's is never recorded)
        assert MARK not in json.dumps(record, ensure_ascii=False)
