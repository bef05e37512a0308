"""What a user expects from an httpx-based client, against raw servers on 127.0.0.1 (tests/support/rawserver.py).

Each point runs on mcpfsm's own connection pool and, where it is the transport's business rather than
the connection layer's, with httpx's ``AsyncHTTPTransport`` given as ``http_transport=`` too:
User-Agent, Accept-Encoding and decoding, ``max_response_bytes``, no silent resend, strict framing,
legacy session ids. TLS and proxies are the connection layer's: ``tests/transports/test_http_tls_proxies.py``.
"""

from __future__ import annotations

import gzip
import json
import ssl
import zlib
from typing import Any, Final

import pytest
import trio

import mcpfsm
from tests.support.layers import LAYERS, connect
from tests.support.rawserver import HOST, JSON_HEADERS, Answer, Seen, Server, no_stream, ok, raw, rpc, serving, tls_for

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
MIB: Final = 1024 * 1024
INITIALIZE: Final = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "raw", "version": "1"}}


def url_of(server: Server) -> str:
    return f"http://{HOST}:{server.port}/mcp"


def answer_with(body: bytes, headers: list[tuple[str, str]]) -> Answer:
    """Answer with ``body`` (which may use ``{id}`` for the request's id) and exactly ``headers``."""

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        payload = body.replace(b"{id}", str(json.loads(seen.body)["id"]).encode())
        lines = "".join(f"{n}: {v}\r\n" for n, v in headers)
        await stream.send_all(f"HTTP/1.1 200 OK\r\n{lines}Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
        return True

    return answer


def result_text(size: int) -> bytes:
    """A JSON-RPC answer (id ``{id}``) whose result holds ``size`` bytes of text."""
    return b'{"jsonrpc":"2.0","id":{id},"result":{"content":[{"type":"text","text":"' + b"x" * size + b'"}]}}'


# --- User-Agent and Accept-Encoding -----------------------------------------------------------------------------------


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        pytest.param(None, ("mcpfsm/0.1.0", "gzip, deflate"), id="defaults"),
        pytest.param({"user-agent": "agent/7"}, ("agent/7", "gzip, deflate"), id="caller-user-agent"),
        pytest.param({"Accept-Encoding": "identity"}, ("mcpfsm/0.1.0", "identity"), id="caller-accept-encoding"),
    ],
)
async def test_user_agent_and_accept_encoding_unless_the_caller_sets_them(
    layer: str, headers: dict[str, str] | None, expected: tuple[str, str]
) -> None:
    async with serving(Server(default=rpc())) as server, connect(url_of(server), layer, headers=headers) as client:
        await client.request("ping")

    names = [line.split(b":")[0].lower() for line in server.seen[0].head.split(b"\r\n")[1:] if line]
    assert (names.count(b"user-agent"), names.count(b"accept-encoding")) == (1, 1)
    assert (server.seen[0].headers["user-agent"], server.seen[0].headers["accept-encoding"]) == expected


def sse_body(*events: bytes) -> bytes:
    return b"".join(b"event: message\ndata: " + event + b"\n\n" for event in events)


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        pytest.param("gzip", gzip.compress, id="gzip"),
        pytest.param("deflate", zlib.compress, id="deflate"),
    ],
)
async def test_compressed_json_and_event_streams_are_decoded(layer: str, coding: str, encode: Any) -> None:
    notification = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}'

    async def compressed_json(stream: trio.abc.Stream, seen: Seen) -> bool:
        body = encode(result_text(10).replace(b"{id}", str(json.loads(seen.body)["id"]).encode()))
        headers = [*JSON_HEADERS, ("Content-Encoding", coding)]
        return await ok(body, headers=headers)(stream, seen)

    async def compressed_stream(stream: trio.abc.Stream, seen: Seen) -> bool:
        answer = result_text(3).replace(b"{id}", str(json.loads(seen.body)["id"]).encode())
        body = encode(sse_body(notification, answer))
        headers = [("Content-Type", "text/event-stream"), ("Content-Encoding", coding)]
        return await ok(body, headers=headers)(stream, seen)

    seen: list[str] = []
    async with serving(Server()) as server:
        server.queue(compressed_json, compressed_stream)
        async with connect(url_of(server), layer, on_notification=lambda m, p: seen.append(m)) as client:
            assert (await client.call_tool("a")).text == "x" * 10
            assert (await client.call_tool("b")).text == "xxx"

    assert seen == ["notifications/progress"]


