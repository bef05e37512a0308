"""``mcpfsm call URL TOOL``: call a tool, print its result as JSON, events as JSON Lines, notifications on stderr."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import sys
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from types import TracebackType
from typing import IO, Any, Final

import trio

from ..._client.group import GroupTool
from ..._client.tools import ToolList
from ..._core.config import Config
from ..._core.events import CallEvent
from ..._core.results import ToolResult
from ..._log import logger
from .common import (
    CliError,
    Exit,
    T,
    add_args_option,
    add_server_options,
    connection_errors,
    error_line,
    group_config,
    make_client,
    one_line,
    os_reason,
    parse_arguments,
    print_line,
    target,
)
from .elicit import TerminalElicitation

__all__ = ["NAME", "configure", "run", "unknown_tool"]

NAME: Final = "call"
SUMMARY: Final = "call a tool; print the result as JSON"
DESCRIPTION: Final = (
    "Call TOOL and print its result (the JSON-RPC result object) as JSON on stdout.\n"
    "By default the tools are listed first and the listed tool is called, so its annotated\n"
    "arguments are mirrored into Mcp-Param-* headers; --by-name sends the name only.\n"
    "Progress and log notifications of the server are printed to stderr as they arrive.\n"
    "When the server asks the user something (elicitation), the question is asked on stderr and\n"
    "answered on stdin: a form field by field (defaults shown; an empty line keeps one), a URL by\n"
    "showing it in full and asking for consent (it is never opened). --yes asks nothing: forms are\n"
    "accepted with their defaults, URLs declined.\n"
    "Without URL, TOOL is an aggregated name (server_tool) of the configuration's group (--config, or\n"
    "./mcp.json): the call goes to that server with its headers; --events records which server in each event."
)
_SPINNER: Final = "|/-\\"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    add_server_options(parser, tool=True)
    add_args_option(parser)
    parser.add_argument("--by-name", action="store_true", help="call by name: no listing, no Mcp-Param-* headers")
    parser.add_argument(
        "--events", metavar="FILE|-", help="write the call's audit events as JSON Lines to FILE ('-': stderr)"
    )
    parser.add_argument("--compact", action="store_true", help="print the result on one line")
    parser.add_argument(
        "--yes", action="store_true", help="answer elicitation without asking: forms with their defaults, URLs declined"
    )


class _Console:
    """stderr for one call: progress lines, events, and (on a terminal) a spinner with elapsed time."""

    def __init__(self, stream: IO[str], label: str) -> None:
        self._stream = stream
        self._label = label
        self._live = stream.isatty()
        self._drawn = False
        self._paused = False

    def line(self, text: str) -> None:
        """Write one line, clearing the spinner first."""
        self._clear()
        self._stream.write(text + "\n")
        self._stream.flush()

    def notification(self, method: str, params: dict[str, Any]) -> None:
        """Show a progress or log notification of the server as one line."""
        if method == "notifications/progress":
            progress, total = params.get("progress"), params.get("total")
            amount = _number(progress) if total is None else f"{_number(progress)}/{_number(total)}"
            message = params.get("message")
            self.line(f"mcpfsm: progress {amount}" + (f": {one_line(str(message))}" if message else ""))
        elif method == "notifications/message":
            data = params.get("data")
            text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
            self.line(f"mcpfsm: server log ({params.get('level', 'info')}): {one_line(text)}")
        else:
            logger.debug("notification {} from the server: {}", method, params)

    async def run(self, call: Callable[[], Awaitable[T]]) -> T:
        """Await ``call()``; on a terminal, show a spinner and the elapsed time while it runs."""
        if not self._live:
            return await call()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._spin)
            try:
                return await call()
            finally:
                nursery.cancel_scope.cancel()
                self._clear()

    async def _spin(self) -> None:
        started = trio.current_time()
        await trio.sleep(0.5)
        for tick in itertools.count():
            if self._paused:
                await trio.sleep(0.1)
                continue
            elapsed = trio.current_time() - started
            self._stream.write(f"\r{_SPINNER[tick % 4]} {self._label} {elapsed:.1f}s\x1b[K")
            self._stream.flush()
            self._drawn = True
            await trio.sleep(0.1)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Keep the spinner off the screen while the user is asked something."""
        self._clear()
        self._paused = True
        try:
            yield
        finally:
            self._paused = False

    def _clear(self) -> None:
        if self._drawn:
            self._stream.write("\r\x1b[K")
            self._drawn = False


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, int | float) and not isinstance(value, bool) else str(value)


