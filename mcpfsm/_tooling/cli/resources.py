"""``mcpfsm resources URL``: a server's resources and resource templates (MCP "Resources")."""

from __future__ import annotations

import argparse
import json
from typing import Any, Final

import trio

from ..._core.surface import Resource, ResourceTemplate
from .common import Exit, add_listing_options, columns, connection_errors, make_client, print_line, target

__all__ = ["DESCRIPTION", "configure", "run"]

DESCRIPTION: Final = (
    "List the resources of a server (every page of resources/list): URI, MIME type, name and\n"
    "description; then its resource templates (resources/templates/list). Read one with 'mcpfsm read'."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_listing_options(parser)


def render(resources: list[Resource], templates: list[ResourceTemplate]) -> str:
    """The human-readable table: one resource per line, then the templates."""
    rows = [(r.uri, r.mime_type or "-", r.name, r.description or "") for r in resources]
    rows += [(t.uri_template, t.mime_type or "-", t.name, (t.description or "") + " (template)") for t in templates]
    if not rows:
        return "no resources"
    return columns(("URI", "MIME", "NAME", "DESCRIPTION"), rows)


def run(args: argparse.Namespace) -> Exit:
    """List the resources and templates."""
    client = make_client(args)

    async def listing() -> tuple[list[Resource], list[ResourceTemplate]]:
        with connection_errors(target(args), client):
            async with client:
                return await client.resources(), await client.resource_templates()

    resources, templates = trio.run(listing)
    if args.json:
        document: dict[str, Any] = {
            "resources": [dict(r.raw) for r in resources],
            "resourceTemplates": [dict(t.raw) for t in templates],
        }
        print_line(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        print_line(render(resources, templates))
    return Exit.ok
