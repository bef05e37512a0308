"""Values a server may send that Python cannot use as they are: each is a typed error or a clamped value.

A malformed server reply never crashes with an unrelated exception (``OverflowError``,
``UnicodeEncodeError``): numbers that go into clock arithmetic are clamped first, and strings that could
not be sent back (a lone UTF-16 surrogate, RFC 8259 §8.2) make the reply a ``ProtocolError`` when it is
decoded. After each, the client stays usable.
"""

from __future__ import annotations

from typing import Final

import httpx

from tests.fakeserver import MODERN, FakeServer, result

TOOL: Final = {"name": "t", "inputSchema": {"type": "object"}}


async def test_a_huge_ttl_is_clamped_and_the_listing_is_cached(fake: FakeServer) -> None:
    fake.queue("tools/list", result({"tools": [TOOL], "ttlMs": 10**400}))
    async with fake.client(protocol=MODERN) as client:
        first = (await client.tools()).names
        second = (await client.tools()).names
    assert (first, second, fake.methods()) == (["t"], ["t"], ["tools/list"])


def _raw(body: str) -> httpx.Response:
    # The body exactly as given: json= would escape what the test wants on the wire.
    return httpx.Response(200, content=body.encode(), headers={"Content-Type": "application/json"})
