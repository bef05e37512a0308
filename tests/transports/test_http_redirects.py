"""Redirects and credentials, against raw servers on 127.0.0.1 (tests/support/rawserver.py), on both connection layers.

What ``httpx.AsyncClient(follow_redirects=True)`` does, mcpfsm does with its own pool and with a caller's
``http_transport=`` alike (RFC 9110 §15.4): 307 and 308 are followed with method, body and headers, at
most 5 hops, and a 308 moves the endpoint; 301/302/303 are not followed for a POST; credentials in the
URL become Basic auth; nothing that authenticates crosses to another origin.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Final

import pytest

import mcpfsm
from tests.support.layers import LAYERS, connect
from tests.support.rawserver import HOST, Seen, Server, no_stream, ok, rpc, serving

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
INITIALIZE: Final = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "raw", "version": "1"}}


def redirect(status: int, location: str) -> Any:
    return ok(b"", status=status, headers=[("Location", location)])


def request_of(seen: Seen) -> tuple[str, dict[str, str], Any]:
    """The request line, the headers but Host, and the JSON-RPC method of one request a server saw."""
    headers = {name: value for name, value in seen.headers.items() if name != "host"}
    return seen.request_line, headers, json.loads(seen.body)["method"] if seen.body else None


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def modern_headers(method: str, length: int, **extra: str) -> dict[str, str]:
    return {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "user-agent": "mcpfsm/0.1.0",
        "accept-encoding": "gzip, deflate",
        **extra,
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
        "content-length": str(length),
    }


# --- 307 and 308 ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layer", LAYERS)
async def test_a_307_for_a_trailing_slash_is_followed_with_method_body_and_headers_every_time(layer: str) -> None:
    # The official SDK and fastmcp servers answer POST /mcp with a 307 to /mcp/.
    async with serving(Server()) as server:
        server.queue(redirect(307, "/mcp/"), rpc({"tools": []}), redirect(307, "/mcp/"), rpc({"tools": []}))
        async with connect(f"http://{HOST}:{server.port}/mcp", layer, headers={"X-Tenant": "acme"}) as client:
            assert len(await client.tools()) == 0
            assert len(await client.tools()) == 0
            assert client.transport.url == f"http://{HOST}:{server.port}/mcp"  # type: ignore[attr-defined]

    first, followed = server.seen[0], server.seen[1]
    headers = modern_headers("tools/list", len(first.body), **{"x-tenant": "acme"})
    assert [request_of(seen) for seen in server.seen] == [
        ("POST /mcp HTTP/1.1", headers, "tools/list"),
        ("POST /mcp/ HTTP/1.1", headers, "tools/list"),
        ("POST /mcp HTTP/1.1", {**headers, "content-length": str(len(server.seen[2].body))}, "tools/list"),
        ("POST /mcp/ HTTP/1.1", {**headers, "content-length": str(len(server.seen[2].body))}, "tools/list"),
    ]
    assert followed.body == first.body


@pytest.mark.parametrize("layer", LAYERS)
async def test_a_308_moves_the_endpoint_for_the_rest_of_the_clients_life(layer: str) -> None:
    async with serving(Server()) as server:
        server.queue(redirect(308, "/v2/mcp"), rpc({"tools": []}), rpc({"tools": []}), rpc({"tools": []}))
        async with connect(f"http://{HOST}:{server.port}/mcp", layer) as client:
            for _ in range(3):
                await client.tools()
            assert client.transport.url == f"http://{HOST}:{server.port}/v2/mcp"  # type: ignore[attr-defined]

    assert [seen.request_line for seen in server.seen] == [
        "POST /mcp HTTP/1.1",
        "POST /v2/mcp HTTP/1.1",
        "POST /v2/mcp HTTP/1.1",
        "POST /v2/mcp HTTP/1.1",
    ]


@pytest.mark.parametrize("layer", LAYERS)
async def test_a_308_after_a_307_moves_only_the_temporary_target(layer: str) -> None:
    # A 307 to /tmp and from there a 308 to /final: /mcp did not move, so the next call starts there again.
    async with serving(Server()) as server:
        server.queue(redirect(307, "/tmp"), redirect(308, "/final"), rpc(), redirect(307, "/tmp"), rpc())
        async with connect(f"http://{HOST}:{server.port}/mcp", layer) as client:
            await client.request("ping")
            # /tmp moved to /final for good, but the endpoint is /mcp, which only redirected for now.
            await client.request("ping")

    assert [seen.request_line.split()[1] for seen in server.seen] == ["/mcp", "/tmp", "/final", "/mcp", "/tmp"]


@pytest.mark.parametrize("layer", LAYERS)
async def test_at_most_five_redirects_are_followed(layer: str) -> None:
    async with serving(Server()) as server:
        server.queue(*(redirect(307, f"/r{n}") for n in range(1, 6)), rpc())
        server.queue(*(redirect(307, f"/s{n}") for n in range(1, 7)))
        async with connect(f"http://{HOST}:{server.port}/mcp", layer) as client:
            await client.request("ping")
            with pytest.raises(
                mcpfsm.TransportError, match=rf"^more than 5 redirects \(the last to http://{HOST}:{server.port}/s6\)$"
            ) as caught:
                await client.request("ping")
            assert caught.value.status == 307

    assert len(server.seen) == 6 + 6


@pytest.mark.parametrize("status", [301, 302, 303])
@pytest.mark.parametrize("layer", LAYERS)
async def test_301_302_303_are_not_followed_for_a_post_and_the_error_names_the_location(
    layer: str, status: int
) -> None:
    async with serving(Server()) as server:
        server.queue(redirect(status, "http://user:secret@elsewhere.test/mcp#frag"), rpc({"tools": []}))
        async with connect(f"http://{HOST}:{server.port}/mcp", layer) as client:
            with pytest.raises(mcpfsm.TransportError) as caught:
                await client.tools()
            # The client stays usable.
            assert len(await client.tools()) == 0

    assert str(caught.value) == (
        f"HTTP {status}: the server redirects to http://elsewhere.test/mcp, which would turn this POST into a GET;"
        " mcpfsm follows only 307 and 308 for a POST (point the client at that URL)"
    )
    assert caught.value.status == status
    assert len(server.seen) == 2


# --- credentials ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layer", LAYERS)
async def test_credentials_in_the_url_become_basic_auth_and_appear_nowhere_else(
    layer: str, records: list[tuple[str, str]]
) -> None:
    async with serving(Server()) as server:
        server.queue(redirect(307, "/mcp/"), rpc(), ok(b"nope", status=500, headers=[("Content-Type", "text/plain")]))
        url = f"http://alice:s%3Acr%40t@{HOST}:{server.port}/mcp"
        async with connect(url, layer) as client:
            await client.request("ping")
            with pytest.raises(mcpfsm.TransportError) as caught:
                await client.request("ping")
            shown = [client.transport.url, repr(client.transport), str(caught.value)]  # type: ignore[attr-defined]

    assert [seen.headers["authorization"] for seen in server.seen] == [basic("alice", "s:cr@t")] * 3
    assert [seen.request_line for seen in server.seen] == [
        "POST /mcp HTTP/1.1",
        "POST /mcp/ HTTP/1.1",
        "POST /mcp HTTP/1.1",
    ]
    assert {seen.headers["host"] for seen in server.seen} == {f"{HOST}:{server.port}"}
    texts = shown + [message for _, message in records]
    assert [text for text in texts if "alice" in text or "s%3Acr" in text or "s:cr@t" in text] == []


@pytest.mark.parametrize("layer", LAYERS)
async def test_nothing_that_authenticates_crosses_to_another_origin(layer: str) -> None:
    # Origin A redirects (307) to origin B: B gets the method, body and other headers, but neither the
    # Authorization from the URL, nor the caller's Cookie, nor the legacy Mcp-Session-Id.
    async with serving(Server()) as a, serving(Server()) as b:
        a.queue(
            rpc(INITIALIZE, headers=[("Content-Type", "application/json"), ("Mcp-Session-Id", "s-1")]),
            ok(b"", status=202),
            no_stream(),
            redirect(307, f"http://{HOST}:{b.port}/mcp"),
            ok(b"", status=200),  # the DELETE on close
        )
        b.queue(rpc({"content": []}))
        url = f"http://alice:pw@{HOST}:{a.port}/mcp"
        headers = {"Cookie": "c=1", "X-Tenant": "acme"}
        async with connect(url, layer, protocol=LEGACY, headers=headers) as client:
            await client.call_tool("echo", {"text": "hi"})

    sent_to_a = a.seen[3].headers
    sent_to_b = b.seen[0].headers
    assert (sent_to_a["authorization"], sent_to_a["cookie"], sent_to_a["mcp-session-id"]) == (
        basic("alice", "pw"),
        "c=1",
        "s-1",
    )
    assert {name: sent_to_b.get(name) for name in ("authorization", "cookie", "mcp-session-id", "x-tenant")} == {
        "authorization": None,
        "cookie": None,
        "mcp-session-id": None,
        "x-tenant": "acme",
    }
    assert (b.seen[0].body, sent_to_b["mcp-protocol-version"]) == (a.seen[3].body, LEGACY)


@pytest.mark.parametrize("layer", LAYERS)
async def test_a_redirect_within_the_origin_keeps_credentials_cookie_and_session(layer: str) -> None:
    async with serving(Server()) as server:
        server.queue(
            rpc(INITIALIZE, headers=[("Content-Type", "application/json"), ("Mcp-Session-Id", "s-1")]),
            ok(b"", status=202),
            no_stream(),
            redirect(307, "/mcp/"),
            rpc({"content": []}),
            ok(b""),  # the DELETE on close
        )
        url = f"http://alice:pw@{HOST}:{server.port}/mcp"
        async with connect(url, layer, protocol=LEGACY, headers={"Cookie": "c=1"}) as client:
            await client.call_tool("echo", {"text": "hi"})

    sent, followed = server.seen[3], server.seen[4]
    assert followed.request_line == "POST /mcp/ HTTP/1.1"
    assert {name: value for name, value in followed.headers.items() if name != "content-length"} == {
        name: value for name, value in sent.headers.items() if name != "content-length"
    }
    assert (followed.headers["authorization"], followed.headers["cookie"], followed.headers["mcp-session-id"]) == (
        basic("alice", "pw"),
        "c=1",
        "s-1",
    )


@pytest.mark.parametrize("layer", LAYERS)
async def test_a_308_to_another_origin_never_sends_the_credentials_there_later(layer: str) -> None:
    async with serving(Server()) as a, serving(Server()) as b:
        a.queue(redirect(308, f"http://{HOST}:{b.port}/mcp"))
        b.queue(rpc(), rpc())
        headers = {"Authorization": "Bearer t0k3n"}
        async with connect(f"http://{HOST}:{a.port}/mcp", layer, headers=headers) as client:
            await client.request("ping")
            await client.request("ping")

    assert a.seen[0].headers["authorization"] == "Bearer t0k3n"
    assert [seen.headers.get("authorization") for seen in b.seen] == [None, None]


@pytest.mark.parametrize("layer", LAYERS)
async def test_credentials_in_a_location_are_never_used(layer: str) -> None:
    async with serving(Server()) as server:
        server.queue(redirect(307, f"http://mallory:pw@{HOST}:{server.port}/next"), rpc())
        async with connect(f"http://{HOST}:{server.port}/mcp", layer) as client:
            await client.request("ping")

    assert [seen.headers.get("authorization") for seen in server.seen] == [None, None]
    assert server.seen[1].request_line == "POST /next HTTP/1.1"


async def test_a_redirect_to_something_else_than_http_is_an_error() -> None:
    async with serving(Server()) as server:
        server.queue(redirect(307, "ftp://files.test/mcp"))
        async with connect(f"http://{HOST}:{server.port}/mcp", "pool") as client:
            message = r"^the server redirects to ftp://files\.test/mcp, which is no http\(s\) URL$"
            with pytest.raises(mcpfsm.TransportError, match=message):
                await client.request("ping")

