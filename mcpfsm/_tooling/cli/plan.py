"""``mcpfsm plan --schema FILE``: the headers a ``tools/call`` would send; no network."""

from __future__ import annotations

import argparse
import json
from typing import Final

from ..._core.constants import MODERN_VERSION
from ..._core.plan import plan_request
from ..._core.schema import inspect_input_schema
from .common import CliError, Exit, add_args_option, json_kind, load_json, parse_arguments, print_line, read_text

__all__ = ["configure", "run"]

DESCRIPTION: Final = (
    "Validate a tool's inputSchema (SEP-2243 x-mcp-header rules) and print the headers a tools/call\n"
    f"with --args would carry at protocol {MODERN_VERSION}, one 'Name: value' per line. FILE holds a\n"
    "bare inputSchema, a tool object with an inputSchema, or a tools/list result such as the\n"
    "output of 'mcpfsm tools URL --json' (pick a tool with --tool); a listed tool without an\n"
    "inputSchema is refused (exit 7). Nothing is sent."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    parser.add_argument("--schema", required=True, metavar="FILE", help="the schema file ('-': stdin)")
    add_args_option(parser)
    parser.add_argument(
        "--tool",
        metavar="NAME",
        help="the tool (its Mcp-Name): needed for a bare inputSchema; picks one of a tools/list result",
    )
    parser.add_argument("--json", action="store_true", help="print the headers as a JSON object")


def run(args: argparse.Namespace) -> Exit:
    """Print the headers."""
    document = load_json(read_text(args.schema, "schema file"), f"schema file {args.schema!r}")
    arguments = parse_arguments(args.args)
    name, schema = _pick_schema(document, args.tool, args.schema)
    if not isinstance(schema, dict):
        raise CliError(Exit.invalid_schema, f"inputSchema of tool {name!r} is not a JSON object")
    verdict = inspect_input_schema(schema)
    if verdict.reason is not None:
        raise CliError(Exit.invalid_schema, f"invalid inputSchema of tool {name!r}: {verdict.reason}")
    plan = plan_request(
        "tools/call",
        {"name": name, "arguments": arguments},
        protocol_version=MODERN_VERSION,
        mirrored=verdict.mirrored,
    )
    if args.json:
        print_line(json.dumps(plan.as_dict(), indent=2, ensure_ascii=False))
    else:
        print_line("\n".join(f"{header}: {value}" for header, value in plan))
    return Exit.ok


def _pick_schema(document: object, wanted: str | None, path: str) -> tuple[str, object]:
    if not isinstance(document, dict):
        raise CliError(Exit.invalid_schema, f"schema file {path!r} holds a JSON {json_kind(document)}, not an object")
    if isinstance(document.get("tools"), list):
        entries = [e for e in document["tools"] if isinstance(e, dict) and isinstance(e.get("name"), str)]
        names = ", ".join(e["name"] for e in entries) or "none"
        if wanted is None:
            if len(entries) != 1:
                raise CliError(Exit.usage, f"{path!r} lists {len(entries)} tools ({names}); pick one with --tool NAME")
            wanted = entries[0]["name"]
        for entry in entries:
            if entry["name"] == wanted:
                if "inputSchema" not in entry:
                    # MCP "Tools": inputSchema is required; planning without it would show no mirrored header.
                    raise CliError(
                        Exit.invalid_schema,
                        f"tool {wanted!r} in {path!r} has no inputSchema, so its headers cannot be planned"
                        " ('mcpfsm tools URL --json' prints the listing with each tool's inputSchema)",
                    )
                return wanted, entry["inputSchema"]
        raise CliError(Exit.unknown_tool, f"no tool {wanted!r} in {path!r} (tools: {names})")
    if "inputSchema" in document:
        own = document.get("name")
        if wanted is not None and isinstance(own, str) and own != wanted:
            raise CliError(Exit.unknown_tool, f"{path!r} holds tool {own!r}, not {wanted!r}")
        name = own if isinstance(own, str) else wanted
        if name is None:
            raise CliError(Exit.usage, f"the tool in {path!r} has no name: give --tool NAME (it goes into Mcp-Name)")
        return name, document["inputSchema"]
    if wanted is None:
        raise CliError(Exit.usage, "a bare inputSchema names no tool: give --tool NAME (it goes into Mcp-Name)")
    return wanted, document
