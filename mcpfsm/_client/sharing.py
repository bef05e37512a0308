"""Shared listings: the listing pages a fleet of clients shares through one store (SEP-2549 ``cacheScope``).

A client given a ``store=`` of its caller's (``FileStore``, ``RedisStore``, or one ``MemoryStore`` handed to
several clients; docs/cache.md) keeps the complete pages of ``tools/list``, ``prompts/list``,
``resources/list`` and ``resources/templates/list`` there as well as in its own memory:

- **who shares**: a ``"public"`` page is shared by every client of the same server URL; a ``"private"``
  one (or one without ``cacheScope``) only by the clients of one authorization identity: the issuer, the
  client id and the subject of a token that names one (a JWT's ``sub``), else a fingerprint of the access
  token; a caller's own ``Authorization`` header or ``auth="…"`` token counts by its fingerprint. A client
  with no identity shares only public pages. HTTP servers only: two stdio servers are two servers.
- **keys and values hold no secret**: a key is ``cache <method> <digest>``, the digest a SHA-256 of the
  server URL, the protocol version, the cursor and the identity, itself a digest (PBKDF2 for what a caller
  typed, which may be a weak password); a value is ``{"result", "scope", "expires_at"}`` with the absolute
  expiry in seconds since the epoch, and a page that quotes a secret the client holds is not shared.
- **one fill per TTL**: a miss in memory reads the store; a miss there takes ``store.lock(key, ttl)`` on
  the public key of that page, reads again (a peer may have filled it meanwhile), and only then asks the
  server, so N fresh workers send one ``tools/list`` per page and TTL. ``fresh=True`` (the -32020 relist)
  asks the server without reading, and overwrites what the store holds.
- **a store that fails never hangs a call**: each operation is bounded (:data:`STORE_TIMEOUT`), and the wait
  for a peer's fill too (:data:`FILL_WAIT`, the ``wait`` the store's lock keeps itself); a failure or a
  timeout is one WARNING and one ``CacheStats.store_failures``, the client asks the server, and the store
  counts as down for
  :data:`DOWN_FOR` seconds so that a call pays at most one timeout. The bounds are those of the token store
  guard (``mcpfsm._client.store_guard``), but this layer takes the raw store: the guard mirrors every value in
  memory while this layer's memory is the response cache itself, bounded by bytes.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol, TypeVar

import trio

from .._core.cache import LISTINGS, CacheKey, CacheStats, ResponseCache, cache_hint
from .._core.errors import StoreLockTimeout
from .._core.store_lock import taking_lock
from .._log import logger
from .store_guard import DEFAULT_RETRY_AFTER, DEFAULT_STORE_TIMEOUT

if TYPE_CHECKING:
    from .._core.credentials import Store
    from .._core.oauth.redaction import Secrets
    from .._transports.base import Transport
    from .authorization import AuthorizationLayer, StaticToken

__all__ = [
    "DOWN_FOR",
    "FILL_WAIT",
    "LISTINGS",
    "STORE_TIMEOUT",
    "SharedListings",
    "authorization_identity",
    "for_client",
    "typed_fingerprint",
    "typed_secrets",
]

STORE_TIMEOUT: Final = DEFAULT_STORE_TIMEOUT
"""Seconds one store operation may take before the client asks the server instead (as for tokens)."""

FILL_WAIT: Final = 5.0
"""Seconds a client waits for a peer's fill of the same page (and the ``ttl`` of that lock)."""

DOWN_FOR: Final = DEFAULT_RETRY_AFTER
"""Seconds a store counts as down after an operation failed or timed out (no operation is tried meanwhile)."""

_PBKDF2_ROUNDS: Final = 100_000
_SALT: Final = b"mcpfsm shared listings"

T = TypeVar("T")


class Holder(Protocol):
    """What this module reads of a client's credentials (a ``Session`` has both): a narrow port, no import."""

    @property
    def authorization(self) -> AuthorizationLayer | StaticToken | None: ...
    @property
    def secrets(self) -> Callable[[], Secrets] | None: ...


class _Held(NamedTuple):
    authorization: AuthorizationLayer | StaticToken | None
    secrets: Callable[[], Secrets] | None


class _Found(NamedTuple):
    result: dict[str, Any]
    ttl_ms: int


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()


def _jwt_subject(token: str) -> str | None:
    # A JWT access token (RFC 9068 §2.2) names its subject; the client received it from its own authorization
    # server, so its claims are read without checking the signature, only to group entries by user.
    if token.count(".") != 2:
        return None
    import jwt  # here, not at module level: `import mcpfsm` does not import PyJWT

    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.exceptions.PyJWTError:
        return None
    subject = claims.get("sub") if isinstance(claims, dict) else None
    return subject if isinstance(subject, str) and subject else None


