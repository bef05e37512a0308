"""Shared listings, the parts without a server: who counts as one authorization identity, what is never shared."""

from __future__ import annotations

from typing import Any, Final

import jwt
import pytest

import mcpfsm
from mcpfsm._client.assembly import HttpServer, Parts, StdioServer
from mcpfsm._client.options import ClientOptions
from mcpfsm._client.sharing import SharedListings, authorization_identity, for_client
from mcpfsm._core.cache import CacheStats, ResponseCache
from mcpfsm._core.oauth.tokens import TokenSet
from mcpfsm._drivers.authorization_binding import Bound, Identity

URL: Final = "http://127.0.0.1:9/mcp"
ISSUER: Final = "http://127.0.0.1:9"
MODERN: Final = "2026-07-28"


def parts(connection: HttpServer | StdioServer, **options: Any) -> Parts:
    """A client's parts, as ``Client.http`` and ``Client.stdio`` make them."""
    return Parts(connection, ClientOptions(**options))


def oauth_client(client_id: str, access_token: str, issuer: str = ISSUER) -> Parts:
    made = parts(HttpServer(url=URL, auth=mcpfsm.ClientCredentials(client_id, client_secret="shh-secret")))
    layer: Any = made.authorization
    layer.binding.bound = Bound(identity=Identity(issuer=issuer, client_id=client_id, method="client_secret_basic"))
    layer.binding.load(TokenSet(access_token=access_token, issuer=issuer, resource=URL))
    return made


def identity(made: Parts) -> str | None:
    return authorization_identity(made)


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
    credentials = mcpfsm.ClientCredentials("cid", client_secret="shh-secret")
    assert identity(parts(HttpServer(url=URL, auth=credentials))) is None
    assert identity(parts(HttpServer(url=URL))) is None


def test_a_static_token_and_the_same_authorization_header_are_one_identity() -> None:
    static = identity(parts(HttpServer(url=URL, auth="tok-1234567890")))
    header = identity(parts(HttpServer(url=URL, headers={"Authorization": "Bearer tok-1234567890"})))
    other = identity(parts(HttpServer(url=URL, headers={"Authorization": "Bearer tok-0987654321"})))
    assert static == header != other
    assert static is not None and "tok-1234567890" not in static


@pytest.mark.parametrize(
    ("make", "shared"),
    [
        (lambda: parts(HttpServer(url=URL)), False),
        (lambda: parts(HttpServer(url=URL), store=mcpfsm.MemoryStore()), True),
        (lambda: parts(HttpServer(url=URL), store=mcpfsm.MemoryStore(), cache=False), False),
        (lambda: parts(StdioServer(command=["true"]), store=mcpfsm.MemoryStore()), False),
    ],
    ids=["default-store", "callers-store", "cache-off", "stdio"],
)
def test_only_a_callers_store_on_http_with_a_cache_shares(make: Any, shared: bool) -> None:
    made = make()
    assert (made.session.shared is not None) == shared
    assert for_client(None, transport=made.transport, cache=made.cache, authorization=None, secrets=None) is None


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
