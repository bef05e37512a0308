"""Hostile HTTP servers on raw sockets: reconnect storms, broken call streams, stray answers, redirects across origins.

Each test drives mcpfsm's own connection layer against a raw-socket server on 127.0.0.1 (``tests/support/rawserver.py``)
that sends exactly the bytes a misbehaving server sent in a fault run, and checks what the client does about it.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import pytest
import trio
import trio.testing

import mcpfsm
from mcpfsm._transports.http import HttpTransport
from mcpfsm._transports.http.standalone import MAX_EMPTY_REOPENS, MIN_REOPEN_SECONDS
from tests.support.rawserver import HOST, Seen, Server, no_stream, ok, reset, rpc, serving

LEGACY: Final = "2025-11-25"
SESSION: Final = "s-1"
SSE_HEAD: Final = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
STREAM_HEADERS: Final = {"Mcp-Session-Id": SESSION, "MCP-Protocol-Version": LEGACY}


def chunk(text: str) -> bytes:
    data = text.encode()
    return b"%x\r\n" % len(data) + data + b"\r\n"


def message_event(message: dict[str, Any], event_id: str) -> str:
    return f"id: {event_id}\ndata: {json.dumps(message)}\n\n"


class Delays:
    """The transport's ``sleep``: records each delay, then sleeps it on trio's (mock) clock."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await trio.sleep(seconds)


async def watch_for_ten_minutes(storm: trio.Event) -> None:
    """Ten minutes of the mock clock, or until ``storm`` is set (a client that never waits keeps the clock still)."""
    async with trio.open_nursery() as nursery:

        async def window() -> None:
            await trio.sleep(600)
            nursery.cancel_scope.cancel()

        async def watch() -> None:
            await storm.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(window)
        nursery.start_soon(watch)


# --- 5. the standalone GET stream is reopened with a floor, backoff and a bound -------------------------------


async def test_a_stream_with_retry_zero_that_ends_at_once_is_not_reopened_in_a_storm(
    clock: trio.testing.MockClock,
) -> None:
    # A fault run saw 13,000-43,000 GETs in 5 s: retry: 0, an event id, and the end of the stream, again and again.
    storm = trio.Event()
    gets: list[Seen] = []

    async def priming_then_end(stream: trio.abc.Stream, seen: Seen) -> bool:
        gets.append(seen)
        if len(gets) > 50:
            storm.set()
        await stream.send_all(SSE_HEAD + chunk("retry: 0\nid: 7\ndata: \n\n") + b"0\r\n\r\n")
        return True

    server = Server(default=priming_then_end)
    delays = Delays()
    async with serving(server):
        transport = HttpTransport(f"http://127.0.0.1:{server.port}/mcp", sleep=delays)
        try:
            assert await transport.open_stream(STREAM_HEADERS)
            await watch_for_ten_minutes(storm)
        finally:
            await transport.aclose()

    assert not storm.is_set(), f"{len(gets)} GETs"
    assert len(gets) == MAX_EMPTY_REOPENS
    # The floor, doubled for each further stream without a message, at most a minute.
    assert delays.delays == [min(MIN_REOPEN_SECONDS * 2**n, 60.0) for n in range(MAX_EMPTY_REOPENS - 1)]
    assert [seen.headers.get("last-event-id") for seen in gets] == [None] + ["7"] * (MAX_EMPTY_REOPENS - 1)


