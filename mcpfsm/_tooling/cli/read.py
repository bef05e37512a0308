"""``mcpfsm read URL URI``: one resource's contents (``resources/read``, MCP "Resources")."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Final

import trio

from ..._core.surface import ResourceResult
from .common import Exit, add_server_options, add_yes_option, connection_errors, make_client, print_line, target
from .elicit import TerminalElicitation

__all__ = ["DESCRIPTION", "configure", "run"]

DESCRIPTION: Final = (
    "Read a resource (resources/read; Mcp-Name carries the URI in the 2026-07-28 era) and print its\n"
    "text contents as they are; a binary (blob) content is shown as one line naming its size and type.\n"
    "--json prints the whole result, blobs still base64-encoded. A resource that asks the user\n"
    "something (elicitation) is answered at the terminal as in 'mcpfsm call' (--yes: forms with\n"
    "their defaults, URLs declined)."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_server_options(parser)
    parser.add_argument("uri", metavar="URI", help="the resource's URI")
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    add_yes_option(parser)


def render(result: ResourceResult) -> str:
    """Each text content as is; each blob as ``[N bytes of MIME from URI]``."""
    parts: list[str] = []
    blobs = iter(result.blobs)
    for content in result.contents:
        if isinstance(content.get("text"), str):
            parts.append(content["text"])
        else:
            size = len(next(blobs))
            parts.append(f"[{size} bytes of {content.get('mimeType') or 'binary data'} from {content['uri']}]")
    return "\n".join(parts)


def run(args: argparse.Namespace) -> Exit:
    """Read the resource."""
    elicitation = TerminalElicitation(stdin=sys.stdin, stderr=sys.stderr, assume_yes=args.yes)
    client = make_client(args, on_elicitation=elicitation, elicitation_modes=("form", "url"))

    async def read() -> ResourceResult:
        with connection_errors(target(args), client):
            async with client:
                return await client.read_resource(args.uri)

    result = trio.run(read)
    if args.json:
        print_line(json.dumps(result.raw, indent=2, ensure_ascii=False))
    else:
        print_line(render(result))
    return Exit.ok
