"""A store on Redis or Valkey, shared by every process on every machine that names it (docs/stores.md).

:class:`RedisStore` talks to the server through ``coredis`` (the ``redis`` extra: ``pip install
'mcpfsm[redis]'``), an anyio client that runs under trio as it is. One URL names the deployment:

- ``redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`` and ``rediss://…`` (TLS): one server;
- ``redis+sentinel://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT…]/SERVICE[/DB]`` (and ``rediss+sentinel://``):
  the primary that the Sentinels name for ``SERVICE``, found again after a failover;
- ``redis+cluster://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT…]`` (and ``rediss+cluster://``): a Redis Cluster,
  discovered from those nodes.

Every key it writes is ``prefix`` then the SHA-256 of the store key in hex (``prefix``, ``lock:{``, that hash
and ``}`` for a lock, and the lock's key then ``:wake`` for its wake-up list), so nothing a key names, not even
an MCP URL with a token in its query, reaches the key space; the store key itself is kept inside the value, as
JSON ``{"key": …, "value": …}``, for ``mcpfsm store check``. No key of one prefix is a key of another, even
when one prefix starts with the other (``app:`` and ``app:lock:``): a value key ends in 64 hex digits right
after its prefix, a lock key in ``}``, a wake-up list in ``:wake``. The braces are a Redis Cluster hash tag:
a lock and its list live on one node.

``lock`` is the single-instance algorithm of Redis' "Distributed locks" page, as coredis' lock recipe does
it: ``SET NX PX`` with a random token, released by a Lua script that deletes the key only while it still
holds that token. The release also puts one entry in the lock's wake-up list, and a waiter blocks on that
list (``BLPOP``), so the longest waiter takes a released lock at once instead of polling, and only it wakes:
Redis serves blocked clients first come first served. A list keeps its entry until a waiter takes it, so a
release between a waiter's failed ``SET NX`` and its ``BLPOP`` is not missed (the release empties the list
before it pushes, so entries never pile up). A waiter also wakes when the holder's ``PX`` runs out (a holder
that died) and at least every second, to try again and to notice a server that stopped answering; that also
bounds the one case a wake-up can be lost, a waiter cancelled between taking the entry and trying the lock.
Pub/sub, or a stream every waiter reads, would wake every waiter at each release, and all but one would go
back to sleep: on a busy machine that herd cost more than it saved (bench/fleet.py ``--handoff``). A list and
``BLPOP`` work alike on one server, through Sentinel and on a Cluster. ``compare_and_delete`` is one Lua
script, so it is atomic against every writer.

A store that is not entered keeps its coredis client in a trio system task of its own (coredis clients are
entered and exited in one task, and run a task group): every operation of every task leases it, and a
:class:`~mcpfsm.Client` leases it for its whole life (:meth:`RedisStore.retain`), so that clients in any
number of tasks share one connection pool, and no caller's cancel scope ever contains a task group of the
store's. The pool closes when the last lease ends.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import re
import secrets
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import unquote

import trio

from .._core.errors import StoreError
from .._core.store_lock import check_lock, lock_timeout
from .._log import logger

if TYPE_CHECKING:
    from coredis import Redis, RedisCluster

__all__ = ["RedisStore", "redacted"]

T = TypeVar("T")

_SCHEMES: Final = ("redis", "rediss", "redis+sentinel", "rediss+sentinel", "redis+cluster", "rediss+cluster")
_ANSWER: Final = 2.0
"""Seconds the server may take to answer a command of a lock beyond the command's own blocking time (an
acquire, a wait on the wake-up list, a release); past it the server counts as not answering (a
``StoreError``), so that a stopped server never holds a waiter past its ``wait``."""
_WAKE_SLICE: Final = 1.0
"""The longest one blocking wait on a lock's wake-up list: then the waiter tries the lock again (a release
wakes it at once; this bounds how late a stopped or failed-over server, or a lost wake-up, is noticed)."""
_HEX64: Final = re.compile("[0-9a-f]{64}")

_ACQUIRE: Final = """
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return {1, 0}
end
return {0, redis.call('pttl', KEYS[1])}
"""
"""Take the lock, or say how long it stays taken (one step)."""

_RELEASE: Final = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    redis.call('del', KEYS[1])
    redis.call('del', KEYS[2])
    redis.call('rpush', KEYS[2], '1')
    redis.call('pexpire', KEYS[2], ARGV[2])
    return 1
end
return 0
"""
"""Release the lock while it is still this holder's, and wake the longest waiter (one entry in the list)."""

