"""Input asked for outside the tool-call machine is audited (review should-fix 5).

The input rounds of ``prompts/get`` and ``resources/read`` (SEP-2322, modern era) and the server requests a
legacy (2025-11-25) client answers while it waits publish :class:`mcpfsm.InputEvent` values on the client's
audit channels, so an auditor sees what the server asked for and when it was answered, never the answers
themselves unless the client was created with ``audit_answers=True`` (README, "Reading the audit events").
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Final

import httpx
import pytest
import trio
import trio.testing

import mcpfsm
from tests.support.fakeserver import FakeServer, blocks, result, rpc_error
from tests.support.legacyfake import ELICIT, LegacyFake, done, request, sse_event

FORM: Final = {"message": "Who is asking?", "requestedSchema": {"type": "object", "properties": {}}}
ASK: Final = {
    "resultType": "input_required",
    "inputRequests": {"who": {"method": "elicitation/create", "params": FORM}},
}
ASK_MODEL: Final = {
    "resultType": "input_required",
    "inputRequests": {"line": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}},
    "requestState": "opaque",
}
PROMPT: Final = {"messages": [{"role": "user", "content": {"type": "text", "text": "Hi Grace"}}]}
SECRET: Final = "Grace's secret answer"


async def elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": SECRET}}


async def sample(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": SECRET}, "model": "m"}


class Refused(Exception):
    pass


async def refuse(params: dict[str, Any]) -> dict[str, Any]:
    raise Refused(SECRET)


def steps(events: list[mcpfsm.CallEvent]) -> list[tuple[Any, ...]]:
    """Every event but the fields that change from run to run (call_id, at, elapsed), and its run's number."""
    runs: dict[str, int] = {}
    out = []
    for event in events:
        record = event.to_dict()
        assert json.loads(event.to_json()) == record
        run = runs.setdefault(record.pop("call_id"), len(runs) + 1)
        del record["at"], record["elapsed"]
        out.append((run, record))
    return out


def input_event(
    seq: int,
    state: str,
    previous: str | None,
    trigger: str | None,
    *,
    request: str,
    target: str,
    round: int = 0,
    tool: str = "",
    asks: dict[str, str] | None = None,
    answers: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "machine": "input",
        "seq": seq,
        "tool": tool,
        "state": state,
        "previous": previous,
        "trigger": trigger,
        "attempt": 1,
        "headers": None,
        "error": error,
        "round": round,
        "input_requests": asks,
        "input_responses": answers,
        "server": None,
        "request": request,
        "target": target,
    }


# --- modern: the rounds of prompts/get and resources/read -----------------------------------------------------


@pytest.mark.parametrize("audit_answers", [False, True], ids=["answers-hidden", "answers-audited"])
async def test_the_rounds_of_a_prompt_are_audited(audit_answers: bool) -> None:
    fake = FakeServer()
    fake.queue("prompts/get", result(ASK), result(ASK_MODEL), result(PROMPT))
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(
        on_event=events.append, on_elicitation=elicit, on_sampling=sample, audit_answers=audit_answers
    ) as client:
        assert (await client.get_prompt("greet")).text == "Hi Grace"

    elicited = {"who": {"action": "accept", "content": {"name": SECRET}}}
    sampled = {"line": {"role": "assistant", "content": {"type": "text", "text": SECRET}, "model": "m"}}
    common = {"request": "prompts/get", "target": "greet"}
    assert steps(events) == [
        # A run starts in the machine's initial state: no previous state, no trigger (its first input_required
        # result is what started it; the round and the requests say so).
        (1, input_event(0, "awaiting_input", None, None, round=1, asks={"who": "elicitation/create"}, **common)),
        (1, input_event(1, "resending", "awaiting_input", "gathered", round=1,
                        answers=elicited if audit_answers else None, **common)),
        (1, input_event(2, "awaiting_input", "resending", "input_required", round=2,
                        asks={"line": "sampling/createMessage"}, **common)),
        (1, input_event(3, "resending", "awaiting_input", "gathered", round=2,
                        answers=sampled if audit_answers else None, **common)),
        (1, input_event(4, "succeeded", "resending", "answered", round=2, **common)),
    ]
    assert (SECRET in json.dumps([event.to_dict() for event in events])) is audit_answers


async def test_a_request_that_asks_for_nothing_publishes_nothing() -> None:
    fake = FakeServer()
    fake.queue("resources/read", result({"contents": [{"uri": "res://a", "text": "a"}]}))
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append, on_elicitation=elicit) as client:
        assert (await client.read_resource("res://a")).text == "a"
    assert events == []


