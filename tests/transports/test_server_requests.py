"""Requests from a legacy (2025-11-25) server, over httpx.MockTransport: the standalone GET stream and the answers.

``LegacyFake`` (``tests/support/legacyfake.py``) is a session-ful legacy server: ``initialize`` assigns a session, the
standalone ``GET`` stream carries whatever a test pushes onto it, and each ``tools/call`` answers with an event
stream that a test scripts as an async generator, which may wait for the client's answer to a request it sent.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import httpx
import pytest
import trio
import trio.testing

import mcpfsm
from tests.support.legacyfake import (
    ELICIT,
    SESSION_HEADERS,
    LegacyFake,
    Sent,
    done,
    request,
    sse_event,
)


async def accept_nothing(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {}}


# --- the handshake and the standalone stream ---------------------------------------------------------------------


async def test_initialize_declares_the_handlers_and_the_standalone_stream_opens_after_initialized() -> None:
    fake = LegacyFake()

    async def no_roots(params: dict[str, Any]) -> dict[str, Any]:
        return {"roots": []}

    async with fake.client(on_elicitation=accept_nothing, on_roots=no_roots, elicitation_modes=("form", "url")):
        pass

    assert fake.calls() == [
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("GET", None),
        ("DELETE", None),
    ]
    assert fake.sent[0].body["params"]["capabilities"] == {"elicitation": {"form": {}, "url": {}}, "roots": {}}
    assert fake.sent[2].headers == {"accept": "text/event-stream", **SESSION_HEADERS}
    # Closing ends the standalone stream before the DELETE.
    assert [stream.closed for stream in fake.streams] == [True]


@pytest.mark.parametrize(("status", "warned"), [(405, False), (500, True)], ids=["405-none", "500-failed"])
async def test_a_refused_standalone_stream_leaves_the_session_working(
    records: list[tuple[str, str]], status: int, warned: bool
) -> None:
    fake = LegacyFake()
    fake.gets = [status]

    async with fake.client() as client:
        assert (await client.call_tool("echo", {})).text == "plain"

    assert fake.calls() == [
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("GET", None),
        ("POST", "tools/call"),
        ("DELETE", None),
    ]
    warnings = [message for level, message in records if level == "WARNING"]
    expected = ["could not open the server's event stream: HTTP 500 Internal Server Error"] if warned else []
    assert warnings == expected


# --- answering the server --------------------------------------------------------------------------------------


async def test_an_elicitation_on_the_call_stream_is_answered_by_post_with_the_defaults_filled_in() -> None:
    async def call(fake: LegacyFake, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        yield request("e-1", "elicitation/create", ELICIT)
        answered = await fake.answer_to("e-1")
        yield done(body, json.dumps(answered["result"]["content"], sort_keys=True))

    fake = LegacyFake(call)
    asked: list[dict[str, Any]] = []

    async def on_elicitation(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"age": 41}}

    async with fake.client(on_elicitation=on_elicitation) as client:
        outcome = await client.call_tool("echo", {})

    filled = {"name": "John Doe", "age": 41, "score": 95.5, "status": "active", "verified": True}
    assert asked == [ELICIT]
    assert json.loads(outcome.text) == filled
    answer = next(s for s in fake.sent if s.http == "POST" and s.body.get("id") == "e-1")
    assert answer.body == {"jsonrpc": "2.0", "id": "e-1", "result": {"action": "accept", "content": filled}}
    # An answer is no request: the session and version only, no Mcp-Method.
    assert answer.headers == {"accept": "application/json, text/event-stream", **SESSION_HEADERS}


async def test_a_request_on_the_standalone_stream_is_answered_while_the_call_waits() -> None:
    async def call(fake: LegacyFake, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        # Like a server that elicits without a related request: the GET stream carries it.
        await fake.pushed.send(sse_event(request("e-7", "elicitation/create", ELICIT)))
        answered = await fake.answer_to("e-7")
        yield done(body, answered["result"]["action"])

    fake = LegacyFake(call)

    async with fake.client(on_elicitation=accept_nothing) as client:
        assert (await client.call_tool("echo", {})).text == "accept"

    assert fake.answers["e-7"]["result"]["content"] == {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }


async def test_ping_and_notifications_on_the_standalone_stream() -> None:
    fake = LegacyFake()
    seen: list[tuple[str, dict[str, Any]]] = []
    note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}

    async with fake.client(on_notification=lambda method, params: seen.append((method, params))):
        await fake.pushed.send(sse_event(note) + sse_event(request("p-1", "ping")))
        assert await fake.answer_to("p-1") == {"jsonrpc": "2.0", "id": "p-1", "result": {}}

    assert seen == [("notifications/tools/list_changed", {})]


class Rejected(Exception):
    pass


async def rejects(params: dict[str, Any]) -> dict[str, Any]:
    raise mcpfsm.RpcError(-1, "User rejected sampling request")


async def crashes(params: dict[str, Any]) -> dict[str, Any]:
    raise Rejected("the user typed: hunter2")


async def accepts_too_young(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"age": 7}}


SAMPLING: Final = {"messages": [], "maxTokens": 1}


@pytest.mark.parametrize(
    ("options", "method", "params", "error"),
    [
        pytest.param(
            {},
            "elicitation/create",
            ELICIT,
            {"code": -32601, "message": "no on_elicitation handler: the client did not declare 'elicitation/create'"},
            id="no-handler",
        ),
        pytest.param(
            {"on_elicitation": accept_nothing},
            "elicitation/create",
            {"mode": "url", "message": "Sign in", "url": "https://x.test", "elicitationId": "1"},
            {"code": -32602, "message": "elicitation mode 'url' was not declared"},
            id="undeclared-mode",
        ),
        pytest.param(
            {"on_sampling": rejects},
            "sampling/createMessage",
            SAMPLING,
            {"code": -1, "message": "User rejected sampling request"},
            id="rpc-error",
        ),
        pytest.param(
            {"on_sampling": crashes},
            "sampling/createMessage",
            SAMPLING,
            {"code": -32603, "message": "the client's sampling/createMessage handler failed"},
            id="handler-crash",
        ),
        pytest.param(
            {}, "tasks/get", {}, {"code": -32601, "message": "mcpfsm does not support 'tasks/get'"}, id="unknown"
        ),
        pytest.param(
            {"on_elicitation": accepts_too_young},
            "elicitation/create",
            {"message": "Age?", "requestedSchema": {"properties": {"age": {"type": "integer", "minimum": 18}}}},
            {
                "code": -32603,
                "message": "on_elicitation accepted content that does not match the requestedSchema:"
                " /age: the value is less than the minimum of 18",
            },
            id="content-breaks-the-schema",
        ),
    ],
)
async def test_a_request_that_cannot_be_answered_gets_a_json_rpc_error(
    records: list[tuple[str, str]], options: dict[str, Any], method: str, params: dict[str, Any], error: dict[str, Any]
) -> None:
    fake = LegacyFake()

    async with fake.client(**options):
        await fake.pushed.send(sse_event(request("r-1", method, params)))
        assert await fake.answer_to("r-1") == {"jsonrpc": "2.0", "id": "r-1", "error": error}

    warnings = [message for level, message in records if level == "WARNING"]
    if method == "elicitation/create" and error["code"] == -32603:
        # mcpfsm's own check: it names the property and the rule, never the value.
        assert warnings == [f"the elicitation/create handler's answer was not sent: {error['message']}"]
    elif error["code"] == -32603:
        # What the user typed never reaches a log line or the server: only the exception's type.
        assert warnings == ["the sampling/createMessage handler raised Rejected; answering -32603"]
    else:
        assert warnings == []
    assert not any("hunter2" in message for _, message in records)


async def test_a_handler_waiting_for_its_user_does_not_hold_up_other_requests() -> None:
    fake = LegacyFake()
    asked, release = trio.Event(), trio.Event()

    async def on_elicitation(params: dict[str, Any]) -> dict[str, Any]:
        asked.set()
        await release.wait()
        return {"action": "decline"}

    async with fake.client(on_elicitation=on_elicitation) as client:
        await fake.pushed.send(sse_event(request("e-1", "elicitation/create", ELICIT)))
        await asked.wait()
        # The user has not answered yet; the client goes on working.
        assert (await client.call_tool("echo", {})).text == "plain"
        assert "e-1" not in fake.answers
        release.set()
        assert await fake.answer_to("e-1") == {"jsonrpc": "2.0", "id": "e-1", "result": {"action": "decline"}}


async def test_closing_the_client_cancels_answers_still_waiting_for_their_user() -> None:
    fake = LegacyFake()
    asked, cancelled = trio.Event(), trio.Event()

    async def on_elicitation(params: dict[str, Any]) -> dict[str, Any]:
        asked.set()
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    async with fake.client(on_elicitation=on_elicitation):
        await fake.pushed.send(sse_event(request("e-1", "elicitation/create", ELICIT)))
        await asked.wait()

    assert cancelled.is_set()
    assert "e-1" not in fake.answers
    assert fake.calls()[-1] == ("DELETE", None)


# --- when the standalone stream ends --------------------------------------------------------------------------


def chunks(*parts: bytes, then: BaseException | None = None) -> Callable[[], AsyncIterator[bytes]]:
    async def body() -> AsyncIterator[bytes]:
        for part in parts:
            yield part
        if then is not None:
            raise then

    return body


async def until(condition: Callable[[], bool]) -> None:
    while not condition():
        await trio.sleep(0)


async def test_a_stream_the_server_ends_without_event_ids_stays_closed() -> None:
    fake = LegacyFake()
    fake.gets = [chunks(sse_event({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}))]
    sleeps: list[float] = []

    async with fake.client(sleeps=sleeps) as client:
        await until(lambda: fake.streams[0].closed)
        assert (await client.call_tool("echo", {})).text == "plain"

    assert [call for call in fake.calls() if call[0] == "GET"] == [("GET", None)]
    assert sleeps == []


@pytest.mark.parametrize(
    "first",
    [
        pytest.param(chunks(b"id: 7\nretry: 250\ndata: \n\n"), id="ended-after-ids"),
        pytest.param(chunks(b"id: 7\nretry: 250\ndata: \n\n", then=httpx.ReadError("reset")), id="broken"),
    ],
)
async def test_a_stream_that_broke_or_expects_a_resume_is_reopened_with_last_event_id(
    first: Callable[[], AsyncIterator[bytes]],
) -> None:
    fake = LegacyFake()
    fake.gets = [first]
    sleeps: list[float] = []

    async with fake.client(sleeps=sleeps, on_elicitation=accept_nothing):
        await until(lambda: len(fake.streams) == 2)
        await fake.pushed.send(sse_event(request("e-1", "elicitation/create", ELICIT), event_id="8"))
        await fake.answer_to("e-1")

    gets = [s for s in fake.sent if s.http == "GET"]
    assert [g.headers.get("last-event-id") for g in gets] == [None, "7"]
    assert sleeps == [0.25]


@pytest.mark.parametrize(
    ("gets", "opened", "sleeps_taken"),
    [
        # Streams without a message back off (doubling, at most a minute), and ten in a row end the loop.
        pytest.param(
            ["id", *["nothing"] * 9, "id"],
            10,
            [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0],
            id="ten-streams-without-a-message",
        ),
        pytest.param(["id", 404, "id"], 2, [1.0], id="refused"),
        pytest.param(["id", 405, "id"], 2, [1.0], id="none-any-more"),
    ],
)
async def test_reopening_stops_after_ten_streams_without_a_message_in_a_row_or_a_refusal(
    gets: list[str | int], opened: int, sleeps_taken: list[float]
) -> None:
    fake = LegacyFake()
    scripted = {"id": chunks(b"id: 1\ndata: \n\n"), "nothing": chunks()}
    fake.gets = [scripted[g] if isinstance(g, str) else g for g in gets]
    sleeps: list[float] = []

    async with fake.client(sleeps=sleeps):
        await until(lambda: len(sleeps) == len(sleeps_taken) and len(fake.sent) == 2 + opened)
        await trio.testing.wait_all_tasks_blocked()

    assert [s.http for s in fake.sent].count("GET") == opened
    assert sleeps == sleeps_taken


async def test_a_session_that_expired_is_renewed_with_a_new_standalone_stream() -> None:
    fake = LegacyFake()
    expired = {"count": 0}
    original: Callable[[httpx.Request], Awaitable[httpx.Response]] = fake.handle

    async def handle(http: httpx.Request) -> httpx.Response:
        body = json.loads(http.content) if http.content else {}
        if body.get("method") == "tools/call" and expired["count"] == 0:
            expired["count"] += 1
            fake.sent.append(Sent(http="POST", body=body, headers={}))
            return httpx.Response(404)
        return await original(http)

    fake.handle = handle  # type: ignore[method-assign]

    async with fake.client() as client:
        assert (await client.call_tool("echo", {})).text == "plain"

    assert fake.calls() == [
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("GET", None),
        ("POST", "tools/call"),
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("GET", None),
        ("POST", "tools/call"),
        ("DELETE", None),
    ]
    # The first stream was closed when the second opened.
    assert [stream.closed for stream in fake.streams] == [True, True]
