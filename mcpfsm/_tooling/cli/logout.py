"""``mcpfsm logout URL``: forget the tokens stored for a server."""

from __future__ import annotations

import argparse
from typing import Final

from ..._client.stores import FileTokenStore, default_token_path
from .common import Exit, print_line
from .store import add_store_option, describe, endpoint_bindings, open_store, opened, run_on

__all__ = ["configure", "run"]

DESCRIPTION: Final = (
    "Delete the tokens `mcpfsm login` stored for URL from the user's configuration directory, those of\n"
    "every credential that logged in to it. The client registration made with the authorization server\n"
    "stays (it identifies mcpfsm, not the user), so the next login does not register again. Nothing is\n"
    "sent to the server. --store forgets them in the shared store `mcpfsm login --store` wrote them to."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    parser.add_argument("url", metavar="URL", help="the MCP endpoint, as given to `mcpfsm login`")
    add_store_option(parser, "the shared store the login went to: redis://…, file:///DIR or a path (docs/stores.md)")


def run(args: argparse.Namespace) -> Exit:
    """Forget the stored tokens."""
    store = FileTokenStore(default_token_path()) if args.store is None else open_store(args.store, prefix=args.prefix)
    path = describe(store)

    async def logout() -> bool:
        async with opened(store):
            # Every credential's binding of the URL, and the tokens each points to (never a registration).
            values = {key: value for key, value, _ in await store.entries()}
            bindings = endpoint_bindings(values, args.url)
            for key, pointed in bindings.items():
                for target in pointed[:1]:
                    await store.delete(target)
                await store.delete(key)
            return bool(bindings)

    if run_on(store, logout):
        print_line(f"logged out of {args.url}: its tokens were removed from {path}")
    else:
        print_line(f"{args.url}: no tokens stored in {path}")
    return Exit.ok
