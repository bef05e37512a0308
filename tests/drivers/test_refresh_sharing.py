"""A refresh on a shared store, against scripted token endpoint answers: what it reads, sends, keeps and deletes.

The flow enters at ``refreshing`` (``Entry.expiring``) with tokens held and bound; the store is a
``MemoryStore`` (``lock`` and ``compare_and_delete``) or a plain ``TokenStore`` of get/set/delete only. A
"peer" is the test writing to the store, before the flow or while its token request is in flight.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final
from urllib.parse import parse_qsl

import pytest
from loguru import logger

import mcpfsm
from mcpfsm._core import oauth
from mcpfsm._core.credentials import TokenStore, credential_holder, tokens_key
from mcpfsm._drivers.audit import AuditBus
from mcpfsm._drivers.authorization import AuthorizationFlow
from mcpfsm._drivers.authorization_binding import Binding, Bound, Entry, Identity
from mcpfsm._drivers.token_sharing import Exclusion, delete_if_unchanged, refresh_lock

MCP: Final = "https://mcp.example/mcp"
AS: Final = "https://as.example"
TOKEN_URL: Final = f"{AS}/token"
KEY: Final = tokens_key(AS, MCP, credential_holder(mcpfsm.OAuth()))
NOW: Final = 1_800_000_000.0
METADATA: Final = oauth.read_authorization_server_metadata(
    200,
    json.dumps(
        {
            "issuer": AS,
            "authorization_endpoint": f"{AS}/authorize",
            "token_endpoint": TOKEN_URL,
            "code_challenge_methods_supported": ["S256"],
        }
    ).encode(),
    expected_issuer=AS,
)


def tokens(name: str, *, expires_in: float = 3600.0, issued: float = NOW) -> oauth.TokenSet:
    return oauth.TokenSet(
        access_token=f"at-{name}",
        refresh_token=f"rt-{name}",
        issued_at=issued,
        expires_at=issued + expires_in,
        issuer=AS,
        resource=MCP,
    )


DUE: Final = tokens("held", issued=NOW - 3590)  # 10 s left: due (60 s ahead), still valid


class PlainStore:
    """A TokenStore of the caller's own: get, set and delete only."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, Any]] = {}

    async def get(self, key: str) -> dict[str, Any] | None:
        value = self.values.get(key)
        return None if value is None else json.loads(json.dumps(value))

    async def set(self, key: str, value: Mapping[str, Any]) -> None:
        self.values[key] = json.loads(json.dumps(dict(value)))

    async def delete(self, key: str) -> None:
        self.values.pop(key, None)


class TokenEndpoint:
    """The driver's port: one scripted answer for the token endpoint, and what to do while it is in flight."""

    def __init__(self, status: int, answer: dict[str, Any], during: Callable[[], Awaitable[None]] | None = None):
        self.status = status
        self.answer = answer
        self.during = during
        self.forms: list[dict[str, str]] = []
        self.events: list[Any] = []
        self.audit = AuditBus(on_event=self.events.append)

    async def fetch(
        self, method: str, url: str, headers: Sequence[tuple[str, str]], body: bytes | None = None
    ) -> oauth.Answer:
        assert (method, url) == ("POST", TOKEN_URL)
        self.forms.append(dict(parse_qsl((body or b"").decode())))
        if self.during is not None:
            await self.during()
        return oauth.Answer(self.status, json.dumps(self.answer).encode())

    async def authorize(self, url: str) -> str:
        raise AssertionError("no login expected")

    def now(self) -> float:
        return NOW


async def bound(store: TokenStore, held: oauth.TokenSet = DUE) -> Binding:
    binding = Binding(mcpfsm.OAuth(), mcp_url=MCP, pinned_modern=True, store=store)
    identity = Identity(issuer=AS, client_id="client-1", method="none")
    await binding.keep(held, Bound(metadata=METADATA, resource=MCP, identity=identity))
    return binding


def refresh_form(refresh_token: str) -> dict[str, str]:
    return {"grant_type": "refresh_token", "refresh_token": refresh_token, "resource": MCP, "client_id": "client-1"}


def triggers(port: TokenEndpoint) -> list[tuple[str, str | None]]:
    return [(event.state, event.trigger) for event in port.events]


STORES: Final = [pytest.param(mcpfsm.MemoryStore, id="MemoryStore"), pytest.param(PlainStore, id="TokenStore")]


