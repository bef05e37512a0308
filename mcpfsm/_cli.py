"""The ``mcpfsm`` command: demo, tools, call, plan, trace and diagram (console script ``mcpfsm``).

This is the one place in mcpfsm that configures logging: WARNINGs of the library (an excluded tool,
say) go to stderr as one ``mcpfsm: warning: …`` line each, ``-v`` adds DEBUG. Every failure ends
with exactly one ``mcpfsm: error: …`` line on stderr and an exit code of its own (see
:class:`Exit` and ``mcpfsm --help``), never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import shlex
import sys
import traceback
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from enum import IntEnum
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Final, NoReturn, TypeVar

import httpx
import trio
from loguru import logger

from . import __version__, _diagram
from ._client import Client, ToolList, ToolResult
from ._codec import HEADER_NAME_TOKEN
from ._errors import McpError, MirroringError, RpcError, TransportError
from ._events import CallEvent
from ._machine import TERMINAL, State
from ._peer_process import PeerStartError, RunningPeer, missing_modules, run_peer
from ._plan import LEGACY_VERSIONS, MODERN_VERSION, plan_request
from ._schema import inspect_input_schema, json_pointer
from ._trace import parse_events, select_call, sequence_diagram
from ._walkthrough import PeerUnavailable

__all__ = ["Exit", "main"]

_T = TypeVar("_T")


class Exit(IntEnum):
    """The exit codes of ``mcpfsm``; each failure class has its own."""

    ok = 0
    tool_error = 1
    usage = 2
    bad_url = 3
    unreachable = 4
    protocol = 5
    unknown_tool = 6
    invalid_schema = 7
    rpc_error = 8
    drift = 9
    missing_component = 10
    internal = 70
    interrupted = 130


_EXIT_CODES = f"""\
exit codes:
  {Exit.ok:<4} success
  {Exit.tool_error:<4} call: the tool answered with isError: true (the result is still printed)
  {Exit.usage:<4} usage error: bad option, bad JSON in --args, malformed --header, unreadable or
       malformed input file (schema, events), unwritable output file (--events, --output)
  {Exit.bad_url:<4} the server URL is not an absolute http:// or https:// URL
  {Exit.unreachable:<4} the server cannot be reached, or the transport failed (network, timeout,
       HTTP error without a JSON-RPC body, stdio server that does not start or dies)
  {Exit.protocol:<4} the server's answer is not valid JSON-RPC / MCP
  {Exit.unknown_tool:<4} the tool is not listed (or was excluded for invalid x-mcp-header annotations)
  {Exit.invalid_schema:<4} invalid inputSchema (plan), or an argument cannot be mirrored into its header
  {Exit.rpc_error:<4} the server answered a JSON-RPC error (an unrecovered -32020 included)
  {Exit.drift:<4} diagram --check: the generated diagrams are out of date
  {Exit.missing_component:<4} an optional component is missing (the MCP SDK for demo and diagram,
       Graphviz for diagram)
  {Exit.internal:<4} internal error (a bug in mcpfsm; -v prints the traceback)
  {Exit.interrupted:<4} interrupted (Ctrl-C)
