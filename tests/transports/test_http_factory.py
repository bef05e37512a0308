"""``Client.http`` refusing an argument leaves nothing open: the authorization side's HTTP client is made lazily.

The authorization layer's own ``httpx.AsyncClient`` (``mcpfsm._transports.oauth_http``) is made with its first
request, so a factory call that fails on a later argument (a bad header, an unknown protocol, a redirect URI
the default authorizer cannot listen on) has made none; the one a flow made is closed with the client.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import mcpfsm
from mcpfsm._transports.oauth_http import OAuthHttp

URL = "http://127.0.0.1:9/mcp"


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[httpx.AsyncClient]:
    """Every httpx.AsyncClient constructed during the test."""
    clients: list[httpx.AsyncClient] = []
    original = httpx.AsyncClient.__init__

    def recording(self: httpx.AsyncClient, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        clients.append(self)

    monkeypatch.setattr(httpx.AsyncClient, "__init__", recording)
    return clients


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        pytest.param(
            {"auth": mcpfsm.OAuth(), "headers": {"X-Tenant": "acme\n"}},
            ValueError,
            r"^header X-Tenant has a value that cannot be sent as an HTTP field \(visible ASCII with inner spaces or"
            r" tabs only; the value is not shown\)$",
            id="oauth-bad-header",
        ),
        pytest.param(
            {"auth": mcpfsm.ClientCredentials("c", client_secret="s"), "protocol": "1999-01-01"},
            ValueError,
            r"^protocol must be 'auto' or one of \['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'\], got"
            r" '1999-01-01'$",
            id="client-credentials-bad-protocol",
        ),
        pytest.param(
            {"auth": mcpfsm.OAuth(redirect_uri="https://app.example/callback")},
            ValueError,
            r"^the default authorize listens on a loopback http redirect_uri with a port, got"
            r" 'https://app.example/callback'$",
            id="oauth-redirect-uri-not-loopback",
        ),
        pytest.param(
            {"auth": mcpfsm.JwtBearer("c", "a.b.c"), "max_response_bytes": 0},
            ValueError,
            r"^max_response_bytes must be at least 1, got 0$",
            id="jwt-bearer-bad-limit",
        ),
    ],
)
def test_a_refused_argument_leaves_no_http_client_behind(
    made: list[httpx.AsyncClient], options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        mcpfsm.Client.http(URL, **options)
    assert made == []


async def test_the_client_made_by_the_first_request_is_closed_with_it_and_not_made_again(
    made: list[httpx.AsyncClient],
) -> None:
    http = OAuthHttp(transport=httpx.MockTransport(lambda request: httpx.Response(200, json={"ok": True})))
    assert (http.opened, made) == (False, [])

    answer = await http.fetch("GET", "https://as.example/.well-known/oauth-authorization-server", ())
    assert (answer.status, answer.body, http.opened, len(made)) == (200, b'{"ok":true}', True, 1)

    await http.aclose()
    await http.aclose()
    assert (http.opened, made[0].is_closed) == (False, True)
    with pytest.raises(mcpfsm.TransportError, match=r"^the authorization side's HTTP client is closed$"):
        await http.fetch("GET", "https://as.example/x", ())
    assert len(made) == 1


async def test_a_client_that_never_authorized_closes_without_making_one(made: list[httpx.AsyncClient]) -> None:
    client = mcpfsm.Client.http(URL, auth=mcpfsm.ClientCredentials("c", client_secret="s"))
    await client.aclose()
    assert made == []
