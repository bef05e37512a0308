"""Event streams through the HTTP transport, over httpx.MockTransport (MCP "Transports").

Every edge of the SSE standard that can reach a client (line endings, chunk boundaries, comments,
event types, multi-line data), what the transport does with messages that are not the response,
and the legacy resumption with ``GET`` + ``Last-Event-ID``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Final

import httpx
import pytest
import trio

import mcpfsm
from mcpfsm._core.jsonrpc import Notification, Request, encode_request
from mcpfsm._transports.http import HttpTransport

URL: Final = "http://sse.test/mcp"
MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
SESSION: Final = "s-1"
PROGRESS: Final = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}
LOG: Final = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}
CALL_RESULT: Final = {"content": [{"type": "text", "text": "right"}]}


class Chunks(httpx.AsyncByteStream):
    """A response body delivered in exactly these network chunks; optionally never ends (like a GET stream).

    A ``trio.Event`` among the chunks pauses the body until it is set (a server waiting for an answer).
    """

    def __init__(self, chunks: list[bytes | trio.Event], *, endless: bool = False) -> None:
        self.chunks = chunks
        self.endless = endless
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            if isinstance(chunk, trio.Event):
                await chunk.wait()
            else:
                yield chunk
        if self.endless:
            await trio.sleep_forever()

    async def aclose(self) -> None:
        self.closed = True


def stream(*chunks: bytes | trio.Event, endless: bool = False) -> tuple[httpx.Response, Chunks]:
    body = Chunks(list(chunks), endless=endless)
    return httpx.Response(200, headers={"Content-Type": "text/event-stream"}, stream=body), body


def event(message: dict[str, Any] | str, *, id: str | None = None, retry: int | None = None) -> bytes:
    data = message if isinstance(message, str) else json.dumps(message)
    lines = [f"id: {id}"] if id is not None else []
    if retry is not None:
        lines.append(f"retry: {retry}")
    lines.append(f"data: {data}")
    return ("\n".join(lines) + "\n\n").encode()


def answer(request_id: int, value: dict[str, Any] = CALL_RESULT) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


# --- the transport alone: what a stream hands back ------------------------------------------------------------


async def post(response: httpx.Response, inbound: list[Notification | Request] | None = None) -> str | bytes | None:
    transport = HttpTransport(URL, transport=httpx.MockTransport(lambda request: response))

    async def record(message: Notification | Request) -> None:
        assert inbound is not None
        inbound.append(message)

    if inbound is not None:
        await transport.open(record)
    reply = await transport.send(encode_request(1, "tools/call", {"name": "echo", "arguments": {}}))
    return None if reply is None else reply.body


# One stream with every feature: a comment, retry and id fields, a notification, an event of another
# type carrying a response to our id (it must not be taken), and the response over several data lines.
EVERYTHING: Final = (
    ": a comment, then a field without a colon\n"
    "ignored-field\n"
    "retry: 250\n"
    "id: 7\n"
    "\n"
    "event: message\n"
    'data: {"jsonrpc":"2.0","method":"notifications/progress",\n'
    'data:"params":{"progressToken":1,"progress":1}}\n'
    "\n"
    "event: endpoint\n"
    'data: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"wrong"}]}}\n'
    "\n"
    ":keep-alive\n"
    'data: {"jsonrpc":"2.0","id":1,\n'
    "data:  \n"
    'data: "result":{"content":[{"type":"text","text":"right"}]}}\n'
    "\n"
)
EXPECTED: Final = '{"jsonrpc":"2.0","id":1,\n \n"result":{"content":[{"type":"text","text":"right"}]}}'
ENDINGS: Final = {"LF": "\n", "CRLF": "\r\n", "CR": "\r"}


@pytest.mark.parametrize("ending", ENDINGS.values(), ids=ENDINGS.keys())
async def test_a_stream_in_one_chunk(ending: str) -> None:
    inbound: list[Notification | Request] = []

    reply = await post(stream(EVERYTHING.replace("\n", ending).encode())[0], inbound)

    assert reply == EXPECTED
    assert inbound == [Notification(method="notifications/progress", params={"progressToken": 1, "progress": 1})]


@pytest.mark.parametrize("ending", ENDINGS.values(), ids=ENDINGS.keys())
async def test_a_stream_one_byte_per_chunk(ending: str) -> None:
    body = EVERYTHING.replace("\n", ending).encode()
    inbound: list[Notification | Request] = []

    reply = await post(stream(*(body[i : i + 1] for i in range(len(body))))[0], inbound)

    assert reply == EXPECTED
    assert [m.method for m in inbound] == ["notifications/progress"]


@pytest.mark.parametrize("ending", ENDINGS.values(), ids=ENDINGS.keys())
async def test_a_stream_cut_in_two_at_every_byte(ending: str) -> None:
    body = EVERYTHING.replace("\n", ending).encode()
    for cut in range(1, len(body)):
        inbound: list[Notification | Request] = []

        reply = await post(stream(body[:cut], body[cut:])[0], inbound)

        assert (cut, reply) == (cut, EXPECTED)
        assert (cut, [m.method for m in inbound]) == (cut, ["notifications/progress"])


async def test_a_multibyte_character_cut_between_chunks_arrives_whole() -> None:
    message = json.dumps(answer(1, {"content": [{"type": "text", "text": "世界"}]}), ensure_ascii=False)
    body = f"data: {message}\n\n".encode()
    cut = body.index("界".encode()) + 1

    assert await post(stream(body[:cut], body[cut:])[0]) == message


@pytest.mark.parametrize("other", [99, "1", None], ids=["another-id", "string-id", "null-id"])
async def test_a_response_to_no_open_request_is_ignored_with_a_warning(
    other: object, records: list[tuple[str, str]]
) -> None:
    wrong = {"jsonrpc": "2.0", "id": other, "result": {"content": []}}

    reply = await post(stream(event(wrong), event(answer(1)))[0])

    assert reply == json.dumps(answer(1))
    assert [r for r in records if r[0] == "WARNING"] == [
        ("WARNING", f"ignoring a response for unknown request id {other!r} on the event stream")
    ]


@pytest.mark.parametrize(
    "chunks",
    [
        pytest.param([], id="empty"),
        pytest.param([event(PROGRESS), event(LOG)], id="notifications-only"),
        pytest.param([event("", id="1", retry=10)], id="priming-event-only"),
        pytest.param([event(answer(1))[:-1]], id="response-without-its-blank-line"),
        pytest.param([event(answer(1), id="2").replace(b"data", b"event: endpoint\ndata")], id="foreign-event-type"),
    ],
)
async def test_a_stream_that_ends_before_the_response_is_a_transport_error(chunks: list[bytes]) -> None:
    with pytest.raises(mcpfsm.TransportError, match=r"^the server closed the event stream before answering request 1$"):
        await post(stream(*chunks)[0])


async def test_a_malformed_message_on_the_stream_is_a_protocol_error() -> None:
    with pytest.raises(mcpfsm.ProtocolError, match=r"^peer sent invalid JSON: "):
        await post(stream(event("{not json"))[0])


async def test_a_stream_is_closed_once_its_response_has_arrived() -> None:
    response, body = stream(event(answer(1)), endless=True)

    with trio.fail_after(5):
        assert await post(response) == json.dumps(answer(1))

    assert body.closed


# --- through the client: inbound messages and resumption ----------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Sent:
    """One request as the scripted server saw it."""

    http: str
    body: Any
    headers: dict[str, str]

    @property
    def method(self) -> str | None:
        return self.body.get("method") if isinstance(self.body, dict) else None


Answer = Callable[[Any], httpx.Response]


class Script:
    """An ``httpx.MockTransport`` handler answering each request with the next scripted answer.

    Answers are functions of the decoded JSON body (``None`` for GET/DELETE); DELETE gets 200, and the
    standalone GET a legacy session opens (one without ``Last-Event-ID``) 405. ``answered`` is set when
    the client POSTs its answer to a server request.
    """

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.sent: list[Sent] = []
        self.answered = trio.Event()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        headers = {k: v for k, v in request.headers.items() if k not in ("host", "content-length")}
        self.sent.append(Sent(http=request.method, body=body, headers=headers))
        if request.method == "DELETE":
            return httpx.Response(200)
        if request.method == "GET" and "last-event-id" not in headers:
            return httpx.Response(405)
        if isinstance(body, dict) and "method" not in body:
            self.answered.set()
        assert self.answers, f"unscripted {request.method} {body}"
        return self.answers.pop(0)(body)

    @property
    def calls(self) -> list[tuple[str, str | None]]:
        return [(s.http, s.method) for s in self.sent]

    def mcp(self, index: int) -> dict[str, str]:
        return {k: v for k, v in self.sent[index].headers.items() if k.startswith("mcp-")}


def json_result(value: dict[str, Any], *, session: str | None = None) -> Answer:
    def reply(body: Any) -> httpx.Response:
        headers = {"Mcp-Session-Id": session} if session else None
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": value}, headers=headers)

    return reply


def sse(
    *chunks: bytes | trio.Event | Callable[[Any], bytes], keep: list[Chunks] | None = None, endless: bool = False
) -> Answer:
    """A stream answer; a callable chunk is built from the request body (to echo its id)."""

    def reply(body: Any) -> httpx.Response:
        response, stream_body = stream(*(c(body) if callable(c) else c for c in chunks), endless=endless)
        if keep is not None:
            keep.append(stream_body)
        return response

    return reply


def the_answer(body: Any) -> bytes:
    return event(answer(body["id"]))


def status(code: int) -> Answer:
    return lambda body: httpx.Response(code)


INITIALIZE_RESULT: Final = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
HANDSHAKE: Final = (json_result(INITIALIZE_RESULT, session=SESSION), status(202))


class Sleeps:
    """The transport's ``sleep``: records each delay and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def client(
    script: Script,
    protocol: str,
    sleeps: Sleeps | None = None,
    on_notification: Callable[[str, dict[str, Any]], object] | None = None,
) -> mcpfsm.Client:
    transport = HttpTransport(URL, transport=httpx.MockTransport(script), sleep=sleeps or Sleeps())
    return mcpfsm.Client(transport, protocol=protocol, on_notification=on_notification)


