"""Credentials in the MCP URL: one rule (``mcpfsm._transports.http.carries_credentials``) for the transport,
``Client.http(auth=...)`` and the CLI. A user or a password is credentials (sent as ``Authorization: Basic``);
an empty userinfo (``http://@host/``) carries none: nothing is sent for it, so it neither conflicts with
``auth=`` nor stands in for it. (The CLI's side, a subprocess against a real server, is in test_cli_auth.py.)
"""

from __future__ import annotations

import base64
from typing import Final

import pytest

import mcpfsm
from mcpfsm._transports.http import carries_credentials
from tests.support.fakeserver import FakeServer

CONFLICT: Final = r"^give either auth= or an Authorization header \(or credentials in the URL\), not both$"

URLS: Final = [
    pytest.param("http://fake.test/mcp", None, id="no-userinfo"),
    pytest.param("http://@fake.test/mcp", None, id="empty-userinfo"),
    pytest.param("http://:@fake.test/mcp", None, id="empty-user-and-password"),
    pytest.param("http://user@fake.test/mcp", "user:", id="user"),
    pytest.param("http://:secret@fake.test/mcp", ":secret", id="password"),
    pytest.param("http://user:secret@fake.test/mcp", "user:secret", id="user-and-password"),
    pytest.param("http://us%40er:p%3Ass@fake.test/mcp", "us@er:p:ss", id="percent-decoded"),
]


def _authorization(fake: FakeServer) -> list[list[str]]:
    return [[v for n, v in seen.raw_headers if n.lower() == "authorization"] for seen in fake.requests]


@pytest.mark.parametrize(("url", "basic"), URLS)
def test_the_rule(url: str, basic: str | None) -> None:
    assert carries_credentials(url) is (basic is not None)


@pytest.mark.parametrize(
    "url", ["http://user:secret@[::1/mcp", "http://user:secret@host:port/mcp"], ids=["open-bracket", "port-word"]
)
def test_a_url_httpx_cannot_parse_carries_none(url: str) -> None:
    assert carries_credentials(url) is False


@pytest.mark.parametrize(("url", "basic"), URLS)
async def test_the_transport_sends_basic_exactly_when_the_rule_says_so(url: str, basic: str | None) -> None:
    fake = FakeServer()
    async with mcpfsm.Client.http(url, http_transport=fake.transport()) as client:
        await client.tools()
    sent = [] if basic is None else ["Basic " + base64.b64encode(basic.encode()).decode()]
    assert _authorization(fake) == [sent] * len(fake.requests) and len(fake.requests) == 2


@pytest.mark.parametrize(("url", "basic"), URLS)
async def test_client_http_refuses_auth_only_with_credentials_in_the_url(url: str, basic: str | None) -> None:
    fake = FakeServer()
    if basic is not None:
        with pytest.raises(ValueError, match=CONFLICT):
            mcpfsm.Client.http(url, auth="t0ken", http_transport=fake.transport())
        assert fake.requests == []
        return
    async with mcpfsm.Client.http(url, auth="t0ken", http_transport=fake.transport()) as client:
        await client.tools()
    assert _authorization(fake) == [["Bearer t0ken"]] * len(fake.requests) and len(fake.requests) == 2
