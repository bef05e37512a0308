"""``mcpfsm tools URL``: a server's tools, their mirrored headers, and the excluded tools with reasons."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any, Final

import trio

from ..._client.tools import ToolList
from ..._core.config import Config
from ..._core.schema import json_pointer
from .arguments import describe_type
from .common import (
    CliError,
    Exit,
    add_record_option,
    add_server_options,
    columns,
    connection_errors,
    group_config,
    make_client,
    print_line,
    refuse_record_for_group,
    target,
)
from .terminal import shown

__all__ = ["configure", "parameter_rows", "render_instructions", "render_tools", "run"]

DESCRIPTION: Final = (
    "List the tools of a server with their parameters: name, type, whether it is required, and the\n"
    "Mcp-Param-* header it is mirrored into (its x-mcp-header annotation); then the tools excluded\n"
    "because of invalid annotations, with the reason. --json prints the listing as the server sent it\n"
    "(each tool with its inputSchema, which 'mcpfsm plan --schema FILE' reads), with mcpfsm's mirrored\n"
    "headers and exclusions beside it. --instructions first prints the server's instructions (meant for\n"
    "a model's system prompt), control characters escaped.\n"
    "Without URL, every server of the configuration (--config, or ./mcp.json) is listed as one group:\n"
    "each tool under its aggregated name (server_tool); a server that cannot be reached is reported on stderr."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_server_options(parser)
    add_record_option(parser)
    parser.add_argument("--json", action="store_true", help="the raw listing (with inputSchema), machine-readable")
    parser.add_argument(
        "--instructions", action="store_true", help="also print the server's instructions (for a model's prompt)"
    )


def render_tools(tools: ToolList, *, mirroring: bool = True) -> str:
    """The human-readable ``mcpfsm tools`` table: one row per parameter, then the excluded tools."""
    rows: list[tuple[str, ...]] = []
    for tool in tools:
        parameters = parameter_rows(tool.input_schema, tool.mirrored) or [("-", "", "", "")]
        rows += [(tool.name if i == 0 else "", *row) for i, row in enumerate(parameters)]
    lines = [columns(("TOOL", "PARAMETER", "TYPE", "REQUIRED", "MIRRORED HEADER"), rows)] if rows else ["no tools"]
    if not mirroring:
        lines.append("(this connection does not mirror: x-mcp-header annotations are inert on stdio and legacy)")
    if tools.excluded:
        lines.append("excluded:")
        lines += [f"  {exclusion.name}: {exclusion.reason}" for exclusion in tools.excluded]
    else:
        lines.append("excluded: none")
    return "\n".join(lines)


def parameter_rows(schema: Mapping[str, Any], mirrored: Mapping[tuple[str, ...], str]) -> list[tuple[str, ...]]:
    """``(parameter, type, required, header)`` for each top-level property and each nested mirrored one."""
    rows: list[tuple[str, ...]] = []
    properties = schema.get("properties")
    required = schema.get("required")
    required = required if isinstance(required, list) else []
    for name, definition in properties.items() if isinstance(properties, Mapping) else ():
        rows.append((name, describe_type(definition), "yes" if name in required else "no", mirrored.get((name,), "-")))
        rows += [
            (".".join(path), *_nested(definition, path[1:]), header)
            for path, header in mirrored.items()
            if len(path) > 1 and path[0] == name
        ]
    return rows


def _nested(schema: object, path: tuple[str, ...]) -> tuple[str, str]:
    # The type of a nested property and whether its parent object requires it.
    required = False
    for part in path:
        if not isinstance(schema, Mapping):
            return "any", "no"
        inner = schema.get("required")
        required = isinstance(inner, list) and part in inner
        properties = schema.get("properties")
        schema = properties.get(part) if isinstance(properties, Mapping) else None
    return describe_type(schema), "yes" if required else "no"


def render_instructions(instructions: str | None) -> str:
    """The ``--instructions`` block: each line indented, control characters escaped (``shown``)."""
    if instructions is None:
        return "instructions: none"
    return "\n".join(["instructions:", *(f"  {shown(line)}" for line in instructions.split("\n"))])


def _tools_json(tools: ToolList, protocol: str | None) -> dict[str, Any]:
    # The listing as the server sent it (what `mcpfsm plan --schema FILE` reads), and what mcpfsm made of it.
    return {
        "protocol": protocol,
        "tools": [dict(tool.raw) for tool in tools],
        "mirrored": {
            tool.name: [
                {"path": list(path), "pointer": json_pointer(path), "header": header}
                for path, header in tool.mirrored.items()
            ]
            for tool in tools
        },
        "excluded": [{"name": e.name, "reason": e.reason} for e in tools.excluded],
    }


def run(args: argparse.Namespace) -> Exit:
    """List the tools."""
    config = group_config(args)
    if config is not None:
        refuse_record_for_group(args)
        return _run_group(args, config)
    client = make_client(args)

    async def list_tools() -> tuple[ToolList, str | None, bool, str | None]:
        with connection_errors(target(args), client):
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