ERAS: Final = {"modern": (MODERN, 0), "legacy": (LEGACY, 3)}


@pytest.mark.parametrize(("protocol", "first"), ERAS.values(), ids=ERAS.keys())
async def test_notifications_before_the_response_reach_on_notification_in_order(protocol: str, first: int) -> None:
    handshake = HANDSHAKE if protocol == LEGACY else ()
    script = Script(*handshake, sse(event(LOG), event(PROGRESS), the_answer))
    seen: list[tuple[str, dict[str, Any]]] = []

    async with client(script, protocol, on_notification=lambda method, params: seen.append((method, params))) as c:
        assert (await c.call_tool("echo", {"text": "hi"})).text == "right"

    assert seen == [
        ("notifications/message", {"level": "info", "data": "hi"}),
        ("notifications/progress", {"progressToken": 1, "progress": 1}),
    ]
    # Asking for notifications asks for progress too: the call carries a progress token (its request id).
    call = script.sent[first].body
    assert call["params"]["_meta"]["progressToken"] == call["id"]


async def test_an_async_on_notification_is_awaited() -> None:
    script = Script(sse(event(PROGRESS), the_answer))
    seen: list[str] = []

    async def on_notification(method: str, params: dict[str, Any]) -> None:
        await trio.lowlevel.checkpoint()
        seen.append(method)

    async with client(script, MODERN, on_notification=on_notification) as c:
        await c.call_tool("echo", {})

    assert seen == ["notifications/progress"]


