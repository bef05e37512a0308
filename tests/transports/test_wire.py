"""mcpfsm's own connection layer: HTTP/1.1 framing (``_core/h1.py``) and the keep-alive pool (``_transports/pool/``).

The framing is tested as pure functions, and against h11 (httpx's HTTP/1.1 parser) as an oracle
over random responses split at random points. The pool is tested against a real server on
127.0.0.1 started in the test (``tests/support/rawserver.py``): a small trio server whose answers each test
scripts, one per request, and which records every connection and request it sees.
"""

from __future__ import annotations

import itertools
import json
import re
import ssl
from typing import Any, Final

import h11
import httpx
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

import mcpfsm
from mcpfsm._core.h1 import H1Error, ResponseHead, ResponseReader, encode_request, request_prefix
from mcpfsm._transports.base import Reply, StreamedReply
from mcpfsm._transports.http import HttpTransport
from mcpfsm._transports.pool import (
    ConnectError,
    ConnectionPool,
    NotResent,
    Timeouts,
    WireError,
    WireTimeout,
    connection_pool,
)
from tests.support.rawserver import (
    HOST,
    JSON_HEADERS,
    Answer,
    Seen,
    Server,
    echo,
    ok,
    raw,
    serving,
    then_close,
    tls_for,
)

URL: Final = "http://mcp.test/mcp"

# --- encode_request ----------------------------------------------------------------------------


def test_a_post_is_one_buffer_with_host_headers_and_length() -> None:
    data = encode_request("POST", "/mcp?x=1", "example.test:8080", [("Accept", "a, b"), ("Mcp-Method", "m")], b"{}")
    assert data == (
        b"POST /mcp?x=1 HTTP/1.1\r\nHost: example.test:8080\r\nAccept: a, b\r\nMcp-Method: m\r\n"
        b"Content-Length: 2\r\n\r\n{}"
    )


@pytest.mark.parametrize(
    ("method", "body", "expected"),
    [
        pytest.param("GET", b"", b"GET / HTTP/1.1\r\nHost: h\r\n\r\n", id="get-without-length"),
        pytest.param("DELETE", b"", b"DELETE / HTTP/1.1\r\nHost: h\r\n\r\n", id="delete-without-length"),
        pytest.param("POST", b"", b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", id="empty-post"),
    ],
)
def test_content_length_only_for_a_body_or_a_post(method: str, body: bytes, expected: bytes) -> None:
    assert encode_request(method, "/", "h", [], body) == expected


def test_a_host_header_replaces_the_default_in_place() -> None:
    data = encode_request("GET", "/", "h", [("Accept", "x"), ("host", "virtual.test")])
    assert data == b"GET / HTTP/1.1\r\nhost: virtual.test\r\nAccept: x\r\n\r\n"


@pytest.mark.parametrize(
    ("fixed", "headers"),
    [
        pytest.param([("Accept", "x"), ("User-Agent", "u")], [("Mcp-Method", "m")], id="fixed-then-own"),
        pytest.param([], [("Accept", "x")], id="no-fixed"),
        pytest.param([("Host", "fixed.test"), ("Accept", "x")], [("Mcp-Method", "m")], id="host-in-fixed"),
        pytest.param([("Accept", "x")], [("Mcp-Method", "m"), ("host", "own.test")], id="host-in-own"),
    ],
)
def test_a_prefix_gives_the_same_bytes_as_the_whole_header_list(
    fixed: list[tuple[str, str]], headers: list[tuple[str, str]]
) -> None:
    for method, body in (("POST", b"{}"), ("GET", b"")):
        prefix = request_prefix(method, "/mcp", "h:1", fixed)
        whole = encode_request(method, "/mcp", "h:1", [*fixed, *headers], body)
        assert encode_request(method, "/mcp", "h:1", headers, body, prefix=prefix) == whole


def test_a_host_after_a_prefix_replaces_the_default_in_place() -> None:
    prefix = request_prefix("GET", "/", "h", [("Accept", "x")])
    data = encode_request("GET", "/", "h", [("Mcp-X", "1"), ("host", "virtual.test")], prefix=prefix)
    assert data == b"GET / HTTP/1.1\r\nhost: virtual.test\r\nAccept: x\r\nMcp-X: 1\r\n\r\n"


# The reason names the header, never its value: values are often credentials.
UNSENDABLE: Final = (
    r"^header {} has a value that cannot be sent as an HTTP field"
    r" \(visible ASCII with inner spaces or tabs only; the value is not shown\)$"
)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        pytest.param(("Bad Header", "x"), r"^header name 'Bad Header' is not an HTTP token$", id="space-in-name"),
        pytest.param(("", "x"), r"^header name '' is not an HTTP token$", id="empty-name"),
        pytest.param(
            ("X-Evil", "a\r\nInjected: yes"),
            UNSENDABLE.format("X-Evil"),
            id="crlf-injection",
        ),
        pytest.param(
            ("X-Name", "café"),
            UNSENDABLE.format("X-Name"),
            id="non-ascii",
        ),
        pytest.param(
            ("X-Pad", " padded"),
            UNSENDABLE.format("X-Pad"),
            id="leading-space",
        ),
        pytest.param(
            ("X-Nul", "a\x00b"),
            UNSENDABLE.format("X-Nul"),
            id="nul",
        ),
        pytest.param(
            ("content-length", "5"), r"^header content-length is set by the connection, not by the caller$", id="cl"
        ),
        pytest.param(
            ("Transfer-Encoding", "chunked"),
            r"^header Transfer-Encoding is set by the connection, not by the caller$",
            id="te",
        ),
    ],
)
def test_a_header_that_could_break_the_request_is_refused(header: tuple[str, str], message: str) -> None:
    with pytest.raises(H1Error, match=message):
        encode_request("POST", "/", "h", [header], b"{}")


def test_inner_spaces_tabs_and_empty_values_are_fine() -> None:
    data = encode_request("GET", "/", "h", [("X-A", "a b\tc"), ("X-Empty", "")])
    assert data == b"GET / HTTP/1.1\r\nHost: h\r\nX-A: a b\tc\r\nX-Empty: \r\n\r\n"


