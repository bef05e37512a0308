"""``mcpfsm servers``: each server of a configuration with its status, era and tool count (docs/groups.md)."""

from __future__ import annotations

import argparse
import json
from typing import Any, Final

import trio

from ..._core.errors import ConfigError
from .common import CliError, Exit, columns, error_line, one_line, print_line
from .configured import add_config_option, find_config, read_config

__all__ = ["configure", "run"]

DESCRIPTION: Final = (
    "Open every enabled server of the configuration (--config FILE; default ./mcp.json, then mcp.json in\n"
    "the user's config dir) as one client group, and print one line per server: its status (connected,\n"
    "failed, disabled), the protocol version negotiated, how many tools it lists under the group's filters,\n"
    "and for a failed server why. A failed server does not fail the command."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_config_option(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")


async def _survey(args: argparse.Namespace) -> list[dict[str, Any]]:
    from ..._client.group import ClientGroup

    path = find_config(args)
    if path is None:
        raise CliError(Exit.usage, "no configuration: give --config FILE, or write ./mcp.json")
    async with ClientGroup(read_config(path)) as group:
        counts: dict[str, int] = {}
        try:
            for tool in await group.tools():
                server = getattr(tool, "server", None)
                if isinstance(server, str):
                    counts[server] = counts.get(server, 0) + 1
        except ConfigError as exc:
            # A collision makes no aggregated listing; each server's own count still says something.
            error_line(f"configuration: {exc}")
            for name, status in group.status.items():
                if status == "connected":
                    counts[name] = len(await group[name].tools())
        rows = []
        for name, status in group.status.items():
            error = group.errors.get(name)
            client = group[name] if status == "connected" else None
            rows.append(
                {
                    "server": name,
                    "status": group.status[name],
                    "protocol": None if client is None else client.protocol_version,
                    "tools": counts.get(name, 0) if group.status[name] == "connected" else None,
                    "error": None if error is None else one_line(str(error)),
                }
            )
        return rows


def run(args: argparse.Namespace) -> Exit:
    """Show the servers."""
    rows = trio.run(_survey, args)
    if args.json:
        print_line(json.dumps({"servers": rows}, indent=2, ensure_ascii=False))
        return Exit.ok
    table = [
        [
            row["server"],
            row["status"],
            row["protocol"] or "-",
            "-" if row["tools"] is None else str(row["tools"]),
            row["error"] or "",
        ]
        for row in rows
    ]
    print_line(columns(["SERVER", "STATUS", "ERA", "TOOLS", "ERROR"], table))
    return Exit.ok