_COMPARE_AND_DELETE: Final = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    redis.call('del', KEYS[1])
    return 1
end
return 0
"""


def redacted(url: str) -> str:
    """``url`` without its password (``redis://user:***@host``) nor its query's values (``?password=***``).

    For messages and ``repr``. Not ``_transports.http.urls.redacted``: a Redis URL may name several hosts
    (``redis+cluster://h1:1,h2:2``), which no HTTP URL parser takes. The userinfo is what comes before the last
    ``@`` ahead of the query (a password may hold a ``/``), and every query value is masked: Redis takes
    ``?password=`` there too.
    """
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    head, question, query = rest.partition("?")
    userinfo, at, hosts = head.rpartition("@")
    if at:
        head = f"{userinfo.partition(':')[0]}:***@{hosts}"
    if not question:
        return f"{scheme}://{head}"
    masked = "&".join(f"{item.partition('=')[0]}=***" if "=" in item else item for item in query.split("&"))
    return f"{scheme}://{head}?{masked}"


def _canonical(record: Mapping[str, Any]) -> str:
    # One text per JSON value, so that the Lua comparison of two texts is the comparison of two values.
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class RedisStore:
    """A :class:`~mcpfsm.Store` on Redis or Valkey: standalone, Sentinel or Cluster (docs/stores.md).

    Args:
        url: where the server is: ``redis://``, ``rediss://`` (TLS), ``redis+sentinel://`` or
            ``redis+cluster://`` (and their ``rediss+`` forms); see the module's description above and
            docs/stores.md for each form.
        prefix: the start of every key this store writes (default ``mcpfsm:``), so that one server can hold
            several stores and other data.
        client: a ``coredis.Redis`` or ``coredis.RedisCluster`` built by the application (any option coredis
            has), used instead of ``url``; the application enters it (``async with client:``) around its use.

    Entered (``async with RedisStore(url) as store:``), it keeps its connections open in the entering task
    for every client until the block ends. Not entered, it keeps them in a task of its own for as long as a
    :class:`~mcpfsm.Client` uses it (each client holds it open from its first request to its close), and
    opens them for one operation otherwise. Values are JSON text. Operations raise coredis' errors
    (``ConnectionError``, ``TimeoutError``, …) when the server fails, and :class:`~mcpfsm.StoreError` when it
    stops answering during a lock; a client that uses the store bounds each one and falls back to memory for
    a while (docs/stores.md, "When the store fails"). Neither ``repr`` nor any message shows the URL's
    password. One trio run uses a store at a time.

    Raises:
        ValueError: neither or both of ``url`` and ``client``, a URL of another scheme, a Sentinel URL
            without a service name, a URL without a host, or an empty ``prefix``.
        ImportError: ``coredis`` is not installed; the message says how to install it.
    """

    __slots__ = ("_client", "_open", "_shared", "_stack", "_target", "prefix")

    def __init__(
        self, url: str | None = None, *, prefix: str = "mcpfsm:", client: Redis[Any] | RedisCluster[Any] | None = None
    ) -> None:
        """Check the URL and prepare the connection; nothing is sent until the first operation."""
        if not isinstance(prefix, str) or not prefix:
            raise ValueError("prefix must be a non-empty string")
        self.prefix = prefix
        self._client: Any = None
        self._stack: AsyncExitStack | None = None
        self._shared: _Shared | None = None
        if (url is None) == (client is None):
            raise ValueError("give exactly one of url and client")
        if client is not None:
            self._target = type(client).__name__
            given = client
            # The application enters its own client (coredis clients are entered once, in a parent task).
            self._open: Callable[[], AbstractAsyncContextManager[Any]] = lambda: contextlib.nullcontext(given)
        else:
            assert url is not None
            self._target = redacted(url)
            self._open = _opener(url)

    def __repr__(self) -> str:
        return f"RedisStore({self._target!r}, prefix={self.prefix!r})"

    @property
    def location(self) -> str:
        """The URL without its password (or the type of the ``client=`` given), for messages."""
        return self._target

    async def __aenter__(self) -> RedisStore:
        """Open the connections; they stay open until the block ends."""
        async with AsyncExitStack() as stack:
            self._client = await stack.enter_async_context(self._open())
            self._stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Close the connections."""
        stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    def key_of(self, key: str) -> str:
        """The Redis key that holds ``key``'s value: ``prefix`` then the SHA-256 of ``key`` in hex."""
        return self.prefix + hashlib.sha256(key.encode("utf-8")).hexdigest()

    def lock_key_of(self, key: str) -> str:
        """The Redis key of ``key``'s lock: ``prefix``, ``lock:{``, the SHA-256 of ``key`` in hex, then ``}``."""
        return self.prefix + "lock:{" + hashlib.sha256(key.encode("utf-8")).hexdigest() + "}"

    def retain(self) -> None:
        """Keep this store's connections open until a matching :meth:`release` (a client's whole life).

        A :class:`~mcpfsm.Client` given this store calls it when it first connects and calls :meth:`release`
        when it closes, so that a store the application did not enter keeps one connection pool for all
        its clients, in any task, instead of one per operation. Nothing is opened until an operation needs it.
        """
        self._run_state().users += 1

    async def release(self) -> None:
        """End one :meth:`retain`; the last one closes the connections this store opened itself."""
        await self._run_state().leave()

    async def get(self, key: str) -> dict[str, Any] | None:
        """The value stored under ``key``, or ``None``."""
        async with self._connection() as redis:
            text = await redis.get(self.key_of(key))
        return _value_of(text, key)

    async def set(self, key: str, value: Mapping[str, Any]) -> None:
        """Store ``value`` under ``key``, replacing what was there."""
        async with self._connection() as redis:
            await redis.set(self.key_of(key), _canonical({"key": key, "value": dict(value)}))

    async def delete(self, key: str) -> None:
        """Forget ``key``; nothing happens when it is absent."""
        async with self._connection() as redis:
            await redis.delete([self.key_of(key)])

    async def compare_and_delete(self, key: str, expected: Mapping[str, Any]) -> bool:
        """Delete ``key`` if and only if its value equals ``expected`` as a JSON value; return whether it did."""
        expected_text = _canonical({"key": key, "value": json.loads(json.dumps(dict(expected)))})
        async with self._connection() as redis:
            deleted = await _script(_COMPARE_AND_DELETE).execute(
                keys=[self.key_of(key)], args=[expected_text], client=redis
            )
        return bool(deleted)

    @contextlib.asynccontextmanager
    async def lock(self, key: str, ttl: float, *, wait: float | None = None) -> AsyncIterator[None]:
        """Hold ``key`` against every other holder on this server, in any process on any machine.

        The lock expires ``ttl`` seconds after it was taken, so a holder that dies (or hangs) excludes
        others at most that long. A waiter takes it the moment its holder releases it (see the module's
        text). Waits at most ``wait`` seconds (``None``: as long as it takes). A holder whose ``ttl`` ran
        out before it left is told with one WARNING (another process may have taken the lock meanwhile).

        Raises:
            StoreLockTimeout: another holder kept ``key`` for ``wait`` seconds.
            StoreError: the server stopped answering while this one waited.
            ValueError: ``ttl`` is not a positive number, or ``wait`` is negative.
        """
        check_lock(ttl, wait)
        deadline = math.inf if wait is None else trio.current_time() + wait
        names = [self.lock_key_of(key), self.lock_key_of(key) + ":wake"]
        token = secrets.token_hex(16)
        ttl_ms = max(1, math.ceil(ttl * 1000))
        async with self._connection() as redis:
            if not await self._acquire(redis, names, token, ttl_ms, deadline):
                raise lock_timeout(self, wait)
            try:
                yield
            finally:
                with trio.CancelScope(shield=True):
                    await self._release(redis, names, token, ttl_ms, ttl)

    async def _acquire(self, redis: Any, names: list[str], token: str, ttl_ms: int, deadline: float) -> bool:
        while True:
            taken, left_ms = await _answered(
                _script(_ACQUIRE).execute(keys=names, args=[token, ttl_ms], client=redis), _ANSWER
            )
            if taken:
                return True
            left = deadline - trio.current_time()
            if left <= 0:
                return False
            # Until the holder's release (an entry in the list), its ttl running out, or the slice.
            block = max(0.001, min(left, max(int(left_ms), 1) / 1000, _WAKE_SLICE))
            await _answered(redis.blpop([names[1]], timeout=round(block, 3)), block + _ANSWER)

    async def _release(self, redis: Any, names: list[str], token: str, ttl_ms: int, ttl: float) -> None:
        try:
            released = await _answered(
                _script(_RELEASE).execute(keys=names, args=[token, ttl_ms], client=redis), _ANSWER
            )
        except Exception as exc:
            # Its type only: a message may quote the URL. The lock expires by its ttl.
            logger.warning("a store lock could not be released ({}); it expires within {} s", type(exc).__name__, ttl)
            return
        if not released:
            logger.warning("a store lock expired before its holder released it (ttl {} s)", ttl)

    async def entries(self) -> list[tuple[str, dict[str, Any], float | None]]:
        """Every key under ``prefix`` with its value and seconds to live (``None``: no expiry); locks left out."""
        found: list[tuple[str, dict[str, Any], float | None]] = []
        async with self._connection() as redis:
            async for name in redis.scan_iter(match=_glob_escape(self.prefix) + "*"):
                # A client= built without decode_responses answers bytes. Only a value key of this prefix:
                # not a lock, its wake-up list, nor a key of a longer prefix that starts with this one.
                named = name.decode() if isinstance(name, bytes) else name
                if not _HEX64.fullmatch(named[len(self.prefix) :]):
                    continue
                record = _record(await redis.get(name))
                if record is None:
                    continue
                ttl_ms = await redis.pttl(name)
                found.append((record[0], record[1], ttl_ms / 1000 if ttl_ms >= 0 else None))
        return sorted(found, key=lambda entry: entry[0])

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        # The entered client (the application's, or this store's own when entered), else a lease on the pool
        # this store keeps in a system task (see the module's text).
        if self._client is not None:
            yield self._client
            return
        shared = self._run_state()
        shared.users += 1
        try:
            yield await shared.pool(self._open, self._target).opened(trio.current_time() + _ANSWER)
        finally:
            await shared.leave()

    def _run_state(self) -> _Shared:
        token = trio.lowlevel.current_trio_token()
        if self._shared is None or self._shared.token is not token:
            # The first use in this trio run (a pool of an earlier run ended with it).
            self._shared = _Shared(token)
        return self._shared


class _Shared:
    """Who uses a store's own pool in one trio run: leases (clients and operations) and the current pool."""

    __slots__ = ("_pool", "token", "users")

    def __init__(self, token: trio.lowlevel.TrioToken) -> None:
        self.token = token
        self.users = 0
        self._pool: _Pool | None = None

    def pool(self, opener: Callable[[], AbstractAsyncContextManager[Any]], target: str) -> _Pool:
        """The open pool, or a new one (the first lease, or the previous pool closed or failed)."""
        if self._pool is None or self._pool.closing:
            self._pool = _Pool(opener, target)
        return self._pool

    async def leave(self) -> None:
        """End one lease; the last one closes the pool."""
        self.users -= 1
        if self.users == 0 and self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.aclose()


class _Pool:
    """One coredis client, entered and exited by a trio system task of its own, for every task of the run."""

    __slots__ = ("_client", "_done", "_error", "_ready", "_scope", "_target", "closing")

    def __init__(self, opener: Callable[[], AbstractAsyncContextManager[Any]], target: str) -> None:
        self._target = target
        self._client: Any = None
        self._error: BaseException | None = None
        self._ready = trio.Event()
        self._done = trio.Event()
        self._scope = trio.CancelScope()
        self.closing = False
        """True once it is closing or its task ended: the next lease opens a new pool."""
        trio.lowlevel.spawn_system_task(self._run, opener, name=f"mcpfsm RedisStore {target}")

    async def _run(self, opener: Callable[[], AbstractAsyncContextManager[Any]]) -> None:
        # A system task: nothing may escape it but the run's own cancellation at its end.
        try:
            with self._scope:
                async with opener() as client:
                    self._client = client
                    self._ready.set()
                    await trio.sleep_forever()
        except trio.Cancelled:
            raise
        except BaseException as exc:
            self._error = exc
        finally:
            self.closing = True
            self._client = None
            self._ready.set()
            self._done.set()

    async def opened(self, deadline: float) -> Any:
        """The coredis client, once open (waited for until ``deadline`` on trio's clock).

        Raises:
            StoreError: it did not open in time, or its task ended (its cause chained).
        """
        with trio.move_on_at(deadline):
            await self._ready.wait()
        client = self._client
        if client is not None:
            return client
        if not self._ready.is_set():
            raise StoreError(f"RedisStore: the connections to {self._target} did not open within the time allowed")
        error = self._error
        reason = type(error).__name__ if error is not None else "closed"
        raise StoreError(f"RedisStore: the connections to {self._target} ended ({reason})") from error

    async def aclose(self) -> None:
        """End the task, which closes the coredis client, and wait for it (bounded, even when cancelled)."""
        self.closing = True
        self._scope.cancel()
        with trio.CancelScope(shield=True), trio.move_on_after(_ANSWER):
            await self._done.wait()


async def _answered(request: Awaitable[T], seconds: float) -> T:
    """``await request``, or a ``StoreError`` when the server has not answered within ``seconds``."""
    with trio.move_on_after(seconds):
        return await request
    raise StoreError(f"RedisStore: the server did not answer within {seconds:g} s")


@functools.cache
def _script(text: str) -> Any:
    # One Script object per text: coredis runs it by its SHA-1 (EVALSHA) and loads it once per server.
    from coredis.commands import Script

    return Script(script=text)


def _record(text: str | bytes | None) -> tuple[str, dict[str, Any]] | None:
    if text is None:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    if (
        not isinstance(record, dict)
        or not isinstance(record.get("key"), str)
        or not isinstance(record.get("value"), dict)
    ):
        return None
    return record["key"], record["value"]


def _value_of(text: str | bytes | None, key: str) -> dict[str, Any] | None:
    record = _record(text)
    if record is None or record[0] != key:
        return None
    return record[1]


def _glob_escape(text: str) -> str:
    return "".join("\\" + char if char in "*?[]\\" else char for char in text)


def _opener(url: str) -> Callable[[], AbstractAsyncContextManager[Any]]:
    # Checks the URL now (a ValueError at construction) and returns what opens a coredis client for it.
    scheme, separator, rest = url.partition("://") if isinstance(url, str) else ("", "", "")
    if not separator or scheme.lower() not in _SCHEMES:
        raise ValueError(
            f"a RedisStore URL starts with one of {', '.join(s + '://' for s in _SCHEMES)}, got {redacted(str(url))!r}"
        )
    scheme = scheme.lower()
    tls = scheme.startswith("rediss")
    userinfo, _, remainder = rest.rpartition("@")
    hosts_text, _, path = remainder.partition("/")
    username, _, password = userinfo.partition(":")
    credentials: dict[str, Any] = {}
    if username:
        credentials["username"] = unquote(username)
    if password:
        credentials["password"] = unquote(password)
    hosts = [_host_port(part, url) for part in hosts_text.split(",") if part]
    if not hosts:
        raise ValueError(f"the RedisStore URL {redacted(url)!r} names no host")
    try:
        import coredis
    except ImportError as exc:
        raise ImportError(
            "RedisStore talks to Redis through the coredis package, which is not installed: pip install 'mcpfsm[redis]'"
        ) from exc
    if scheme in ("redis", "rediss"):

        def standalone() -> Any:  # a coredis.Redis, entered with `async with`
            return coredis.Redis.from_url(url, decode_responses=True)

        return standalone
    if scheme.endswith("+cluster"):
        nodes = [coredis.connection.TCPLocation(host, port) for host, port in hosts]

        def cluster() -> Any:  # a coredis.RedisCluster, entered with `async with`
            return coredis.RedisCluster(startup_nodes=nodes, ssl=tls, decode_responses=True, **credentials)

        return cluster
    service, _, db_text = path.partition("/")
    if not service:
        raise ValueError(f"the Sentinel URL {redacted(url)!r} names no service: redis+sentinel://HOST:PORT/SERVICE")
    database = _database(db_text, url)
    sentinels = [coredis.connection.TCPLocation(host, port) for host, port in hosts]

    @contextlib.asynccontextmanager
    async def sentinel() -> AsyncIterator[Any]:
        # Sentinels themselves usually have no password; the primary takes the URL's credentials.
        async with AsyncExitStack() as stack:
            secure: dict[str, Any] = {"ssl_context": ssl.create_default_context()} if tls else {}
            guards = await stack.enter_async_context(
                coredis.Sentinel(sentinels, decode_responses=True, sentinel_kwargs=secure)
            )
            yield await stack.enter_async_context(guards.primary_for(service, db=database, **secure, **credentials))

    return sentinel


def _host_port(text: str, url: str) -> tuple[str, int]:
    if text.startswith("["):
        host, _, port = text[1:].partition("]")
        port = port.removeprefix(":")
    else:
        host, _, port = text.partition(":")
    try:
        number = int(port) if port else 6379
    except ValueError:
        raise ValueError(f"the RedisStore URL {redacted(url)!r} has a port that is not a number") from None
    if not host or not 0 < number < 65536:
        raise ValueError(f"the RedisStore URL {redacted(url)!r} names no host, or a port out of range")
    return host, number


def _database(text: str, url: str) -> int:
    try:
        return int(text) if text else 0
    except ValueError:
        raise ValueError(f"the RedisStore URL {redacted(url)!r} has a database that is not a number") from None
