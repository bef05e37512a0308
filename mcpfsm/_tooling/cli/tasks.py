"""``mcpfsm tasks URL``: the unfinished tasks recorded for a server in the client's store, each polled once."""

from __future__ import annotations

import argparse
import json
from typing import Any, Final

import trio

from .common import Exit, add_listing_options, columns, connection_errors, make_client, print_line, target
from .task import describe

__all__ = ["DESCRIPTION", "configure", "run"]

DESCRIPTION: Final = (
    "List the unfinished tasks recorded for the server at URL in the client's store\n"
    "(client.pending_tasks()), each polled once (tasks/get) for its status: id, tool, status and\n"
    "statusMessage. The command's client keeps its store in memory, so it lists only what this run\n"
    "recorded, that is nothing, until the command can name a shared store; 'mcpfsm task URL ID'\n"
    "shows any task whose id you know."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_listing_options(parser)


def run(args: argparse.Namespace) -> Exit:
    """List the pending tasks."""
    client = make_client(args, tasks=True)

    async def listing() -> list[dict[str, Any]]:
        with connection_errors(target(args), client):
            async with client:
                pending = await client.pending_tasks()
                for task in pending:
                    await task.refresh()
                return [describe(task) for task in pending]

    tasks = trio.run(listing)
    if args.json:
        print_line(json.dumps({"tasks": tasks}, indent=2, ensure_ascii=False))
    elif not tasks:
        print_line("no pending tasks")
    else:
        rows = [
            (str(each["taskId"]), each["tool"] or "?", each["status"], each["statusMessage"] or "") for each in tasks
        ]
        print_line(columns(("ID", "TOOL", "STATUS", "MESSAGE"), rows))
    return Exit.ok
