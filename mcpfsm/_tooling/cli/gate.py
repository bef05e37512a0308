"""``mcpfsm gate --upstream URL``: a validating reverse proxy in front of an MCP server in any language."""

from __future__ import annotations

import argparse
import signal
from typing import Final

import trio

from ..._core.gate import DEFAULT_MAX_BODY
from .common import CliError, Exit, print_line
from .store import add_store_option, describe, open_store, opened

__all__ = ["DESCRIPTION", "configure", "run"]

DESCRIPTION: Final = (
    "Serve a reverse proxy that checks, on every request to the upstream MCP server, that the Mcp-Method,\n"
    "Mcp-Name and Mcp-Param-* headers say what the body says (2026-07-28, SEP-2243), and refuses a request\n"
    "whose headers lie (HTTP 400, JSON-RPC -32020) before it reaches the server (docs/gate.md). It learns each\n"
    "tool's schema from the tools/list answers that pass through it (and fetches one when a call names a tool\n"
    "it does not know), forwards through mcpfsm's connection pool and streams event streams through.\n"
    "Served by Hypercorn (the gate extra: pip install 'mcpfsm[gate]'). Once it accepts connections it prints\n"
    "one line 'READY http://HOST:PORT/PATH' on stdout, PATH the upstream's; it runs until Ctrl-C or SIGTERM."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    parser.add_argument(
        "--upstream", required=True, metavar="URL", help="the MCP server to protect (http:// or https://)"
    )
    parser.add_argument(
        "--listen",
        default="127.0.0.1:0",
        metavar="HOST:PORT",
        help="where to listen (default 127.0.0.1:0, a free port)",
    )
    parser.add_argument(
        "--mode",
        choices=("verify", "report"),
        default="verify",
        help="verify: refuse a mismatch (default); report: forward it and count it (a rollout)",
    )
    parser.add_argument(
        "--on-unknown",
        choices=("fetch", "pass", "reject"),
        default="fetch",
        help="a call to a tool whose schema is unknown: fetch tools/list (default), pass with the standard"
        " headers checked, or reject",
    )
    parser.add_argument(
        "--legacy",
        choices=("strip", "pass", "reject"),
        default="strip",
        help="a legacy (2025-11-25) request: forward it without Mcp-Param-* headers (default), as is, or refuse it",
    )
    parser.add_argument("--schemas", metavar="FILE", help="a saved tools/list result: schemas known from the start")
    parser.add_argument(
        "--max-body",
        type=_size,
        default=DEFAULT_MAX_BODY,
        metavar="BYTES",
        help=f"the largest request body (default {DEFAULT_MAX_BODY}: 4 MiB; 413 beyond)",
    )
    parser.add_argument(
        "--learn-ttl",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="how long a listing without ttlMs is kept (default 3600)",
    )
    parser.add_argument(
        "--events", metavar="FILE", help="append every request's audit events (GateEvent) to FILE as JSON Lines"
    )
    add_store_option(
        parser,
        "share learned schemas with every gate on this store, so a fleet fetches each listing once per TTL:"
        " redis://…, rediss://…, file:///DIR or a directory (docs/stores.md)",
    )


def _size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of bytes: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a number of bytes: {text!r}")
    return value


def _listen(text: str) -> tuple[str, int]:
    host, separator, port = text.rpartition(":")
    host = host.strip("[]")
    if not separator or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise CliError(Exit.usage, f"--listen takes HOST:PORT (port 0: a free one), got {text!r}")
    return host, int(port)


def run(args: argparse.Namespace) -> Exit:
    """Serve the gate until interrupted."""
    from ..._gate.forward import Forwarder
    from ..._gate.middleware import HeaderGate
    from ..._gate.serve import serve

    host, port = _listen(args.listen)
    try:
        forwarder = Forwarder(args.upstream)
    except ValueError as exc:
        raise CliError(Exit.bad_url, str(exc)) from None
    store = open_store(args.store, prefix=args.prefix) if args.store is not None else None
    events = None
    if args.events is not None:
        from ..._drivers.audit_log import AuditLog

        try:
            events = AuditLog(args.events)
        except OSError as exc:
            raise CliError(Exit.usage, f"cannot write events to {args.events!r}: {exc.strerror or exc}") from None
    try:
        gate = HeaderGate(
            forwarder,
            mode=args.mode,
            on_unknown=args.on_unknown,
            schemas=args.schemas,
            store=store,
            legacy=args.legacy,
            max_body=args.max_body,
            learn_ttl=args.learn_ttl,
            on_event=events,
        )
    except (ValueError, OSError) as exc:
        raise CliError(Exit.usage, str(exc)) from None

    def ready(origin: str) -> None:
        print_line(f"READY {origin}{forwarder.path}")

    async def shutdown() -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                return

    async def main() -> None:
        if store is None:
            await serve(gate, host=host, port=port, ready=ready, shutdown=shutdown)
            return
        try:
            async with opened(store):
                await serve(gate, host=host, port=port, ready=ready, shutdown=shutdown)
        except OSError:
            raise
        except Exception as exc:  # coredis' ConnectionError, AuthenticationError, ...
            raise CliError(Exit.unreachable, f"cannot use the store {describe(store)}: {type(exc).__name__}") from None

    try:
        trio.run(main)
    except ImportError as exc:
        raise CliError(Exit.missing_component, str(exc)) from None
    except OSError as exc:
        raise CliError(Exit.unreachable, f"cannot listen on {args.listen}: {exc.strerror or exc}") from None
    return Exit.ok