@pytest.mark.parametrize("make", STORES)
async def test_a_peers_newer_tokens_are_used_without_a_request(make: Callable[[], TokenStore]) -> None:
    store = make()
    binding = await bound(store)
    peer = tokens("peer", issued=NOW - 5)
    await store.set(KEY, peer.to_dict())
    port = TokenEndpoint(500, {})
    generation = binding.generation
    await AuthorizationFlow(port, binding, Entry.expiring).run()
    assert port.forms == []
    assert (binding.tokens, binding.generation) == (peer, generation + 1)
    assert await store.get(KEY) == peer.to_dict()


class PeerHoldsTheLock(mcpfsm.MemoryStore):
    """A store whose lock was held by a peer that stored new tokens before letting go."""

    def __init__(self, peer: oauth.TokenSet) -> None:
        super().__init__()
        self.peer = peer
        self.locked: list[tuple[str, float, float | None]] = []

    @asynccontextmanager
    async def lock(self, key: str, ttl: float, *, wait: float | None = None) -> AsyncIterator[None]:
        self.locked.append((key, ttl, wait))
        await self.set(key, self.peer.to_dict())  # the peer's refresh, finished while this client waited
        yield


async def test_tokens_a_peer_stored_while_the_lock_was_awaited_are_read_under_it() -> None:
    peer = tokens("peer", issued=NOW - 1)
    store = PeerHoldsTheLock(peer)
    binding = await bound(store)
    port = TokenEndpoint(500, {})
    await AuthorizationFlow(port, binding, Entry.expiring).run()
    assert port.forms == []
    # The store bounds its own wait (docs/stores.md): 35 s, longer than a holder may hold the lock.
    assert store.locked == [(KEY, 30.0, 35.0)]
    assert binding.tokens == peer


@pytest.mark.parametrize("make", STORES)
async def test_a_due_refresh_spends_the_newest_refresh_token_stored(make: Callable[[], TokenStore]) -> None:
    store = make()
    binding = await bound(store)
    newer_but_due = tokens("peer", issued=NOW - 3595)  # a peer's, due as well: refreshed with its refresh token
    await store.set(KEY, newer_but_due.to_dict())
    answer = {"access_token": "at-new", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "rt-new"}
    port = TokenEndpoint(200, answer)
    await AuthorizationFlow(port, binding, Entry.expiring).run()
    assert port.forms == [refresh_form("rt-peer")]
    assert binding.tokens is not None and binding.tokens.access_token == "at-new"
    assert await store.get(KEY) == binding.tokens.to_dict()
    assert binding.tokens.to_dict() | {"access_token": None} == {
        "access_token": None,
        "token_type": "Bearer",
        "refresh_token": "rt-new",
        "expires_at": NOW + 3600,
        "issued_at": NOW,
        "scopes": [],
        "issuer": AS,
        "resource": MCP,
    }


@pytest.mark.parametrize("make", STORES)
async def test_invalid_grant_keeps_a_peers_fresh_tokens_and_uses_them(make: Callable[[], TokenStore]) -> None:
    # A peer that did not take the lock (its lock expired, say) stored new tokens while this refresh was in
    # flight; the refresh token was spent by it. Nothing is deleted, the peer's tokens are used, no login.
    store = make()
    binding = await bound(store)
    peer = tokens("peer", issued=NOW - 1)

    async def peer_writes() -> None:
        await store.set(KEY, peer.to_dict())

    port = TokenEndpoint(400, {"error": "invalid_grant"}, during=peer_writes)
    await AuthorizationFlow(port, binding, Entry.expiring).run()
    assert port.forms == [refresh_form("rt-held")]
    assert binding.tokens == peer
    assert await store.get(KEY) == peer.to_dict()
    assert triggers(port) == [("starting", None), ("refreshing", "expiring"), ("authorized", "refreshed")]


