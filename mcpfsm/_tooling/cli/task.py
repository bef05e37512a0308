"""``mcpfsm task URL ID [--cancel]``: one task's status (``tasks/get``), or cancel it (``tasks/cancel``; SEP-2663)."""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Final

import trio

from ..._core.credentials import Store
from ..._core.task import index_key, server_name
from .common import CliError, Exit, add_server_options, connection_errors, make_client, print_line, target
from .store import Opened, add_store_option, describe, open_store, opened

if TYPE_CHECKING:
    from ..._client.task import Task

__all__ = [
    "DESCRIPTION", "add_task_store_option", "client_store", "configure", "entered", "run", "shared_store",
    "task_fields",
]

DESCRIPTION: Final = (
    "Show the status of the task ID of the server at URL (one tasks/get, with the tasks extension\n"
    "declared): its status, statusMessage, poll interval, TTL and creation time. --cancel sends\n"
    "tasks/cancel (never notifications/cancelled) after that poll and shows the status once the server\n"
    "acknowledged it (a task that is over already is left as it is).\n"
    "A task the server no longer knows shows as 'expired'. Nothing waits for the task: 'mcpfsm call\n"
    "--tasks' does. The task's result is not printed (the extension hands it to the poll that sees it end).\n"
    "--store STORE reads the task's record (its tool) from the store 'mcpfsm call --tasks --store' kept it in."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_server_options(parser)
    parser.add_argument("task_id", metavar="ID", help="the task's id (as 'mcpfsm call --tasks' showed it)")
    parser.add_argument("--cancel", action="store_true", help="cancel the task (tasks/cancel)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_task_store_option(parser)


def add_task_store_option(parser: argparse.ArgumentParser) -> None:
    """``--store STORE`` (and ``--prefix``): where the client records its tasks (docs/stores.md)."""
    add_store_option(
        parser,
        "record tasks in this shared store, where 'mcpfsm tasks' and 'mcpfsm task' (and Client(store=...)) find"
        " them: redis://…, rediss://…, file:///DIR or a path (docs/stores.md); default: memory, gone with the command",
    )


def shared_store(args: argparse.Namespace) -> Opened | None:
    """The store ``--store`` names, or ``None``; nothing is opened yet (see :func:`entered`)."""
    text = getattr(args, "store", None)
    return None if text is None else open_store(text, prefix=args.prefix)


def client_store(store: Store | None) -> dict[str, Any]:
    """The ``store=`` option of the command's client, when ``--store`` named one."""
    return {} if store is None else {"store": store}


@contextlib.asynccontextmanager
async def entered(store: Opened | None, url: str | None) -> AsyncIterator[None]:
    """``store`` opened, and checked to answer, for the body; a store that fails is one error line (exit 4).

    Raises:
        CliError: the store cannot be opened or read; the message names it (without a password).
    """
    if store is None:
        yield
        return
    stack = contextlib.AsyncExitStack()
    try:
        await stack.enter_async_context(opened(store))
        await store.get(index_key(server_name(url)))
    except Exception as exc:  # OSError, coredis' ConnectionError, TimeoutError, AuthenticationError, ...
        await stack.aclose()
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise CliError(Exit.unreachable, f"cannot use the store {describe(store)}: {reason}") from None
    async with stack:
        yield


def task_fields(task: Task) -> dict[str, Any]:
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
    store = shared_store(args)
    client = make_client(args, tasks=True, **client_store(store))

    async def status() -> dict[str, Any]:
        async with entered(store, args.url):
            return await show(client.task(args.task_id))

    async def show(task: Task) -> dict[str, Any]:
        with connection_errors(target(args), client):
            async with client:
                await task.refresh()
                if args.cancel:
                    await task.cancel()  # nothing is sent for a task that is over already
                return task_fields(task)

    fields = trio.run(status)
    print_line(json.dumps(fields, indent=2, ensure_ascii=False) if args.json else render(fields))
    return Exit.ok