"""

_DESCRIPTION = "An MCP client where every tool call is an explicit, audited state machine."

DEMO_ARGUMENTS: Final[Mapping[str, Any]] = {
    "query": "select 1",
    "database": "analytics",
    "region": "eu",
    "options": {"readOnly": True},
}
"""The arguments ``mcpfsm demo`` calls ``execute-sql`` with."""

_DEMO_TOOL: Final = "execute-sql"
_DEMO_START_TIMEOUT: Final = 30.0
_SPINNER: Final = "|/-\\"
_SENDING: Final = frozenset({State.sending, State.retrying})
_MAX_ERROR: Final = 1000
_PROTOCOLS: Final = ("auto", MODERN_VERSION, *LEGACY_VERSIONS)


class CliError(Exception):
    """A failure the command reports as one ``mcpfsm: error:`` line and exit ``code``."""

    def __init__(self, code: Exit, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# --- argument parsing --------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse, except that a usage error is one line and exit code 2, like every other error."""

    def error(self, message: str) -> NoReturn:
        """Raise the usage error instead of printing the usage block."""
        raise CliError(Exit.usage, f"{message} (see '{self.prog} --help')")


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=30, width=100)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``mcpfsm`` argument parser (subcommands demo, tools, call, plan, trace, diagram)."""
    verbose = _Parser(add_help=False)
    verbose.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log mcpfsm DEBUG messages to stderr"
    )
    parser = _Parser(
        prog="mcpfsm", description=_DESCRIPTION, epilog=_EXIT_CODES, formatter_class=_formatter, parents=[verbose]
    )
    parser.add_argument("--version", action="version", version=f"mcpfsm {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, summary: str, description: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            help=summary,
            description=description,
            epilog="exit codes: see 'mcpfsm --help'",
            formatter_class=_formatter,
            parents=[verbose],
        )

    command(
        "demo",
        "run the -32020 recovery against an embedded MCP server",
        "Start the official MCP SDK server on 127.0.0.1, list its tools, call execute-sql showing the\n"
        "headers sent, change the server's schema, and call through the stale tool handle so the\n"
        "-32020 -> relist -> retry path runs, printing each state as the call enters it.\n"
        "Needs the demo extra: pip install 'mcpfsm[demo]'.",
    )

    tools = command(
        "tools",
        "list a server's tools and their mirrored headers",
        "List the tools of a server: each with its mirrored x-mcp-header arguments (path -> header),\n"
        "then the tools excluded because of invalid annotations, with the reason.",
    )
    _add_server_options(tools)
    tools.add_argument("--json", action="store_true", help="machine-readable output")

    call = command(
        "call",
        "call a tool; print the result as JSON",
        "Call TOOL and print its result (the JSON-RPC result object) as JSON on stdout.\n"
        "By default the tools are listed first and the listed tool is called, so its annotated\n"
        "arguments are mirrored into Mcp-Param-* headers; --by-name sends the name only.\n"
        "Progress and log notifications of the server are printed to stderr as they arrive.",
    )
    _add_server_options(call, tool=True)
    _add_args_option(call)
    call.add_argument("--by-name", action="store_true", help="call by name: no listing, no Mcp-Param-* headers")
    call.add_argument(
        "--events", metavar="FILE|-", help="write the call's audit events as JSON Lines to FILE ('-': stderr)"
    )
    call.add_argument("--compact", action="store_true", help="print the result on one line")

    plan = command(
        "plan",
        "show the headers a tools/call would send (no network)",
        "Validate a tool's inputSchema (SPEC §3) and print the headers a tools/call with --args\n"
        f"would carry at protocol {MODERN_VERSION}, one 'Name: value' per line. FILE holds a bare\n"
        "inputSchema, a tool object with an inputSchema, or a tools/list result (pick a tool\n"
        "with --tool). Nothing is sent.",
    )
    plan.add_argument("--schema", required=True, metavar="FILE", help="the schema file ('-': stdin)")
    _add_args_option(plan)
    plan.add_argument("--tool", metavar="NAME", help="the tool (its Mcp-Name; picks one of a tools/list result)")
    plan.add_argument("--json", action="store_true", help="print the headers as a JSON object")

    trace = command(
        "trace",
        "draw a recorded call as a Mermaid sequence diagram",
        "Turn one call's audit events (JSON Lines, as written by 'mcpfsm call --events') into a\n"
        "Mermaid sequenceDiagram: client and server, the headers on the arrows, the states as notes.",
    )
    trace.add_argument("events", metavar="EVENTS.jsonl", help="the events file ('-': stdin)")
    trace.add_argument("--call", metavar="CALL_ID", help="the call to draw (default: the last call in the file)")
    trace.add_argument("-o", "--output", metavar="FILE", help="write the diagram to FILE instead of stdout")

    diagram = command(
        "diagram",
        "regenerate or verify specs/ and diagrams/",
        "Regenerate the state machine diagrams in specs/ and diagrams/ from mcpfsm/_machine.py, and\n"
        "specs/tool-call.md from a run against the test server; or with --check verify that they are\n"
        "up to date. Needs Graphviz's dot for the SVG and the MCP SDK for specs/tool-call.md.",
    )
    diagram.add_argument("--check", action="store_true", help="only verify; exit 9 naming the files out of date")
    diagram.add_argument("--root", type=Path, default=None, metavar="DIR", help="repository root (default: .)")
    return parser


def _add_server_options(parser: argparse.ArgumentParser, *, tool: bool = False) -> None:
    parser.add_argument("url", nargs="?", metavar="URL", help="the MCP endpoint, e.g. http://127.0.0.1:8000/mcp")
    if tool:
        parser.add_argument("tool", metavar="TOOL", help="the tool name")
    parser.add_argument(
        "--stdio", metavar='"CMD ARGS"', help="run this command as a stdio MCP server, in place of URL"
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="K:V",
        help="extra HTTP header for every request (repeatable; mcp-* names are dropped)",
    )
    parser.add_argument(
        "--protocol", choices=_PROTOCOLS, default="auto", help="protocol version to pin (default: auto)"
    )
    parser.add_argument("--timeout", type=_positive, metavar="SECONDS", help="HTTP timeout (default: 30 s, read 300 s)")


def _add_args_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--args", default="{}", metavar="JSON", help="the arguments: a JSON object, or @FILE to read one (default: {})"
    )


# --- entry point -------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mcpfsm`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    verbose = False
    try:
        args = build_parser().parse_args(argv)
        verbose = bool(getattr(args, "verbose", False))
        _configure_logging(verbose)
        return int(_COMMANDS[args.command](args))
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except BaseException as exc:  # the one place where every failure becomes one line
        error = _leaf(exc)
        code, message = _classify(error)
        if code is Exit.internal and verbose:
            traceback.print_exception(error)
        if isinstance(error, BrokenPipeError):
            # The reader went away (`mcpfsm ... | head`): not an error; keep Python's exit flush quiet.
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return int(Exit.ok)
        _error_line(message)
        return int(code)


def _leaf(exc: BaseException) -> BaseException:
    # trio wraps errors raised inside a nursery in an ExceptionGroup; one failure is one leaf.
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, BaseExceptionGroup):
        leaves = [_leaf(inner) for inner in exc.exceptions]
        for leaf in leaves:
            if isinstance(leaf, KeyboardInterrupt | CliError | McpError):
                return leaf
    return exc


def _classify(exc: BaseException) -> tuple[Exit, str]:
    if isinstance(exc, CliError):
        return exc.code, exc.message
    if isinstance(exc, KeyboardInterrupt):
        return Exit.interrupted, "interrupted"
    if isinstance(exc, MirroringError):
        return Exit.invalid_schema, str(exc)
    if isinstance(exc, RpcError):
        return Exit.rpc_error, f"the server answered JSON-RPC error {exc.code}: {exc.message}"
    if isinstance(exc, TransportError):
        return Exit.unreachable, str(exc)
    if isinstance(exc, McpError):  # ProtocolError, HeaderDecodeError
        return Exit.protocol, f"protocol error: {exc}"
    return Exit.internal, f"internal error: {type(exc).__name__}: {exc}"


def _one_line(text: str) -> str:
    return re.sub(r"\s*[\r\n]+\s*", " ", text).strip()


def _error_line(message: str) -> None:
    text = _one_line(message)
    if len(text) > _MAX_ERROR:
        text = text[: _MAX_ERROR - 3] + "..."
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"mcpfsm: error: {text}\n")
        sys.stderr.flush()


def _configure_logging(verbose: bool) -> None:
    logger.remove()

    def line(record: Any) -> str:
        return "mcpfsm: " + str(record["level"].name).lower() + ": {message}\n"

    logger.add(sys.stderr, level="DEBUG" if verbose else "WARNING", format=line, colorize=False, backtrace=False)
    logger.enable("mcpfsm")


# --- shared pieces -------------------------------------------------------------------------------------


def _read_text(path: str, what: str) -> str:
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(Exit.usage, f"cannot read {what} {path!r}: {_os_reason(exc)}") from exc


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def _load_json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(Exit.usage, f"{source} is not valid JSON: {exc}") from exc


def _arguments(text: str) -> dict[str, Any]:
    source = "--args"
    if text.startswith("@"):
        source = f"--args file {text[1:]!r}"
        text = _read_text(text[1:], "--args file")
    value = _load_json(text, source)
    if not isinstance(value, dict):
        raise CliError(Exit.usage, f"{source} must be a JSON object, got a JSON {_json_kind(value)}")
    return value


def _json_kind(value: object) -> str:
    kinds = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def _headers(pairs: Sequence[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for pair in pairs:
        name, colon, value = pair.partition(":")
        name = name.strip()
        # The RFC 9110 token rule that x-mcp-header values follow too (SPEC §3).
        if not colon or not HEADER_NAME_TOKEN.fullmatch(name):
            raise CliError(Exit.usage, f"--header {pair!r} is not 'Name: value' with a valid header name")
        headers[name] = value.strip()
    return headers


def _target(args: argparse.Namespace) -> str:
    return str(args.url) if args.stdio is None else f"stdio server {args.stdio!r}"


def _client(
    args: argparse.Namespace,
    *,
    on_event: Callable[[CallEvent], object] | None = None,
    on_notification: Callable[[str, dict[str, Any]], object] | None = None,
) -> Client:
    headers = _headers(args.header)
    if args.stdio is not None:
        if args.url is not None:
            raise CliError(Exit.usage, "give either URL or --stdio, not both")
        if headers:
            raise CliError(Exit.usage, "--header applies to HTTP servers only, not to --stdio")
        try:
            command = shlex.split(args.stdio)
        except ValueError as exc:
            raise CliError(Exit.usage, f"--stdio {args.stdio!r}: {exc}") from exc
        if not command:
            raise CliError(Exit.usage, "--stdio needs a command")
        # Client sends a progressToken on tools/call whenever on_notification is set.
        return Client.stdio(command, protocol=args.protocol, on_event=on_event, on_notification=on_notification)
    if args.url is None:
        raise CliError(Exit.usage, "give the server URL, or --stdio \"CMD ARGS\"")
    try:
        return Client.http(
            args.url,
            headers=headers,
            protocol=args.protocol,
            on_event=on_event,
            on_notification=on_notification,
            timeout=args.timeout,
        )
    except TransportError as exc:
        raise CliError(Exit.bad_url, str(exc)) from exc


@contextlib.contextmanager
def _connection_errors(target: str) -> Iterator[None]:
    try:
        yield
    except TransportError as exc:
        raise CliError(Exit.unreachable, f"{target}: {exc}") from exc


def render_tools(tools: ToolList, *, mirroring: bool = True) -> str:
    """The human-readable ``mcpfsm tools`` table: name, mirrored headers, then the excluded tools."""
    width = max([len("TOOL"), *(len(tool.name) for tool in tools)])
    lines = [f"{'TOOL':<{width}}  MIRRORED HEADERS (argument -> header)"]
    for tool in tools:
        mirrored = [f"{json_pointer(path)} -> {header}" for path, header in tool.mirrored.items()] or ["-"]
        lines.append(f"{tool.name:<{width}}  {mirrored[0]}")
        lines += [f"{'':<{width}}  {line}" for line in mirrored[1:]]
    if not mirroring:
        lines.append("(this connection does not mirror: x-mcp-header annotations are inert on stdio and legacy)")
    if tools.excluded:
        lines.append("excluded:")
        lines += [f"  {exclusion.name}: {exclusion.reason}" for exclusion in tools.excluded]
    else:
        lines.append("excluded: none")
    return "\n".join(lines)


def _tools_json(tools: ToolList, protocol: str | None) -> dict[str, Any]:
    return {
        "protocol": protocol,
        "tools": [
            {
                "name": tool.name,
                "description": tool.description,
                "mirrored": [
                    {"path": list(path), "pointer": json_pointer(path), "header": header}
                    for path, header in tool.mirrored.items()
                ],
            }
            for tool in tools
        ],
        "excluded": [{"name": e.name, "reason": e.reason} for e in tools.excluded],
    }


def _print(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


# --- tools -------------------------------------------------------------------------------------------


def _cmd_tools(args: argparse.Namespace) -> Exit:
    client = _client(args)

    async def run() -> tuple[ToolList, str | None, bool]:
        with _connection_errors(_target(args)):
            async with client:
                return await client.tools(), client.protocol_version, client.mirrors

    tools, protocol, mirroring = trio.run(run)
    if args.json:
        _print(json.dumps(_tools_json(tools, protocol), indent=2, ensure_ascii=False))
    else:
        _print(render_tools(tools, mirroring=mirroring))
    return Exit.ok


# --- call ----------------------------------------------------------------------------------------------


class _Console:
    """stderr for one call: progress lines, events, and (on a terminal) a spinner with elapsed time."""

    def __init__(self, stream: IO[str], label: str) -> None:
        self._stream = stream
        self._label = label
        self._live = stream.isatty()
        self._drawn = False

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
            self.line(f"mcpfsm: progress {amount}" + (f": {_one_line(str(message))}" if message else ""))
        elif method == "notifications/message":
            data = params.get("data")
            text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
            self.line(f"mcpfsm: server log ({params.get('level', 'info')}): {_one_line(text)}")
        else:
            logger.debug("notification {} from the server: {}", method, params)

    async def run(self, call: Callable[[], Awaitable[_T]]) -> _T:
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
            elapsed = trio.current_time() - started
            self._stream.write(f"\r{_SPINNER[tick % 4]} {self._label} {elapsed:.1f}s\x1b[K")
            self._stream.flush()
            self._drawn = True
            await trio.sleep(0.1)

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
                raise CliError(Exit.usage, f"cannot write events to {self._target!r}: {_os_reason(exc)}") from exc
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


def _cmd_call(args: argparse.Namespace) -> Exit:
    arguments = _arguments(args.args)
    console = _Console(sys.stderr, args.tool)
    events = None if args.events is None else _EventLog(args.events, console)
    # Built, and so checked, before the events file is opened: a usage error leaves no empty file behind.
    client = _client(args, on_event=events, on_notification=console.notification)

    async def run() -> ToolResult:
        with _connection_errors(_target(args)):
            async with client:
                if args.by_name:
                    return await console.run(lambda: client.call_tool(args.tool, arguments))
                tools = await client.tools()
                tool = tools.get(args.tool)
                if tool is None:
                    raise CliError(Exit.unknown_tool, _unknown_tool(args.tool, tools))
                return await console.run(lambda: tool.call(arguments))

    with events or contextlib.nullcontext():
        result = trio.run(run)
    _print(json.dumps(result.raw, indent=None if args.compact else 2, ensure_ascii=False))
    if result.is_error:
        detail = _one_line(result.text)
        _error_line(f"tool {args.tool!r} answered isError: true" + (f": {detail}" if detail else ""))
        return Exit.tool_error
    return Exit.ok


def _unknown_tool(name: str, tools: ToolList) -> str:
    for exclusion in tools.excluded:
        if exclusion.name == name:
            return f"tool {name!r} is excluded: {exclusion.reason} (--by-name calls it without mirroring)"
    listed = ", ".join(tools.names) or "no tools"
    return f"unknown tool {name!r}; the server lists: {listed}"


# --- plan ----------------------------------------------------------------------------------------------


def _cmd_plan(args: argparse.Namespace) -> Exit:
    document = _load_json(_read_text(args.schema, "schema file"), f"schema file {args.schema!r}")
    arguments = _arguments(args.args)
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
        _print(json.dumps(plan.as_dict(), indent=2, ensure_ascii=False))
    else:
        _print("\n".join(f"{header}: {value}" for header, value in plan))
    return Exit.ok


def _pick_schema(document: object, wanted: str | None, path: str) -> tuple[str, object]:
    if not isinstance(document, dict):
        raise CliError(Exit.invalid_schema, f"schema file {path!r} holds a JSON {_json_kind(document)}, not an object")
    if isinstance(document.get("tools"), list):
        entries = [e for e in document["tools"] if isinstance(e, dict) and isinstance(e.get("name"), str)]
        names = ", ".join(e["name"] for e in entries) or "none"
        if wanted is None:
            if len(entries) != 1:
                raise CliError(Exit.usage, f"{path!r} lists {len(entries)} tools ({names}); pick one with --tool NAME")
            wanted = entries[0]["name"]
        for entry in entries:
            if entry["name"] == wanted:
                return wanted, entry.get("inputSchema", {})
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


# --- trace ---------------------------------------------------------------------------------------------


def _cmd_trace(args: argparse.Namespace) -> Exit:
    text = _read_text(args.events, "events file")
    try:
        events = select_call(parse_events(text), args.call)
    except ValueError as exc:
        raise CliError(Exit.usage, f"{args.events}: {exc}") from exc
    diagram = sequence_diagram(events)
    if args.output is None:
        sys.stdout.write(diagram)
        sys.stdout.flush()
        return Exit.ok
    try:
        Path(args.output).write_text(diagram, encoding="utf-8")
    except OSError as exc:
        raise CliError(Exit.usage, f"cannot write {args.output!r}: {_os_reason(exc)}") from exc
    return Exit.ok


# --- diagram -------------------------------------------------------------------------------------------


def _cmd_diagram(args: argparse.Namespace) -> Exit:
    root: Path = args.root if args.root is not None else Path.cwd()
    if not root.is_dir():
        raise CliError(Exit.usage, f"--root {str(root)!r} is not a directory")
    if not args.check and not ((root / "specs").is_dir() or (root / "pyproject.toml").is_file()):
        raise CliError(
            Exit.usage, f"{str(root)!r} does not look like the mcpfsm repository (no specs/ or pyproject.toml)"
        )
    try:
        if args.check:
            drifted = _diagram.check_all(root)
            if drifted:
                raise CliError(
                    Exit.drift,
                    f"out of date: {', '.join(drifted)}; regenerate with: {_diagram.REGENERATE_COMMAND}",
                )
            _print("diagrams up to date")
            return Exit.ok
        written = _diagram.write_all(root)
    except (_diagram.GraphvizNotFound, PeerUnavailable) as exc:
        raise CliError(Exit.missing_component, str(exc)) from exc
    except OSError as exc:
        raise CliError(Exit.usage, f"cannot write the diagrams under {str(root)!r}: {_os_reason(exc)}") from exc
    for path in written:
        _print(f"wrote {path}")
    if not written:
        _print("diagrams up to date")
    return Exit.ok


# --- demo ----------------------------------------------------------------------------------------------


def _cmd_demo(args: argparse.Namespace) -> Exit:
    if missing_modules():
        raise CliError(Exit.missing_component, "the demo needs the official MCP SDK: pip install 'mcpfsm[demo]'")
    _print(f"starting the demo server (official MCP SDK, protocol {MODERN_VERSION}) on 127.0.0.1 ...")
    with _demo_server() as peer:
        return trio.run(_demo, peer)


@contextlib.contextmanager
def _demo_server() -> Iterator[RunningPeer]:
    try:
        with run_peer("modern", timeout=_DEMO_START_TIMEOUT) as peer:
            yield peer
    except PeerStartError as exc:
        tail = [text for text in exc.stderr.splitlines() if text.strip()]
        why = tail[-1] if tail else exc.reason
        raise CliError(Exit.unreachable, f"the demo server did not start: {why}") from exc


def event_lines(event: CallEvent) -> list[str]:
    """One human line for an event (seq, state, trigger, attempt, error), then its headers when it sends."""
    text = f"  [{event.seq}] {event.state}"
    if event.trigger is not None:
        text += f" <- {event.trigger}"
    if event.state in _SENDING:
        text += f" (attempt {event.attempt})"
    if event.error is not None:
        code = event.error.get("code")
        text += f"  error {code if code is not None else event.error.get('type')}: {event.error.get('message')}"
    if event.state in TERMINAL:
        text += f"  after {event.elapsed * 1000:.1f} ms"
    lines = [re.sub(r"[\r\n]+", " ", text)]
    if event.state in _SENDING and event.headers:
        lines += [f"        {name}: {value}" for name, value in event.headers.items()]
    return lines


async def _demo(peer: RunningPeer) -> Exit:
    recorded: list[CallEvent] = []

    def show(event: CallEvent) -> None:
        recorded.append(event)
        for line in event_lines(event):
            _print(line)

    with _connection_errors(f"demo server {peer.url}"):
        async with Client.http(peer.url, on_event=show) as client:
            _print(f"server ready at {peer.url}; protocol {client.protocol_version}")
            _print("")
            _print("tools/list:")
            tools = await client.tools()
            _print("\n".join("  " + line for line in render_tools(tools).splitlines()))
            tool = tools.get(_DEMO_TOOL)
            if tool is None:
                raise CliError(Exit.unknown_tool, _unknown_tool(_DEMO_TOOL, tools))
            arguments = json.dumps(DEMO_ARGUMENTS)
            _print("")
            _print(f"1) call {tool.name} {arguments}")
            result = await tool.call(DEMO_ARGUMENTS)
            _print(f"  result: {result.text}")
            _print("")
            _print("2) the server's schema changes: execute-sql.region gains x-mcp-header: Region")
            await _control("change the schema", lambda: peer.control({"action": "evolve"}))
            await _control("clear its request log", peer.clear_log)
            _print(f"3) call again through the same, now stale, Tool handle: {tool.name} {arguments}")
            recorded.clear()
            result = await tool.call(DEMO_ARGUMENTS)
            _print(f"  result: {result.text}")
            log = await _control("read its request log", peer.log)
    _print("")
    _print(_summary(recorded, log))
    return Exit.ok


async def _control(what: str, request: Callable[[], _T]) -> _T:
    # The peer's control surface is plain sync HTTP: run it off the trio thread.
    try:
        return await trio.to_thread.run_sync(request)
    except (httpx.HTTPError, ValueError) as exc:
        raise CliError(Exit.unreachable, f"the demo server could not {what}: {exc}") from exc


def _summary(events: Sequence[CallEvent], log: Sequence[Mapping[str, Any]]) -> str:
    steps = []
    for entry in log:
        step = str(entry.get("jsonrpc_method"))
        if entry.get("status") != 200:
            step += f" (HTTP {entry.get('status')})"
        steps.append(step)
    states = " -> ".join(event.state for event in events)
    sent = [dict(e.headers or {}) for e in events if e.state in _SENDING]
    added = ""
    if len(sent) == 2:
        new = [f"{name}: {value}" for name, value in sent[1].items() if sent[0].get(name) != value]
        added = f"\nthe retry carried what the fresh schema asks for: {', '.join(new) or 'the same headers'}"
    outcome = "recovered" if events and events[-1].state == "succeeded" else "ended"
    return f"{outcome} in {len(steps)} requests: {' -> '.join(steps)}\nstates: {states}{added}"


_COMMANDS: Final[Mapping[str, Callable[[argparse.Namespace], Exit]]] = {
    "demo": _cmd_demo,
    "tools": _cmd_tools,
    "call": _cmd_call,
    "plan": _cmd_plan,
    "trace": _cmd_trace,
    "diagram": _cmd_diagram,
}
