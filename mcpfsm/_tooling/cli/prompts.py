"""``mcpfsm prompts URL``: a server's prompts and their arguments (MCP "Prompts")."""

from __future__ import annotations

import argparse
import json
from typing import Final

import trio

from ..._core.surface import Prompt
from .common import Exit, add_listing_options, columns, connection_errors, make_client, print_line, target

__all__ = ["DESCRIPTION", "configure", "run"]

DESCRIPTION: Final = (
    "List the prompts of a server (every page of prompts/list): name, arguments (required ones\n"
    "marked with *) and description. Get one with 'mcpfsm prompt URL NAME --args JSON'."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_listing_options(parser)


def render(prompts: list[Prompt]) -> str:
    """The human-readable table: one prompt per line."""
    if not prompts:
        return "no prompts"
    rows = [
        (p.name, ", ".join(a.name + ("*" if a.required else "") for a in p.arguments) or "-", p.description or "")
        for p in prompts
    ]
    return columns(("PROMPT", "ARGUMENTS", "DESCRIPTION"), rows)


def run(args: argparse.Namespace) -> Exit:
    """List the prompts."""
    client = make_client(args)

    async def listing() -> list[Prompt]:
        with connection_errors(target(args), client):
            async with client:
                return await client.prompts()

    prompts = trio.run(listing)
    if args.json:
        print_line(json.dumps({"prompts": [dict(p.raw) for p in prompts]}, indent=2, ensure_ascii=False))
    else:
        print_line(render(prompts))
    return Exit.ok