class _EventLog:
    """Writes each event as one JSON Lines record to ``target`` or, for ``-``, to stderr, while entered."""

    def __init__(self, target: str, console: _Console) -> None:
        self._target = target
        self._console = console
        self._file: IO[str] | None = None

    def __enter__(self) -> _EventLog:
        if self._target != "-":
            try:
                self._file = open(self._target, "w", encoding="utf-8")
            except OSError as exc:
                raise CliError(Exit.usage, f"cannot write events to {self._target!r}: {os_reason(exc)}") from exc
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._file is not None:
            self._file.close()

    def __call__(self, event: CallEvent) -> None:
        if self._file is None:
            self._console.line(event.to_json())
        else:
            self._file.write(event.to_json() + "\n")
            self._file.flush()


def run(args: argparse.Namespace) -> Exit:
    """Call the tool and print its result."""
    arguments = parse_arguments(args.args)
    console = _Console(sys.stderr, args.tool)
    events = None if args.events is None else _EventLog(args.events, console)
    elicitation = TerminalElicitation(stdin=sys.stdin, stderr=sys.stderr, assume_yes=args.yes, pause=console.paused)
    config = group_config(args)
    if config is not None:
        with events or contextlib.nullcontext():
            result = trio.run(partial(_call_in_group, args, config, arguments, console, events, elicitation))
        return _print_result(args, result)
    # Built, and so checked, before the events file is opened: a usage error leaves no empty file behind.
    client = make_client(
        args,
        on_event=events,
        on_notification=console.notification,
        on_elicitation=elicitation,
        elicitation_modes=("form", "url"),
    )

    async def call() -> ToolResult:
        with connection_errors(target(args)):
            async with client:
                if args.by_name:
                    return await console.run(lambda: client.call_tool(args.tool, arguments))
                tools = await client.tools()
                tool = tools.get(args.tool)
                if tool is None:
                    raise CliError(Exit.unknown_tool, unknown_tool(args.tool, tools))
                return await console.run(lambda: tool.call(arguments))

    with events or contextlib.nullcontext():
        result = trio.run(call)
    return _print_result(args, result)


async def _call_in_group(
    args: argparse.Namespace,
    config: Config,
    arguments: dict[str, Any],
    console: _Console,
    events: _EventLog | None,
    elicitation: TerminalElicitation,
) -> ToolResult:
    from ..._client.group import ClientGroup

    if args.by_name:
        raise CliError(Exit.usage, "--by-name needs one server: name it where the URL goes")
    async with ClientGroup(
        config,
        on_event=events,
        on_notification=console.notification,
        on_elicitation=elicitation,
        elicitation_modes=("form", "url"),
    ) as group:
        tools = await group.tools()
        tool = tools.get(args.tool)
        if tool is None:
            failed = "".join(f"; server {name!r} failed: {error}" for name, error in group.errors.items())
            raise CliError(Exit.unknown_tool, unknown_tool(args.tool, tools) + failed)
        args.server_name = tool.server if isinstance(tool, GroupTool) else None
        with connection_errors(target(args)):
            return await console.run(lambda: tool.call(arguments))


def _print_result(args: argparse.Namespace, result: ToolResult) -> Exit:
    print_line(json.dumps(result.raw, indent=None if args.compact else 2, ensure_ascii=False))
    if result.is_error:
        detail = one_line(result.text)
        error_line(f"tool {args.tool!r} answered isError: true" + (f": {detail}" if detail else ""))
        return Exit.tool_error
    return Exit.ok


def unknown_tool(name: str, tools: ToolList) -> str:
    for exclusion in tools.excluded:
        if exclusion.name == name:
            return f"tool {name!r} is excluded: {exclusion.reason} (--by-name calls it without mirroring)"
    listed = ", ".join(tools.names) or "no tools"
    return f"unknown tool {name!r}; the server lists: {listed}"
