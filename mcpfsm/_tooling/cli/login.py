"""``mcpfsm login URL``: log in to a protected MCP server in the browser and store its tokens."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Final

import trio

from ..._client.client import Client
from ..._client.stores import default_token_path
from ..._core.credentials import OAuth, binding_key, credential_holder
from ..._core.events import CallEvent
from ..._core.events.authorization import AuthEvent
from .common import (
    PROTOCOLS,
    CliError,
    Exit,
    add_http_options,
    connection_errors,
    header_pairs,
    positive,
    print_line,
    refused_options,
    tls_verify,
)
from .credentials import add_login_options, auth_from
from .store import add_store_option, describe, open_store, opened, run_on

__all__ = ["configure", "run"]

DESCRIPTION: Final = (
    "Connect to URL; when the server asks for authorization, run the OAuth 2.1 login: the URL to open is\n"
    "printed (and opened in the browser), then the browser's redirect is received on --redirect-uri.\n"
    "The tokens are stored in the user's configuration directory, where every other command finds\n"
    "them for URL (--auth oauth, the default). Stored tokens the server still accepts are kept as they are.\n"
    "--store keeps them in a shared store instead (redis://..., file:///DIR or a path), where every worker\n"
    "that names the same store (Client.http(url, store=...)) finds them: one login for a fleet."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    parser.add_argument("url", metavar="URL", help="the MCP endpoint, e.g. https://example.com/mcp")
    parser.add_argument("--protocol", choices=PROTOCOLS, default="auto", help="protocol version to pin (default: auto)")
    parser.add_argument("--timeout", type=positive, metavar="SECONDS", help="HTTP timeout (default: 30 s, read 300 s)")
    add_http_options(parser)
    add_login_options(parser)
    add_store_option(
        parser, "keep the tokens in this shared store: redis://…, rediss://…, file:///DIR or a path (docs/stores.md)"
    )


def run(args: argparse.Namespace) -> Exit:
    """Log in."""
    args.auth = "oauth"
    events: list[AuthEvent] = []

    def keep(event: CallEvent) -> None:
        if isinstance(event, AuthEvent):
            events.append(event)

    headers = header_pairs(args.header)
    if any(name.lower() == "authorization" for name in headers):
        raise CliError(Exit.usage, "login runs the OAuth login: --header Authorization would send other credentials")
    shared = open_store(args.store, prefix=args.prefix) if args.store is not None else None
    with refused_options():
        auth = auth_from(args)
        if shared is not None and isinstance(auth, OAuth):
            auth = dataclasses.replace(auth, store=shared)
        client = Client.http(
            args.url,
            headers=headers,
            protocol=args.protocol,
            timeout=args.timeout,
            auth=auth,
            verify=tls_verify(args),
            on_event=keep,
        )

    async def login() -> None:
        if shared is None:
            with connection_errors(args.url):
                async with client:
                    pass
            return
        async with opened(shared):
            # The store answers before anyone logs in: a login whose tokens could not be kept is no login.
            await shared.get(binding_key(args.url, credential_holder(auth) if isinstance(auth, OAuth) else "-"))
            with connection_errors(args.url):
                async with client:
                    pass

    if shared is None:
        trio.run(login)
    else:
        run_on(shared, login)
        if client.store_fallbacks:
            raise CliError(
                Exit.unreachable, f"the store {describe(shared)} failed during the login: the tokens are not stored"
            )
    granted = [event for event in events if event.state == "authorized"]
    if not granted and not events:
        print_line(f"{args.url}: no login needed (the server accepted the stored token, or asks for none)")
        return Exit.ok
    last = granted[-1]
    scopes = " ".join(last.scopes) or "none asked for"
    print_line(
        f"logged in to {args.url} (issuer {last.issuer}, scopes: {scopes}); tokens stored in"
        f" {describe(shared) if shared is not None else default_token_path()}"
    )
    return Exit.ok