@pytest.mark.parametrize("make", STORES)
async def test_invalid_grant_deletes_the_spent_tokens_it_read(make: Callable[[], TokenStore]) -> None:
    store = make()
    binding = await bound(store)
    port = TokenEndpoint(400, {"error": "invalid_grant"})
    # The spent tokens go, and the client must be identified and the user asked again (this issuer offers no
    # registration here, so the flow ends there).
    with pytest.raises(mcpfsm.AuthorizationError, match=r"^registering: 'https://as.example' offers no client"):
        await AuthorizationFlow(port, binding, Entry.expiring).run()
    assert port.forms == [refresh_form("rt-held")]
    assert await store.get(KEY) is None and binding.tokens is None
    assert triggers(port) == [
        ("starting", None),
        ("refreshing", "expiring"),
        ("registering", "refresh_refused"),
        ("failed", "refused"),
    ]


async def test_delete_if_unchanged_compares_as_json_on_a_plain_store() -> None:
    store = PlainStore()
    await store.set(KEY, {"a": 1.0, "b": [1, 2]})
    assert await delete_if_unchanged(store, KEY, {"a": 2}) is False
    assert await delete_if_unchanged(store, KEY, {"a": 1.0, "b": [1, 2]}) is True
    assert await store.get(KEY) is None
    assert await delete_if_unchanged(store, KEY, {"a": 1.0}) is False


class BrokenLock(PlainStore):
    """A store whose lock fails at once (a store that is down)."""

    def lock(self, key: str, ttl: float, *, wait: float | None = None) -> AbstractAsyncContextManager[None]:
        raise ConnectionError("redis://:secret@db down")


class BusyLock(PlainStore):
    """A store whose lock another holder keeps past the wait (the store itself answers)."""

    def lock(self, key: str, ttl: float, *, wait: float | None = None) -> AbstractAsyncContextManager[None]:
        raise mcpfsm.StoreLockTimeout("BusyLock: another holder kept the lock", wait=wait or 0.0)


async def test_refresh_lock_says_how_far_it_excludes_and_why_without_quoting_the_store() -> None:
    lines: list[str] = []
    logger.enable("mcpfsm")
    sink = logger.add(lambda message: lines.append(str(message).rstrip()), level="WARNING", format="{message}")
    try:
        async with refresh_lock(PlainStore(), KEY) as reach:
            assert reach is Exclusion.process
        async with refresh_lock(BusyLock(), KEY) as reach:
            assert reach is Exclusion.process
        async with refresh_lock(BrokenLock(), KEY) as reach:
            assert reach is Exclusion.unreachable
        async with refresh_lock(mcpfsm.MemoryStore(), KEY) as reach:
            assert reach is Exclusion.store
    finally:
        logger.remove(sink)
        logger.disable("mcpfsm")
    assert lines == [
        "the token store's lock stayed taken for 35.0 s; refreshing without it",
        "cannot lock the token store (ConnectionError); refreshing without the lock",
    ]


class DeadStore(BrokenLock):
    """A store whose lock fails, and whose reads fail too once ``reads_left`` reads were answered."""

    reads_left: int | None = None

    async def get(self, key: str) -> dict[str, Any] | None:
        if self.reads_left is not None:
            if self.reads_left == 0:
                raise ConnectionError("redis://:secret@db down")
            self.reads_left -= 1
        return await super().get(key)


async def test_a_store_that_cannot_be_read_again_never_spends_the_refresh_token() -> None:
    # docs/stores.md: without the lock, a refresh goes ahead only after a second read of the store. A store that
    # cannot be read leaves the refresh token unsent (a peer may be spending it), and says why.
    store = DeadStore()
    binding = await bound(store)
    store.reads_left = 1  # the read before the lock; the second one, after the lock failed, fails too
    port = TokenEndpoint(200, {"access_token": "at-new", "token_type": "Bearer", "expires_in": 3600})
    with pytest.raises(
        mcpfsm.AuthorizationError,
        match=r"^refreshing: the token store could not be read while another process may be refreshing; the refresh"
        r" token is not sent until it can be \(docs/stores.md\)$",
    ):
        await AuthorizationFlow(port, binding, Entry.expiring).run()
    assert port.forms == []
    assert binding.tokens == DUE


async def test_a_store_read_again_after_its_lock_failed_lets_the_refresh_go_on() -> None:
    store = DeadStore()
    binding = await bound(store)
    answer = {"access_token": "at-new", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "rt-new"}
    port = TokenEndpoint(200, answer)
    await AuthorizationFlow(port, binding, Entry.expiring).run()
    assert port.forms == [refresh_form("rt-held")]
    assert binding.tokens is not None and binding.tokens.access_token == "at-new"
