"""A property of the tool-call machine's input loop: bounded, and SEP-2322 members go only where they belong.

Hypothesis scripts what a modern server answers to one ``tools/call``: complete results, rounds that ask for
input (any mix of elicitation, sampling and roots, with or without ``requestState``), state-only rounds,
``-32020`` and other errors. The client calls through a stale ``Tool`` handle (so a ``-32020`` relists and
retries), its elicitation handler sends a parallel request, and a small reference model, written from the
rules rather than from the code, says what each resend must carry and how the call must end.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

import httpx
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mcpfsm
from tests.support.fakeserver import FRESH_SQL, SQL_ARGS, STALE_SQL

URL: Final = "http://prop.test/mcp"
KINDS: Final = {
    "a": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {"type": "object"}}},
    "b": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}},
    "c": {"method": "roots/list"},
}
ANSWERS: Final = {
    "a": {"action": "accept", "content": {}},
    "b": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"},
    "c": {"roots": []},
}
MRTR: Final = ("inputResponses", "requestState")


@dataclass(frozen=True)
class Step:
    """One scripted answer to ``tools/call execute-sql``."""

    kind: str  # "complete", "ask", "mismatch", "error"
    keys: tuple[str, ...] = ()
    state: str | None = None


steps = st.one_of(
    st.just(Step("complete")),
    st.just(Step("mismatch")),
    st.just(Step("error")),
    st.builds(
        Step,
        kind=st.just("ask"),
        keys=st.lists(st.sampled_from(sorted(KINDS)), unique=True, max_size=3).map(tuple),
        state=st.none() | st.text(max_size=8),
    ).filter(lambda step: bool(step.keys) or step.state is not None),
)


def expected_run(script: list[Step], max_rounds: int) -> tuple[list[dict[str, Any]], str]:
    """The reference model: the SEP-2322 members of each ``tools/call`` sent, and how the call ends."""
    fields: dict[str, Any] = {}
    sent = [fields]
    retried = False
    rounds = 0
    for step in [*script, Step("complete")]:
        if step.kind == "complete":
            return sent, "result"
        if step.kind == "error":
            return sent, "RpcError"
        if step.kind == "mismatch":
            if retried:
                return sent, "HeaderMismatchError"
            retried = True
            sent.append(fields)  # the retry resends the round that failed
            continue
        rounds += 1
        if rounds > max_rounds:
            return sent, "ProtocolError"
        fields = {}
        if step.keys:
            fields["inputResponses"] = {key: ANSWERS[key] for key in step.keys}
        if step.state is not None:
            fields["requestState"] = step.state
        sent.append(fields)
    raise AssertionError("unreachable")


class Server:
    """Answers ``tools/call execute-sql`` from the script; everything else plainly."""

    def __init__(self, script: list[Step]) -> None:
        self.script = list(script)
        self.listed = [STALE_SQL]
        self.seen: list[dict[str, Any]] = []

    async def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.seen.append(body)
        method, params = body["method"], body.get("params", {})
        if method == "server/discover":
            return self.result(body, {"supportedVersions": ["2026-07-28"]})
        if method == "tools/list":
            return self.result(body, {"tools": self.listed})
        if method == "resources/list":
            return self.result(body, {"resources": []})
        assert method == "tools/call" and params["name"] == "execute-sql"
        step = self.script.pop(0) if self.script else Step("complete")
        if step.kind == "complete":
            return self.result(body, {"content": []})
        if step.kind in ("mismatch", "error"):
            code = -32020 if step.kind == "mismatch" else -32001
            error = {"code": code, "message": step.kind}
            return httpx.Response(400, json={"jsonrpc": "2.0", "id": body["id"], "error": error})
        value: dict[str, Any] = {"resultType": "input_required"}
        if step.keys:
            value["inputRequests"] = {key: KINDS[key] for key in step.keys}
        if step.state is not None:
            value["requestState"] = step.state
        return self.result(body, value)

    @staticmethod
    def result(body: dict[str, Any], value: dict[str, Any]) -> httpx.Response:
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": value})


async def run(server: Server, max_rounds: int, events: list[mcpfsm.CallEvent]) -> str:
    client: mcpfsm.Client

    async def on_elicitation(params: dict[str, Any]) -> dict[str, Any]:
        await client.request("resources/list")  # a parallel request while the round is open
        return ANSWERS["a"]

    async def on_sampling(params: dict[str, Any]) -> dict[str, Any]:
        return ANSWERS["b"]

    async def on_roots(params: dict[str, Any]) -> dict[str, Any]:
        return ANSWERS["c"]

    client = mcpfsm.Client.http(
        URL,
        http_transport=httpx.MockTransport(server.handle),
        on_event=events.append,
        on_elicitation=on_elicitation,
        on_sampling=on_sampling,
        on_roots=on_roots,
        max_input_rounds=max_rounds,
    )
    async with client:
        tool = (await client.tools()).get("execute-sql")
        assert tool is not None
        server.listed = [FRESH_SQL]  # the handle is stale from now on: a -32020 is worth one retry
        try:
            await tool.call(SQL_ARGS)
        except mcpfsm.McpError as exc:
            return type(exc).__name__
        return "result"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=st.lists(steps, max_size=8), max_rounds=st.integers(min_value=1, max_value=4))
def test_the_input_loop_is_bounded_and_never_leaks_its_members(script: list[Step], max_rounds: int) -> None:
    server = Server(script)
    events: list[mcpfsm.CallEvent] = []
    outcome = trio.run(run, server, max_rounds, events, clock=trio.testing.MockClock(autojump_threshold=0))

    expected_sent, expected_outcome = expected_run(script, max_rounds)
    calls = [body for body in server.seen if body["method"] == "tools/call"]
    assert outcome == expected_outcome
    assert [{k: v for k, v in call["params"].items() if k in MRTR} for call in calls] == expected_sent
    # Nothing else ever carries an MRTR member: not the listings, not the parallel requests.
    others = [body for body in server.seen if body["method"] != "tools/call"]
    assert [body for body in others if any(k in body.get("params", {}) for k in MRTR)] == []
    assert len({body["id"] for body in server.seen}) == len(server.seen)
    # The machine: the loop never passes its bound, the recovery runs at most once, the call ends.
    assert max(event.round for event in events) <= max_rounds + 1
    assert all(event.round <= max_rounds for event in events if event.state.endswith("awaiting_input"))
    states = [event.state for event in events]
    assert states.count("relisting") <= 1 and states.count("retrying") <= 1
    assert states[-1] == ("succeeded" if outcome == "result" else "failed")
    assert len(calls) == len(expected_sent) <= max_rounds + 2