def authorization_identity(session: Holder, typed: Callable[[tuple[str, ...]], str] | None = None) -> str | None:
    """The authorization identity of ``session`` as a digest that holds no secret, or ``None``: it has none.

    With ``auth=`` credentials: issuer, client id, and the token's subject or a SHA-256 of the access token.
    With ``auth="…"`` or a caller's ``Authorization`` header: ``typed(`` :func:`typed_secrets` ``)``, by default
    :func:`typed_fingerprint` (what a caller typed may be a weak password: a slow digest).
    """
    layer = session.authorization
    if layer is not None:
        from .authorization import AuthorizationLayer  # loaded already: the session has an auth layer

        if isinstance(layer, AuthorizationLayer):
            binding = layer.binding
            tokens = binding.tokens
            if tokens is None:
                return None
            client_id = binding.identity.client_id if binding.identity is not None else None
            subject = _jwt_subject(tokens.access_token)
            token = hashlib.sha256(tokens.access_token.encode()).hexdigest()
            who = ("sub", subject) if subject is not None else ("token", token)
            return _digest("oauth", tokens.issuer, client_id, *who)
    values = typed_secrets(session)
    return (typed or typed_fingerprint)(values) if values else None


def typed_secrets(session: Holder) -> tuple[str, ...]:
    """The secrets of an ``auth="…"`` token or a caller's ``Authorization`` header; none for flows."""
    layer = session.authorization
    if layer is not None:
        from .authorization import AuthorizationLayer

        if isinstance(layer, AuthorizationLayer):
            return ()
    held = layer.secrets if layer is not None else session.secrets
    return tuple(sorted(held().values)) if held is not None else ()


def typed_fingerprint(values: tuple[str, ...]) -> str:
    """A PBKDF2-SHA256 digest of secrets a caller typed (a header, a URL's password, an ``auth="…"`` token)."""
    typed = "\n".join(values).encode("utf-8", "surrogatepass")
    return "typed-" + hashlib.pbkdf2_hmac("sha256", typed, _SALT, _PBKDF2_ROUNDS).hex()