async def test_a_failing_on_notification_is_logged_and_the_call_goes_on(records: list[tuple[str, str]]) -> None:
    script = Script(sse(event(PROGRESS), the_answer))

    def on_notification(method: str, params: dict[str, Any]) -> None:
        raise RuntimeError("boom")

    async with client(script, MODERN, on_notification=on_notification) as c:
        assert (await c.call_tool("echo", {})).text == "right"

    assert [r for r in records if r[0] == "WARNING"] == [
        ("WARNING", "on_notification callback raised RuntimeError('boom'); the request goes on")
    ]


async def test_without_on_notification_notifications_are_logged_at_debug_and_no_token_is_sent(
    records: list[tuple[str, str]],
) -> None:
    script = Script(sse(event(PROGRESS), the_answer))

    async with client(script, MODERN) as c:
        await c.call_tool("echo", {})

    debug = "notification notifications/progress from the server: {'progressToken': 1, 'progress': 1}"
    assert ("DEBUG", debug) in records
    assert "progressToken" not in script.sent[0].body["params"]["_meta"]


@pytest.mark.parametrize(("protocol", "first"), ERAS.values(), ids=ERAS.keys())
async def test_a_ping_on_the_stream_is_answered_with_a_post(protocol: str, first: int) -> None:
    handshake = HANDSHAKE if protocol == LEGACY else ()
    ping = {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}
    script = Script(*handshake, status(202))
    # Like a real server, the stream goes on once the client answered.
    script.answers.insert(len(handshake), sse(event(ping), script.answered, the_answer))

    async with client(script, protocol) as c:
        assert (await c.call_tool("echo", {})).text == "right"

    reply = script.sent[first + 1]
    assert (reply.http, reply.body) == ("POST", {"jsonrpc": "2.0", "id": "srv-1", "result": {}})
    # An answer is no request: no Mcp-Method/Mcp-Name, only the version (and the session, if any).
    expected = {"mcp-protocol-version": protocol} | ({"mcp-session-id": SESSION} if protocol == LEGACY else {})
    assert script.mcp(first + 1) == expected