async def test_a_handler_that_raises_fails_the_read_and_its_text_is_not_recorded() -> None:
    fake = FakeServer()
    fake.queue("resources/read", result(ASK))
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append, on_elicitation=refuse, audit_answers=True) as client:
        with pytest.raises(Refused, match=f"^{SECRET}$"):
            await client.read_resource("res://a")

    common = {"request": "resources/read", "target": "res://a", "round": 1}
    error = {"type": "Refused", "code": None, "message": "an input handler raised Refused"}
    assert steps(events) == [
        (1, input_event(0, "awaiting_input", None, None, asks={"who": "elicitation/create"}, **common)),
        (1, input_event(1, "failed", "awaiting_input", "input_failed", error=error, **common)),
    ]


async def test_too_many_rounds_and_a_failed_resend_end_in_failed() -> None:
    fake = FakeServer()
    fake.queue("prompts/get", result(ASK), result(ASK))
    fake.queue("resources/read", result(ASK), rpc_error(-32602, "Resource not found"))
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append, on_elicitation=elicit, max_input_rounds=1) as client:
        with pytest.raises(mcpfsm.ProtocolError, match=r"^prompts/get 'greet' still asked for input after"):
            await client.get_prompt("greet")
        with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32602: Resource not found$"):
            await client.read_resource("res://a")

    outline = [(run, e["request"], e["state"], e["trigger"], e["round"], e["error"]) for run, e in steps(events)]
    exhausted = {
        "type": "ProtocolError",
        "code": None,
        "message": "prompts/get 'greet' still asked for input after max_input_rounds=1 rounds",
    }
    not_found = {"type": "RpcError", "code": -32602, "message": "Resource not found"}
    assert outline == [
        (1, "prompts/get", "awaiting_input", None, 1, None),
        (1, "prompts/get", "resending", "gathered", 1, None),
        (1, "prompts/get", "failed", "rounds_exhausted", 2, exhausted),
        (2, "resources/read", "awaiting_input", None, 1, None),
        (2, "resources/read", "resending", "gathered", 1, None),
        (2, "resources/read", "failed", "errored", 1, not_found),
    ]


async def test_a_cancelled_read_ends_in_cancelled() -> None:
    fake = FakeServer()
    fake.queue("resources/read", result(ASK), blocks())
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append, on_elicitation=elicit) as client:
        with trio.CancelScope() as scope:

            async def cancel_once_resent() -> None:
                while not any(e.state == "resending" for e in events):
                    await trio.testing.wait_all_tasks_blocked()
                scope.cancel()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(cancel_once_resent)
                await client.read_resource("res://a")
        assert scope.cancelled_caught

    cancelled = {"type": "Cancelled", "code": None, "message": "the input run was cancelled"}
    assert [(e["state"], e["trigger"], e["error"]) for _, e in steps(events)] == [
        ("awaiting_input", None, None),
        ("resending", "gathered", None),
        ("cancelled", "cancelled", cancelled),
    ]


# --- legacy: the server's requests ------------------------------------------------------------------------


async def test_server_requests_on_a_calls_stream_name_the_tool_and_hide_the_answers_by_default() -> None:
    async def call(fake: LegacyFake, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        yield request("e-1", "elicitation/create", ELICIT)
        await fake.answer_to("e-1")
        yield request("p-1", "ping")
        await fake.answer_to("p-1")
        yield request("r-1", "roots/list")
        await fake.answer_to("r-1")
        yield done(body, "thanks")

    fake = LegacyFake(call)
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append, on_elicitation=elicit) as client:
        assert (await client.call_tool("interview", {})).text == "thanks"

    no_roots = {"code": -32601, "message": "no on_roots handler: the client did not declare 'roots/list'"}
    assert fake.answers["r-1"]["error"] == no_roots
    calls = [e["state"] for _, e in steps(events) if e["machine"] == "tool-call"]
    assert calls == ["resolving", "planning", "sending", "succeeded"]
    tool = {"tool": "interview"}
    # By run (a stable sort): an answer's delivery may be recorded after the next request arrived.
    assert sorted(((run, e) for run, e in steps(events) if e["machine"] == "input"), key=lambda step: step[0]) == [
        (2, input_event(0, "awaiting_input", None, None, request="elicitation/create", target="e-1",
                        asks={"e-1": "elicitation/create"}, **tool)),
        (2, input_event(1, "succeeded", "awaiting_input", "answered", request="elicitation/create", target="e-1",
                        **tool)),
        (3, input_event(0, "awaiting_input", None, None, request="roots/list", target="r-1",
                        asks={"r-1": "roots/list"}, **tool)),
        (3, input_event(1, "failed", "awaiting_input", "refused", request="roots/list", target="r-1",
                        error={"type": "RpcError", "code": -32601, "message": no_roots["message"]}, **tool)),
    ]


