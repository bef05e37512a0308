"""``mcpfsm task URL ID [--cancel]``: one task's status (``tasks/get``), or cancel it (``tasks/cancel``; SEP-2663)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any, Final

import trio

from .common import CliError, Exit, add_server_options, connection_errors, make_client, print_line, target

if TYPE_CHECKING:
    from ..._client.tasks import Task

__all__ = ["DESCRIPTION", "configure", "describe", "run"]

DESCRIPTION: Final = (
    "Show the status of the task ID of the server at URL (one tasks/get, with the tasks extension\n"
    "declared): its status, statusMessage, poll interval, TTL and creation time. --cancel sends\n"
    "tasks/cancel (never notifications/cancelled) after that poll and shows the status once the server\n"
    "acknowledged it (a task that is over already is left as it is).\n"
    "A task the server no longer knows shows as 'expired'. Nothing waits for the task: 'mcpfsm call\n"
    "--tasks' does. The task's result is not printed (the extension hands it to the poll that sees it end)."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_server_options(parser)
    parser.add_argument("task_id", metavar="ID", help="the task's id (as 'mcpfsm call --tasks' showed it)")
    parser.add_argument("--cancel", action="store_true", help="cancel the task (tasks/cancel)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def describe(task: Task) -> dict[str, Any]:
    """What the handle knows of the task, as a JSON object (never an argument, answer or result)."""
    return {
        "taskId": task.id,
        "tool": task.tool,
        "status": task.status,
        "statusMessage": task.status_message,
        "pollInterval": task.poll_interval,
        "ttl": task.ttl,
        "createdAt": task.created_at,
    }


def render(fields: dict[str, Any]) -> str:
    """The human-readable form: one ``name: value`` line per known field."""
    names = {"taskId": "task", "tool": "tool", "status": "status", "statusMessage": "message",
             "createdAt": "created", "ttl": "ttl", "pollInterval": "poll every"}
    lines = []
    for key, name in names.items():
        value = fields.get(key)
        if value is None:
            continue
        if key in ("ttl", "pollInterval"):
            value = f"{value:g} s"
        lines.append(f"{name}: {value}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> Exit:
    """Show or cancel the task."""
    if not args.task_id:
        raise CliError(Exit.usage, "give the task's id: mcpfsm task URL ID")
    client = make_client(args, tasks=True)

    async def status() -> dict[str, Any]:
        with connection_errors(target(args), client):
            async with client:
                task = client.task(args.task_id)
                await task.refresh()
                if args.cancel:
                    await task.cancel()  # nothing is sent for a task that is over already
                return describe(task)

    fields = trio.run(status)
    print_line(json.dumps(fields, indent=2, ensure_ascii=False) if args.json else render(fields))
    return Exit.ok
