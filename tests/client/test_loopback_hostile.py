"""The loopback authorizer against hostile local callers, over real sockets (RFC 6749 §10.12, RFC 8252 §8.9).

Anything on the machine can connect to the loopback port while a login waits: a request that is not this
login's redirect (no ``state``, another ``state``, a forged ``error``) gets a 400 page and the wait goes on,
and idle connections neither stall the browser's redirect nor pile up without bound.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

import httpx
import trio

import mcpfsm
from mcpfsm._client.loopback import _MAX_READING, _READ_SECONDS
from tests.support.ports import reserved_port

STATE: Final = "s-3f9a0c17e2b4d58a6c91"
AUTHORIZE: Final = f"https://as.example/authorize?response_type=code&state={STATE}&code_challenge=x"
WRONG: Final = "400 <!doctype html><title>mcpfsm</title><p>Not the redirect of the login mcpfsm is waiting for.</p>\n"
RECEIVED: Final = (
    "200 <!doctype html><title>mcpfsm</title><p>mcpfsm received the authorization. You can close this window.</p>\n"
)


class Waiting:
    """A login waiting on the loopback port: its redirect URI, and its result once it returned."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.redirect_uri = f"http://127.0.0.1:{port}/callback"
        self.result: str | None = None
        self.done = trio.Event()


@asynccontextmanager
async def waiting_login(authorize_url: str = AUTHORIZE) -> AsyncIterator[Waiting]:
    """Run the authorizer in the background; the block starts once it listens (its announcement)."""
    announced = trio.Event()
    with reserved_port() as port:
        waiting = Waiting(port)
        loopback = mcpfsm.LoopbackAuthorizer(
            waiting.redirect_uri, timeout=600, open_browser=False, announce=lambda _line: announced.set()
        )

        async def run() -> None:
            waiting.result = await loopback(authorize_url)
            waiting.done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await announced.wait()
            yield waiting
            nursery.cancel_scope.cancel()


async def visit(user_agent: httpx.AsyncClient, url: str) -> str:
    page = await user_agent.get(url)
    return f"{page.status_code} {page.text}"


def forged(n: int, redirect_uri: str) -> str:
    """The ``n``-th forged callback: never this login's state, with a code or an error."""
    queries = [
        f"code=forged-{n}",
        f"code=forged-{n}&state=other-{n}",
        "error=access_denied&error_description=forged",
        f"error=server_error&state=other-{n}",
        f"code=forged-{n}&state=&state={STATE}",  # the right state, but not once
        f"code=forged-{n}&state={STATE[:-1]}",
        f"code=forged-{n}&state={STATE}x",
    ]
    return f"{redirect_uri}?{queries[n % len(queries)]}"


async def test_a_hundred_forged_callbacks_get_400_and_the_login_waits_for_its_own() -> None:
    async with waiting_login() as login, httpx.AsyncClient() as user_agent:
        pages = [await visit(user_agent, forged(n, login.redirect_uri)) for n in range(100)]
        assert not login.done.is_set()
        genuine = f"{login.redirect_uri}?code=the-code&state={STATE}&iss=https%3A%2F%2Fas.example"
        assert await visit(user_agent, genuine) == RECEIVED
        await login.done.wait()
    assert pages == [WRONG] * 100
    assert login.result == genuine


async def test_the_authorization_servers_refusal_with_the_state_ends_the_login() -> None:
    async with waiting_login() as login, httpx.AsyncClient() as user_agent:
        assert await visit(user_agent, f"{login.redirect_uri}?error=access_denied") == WRONG
        refusal = f"{login.redirect_uri}?error=access_denied&state={STATE}"
        page = await visit(user_agent, refusal)
        await login.done.wait()
    assert page == "200 <!doctype html><title>mcpfsm</title><p>The authorization server refused: access_denied.</p>\n"
    assert login.result == refusal


async def test_without_a_state_in_the_authorization_url_any_callback_ends_the_login() -> None:
    async with waiting_login("https://as.example/authorize?x=1") as login, httpx.AsyncClient() as user_agent:
        callback = f"{login.redirect_uri}?code=c"
        page = await visit(user_agent, callback)
        await login.done.wait()
    assert (page, login.result) == (RECEIVED, callback)


async def test_idle_connections_neither_delay_the_redirect_nor_pile_up() -> None:
    idle_count = _MAX_READING + 4
    async with waiting_login() as login:
        opened = trio.current_time()
        idle = [await trio.open_tcp_stream("127.0.0.1", login.port) for _ in range(idle_count)]
        for n, stream in enumerate(idle):
            if n % 2:
                await stream.send_all(b"GET /callback?code=slow HTTP/1.1\r\n")  # a head never finished
        # Every connection is read at once, each within its own budget: all of this happens before any
        # idle connection's budget could run out.
        with trio.fail_after(_READ_SECONDS - (trio.current_time() - opened)):
            # Past the cap, the oldest connections still sending their head are dropped.
            assert [await stream.receive_some(1) for stream in idle[:4]] == [b""] * 4
            async with httpx.AsyncClient() as user_agent:
                genuine = f"{login.redirect_uri}?code=the-code&state={STATE}"
                assert await visit(user_agent, genuine) == RECEIVED
            await login.done.wait()
        assert login.result == genuine
        # The listener closed the others when the login ended.
        assert [await stream.receive_some(1) for stream in idle[4:]] == [b""] * (idle_count - 4)
        for stream in idle:
            await stream.aclose()
