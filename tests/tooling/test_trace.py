"""``mcpfsm._tooling.trace``: audit events → Mermaid sequenceDiagram, and reading JSON Lines audit logs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpfsm import AuthEvent, CallEvent, InputEvent
from mcpfsm._tooling.trace import parse_events, select_call, sequence_diagram

BASE = {
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "execute-sql",
    "Mcp-Param-Database": "analytics",
}
FRESH = {**BASE, "Mcp-Param-Region": "eu"}
MISMATCH = {"type": "HeaderMismatchError", "code": -32020, "message": "Mcp-Param-Region header is missing"}


def event(seq: int, state: str, previous: str | None, trigger: str | None, **fields: Any) -> CallEvent:
    return CallEvent(
        call_id=fields.pop("call_id", "c-1"),
        seq=seq,
        tool=fields.pop("tool", "execute-sql"),
        state=state,
        previous=previous,
        trigger=trigger,
        attempt=fields.pop("attempt", 1),
        at=f"2026-07-28T00:00:0{seq}+00:00",
        elapsed=seq / 1000,
        **fields,
    )


SUCCESS = [
    event(0, "resolving", None, None),
    event(1, "planning", "resolving", "resolved"),
    event(2, "sending", "planning", "planned", headers=BASE),
    event(3, "succeeded", "sending", "answered", headers=BASE),
]

RECOVERY = [
    event(0, "resolving", None, None),
    event(1, "planning", "resolving", "resolved"),
    event(2, "sending", "planning", "planned", headers=BASE),
    event(3, "relisting", "sending", "mismatched", headers=BASE, error=MISMATCH),
    event(4, "comparing", "relisting", "relisted", headers=BASE),
    event(5, "retrying", "comparing", "changed", headers=FRESH, attempt=2),
    event(6, "succeeded", "retrying", "answered", headers=FRESH, attempt=2),
]

HEAD = """\
sequenceDiagram
    %% mcpfsm tool call c-1 of execute-sql, drawn by `mcpfsm trace`
    participant Client
    participant Server
    Note over Client: resolving
    Note over Client: planning (resolved)
    Note over Client: sending (planned)
    Client->>Server: tools/call execute-sql (attempt 1)<br/>MCP-Protocol-Version: 2026-07-28<br/>\