class SharedListings:
    """The shared layer of one client's response cache (see the module docstring).

    Args:
        store: the store the caller gave.
        server: the MCP endpoint URL (keys hold a digest of it, never the URL).
        identity: returns the client's authorization identity now (:func:`authorization_identity`).
        held: returns the secrets the client holds now; a page quoting one is not shared.
        stats: the memory cache's counters (``shared_hits``, ``store_failures`` are counted there).
        timeout: bound of one store operation, in seconds.
        fill_wait: bound of the wait for a peer's fill, in seconds.
        wall: the wall clock of the absolute expiry (seconds since the epoch; every process shares it).
    """

    __slots__ = ("_down_until", "_held", "_identity", "fill_wait", "server", "stats", "store", "timeout", "wall")

    def __init__(
        self,
        store: Store,
        *,
        server: str,
        identity: Callable[[], Awaitable[str | None]],
        held: Callable[[], frozenset[str]],
        stats: CacheStats,
        timeout: float = STORE_TIMEOUT,
        fill_wait: float = FILL_WAIT,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """Share through ``store``; nothing is read until the first miss."""
        self.store = store
        self.server = _digest("server", server)
        self._identity = identity
        self._held = held
        self.stats = stats
        self.timeout = timeout
        self.fill_wait = fill_wait
        self.wall = wall
        self._down_until = float("-inf")

    def __repr__(self) -> str:
        return f"SharedListings({type(self.store).__name__})"

    def key(self, key: CacheKey, identity: str | None) -> str:
        """The store key of the page ``key``: public with ``identity=None``, else private to that identity."""
        version, method, selector = key
        return f"cache {method} {_digest(self.server, version, method, selector, identity)}"

    async def through(
        self,
        key: CacheKey,
        cache: ResponseCache,
        send: Callable[[], Awaitable[dict[str, Any]]],
        *,
        fresh: bool,
        same_era: Callable[[], bool],
        clock: Callable[[], float],
    ) -> dict[str, Any]:
        """Answer a miss of ``cache`` from the store, or from ``send()`` under the page's lock, and share it.

        ``send``'s errors propagate; the store's never do (the call asks the server instead).
        """
        if fresh:
            return await self._fetch(key, cache, send, same_era=same_era, clock=clock)
        found = await self._read(key)
        if found is None:
            async with self._filling(key) as held:
                if held:
                    found = await self._read(key)
                if found is None:
                    return await self._fetch(key, cache, send, same_era=same_era, clock=clock)
        self.stats.shared_hits += 1
        cache.put(key, found.result, clock(), ttl_ms=found.ttl_ms)
        return found.result

    async def _fetch(
        self,
        key: CacheKey,
        cache: ResponseCache,
        send: Callable[[], Awaitable[dict[str, Any]]],
        *,
        same_era: Callable[[], bool],
        clock: Callable[[], float],
    ) -> dict[str, Any]:
        result = await send()
        if same_era():
            cache.put(key, result, clock())
            await self._write(key, result)
        return result

    # --- the store, bounded -----------------------------------------------------------------------------

    def _down(self) -> bool:
        return trio.current_time() < self._down_until

    def _failed(self, error: BaseException) -> None:
        self.stats.store_failures += 1
        self._down_until = trio.current_time() + DOWN_FOR
        # The type only: a store's message may quote its URL, and a Redis URL may carry a password.
        logger.warning(
            "the shared cache store ({}) failed: {}; asking the server, and not using the store for {} s",
            type(self.store).__name__,
            type(error).__name__,
            DOWN_FOR,
        )

    async def _bounded(self, operation: Callable[[], Awaitable[T]]) -> tuple[bool, T | None]:
        # (done, value): done is False when the store is down, failed or timed out.
        if self._down():
            return False, None
        with trio.move_on_after(self.timeout):
            try:
                return True, await operation()
            except Exception as exc:  # any store failure means "ask the server" (docs/cache.md)
                self._failed(exc)
                return False, None
        self._failed(TimeoutError())
        return False, None

    async def _read(self, key: CacheKey) -> _Found | None:
        identity = await self._identity()
        for scope, owner in (("public", None), ("private", identity)):
            if scope == "private" and owner is None:
                break
            name = self.key(key, owner)
            done, value = await self._bounded(functools.partial(self.store.get, name))
            if not done:
                return None
            found = self._valid(value, scope)
            if found is not None:
                return found
            if value is not None:
                # Expired or malformed: remove it, unless another process replaced it since it was read.
                await self._bounded(functools.partial(self.store.compare_and_delete, name, value))
        return None

    def _valid(self, value: Mapping[str, Any] | None, scope: str) -> _Found | None:
        # A value another process wrote: used only when whole, of the scope its key says, and not yet expired.
        if value is None:
            return None
        result, expires_at = value.get("result"), value.get("expires_at")
        if value.get("scope") != scope or not isinstance(result, dict) or not isinstance(expires_at, (int, float)):
            return None
        hint = cache_hint(result)
        if hint is None or hint.scope != scope:
            return None
        remaining_ms = int((expires_at - self.wall()) * 1000)
        if remaining_ms <= 0:
            return None
        return _Found(result, min(remaining_ms, hint.ttl_ms))

    async def _write(self, key: CacheKey, result: dict[str, Any]) -> None:
        hint = cache_hint(result)
        if hint is None:
            return
        owner = None
        if hint.scope == "private":
            owner = await self._identity()
            if owner is None:
                return
        text = json.dumps(result, ensure_ascii=False)
        if any(secret in text for secret in self._held()):
            logger.debug("a {} page quotes a secret this client holds; it is not shared", key[1])
            return
        value = {"result": result, "scope": hint.scope, "expires_at": self.wall() + hint.ttl_ms / 1000}
        await self._bounded(lambda: self.store.set(self.key(key, owner), value))

    @contextlib.asynccontextmanager
    async def _filling(self, key: CacheKey) -> AsyncIterator[bool]:
        # SEP-2549 lets a public page serve everyone; the lock is the page's public key either way, so that
        # concurrent misses in different processes share one fill (a private page costs one fill per identity).
        # The store bounds its own wait (docs/stores.md): no cancel scope here contains the store's lock.
        if self._down():
            yield False
            return
        held = contextlib.AsyncExitStack()
        try:
            await held.enter_async_context(taking_lock(self.store, self.key(key, None), self.fill_wait, self.fill_wait))
        except StoreLockTimeout:
            logger.debug("no lock on the shared {} page within {} s; filling without it", key[1], self.fill_wait)
            yield False
            return
        except Exception as exc:  # a lock that fails means "fill without it"
            self._failed(exc)
            yield False
            return
        try:
            yield True
        finally:
            try:
                # The store releases within its own bound, even when the call was cancelled.
                await held.aclose()
            except Exception as exc:  # a lock that fails to release expires by its ttl
                self._failed(exc)


def for_client(
    store: Store | None,
    *,
    transport: Transport,
    cache: ResponseCache | None,
    authorization: AuthorizationLayer | StaticToken | None,
    secrets: Callable[[], Secrets] | None,
) -> SharedListings | None:
    """The shared layer of a client given ``store=``, or ``None``: nothing to share.

    ``None`` without a caller's store (the default ``MemoryStore`` is the client's own), without a response
    cache, and off HTTP (a stdio server is a process of this client's own). ``transport`` is the client's
    (unwrapped), ``authorization`` and ``secrets`` what its session will hold.
    """
    from .._transports.http import HttpTransport  # loaded already when the client is an HTTP one

    if store is None or cache is None or not isinstance(transport, HttpTransport):
        return None
    holder = _Held(authorization, secrets)
    memo: dict[tuple[str, ...], str] = {}

    async def identity() -> str | None:
        # The slow digest of typed secrets runs once per value the client holds, in a worker thread.
        values = typed_secrets(holder)
        if values and values not in memo:
            digest = await trio.to_thread.run_sync(typed_fingerprint, values)
            memo.clear()
            memo[values] = digest
        return authorization_identity(holder, memo.__getitem__)

    def held() -> frozenset[str]:
        layer = holder.authorization
        secrets = layer.secrets if layer is not None else holder.secrets
        return secrets().values if secrets is not None else frozenset()

    return SharedListings(store, server=transport.url, identity=identity, held=held, stats=cache.stats)