# --- max_response_bytes ----------------------------------------------------------------------------------------------

TOO_LARGE: Final = (
    r"^{what} is larger than max_response_bytes \(1048576 bytes\); the rest was not read and the connection was closed$"
)


def chunked(body: bytes, headers: list[tuple[str, str]]) -> Answer:
    """A chunked answer sent in 64 KiB chunks; stops quietly when the client has gone."""

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        payload = body.replace(b"{id}", str(json.loads(seen.body)["id"]).encode())
        lines = "".join(f"{n}: {v}\r\n" for n, v in headers)
        await stream.send_all(f"HTTP/1.1 200 OK\r\n{lines}Transfer-Encoding: chunked\r\n\r\n".encode())
        for start in range(0, len(payload), 65536):
            piece = payload[start : start + 65536]
            await stream.send_all(b"%x\r\n%s\r\n" % (len(piece), piece))
        await stream.send_all(b"0\r\n\r\n")
        return True

    return answer


OVERSIZED = {
    "json-length": (answer_with(result_text(2 * MIB), JSON_HEADERS), "the server's answer \\(Content-Length \\d+\\)"),
    "json-chunked": (chunked(result_text(2 * MIB), JSON_HEADERS), "the server's answer"),
    "json-gzip-bomb": (
        answer_with(gzip.compress(result_text(64 * MIB)), [*JSON_HEADERS, ("Content-Encoding", "gzip")]),
        "the server's answer",
    ),
    "one-sse-event": (
        chunked(sse_body(result_text(2 * MIB)), [("Content-Type", "text/event-stream")]),
        "an event of the server's stream",
    ),
    "sse-gzip-bomb": (
        chunked(
            gzip.compress(sse_body(result_text(64 * MIB))),
            [("Content-Type", "text/event-stream"), ("Content-Encoding", "gzip")],
        ),
        "an event of the server's stream",
    ),
}


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize(("answer", "what"), OVERSIZED.values(), ids=OVERSIZED.keys())
async def test_an_answer_beyond_max_response_bytes_fails_closes_the_connection_and_the_client_goes_on(
    layer: str, answer: Answer, what: str
) -> None:
    async with serving(Server()) as server:
        server.queue(rpc(), answer, rpc({"content": [{"type": "text", "text": "after"}]}))
        async with connect(url_of(server), layer, max_response_bytes=MIB) as client:
            await client.request("ping")
            with pytest.raises(mcpfsm.TransportError, match=TOO_LARGE.format(what=what)):
                await client.call_tool("big")
            assert (await client.call_tool("echo")).text == "after"

    # The oversized answer's connection was closed, not reused: the next call opened another one. With
    # httpx's transport that is httpcore's decision: it closes a connection whose body was not read to
    # its end, but keeps one whose small compressed body had wholly arrived (a clean connection).
    bomb = answer in (OVERSIZED["json-gzip-bomb"][0], OVERSIZED["sse-gzip-bomb"][0])
    if layer == "pool" or not bomb:
        assert [seen.connection for seen in server.seen] == [1, 1, 2]


@pytest.mark.parametrize("layer", LAYERS)
async def test_an_answer_of_exactly_max_response_bytes_is_read(layer: str) -> None:
    body = result_text(0)
    size = MIB - len(body.replace(b"{id}", b"2"))
    async with serving(Server()) as server:
        server.queue(rpc(), answer_with(result_text(size), JSON_HEADERS))
        async with connect(url_of(server), layer, max_response_bytes=MIB) as client:
            await client.request("ping")
            assert len((await client.call_tool("big")).text) == size


# --- no silent resend (RFC 9110 §9.2.2) ---------------------------------------------------------------------------

NOT_RESENT: Final = {
    ("pool", "close"): r"^POST to MCP server failed: the server closed a kept-alive connection without answering;"
    r" the request was not resent because the server may have acted on it \(RFC 9110 §9\.2\.2\)$",
    ("pool", "reset"): r"^POST to MCP server failed: the server closed a kept-alive connection without answering;"
    r" the request was not resent because the server may have acted on it \(RFC 9110 §9\.2\.2\)$",
    ("httpx", "close"): r"^POST to MCP server failed: Server disconnected without sending a response\.$",
    ("httpx", "reset"): r"^POST to MCP server failed: socket connection broken: \[Errno 104\] Connection reset"
    r" by peer$",
}