Mcp-Method: tools/call<br/>Mcp-Name: execute-sql<br/>Mcp-Param-Database: analytics
"""


def test_success_diagram() -> None:
    assert sequence_diagram(SUCCESS) == HEAD + (
        "    Server-->>Client: result\n    Note over Client: succeeded (answered)\n"
    )


def test_recovery_diagram() -> None:
    assert sequence_diagram(RECOVERY) == HEAD + (
        "    Server-->>Client: error -32020: Mcp-Param-Region header is missing\n"
        "    Note over Client: relisting (mismatched)\n"
        "    Client->>Server: tools/list\n"
        "    Server-->>Client: tools: 'execute-sql' listed\n"
        "    Note over Client: comparing (relisted)\n"
        "    Note over Client: retrying (changed)\n"
        "    Client->>Server: tools/call execute-sql (attempt 2)<br/>MCP-Protocol-Version: 2026-07-28<br/>"
        "Mcp-Method: tools/call<br/>Mcp-Name: execute-sql<br/>Mcp-Param-Database: analytics<br/>"
        "Mcp-Param-Region: eu\n"
        "    Server-->>Client: result\n"
        "    Note over Client: succeeded (answered)\n"
    )


def test_events_out_of_order_are_drawn_in_seq_order() -> None:
    assert sequence_diagram(list(reversed(RECOVERY))) == sequence_diagram(RECOVERY)


def test_unchanged_plan_fails_with_the_original_error() -> None:
    events = [
        *RECOVERY[:5],
        event(5, "failed", "comparing", "unchanged", headers=BASE, error=MISMATCH),
    ]
    assert sequence_diagram(events).endswith(
        "    Note over Client: comparing (relisted)\n"
        "    Note over Client: failed (unchanged)<br/>error -32020: Mcp-Param-Region header is missing\n"
    )


@pytest.mark.parametrize(
    ("trigger", "error", "arrow"),
    [
        pytest.param(
            "errored",
            {"type": "RpcError", "code": -32001, "message": "timeout"},
            "    Server-->>Client: error -32001: timeout\n",
            id="json-rpc-error",
        ),
        pytest.param(
            "errored",
            {"type": "TransportError", "code": None, "message": "POST failed"},
            "    Server--xClient: TransportError: POST failed\n",
            id="no-answer",
        ),
    ],
)
def test_failed_send_shows_the_answer(trigger: str, error: dict[str, Any], arrow: str) -> None:
    events = [*SUCCESS[:3], event(3, "failed", "sending", trigger, headers=BASE, error=error)]
    note = "error -32001: timeout" if error["code"] else "TransportError: POST failed"
    assert sequence_diagram(events) == HEAD + arrow + f"    Note over Client: failed ({trigger})<br/>{note}\n"


@pytest.mark.parametrize(
    ("trigger", "arrow"),
    [
        pytest.param("vanished", "    Server-->>Client: tools: 'execute-sql' not listed\n", id="vanished"),
        pytest.param("relist_failed", "    Server--xClient: tools/list failed\n", id="relist-failed"),
    ],
)
def test_failed_relist(trigger: str, arrow: str) -> None:
    events = [*RECOVERY[:4], event(4, "failed", "relisting", trigger, headers=BASE, error=MISMATCH)]
    assert sequence_diagram(events).endswith(
        "    Client->>Server: tools/list\n"
        + arrow
        + f"    Note over Client: failed ({trigger})<br/>error -32020: Mcp-Param-Region header is missing\n"
    )


def test_unmirrorable_call_sends_nothing() -> None:
    error = {"type": "MirroringError", "code": None, "message": "argument /n cannot be mirrored"}
    events = [*SUCCESS[:2], event(2, "failed", "planning", "unmirrorable", error=error)]
    diagram = sequence_diagram(events)
    assert "->>" not in diagram
    assert diagram.endswith(
        "    Note over Client: failed (unmirrorable)<br/>MirroringError: argument /n cannot be mirrored\n"
    )


def test_cancelled_while_sending_has_no_answer() -> None:
    cancelled = {"type": "Cancelled", "code": None, "message": "the call was cancelled"}
    events = [*SUCCESS[:3], event(3, "cancelled", "sending", "cancelled", headers=BASE, error=cancelled)]
    assert sequence_diagram(events) == HEAD + (
        "    Note over Client: cancelled (cancelled)<br/>Cancelled: the call was cancelled\n"
    )


def test_labels_escape_what_mermaid_cannot_take() -> None:
    error = {"type": "RpcError", "code": -32000, "message": 'a;b #1 <b>&"x" 100%\nnext'}
    events = [
        *SUCCESS[:2],
        event(2, "sending", "planning", "planned", headers={"Mcp-Param-Q": "x;y#z"}),
        event(3, "failed", "sending", "errored", error=error),
    ]
    escaped = "error -32000: a#59;b #35;1 #lt;b#gt;#amp;#quot;x#quot; 100#37; next"
    assert sequence_diagram(events).splitlines()[-3:] == [
        "    Client->>Server: tools/call execute-sql (attempt 1)<br/>Mcp-Param-Q: x#59;y#35;z",
        f"    Server-->>Client: {escaped}",
        f"    Note over Client: failed (errored)<br/>{escaped}",
    ]


@pytest.mark.parametrize(
    ("events", "message"),
    [
        pytest.param([], "no events to draw", id="empty"),
        pytest.param(
            [SUCCESS[0], event(1, "planning", "resolving", "resolved", call_id="c-2")],
            "events of 2 calls given; draw one call at a time",
            id="two-calls",
        ),
    ],
)
def test_sequence_diagram_refuses(events: list[CallEvent], message: str) -> None:
    with pytest.raises(ValueError, match=rf"^{message}$"):
        sequence_diagram(events)


def test_parse_events_round_trip() -> None:
    text = "\n".join(e.to_json() for e in RECOVERY) + "\n\n"
    assert parse_events(text) == RECOVERY


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "{}\n",
            r"line 1: not a CallEvent record \(no 'call_id', 'seq', 'tool', 'state', "
            r"'attempt', 'at', 'elapsed'\)",
            id="empty-object",
        ),
        pytest.param(
            SUCCESS[0].to_json() + "\n{oops\n",
            r"line 2: not JSON \(Expecting property name enclosed "
            r"in double quotes at column 2\)",
            id="not-json",
        ),
        pytest.param("\n[1]\n", r"line 2: not a CallEvent record \(a JSON list\)", id="array"),
        pytest.param(
            json.dumps({**SUCCESS[0].to_dict(), "seq": "x"}),
            r"line 1: not a CallEvent record: invalid literal for int\(\) with base 10: 'x'",
            id="bad-field",
        ),
    ],
)
def test_parse_events_names_the_line(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=rf"^{message}$"):
        parse_events(text)


def test_select_call_skips_authorization_flows_in_the_log() -> None:
    flow = [
        AuthEvent(
            call_id="a-1", seq=0, tool="", state="starting", previous=None, trigger=None, attempt=1, at="t", elapsed=0.0
        ),
        AuthEvent(
            call_id="a-1",
            seq=1,
            tool="",
            state="failed",
            previous="starting",
            trigger="challenged_again",
            attempt=1,
            at="t",
            elapsed=0.0,
        ),
    ]
    records = "\n".join(e.to_json() for e in [*SUCCESS, *flow])
    parsed = parse_events(records)
    assert parsed == [*SUCCESS, *flow]
    assert select_call(parsed) == SUCCESS
    with pytest.raises(ValueError, match=r"^no events of call 'a-1' \(calls recorded: c-1\)$"):
        select_call(parsed, "a-1")


def test_select_call_defaults_to_the_last_call() -> None:
    other = [event(0, "resolving", None, None, call_id="c-0")]
    assert select_call([*other, *SUCCESS]) == SUCCESS
    assert select_call([*other, *SUCCESS], "c-0") == other


@pytest.mark.parametrize(
    ("events", "call_id", "message"),
    [
        pytest.param([], None, "no events recorded", id="empty"),
        pytest.param(SUCCESS, "c-9", r"no events of call 'c-9' \(calls recorded: c-1\)", id="unknown"),
    ],
)
def test_select_call_refuses(events: list[CallEvent], call_id: str | None, message: str) -> None:
    with pytest.raises(ValueError, match=rf"^{message}$"):
        select_call(events, call_id)


def test_an_input_round_diagram_names_what_was_asked_and_answered() -> None:
    events = [
        *SUCCESS[:3],
        event(
            3,
            "awaiting_input",
            "sending",
            "input_required",
            headers=BASE,
            round=1,
            input_requests={"who": "elicitation/create"},
        ),
        event(
            4,
            "resending",
            "awaiting_input",
            "gathered",
            headers=BASE,
            round=1,
            input_responses={"who": {"action": "accept", "content": {"name": "Ada; Grace"}}},
        ),
        event(5, "succeeded", "resending", "answered", headers=BASE, round=1),
    ]
    assert sequence_diagram(events) == HEAD + (
        "    Server-->>Client: input_required\n"
        "    Note over Client: awaiting_input (input_required), round 1<br/>who: elicitation/create\n"
        "    Note over Client: resending (gathered)<br/>who = {#quot;action#quot;: #quot;accept#quot;, "
        "#quot;content#quot;: {#quot;name#quot;: #quot;Ada#59; Grace#quot;}}\n"
        "    Client->>Server: tools/call execute-sql (attempt 1, round 1 answers)<br/>MCP-Protocol-Version: "
        "2026-07-28<br/>Mcp-Method: tools/call<br/>Mcp-Name: execute-sql<br/>Mcp-Param-Database: analytics\n"
        "    Server-->>Client: result\n"
        "    Note over Client: succeeded (answered)\n"
    )


def input_run(seq: int, state: str, previous: str | None, trigger: str | None, **fields: Any) -> InputEvent:
    return InputEvent(
        call_id=fields.pop("call_id", "r-i1"),
        seq=seq,
        tool=fields.pop("tool", ""),
        state=state,
        previous=previous,
        trigger=trigger,
        attempt=1,
        at=f"2026-07-28T00:00:0{seq}+00:00",
        elapsed=seq / 1000,
        request=fields.pop("request", "resources/read"),
        target=fields.pop("target", "res://a;b"),
        **fields,
    )


GONE = {"type": "RpcError", "code": -32602, "message": "gone"}


def test_the_input_rounds_of_a_read_are_drawn_with_the_request_and_its_answers() -> None:
    events = [
        input_run(0, "awaiting_input", None, None, round=1, input_requests={"who": "elicitation/create"}),
        input_run(1, "resending", "awaiting_input", "gathered", round=1),
        input_run(2, "awaiting_input", "resending", "input_required", round=2, input_requests={}),
        input_run(3, "resending", "awaiting_input", "gathered", round=2),
        input_run(4, "failed", "resending", "errored", round=2, error=GONE),
    ]
    assert sequence_diagram(events) == (
        "sequenceDiagram\n"
        "    %% mcpfsm input run r-i1 of resources/read res://a#59;b, drawn by `mcpfsm trace`\n"
        "    participant Client\n"
        "    participant Server\n"
        "    Client->>Server: resources/read 'res://a#59;b'\n"
        "    Server-->>Client: input_required\n"
        "    Note over Client: awaiting_input, round 1<br/>who: elicitation/create\n"
        "    Note over Client: resending (gathered)\n"
        "    Client->>Server: resources/read 'res://a#59;b' (round 1 answers)\n"
        "    Server-->>Client: input_required\n"
        "    Note over Client: awaiting_input (input_required), round 2<br/>nothing (state only)\n"
        "    Note over Client: resending (gathered)\n"
        "    Client->>Server: resources/read 'res://a#59;b' (round 2 answers)\n"
        "    Server-->>Client: error -32602: gone\n"
        "    Note over Client: failed (errored)<br/>error -32602: gone\n"
    )


@pytest.mark.parametrize(
    ("last", "arrow"),
    [
        pytest.param(
            input_run(
                1,
                "succeeded",
                "awaiting_input",
                "answered",
                request="roots/list",
                target="7",
                tool="t",
                input_responses={"7": {"roots": []}},
            ),
            "    Client->>Server: result\n    Note over Client: succeeded (answered)<br/>7 = {#quot;roots#quot;: []}\n",
            id="answered",
        ),
        pytest.param(
            input_run(
                1,
                "failed",
                "awaiting_input",
                "refused",
                request="roots/list",
                target="7",
                tool="t",
                error={"type": "RpcError", "code": -32601, "message": "no on_roots handler"},
            ),
            "    Client->>Server: error -32601\n"
            "    Note over Client: failed (refused)<br/>error -32601: no on_roots handler\n",
            id="refused",
        ),
        pytest.param(
            input_run(
                1,
                "failed",
                "awaiting_input",
                "input_failed",
                request="roots/list",
                target="7",
                tool="t",
                error={"type": "KeyError", "code": None, "message": "an input handler raised KeyError"},
            ),
            "    Client->>Server: error -32603\n"
            "    Note over Client: failed (input_failed)<br/>KeyError: an input handler raised KeyError\n",
            id="handler-raised",
        ),
        pytest.param(
            input_run(
                1,
                "failed",
                "awaiting_input",
                "errored",
                request="roots/list",
                target="7",
                tool="t",
                error={"type": "TransportError", "code": None, "message": "connection refused"},
            ),
            "    Client--xServer: answer not sent\n"
            "    Note over Client: failed (errored)<br/>TransportError: connection refused\n",
            id="not-sent",
        ),
        pytest.param(
            input_run(
                1,
                "cancelled",
                "awaiting_input",
                "cancelled",
                request="roots/list",
                target="7",
                tool="t",
                error={"type": "Cancelled", "code": None, "message": "the input run was cancelled"},
            ),
            "    Note over Client: cancelled (cancelled)<br/>Cancelled: the input run was cancelled\n",
            id="cancelled",
        ),
    ],
)
def test_a_legacy_server_request_is_drawn_from_the_server(last: InputEvent, arrow: str) -> None:
    first = input_run(
        0, "awaiting_input", None, None, request="roots/list", target="7", tool="t", input_requests={"7": "roots/list"}
    )
    assert sequence_diagram([last, first]) == (
        "sequenceDiagram\n"
        "    %% mcpfsm input run r-i1 of roots/list 7 (tool t), drawn by `mcpfsm trace`\n"
        "    participant Client\n"
        "    participant Server\n"
        "    Server->>Client: roots/list (id 7)\n"
        "    Note over Client: awaiting_input<br/>7: roots/list\n" + arrow
    )


def test_select_call_picks_input_runs_too_and_defaults_to_the_last_run() -> None:
    run = [
        input_run(0, "awaiting_input", None, None, round=1, input_requests={}),
        input_run(1, "cancelled", "awaiting_input", "cancelled", round=1),
    ]
    records = "\n".join(e.to_json() for e in [*SUCCESS, *run])
    parsed = parse_events(records)
    assert parsed == [*SUCCESS, *run]
    assert select_call(parsed) == run
    assert select_call(parsed, "c-1") == SUCCESS
    with pytest.raises(ValueError, match=r"^no events of call 'x' \(calls recorded: c-1, r-i1\)$"):
        select_call(parsed, "x")


# --- requests through the gate (GateEvent) ------------------------------------------------------------------------


def gate(seq: int, state: str, previous: str | None, trigger: str | None, **fields: Any) -> CallEvent:
    from mcpfsm import GateEvent

    parsed = seq > 0 and not fields.pop("unparsed", False)
    return GateEvent(
        call_id="g-1",
        seq=seq,
        tool="execute-sql" if parsed else "",
        state=state,
        previous=previous,
        trigger=trigger,
        attempt=1,
        at=f"2026-07-28T00:00:0{seq}+00:00",
        elapsed=seq / 1000,
        method="tools/call" if parsed else "",
        name="execute-sql" if parsed else None,
        **fields,
    )


GATE_HEAD = """\
sequenceDiagram
    %% mcpfsm gate run g-1 of tools/call execute-sql, drawn by `mcpfsm trace`
    participant Client
    participant Gate
    participant Upstream
    Client->>Gate: tools/call execute-sql
    Note over Gate: received
    Note over Gate: parsed (read)