@pytest.mark.parametrize("method", ["sampling/createMessage", "elicitation/create", "roots/list"])
async def test_requests_mcpfsm_does_not_serve_are_answered_method_not_found(method: str) -> None:
    request = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {}}
    script = Script(*HANDSHAKE, status(202))
    script.answers.insert(2, sse(event(request), script.answered, the_answer))

    async with client(script, LEGACY) as c:
        assert (await c.call_tool("echo", {})).text == "right"

    handler = {"sampling/createMessage": "on_sampling", "elicitation/create": "on_elicitation"}.get(method, "on_roots")
    assert script.sent[4].body == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32601, "message": f"no {handler} handler: the client did not declare {method!r}"},
    }
    assert script.calls == [
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("GET", None),
        ("POST", "tools/call"),
        ("POST", None),
        ("DELETE", None),
    ]


async def test_a_failed_answer_to_the_server_is_logged_and_the_call_goes_on(records: list[tuple[str, str]]) -> None:
    ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
    script = Script(status(500))
    script.answers.insert(0, sse(event(ping), script.answered, the_answer))

    async with client(script, MODERN) as c:
        assert (await c.call_tool("echo", {})).text == "right"

    assert [r for r in records if r[0] == "WARNING"] == [
        ("WARNING", "could not answer the server's 'ping' request: HTTP 500 Internal Server Error")
    ]


async def test_a_modern_stream_is_never_resumed() -> None:
    script = Script(sse(event("", id="1", retry=10), event(PROGRESS, id="2")))
    sleeps = Sleeps()

    async with client(script, MODERN, sleeps) as c:
        with pytest.raises(
            mcpfsm.TransportError, match=r"^the server closed the event stream before answering request 1$"
        ):
            await c.call_tool("echo", {})

    assert script.calls == [("POST", "tools/call")]
    assert sleeps.delays == []


@pytest.mark.parametrize(
    ("retry", "delay"),
    [(250, 0.25), (None, 1.0), (0, 0.0), (10**30, 60.0), (10**1000, 60.0)],
    # The server's retry is clamped to a minute before any arithmetic (a 1001-digit one is a valid field).
    ids=["retry-250", "default", "zero", "retry-huge-clamped", "retry-1001-digits-clamped"],
)
async def test_a_legacy_stream_cut_before_its_response_is_resumed_with_get(retry: int | None, delay: float) -> None:
    streams: list[Chunks] = []
    script = Script(
        *HANDSHAKE,
        sse(event("", id="5", retry=retry), event(LOG, id="6"), keep=streams),
        # Like the SDK, the resumed GET stream does not end after the response.
        sse(event(PROGRESS, id="7"), lambda body: event(answer(2), id="8"), keep=streams, endless=True),
    )
    sleeps = Sleeps()
    seen: list[str] = []

    with trio.fail_after(5):
        async with client(script, LEGACY, sleeps, on_notification=lambda m, p: seen.append(m)) as c:
            assert (await c.call_tool("echo", {})).text == "right"

    assert sleeps.delays == [delay]
    assert seen == ["notifications/message", "notifications/progress"]
    assert script.calls == [
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("GET", None),
        ("POST", "tools/call"),
        ("GET", None),
        ("DELETE", None),
    ]
    assert script.sent[2].headers == {
        "user-agent": "mcpfsm/0.1.0",
        "accept-encoding": "gzip, deflate",
        "accept": "text/event-stream",
        "mcp-protocol-version": LEGACY,
        "mcp-session-id": SESSION,
    }
    assert script.sent[4].headers == {
        "user-agent": "mcpfsm/0.1.0",
        "accept-encoding": "gzip, deflate",
        "accept": "text/event-stream",
        "mcp-protocol-version": LEGACY,
        "last-event-id": "6",
        "mcp-session-id": SESSION,
    }
    assert [s.closed for s in streams] == [True, True]


