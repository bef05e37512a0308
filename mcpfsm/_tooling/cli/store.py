"""``mcpfsm store check STORE [--server URL]``: what a shared store holds, never a secret (docs/stores.md).

Also where ``mcpfsm login --store STORE`` finds its store: :func:`open_store` reads the same ``STORE`` text.
A ``STORE`` is ``redis://…``, ``rediss://…``, ``redis+sentinel://…`` or ``redis+cluster://…`` (a
:class:`~mcpfsm.RedisStore`, key prefix ``mcpfsm:`` unless ``--prefix``), ``file:///DIR`` or a path (a
:class:`~mcpfsm.FileStore` directory; a path to an existing file is a :class:`~mcpfsm.FileTokenStore`, the
format ``mcpfsm login`` writes by default).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Final, TypeVar
from urllib.parse import unquote, urlsplit

import trio

from ..._client.file_store import FileStore
from ..._client.redis_store import RedisStore, redacted
from ..._client.stores import FileTokenStore
from ..._core.credentials import (
    legacy_binding_key,
    legacy_registration_key,
    legacy_tokens_key,
    registration_key,
    tokens_key,
)
from ..._core.errors import StoreError
from .common import CliError, Exit, columns, print_line

__all__ = [
    "DESCRIPTION",
    "add_store_option",
    "configure",
    "describe",
    "endpoint_bindings",
    "open_store",
    "opened",
    "run",
    "run_on",
]

DESCRIPTION: Final = (
    "mcpfsm store check STORE lists what a store holds, one line per entry: its kind (binding, tokens,\n"
    "registration, or what else a client keeps there), its key, when the store expires it, and what it\n"
    "is, never a token, secret or client id. --server URL keeps the entries of one MCP server: its\n"
    "bindings (one per credential), the tokens and registrations they point to. STORE is redis://, rediss://,\n"
    "redis+sentinel:// or redis+cluster:// (RedisStore), file:///DIR or a path (FileStore; an existing\n"
    "file is a FileTokenStore, the format `mcpfsm login` writes by default). Nothing is written. A store\n"
    "that does not answer within --timeout seconds (a frozen Redis, a stalled file system) is exit 4, and\n"
    "so is a file store someone else could have written (another user's directory or file, one others may\n"
    "write, a FIFO, a link or an oversized file planted in it)."
)
DEFAULT_CHECK_TIMEOUT: Final = 10.0
"""Seconds ``store check`` waits for the whole listing."""
_REDIS: Final = ("redis://", "rediss://", "redis+sentinel://", "rediss+sentinel://", "redis+cluster://", "rediss+cluster://")

Opened = FileStore | FileTokenStore | RedisStore
T = TypeVar("T")


def add_store_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--store STORE`` and ``--prefix PREFIX`` (the RedisStore key prefix)."""
    parser.add_argument("--store", metavar="STORE", help=help_text)
    parser.add_argument("--prefix", default="mcpfsm:", help="the key prefix of a Redis store (default: mcpfsm:)")


def open_store(text: str, *, prefix: str = "mcpfsm:") -> Opened:
    """The store ``text`` names (see the module's description).

    Raises:
        CliError: a URL of another scheme, or a Redis URL or prefix the store refuses (the message never
            shows a password).
    """
    lowered = text.lower()
    if lowered.startswith(_REDIS):
        try:
            return RedisStore(text, prefix=prefix)
        except (ValueError, ImportError) as exc:
            raise CliError(Exit.usage, str(exc)) from None
    if lowered.startswith("file://"):
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise CliError(Exit.usage, f"a file:// store is on this machine: file:///DIR, got {text!r}")
        return FileStore(unquote(parts.path))
    if "://" in text:
        raise CliError(
            Exit.usage,
            "a store is redis://, rediss://, redis+sentinel://, redis+cluster://, file:///DIR or a path,"
            f" got {redacted(text)!r}",
        )
    path = Path(text).expanduser()
    return FileTokenStore(path) if path.is_file() else FileStore(path)


def describe(store: Opened) -> str:
    """Where ``store`` is, for a message: the path, or the Redis URL without its password."""
    if isinstance(store, RedisStore):
        return f"{store.location} (prefix {store.prefix})"
    return str(store.path)


@contextlib.asynccontextmanager
async def opened(store: Opened) -> AsyncIterator[Opened]:
    """``store`` ready for use: a RedisStore entered (its connections open), a file store as it is."""
    if isinstance(store, RedisStore):
        async with store:
            yield store
    else:
        yield store


def run_on(store: Opened, work: Callable[[], Awaitable[T]]) -> T:
    """``trio.run(work)``; a store that fails (``OSError``, coredis' errors) is one error line, exit 4.

    Raises:
        CliError: the store failed; the message names it (without a password) and the kind of failure.
    """
    try:
        return trio.run(work)
    except CliError:
        raise
    except Exception as exc:  # OSError, coredis' ConnectionError, TimeoutError, AuthenticationError, ...
        if isinstance(exc, StoreError):
            # mcpfsm's own words (a refused path), never a value.
            raise CliError(Exit.unreachable, f"cannot use the store {describe(store)}: {exc}") from None
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise CliError(Exit.unreachable, f"cannot use the store {describe(store)}: {reason}") from None


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``check`` action and its arguments."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="list what a store holds, without secrets",
        description="List what a store holds, one line per entry, without a token, secret or client id.",
    )
    check.add_argument("store", metavar="STORE", help="redis://…, rediss://…, file:///DIR or a path")
    check.add_argument("--server", metavar="URL", help="only what is kept for this MCP endpoint")
    check.add_argument("--prefix", default="mcpfsm:", help="the key prefix of a Redis store (default: mcpfsm:)")
    check.add_argument("--json", action="store_true", help="the entries as a JSON array")
    check.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_CHECK_TIMEOUT,
        metavar="SECONDS",
        help=f"how long the store may take to list its entries (default: {DEFAULT_CHECK_TIMEOUT:g})",
    )