async def test_a_stream_that_carries_messages_is_reopened_with_the_floor_and_no_backoff(
    clock: trio.testing.MockClock,
) -> None:
    # Each stream brings a notification, then ends: the server means it; every reopen waits the floor only,
    # and the first stream without a message starts the backoff.
    gets: list[Seen] = []
    notes: list[str] = []
    storm = trio.Event()

    async def one_message_then_end(stream: trio.abc.Stream, seen: Seen) -> bool:
        gets.append(seen)
        number = len(gets)
        if number > 50:
            storm.set()
        body = "retry: 0\n" + (
            message_event({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}, str(number))
            if number <= 3
            else f"id: {number}\ndata: \n\n"
        )
        await stream.send_all(SSE_HEAD + chunk(body) + b"0\r\n\r\n")
        return True

    async def inbound(message: Any) -> None:
        notes.append(message.method)

    server = Server(default=one_message_then_end)
    delays = Delays()
    async with serving(server):
        transport = HttpTransport(f"http://127.0.0.1:{server.port}/mcp", sleep=delays)
        try:
            await transport.open(inbound)
            assert await transport.open_stream(STREAM_HEADERS)
            await watch_for_ten_minutes(storm)
        finally:
            await transport.aclose()

    assert not storm.is_set(), f"{len(gets)} GETs"
    assert notes == ["notifications/tools/list_changed"] * 3
    assert len(gets) == 3 + MAX_EMPTY_REOPENS
    assert delays.delays[:6] == [0.25, 0.25, 0.25, 0.25, 0.5, 1.0]
    assert [seen.headers.get("last-event-id") for seen in gets[:6]] == [None, "1", "2", "3", "4", "5"]


# --- 6. a legacy call stream that breaks after an event id is resumed, as one the server ended ----------------

INITIALIZE: Final = rpc(
    {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "raw", "version": "1"}},
    headers=[("Content-Type", "application/json"), ("Mcp-Session-Id", SESSION)],
)
ACCEPTED: Final = ok(b"", status=202, headers=[])


def breaking_call_stream(how: str) -> Any:
    """The tools/call stream: a priming event with id 1, a progress notification with id 2, then it breaks."""

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}
        events = "retry: 10\nid: 1\ndata: \n\n" + message_event(progress, "2")
        await stream.send_all(SSE_HEAD + chunk(events))
        if how == "reset":
            reset(stream)
        else:
            await stream.send_all(b'40\r\nid: 3\ndata: {"jsonrpc"')  # a chunk of 64 bytes cut after 23
        return False

    return answer


def resumed_answer(stream_seen: list[Seen]) -> Any:
    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        stream_seen.append(seen)
        result = {"content": [{"type": "text", "text": "resumed"}], "isError": False}
        events = message_event({"jsonrpc": "2.0", "id": 2, "result": result}, "3")
        await stream.send_all(SSE_HEAD + chunk(events) + b"0\r\n\r\n")
        return True

    return answer


@pytest.mark.parametrize("how", ["reset", "truncated-chunk"])
async def test_a_legacy_call_stream_that_breaks_after_an_event_id_is_resumed(how: str) -> None:
    resumed: list[Seen] = []
    server = Server()
    server.queue(INITIALIZE, ACCEPTED, no_stream(), breaking_call_stream(how), resumed_answer(resumed))
    server.default = ok(b"", status=200, headers=[])  # the DELETE
    seen: list[str] = []

    async with serving(server):
        client = mcpfsm.Client.http(
            f"http://127.0.0.1:{server.port}/mcp", protocol=LEGACY, on_notification=lambda m, p: seen.append(m)
        )
        with trio.fail_after(10):
            async with client:
                assert (await client.call_tool("echo", {})).text == "resumed"

    assert seen == ["notifications/progress"]
    assert [s.request_line.split()[0] for s in server.seen] == ["POST", "POST", "GET", "POST", "GET", "DELETE"]
    assert resumed[0].headers["last-event-id"] == "2"
    assert resumed[0].headers["mcp-session-id"] == SESSION


async def test_a_modern_call_stream_that_breaks_is_a_transport_error_and_not_resumed() -> None:
    server = Server()
    server.queue(rpc({"supportedVersions": ["2026-07-28"]}), breaking_call_stream("reset"))

    async with serving(server), mcpfsm.Client.http(f"http://127.0.0.1:{server.port}/mcp") as client:
        with pytest.raises(mcpfsm.TransportError, match=r"^reading the event stream failed: "):
            await client.call_tool("echo", {})

    assert [s.request_line.split()[0] for s in server.seen] == ["POST", "POST"]


