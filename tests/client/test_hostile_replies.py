"""Values a server may send that Python cannot use as they are: each is a typed error or a clamped value.

A malformed server reply never crashes with an unrelated exception (``OverflowError``,
``UnicodeEncodeError``): numbers that go into clock arithmetic are clamped first, and strings that could
not be sent back (a lone UTF-16 surrogate, RFC 8259 §8.2) make the reply a ``ProtocolError`` when it is
decoded. After each, the client stays usable.
"""

from __future__ import annotations

from typing import Final

import httpx
import pytest

import mcpfsm
from tests.support.fakeserver import FakeServer, response, result

TOOL: Final = {"name": "t", "inputSchema": {"type": "object"}}


async def test_a_huge_ttl_is_clamped_and_the_listing_is_cached(fake: FakeServer) -> None:
    fake.queue("tools/list", result({"tools": [TOOL], "ttlMs": 10**400}))
    async with fake.client() as client:
        first = (await client.tools()).names
        second = (await client.tools()).names
    assert (first, second, fake.methods()) == (["t"], ["t"], ["server/discover", "tools/list"])


def _raw(body: str) -> httpx.Response:
    # The body exactly as given: json= would escape what the test wants on the wire.
    return httpx.Response(200, content=body.encode(), headers={"Content-Type": "application/json"})


LONE: Final = r"^peer sent a string holding a lone UTF-16 surrogate, which is no Unicode text \(RFC 8259 §8\.2\)$"


async def test_a_cursor_with_a_lone_surrogate_is_a_protocol_error_and_nothing_is_sent_back(fake: FakeServer) -> None:
    fake.queue("tools/list", response(_raw('{"jsonrpc":"2.0","id":1,"result":{"tools":[],"nextCursor":"\\ud800"}}')))
    fake.tools = [TOOL]
    async with fake.client() as client:
        with pytest.raises(mcpfsm.ProtocolError, match=LONE):
            await client.tools()
        names = (await client.tools()).names
    assert (names, fake.methods()) == (["t"], ["server/discover", "tools/list", "tools/list"])
    assert [seen.params.get("cursor") for seen in fake.requests[1:]] == [None, None]


async def test_a_request_state_with_a_lone_surrogate_is_a_protocol_error_and_never_echoed(fake: FakeServer) -> None:
    fake.queue(
        "tools/call",
        response(_raw('{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"\\ud800"}}')),
    )
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        with pytest.raises(mcpfsm.ProtocolError, match=LONE):
            await client.call_tool("t", {})
        assert (await client.call_tool("t", {})).text == "ok"
    assert fake.methods() == ["server/discover", "tools/call", "tools/call"]
    assert all("requestState" not in seen.params for seen in fake.requests)
    assert [e.state for e in events if e.state in mcpfsm.TERMINAL] == ["failed", "succeeded"]


async def test_a_tool_name_with_a_lone_surrogate_is_a_protocol_error(fake: FakeServer) -> None:
    fake.queue(
        "tools/list",
        response(_raw('{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"\\ud800","inputSchema":{}}]}}')),
    )
    async with fake.client() as client:
        with pytest.raises(mcpfsm.ProtocolError, match=LONE):
            await client.tools()
