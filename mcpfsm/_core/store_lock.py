"""The rule every store's ``lock(key, ttl, *, wait=None)`` follows (docs/stores.md), as two pure helpers.

A store bounds its own wait for a lock and raises :class:`~mcpfsm.StoreLockTimeout` past it, so that no caller
needs a cancel scope of its own around the lock (a scope that ended while the lock was held would corrupt the
task's cancel-scope stack under trio). A store of an application's own written before ``lock`` took ``wait``
is still called, as ``lock(key, ttl)``, and waited for as long as it takes (:func:`taking_lock`). Pure: no I/O.
"""

from __future__ import annotations

import inspect
from contextlib import AbstractAsyncContextManager
from typing import Any

from .errors import StoreLockTimeout

__all__ = ["check_lock", "lock_timeout", "takes_wait", "taking_lock"]


def check_lock(ttl: object, wait: object) -> None:
    """Check the arguments of :meth:`Store.lock`: ``ttl`` a positive number, ``wait`` ``None`` or at least 0.

    Raises:
        ValueError: naming the argument and the value given.
    """
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
        raise ValueError(f"ttl must be a positive number of seconds, got {ttl!r}")
    if wait is not None and (isinstance(wait, bool) or not isinstance(wait, (int, float)) or not wait >= 0):
        raise ValueError(f"wait must be None or a number of seconds of at least 0, got {wait!r}")


def lock_timeout(store: object, wait: float | None) -> StoreLockTimeout:
    """The error of a lock on ``store`` not held within ``wait`` seconds; it names no key (a key may name a URL)."""
    seconds = 0.0 if wait is None else float(wait)
    return StoreLockTimeout(
        f"{type(store).__name__}: another holder kept the lock for the {seconds:g} s this one waited", wait=seconds
    )


def taking_lock(store: Any, key: str, ttl: float, wait: float | None) -> AbstractAsyncContextManager[Any]:
    """``store.lock(key, ttl, wait=wait)``, or ``store.lock(key, ttl)`` when its ``lock`` takes no ``wait``."""
    if takes_wait(type(store)):
        return store.lock(key, ttl, wait=wait)  # type: ignore[no-any-return]
    return store.lock(key, ttl)  # type: ignore[no-any-return]


def takes_wait(kind: type) -> bool:
    """Whether ``kind.lock`` takes ``wait`` (by name, or through ``**kwargs``); asked once per type."""
    known = _TAKES_WAIT.get(kind)
    if known is None:
        try:
            parameters = inspect.signature(getattr(kind, "lock", None)).parameters  # type: ignore[arg-type]
        except (TypeError, ValueError):
            known = True
        else:
            known = "wait" in parameters or any(
                each.kind is inspect.Parameter.VAR_KEYWORD for each in parameters.values()
            )
        _TAKES_WAIT[kind] = known
    return known


_TAKES_WAIT: dict[type, bool] = {}