# --- issue 20: a connection error names the OS cause, the URL and the proxy; TLS against plain HTTP says so ----


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on: bound, then closed."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
    return port


@asynccontextmanager
async def plain_http_server() -> AsyncIterator[int]:
    """A plain-HTTP server that answers whatever it reads (a TLS ClientHello too) with a 400, as real ones do."""

    async def handler(stream: trio.SocketStream) -> None:
        with contextlib.suppress(trio.BrokenResourceError):
            await stream.receive_some(65536)
            await stream.send_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await trio.aclose_forcefully(stream)

    async with trio.open_nursery() as nursery:
        listeners: list[trio.SocketListener] = await nursery.start(
            functools.partial(trio.serve_tcp, handler, 0, host=HOST)
        )
        yield listeners[0].socket.getsockname()[1]
        nursery.cancel_scope.cancel()


async def test_a_closed_port_names_the_os_cause_and_the_url() -> None:
    url = f"http://{HOST}:{closed_port()}/mcp"
    with pytest.raises(mcpfsm.TransportError) as caught:
        async with mcpfsm.Client.http(url, trust_env=False):
            pass
    assert str(caught.value) == f"POST to MCP server failed: cannot connect to {url}: Connection refused"


async def test_a_closed_proxy_port_names_the_proxy_but_never_its_credentials() -> None:
    proxy_port = closed_port()
    url = f"http://{HOST}:{closed_port()}/mcp"
    with pytest.raises(mcpfsm.TransportError) as caught:
        async with mcpfsm.Client.http(url, proxy=f"http://user:s3cret@{HOST}:{proxy_port}"):
            pass
    assert str(caught.value) == (
        f"POST to MCP server failed: cannot connect to {url} through proxy http://{HOST}:{proxy_port}:"
        " Connection refused"
    )


async def test_a_name_that_does_not_resolve_names_the_resolver_cause() -> None:
    url = "http://no-such-host.invalid/mcp"
    with pytest.raises(mcpfsm.TransportError) as caught:
        async with mcpfsm.Client.http(url, trust_env=False):
            pass
    assert str(caught.value).startswith(f"POST to MCP server failed: cannot connect to {url}: ")
    assert "all attempts" not in str(caught.value)
    assert "Errno" not in str(caught.value)


async def test_https_against_a_plain_http_port_says_so_in_a_plain_sentence() -> None:
    async with plain_http_server() as port:
        url = f"https://{HOST}:{port}/mcp"
        with pytest.raises(mcpfsm.TransportError) as caught:
            async with mcpfsm.Client.http(url, trust_env=False):
                pass
    assert str(caught.value) == f"POST to MCP server failed: cannot connect to {url}: TLS: the server speaks plain HTTP"


# --- 11. a session id belongs to the origin that issued it: a front that 307s to a stateful back end ----------


def stateful_back_end(session: str) -> Any:
    """A legacy stateful server (as the TypeScript SDK v1's): a request without its session id is refused."""

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        method = seen.request_line.split()[0]
        body = json.loads(seen.body) if seen.body else {}
        if body.get("method") == "initialize":
            result = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "back", "version": "1"}}
            return await rpc(result, headers=[("Content-Type", "application/json"), ("Mcp-Session-Id", session)])(
                stream, seen
            )
        if seen.headers.get("mcp-session-id") != session:
            error = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32000, "message": "Bad Request: Server not initialized"},
            }
            return await ok(json.dumps(error).encode(), status=400)(stream, seen)
        if method == "GET":
            return await no_stream()(stream, seen)
        if method == "DELETE" or "id" not in body:
            return await ok(b"", status=202 if method == "POST" else 200, headers=[])(stream, seen)
        result = {"content": [{"type": "text", "text": "from the back end"}], "isError": False}
        return await rpc(result)(stream, seen)

    return answer