@pytest.mark.parametrize("then", ["close", "reset"])
@pytest.mark.parametrize("layer", LAYERS)
async def test_a_tool_call_the_server_read_and_dropped_on_a_kept_alive_connection_is_never_sent_again(
    layer: str, then: str
) -> None:
    # The server reads the whole tools/call (and may have run it), then drops the connection.
    events: list[mcpfsm.CallEvent] = []
    async with serving(Server()) as server:
        server.queue(rpc(), raw(b"", then=then), rpc({"content": []}))
        async with connect(url_of(server), layer, on_event=events.append) as client:
            await client.request("ping")
            with pytest.raises(mcpfsm.TransportError, match=NOT_RESENT[layer, then]):
                await client.call_tool("transfer-money", {"amount": 100})
            await client.call_tool("echo")

    methods = [(seen.connection, json.loads(seen.body)["method"]) for seen in server.seen]
    assert methods == [(1, "ping"), (1, "tools/call"), (2, "tools/call")]
    assert json.loads(server.seen[1].body)["params"]["name"] == "transfer-money"
    assert [(e.tool, e.state) for e in events if e.state in ("succeeded", "failed")] == [
        ("transfer-money", "failed"),
        ("echo", "succeeded"),
    ]


@pytest.mark.parametrize("method", ["tools/list", "resources/read", "prompts/get", "completion/complete", "ping"])
async def test_a_read_only_request_dropped_on_a_kept_alive_connection_is_resent_once_by_the_pool(method: str) -> None:
    async with serving(Server()) as server:
        server.queue(rpc(), raw(b"", then="close"), rpc({"tools": [], "contents": [], "messages": []}))
        async with connect(url_of(server), "pool") as client:
            await client.request("ping")
            await client.request(method, {"name": "p", "uri": "file:///x"})

    assert [(seen.connection, json.loads(seen.body)["method"]) for seen in server.seen] == [
        (1, "ping"),
        (1, method),
        (2, method),
    ]


async def test_a_read_only_request_dropped_twice_is_an_error_after_one_resend() -> None:
    async with serving(Server()) as server:
        server.queue(rpc(), raw(b"", then="close"), raw(b"", then="close"))
        async with connect(url_of(server), "pool") as client:
            await client.request("ping")
            message = r"^POST to MCP server failed: the server closed the connection without answering$"
            with pytest.raises(mcpfsm.TransportError, match=message):
                await client.tools()

    assert [seen.connection for seen in server.seen] == [1, 1, 2]


# --- strict framing (RFC 9112 §6.3) -----------------------------------------------------------------------------------

BOTH_LENGTHS: Final = {
    "pool": r"^POST to MCP server failed: the response has both Content-Length and Transfer-Encoding"
    r" \(RFC 9112 §6\.3\)$",
    "httpx": r"^HTTP 200 with both Content-Length and Transfer-Encoding \(RFC 9112 §6\.3\)$",
}


@pytest.mark.parametrize("layer", LAYERS)
async def test_content_length_with_transfer_encoding_is_an_error_and_the_connection_is_closed(layer: str) -> None:
    async def smuggled(stream: trio.abc.Stream, seen: Seen) -> bool:
        body = b'{"jsonrpc":"2.0","id":%s,"result":{}}' % str(json.loads(seen.body)["id"]).encode()
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        )
        return True

    async with serving(Server()) as server:
        server.queue(rpc(), smuggled, rpc())
        async with connect(url_of(server), layer) as client:
            await client.request("ping")
            with pytest.raises(mcpfsm.TransportError, match=BOTH_LENGTHS[layer]):
                await client.request("ping")
            await client.request("ping")

    assert [seen.connection for seen in server.seen] == [1, 1, 2]


FORGED: Final = b'{"jsonrpc":"2.0","id":%d,"result":{"forged":true}}'


def with_trailing_response(then: trio.Event | None = None, sent: trio.Event | None = None) -> Answer:
    """Answer, and send a second, unrequested response (forging the next request's answer) after it.

    With ``then``, the forged response goes out only once ``then`` is set, and ``sent`` is set after.
    """

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        request_id = json.loads(seen.body)["id"]
        body = b'{"jsonrpc":"2.0","id":%d,"result":{}}' % request_id
        forged = FORGED % (request_id + 1)
        response = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        if then is None:
            await stream.send_all(response % (len(body), body) + response % (len(forged), forged))
        else:
            await stream.send_all(response % (len(body), body))
            await then.wait()
            await stream.send_all(response % (len(forged), forged))
            assert sent is not None
            sent.set()
        return True

    return answer


