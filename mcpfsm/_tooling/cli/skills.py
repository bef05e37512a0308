"""``mcpfsm skills URL``: the skills a server serves (``skills/list``, SEP-2640)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Final

import trio

from .common import Exit, add_listing_options, columns, connection_errors, make_client, print_line, target

if TYPE_CHECKING:
    from ..._client.skills import Skill

__all__ = ["DESCRIPTION", "configure", "run"]

DESCRIPTION: Final = (
    "List the skills a server serves (every page of skills/list; only asked of a server that declares\n"
    "the io.modelcontextprotocol/skills extension): the URI of each SKILL.md, how many files it\n"
    "lists ('dynamic' when it publishes no digests), its name and description. No skill file is\n"
    "read. Print one, verified, with 'mcpfsm skill'."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_listing_options(parser)


def render(skills: list[Skill]) -> str:
    """The human-readable table: one skill per line."""
    if not skills:
        return "no skills"
    rows = [
        (skill.uri, "dynamic" if skill.files is None else str(len(skill.files)), skill.name, skill.description)
        for skill in skills
    ]
    return columns(("URI", "FILES", "NAME", "DESCRIPTION"), rows)


def run(args: argparse.Namespace) -> Exit:
    """List the skills."""
    client = make_client(args)

    async def listing() -> list[Skill]:
        with connection_errors(target(args), client):
            async with client:
                return await client.skills()

    skills = trio.run(listing)
    if args.json:
        print_line(json.dumps({"skills": [dict(skill.raw) for skill in skills]}, indent=2, ensure_ascii=False))
    else:
        print_line(render(skills))
    return Exit.ok