def redirect_to(port: int) -> Any:
    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        return await ok(b"", status=307, headers=[("Location", f"http://{HOST}:{port}/mcp")])(stream, seen)

    return answer


async def test_a_session_id_issued_behind_a_cross_origin_307_goes_to_the_back_end_and_never_to_the_front() -> None:
    back = Server(default=stateful_back_end("back-1"))
    front = Server()
    async with serving(back), serving(front):
        front.default = redirect_to(back.port)
        async with mcpfsm.Client.http(f"http://{HOST}:{front.port}/mcp", protocol=LEGACY) as client:
            assert (await client.call_tool("echo", {})).text == "from the back end"

    requests = [(seen.request_line.split()[0], seen.headers.get("mcp-session-id")) for seen in back.seen]
    assert requests == [("POST", None), ("POST", "back-1"), ("GET", "back-1"), ("POST", "back-1"), ("DELETE", "back-1")]
    # The front issued no session id: it never gets the back end's.
    assert len(front.seen) == 5
    assert all("mcp-session-id" not in seen.headers for seen in front.seen)


async def test_a_refusal_after_a_redirect_to_another_origin_names_the_redirect() -> None:
    back = Server(default=ok(b"gone", status=410, headers=[("Content-Type", "text/plain")]))
    front = Server()
    async with serving(back), serving(front):
        front.default = redirect_to(back.port)
        transport = HttpTransport(f"http://{HOST}:{front.port}/mcp")
        try:
            with pytest.raises(mcpfsm.TransportError) as caught:
                await transport.send('{"jsonrpc":"2.0","id":1,"method":"ping"}')
        finally:
            await transport.aclose()
    assert str(caught.value) == (
        f"HTTP 410 X (gone) (after a redirect from http://{HOST}:{front.port}/mcp to http://{HOST}:{back.port}/mcp,"
        " another origin)"
    )


# --- 8. a stray answer racing the next request never becomes that request's answer or error --------------------


def stray_then_own(stray: dict[str, Any], *, status: int = 200) -> Any:
    """Wait for the next request, then answer an old id first (the stray), then the request's own id."""

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        own = {"jsonrpc": "2.0", "id": json.loads(seen.body)["id"], "result": {"tools": [{"name": "own"}]}}
        responses = b""
        for message, code in ((stray, status), (own, 200)):
            body = json.dumps(message).encode()
            responses += b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (
                code,
                len(body),
            )
            responses += body
        await stream.send_all(responses)
        return True

    return answer


@pytest.mark.parametrize(
    ("stray", "status"),
    [
        pytest.param({"jsonrpc": "2.0", "id": 1, "result": {"stray": True}}, 200, id="result"),
        pytest.param({"jsonrpc": "2.0", "id": 99, "error": {"code": -32603, "message": "stray"}}, 500, id="error"),
    ],
)
async def test_a_stray_answer_racing_the_next_request_is_dropped_and_the_call_gets_its_own(
    stray: dict[str, Any], status: int, records: list[tuple[str, str]]
) -> None:
    server = Server()
    server.queue(rpc({"supportedVersions": ["2026-07-28"]}), stray_then_own(stray, status=status))

    async with serving(server), mcpfsm.Client.http(f"http://{HOST}:{server.port}/mcp") as client:
        tools = await client.tools()

    assert [tool.name for tool in tools] == ["own"]
    assert [seen.connection for seen in server.seen] == [1, 1]
    assert ("WARNING", f"ignoring a response for unknown request id {stray['id']!r} from the MCP server") in records


