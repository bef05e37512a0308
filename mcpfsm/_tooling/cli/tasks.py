"""``mcpfsm tasks URL``: the unfinished tasks recorded for a server in the client's store, each polled once."""

from __future__ import annotations

import argparse
import json
from typing import Any, Final

import trio

from .common import Exit, add_listing_options, columns, connection_errors, make_client, print_line, target
from .task import add_task_store_option, client_store, entered, shared_store, task_fields

__all__ = ["DESCRIPTION", "configure", "run"]

DESCRIPTION: Final = (
    "List the unfinished tasks recorded for the server at URL in the store --store names\n"
    "(client.pending_tasks()), each polled once (tasks/get) for its status: id, tool, status and\n"
    "statusMessage. 'mcpfsm call --tasks --store STORE' records its task there (and removes it when\n"
    "it ends), so a call interrupted with Ctrl-C is listed here. Without --store the command's store\n"
    "is in memory and holds nothing. 'mcpfsm task URL ID' shows any task whose id you know."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_listing_options(parser)
    add_task_store_option(parser)


def run(args: argparse.Namespace) -> Exit:
    """List the pending tasks."""
    store = shared_store(args)
    client = make_client(args, tasks=True, **client_store(store))

    async def listing() -> list[dict[str, Any]]:
        async with entered(store, args.url):
            return await polled()

    async def polled() -> list[dict[str, Any]]:
        with connection_errors(target(args), client):
            async with client:
                pending = await client.pending_tasks()
                for task in pending:
                    await task.refresh()
                return [task_fields(task) for task in pending]

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
