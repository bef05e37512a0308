"""``mcpfsm tools URL``: a server's tools, their mirrored headers, and the excluded tools with reasons."""

from __future__ import annotations

import argparse
import json
from typing import Any, Final

import trio

from ..._client.tools import ToolList
from ..._core.config import Config
from ..._core.schema import json_pointer
from .common import (
    CliError,
    Exit,
    add_server_options,
    connection_errors,
    group_config,
    make_client,
    print_line,
    target,
)
from .elicit import shown

__all__ = ["NAME", "configure", "render_instructions", "render_tools", "run"]

NAME: Final = "tools"
SUMMARY: Final = "list a server's tools and their mirrored headers"
DESCRIPTION: Final = (
    "List the tools of a server: each with its mirrored x-mcp-header arguments (path -> header),\n"
    "then the tools excluded because of invalid annotations, with the reason. --instructions first prints\n"
    "the server's instructions (meant for a model's system prompt), control characters escaped.\n"
    "Without URL, every server of the configuration (--config, or ./mcp.json) is listed as one group:\n"
    "each tool under its aggregated name (server_tool); a server that cannot be reached is reported on stderr."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_server_options(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--instructions", action="store_true", help="also print the server's instructions (for a model's prompt)"
    )


def render_tools(tools: ToolList, *, mirroring: bool = True) -> str:
    """The human-readable ``mcpfsm tools`` table: name, mirrored headers, then the excluded tools."""
    width = max([len("TOOL"), *(len(tool.name) for tool in tools)])
    lines = [f"{'TOOL':<{width}}  MIRRORED HEADERS (argument -> header)"]
    for tool in tools:
        mirrored = [f"{json_pointer(path)} -> {header}" for path, header in tool.mirrored.items()] or ["-"]
        lines.append(f"{tool.name:<{width}}  {mirrored[0]}")
        lines += [f"{'':<{width}}  {line}" for line in mirrored[1:]]
    if not mirroring:
        lines.append("(this connection does not mirror: x-mcp-header annotations are inert on stdio and legacy)")
    if tools.excluded:
        lines.append("excluded:")
        lines += [f"  {exclusion.name}: {exclusion.reason}" for exclusion in tools.excluded]
    else:
        lines.append("excluded: none")
    return "\n".join(lines)


def render_instructions(instructions: str | None) -> str:
    """The ``--instructions`` block: each line indented, control characters escaped (``shown``)."""
    if instructions is None:
        return "instructions: none"
    return "\n".join(["instructions:", *(f"  {shown(line)}" for line in instructions.split("\n"))])


def _tools_json(tools: ToolList, protocol: str | None) -> dict[str, Any]:
    return {
        "protocol": protocol,
        "tools": [
            {
                "name": tool.name,
                "description": tool.description,
                "mirrored": [
                    {"path": list(path), "pointer": json_pointer(path), "header": header}
                    for path, header in tool.mirrored.items()
                ],
            }
            for tool in tools
        ],
        "excluded": [{"name": e.name, "reason": e.reason} for e in tools.excluded],
    }


def run(args: argparse.Namespace) -> Exit:
    """List the tools."""
    config = group_config(args)
    if config is not None:
        return _run_group(args, config)
    client = make_client(args)

    async def list_tools() -> tuple[ToolList, str | None, bool, str | None]:
        with connection_errors(target(args)):
            async with client:
                instructions = (await client.discover()).instructions if args.instructions else None
                return await client.tools(), client.protocol_version, client.mirrors, instructions

    tools, protocol, mirroring, instructions = trio.run(list_tools)
    if args.json:
        listing = _tools_json(tools, protocol)
        if args.instructions:
            listing = {"protocol": protocol, "instructions": instructions, **listing}
        print_line(json.dumps(listing, indent=2, ensure_ascii=False))
    else:
        if args.instructions:
            print_line(render_instructions(instructions))
        print_line(render_tools(tools, mirroring=mirroring))
    return Exit.ok


def _run_group(args: argparse.Namespace, config: Config) -> Exit:
    from ..._client.group import ClientGroup

    if args.instructions:
        raise CliError(Exit.usage, "--instructions needs one server: name it where the URL goes")

    async def list_group() -> ToolList:
        # A server that fails is reported by the group's WARNING on stderr; the others are listed.
        async with ClientGroup(config) as group:
            return await group.tools()

    tools = trio.run(list_group)
    if args.json:
        print_line(json.dumps({"protocol": None, **_tools_json(tools, None)}, indent=2, ensure_ascii=False))
    else:
        print_line(render_tools(tools))
    return Exit.ok