def framed(message: dict[str, Any], *, status: int = 200, chunked: bool, gzipped: bool) -> bytes:
    """One JSON response as bytes on the wire: ``Content-Length`` or chunked, plain or gzip-encoded."""
    body = json.dumps(message).encode()
    head = b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\n" % status
    if gzipped:
        body = gzip.compress(body)
        head += b"Content-Encoding: gzip\r\n"
    if not chunked:
        return head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    half = len(body) // 2
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:half], body[half:]) if part)
    return head + b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"


def stray_then_own_framed(stray: dict[str, Any], status: int, *, chunked: bool, gzipped: bool) -> Any:
    """:func:`stray_then_own` with both responses chunked and/or gzip-encoded, in one write."""

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        own = {"jsonrpc": "2.0", "id": json.loads(seen.body)["id"], "result": {"tools": [{"name": "own"}]}}
        await stream.send_all(
            framed(stray, status=status, chunked=chunked, gzipped=gzipped)
            + framed(own, chunked=chunked, gzipped=gzipped)
        )
        return True

    return answer


FRAMINGS: Final = [
    pytest.param(True, False, id="chunked"),
    pytest.param(False, True, id="gzip"),
    pytest.param(True, True, id="chunked-gzip"),
]
STRAYS: Final = [
    pytest.param({"jsonrpc": "2.0", "id": 1, "result": {"stray": True}}, 200, id="result"),
    pytest.param({"jsonrpc": "2.0", "id": 99, "error": {"code": -32603, "message": "stray"}}, 500, id="error"),
]


@pytest.mark.parametrize(("chunked", "gzipped"), FRAMINGS)
@pytest.mark.parametrize(("stray", "status"), STRAYS)
async def test_a_stray_answer_chunked_or_gzipped_is_dropped_and_the_call_gets_its_own(
    stray: dict[str, Any], status: int, chunked: bool, gzipped: bool, records: list[tuple[str, str]]
) -> None:
    server = Server()
    server.queue(
        rpc({"supportedVersions": ["2026-07-28"]}),
        stray_then_own_framed(stray, status, chunked=chunked, gzipped=gzipped),
    )

    async with serving(server), mcpfsm.Client.http(f"http://{HOST}:{server.port}/mcp") as client:
        tools = await client.tools()

    assert [tool.name for tool in tools] == ["own"]
    assert [seen.connection for seen in server.seen] == [1, 1]
    assert ("WARNING", f"ignoring a response for unknown request id {stray['id']!r} from the MCP server") in records


@pytest.mark.parametrize(("chunked", "gzipped"), [pytest.param(False, False, id="length"), *FRAMINGS])
@pytest.mark.parametrize(("stray", "status"), STRAYS)
async def test_a_stray_answer_through_the_callers_httpx_transport_never_becomes_a_calls_answer_or_error(
    stray: dict[str, Any], status: int, chunked: bool, gzipped: bool, records: list[tuple[str, str]]
) -> None:
    import httpx

    server = Server()
    server.queue(
        rpc({"supportedVersions": ["2026-07-28"]}),
        stray_then_own_framed(stray, status, chunked=chunked, gzipped=gzipped),
    )
    server.default = rpc({"tools": [{"name": "later"}]})

    async with (
        serving(server),
        httpx.AsyncHTTPTransport() as transport,
        mcpfsm.Client.http(f"http://{HOST}:{server.port}/mcp", http_transport=transport) as client,
    ):
        try:
            first = [tool.name for tool in await client.tools()]
        except mcpfsm.TransportError as exc:
            # The caller's transport cannot read past the stray: the call fails as a transport failure that
            # names the stray's id, never with the stray's result or error as its own.
            assert "stray" not in str(exc)
            assert repr(stray["id"]) in str(exc)
            first = None
        # The next call is not answered with the bytes left over from the one before.
        later = [tool.name for tool in await client.tools(fresh=True)]

    assert first in (["own"], None)
    assert later == ["later"]
    assert ("WARNING", f"ignoring a response for unknown request id {stray['id']!r} from the MCP server") in records