def test_a_malformed_request_line_is_refused() -> None:
    with pytest.raises(H1Error, match=r"^malformed request line 'POST' '/a b'$"):
        encode_request("POST", "/a b", "h", [])


# --- ResponseReader ------------------------------------------------------------------------------


def read_all(data: bytes, *, method: str = "POST", eof: bool = False) -> tuple[ResponseHead, bytes, bool]:
    """Feed ``data`` (and the end of the connection if ``eof``); return head, body, reusable."""
    reader = ResponseReader(method)
    reader.receive(data)
    if eof:
        reader.receive(b"")
    head = reader.read_head()
    assert head is not None
    pieces = []
    while (piece := reader.read_body()) is not None:
        assert piece, "the reader asked for more bytes than the test gave it"
        pieces.append(piece)
    return head, b"".join(pieces), reader.reusable


def test_a_content_length_response() -> None:
    head, body, reusable = read_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nMcp-Session-Id: s\r\n\r\n{}"
    )
    assert head == ResponseHead(
        status=200,
        reason="OK",
        headers={"content-type": "application/json", "content-length": "2", "mcp-session-id": "s"},
        keep_alive=True,
    )
    assert (body, reusable) == (b"{}", True)


@given(
    body=st.binary(max_size=64),
    extra=st.binary(max_size=8),
    cut=st.integers(min_value=0, max_value=80),
    chunked=st.booleans(),
)
def test_the_whole_body_at_once_is_what_read_body_gives_piece_by_piece(
    body: bytes, extra: bytes, cut: int, chunked: bool
) -> None:
    # whole_body: a Content-Length body all received comes in one step, and then the reader is where read_body
    # leaves it; anything else (not all here, chunked) is None, taking nothing, and read_body goes on as ever.
    if chunked:
        chunk = b"%x\r\n%s\r\n" % (len(body), body) if body else b""
        framed = b"Transfer-Encoding: chunked\r\n\r\n" + chunk + b"0\r\n\r\n"
    else:
        framed = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    data = b"HTTP/1.1 200 OK\r\n" + framed + extra
    head_length = data.index(b"\r\n\r\n") + 4
    reader = ResponseReader("POST")
    reader.receive(data[: head_length + cut])
    assert reader.read_head() is not None
    whole = reader.whole_body()
    # An empty body has ended with the head: read_body says so (None), whole_body takes nothing either.
    arrived = not chunked and cut >= len(body) and body != b""
    assert whole == (body if arrived else None)
    if whole is None:
        if data[head_length + cut :]:
            reader.receive(data[head_length + cut :])  # (b"" would say the connection ended)
        pieces = []
        while (piece := reader.read_body()) is not None:
            assert piece, "all the bytes are here"
            pieces.append(piece)
        rest = extra
        assert b"".join(pieces) == body
    else:
        rest = data[head_length + len(body) : head_length + cut]
    assert reader.done
    assert (reader.unread, reader.reusable) == (len(rest), not rest)


def test_a_head_seen_before_is_framed_for_each_method_and_its_fields_stay_read_only() -> None:
    # The same head bytes answer again and again (within the second of their Date): from the third time on, the
    # framing a POST's answer got is reused, with fields nobody can change for the next response; a HEAD
    # request's answer with the same bytes still has no body.
    data = b"HTTP/1.1 200 OK\r\ndate: Fri, 04 Dec 2026 12:00:00 GMT\r\ncontent-length: 3\r\nx-seen: %d\r\n\r\n"
    head = data % 41
    for _ in range(4):
        reader = ResponseReader("POST")
        reader.receive(head + b"abc" + b"HTTP/1.1")
        answer = reader.read_head()
        assert answer is not None and answer.headers["content-length"] == "3" and answer.keep_alive
        assert (reader.whole_body(), reader.done, reader.unread) == (b"abc", True, 8)
    with pytest.raises(TypeError):
        answer.headers["x-seen"] = "0"  # type: ignore[index]
    reader = ResponseReader("HEAD")
    reader.receive(head)
    assert reader.read_head() is not None and (reader.read_body(), reader.done) == (None, True)


def test_a_chunked_response_with_extensions_and_trailers() -> None:
    data = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;name=value\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n"
    )
    head, body, reusable = read_all(data)
    assert (head.status, body, reusable) == (200, b"hello 0123456789", True)


def test_a_response_delimited_by_the_end_of_the_connection_is_not_reusable() -> None:
    head, body, reusable = read_all(b"HTTP/1.1 200 OK\r\n\r\nuntil the end", eof=True)
    assert (head.keep_alive, body, reusable) == (False, b"until the end", False)


