"""``mcpfsm trace EVENTS.jsonl``: one recorded call or input run as a Mermaid sequence diagram."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Final

from ..trace import parse_events, select_call, sequence_diagram, servers_of, summary_by_server
from .common import CliError, Exit, os_reason, read_text

__all__ = ["NAME", "configure", "run"]

NAME: Final = "trace"
SUMMARY: Final = "draw a recorded call or input run as a Mermaid sequence diagram"
DESCRIPTION: Final = (
    "Turn one call's audit events (JSON Lines, as written by 'mcpfsm call --events' or mcpfsm.AuditLog)\n"
    "into a Mermaid sequenceDiagram: client and server, the headers on the arrows, the states as notes.\n"
    "An input run (the input rounds of prompts/get or resources/read, a legacy server request) is drawn\n"
    "the same way. A trail of a client group (events of several servers) is summarised by server, each\n"
    "run on one line, unless --call or --server picks the run to draw; --summary always summarises."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    parser.add_argument("events", metavar="EVENTS.jsonl", help="the events file ('-': stdin)")
    parser.add_argument(
        "--call", metavar="CALL_ID", help="the call or input run to draw (default: the last one in the file)"
    )
    parser.add_argument(
        "--server", metavar="NAME", help="only the runs of this server of a client group (the last one is drawn)"
    )
    parser.add_argument("--summary", action="store_true", help="list the runs grouped by server instead of drawing")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the diagram to FILE instead of stdout")


def run(args: argparse.Namespace) -> Exit:
    """Draw the call."""
    text = read_text(args.events, "events file")
    try:
        recorded = parse_events(text)
        summarise = args.summary or (args.call is None and args.server is None and len(servers_of(recorded)) > 1)
        if summarise:
            diagram = summary_by_server(
                [event for event in recorded if args.server is None or event.server == args.server]
            )
        else:
            diagram = sequence_diagram(select_call(recorded, args.call, server=args.server))
    except ValueError as exc:
        raise CliError(Exit.usage, f"{args.events}: {exc}") from exc
    if args.output is None:
        sys.stdout.write(diagram)
        sys.stdout.flush()
        return Exit.ok
    try:
        Path(args.output).write_text(diagram, encoding="utf-8")
    except OSError as exc:
        raise CliError(Exit.usage, f"cannot write {args.output!r}: {os_reason(exc)}") from exc
    return Exit.ok
