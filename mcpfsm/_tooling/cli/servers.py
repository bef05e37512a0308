"""``mcpfsm servers``: each server of a configuration with its status, era, tool count and listing (docs/groups.md)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, Final

import trio

from ..._core.errors import ConfigError
from .common import CliError, Exit, columns, error_line, one_line, print_line
from .configured import add_config_option, find_config, read_config
from .store import Opened, add_store_option, open_store, opened, run_on

__all__ = ["configure", "run"]

DESCRIPTION: Final = (
    "Open the servers of the configuration (--config FILE; default ./mcp.json, then mcp.json in the user's\n"
    "config dir) as one client group, and print one line per server: its status (connected, idle, failed,\n"
    "disabled), the protocol version negotiated, how many tools it lists under the group's filters, where\n"
    "that listing comes from (live, or the age of the known listing the store kept), and for a failed server\n"
    "why. --store STORE keeps each server's listing as its known listing (redis://…, file:///DIR or a path;\n"
    "docs/groups.md, \"Many servers\"); with --lazy (or \"lazy\": true in an entry) a server whose known\n"
    "listing is fresh is not started or connected: it shows idle, with that listing's tool count and age.\n"
    "A failed server does not fail the command."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_config_option(parser)
    add_store_option(
        parser,
        "keep known listings in this store, and answer idle servers from it: redis://…, file:///DIR or a path",
    )
    parser.add_argument("--lazy", action="store_true", help="connect no server whose known listing is fresh")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


async def _survey(args: argparse.Namespace, store: Opened | None) -> list[dict[str, Any]]:
    from ..._client.group import ClientGroup, GroupTool

    path = find_config(args)
    if path is None:
        raise CliError(Exit.usage, "no configuration: give --config FILE, or write ./mcp.json")
    options: dict[str, Any] = {} if store is None else {"store": store}
    async with ClientGroup(read_config(path), lazy=args.lazy, **options) as group:
        counts: dict[str, int] = {}
        known: dict[str, float | None] = {}
        try:
            for tool in await group.tools():
                if isinstance(tool, GroupTool):
                    counts[tool.server] = counts.get(tool.server, 0) + 1
                    known[tool.server] = tool.known_at
        except ConfigError as exc:
            # A collision makes no aggregated listing; each connected server's own count still says something.
            error_line(f"configuration: {exc}")
            for name, status in group.status.items():
                if status == "connected":
                    counts[name] = len(await group[name].tools())
        now = time.time()
        rows = []
        for name, status in group.status.items():
            error = group.errors.get(name)
            client = group[name] if status == "connected" else None
            listed = status in ("connected", "idle") and name in counts
            known_at = known.get(name)
            rows.append(
                {
                    "server": name,
                    "status": status,
                    "protocol": None if client is None else client.protocol_version,
                    "tools": counts.get(name, 0) if listed else None,
                    "known_at": known_at,
                    "age": None if known_at is None else round(max(0.0, now - known_at), 3),
                    "error": None if error is None else one_line(str(error)),
                }
            )
        return rows


def _age(seconds: float) -> str:
    # "12 s ago", "4 min ago", "3 h ago", "2 d ago": the known listing's age, to the unit that reads best.
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return f"{int(seconds)} s ago"


def run(args: argparse.Namespace) -> Exit:
    """Show the servers."""
    store = None if args.store is None else open_store(args.store, prefix=args.prefix)
    if store is None:
        rows = trio.run(_survey, args, None)
    else:

        async def surveyed() -> list[dict[str, Any]]:
            async with opened(store) as ready:
                return await _survey(args, ready)

        rows = run_on(store, surveyed)
    if args.json:
        print_line(json.dumps({"servers": rows}, indent=2, ensure_ascii=False))
        return Exit.ok
    table = [
        [
            row["server"],
            row["status"],
            row["protocol"] or "-",
            "-" if row["tools"] is None else str(row["tools"]),
            "-" if row["tools"] is None else ("live" if row["age"] is None else _age(row["age"])),
            row["error"] or "",
        ]
        for row in rows
    ]
    print_line(columns(["SERVER", "STATUS", "ERA", "TOOLS", "LISTED", "ERROR"], table))
    return Exit.ok
