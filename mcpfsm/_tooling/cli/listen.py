"""``mcpfsm listen URL``: the server's change notifications as JSON Lines, until interrupted."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Final

import trio

from .common import Exit, add_server_options, connection_errors, make_client, print_line, target
from .terminal import write

__all__ = ["DESCRIPTION", "configure", "run"]

DESCRIPTION: Final = (
    "Subscribe to a server's change notifications and print each as one JSON line\n"
    '{"method": ..., "params": ...} on stdout until Ctrl-C (then exit 0). The 2026-07-28 era uses\n'
    "subscriptions/listen; the legacy era the standalone GET stream plus resources/subscribe per --uri.\n"
    "Without --tools/--prompts/--resources/--uri it asks for every list_changed notification.\n"
    "Once subscribed, one line 'mcpfsm: listening: {acknowledged subset}' goes to stderr. Ctrl-C ends\n"
    "the subscription and the session (a second Ctrl-C meanwhile changes nothing); started with SIGINT\n"
    "ignored (nohup, a background job), it listens until the server ends the subscription."
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
    interrupt = _Interrupt()

    async def listen() -> None:
        with interrupt.scope() as scope:
            if scope.cancel_called:
                return
            with connection_errors(target(args), client):
                async with client, client.listen(
                    tools=args.tools or every,
                    prompts=args.prompts or every,
                    resources=args.resources or every,
                    resource_uris=args.uri,
                ) as subscription:
                    write(sys.stderr, f"mcpfsm: listening: {json.dumps(subscription.acknowledged)}")
                    async for notification in subscription:
                        print_line(json.dumps({"method": notification.method, "params": notification.params}))

    with interrupt.installed():
        trio.run(listen)
    return Exit.ok


class _Interrupt:
    """Ctrl-C ends a listen cleanly: the first SIGINT cancels it, and every later one is ignored.

    The listen then leaves its subscription and ends the session (bounded, as ``Client.aclose``) and the command
    exits 0, however many times the user pressed Ctrl-C. The first SIGINT sets the signal's disposition to
    ignored, so a second one during the shutdown, or during the interpreter's exit (which restores the default
    disposition of a signal that has a Python handler), cannot end the process with 130. A command started with
    SIGINT ignored (``nohup``, a background job of a non-interactive shell) keeps it ignored: it listens until the
    server ends the subscription or a SIGTERM.
    """

    def __init__(self) -> None:
        self._token: trio.lowlevel.TrioToken | None = None
        self._scope: trio.CancelScope | None = None
        self._pending = False

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            yield  # ignored, or a handler of the embedding program's: theirs to keep
            return
        signal.signal(signal.SIGINT, self._received)
        try:
            yield
        finally:
            if signal.getsignal(signal.SIGINT) == self._received:
                signal.signal(signal.SIGINT, signal.default_int_handler)

    @contextlib.contextmanager
    def scope(self) -> Iterator[trio.CancelScope]:
        with trio.CancelScope() as scope:
            self._token, self._scope = trio.lowlevel.current_trio_token(), scope
            if self._pending:
                scope.cancel()
            try:
                yield scope
            finally:
                self._token = self._scope = None

    def _received(self, signum: int, frame: FrameType | None) -> None:
        # A Python signal handler runs in the main thread between two bytecodes, so it only asks trio to cancel.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        self._pending = True
        if self._token is not None and self._scope is not None:
            self._token.run_sync_soon(self._scope.cancel)