async def test_server_requests_on_the_standalone_stream_with_answers_audited() -> None:
    fake = LegacyFake()
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append, on_elicitation=elicit, on_sampling=refuse, audit_answers=True):
        await fake.pushed.send(sse_event(request("e-1", "elicitation/create", ELICIT)))
        await fake.answer_to("e-1")
        await fake.pushed.send(sse_event(request("s-1", "sampling/createMessage", {"messages": [], "maxTokens": 1})))
        await fake.answer_to("s-1")
        await trio.testing.wait_all_tasks_blocked()

    defaults = {p: s["default"] for p, s in ELICIT["requestedSchema"]["properties"].items()}
    accepted = {"action": "accept", "content": {**defaults, "name": SECRET}}
    assert fake.answers["e-1"]["result"] == accepted
    failed = {"code": -32603, "message": "the client's sampling/createMessage handler failed"}
    assert fake.answers["s-1"]["error"] == failed
    raised = {"type": "Refused", "code": None, "message": "an input handler raised Refused"}
    # By run (a stable sort): an answer's delivery may be recorded after the next request arrived.
    assert sorted(steps(events), key=lambda step: step[0]) == [
        (1, input_event(0, "awaiting_input", None, None, request="elicitation/create", target="e-1",
                        asks={"e-1": "elicitation/create"})),
        (1, input_event(1, "succeeded", "awaiting_input", "answered", request="elicitation/create", target="e-1",
                        answers={"e-1": accepted})),
        (2, input_event(0, "awaiting_input", None, None, request="sampling/createMessage", target="s-1",
                        asks={"s-1": "sampling/createMessage"})),
        (2, input_event(1, "failed", "awaiting_input", "input_failed", request="sampling/createMessage",
                        target="s-1", error=raised)),
    ]


async def test_an_answer_the_client_closed_on_ends_in_cancelled() -> None:
    fake = LegacyFake()
    events: list[mcpfsm.CallEvent] = []
    asked = trio.Event()

    async def wait_for_the_user(params: dict[str, Any]) -> dict[str, Any]:
        asked.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async with fake.client(on_event=events.append, on_elicitation=wait_for_the_user):
        await fake.pushed.send(sse_event(request("e-1", "elicitation/create", ELICIT)))
        await asked.wait()

    assert [(e["state"], e["trigger"], e["error"]) for _, e in steps(events)] == [
        ("awaiting_input", None, None),
        ("cancelled", "cancelled", {"type": "Cancelled", "code": None, "message": "the input run was cancelled"}),
    ]


async def test_events_round_trip_through_the_audit_log_format() -> None:
    event = mcpfsm.InputEvent(
        call_id="x-i1", seq=1, tool="", state="succeeded", previous="awaiting_input", trigger="answered",
        attempt=1, at="2026-01-01T00:00:00.000000+00:00", elapsed=0.5, request="roots/list", target="7",
        input_responses={"7": {"roots": []}},
    )
    assert mcpfsm.CallEvent.from_dict(json.loads(event.to_json())) == event
    with pytest.raises(ValueError, match=r"^not an InputEvent record: 'request'$"):
        mcpfsm.CallEvent.from_dict({k: v for k, v in event.to_dict().items() if k != "request"})


async def test_a_standalone_stream_reopened_while_a_call_renews_the_session_names_no_tool() -> None:
    # The renewal runs in the call's task (its context names the tool); the new stream outlives the call.
    fake = LegacyFake()
    expired = {"count": 0}
    original = fake.handle

    async def handle(http: httpx.Request) -> httpx.Response:
        body = json.loads(http.content) if http.content else {}
        if body.get("method") == "tools/call" and expired["count"] == 0:
            expired["count"] += 1
            return httpx.Response(404)
        return await original(http)

    fake.handle = handle  # type: ignore[method-assign]
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append, on_elicitation=elicit) as client:
        assert (await client.call_tool("echo", {})).text == "plain"
        await fake.pushed.send(sse_event(request("e-1", "elicitation/create", ELICIT)))
        await fake.answer_to("e-1")

    assert [stream.closed for stream in fake.streams] == [True, True]
    common = {"request": "elicitation/create", "target": "e-1"}
    assert [(run, e) for run, e in steps(events) if e["machine"] == "input"] == [
        (2, input_event(0, "awaiting_input", None, None, asks={"e-1": "elicitation/create"}, **common)),
        (2, input_event(1, "succeeded", "awaiting_input", "answered", **common)),
    ]
