"""``mcpfsm replay PATH [--port N | --stdio]``: a recorded session served to any client (docs/testing.md)."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Final

import trio

from ..._core.errors import CassetteError
from ..._core.faults import Fault, delay, drop_after_request, http_error, mismatch_once, session_expired
from ..._core.replay import MODES, ReplayBook
from ...testing._cassettes import book_for
from ...testing._serve import run_http
from ...testing._stdio import run_stdio
from .common import CliError, Exit, os_reason, print_line
from .terminal import write

__all__ = ["DESCRIPTION", "configure", "parse_fault", "run"]

DESCRIPTION: Final = (
    "Serve a cassette (recorded with --record, Client(..., record=PATH) or the pytest plugin) as an MCP\n"
    "server, in the era it was recorded in, so that any client (the official SDKs, a TypeScript agent) can\n"
    "be tested against it. Over HTTP (the default, a cassette recorded from a URL) it listens on\n"
    "127.0.0.1 (--port, default a free one) and prints 'READY http://127.0.0.1:PORT/mcp' as its first line.\n"
    "With --stdio (a cassette recorded from a command) it speaks newline-delimited JSON-RPC on stdin and\n"
    "stdout, printing nothing on stdout before the first answer; its READY line goes to stderr.\n"
    "Requests match recorded exchanges by method and params (--strict: also in the recorded order); what\n"
    "matches nothing gets -32603 'no recorded exchange for ...'. --fault makes something go wrong on\n"
    "purpose (repeatable; each fires once):\n"
    "  mismatch_once:TOOL          -32020 on TOOL's next call, then a listing that makes the client retry\n"
    "  drop_after_request:METHOD   read the next METHOD request, then close the connection unanswered\n"
    "  delay:METHOD:SECONDS        hold back the answer to the next METHOD request\n"
    "  http_error:METHOD:STATUS    answer the next METHOD request with HTTP STATUS and no body\n"
    "  session_expired:AFTER       404 on the session after AFTER requests\n"
    "It runs until Ctrl-C or SIGTERM (exit 0), or with --stdio until its input ends."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    parser.add_argument("cassette", metavar="PATH", help="the cassette (JSON Lines) to serve")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--port", type=int, default=None, metavar="N", help="listen on 127.0.0.1:N (default: free)")
    where.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (a cassette recorded over stdio)")
    parser.add_argument("--strict", action="store_true", help="also require the recorded order of requests")
    parser.add_argument(
        "--fault", action="append", default=[], metavar="KIND:ARGS", help="inject a fault (see above; repeatable)"
    )


def parse_fault(text: str) -> Fault:
    """One ``--fault`` value as a :class:`~mcpfsm.testing.Fault`.

    Raises:
        CliError: the kind is unknown or its arguments are malformed (a usage error).
    """
    kind, _, rest = text.partition(":")
    try:
        if kind == "mismatch_once" and rest:
            return mismatch_once(rest)
        if kind == "drop_after_request" and rest:
            return drop_after_request(rest)
        if kind == "delay":
            method, _, seconds = rest.rpartition(":")
            return delay(method, float(seconds))
        if kind == "http_error":
            method, _, status = rest.rpartition(":")
            return http_error(method, int(status))
        if kind == "session_expired":
            return session_expired(after=int(rest or "0"))
    except ValueError as exc:
        raise CliError(Exit.usage, f"--fault {text!r}: {exc}") from exc
    raise CliError(
        Exit.usage,
        f"--fault {text!r}: expected mismatch_once:TOOL, drop_after_request:METHOD, delay:METHOD:SECONDS,"
        " http_error:METHOD:STATUS or session_expired:AFTER",
    )


def run(args: argparse.Namespace) -> Exit:
    """Serve the cassette until interrupted (HTTP) or until the input ends (stdio)."""
    if args.port is not None and not 0 <= args.port <= 65535:
        raise CliError(Exit.usage, f"--port must be 0 to 65535, got {args.port}")
    faults = [parse_fault(text) for text in args.fault]
    try:
        book = book_for(
            args.cassette, mode=MODES[1] if args.strict else MODES[0], faults=faults,
            transport="stdio" if args.stdio else "http",
        )
    except CassetteError as exc:
        raise CliError(Exit.usage, str(exc)) from exc
    except ValueError as exc:
        raise CliError(Exit.usage, str(exc)) from exc
    if args.stdio:
        trio.run(_stdio, book)
        return Exit.ok
    trio.run(_http, book, args.port or 0)
    return Exit.ok


async def _stdio(book: ReplayBook) -> None:
    def ready() -> None:
        write(sys.stderr, f"READY stdio {book.cassette.source}")  # the source is the cassette file's text

    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_stop_on_signal, scope)
            await run_stdio(book, ready=ready)
            nursery.cancel_scope.cancel()


async def _http(book: ReplayBook, port: int) -> None:
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_stop_on_signal, scope)
            try:
                await run_http(book, port=port, ready=lambda url: print_line(f"READY {url}"))
            except OSError as exc:
                raise CliError(Exit.usage, f"cannot listen on 127.0.0.1:{port}: {os_reason(exc)}") from exc


async def _stop_on_signal(scope: trio.CancelScope) -> None:
    # SIGTERM and Ctrl-C end a replay server cleanly (exit 0), as they end the test peers.
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return
