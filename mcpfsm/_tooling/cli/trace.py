"""``mcpfsm trace EVENTS.jsonl``: one recorded call or input run as a Mermaid sequence diagram.

With ``--html OUT.html``, every run of the trail as one self-contained page (docs/trail-viewer.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Final

from ..diagram import GraphvizNotFound
from ..report import parse_trail, report_html
from ..trace import parse_events, run_id, select_call, sequence_diagram, servers_of, summary_by_server
from .common import CliError, Exit, os_reason, print_line, read_text
from .terminal import write

__all__ = ["configure", "run", "write_report"]

DESCRIPTION: Final = (
    "Turn one call's audit events (JSON Lines, as written by 'mcpfsm call --events' or mcpfsm.AuditLog)\n"
    "into a Mermaid sequenceDiagram: client and server, the headers on the arrows, the states as notes.\n"
    "An input run (the input rounds of prompts/get or resources/read, a legacy server request) is drawn\n"
    "the same way. A trail of a client group (events of several servers) is summarised by server, each\n"
    "run on one line, unless --call or --server picks the run to draw; --summary always summarises. A\n"
    "group member's status changes are a run of their own, group:NAME (connects, failures, reconnects).\n"
    "With --html OUT.html: every run of the trail in one self-contained page (no network, opens from disk):\n"
    "an index with filters, each run's path lit on its machine's diagram, its timeline, and a step control."
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
    parser.add_argument(
        "--html",
        metavar="OUT.html",
        help="write every run of the trail as one self-contained HTML report to OUT.html (needs Graphviz)",
    )


def run(args: argparse.Namespace) -> Exit:
    """Draw the call."""
    text = read_text(args.events, "events file")
    if args.html is not None:
        if args.call is not None or args.output is not None:
            raise CliError(Exit.usage, "--html writes every run of the trail: it takes neither --call nor --output")
        name = "stdin" if args.events == "-" else Path(args.events).name
        write_report(text, args.html, title=f"mcpfsm trail: {name}", source=args.events)
        return Exit.ok
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
        write(sys.stdout, diagram, end="")  # a trail's strings came from servers: escaped like the rest
        return Exit.ok
    try:
        Path(args.output).write_text(diagram, encoding="utf-8")
    except OSError as exc:
        raise CliError(Exit.usage, f"cannot write {args.output!r}: {os_reason(exc)}") from exc
    return Exit.ok


def write_report(text: str, output: str, *, title: str, source: str) -> None:
    """Write the HTML report of the trail ``text`` (read from ``source``) to ``output``; say where on stdout.

    Raises:
        CliError: the trail is malformed or empty (usage), Graphviz is missing, or ``output`` cannot be written.
    """
    try:
        records = parse_trail(text)
        page = report_html(records, title=title)
    except ValueError as exc:
        raise CliError(Exit.usage, f"{source}: {exc}") from exc
    except GraphvizNotFound as exc:
        raise CliError(Exit.missing_component, str(exc)) from exc
    try:
        Path(output).write_text(page, encoding="utf-8")
    except OSError as exc:
        raise CliError(Exit.usage, f"cannot write {output!r}: {os_reason(exc)}") from exc
    runs = len({run_id(record) for record in records})
    print_line(f"wrote {output}: {runs} run{'' if runs == 1 else 's'}, {len(records)} events")
