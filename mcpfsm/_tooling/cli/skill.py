"""``mcpfsm skill URL URI [--file PATH]``: one skill's ``SKILL.md`` or supporting file, verified (SEP-2640)."""

from __future__ import annotations

import argparse
import sys
from typing import Final

import trio

from .common import CliError, Exit, add_server_options, connection_errors, make_client, print_line, target
from .terminal import write

__all__ = ["DESCRIPTION", "configure", "run"]

DESCRIPTION: Final = (
    "Get a skill's entry (skills/get, with the URI of its SKILL.md), read its SKILL.md and verify it\n"
    "against the entry: byte size, sha256 digest, then the YAML frontmatter field by field; print it\n"
    "(control characters escaped, as all text from the server).\n"
    "--file PATH (relative to the skill's root, or a URI) reads and prints that supporting file instead,\n"
    "verified the same way; only files the entry lists are read. A file that fails a check is not\n"
    "printed: exit 5 with the check that failed. A skill whose files are 'dynamic' (no digests) is\n"
    "refused unless --allow-dynamic. A file that is not UTF-8 text is written as it is when stdout is\n"
    "not a terminal (redirect it to save the file), and named by its size on a terminal."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_server_options(parser)
    parser.add_argument("uri", metavar="URI", help="the URI of the skill's SKILL.md, e.g. skill://pdf-processing/SKILL.md")
    parser.add_argument(
        "--file", metavar="PATH", help="print this file of the skill (e.g. references/FORMS.md) instead of SKILL.md"
    )
    parser.add_argument(
        "--allow-dynamic", action="store_true", help="load a skill that publishes no digests (unverified content)"
    )


def run(args: argparse.Namespace) -> Exit:
    """Load the skill and print SKILL.md or the file asked for."""
    from ..._core.skills import SkillVerificationError  # with PyYAML: not for `mcpfsm --help`

    client = make_client(args)

    async def read() -> bytes:
        with connection_errors(target(args), client):
            async with client:
                skill = await client.skill(args.uri)
                try:
                    loaded = await skill.load(allow_dynamic=args.allow_dynamic)
                    return loaded.text.encode("utf-8") if args.file is None else await loaded.read(args.file)
                except SkillVerificationError as exc:
                    raise CliError(Exit.protocol, f"skill verification failed: {exc}") from exc
                except ValueError as exc:  # --file leads out of the skill
                    raise CliError(Exit.usage, f"--file: {exc}") from exc

    data = trio.run(read)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        # Not text (an image, an archive): the bytes as they are where they are saved, never onto a terminal.
        if sys.stdout.isatty():
            print_line(f"[{len(data)} bytes of binary data from {args.file}: redirect stdout to a file to save them]")
        else:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        return Exit.ok
    write(sys.stdout, text, end="")  # the server's text: escaped like everything the command prints
    return Exit.ok
