"""``mcpfsm call URL TOOL``: call a tool, print its result as JSON, events as JSON Lines, notifications on stderr."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping
from types import TracebackType
from typing import IO, Any, Final, TypeGuard, get_args

import trio

from ..._client.group import GroupTool
from ..._client.options import LogLevel
from ..._client.tools import ToolList
from ..._core.config import Config
from ..._core.credentials import Store
from ..._core.events import CallEvent
from ..._core.events.task import TaskEvent
from ..._core.results import ToolResult
from ..._log import logger
from .arguments import apply_pairs, is_pair, schema_problems
from .common import (
    CliError,
    Exit,
    T,
    add_args_option,
    add_record_option,
    add_server_options,
    add_yes_option,
    connection_errors,
    error_line,
    group_config,
    make_client,
    one_line,
    os_reason,
    parse_arguments,
    print_line,
    refuse_record_for_group,
    target,
)
from .configured import find_config, is_url, read_config
from .elicit import TerminalElicitation
from .task import add_task_store_option, client_store, entered, shared_store
from .terminal import erase, redraw, write

__all__ = ["configure", "run", "unknown_tool"]

DESCRIPTION: Final = (
    "Call TOOL and print its result (the JSON-RPC result object) as JSON on stdout.\n"
    "By default the tools are listed first and the listed tool is called, so its annotated\n"
    "arguments are mirrored into Mcp-Param-* headers; --by-name sends the name only.\n"
    "The arguments: --args (a JSON object, @FILE or - for stdin), then KEY=VALUE pairs typed by the\n"
    "tool's inputSchema (count=3, flag=true, name=Ada) and KEY:=JSON (obj:='{\"a\": 1}'). They are\n"
    "checked against the inputSchema before anything is sent: a missing required argument or a wrong\n"
    "type is exit 2, naming its JSON path (not with --by-name, which knows no schema).\n"
    "Progress notifications are printed to stderr as they arrive, and so are the server's log messages\n"
    "when the server sends any. The server is asked for log messages only with --log-level LEVEL:\n"
    "a 2025-11-25 server gets logging/setLevel when it declares the logging capability; a 2026-07-28\n"
    "server is asked on each request only when it still declares logging (SEP-2577 deprecates it),\n"
    "otherwise nothing is asked and none are printed.\n"
    "When the server asks the user something (elicitation), the question is asked on stderr and\n"
    "answered on stdin: a form field by field (defaults shown; an empty line keeps one), a URL by\n"
    "showing it in full and asking for consent (it is never opened). --yes asks nothing: forms are\n"
    "accepted with their defaults, URLs declined.\n"
    "Without URL, TOOL is an aggregated name (server_tool) of the configuration's group (--config, or\n"
    "./mcp.json): the call goes to that server with its headers; --events records which server in each event.\n"
    "--tasks declares the tasks extension (SEP-2663): a server may then answer with a task, which is\n"
    "polled until it ends; its status (and statusMessage) is shown on stderr as it changes, one line per\n"
    "change, or on a terminal in the live line, with a progress bar when the progress has a total.\n"
    "'mcpfsm task URL ID' shows or cancels a task later. --store STORE records the task in a shared\n"
    "store until it ends, where 'mcpfsm tasks URL --store STORE' lists it (after a Ctrl-C, say)."
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
    add_yes_option(parser)
    parser.add_argument(
        "--tasks",
        action="store_true",
        help="declare the tasks extension (SEP-2663): the server may answer with a task, polled until it ends,"
        " its status shown on stderr",
    )
    add_task_store_option(parser)
    add_record_option(parser)
    parser.add_argument(
        "--log-level",
        choices=get_args(LogLevel),
        metavar="LEVEL",
        help="ask the server for its log messages at LEVEL and above (debug, info, notice, warning, error,"
        " critical, alert, emergency), printed on stderr: legacy servers that declare logging get"
        " logging/setLevel; 2026-07-28 servers are asked only while they still declare logging (SEP-2577)",
    )


class _Console:
    """stderr for one call: progress lines, events, and (on a terminal) a spinner with elapsed time."""

    def __init__(self, stream: IO[str], label: str) -> None:
        self._stream = stream
        self._label = label
        self._live = stream.isatty()
        self._drawn = False
        self._paused = False
        self._bar: tuple[float, float] | None = None
        self._status: str | None = None

    def line(self, text: str) -> None:
        """Write one line, clearing the spinner first."""
        self._clear()
        write(self._stream, text)

    def notification(self, method: str, params: dict[str, Any]) -> None:
        """Show a progress or log notification of the server as one line."""
        if method == "notifications/progress":
            progress, total = params.get("progress"), params.get("total")
            if _is_number(progress) and _is_number(total) and total > 0:
                self._bar = (float(progress), float(total))
            amount = _number(progress) if total is None else f"{_number(progress)}/{_number(total)}"
            message = params.get("message")
            self.line(f"mcpfsm: progress {amount}" + (f": {one_line(str(message))}" if message else ""))
        elif method == "notifications/message":
            data = params.get("data")
            text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
            self.line(f"mcpfsm: server log ({params.get('level', 'info')}): {one_line(text)}")
        else:
            logger.debug("notification {} from the server: {}", method, params)

    def event(self, event: CallEvent) -> None:
        """Show a task's status as it changes: a line each, or on a terminal the live line's tail."""
        if not isinstance(event, TaskEvent) or event.task_id is None:
            return
        status = f"task {event.task_id} {event.state}" + (
            f": {one_line(event.status_message)}" if event.status_message else ""
        )
        if status == self._status:
            return
        self._status = status
        if not self._live:
            self.line(f"mcpfsm: {status}")

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
            tail = "" if self._bar is None else " " + _progress_bar(*self._bar)
            tail += "" if self._status is None else f" {self._status}"
            text = f"{_SPINNER[tick % 4]} {self._label} {elapsed:.1f}s{tail}"
            redraw(self._stream, text, self._columns())  # one row, or \r redraws no more
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

    def _columns(self) -> int:
        try:
            columns = os.get_terminal_size(self._stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            columns = 0
        return columns if columns > 1 else 80

    def _clear(self) -> None:
        if self._drawn:
            erase(self._stream)
            self._drawn = False


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _progress_bar(progress: float, total: float, width: int = 20) -> str:
    # "[########............] 2/5": the share of the progress notification's total done.
    done = max(0, min(width, int(width * progress / total)))
    return f"[{'#' * done}{'.' * (width - done)}] {_number(progress)}/{_number(total)}"


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
    pairs = _sort_words(args)
    arguments = parse_arguments(args.args)
    for pair in pairs:
        if not is_pair(pair):
            raise CliError(Exit.usage, f"argument {pair!r} is not KEY=VALUE or KEY:=JSON")
    console = _Console(sys.stderr, args.tool)
    events = None if args.events is None else _EventLog(args.events, console)
    elicitation = TerminalElicitation(stdin=sys.stdin, stderr=sys.stderr, assume_yes=args.yes, pause=console.paused)
    on_event = _with_status(console, events) if args.tasks else events
    store = shared_store(args)
    config = group_config(args)
    if config is not None:
        refuse_record_for_group(args)

        async def in_group() -> ToolResult:
            async with entered(store, None):
                return await _call_in_group(args, config, arguments, pairs, console, on_event, elicitation, store)

        with events or contextlib.nullcontext():
            result = trio.run(in_group)
        return _print_result(args, result)
    # Built, and so checked, before the events file is opened: a usage error leaves no empty file behind.
    client = make_client(
        args,
        on_event=on_event,
        on_notification=console.notification,
        on_elicitation=elicitation,
        elicitation_modes=("form", "url"),
        log_level=args.log_level,
        **_task_options(args),
        **client_store(store),
    )

    async def call() -> ToolResult:
        async with entered(store, args.url):
            return await answer()

    async def answer() -> ToolResult:
        with connection_errors(target(args), client):
            async with client:
                if args.by_name:
                    by_name = apply_pairs(arguments, pairs, None)
                    return await console.run(lambda: client.call_tool(args.tool, by_name))
                tools = await client.tools()
                tool = tools.get(args.tool)
                if tool is None:
                    raise CliError(Exit.unknown_tool, unknown_tool(args.tool, tools))
                checked = _checked(args, tool.input_schema, arguments, pairs)
                return await console.run(lambda: tool.call(checked))

    with events or contextlib.nullcontext():
        result = trio.run(call)
    return _print_result(args, result)


async def _call_in_group(
    args: argparse.Namespace,
    config: Config,
    arguments: dict[str, Any],
    pairs: list[str],
    console: _Console,
    on_event: Callable[[CallEvent], None] | None,
    elicitation: TerminalElicitation,
    store: Store | None,
) -> ToolResult:
    from ..._client.group import ClientGroup

    if args.by_name:
        raise CliError(Exit.usage, "--by-name needs one server: name it where the URL goes")
    async with ClientGroup(
        config,
        on_event=on_event,
        on_notification=console.notification,
        on_elicitation=elicitation,
        elicitation_modes=("form", "url"),
        **_task_options(args),
        **client_store(store),
    ) as group:
        tools = await group.tools()
        tool = tools.get(args.tool)
        if tool is None:
            failed = "".join(f"; server {name!r} failed: {error}" for name, error in group.errors.items())
            raise CliError(Exit.unknown_tool, unknown_tool(args.tool, tools) + failed)
        args.server_name = tool.server if isinstance(tool, GroupTool) else None
        checked = _checked(args, tool.input_schema, arguments, pairs)
        with connection_errors(target(args)):
            return await console.run(lambda: tool.call(checked))


def _task_options(args: argparse.Namespace) -> dict[str, Any]:
    # tasks=True only when asked: a client option the group's members and Client.http/stdio all take.
    return {"tasks": True} if args.tasks else {}


def _with_status(console: _Console, events: _EventLog | None) -> Callable[[CallEvent], None]:
    # --tasks: every event goes by the console (a task's status), then to --events when given.
    def on_event(event: CallEvent) -> None:
        console.event(event)
        if events is not None:
            events(event)

    return on_event


def _checked(
    args: argparse.Namespace, schema: Mapping[str, Any] | None, arguments: dict[str, Any], pairs: list[str]
) -> dict[str, Any]:
    # The pairs typed by the tool's inputSchema, and the whole checked against it before anything is sent.
    checked = apply_pairs(arguments, pairs, schema)
    problems = schema_problems(schema, checked)
    if problems:
        raise CliError(
            Exit.usage,
            f"the arguments do not match the inputSchema of tool {args.tool!r}, so nothing was sent: "
            + "; ".join(problems)
            + f" (see 'mcpfsm tools {target(args)}')",
        )
    return checked


def _print_result(args: argparse.Namespace, result: ToolResult) -> Exit:
    print_line(json.dumps(result.raw, indent=None if args.compact else 2, ensure_ascii=False))
    if result.is_error:
        detail = one_line(result.text)
        error_line(f"tool {args.tool!r} answered isError: true" + (f": {detail}" if detail else ""))
        return Exit.tool_error
    return Exit.ok


_USAGE: Final = "mcpfsm call URL TOOL [KEY=VALUE ...]"


def _sort_words(args: argparse.Namespace) -> list[str]:
    # The positional words are URL, TOOL and pairs, or, with --stdio, TOOL and pairs; the rest are the pairs.
    # Where a configuration is found (--config, ./mcp.json, the user's config dir), the first word may instead
    # be one of its server names, or the tool's aggregated name when no server is named (docs/groups.md).
    words = list(args.words)
    if args.stdio is None:
        if not words:
            raise CliError(Exit.usage, f'give the server URL and the tool to call: {_USAGE} (or --stdio "CMD" TOOL)')
        if not is_url(words[0]):
            path = find_config(args)
            if path is not None:
                config = read_config(path)
                named = words[0] in config and len(words) > 1 and not is_pair(words[1])
                args.url = words.pop(0) if named else None
                args.tool = words.pop(0)
                return words
        if not is_url(words[0]) and len(words) == 1:
            raise CliError(Exit.usage, f"give the server URL before the tool {words[0]!r}: {_USAGE}")
        args.url = words.pop(0)
    elif words and is_url(words[0]):
        raise CliError(Exit.usage, "give either URL or --stdio, not both")
    if not words:
        lister = "mcpfsm tools URL" if args.stdio is None else 'mcpfsm tools --stdio "CMD"'
        raise CliError(Exit.usage, f"give the tool to call after the server: {_USAGE} ('{lister}' lists them)")
    if is_pair(words[0]):
        raise CliError(Exit.usage, f"{words[0]!r} is an argument, not a tool: give the tool first: {_USAGE}")
    args.tool = words.pop(0)
    return words


def unknown_tool(name: str, tools: ToolList) -> str:
    for exclusion in tools.excluded:
        if exclusion.name == name:
            return f"tool {name!r} is excluded: {exclusion.reason} (--by-name calls it without mirroring)"
    listed = ", ".join(tools.names) or "no tools"
    return f"unknown tool {name!r}; the server lists: {listed}"
