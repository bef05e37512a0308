"""Shared listings, the parts without a server: who counts as one authorization identity, what is never shared."""

from __future__ import annotations

from typing import Any, Final

import jwt
import pytest

import mcpfsm
from mcpfsm._client.sharing import SharedListings, authorization_identity, for_session
from mcpfsm._core.cache import CacheStats, ResponseCache
from mcpfsm._core.oauth.tokens import TokenSet
from mcpfsm._drivers.authorization_binding import Bound, Identity

URL: Final = "http://127.0.0.1:9/mcp"
ISSUER: Final = "http://127.0.0.1:9"
MODERN: Final = "2026-07-28"


def oauth_client(client_id: str, access_token: str, issuer: str = ISSUER) -> mcpfsm.Client:
    client = mcpfsm.Client.http(URL, auth=mcpfsm.ClientCredentials(client_id, client_secret="shh-secret"))
    layer: Any = client._session.authorization
    layer.binding.bound = Bound(identity=Identity(issuer=issuer, client_id=client_id, method="client_secret_basic"))
    layer.binding.load(TokenSet(access_token=access_token, issuer=issuer, resource=URL))
    return client


def identity(client: mcpfsm.Client) -> str | None:
    return authorization_identity(client._session)


def signed(subject: str, nonce: str) -> str:
    return jwt.encode({"sub": subject, "jti": nonce}, "a-signing-key-of-the-server-32-bytes!", algorithm="HS256")


def test_a_jwt_subject_is_one_identity_across_its_tokens() -> None:
    first, second = signed("user-1", "a"), signed("user-1", "b")
    assert identity(oauth_client("cid", first)) == identity(oauth_client("cid", second))
    assert identity(oauth_client("cid", first)) != identity(oauth_client("cid", signed("user-2", "a")))
    assert identity(oauth_client("cid", first)) != identity(oauth_client("other", second))
    assert identity(oauth_client("cid", first)) != identity(oauth_client("cid", second, "http://127.0.0.1:8"))


def test_an_opaque_token_counts_by_its_fingerprint_never_by_itself() -> None:
    one = identity(oauth_client("cid", "at-opaque-one"))
    assert one == identity(oauth_client("cid", "at-opaque-one"))
    assert one != identity(oauth_client("cid", "at-opaque-two"))
    assert one is not None and "at-opaque-one" not in one and "cid" not in one


def test_no_tokens_held_is_no_identity() -> None:
    client = mcpfsm.Client.http(URL, auth=mcpfsm.ClientCredentials("cid", client_secret="shh-secret"))
    assert identity(client) is None
    assert identity(mcpfsm.Client.http(URL)) is None


def test_a_static_token_and_the_same_authorization_header_are_one_identity() -> None:
    static = identity(mcpfsm.Client.http(URL, auth="tok-1234567890"))
    header = identity(mcpfsm.Client.http(URL, headers={"Authorization": "Bearer tok-1234567890"}))
    other = identity(mcpfsm.Client.http(URL, headers={"Authorization": "Bearer tok-0987654321"}))
    assert static == header != other
    assert static is not None and "tok-1234567890" not in static


@pytest.mark.parametrize(
    ("make", "shared"),
    [
        (lambda: mcpfsm.Client.http(URL), False),
        (lambda: mcpfsm.Client.http(URL, store=mcpfsm.MemoryStore()), True),
        (lambda: mcpfsm.Client.http(URL, store=mcpfsm.MemoryStore(), cache=False), False),
        (lambda: mcpfsm.Client.stdio(["true"], store=mcpfsm.MemoryStore()), False),
    ],
    ids=["default-store", "callers-store", "cache-off", "stdio"],
)
def test_only_a_callers_store_on_http_with_a_cache_shares(make: Any, shared: bool) -> None:
    client = make()
    assert (client._session.shared is not None) == shared
    assert for_session(client._session, None) is None


async def no_identity() -> None:
    return None


async def test_a_page_quoting_a_held_secret_is_not_shared() -> None:
    store = mcpfsm.MemoryStore()
    stats = CacheStats()
    shared = SharedListings(store, server=URL, identity=no_identity, held=lambda: frozenset({"s3cret"}), stats=stats)
    page = {"tools": [{"name": "t", "description": "token s3cret"}], "ttlMs": 60_000, "cacheScope": "public"}
    clean = {"tools": [{"name": "t"}], "ttlMs": 60_000, "cacheScope": "public"}

    async def send(result: dict[str, Any]) -> dict[str, Any]:
        return result

    for result in (page, clean):
        cache = ResponseCache()
        answer = await shared.through(
            (MODERN, "tools/list", None),
            cache,
            lambda result=result: send(result),
            fresh=False,
            same_era=lambda: True,
            clock=lambda: 0.0,
        )
        assert answer == result and len(cache) == 1
        shared_now = [value["result"] for value in store._values.values()]
        assert shared_now == ([] if result is page else [clean])
