"""``mcpfsm prompt URL NAME --args JSON``: one prompt's messages (``prompts/get``, MCP "Prompts")."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Final

import trio

from ..._core.surface import PromptResult
from .common import (
    CliError,
    Exit,
    add_args_option,
    add_server_options,
    add_yes_option,
    connection_errors,
    json_kind,
    make_client,
    parse_arguments,
    print_line,
    target,
)
from .elicit import TerminalElicitation

__all__ = ["DESCRIPTION", "configure", "run"]

DESCRIPTION: Final = (
    "Get a prompt (prompts/get; Mcp-Name carries the name in the 2026-07-28 era) with the\n"
    "arguments given (--args: a JSON object of strings) and print its messages, one\n"
    "'role: text' line each (other content as JSON); --json prints the whole result.\n"
    "A prompt that asks the user something (elicitation) is answered at the terminal as in\n"
    "'mcpfsm call' (--yes: forms with their defaults, URLs declined)."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_server_options(parser)
    parser.add_argument("name", metavar="NAME", help="the prompt's name")
    add_args_option(parser)
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    add_yes_option(parser)


def render(result: PromptResult) -> str:
    """One ``role: text`` line per message (a content that is not text is shown as JSON)."""
    lines = [] if result.description is None else [f"# {result.description}"]
    for message in result.messages:
        content = message["content"]
        shown = content["text"] if content.get("type") == "text" and isinstance(content.get("text"), str) else (
            json.dumps(content, ensure_ascii=False)
        )
        lines.append(f"{message['role']}: {shown}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> Exit:
    """Get the prompt."""
    arguments = parse_arguments(args.args)
    wrong = [key for key, value in arguments.items() if not isinstance(value, str)]
    if wrong:
        kind = json_kind(arguments[wrong[0]])
        raise CliError(Exit.usage, f"--args: prompt arguments are strings; {wrong[0]!r} is a JSON {kind}")
    elicitation = TerminalElicitation(stdin=sys.stdin, stderr=sys.stderr, assume_yes=args.yes)
    client = make_client(args, on_elicitation=elicitation, elicitation_modes=("form", "url"))

    async def get() -> PromptResult:
        with connection_errors(target(args), client):
            async with client:
                return await client.get_prompt(args.name, arguments)

    result = trio.run(get)
    if args.json:
        print_line(json.dumps(result.raw, indent=2, ensure_ascii=False))
    else:
        print_line(render(result))
    return Exit.ok