@pytest.mark.parametrize(
    ("data", "method"),
    [
        pytest.param(b"HTTP/1.1 204 No Content\r\n\r\n", "POST", id="204"),
        pytest.param(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", "GET", id="304"),
        pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", "HEAD", id="head"),
        pytest.param(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", "POST", id="202-empty"),
    ],
)
def test_responses_without_a_body(data: bytes, method: str) -> None:
    _, body, reusable = read_all(data, method=method)
    assert (body, reusable) == (b"", True)


def test_interim_responses_are_skipped() -> None:
    head, body, _ = read_all(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz"
    )
    assert (head.status, head.headers, body) == (200, {"content-length": "1"}, b"z")


@pytest.mark.parametrize(
    ("data", "keep_alive"),
    [
        pytest.param(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", False, id="close"),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, CLOSE\r\nContent-Length: 0\r\n\r\n", False, id="tokens"
        ),
        pytest.param(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", False, id="http-1.0"),
        pytest.param(b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", True, id="keep-alive"),
    ],
)
def test_keep_alive_follows_version_and_connection(data: bytes, keep_alive: bool) -> None:
    head, _, reusable = read_all(data)
    assert (head.keep_alive, reusable) == (keep_alive, keep_alive)


def test_header_details_repeats_folding_bare_lf_and_empty_reason() -> None:
    head, body, _ = read_all(b"HTTP/1.1 404\nX-A: 1\nx-a:  2 \nX-Fold: one\n  two\nContent-Length: 2\n\nno")
    assert head == ResponseHead(
        status=404, reason="", headers={"x-a": "1, 2", "x-fold": "one two", "content-length": "2"}, keep_alive=True
    )
    assert body == b"no"


def test_a_head_seen_before_frames_its_own_response_with_its_own_headers() -> None:
    # The second reader meets the bytes of a head parsed before: the same fields, its own dict, its own framing.
    head = b"HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 3\r\n\r\n"
    first, body, _ = read_all(head + b"abc")
    assert body == b"abc"
    first.headers["x-a"] = "changed"
    second, again, reusable = read_all(head + b"xyz")
    assert (second, again, reusable) == (
        ResponseHead(status=200, reason="OK", headers={"x-a": "1", "content-length": "3"}, keep_alive=True),
        b"xyz",
        True,
    )
    reader = ResponseReader("HEAD")
    reader.receive(head)
    assert (reader.read_head(), reader.read_body()) == (second, None)


def test_bytes_after_the_body_make_the_connection_unusable() -> None:
    _, body, reusable = read_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxjunk")
    assert (body, reusable) == (b"x", False)


def test_need_more_bytes_is_none_for_the_head_and_empty_for_the_body() -> None:
    reader = ResponseReader()
    reader.receive(b"HTTP/1.1 200 OK\r\nContent-Le")
    assert reader.read_head() is None
    reader.receive(b"ngth: 4\r\n\r\nab")
    assert reader.read_head() == ResponseHead(status=200, reason="OK", headers={"content-length": "4"}, keep_alive=True)
    assert [reader.read_body(), reader.read_body()] == [b"ab", b""]
    reader.receive(b"cd")
    assert [reader.read_body(), reader.read_body(), reader.done] == [b"cd", None, True]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(b"", r"^the server closed the connection without answering$", id="nothing"),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-",
            r"^the server closed the connection in the middle of the response head$",
            id="mid-head",
        ),
        pytest.param(b"HTTP/2 200\r\n\r\n", r"^malformed HTTP/1.1 status line 'HTTP/2 200'$", id="http-2"),
        pytest.param(b"SSH-2.0-OpenSSH\r\n\r\n", r"^malformed HTTP/1.1 status line 'SSH-2.0-OpenSSH'$", id="not-http"),
        pytest.param(b"HTTP/1.1 099 Low\r\n\r\n", r"^malformed HTTP/1.1 status line 'HTTP/1.1 099 Low'$", id="low"),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
            r"^malformed HTTP/1.1 header line: the field name 'Bad Name' is not a token$",
            id="name",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nNo colon\r\n\r\n", r"^malformed HTTP/1.1 header line: no colon$", id="no-colon"
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
            r"^malformed HTTP/1.1 header line: the value of 'x' holds CR or NUL$",
            id="bare-cr",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\n folded\r\n\r\n",
            r"^malformed HTTP/1.1 header block: a folded line comes first$",
            id="fold-first",
        ),
        pytest.param(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
            r"^the server switched protocols \(HTTP 101\), which this client never asks for$",
            id="101",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n", r"^malformed Content-Length '1, 2'$", id="cl-conflict"
        ),
        pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", r"^malformed Content-Length '-1'$", id="cl-neg"),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            r"^unsupported Transfer-Encoding 'gzip, chunked' \(only chunked is understood\)$",
            id="te-gzip",
        ),
    ],
)
def test_a_broken_head_raises(data: bytes, message: str) -> None:
    reader = ResponseReader()
    reader.receive(data)
    reader.receive(b"")
    with pytest.raises(H1Error, match=message):
        reader.read_head()