# Framing is the connection layer's: httpcore (h11) reads such bytes as the next answer, so with
# http_transport= this point is the caller's transport's; mcpfsm's pool never does.


def client_tls(ca: Any) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
async def test_bytes_after_a_complete_response_close_the_connection_and_never_answer_the_next_call(
    tls: bool, ca: Any
) -> None:
    async with serving(Server(), tls=tls_for(ca) if tls else None) as server:
        server.queue(with_trailing_response(), rpc({"genuine": True}))
        scheme = "https" if tls else "http"
        async with connect(f"{scheme}://{HOST}:{server.port}/mcp", "pool", verify=client_tls(ca)) as client:
            await client.request("ping")
            assert await client.request("ping") == {"genuine": True}

    assert [seen.connection for seen in server.seen] == [1, 2]


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
async def test_bytes_arriving_on_an_idle_connection_close_it_before_the_next_call(tls: bool, ca: Any) -> None:
    trailing, sent = trio.Event(), trio.Event()
    async with serving(Server(), tls=tls_for(ca) if tls else None) as server:
        server.queue(with_trailing_response(trailing, sent), rpc({"genuine": True}))
        scheme = "https" if tls else "http"
        async with connect(f"{scheme}://{HOST}:{server.port}/mcp", "pool", verify=client_tls(ca)) as client:
            await client.request("ping")
            trailing.set()
            await sent.wait()  # on loopback the bytes are in our socket once the server's send returned
            assert await client.request("ping") == {"genuine": True}

    assert [seen.connection for seen in server.seen] == [1, 2]


# --- legacy session ids --------------------------------------------------------------------------------------------

BAD_SESSION: Final = (
    r"^the server's answer to {method} carries an Mcp-Session-Id that is not visible ASCII \(0x21-0x7E, MCP"
    r' 2025-11-25 "Session Management"\); the answer is refused and the id not kept$'
)


def with_session(session: bytes, result: object = None) -> Answer:
    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        body = json.dumps({"jsonrpc": "2.0", "id": json.loads(seen.body)["id"], "result": result or {}}).encode()
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s"
            % (session, len(body), body)
        )
        return True

    return answer


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize(
    "session", ["café".encode(), b"with space", b"tab\there", b""], ids=["cafe", "space", "tab", "empty"]
)
async def test_a_session_id_that_is_not_visible_ascii_is_refused_and_the_previous_one_stays(
    layer: str, session: bytes
) -> None:
    async with serving(Server()) as server:
        server.queue(
            with_session(b"s-1", INITIALIZE), ok(b"", status=202), no_stream(), with_session(session), rpc(), ok(b"")
        )
        async with connect(url_of(server), layer, protocol=LEGACY) as client:
            with pytest.raises(mcpfsm.ProtocolError, match=BAD_SESSION.format(method="ping")):
                await client.request("ping")
            assert client.session_id == "s-1"
            await client.request("ping")

    assert [(seen.request_line.split()[0], seen.headers.get("mcp-session-id")) for seen in server.seen] == [
        ("POST", None),  # initialize
        ("POST", "s-1"),  # notifications/initialized
        ("GET", "s-1"),  # the standalone stream, refused
        ("POST", "s-1"),  # ping, answered with the bad id
        ("POST", "s-1"),  # ping again: the previous id stayed
        ("DELETE", "s-1"),
    ]


@pytest.mark.parametrize("layer", LAYERS)
async def test_a_bad_session_id_on_initialize_fails_the_handshake_clearly(layer: str) -> None:
    async with serving(Server()) as server:
        server.queue(with_session("café".encode(), INITIALIZE))
        with pytest.raises(mcpfsm.ProtocolError, match=BAD_SESSION.format(method="initialize")):
            async with connect(url_of(server), layer, protocol=LEGACY):
                pass


@pytest.mark.parametrize("layer", LAYERS)
async def test_the_modern_era_neither_checks_nor_keeps_nor_sends_a_session_id(layer: str) -> None:
    async with serving(Server()) as server:
        server.queue(with_session("café".encode()), with_session(b"s-1"), rpc())
        async with connect(url_of(server), layer) as client:
            for _ in range(3):
                await client.request("ping")
            assert client.session_id is None

    assert [seen.headers.get("mcp-session-id") for seen in server.seen] == [None, None, None]


