"""The response-cache layer of the session path (SEP-2549), over the pure :class:`~mcpfsm._core.cache.ResponseCache`.

One function, :func:`through`, sits between :meth:`Session.request <mcpfsm._client.session.Session.request>`
and the layer below it: a fresh entry answers without a request; otherwise the request goes down and a
result the hints allow is stored. ``fresh=True`` (``client.tools(fresh=True)``, the -32020 relist) skips the
lookup and still stores, so a bypass also refreshes. Only the modern era is cached: legacy results carry
no hints (MCP 2025-11-25). The clock is ``trio.current_time`` (monotonic), read when the answer arrives.

With ``shared`` (a client given a store of its caller's), a listing that misses in memory goes through
:class:`~mcpfsm._client.sharing.SharedListings`: the store's entry, else one fill per page across every
process that shares the store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import trio

from .._core.cache import LISTINGS, ResponseCache, cache_key
from .._core.constants import is_modern

if TYPE_CHECKING:
    from .sharing import SharedListings

__all__ = ["through"]


async def through(
    cache: ResponseCache,
    version: Callable[[], str | None],
    method: str,
    params: Mapping[str, Any] | None,
    send: Callable[[], Awaitable[dict[str, Any]]],
    *,
    fresh: bool = False,
    shared: SharedListings | None = None,
    clock: Callable[[], float] = trio.current_time,
) -> dict[str, Any]:
    """Answer from ``cache`` or through ``send()``; see the module docstring.

    ``version`` is read before the lookup and again when the answer arrives: a request that changed the
    era (a -32022 switch) is not stored under the old one.
    """
    before = version()
    key = cache_key(before, method, params) if before is not None and is_modern(before) else None
    if key is None:
        return await send()
    if not fresh:
        hit = cache.get(key, clock())
        if hit is not None:
            return hit
    if shared is not None and method in LISTINGS:
        return await shared.through(
            key, cache, send, fresh=fresh, same_era=lambda: version() == before, clock=clock
        )
    result = await send()
    if version() == before:
        cache.put(key, result, clock())
    return result
