"""``mcpfsm listen URL``: the server's change notifications as JSON Lines, until interrupted."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Final

import trio

from .common import Exit, add_server_options, connection_errors, leaf, make_client, print_line, target

__all__ = ["DESCRIPTION", "configure", "run"]

DESCRIPTION: Final = (
    "Subscribe to a server's change notifications and print each as one JSON line\n"
    '{"method": ..., "params": ...} on stdout until Ctrl-C (then exit 0). The 2026-07-28 era uses\n'
    "subscriptions/listen; the legacy era the standalone GET stream plus resources/subscribe per --uri.\n"
    "Without --tools/--prompts/--resources/--uri it asks for every list_changed notification.\n"
    "Once subscribed, one line 'mcpfsm: listening: {acknowledged subset}' goes to stderr."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_server_options(parser)
    parser.add_argument("--tools", action="store_true", help="notifications/tools/list_changed")
    parser.add_argument("--prompts", action="store_true", help="notifications/prompts/list_changed")
    parser.add_argument("--resources", action="store_true", help="notifications/resources/list_changed")
    parser.add_argument(
        "--uri", action="append", default=[], metavar="URI", help="notifications/resources/updated of URI (repeatable)"
    )


def run(args: argparse.Namespace) -> Exit:
    """Listen until interrupted or until the server ends the subscription."""
    every = not (args.tools or args.prompts or args.resources or args.uri)
    client = make_client(args)

    async def listen() -> None:
        with connection_errors(target(args), client):
            async with client, client.listen(
                tools=args.tools or every,
                prompts=args.prompts or every,
                resources=args.resources or every,
                resource_uris=args.uri,
            ) as subscription:
                sys.stderr.write(f"mcpfsm: listening: {json.dumps(subscription.acknowledged)}\n")
                sys.stderr.flush()
                async for notification in subscription:
                    print_line(json.dumps({"method": notification.method, "params": notification.params}))

    try:
        trio.run(listen)
    except BaseException as exc:
        # Ctrl-C is how a listen ends (trio may deliver it wrapped in an exception group).
        if not isinstance(leaf(exc), KeyboardInterrupt):
            raise
    return Exit.ok