async def test_a_legacy_stream_is_resumed_at_most_three_times() -> None:
    script = Script(
        *HANDSHAKE,
        sse(event("", id="1")),
        sse(event("", id="2")),
        sse(event(PROGRESS, id="3")),
        sse(),
    )
    sleeps = Sleeps()

    async with client(script, LEGACY, sleeps) as c:
        with pytest.raises(
            mcpfsm.TransportError,
            match=r"^the server closed the event stream before answering request 2 \(after 3 resume attempts\)$",
        ):
            await c.call_tool("echo", {})

    assert script.calls[3:] == [("POST", "tools/call"), ("GET", None), ("GET", None), ("GET", None), ("DELETE", None)]
    # An empty stream keeps the last event id it was resumed from.
    assert [s.headers["last-event-id"] for s in script.sent[4:7]] == ["1", "2", "3"]
    assert sleeps.delays == [1.0, 1.0, 1.0]


async def test_a_legacy_stream_without_event_ids_is_not_resumed() -> None:
    script = Script(*HANDSHAKE, sse(event(PROGRESS)))
    sleeps = Sleeps()

    async with client(script, LEGACY, sleeps) as c:
        with pytest.raises(
            mcpfsm.TransportError, match=r"^the server closed the event stream before answering request 2$"
        ):
            await c.call_tool("echo", {})

    assert script.calls[3:] == [("POST", "tools/call"), ("DELETE", None)]
    assert sleeps.delays == []


async def test_a_refused_resumption_is_a_transport_error_and_the_client_stays_usable() -> None:
    script = Script(*HANDSHAKE, sse(event("", id="1")), status(405), json_result({"tools": []}))

    async with client(script, LEGACY) as c:
        with pytest.raises(
            mcpfsm.TransportError, match=r"^could not resume the event stream: HTTP 405 Method Not Allowed$"
        ):
            await c.call_tool("echo", {})
        assert len(await c.tools()) == 0

    assert script.calls[3:] == [("POST", "tools/call"), ("GET", None), ("POST", "tools/list"), ("DELETE", None)]


async def test_a_404_on_the_resuming_get_ends_the_call_without_renewing_the_session_or_resending() -> None:
    # The 404 answered the GET: it says nothing of the message, which the server may have acted on.
    script = Script(*HANDSHAKE, sse(event("", id="1")), status(404), json_result({"tools": []}))

    async with client(script, LEGACY) as c:
        with pytest.raises(
            mcpfsm.TransportError, match=r"^could not resume the event stream: HTTP 404 Not Found$"
        ) as caught:
            await c.call_tool("echo", {})
        assert caught.value.status is None
        assert len(await c.tools()) == 0

    assert script.calls[3:] == [("POST", "tools/call"), ("GET", None), ("POST", "tools/list"), ("DELETE", None)]


async def test_resumption_waits_the_retry_delay_on_the_trio_clock(autojump_clock: trio.abc.Clock) -> None:
    script = Script(*HANDSHAKE, sse(event("", id="1", retry=1500)), sse(lambda body: event(answer(2), id="2")))
    transport = HttpTransport(URL, transport=httpx.MockTransport(script))

    async with mcpfsm.Client(transport, protocol=LEGACY) as c:
        start = trio.current_time()
        await c.call_tool("echo", {})
        assert trio.current_time() - start == pytest.approx(1.5)