def test_a_head_larger_than_the_limit_raises_without_waiting_for_its_end() -> None:
    reader = ResponseReader(max_head_bytes=100)
    reader.receive(b"HTTP/1.1 200 OK\r\nX-Big: " + b"x" * 200)
    with pytest.raises(H1Error, match=r"^the response head is larger than 100 bytes$"):
        reader.read_head()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(b"5\r\nabc", r"^the server closed the connection in the middle of the response body$", id="cut"),
        pytest.param(b"zz\r\n", r"^malformed chunked body: bad chunk size line b'zz'$", id="size"),
        pytest.param(b"1\r\nab\r\n", r"^malformed chunked body: a chunk does not end with CRLF$", id="crlf"),
        pytest.param(
            b"1" * 5000, r"^malformed chunked body: a chunk size or trailer line is too long$", id="long-line"
        ),
    ],
)
def test_a_broken_chunked_body_raises(body: bytes, message: str) -> None:
    reader = ResponseReader()
    reader.receive(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
    reader.receive(b"")
    assert reader.read_head() == ResponseHead(
        status=200, reason="OK", headers={"transfer-encoding": "chunked"}, keep_alive=True
    )
    with pytest.raises(H1Error, match=message):
        while reader.read_body() is not None:
            pass


def test_a_content_length_body_cut_short_raises() -> None:
    reader = ResponseReader()
    reader.receive(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab")
    reader.receive(b"")
    assert (reader.read_head(), reader.read_body()) == (
        ResponseHead(status=200, reason="OK", headers={"content-length": "5"}, keep_alive=True),
        b"ab",
    )
    with pytest.raises(H1Error, match=r"^the server closed the connection in the middle of the response body$"):
        reader.read_body()


def h11_response(framing: str, status: int, headers: list[tuple[str, str]], pieces: list[bytes]) -> bytes:
    """The bytes h11, as a server, sends for this response."""
    server = h11.Connection(h11.SERVER)
    version = b"1.0" if framing == "close" else b"1.1"
    server.receive_data(b"GET / HTTP/" + version + b"\r\nHost: h\r\n\r\n")
    assert isinstance(server.next_event(), h11.Request)
    length = [("Content-Length", str(sum(map(len, pieces))))] if framing == "length" else []
    data = server.send(h11.Response(status_code=status, headers=headers + length)) or b""
    for piece in pieces:
        data += server.send(h11.Data(data=piece)) or b""
    return data + (server.send(h11.EndOfMessage()) or b"")


@settings(max_examples=200, deadline=None)
@given(
    framing=st.sampled_from(["length", "chunked", "close"]),
    status=st.integers(200, 599).filter(lambda s: s not in (204, 304)),
    headers=st.lists(
        st.tuples(
            st.sampled_from(["X-A", "Content-Type", "Mcp-Session-Id"]),
            st.from_regex(r"([a-c,;=/]([a-c ,;=/]*[a-c,;=/])?)?", fullmatch=True),
        ),
        max_size=4,
    ),
    pieces=st.lists(st.binary(min_size=1, max_size=50), max_size=5),
    cuts=st.lists(st.integers(0, 400), max_size=8),
)
def test_the_reader_agrees_with_h11_however_the_bytes_are_split(
    framing: str, status: int, headers: list[tuple[str, str]], pieces: list[bytes], cuts: list[int]
) -> None:
    data = h11_response(framing, status, headers, pieces)
    oracle = h11.Connection(h11.CLIENT)
    oracle.send(h11.Request(method="GET", target="/", headers=[("Host", "h")]))
    oracle.send(h11.EndOfMessage())
    oracle.receive_data(data)
    oracle.receive_data(b"")
    expected = oracle.next_event()
    assert isinstance(expected, h11.Response)

    reader = ResponseReader("GET")
    bounds = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    parts = [data[start:end] for start, end in itertools.pairwise(bounds)]
    if framing == "close":
        parts.append(b"")  # the end of the connection ends the body
    head, body = None, b""
    for part in parts:
        reader.receive(part)
        head = head or reader.read_head()
        while head is not None and (piece := reader.read_body()):
            body += piece
    assert head is not None
    assert (head.status, reader.done, reader.reusable) == (status, True, framing != "close")
    assert list(head.headers.items()) == _joined([(n.decode(), v.decode()) for n, v in expected.headers])
    assert body == b"".join(pieces)


def _joined(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    joined: dict[str, str] = {}
    for name, value in headers:
        joined[name] = f"{joined[name]}, {value}" if name in joined else value
    return list(joined.items())


# --- the pool against a real server on 127.0.0.1 (tests/support/rawserver.py) ---------------------------------


def pool_for(server: Server, **options: Any) -> ConnectionPool:
    return ConnectionPool(scheme="http", host=HOST, port=server.port, **options)


async def post(pool: ConnectionPool, body: bytes, *, resendable: bool = False) -> tuple[int, bytes]:
    reply = await pool.request("POST", "/mcp", JSON_HEADERS, body, resendable=resendable)
    try:
        return reply.status, await reply.read()
    finally:
        await reply.aclose()


async def test_sequential_requests_share_one_keep_alive_connection() -> None:
    async with serving(Server(default=echo())) as server:
        pool = pool_for(server)
        answers = [await post(pool, b'{"n":%d}' % n) for n in range(5)]
        assert answers == [(200, b'{"n":%d}' % n) for n in range(5)]
        assert (server.connections, pool.connections, pool.idle) == (1, 1, 1)
        assert server.bodies() == [(1, b'{"n":%d}' % n) for n in range(5)]
        await pool.aclose()


async def test_a_read_only_header_mapping_is_encoded_again_when_what_it_holds_changed() -> None:
    # The pool keeps the head it made of a read-only mapping (a header plan's) while the same mapping holds the same
    # items; one whose items changed behind it, or another mapping, gets its own head.
    from types import MappingProxyType

    async with serving(Server(default=echo())) as server:
        pool = pool_for(server)
        held = {"Mcp-Method": "tools/call", "Mcp-Name": "a"}
        view = MappingProxyType(held)
        fixed = tuple(JSON_HEADERS)
        for name in ("a", "a", "b"):
            held["Mcp-Name"] = name
            reply = await pool.request("POST", "/mcp", view, b"{}", fixed=fixed)
            await reply.read()
            await reply.aclose()
        other = MappingProxyType({"Mcp-Method": "tools/list"})
        reply = await pool.request("POST", "/mcp", other, b"{}", fixed=fixed)
        await reply.aclose()
        sent = [(seen.headers.get("mcp-method"), seen.headers.get("mcp-name")) for seen in server.seen]
        assert sent == [("tools/call", "a"), ("tools/call", "a"), ("tools/call", "b"), ("tools/list", None)]
        assert all(seen.headers["content-type"] == "application/json" for seen in server.seen)
        await pool.aclose()


async def test_an_idle_connection_the_server_closed_is_detected_and_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    async with serving(Server()) as server:
        server.queue(then_close(ok(b"first")), ok(b"second"))
        pool = pool_for(server)
        exchanges: list[bool] = []
        exchange = connection_pool.exchange

        async def spy(*args: Any, reused: bool, **options: Any) -> Any:
            exchanges.append(reused)
            return await exchange(*args, reused=reused, **options)

        monkeypatch.setattr(connection_pool, "exchange", spy)
        closed = server.closed
        assert await post(pool, b"1") == (200, b"first")
        await closed.wait()
        assert await post(pool, b"2") == (200, b"second")
        assert server.bodies() == [(1, b"1"), (2, b"2")]
        # Detected at checkout: both requests went out on fresh connections, nothing was retried.
        assert exchanges == [False, False]
        assert (pool.connections, pool.idle) == (1, 1)
        await pool.aclose()


async def test_an_idle_connection_past_its_expiry_is_replaced() -> None:
    async with serving(Server(default=echo())) as server:
        pool = pool_for(server, keepalive_expiry=0.0)
        await post(pool, b"1")
        await trio.sleep(0.01)
        await post(pool, b"2")
        assert server.bodies() == [(1, b"1"), (2, b"2")]
        assert (pool.connections, pool.idle) == (1, 1)
        await pool.aclose()


async def test_a_resendable_request_on_a_reused_connection_closed_before_any_answer_is_resent_once() -> None:
    # The keep-alive race: the server gives up on the idle connection just as our request arrives.
    async with serving(Server()) as server:
        server.queue(ok(b"first"), raw(b"", then="close"), ok(b"second"))
        pool = pool_for(server)
        assert await post(pool, b"1") == (200, b"first")
        assert await post(pool, b"2", resendable=True) == (200, b"second")
        assert server.bodies() == [(1, b"1"), (1, b"2"), (2, b"2")]
        await pool.aclose()


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(raw(b"", then="close"), id="closed"),
        pytest.param(raw(b"", then="reset"), id="reset"),
    ],
)
async def test_any_other_request_on_a_reused_connection_is_never_resent(answer: Answer) -> None:
    # RFC 9110 §9.2.2: the server read the request and may have acted on it (a tool call ran) before
    # the connection broke; sending it again by itself would run it twice without anyone knowing.
    async with serving(Server()) as server:
        server.queue(ok(b"first"), answer, ok(b"after"))
        pool = pool_for(server)
        assert await post(pool, b"1") == (200, b"first")
        with pytest.raises(
            NotResent,
            match=r"^the server closed a kept-alive connection without answering; the request was not resent"
            r" because the server may have acted on it \(RFC 9110 §9\.2\.2\)$",
        ):
            await post(pool, b"2")
        assert server.bodies() == [(1, b"1"), (1, b"2")]
        assert (pool.connections, pool.idle) == (0, 0)
        assert await post(pool, b"3") == (200, b"after")
        assert server.bodies() == [(1, b"1"), (1, b"2"), (2, b"3")]
        await pool.aclose()


async def test_a_fresh_connection_closed_before_any_answer_is_an_error_and_never_resent() -> None:
    async with serving(Server()) as server:
        server.queue(raw(b"", then="close"))
        pool = pool_for(server)
        with pytest.raises(H1Error, match=r"^the server closed the connection without answering$"):
            await post(pool, b"1")
        assert server.bodies() == [(1, b"1")]
        assert pool.connections == 0
        await pool.aclose()


async def test_a_reused_connection_that_started_answering_is_never_resent() -> None:
    async with serving(Server()) as server:
        server.queue(ok(b"first"), raw(b"HTTP/1.1 200 OK\r\nContent-Le", then="close"))
        pool = pool_for(server)
        await post(pool, b"1")
        with pytest.raises(H1Error, match=r"^the server closed the connection in the middle of the response head$"):
            await post(pool, b"2")
        assert server.bodies() == [(1, b"1"), (1, b"2")]
        await pool.aclose()


async def test_a_connection_closed_mid_body_is_an_error_and_is_discarded() -> None:
    async with serving(Server()) as server:
        server.queue(raw(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", then="close"))
        pool = pool_for(server)
        with pytest.raises(H1Error, match=r"^the server closed the connection in the middle of the response body$"):
            await post(pool, b"1")
        assert (pool.connections, pool.idle) == (0, 0)
        await pool.aclose()


@pytest.mark.parametrize("then", ["hang", "close"])
async def test_a_prefetched_body_that_stalls_or_breaks_fails_where_it_is_read(
    then: str, mock_clock: trio.testing.MockClock
) -> None:
    # prefetch=True waits for the rest of a small body before returning the head; what that wait meets
    # is raised by read(), as without prefetch, and the connection is discarded. The 0.05 s read timeout is
    # on a mock clock that moves only once every task has waited a real second: the head always arrives
    # first, however busy the machine.
    mock_clock.autojump_threshold = 1.0
    async with serving(Server()) as server:
        server.queue(raw(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", then=then))
        pool = pool_for(server, timeouts=Timeouts(read=0.05))
        reply = await pool.request("POST", "/mcp", JSON_HEADERS, b"1", prefetch=True)
        assert reply.status == 200
        expected = (
            (WireTimeout, r"^ReadTimeout after 0.05 s$")
            if then == "hang"
            else (H1Error, r"^the server closed the connection in the middle of the response body$")
        )
        with pytest.raises(expected[0], match=expected[1]):
            await reply.read()
        await reply.aclose()
        assert (pool.connections, pool.idle) == (0, 0)
        await pool.aclose()


async def test_a_prefetched_body_written_after_its_head_comes_with_the_reply_and_keeps_the_connection() -> None:
    async def head_then_body(stream: trio.abc.Stream, seen: Seen) -> bool:
        # As uvicorn does: the head and the body in two writes; the body once the client waits for it.
        await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
        await trio.testing.wait_all_tasks_blocked()
        await stream.send_all(b"hello")
        return True

    async with serving(Server()) as server:
        server.queue(head_then_body, ok(b"next"))
        pool = pool_for(server)
        reply = await pool.request("POST", "/mcp", JSON_HEADERS, b"1", prefetch=True)
        # The body is already here: reading it ends the response without another wait.
        assert (reply.status, reply._reader.missing, reply._reader.unread) == (200, 0, 5)
        assert await reply.read() == b"hello"
        await reply.aclose()
        assert await post(pool, b"2") == (200, b"next")
        assert (server.connections, pool.connections, pool.idle) == (1, 1, 1)
        await pool.aclose()


async def test_chunked_bodies_are_read_whole_and_keep_the_connection() -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n"
    async with serving(Server()) as server:
        server.queue(raw(chunked), ok(b"next"))
        pool = pool_for(server)
        assert await post(pool, b"1") == (200, b"abcde")
        assert await post(pool, b"2") == (200, b"next")
        assert server.connections == 1
        await pool.aclose()


async def test_an_event_stream_arrives_chunk_by_chunk() -> None:
    gate = trio.Event()

    async def stream_two_events(stream: trio.abc.Stream, seen: Seen) -> bool:
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"b\r\ndata: one\n\n\r\n"
        )
        await gate.wait()  # the second event exists only once the client has the first one
        await stream.send_all(b"b\r\ndata: two\n\n\r\n0\r\n\r\n")
        return True

    async with serving(Server()) as server:
        server.queue(stream_two_events)
        pool = pool_for(server)
        reply = await pool.request("POST", "/mcp", JSON_HEADERS, b"{}")
        chunks = reply.chunks()
        assert (reply.status, reply.headers["content-type"]) == (200, "text/event-stream")
        assert await chunks.__anext__() == b"data: one\n\n"
        gate.set()
        assert [chunk async for chunk in chunks] == [b"data: two\n\n"]
        await reply.aclose()
        assert (pool.connections, pool.idle) == (1, 1)
        await pool.aclose()


async def test_closing_a_reply_early_closes_its_connection_unless_the_end_is_already_here() -> None:
    async with serving(Server()) as server:
        server.queue(
            raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n", then="keep"),
            raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n"),
        )
        pool = pool_for(server)
        for expected_idle in (0, 1):
            reply = await pool.request("POST", "/mcp", JSON_HEADERS, b"{}")
            assert await reply.chunks().__anext__() == b"a"
            await reply.aclose()
            await reply.aclose()
            assert (pool.connections, pool.idle) == (expected_idle, expected_idle)
        assert server.connections == 2
        await pool.aclose()


async def test_closing_a_reply_whose_end_is_already_in_the_socket_keeps_the_connection() -> None:
    first_read, end_sent = trio.Event(), trio.Event()

    async def answer_then_end(stream: trio.abc.Stream, seen: Seen) -> bool:
        await stream.send_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n")
        await first_read.wait()
        await stream.send_all(b"0\r\n\r\n")
        end_sent.set()
        return True

    async with serving(Server()) as server:
        server.queue(answer_then_end, ok(b"next"))
        pool = pool_for(server)
        reply = await pool.request("POST", "/mcp", JSON_HEADERS, b"{}")
        assert await reply.chunks().__anext__() == b"a"
        first_read.set()
        await end_sent.wait()
        await reply.aclose()
        assert (pool.connections, pool.idle) == (1, 1)
        assert await post(pool, b"2") == (200, b"next")
        assert server.connections == 1
        await pool.aclose()


async def test_a_silent_server_hits_the_read_timeout() -> None:
    async with serving(Server()) as server:
        server.queue(raw(b"", then="hang"))
        pool = pool_for(server, timeouts=Timeouts(read=0.05))
        with pytest.raises(WireTimeout, match=r"^ReadTimeout after 0.05 s$") as caught:
            await post(pool, b"1")
        assert (caught.value.kind, pool.connections) == ("ReadTimeout", 0)
        await pool.aclose()


async def test_a_request_larger_than_the_socket_buffers_is_sent_whole() -> None:
    # A plain connection writes what the socket takes at once and waits for room for the rest.
    body = bytes(range(256)) * (8 * 1024 * 1024 // 256)
    async with serving(Server(default=echo())) as server:
        pool = pool_for(server, timeouts=Timeouts(write=30.0))
        assert await post(pool, body) == (200, body)
        assert await post(pool, b"small") == (200, b"small")
        assert (server.connections, pool.connections, pool.idle) == (1, 1, 1)
        await pool.aclose()


async def test_a_server_that_does_not_read_hits_the_write_timeout() -> None:
    # The kernel completes the handshake with nobody accepting: the request fills the buffers, then the write waits.
    listeners = await trio.open_tcp_listeners(0, host=HOST)
    try:
        port = listeners[0].socket.getsockname()[1]
        pool = ConnectionPool(scheme="http", host=HOST, port=port, timeouts=Timeouts(write=0.05))
        with pytest.raises(WireTimeout, match=r"^WriteTimeout after 0.05 s$") as caught:
            await post(pool, b"x" * (64 * 1024 * 1024))
        assert (caught.value.kind, pool.connections) == ("WriteTimeout", 0)
        await pool.aclose()
    finally:
        for listener in listeners:
            await listener.aclose()


async def test_a_busy_pool_makes_the_next_request_wait_and_time_out() -> None:
    async with serving(Server()) as server:
        server.queue(raw(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", then="keep"), ok(b"later"))
        pool = pool_for(server, max_connections=1, timeouts=Timeouts(pool=0.05))
        held = await pool.request("POST", "/mcp", JSON_HEADERS, b"1")
        with pytest.raises(WireTimeout, match=r"^PoolTimeout after 0.05 s$"):
            await post(pool, b"2")
        await held.aclose()
        assert await post(pool, b"3") == (200, b"later")
        assert server.bodies() == [(1, b"1"), (2, b"3")]
        await pool.aclose()


@pytest.mark.parametrize(
    ("slow_seconds", "opened"),
    [
        pytest.param(3600.0, 2, id="quick-calls-wait-for-a-released-connection"),
        pytest.param(0.0, 3, id="slow-calls-open-more-up-to-the-cap"),
    ],
)
async def test_beyond_the_soft_limit_a_request_waits_unless_every_busy_connection_is_slow(
    slow_seconds: float, opened: int
) -> None:
    # soft_connections=2, max_connections=3, six requests at once, each answered 20 ms after it arrives:
    # connections that keep being released are waited for; connections that all count as slow are not.
    async with serving(Server(default=echo(delay=0.02))) as server:
        pool = pool_for(server, max_connections=3, soft_connections=2, slow_seconds=slow_seconds)
        answers: list[tuple[int, bytes]] = []

        async def one(n: int) -> None:
            answers.append(await post(pool, b"%d" % n))

        async with trio.open_nursery() as nursery:
            for n in range(6):
                nursery.start_soon(one, n)
        assert sorted(answers) == sorted((200, b"%d" % n) for n in range(6))
        assert (server.most_open, server.connections, pool.connections, pool.idle) == (opened, opened, opened, opened)
        await pool.aclose()


async def test_concurrent_requests_never_open_more_than_the_cap() -> None:
    async with serving(Server(default=echo(delay=0.02))) as server:
        pool = pool_for(server, max_connections=3, soft_connections=3)
        answers: list[tuple[int, bytes]] = []

        async def one(n: int) -> None:
            answers.append(await post(pool, b"%d" % n))

        async with trio.open_nursery() as nursery:
            for n in range(12):
                nursery.start_soon(one, n)
        assert sorted(answers) == sorted((200, b"%d" % n) for n in range(12))
        assert (server.most_open, server.connections, pool.connections, pool.idle) == (3, 3, 3, 3)
        await pool.aclose()


async def test_a_cancelled_request_closes_its_connection_and_the_pool_goes_on() -> None:
    arrived = trio.Event()

    async def hang(stream: trio.abc.Stream, seen: Seen) -> bool:
        arrived.set()
        await trio.sleep_forever()
        return False

    async with serving(Server()) as server:
        server.queue(hang, ok(b"after"))
        pool = pool_for(server)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(post, pool, b"1")
            await arrived.wait()
            nursery.cancel_scope.cancel()
        assert pool.connections == 0
        assert await post(pool, b"2") == (200, b"after")
        await pool.aclose()


async def test_a_closed_pool_refuses_requests_and_closes_returned_connections() -> None:
    async with serving(Server(default=echo())) as server:
        pool = pool_for(server)
        held = await pool.request("POST", "/mcp", JSON_HEADERS, b"1")
        await pool.aclose()
        assert await held.read() == b"1"
        await held.aclose()
        assert (pool.connections, pool.idle) == (0, 0)
        with pytest.raises(WireError, match=r"^the connection pool is closed$"):
            await post(pool, b"2")


async def test_nothing_listening_is_a_connect_error_with_the_os_cause() -> None:
    async with serving(Server()) as server:
        port = server.port
    pool = ConnectionPool(scheme="http", host=HOST, port=port)
    with pytest.raises(ConnectError, match=r"^cannot connect to 127\.0\.0\.1:\d+: Connection refused$"):
        await post(pool, b"1")
    assert pool.connections == 0


def test_pool_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match=r"^scheme must be http or https, got 'ftp'$"):
        ConnectionPool(scheme="ftp", host=HOST, port=21)
    with pytest.raises(ValueError, match=r"^max_connections must be at least 1, got 0$"):
        ConnectionPool(scheme="http", host=HOST, port=80, max_connections=0)


# --- https ------------------------------------------------------------------------------------------


async def test_https_keeps_one_verified_tls_connection_alive(ca: Any) -> None:
    client = ssl.create_default_context()
    ca.configure_trust(client)
    async with serving(Server(default=echo()), tls=tls_for(ca)) as server:
        pool = ConnectionPool(scheme="https", host=HOST, port=server.port, ssl_context=client)
        assert [await post(pool, b"1"), await post(pool, b"2")] == [(200, b"1"), (200, b"2")]
        assert server.bodies() == [(1, b"1"), (1, b"2")]
        assert server.seen[0].head.startswith(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % server.port)
        await pool.aclose()


async def test_https_verifies_the_certificate_by_default(ca: Any) -> None:
    async with serving(Server(default=echo()), tls=tls_for(ca)) as server:
        transport = HttpTransport(f"https://{HOST}:{server.port}/mcp")
        with pytest.raises(mcpfsm.TransportError, match=r"^POST to MCP server failed: .*CERTIFICATE_VERIFY_FAILED.*$"):
            await transport.send('{"jsonrpc":"2.0","id":1,"method":"ping"}')
        assert server.seen == []
        await transport.aclose()


# --- through HttpTransport -------------------------------------------------------------------------


async def test_the_transport_sends_one_exact_request_and_returns_the_json_body() -> None:
    async with serving(Server()) as server:
        server.queue(ok(b'{"jsonrpc":"2.0","id":1,"result":{}}', headers=[("Content-Type", "application/json")]))
        transport = HttpTransport(f"http://{HOST}:{server.port}/mcp?tenant=a", headers={"X-Tenant": "acme"})
        message = '{"jsonrpc":"2.0","id":1,"method":"tools/call"}'
        answer = await transport.send(message, {"Mcp-Method": "tools/call"})
        # A JSON answer comes decoded too (the transport matched it to its request by id).
        decoded = {"jsonrpc": "2.0", "id": 1, "result": {}}
        assert answer == Reply(b'{"jsonrpc":"2.0","id":1,"result":{}}', 200, decoded=decoded)
        assert server.seen == [
            Seen(
                connection=1,
                head=(
                    b"POST /mcp?tenant=a HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                    b"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
                    b"User-Agent: mcpfsm/0.1.0\r\nAccept-Encoding: gzip, deflate\r\n"
                    b"X-Tenant: acme\r\nMcp-Method: tools/call\r\nContent-Length: %d\r\n\r\n"
                )
                % (server.port, len(message)),
                body=message.encode(),
            )
        ]
        await transport.aclose()


@pytest.mark.parametrize(
    ("answer", "options", "message"),
    [
        pytest.param(
            raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{", then="close"),
            {},
            r"^reading HTTP response failed: the server closed the connection in the middle of the response body$",
            id="cut-body",
        ),
        pytest.param(
            raw(b"", then="hang"),
            {"timeout": httpx.Timeout(5.0, read=0.05)},
            r"^POST to MCP server timed out \(ReadTimeout\)$",
            id="read-timeout",
        ),
        pytest.param(
            raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{", then="hang"),
            {"timeout": httpx.Timeout(5.0, read=0.05)},
            r"^reading HTTP response timed out \(ReadTimeout\)$",
            id="body-read-timeout",
        ),
        pytest.param(
            raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: br\r\n\r\n", then="keep"),
            {},
            r"^POST to MCP server failed: unsupported Transfer-Encoding 'br' \(only chunked is understood\)$",
            id="bad-framing",
        ),
        pytest.param(
            ok(b"too big", status=413, headers=[("Content-Type", "text/plain")]),
            {},
            r"^HTTP 413 X: the request was too large for the server \(body or headers\) \(too big\)$",
            id="413",
        ),
    ],
)
async def test_transport_failures_become_transport_errors(
    answer: Answer, options: dict[str, Any], message: str, mock_clock: trio.testing.MockClock
) -> None:
    # The read timeouts run on a mock clock that moves only once every task has waited a real second, so a
    # head the server did send always arrives before them, however busy the machine.
    mock_clock.autojump_threshold = 1.0
    async with serving(Server()) as server:
        server.queue(answer)
        transport = HttpTransport(f"http://{HOST}:{server.port}/mcp", **options)
        with pytest.raises(mcpfsm.TransportError, match=message):
            await transport.send('{"jsonrpc":"2.0","id":1,"method":"ping"}')
        await transport.aclose()


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"X-Api-Key": "SECRET-KEY\n"}, id="trailing-newline"),
        pytest.param({"Authorization": "Bearer SECRET-TOKEN\u00e9"}, id="non-ascii"),
        pytest.param({"X-Api-Key": "SECRET\r\nInjected: yes"}, id="crlf"),
    ],
)
@pytest.mark.parametrize("layer", ["pool", "httpx"])
def test_a_caller_header_that_cannot_be_sent_is_refused_when_the_transport_is_made(
    headers: dict[str, str], layer: str
) -> None:
    name = next(iter(headers))
    mock = httpx.MockTransport(lambda request: httpx.Response(500))
    options: dict[str, Any] = {} if layer == "pool" else {"transport": mock}
    with pytest.raises(ValueError, match=UNSENDABLE.format(name)) as raised:
        HttpTransport("http://127.0.0.1:9/mcp", headers=headers, **options)
    assert "SECRET" not in str(raised.value)


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        pytest.param({"Bad Name": "x"}, r"^header name 'Bad Name' is not an HTTP token$", id="name"),
        pytest.param({"X-Number": 5}, UNSENDABLE.format("X-Number"), id="not-a-string"),
    ],
)
def test_a_malformed_caller_header_is_refused_when_the_transport_is_made(headers: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HttpTransport("http://127.0.0.1:9/mcp", headers=headers)


class _BadToken:
    # Credentials whose token holds a character no header may carry (a broken token store, say).
    def headers(self, method: str, url: str) -> tuple[tuple[str, str], ...]:
        return (("Authorization", "Bearer SECRET-TOKEN\u00e9"),)


async def test_a_credential_header_that_cannot_be_sent_fails_before_anything_is_sent_without_its_value() -> None:
    async with serving(Server()) as server:
        transport = HttpTransport(f"http://{HOST}:{server.port}/mcp", credentials=_BadToken())
        with pytest.raises(
            mcpfsm.TransportError, match=r"^POST to MCP server failed: " + UNSENDABLE.format("Authorization")[1:]
        ) as raised:
            await transport.send("{}")
        assert "SECRET" not in str(raised.value)
        assert server.connections == 0
        await transport.aclose()


async def test_a_credential_header_that_cannot_be_sent_fails_the_same_way_on_a_callers_httpx_transport() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(500)

    transport = HttpTransport(URL, transport=httpx.MockTransport(handler), credentials=_BadToken())
    with pytest.raises(
        mcpfsm.TransportError, match=r"^POST to MCP server failed: " + UNSENDABLE.format("Authorization")[1:]
    ) as raised:
        await transport.send("{}")
    assert ("SECRET" not in str(raised.value), seen) == (True, [])
    await transport.aclose()


async def test_an_event_stream_answer_comes_through_the_default_pool() -> None:
    response = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"ok": True}}).encode()
    notification = b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}'
    body = b"event: message\ndata: " + notification + b"\n\nevent: message\ndata: " + response + b"\n\n"
    async with serving(Server()) as server:
        server.queue(
            raw(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
            ),
            ok(b'{"jsonrpc":"2.0","id":8,"result":{}}'),
        )
        transport = HttpTransport(f"http://{HOST}:{server.port}/mcp")
        streamed = await transport.send('{"jsonrpc":"2.0","id":7,"method":"tools/call"}')
        assert (streamed, type(streamed)) == (Reply(response.decode(), 200), StreamedReply)
        ping = await transport.send('{"jsonrpc":"2.0","id":8,"method":"ping"}')
        assert ping == Reply(
            b'{"jsonrpc":"2.0","id":8,"result":{}}', 200, decoded={"jsonrpc": "2.0", "id": 8, "result": {}}
        )
        assert server.connections == 1
        await transport.aclose()