# --- a URL the client cannot use -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "message"),
    [
        pytest.param("http://127.0.0.1:99999/mcp", r"port 99999 is not between 1 and 65535", id="port-too-large"),
        pytest.param("http://127.0.0.1:0/mcp", r"port 0 is not between 1 and 65535", id="port-zero"),
        pytest.param("ftp://127.0.0.1/mcp", r"expected an absolute http:// or https:// URL", id="scheme"),
    ],
)
def test_a_url_that_cannot_be_used_is_refused_when_the_client_is_made(url: str, message: str) -> None:
    with pytest.raises(mcpfsm.TransportError, match=rf"^invalid MCP server URL {url!r}: {message}$"):
        mcpfsm.Client.http(url)


def test_an_invalid_url_never_shows_its_credentials() -> None:
    with pytest.raises(
        mcpfsm.TransportError,
        match=r"^invalid MCP server URL 'http://127\.0\.0\.1:99999/mcp': port 99999 is not between 1 and 65535$",
    ):
        mcpfsm.Client.http("http://alice:secret@127.0.0.1:99999/mcp")


def test_max_response_bytes_must_be_positive() -> None:
    with pytest.raises(ValueError, match=r"^max_response_bytes must be at least 1, got 0$"):
        mcpfsm.Client.http("http://127.0.0.1:8000/mcp", max_response_bytes=0)
    with pytest.raises(ValueError, match=r"^max_response_bytes must be at least 1, got -1$"):
        mcpfsm.Client.stdio(["server"], max_response_bytes=-1)


# --- -32022 naming the version just sent (the conformance scenario request-metadata) -----------------------------


def unsupported_version() -> Answer:
    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        error = {"code": -32022, "message": "Unsupported protocol version"}
        error["data"] = {"supported": [MODERN], "requested": seen.headers.get("mcp-protocol-version", "")}
        body = json.dumps({"jsonrpc": "2.0", "id": json.loads(seen.body)["id"], "error": error}).encode()
        return await ok(body, status=400)(stream, seen)

    return answer


@pytest.mark.parametrize("protocol", ["auto", MODERN])
async def test_a_first_request_refused_with_minus_32022_for_the_version_it_sent_is_retried_once(protocol: str) -> None:
    # request-metadata refuses the very first request with supported == [the version sent], then
    # expects every later request to carry 2026-07-28 in the header and in _meta.
    async with serving(Server(default=rpc({"supportedVersions": [MODERN], "tools": []}))) as server:
        server.queue(unsupported_version())
        async with connect(url_of(server), "pool", protocol=protocol) as client:
            await client.tools()
            assert client.protocol_version == MODERN

    first = "server/discover" if protocol == "auto" else "tools/list"
    sent = [json.loads(seen.body) for seen in server.seen]
    assert [body["method"] for body in sent] == [first, first] + (["tools/list"] if protocol == "auto" else [])
    assert {
        (seen.headers["mcp-protocol-version"], body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"])
        for seen, body in zip(server.seen, sent, strict=True)
    } == {(MODERN, MODERN)}


async def test_an_oversized_event_on_the_standalone_stream_closes_it_for_good(records: list[tuple[str, str]]) -> None:
    async def big_stream(stream: trio.abc.Stream, seen: Seen) -> bool:
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        event = sse_body(b"y" * (2 * MIB))
        for start in range(0, len(event), 65536):
            piece = event[start : start + 65536]
            await stream.send_all(b"%x\r\n%s\r\n" % (len(piece), piece))
        await trio.sleep_forever()
        return False

    warning = (
        "WARNING",
        "the server's event stream is closed and not reopened: an event of the server's event stream is larger"
        " than max_response_bytes (1048576 bytes); the rest was not read and the connection was closed",
    )
    async with serving(Server()) as server:
        server.queue(with_session(b"s-1", INITIALIZE), ok(b"", status=202), big_stream, rpc(), ok(b""))
        async with connect(url_of(server), "pool", protocol=LEGACY, max_response_bytes=MIB) as client:
            with trio.fail_after(60):  # a hang guard: the log entry is the readiness signal
                while warning not in records:
                    await trio.sleep(0.01)
            await client.request("ping")

    assert [seen.request_line.split()[0] for seen in server.seen] == ["POST", "POST", "GET", "POST", "DELETE"]
    assert [r for r in records if r[0] == "WARNING"] == [warning]
