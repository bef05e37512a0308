"""Cookies, as an httpx client keeps them (RFC 6265), against raw servers on 127.0.0.1 (tests/support/rawserver.py).

A sticky-session load balancer pins a client to a replica with a cookie; the replica holds the legacy
``Mcp-Session-Id``. Each test runs on mcpfsm's own pool and with httpx's ``AsyncHTTPTransport`` as
``http_transport=`` (a transport, unlike an ``AsyncClient``, keeps no cookies: the jar is mcpfsm's on both).
"""

from __future__ import annotations

from typing import Final

import pytest

from mcpfsm._core.h1 import ResponseHead, ResponseReader
from tests.support.layers import LAYERS, connect
from tests.support.rawserver import HOST, JSON_HEADERS, Server, no_stream, ok, rpc, serving

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
INITIALIZE: Final = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "raw", "version": "1"}}
DISCOVER: Final = {"supportedVersions": [MODERN]}


def url_of(server: Server, host: str = HOST) -> str:
    return f"http://{host}:{server.port}/mcp"


def cookies_sent(server: Server) -> list[tuple[str, str | None]]:
    """(request line, Cookie header) of every request the server saw."""
    return [(seen.request_line, seen.headers.get("cookie")) for seen in server.seen]


def setting(*cookies: str) -> list[tuple[str, str]]:
    return [*JSON_HEADERS, *(("Set-Cookie", cookie) for cookie in cookies)]


POST: Final = "POST /mcp HTTP/1.1"


@pytest.mark.parametrize("layer", LAYERS)
async def test_a_sticky_session_cookie_goes_with_every_later_request_of_the_legacy_session(layer: str) -> None:
    server = Server()
    server.queue(
        rpc(INITIALIZE, headers=[*setting("route=r1; Path=/; HttpOnly"), ("Mcp-Session-Id", "s1")]),
        ok(b"", status=202),  # notifications/initialized
        no_stream(),  # the standalone GET
        rpc({"tools": []}, headers=setting("route=r2; Path=/")),  # the balancer moved the client
        rpc({"tools": []}),
        ok(b"", status=200, headers=[]),  # the session's DELETE
    )
    async with serving(server), connect(url_of(server), layer, protocol=LEGACY) as client:
        await client.tools(fresh=True)
        await client.tools(fresh=True)

    assert cookies_sent(server) == [
        (POST, None),
        (POST, "route=r1"),
        ("GET /mcp HTTP/1.1", "route=r1"),
        (POST, "route=r1"),
        (POST, "route=r2"),
        ("DELETE /mcp HTTP/1.1", "route=r2"),
    ]


@pytest.mark.parametrize("layer", LAYERS)
async def test_the_jar_applies_path_secure_domain_and_expiry(layer: str) -> None:
    server = Server()
    server.queue(
        rpc(
            DISCOVER,
            headers=setting(
                "a=1",
                "b=2; Path=/mcp",
                "c=3; Path=/other",
                "d=4; Secure",
                "e=5; Domain=evil.example",
                "f=6; Max-Age=0",
                "g=7; Expires=Wed, 21 Oct 2015 07:28:00 GMT",
                "h=8; Expires=Wed, 21 Oct 2099 07:28:00 GMT",
                "big=" + "x" * 5000,
            ),
        ),
        rpc({"tools": []}, headers=setting("a=gone; Max-Age=0")),
        rpc({"tools": []}),
    )
    async with serving(server), connect(url_of(server), layer, protocol="auto", cache=False) as client:
        await client.tools()
        await client.tools()

    assert cookies_sent(server) == [(POST, None), (POST, "b=2; a=1; h=8"), (POST, "b=2; h=8")]


@pytest.mark.parametrize("layer", LAYERS)
async def test_cookies_never_go_to_another_host_and_the_callers_cookie_comes_first(layer: str) -> None:
    home, other = Server(), Server()
    async with serving(home), serving(other):
        elsewhere = url_of(other, "localhost")
        home.queue(
            rpc(DISCOVER, headers=setting("route=r1")),
            ok(b"", status=307, headers=[("Location", elsewhere)]),
            rpc({"tools": []}),
        )
        other.queue(rpc({"tools": []}, headers=setting("there=1")))
        options = {"headers": {"Cookie": "tenant=acme"}, "cache": False}
        async with connect(url_of(home), layer, protocol="auto", **options) as client:
            await client.tools()
            await client.tools()

    assert cookies_sent(home) == [
        (POST, "tenant=acme"),
        (POST, "tenant=acme; route=r1"),
        (POST, "tenant=acme; route=r1"),
    ]
    assert cookies_sent(other) == [(POST, None)]


async def test_two_clients_never_share_cookies() -> None:
    server = Server()
    server.queue(rpc(DISCOVER, headers=setting("route=r1")), rpc(DISCOVER), rpc({"tools": []}), rpc({"tools": []}))
    async with serving(server), connect(url_of(server), "pool", protocol="auto") as first, connect(
        url_of(server), "pool", protocol="auto"
    ) as second:
        await first.tools()
        await second.tools()

    assert cookies_sent(server) == [(POST, None), (POST, None), (POST, "route=r1"), (POST, None)]


def test_each_set_cookie_is_kept_apart_even_with_commas_and_folding() -> None:
    for data in (
        b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT\r\nSet-Cookie: b=2\r\n"
        b"Content-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\nSet-Cookie: a=1;\n Expires=Wed, 21 Oct 2099 07:28:00 GMT\nSet-Cookie: b=2\n"
        b"Content-Length: 0\n\n",
    ):
        reader = ResponseReader()
        reader.receive(data)
        assert reader.read_head() == ResponseHead(
            status=200,
            reason="OK",
            headers={"set-cookie": "a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT, b=2", "content-length": "0"},
            keep_alive=True,
            set_cookie=("a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT", "b=2"),
        )


def test_the_jar_is_bounded_against_a_server_that_keeps_setting_cookies() -> None:
    from mcpfsm._transports.cookies import MAX_COOKIE_BYTES, MAX_COOKIES, MAX_PER_RESPONSE, Cookies

    url = "http://127.0.0.1:1/mcp"
    jar = Cookies()
    # One response: a value over the size bound and one no HTTP field can carry are dropped, and so is
    # everything past the 50th field.
    jar.keep(url, "POST", ["big=" + "x" * MAX_COOKIE_BYTES, "bad=a\x01b", "ok=1"])
    assert jar.header(url, "POST") == "ok=1"
    jar.keep(url, "POST", [f"n{i}=v" for i in range(MAX_PER_RESPONSE + 10)])
    assert len(jar) == 1 + MAX_PER_RESPONSE

    # Many responses: the jar fills up to its bound and then takes no new name ...
    for start in range(0, MAX_COOKIES + 500, MAX_PER_RESPONSE):
        jar.keep(url, "POST", [f"m{i}=v" for i in range(start, start + MAX_PER_RESPONSE)])
    assert len(jar) == MAX_COOKIES
    # ... while a cookie it holds is still replaced, and one that expires is still removed.
    jar.keep(url, "POST", ["ok=2", "n0=gone; Max-Age=0", "fresh=1"])
    header = jar.header(url, "POST")
    assert header is not None
    sent = dict(pair.split("=", 1) for pair in header.split("; "))
    assert (sent["ok"], "n0" in sent, "fresh" in sent, len(jar)) == ("2", False, True, MAX_COOKIES)