def test_no_credential_or_cookie_stays_in_the_process_wide_header_cache_or_reaches_a_repr_or_error() -> None:
    from mcpfsm._core import h1
    from mcpfsm._core.proxies import ProxyRules
    from mcpfsm._transports.base import Reply
    from mcpfsm._transports.pool import ProxyRoute

    secret = "SECRET-0123456789"
    h1._CHECKED_LINES.clear()
    h1.encode_request(
        "POST",
        "/mcp",
        "h",
        [
            ("Authorization", f"Bearer {secret}"),
            ("Cookie", f"sid={secret}"),
            ("DPoP", secret),
            ("Proxy-Authorization", f"Basic {secret}"),
            ("X-Long", "v" * 300),
            ("Mcp-Session-Id", secret),
            ("Mcp-Method", "tools/call"),
        ],
        b"{}",
    )
    # A caller's fixed headers (an API key) are checked for the pool's prefix, not remembered process-wide.
    prefix = h1.request_prefix("POST", "/mcp", "h", [("X-Api-Key", secret)])
    assert prefix == f"POST /mcp HTTP/1.1\r\nHost: h\r\nX-Api-Key: {secret}\r\n"
    assert list(h1._CHECKED_LINES) == [("Mcp-Method", "tools/call")]

    h1._HEADS.clear()
    for field in ("Mcp-Session-Id", "WWW-Authenticate", "DPoP-Nonce"):
        reader = ResponseReader()
        reader.receive(f"HTTP/1.1 200 OK\r\n{field}: {secret}\r\nContent-Length: 0\r\n\r\n".encode())
        assert reader.read_head() is not None
    reader = ResponseReader()
    reader.receive(f"HTTP/1.1 200 OK\r\nSet-Cookie: sid={secret}\r\nContent-Length: 0\r\n\r\n".encode())
    head = reader.read_head()
    assert h1._HEADS == {}
    assert head is not None and head.set_cookie == (f"sid={secret}",)
    reply = Reply(f'{{"token": "{secret}"}}', 200, session_id=secret)
    route = ProxyRoute(scheme="http", host="proxy", port=3128, authorization=f"Basic {secret}")
    rules = ProxyRules.explicit(f"http://user:{secret}@proxy:3128")
    for shown in (repr(head), repr(reply), repr(route), repr(rules), str(rules.rules[0])):
        assert secret not in shown, shown
    assert repr(rules) == "ProxyRules(rules=(ProxyRule(scheme='', host='', port=None, proxy='http://***@proxy:3128'),))"
    assert rules.select("http", "example.com", 80) == f"http://user:{secret}@proxy:3128"  # what the pool uses

    for data, message in (
        (
            f"HTTP/1.1 200 OK\r\nSet-Cookie: sid={secret}\x00\r\n\r\n",
            "malformed HTTP/1.1 header line: the value of 'set-cookie' holds CR or NUL",
        ),
        (f"HTTP/1.1 200 OK\r\n{secret}\r\n\r\n", "malformed HTTP/1.1 header line: no colon"),
    ):
        reader = ResponseReader()
        reader.receive(data.encode())
        with pytest.raises(H1Error, match="^" + re.escape(message) + "$"):
            reader.read_head()