def run(args: argparse.Namespace) -> Exit:
    """List the entries."""
    if not args.timeout > 0:
        raise CliError(Exit.usage, f"--timeout must be a positive number of seconds, got {args.timeout:g}")
    store = open_store(args.store, prefix=args.prefix)

    async def read() -> list[tuple[str, dict[str, Any], float | None]]:
        # The bound encloses the store's whole context (its connections open and close inside it).
        try:
            with trio.fail_after(args.timeout):
                async with opened(store):
                    return await store.entries()
        except trio.TooSlowError:
            raise CliError(
                Exit.unreachable, f"the store {describe(store)} did not answer within {args.timeout:g} s"
            ) from None

    entries = run_on(store, read)
    if args.server is not None:
        entries = _of_server(entries, args.server)
    now = time.time()
    rows = [_row(key, value, ttl, now) for key, value, ttl in entries]
    if args.json:
        fields = ("kind", "key", "expires", "what")
        print_line(json.dumps([dict(zip(fields, row, strict=True)) for row in rows], indent=1))
        return Exit.ok
    if not rows:
        where = f" for {_shown(args.server)}" if args.server is not None else ""
        print_line(f"{describe(store)}: nothing stored{where}")
        return Exit.ok
    print_line(columns(("KIND", "KEY", "EXPIRES", "WHAT"), rows))
    return Exit.ok


def endpoint_bindings(values: dict[str, dict[str, Any]], url: str) -> dict[str, tuple[str, ...]]:
    """Every binding of the MCP endpoint ``url`` among ``values`` (by key), each with the keys it points to.

    One binding per credential holder (``binding URL HOLDER``) and one an earlier mcpfsm wrote without a holder
    (``binding URL``); each points to its tokens and its registration with the issuer it names.
    """
    found: dict[str, tuple[str, ...]] = {}
    for key, value in values.items():
        if key == legacy_binding_key(url):
            holder = None
        elif key.startswith(f"binding {url} ") and " " not in key[len(f"binding {url} ") :]:
            holder = key[len(f"binding {url} ") :]
        else:
            continue
        issuer, resource = value.get("issuer"), value.get("resource")
        if not isinstance(issuer, str):
            found[key] = ()
            continue
        resource = resource if isinstance(resource, str) else None
        if holder is None:
            found[key] = (legacy_tokens_key(issuer, resource), legacy_registration_key(issuer))
        else:
            found[key] = (tokens_key(issuer, resource, holder), registration_key(issuer, holder))
    return found


def _of_server(
    entries: list[tuple[str, dict[str, Any], float | None]], url: str
) -> list[tuple[str, dict[str, Any], float | None]]:
    bindings = endpoint_bindings({key: value for key, value, _ in entries}, url)
    wanted = set(bindings).union(*bindings.values())
    return [entry for entry in entries if entry[0] in wanted or (url in entry[0].split(" "))]


def _row(key: str, value: dict[str, Any], ttl: float | None, now: float) -> tuple[str, str, str, str]:
    kind, _, rest = key.partition(" ")
    expires = "never" if ttl is None else f"in {_span(ttl)}"
    return kind, _shown(rest), expires, _what(kind, value, now)


def _what(kind: str, value: dict[str, Any], now: float) -> str:
    # Says what an entry is from the fields that are no secret; a token, a secret or a client id never shows.
    if kind == "binding":
        return f"issuer {_shown(str(value.get('issuer')))}, resource {_shown(str(value.get('resource') or '-'))}"
    if kind == "tokens":
        expires_at = value.get("expires_at")
        if not isinstance(expires_at, int | float):
            access = "access token without expiry"
        elif expires_at > now:
            access = f"access token expires in {_span(expires_at - now)}"
        else:
            access = f"access token expired {_span(now - expires_at)} ago"
        refresh = "refresh token held" if value.get("refresh_token") else "no refresh token"
        scopes = value.get("scopes")
        scope_text = " ".join(str(s) for s in scopes) if isinstance(scopes, list) and scopes else "none"
        return f"{access}, {refresh}, scopes: {scope_text}"
    if kind == "registration":
        method = value.get("token_endpoint_auth_method")
        secret = "confidential" if value.get("client_secret") else "public"
        return f"client registered ({secret}, {method})"
    return f"fields: {', '.join(sorted(value)) or 'none'}"


def _span(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    if seconds < 172800:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} d"


def _shown(text: str) -> str:
    # The URLs of a key without what could be a secret: a password, a query, a fragment.
    shown = []
    for word in text.split(" "):
        if "://" in word:
            scheme, _, rest = word.partition("://")
            authority, slash, path = rest.partition("/")
            path = path.split("?")[0].split("#")[0]
            hidden = "?…" if "?" in rest or "#" in rest else ""
            word = f"{scheme}://{authority.rpartition('@')[2].split('?')[0].split('#')[0]}{slash}{path}{hidden}"
        shown.append(word)
    return " ".join(shown)