"""
REFUSED = "Mcp-Param-Database does not match the argument /database (string)"


def test_a_gate_run_that_learns_and_forwards() -> None:
    events = [
        gate(0, "received", None, None),
        gate(1, "parsed", "received", "read"),
        gate(2, "learning", "parsed", "unknown"),
        gate(3, "schema_known", "learning", "learned"),
        gate(4, "checked", "schema_known", "matched"),
        gate(5, "forwarded", "checked", "forwarded"),
    ]
    assert sequence_diagram(events) == GATE_HEAD + (
        "    Note over Gate: learning (unknown)\n"
        "    Gate->>Upstream: tools/list\n"
        "    Upstream-->>Gate: tools/list result\n"
        "    Note over Gate: schema_known (learned)\n"
        "    Note over Gate: checked (matched)\n"
        "    Gate->>Upstream: tools/call execute-sql\n"
        "    Upstream-->>Gate: answer\n"
        "    Gate-->>Client: answer\n"
        "    Note over Gate: forwarded (forwarded)\n"
    )


def test_a_gate_run_that_refuses_draws_the_status_and_reason_and_nothing_upstream() -> None:
    events = [
        gate(0, "received", None, None),
        gate(1, "parsed", "received", "read"),
        gate(2, "schema_known", "parsed", "known"),
        gate(3, "checked", "schema_known", "mismatched"),
        gate(4, "rejected", "checked", "refused", header="Mcp-Param-Database", reason=REFUSED, status=400),
    ]
    diagram = sequence_diagram(events)
    assert diagram == GATE_HEAD + (
        "    Note over Gate: schema_known (known)\n"
        "    Note over Gate: checked (mismatched)\n"
        f"    Gate-->>Client: HTTP 400<br/>{REFUSED}\n"
        "    Note over Gate: rejected (refused)\n"
    )
    assert "Upstream:" not in diagram and "->>Upstream" not in diagram


@pytest.mark.parametrize(
    ("last", "wire"),
    [
        (
            gate(2, "learning", "parsed", "unknown"),
            ["    Gate->>Upstream: tools/list"],
        ),
        (
            gate(2, "schema_known", "learning", "unlearned"),
            ["    Upstream--xGate: tools/list failed"],
        ),
        (
            gate(2, "cancelled", "parsed", "cancelled"),
            ["    Client--xGate: gone"],
        ),
        (
            gate(2, "reported", "checked", "reported", header="Mcp-Name", reason="Mcp-Name is missing"),
            [
                "    Gate->>Upstream: tools/call execute-sql (a mismatch, reported)",
                "    Upstream-->>Gate: answer",
                "    Gate-->>Client: answer",
            ],
        ),
    ],
)
def test_each_gate_step_on_the_wire(last: CallEvent, wire: list[str]) -> None:
    lines = sequence_diagram([gate(0, "received", None, None), gate(1, "parsed", "received", "read"), last])
    drawn = lines.splitlines()[8:]
    assert [line for line in drawn if "Note over" not in line] == wire


def test_a_legacy_request_is_drawn_without_its_method_and_a_refused_one_too() -> None:
    legacy = [gate(0, "received", None, None), gate(1, "forwarded", "received", "legacy", unparsed=True)]
    assert sequence_diagram(legacy).splitlines()[1:] == [
        "    %% mcpfsm gate run g-1 of a request, drawn by `mcpfsm trace`",
        "    participant Client",
        "    participant Gate",
        "    participant Upstream",
        "    Client->>Gate: a request",
        "    Note over Gate: received",
        "    Gate->>Upstream: a request (legacy: not verified)",
        "    Upstream-->>Gate: answer",
        "    Gate-->>Client: answer",
        "    Note over Gate: forwarded (legacy)",
    ]
    reason = "the request carries 65 Mcp-* headers; at most 64 are accepted"
    oversized = [
        gate(0, "received", None, None),
        gate(1, "rejected", "received", "oversized", unparsed=True, reason=reason, status=431),
    ]
    escaped = reason.replace(";", "#59;")  # Mermaid reads ; as the end of a statement
    assert f"    Gate-->>Client: HTTP 431<br/>{escaped}" in sequence_diagram(oversized).splitlines()


def test_select_call_picks_gate_runs_and_the_summary_names_them() -> None:
    from mcpfsm._tooling.trace import summary_by_server

    runs = [*SUCCESS, gate(0, "received", None, None), gate(1, "parsed", "received", "read")]
    assert select_call(runs) == runs[4:]
    assert summary_by_server(runs).splitlines() == [
        "(no server): 2 runs",
        "  c-1  tool-call  execute-sql  succeeded (4 events)",
        "  g-1  gate  tools/call execute-sql  parsed (2 events)",
    ]
