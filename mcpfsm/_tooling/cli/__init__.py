"""The ``mcpfsm`` command (console script): one module per subcommand, one entry point.

This is the one place in mcpfsm that configures logging: WARNINGs of the library (an excluded tool,
say) go to stderr as one ``mcpfsm: warning: …`` line each, ``-v`` adds DEBUG. Every failure ends
with exactly one ``mcpfsm: error: …`` line on stderr and an exit code of its own (see
:class:`~mcpfsm._tooling.cli.common.Exit` and ``mcpfsm --help``), never a traceback.

A subcommand is a row of :data:`COMMANDS` (its name and summary) and a module with ``DESCRIPTION``,
``configure(parser)`` and ``run(args) -> Exit``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Final

from ... import __version__
from . import (
    audit,
    call,
    demo,
    diagram,
    gate,
    listen,
    login,
    logout,
    plan,
    prompt,
    prompts,
    read,
    replay,
    resources,
    servers,
    skill,
    skills,
    store,
    task,
    tasks,
    tools,
    trace,
)
from .common import Exit, Parser, classify, configure_logging, error_line, formatter, leaf

__all__ = ["COMMANDS", "Command", "Exit", "build_parser", "main"]


@dataclass(frozen=True, slots=True)
class Command:
    """A subcommand: its name, the line ``mcpfsm --help`` shows for it, and its module.

    The module has ``DESCRIPTION`` (the text of ``mcpfsm NAME --help``), ``configure(parser)`` (its arguments)
    and ``run(args) -> Exit``.
    """

    name: str
    summary: str
    module: ModuleType

    def configure(self, parser: argparse.ArgumentParser) -> None:
        """Add the command's arguments to ``parser``."""
        self.module.configure(parser)

    def run(self, args: argparse.Namespace) -> Exit:
        """Run the command."""
        result: Exit = self.module.run(args)
        return result


COMMANDS: Final[tuple[Command, ...]] = (
    Command("demo", "run the -32020 recovery against an embedded MCP server", demo),
    Command("servers", "connect every server of a configuration; show status, era and tool count", servers),
    Command("tools", "list a server's tools and their mirrored headers", tools),
    Command("call", "call a tool; print the result as JSON", call),
    Command("resources", "list a server's resources and resource templates", resources),
    Command("read", "read one resource", read),
    Command("prompts", "list a server's prompts and their arguments", prompts),
    Command("prompt", "get one prompt's messages", prompt),
    Command("skills", "list a server's skills (SEP-2640)", skills),
    Command("skill", "print one skill's SKILL.md or a file of it, verified", skill),
    Command("task", "show a task's status, or cancel it (SEP-2663)", task),
    Command("tasks", "list the unfinished tasks recorded for a server (SEP-2663)", tasks),
    Command("gate", "serve a reverse proxy that refuses requests whose MCP headers contradict the body", gate),
    Command("listen", "print change notifications as JSON Lines until interrupted", listen),
    Command("plan", "show the headers a tools/call would send (no network)", plan),
    Command("replay", "serve a recorded session (a cassette) to any MCP client, with faults on demand", replay),
    Command("trace", "draw a recorded call or input run as a Mermaid sequence diagram", trace),
    Command("audit", "verify a chained audit log: the first line edited, removed, inserted or reordered", audit),
    Command("diagram", "regenerate or verify specs/ and diagrams/", diagram),
    Command("login", "log in to a protected server; store its tokens", login),
    Command("logout", "forget the tokens stored for a server", logout),
    Command("store", "show what a shared store holds (kinds, keys, expiry), without secrets", store),
)
"""The subcommands, one row each, in the order ``mcpfsm --help`` lists them."""


_EXIT_CODES = f"""\
exit codes:
  {Exit.ok:<4} success
  {Exit.tool_error:<4} call: the tool answered with isError: true (the result is still printed)
  {Exit.usage:<4} usage error: bad option, bad JSON in --args, malformed --header, unreadable or
       malformed input file (schema, events), unwritable output file (--events, --output)
  {Exit.bad_url:<4} the server URL is not an absolute http:// or https:// URL
  {Exit.unreachable:<4} the server cannot be reached, or the transport failed (network, timeout,
       HTTP error without a JSON-RPC body, stdio server that does not start or dies)
  {Exit.protocol:<4} the server's answer is not valid JSON-RPC / MCP; skill: a file fails its verification
  {Exit.unknown_tool:<4} the tool is not listed (or was excluded for invalid x-mcp-header annotations)
  {Exit.invalid_schema:<4} invalid inputSchema (plan), or an argument cannot be mirrored into its header
  {Exit.rpc_error:<4} the server answered a JSON-RPC error (an unrecovered -32020 included); call --tasks:
       the task was cancelled or expired
  {Exit.drift:<4} diagram --check: the generated diagrams are out of date; audit verify: the log's
       chain is broken (a line edited, removed, inserted or reordered)
  {Exit.missing_component:<4} an optional component is missing (the MCP SDK for demo and diagram,
       Graphviz for diagram)
  {Exit.unauthorized:<4} authorization failed (login refused or not completed, tokens refused, an HTTP 401
       that the credentials given do not answer)
  {Exit.internal:<4} internal error (a bug in mcpfsm; -v prints the traceback)
  {Exit.interrupted:<4} interrupted (Ctrl-C)
"""


_DESCRIPTION = "An MCP client where every tool call is an explicit, audited state machine."


def build_parser() -> argparse.ArgumentParser:
    """The ``mcpfsm`` argument parser, one subparser per module in :data:`COMMANDS`."""
    verbose = Parser(add_help=False)
    verbose.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS,
        help="log mcpfsm's DEBUG messages and each request's and reply's head to stderr (secrets redacted);"
        " -vv also their bodies",
    )
    parser = Parser(
        prog="mcpfsm", description=_DESCRIPTION, epilog=_EXIT_CODES, formatter_class=formatter, parents=[verbose]
    )
    parser.add_argument("--version", action="version", version=f"mcpfsm {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.configure(
            subparsers.add_parser(
                command.name,
                help=command.summary,
                description=command.module.DESCRIPTION,
                epilog="exit codes: see 'mcpfsm --help'",
                formatter_class=formatter,
                parents=[verbose],
            )
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mcpfsm`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    verbose = False
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra:
            # `call URL TOOL --args X key=value`: argparse leaves positionals after an option unparsed.
            if isinstance(getattr(args, "words", None), list) and not any(word.startswith("-") for word in extra):
                args.words += extra
            else:
                parser.error(f"unrecognized arguments: {' '.join(extra)}")
        verbose = bool(getattr(args, "verbose", 0))
        configure_logging(verbose)
        return int(_RUN[args.command](args))
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except BaseException as exc:  # the one place where every failure becomes one line
        error = leaf(exc)
        code, message = classify(error)
        if code is Exit.internal and verbose:
            traceback.print_exception(error)
        if isinstance(error, BrokenPipeError):
            # The reader went away (`mcpfsm ... | head`): not an error; keep Python's exit flush quiet.
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return int(Exit.ok)
        error_line(message)
        return int(code)


_RUN: Final = {command.name: command.run for command in COMMANDS}
