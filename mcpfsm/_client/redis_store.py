"""A store on Redis or Valkey, shared by every process on every machine that names it (docs/stores.md).

:class:`RedisStore` talks to the server through ``coredis`` (the ``redis`` extra: ``pip install
'mcpfsm[redis]'``), an anyio client that runs under trio as it is. One URL names the deployment:

- ``redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`` and ``rediss://…`` (TLS): one server;
- ``redis+sentinel://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT…]/SERVICE[/DB]`` (and ``rediss+sentinel://``):
  the primary that the Sentinels name for ``SERVICE``, found again after a failover;
- ``redis+cluster://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT…]`` (and ``rediss+cluster://``): a Redis Cluster,
  discovered from those nodes.

Every key it writes is ``prefix`` then the SHA-256 of the store key in hex (``prefix`` then ``lock:`` and that
hash for a lock), so nothing a key names, not even an MCP URL with a token in its query, reaches the key
space; the store key itself is kept inside the value, as JSON ``{"key": …, "value": …}``, for ``mcpfsm
store check``. ``lock`` is coredis' lock recipe (``SET NX PX`` with a random token, released by a Lua script
that deletes the key only while it still holds that token: the single-instance algorithm of Redis'
"Distributed locks" page); ``compare_and_delete`` is one Lua script, so it is atomic against every writer.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote

import trio

from .._log import logger

if TYPE_CHECKING:
    from coredis import Redis, RedisCluster

__all__ = ["RedisStore", "redacted"]

_SCHEMES: Final = ("redis", "rediss", "redis+sentinel", "rediss+sentinel", "redis+cluster", "rediss+cluster")
_LOCK_POLL: Final = 0.01
"""Seconds between two tries of a lock another process holds (coredis' recipe polls ``SET NX``)."""
_RELEASE_TIMEOUT: Final = 2.0

_COMPARE_AND_DELETE: Final = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    redis.call('del', KEYS[1])
    return 1
end
return 0
"""


def redacted(url: str) -> str:
    """``url`` without its password (``redis://user:***@host``), for messages and ``repr``."""
    scheme, separator, rest = url.partition("://")
    userinfo, at, hosts = rest.rpartition("@")
    if not separator or not at:
        return url
    user = userinfo.partition(":")[0]
    return f"{scheme}://{user}:***@{hosts}"


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

    Enter it (``async with RedisStore(url) as store:``) around the clients that use it to keep its
    connections open for all of them; a store that is not entered opens a connection per operation.
    Values are JSON text. Operations raise coredis' errors (``ConnectionError``, ``TimeoutError``, …) when
    the server fails; a client that uses the store bounds each one and falls back to memory for a while
    (docs/stores.md, "When the store fails"). Neither ``repr`` nor any message shows the URL's password.

    Raises:
        ValueError: neither or both of ``url`` and ``client``, a URL of another scheme, a Sentinel URL
            without a service name, a URL without a host, or an empty ``prefix``.
        ImportError: ``coredis`` is not installed; the message says how to install it.
    """

    __slots__ = ("_client", "_open", "_stack", "_target", "prefix")

    def __init__(
        self, url: str | None = None, *, prefix: str = "mcpfsm:", client: Redis[Any] | RedisCluster[Any] | None = None
    ) -> None:
        """Check the URL and prepare the connection; nothing is sent until the first operation."""
        if not isinstance(prefix, str) or not prefix:
            raise ValueError("prefix must be a non-empty string")
        self.prefix = prefix
        self._client: Any = None
        self._stack: AsyncExitStack | None = None
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
        """The Redis key of ``key``'s lock: ``prefix``, ``lock:``, then the SHA-256 of ``key`` in hex."""
        return self.prefix + "lock:" + hashlib.sha256(key.encode("utf-8")).hexdigest()

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
            deleted = await _compare_and_delete_script().execute(
                keys=[self.key_of(key)], args=[expected_text], client=redis
            )
        return bool(deleted)

    @contextlib.asynccontextmanager
    async def lock(self, key: str, ttl: float) -> AsyncIterator[None]:
        """Hold ``key`` against every other holder on this server, in any process on any machine.

        The lock expires ``ttl`` seconds after it was taken, so a holder that dies (or hangs) excludes
        others at most that long. A holder whose ``ttl`` ran out before it left is told with one WARNING
        (another process may have taken the lock meanwhile).
        """
        if not ttl > 0:
            raise ValueError(f"ttl must be a positive number of seconds, got {ttl!r}")
        from coredis.exceptions import LockReleaseError
        from coredis.patterns.lock import Lock

        async with self._connection() as redis:
            lock = Lock(redis, self.lock_key_of(key), timeout=ttl, sleep=min(_LOCK_POLL, ttl / 2))
            await lock.acquire()
            try:
                yield
            finally:
                with trio.move_on_after(_RELEASE_TIMEOUT, shield=True):
                    try:
                        await lock.release()
                    except LockReleaseError:
                        logger.warning("a store lock expired before its holder released it (ttl {} s)", ttl)

    async def entries(self) -> list[tuple[str, dict[str, Any], float | None]]:
        """Every key under ``prefix`` with its value and seconds to live (``None``: no expiry); locks left out."""
        found: list[tuple[str, dict[str, Any], float | None]] = []
        async with self._connection() as redis:
            async for name in redis.scan_iter(match=_glob_escape(self.prefix) + "*"):
                # A client= built without decode_responses answers bytes.
                if (name.decode() if isinstance(name, bytes) else name).startswith(self.prefix + "lock:"):
                    continue
                text = await redis.get(name)
                record = _record(text)
                if record is None:
                    continue
                ttl_ms = await redis.pttl(name)
                found.append((record[0], record[1], ttl_ms / 1000 if ttl_ms >= 0 else None))
        return sorted(found, key=lambda entry: entry[0])

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        if self._client is not None:
            yield self._client
            return
        try:
            async with self._open() as redis:
                yield redis
        except BaseExceptionGroup as group:
            # A client opened for one operation runs its connection in a task group of its own; its one
            # failure (a ConnectionError, say) is the operation's.
            leaves = _leaves(group)
            if len(leaves) == 1:
                raise leaves[0] from None
            raise


@functools.cache
def _compare_and_delete_script() -> Any:
    # One Script object: coredis runs it by its SHA-1 (EVALSHA) and loads it once per server.
    from coredis.commands import Script

    return Script(script=_COMPARE_AND_DELETE)


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        found.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found


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
