"""What every ``mcpfsm`` command shares: exit codes, the one-line error, argument parsing, the client.

Every failure ends with exactly one ``mcpfsm: error: …`` line on stderr and an exit code of its own
(:class:`Exit`), never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shlex
import ssl
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from enum import IntEnum
from pathlib import Path
from typing import Any, Final, NoReturn, TypeVar

from ..._client.assembly import HttpServer, StdioServer
from ..._client.client import Client
from ..._client.options import ClientOptions
from ..._core.codec import is_token
from ..._core.config import Config
from ..._core.constants import LEGACY_VERSIONS, METHOD_NOT_FOUND, MODERN_VERSION
from ..._core.errors import (
    AuthorizationError,
    ConfigError,
    McpError,
    MirroringError,
    RpcError,
    TaskError,
    TransportError,
)
from ..._core.events import CallEvent
from ..._core.h1 import connection_header_problem, field_problem
from ..._transports.tls import ssl_context
from .configured import add_config_option, find_config, is_url, named_server, read_config

# `positive` lives with the login options, which common imports (the other way round would be a cycle).
from .credentials import add_auth_options, auth_from, positive
from .terminal import log_sink, out, write
from .wire import method_not_found, wire_of, wired

__all__ = [
    "MAX_ERROR",
    "PROTOCOLS",
    "CliError",
    "Exit",
    "Parser",
    "T",
    "add_args_option",
    "add_http_options",
    "add_listing_options",
    "add_record_option",
    "add_server_options",
    "classify",
    "columns",
    "configure_logging",
    "connection_errors",
    "error_line",
    "formatter",
    "group_config",
    "header_pairs",
    "json_kind",
    "leaf",
    "load_json",
    "make_client",
    "one_line",
    "os_reason",
    "parse_arguments",
    "positive",
    "print_line",
    "read_text",
    "refuse_record_for_group",
    "refused_options",
    "target",
    "tls_verify",
    "verbosity",
]

T = TypeVar("T")


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
    unauthorized = 11
    internal = 70
    interrupted = 130


MAX_ERROR: Final = 1000
PROTOCOLS: Final = ("auto", MODERN_VERSION, *LEGACY_VERSIONS)


class CliError(Exception):
    """A failure the command reports as one ``mcpfsm: error:`` line and exit ``code``."""

    def __init__(self, code: Exit, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Parser(argparse.ArgumentParser):
    """argparse, except that a usage error is one line and exit code 2, like every other error."""

    def error(self, message: str) -> NoReturn:
        """Raise the usage error instead of printing the usage block."""
        raise CliError(Exit.usage, f"{message} (see '{self.prog} --help')")


def formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=30, width=100)


def add_server_options(parser: argparse.ArgumentParser, *, tool: bool = False) -> None:
    if tool:
        # URL, TOOL and KEY=VALUE pairs in one list: which word is which depends on --stdio (`call` sorts them).
        parser.add_argument(
            "words",
            nargs="*",
            metavar="URL TOOL [KEY=VALUE ...]",
            help="the MCP endpoint or a server name of the configuration (not with --stdio), the tool (its"
            " aggregated name when no server is named), then its arguments: KEY=VALUE typed by the tool's"
            " inputSchema (count=3, flag=true) or KEY:=JSON (obj:='{\"a\": 1}')",
        )
        parser.set_defaults(url=None, tool=None)
    else:
        parser.add_argument(
            "url",
            nargs="?",
            metavar="URL",
            help="the MCP endpoint, e.g. http://127.0.0.1:8000/mcp, or a server name of the configuration (--config)",
        )
    parser.add_argument(
        "--stdio", metavar='"CMD ARGS"', help="run this command as a stdio MCP server, in place of URL"
    )
    parser.add_argument(
        "--protocol", choices=PROTOCOLS, default="auto", help="protocol version to pin (default: auto)"
    )
    parser.add_argument(
        "--timeout",
        type=positive,
        metavar="SECONDS",
        help="bound each HTTP connect, write and read (default: 30 s, read 300 s)",
    )
    add_config_option(parser)
    add_http_options(parser)
    add_auth_options(parser)


def add_http_options(parser: argparse.ArgumentParser) -> None:
    # What an HTTP connection takes besides authorization: extra headers and TLS trust (also `mcpfsm login`'s).
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="K:V",
        help="extra HTTP header for every request (repeatable; mcp-* names are dropped)",
    )
    parser.add_argument(
        "--cacert", metavar="FILE", help="trust the CA certificates in this PEM file for https (not the defaults)"
    )
    parser.add_argument(
        "--cert", metavar="FILE", help="client certificate for https: a PEM file with the certificate and its key"
    )


def tls_verify(args: argparse.Namespace) -> ssl.SSLContext | bool:
    # --cacert and --cert as one SSLContext (True: the default trust).
    if args.cacert is None and args.cert is None:
        return True
    try:
        return ssl_context(True if args.cacert is None else args.cacert, args.cert)
    except TransportError as exc:
        raise CliError(Exit.usage, f"{exc} (--cacert and --cert take PEM files)") from exc


def add_args_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--args",
        default="{}",
        metavar="JSON",
        help="the arguments: a JSON object, @FILE to read one from FILE, or - to read one from stdin (default: {})",
    )


def add_record_option(parser: argparse.ArgumentParser) -> None:
    """``--record PATH``: write the session to a cassette (docs/testing.md) that ``mcpfsm replay`` serves."""
    parser.add_argument(
        "--record",
        metavar="PATH",
        help="record the session to this cassette (JSON Lines, replaced if it exists; no secret is written),"
        " for 'mcpfsm replay PATH' and mcpfsm.testing",
    )


def refuse_record_for_group(args: argparse.Namespace) -> None:
    """A configuration's group has several servers: ``--record`` needs one."""
    if getattr(args, "record", None) is not None:
        raise CliError(Exit.usage, "--record records one server: name it where the URL goes")


def add_yes_option(parser: argparse.ArgumentParser) -> None:
    """``--yes``: a command whose server may ask the user something answers without asking."""
    parser.add_argument(
        "--yes", action="store_true", help="answer elicitation without asking: forms with their defaults, URLs declined"
    )


def leaf(exc: BaseException) -> BaseException:
    # trio wraps errors raised inside a nursery in an ExceptionGroup; one failure is one leaf.
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, BaseExceptionGroup):
        leaves = [leaf(inner) for inner in exc.exceptions]
        for found in leaves:
            if isinstance(found, KeyboardInterrupt | CliError | McpError):
                return found
    return exc


def classify(exc: BaseException) -> tuple[Exit, str]:
    if isinstance(exc, CliError):
        return exc.code, exc.message
    if isinstance(exc, KeyboardInterrupt):
        return Exit.interrupted, "interrupted"
    if isinstance(exc, MirroringError):
        return Exit.invalid_schema, str(exc)
    if isinstance(exc, AuthorizationError):
        return Exit.unauthorized, f"authorization failed: {exc}"
    if isinstance(exc, RpcError):
        return Exit.rpc_error, f"the server answered JSON-RPC error {exc.code}: {exc.message}"
    if isinstance(exc, TransportError):
        return Exit.unreachable, str(exc)
    if isinstance(exc, TaskError):  # the task was cancelled or expired (SEP-2663): no result
        return Exit.rpc_error, str(exc)
    if isinstance(exc, ConfigError):
        return Exit.usage, f"configuration: {exc}"
    if isinstance(exc, McpError):  # ProtocolError, HeaderDecodeError
        return Exit.protocol, f"protocol error: {exc}"
    return Exit.internal, f"internal error: {type(exc).__name__}: {exc}"


def one_line(text: str) -> str:
    return re.sub(r"\s*[\r\n]+\s*", " ", text).strip()


def error_line(message: str) -> None:
    text = one_line(message)
    if len(text) > MAX_ERROR:
        text = text[: MAX_ERROR - 3] + "..."
    with contextlib.suppress(OSError, ValueError):
        write(sys.stderr, f"mcpfsm: error: {text}")


def configure_logging(verbose: bool, *, level: str = "WARNING") -> None:
    # Imported here, not with the command: `mcpfsm --help` needs no loguru (mcpfsm._log's disable, made at the
    # library's first record, lets the enable below stand). `level`: what a command shows without -v.
    from loguru import logger

    logger.remove()

    def line(record: Any) -> str:
        return "mcpfsm: " + str(record["level"].name).lower() + ": {message}\n"

    logger.add(log_sink, level="DEBUG" if verbose else level, format=line, colorize=False, backtrace=False)
    logger.enable("mcpfsm")


def read_text(path: str, what: str) -> str:
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(Exit.usage, f"cannot read {what} {path!r}: {os_reason(exc)}") from exc


def os_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def load_json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(Exit.usage, f"{source} is not valid JSON: {exc}") from exc


def parse_arguments(text: str) -> dict[str, Any]:
    source = "--args"
    if text == "-":
        source = "--args from stdin"
        text = read_text("-", "--args from stdin")
    elif text.startswith("@"):
        source = f"--args file {text[1:]!r}"
        text = read_text(text[1:], "--args file")
    value = load_json(text, source)
    if not isinstance(value, dict):
        raise CliError(Exit.usage, f"{source} must be a JSON object, got a JSON {json_kind(value)}")
    return value


def json_kind(value: object) -> str:
    kinds = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def header_pairs(pairs: Sequence[str]) -> dict[str, str]:
    # A header often carries a credential: errors name the header (or its position), never its value.
    headers: dict[str, str] = {}
    for number, pair in enumerate(pairs, start=1):
        name, colon, value = pair.partition(":")
        name = name.strip()
        if not colon:
            raise CliError(Exit.usage, f"--header number {number} has no ':' (expected 'Name: value')")
        # The RFC 9110 token rule that x-mcp-header values follow too (SEP-2243).
        if not is_token(name):
            raise CliError(Exit.usage, f"--header {name!r} is not a valid header name (expected 'Name: value')")
        value = value.strip()
        if connection_header_problem(name) is not None:
            raise CliError(
                Exit.usage,
                f"--header {name}: the connection sets this header itself (Content-Length, Transfer-Encoding, TE,"
                " Trailer and Upgrade cannot be given)",
            )
        if field_problem(name, value) is not None:
            raise CliError(
                Exit.usage,
                f"--header {name}: the value cannot be sent in an HTTP header (visible ASCII with inner spaces"
                " or tabs only; the value is not shown)",
            )
        headers[name] = value
    return headers


def target(args: argparse.Namespace) -> str:
    server = getattr(args, "server_name", None)
    if server is not None:
        return f"server {server!r}"
    if args.stdio is not None:
        return f"stdio server {args.stdio!r}"
    import httpx

    try:
        # Credentials in the URL never appear in a message.
        return str(httpx.URL(args.url).copy_with(username=None, password=None))
    except (httpx.InvalidURL, TypeError):
        return "the server"


def make_client(
    args: argparse.Namespace,
    *,
    on_event: Callable[[CallEvent], object] | None = None,
    on_notification: Callable[[str, dict[str, Any]], object] | None = None,
    **inputs: Any,
) -> Client:
    # `inputs`: the input handlers and their options (on_elicitation=, elicitation_modes=, ...).
    headers = header_pairs(args.header)
    # Client sends a progressToken on tools/call whenever on_notification is set.
    with refused_options():
        options = ClientOptions(
            protocol=args.protocol,
            on_event=on_event,
            on_notification=on_notification,
            record=getattr(args, "record", None),
            **inputs,
        )
    configured = _configured_client(args, headers, options)
    if configured is not None:
        return configured
    if args.stdio is not None:
        if args.url is not None:
            raise CliError(Exit.usage, "give either URL or --stdio, not both")
        for option, value in (
            ("--header", headers),
            ("--cacert", args.cacert),
            ("--cert", args.cert),
            ("--token", getattr(args, "token", None)),
        ):
            if value:
                raise CliError(Exit.usage, f"{option} applies to HTTP servers only, not to --stdio")
        try:
            command = shlex.split(args.stdio)
        except ValueError as exc:
            raise CliError(Exit.usage, f"--stdio {args.stdio!r}: {exc}") from exc
        if not command:
            raise CliError(Exit.usage, "--stdio needs a command")
        return wired(
            lambda wrap: Client(StdioServer(command=command, wrap=wrap), options=options), verbosity=verbosity(args)
        )
    if args.url is None:
        raise CliError(Exit.usage, 'give the server URL, or --stdio "CMD ARGS"')
    verify = tls_verify(args)
    secrets = [getattr(args, "token", None) or "", *headers.values()]
    with refused_options():
        auth = auth_from(args)
        return wired(
            lambda wrap: Client(
                HttpServer(url=args.url, headers=headers, timeout=args.timeout, auth=auth, verify=verify, wrap=wrap),
                options=options,
            ),
            verbosity=verbosity(args),
            secrets=secrets,
        )


@contextlib.contextmanager
def refused_options() -> Iterator[None]:
    """Around ``Client.http(...)``: a ``ValueError`` it raises is a usage error, a ``TransportError`` a bad URL."""
    try:
        yield
    except ValueError as exc:
        raise CliError(Exit.usage, str(exc)) from exc
    except TransportError as exc:
        raise CliError(Exit.bad_url, str(exc)) from exc


def group_config(args: argparse.Namespace) -> Config | None:
    """The configuration a command given no URL and no ``--stdio`` opens as a group, or ``None``."""
    if args.url is not None or args.stdio is not None:
        return None
    path = find_config(args)
    return None if path is None else read_config(path)


def _configured_client(args: argparse.Namespace, headers: dict[str, str], options: ClientOptions) -> Client | None:
    # A server of the configuration where the URL goes (or the configuration's only server, with no URL).
    if args.stdio is not None or (args.url is not None and is_url(args.url)):
        return None
    path = find_config(args)
    if path is None:
        return None
    config = read_config(path)
    if args.url is not None and args.url not in config:
        raise CliError(
            Exit.bad_url,
            f"{args.url!r} is neither an http(s) URL nor a server of {path} (its servers: {', '.join(config.names)})",
        )
    server = named_server(config, args.url, path)
    args.server_name = server.name
    if server.transport == "stdio":
        for option, value in (("--header", headers), ("--cacert", args.cacert), ("--cert", args.cert)):
            if value:
                raise CliError(
                    Exit.usage, f"{option} applies to HTTP servers only, not to stdio server {server.name!r}"
                )
    from ..._client.group import member_client

    changes: dict[str, Any] = {"headers": {**server.headers, **headers}} if headers else {}
    if args.protocol != "auto":
        changes["protocol"] = args.protocol
    if args.timeout is not None:
        changes["timeout"] = args.timeout
    token = getattr(args, "token", None)
    if token is not None or getattr(args, "auth", None) is not None:
        try:
            changes["auth"] = auth_from(args)  # given on the command line: over the configuration's auth
        except ValueError as exc:
            raise CliError(Exit.usage, str(exc)) from exc
    trusts = server.transport == "http" and (args.cacert is not None or args.cert is not None)
    verify = tls_verify(args) if trusts else True
    chosen = replace(server, **changes) if changes else server
    secrets = [token or "", *chosen.headers.values()]
    try:
        return wired(
            lambda wrap: member_client(chosen, options, verify=verify, wrap=wrap),
            verbosity=verbosity(args),
            secrets=secrets,
        )
    except ValueError as exc:
        raise CliError(Exit.usage, str(exc)) from exc
    except TransportError as exc:
        raise CliError(Exit.bad_url, str(exc)) from exc


def add_listing_options(parser: argparse.ArgumentParser) -> None:
    """The options of a command that lists what a server offers: the server, and ``--json``."""
    add_server_options(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output (the entries as listed)")


def verbosity(args: argparse.Namespace) -> int:
    """How many ``-v`` were given: 1 logs each request's and reply's head, 2 their bodies too."""
    return int(getattr(args, "verbose", 0) or 0)


@contextlib.contextmanager
def connection_errors(target: str, client: Client | None = None) -> Iterator[None]:
    """Turn what talking to the server raised into the command's error line.

    With ``client``, a ``-32601 Method not found`` names the method and the capability the server did not
    declare (see :func:`~mcpfsm._tooling.cli.wire.method_not_found`).
    """
    try:
        yield
    except RpcError as exc:
        wire = None if client is None else wire_of(client)
        method = None if wire is None else wire.unknown_method
        if exc.code != METHOD_NOT_FOUND or client is None or method is None:
            raise
        raise CliError(Exit.rpc_error, f"{target}: {method_not_found(client, method)}") from exc
    except TransportError as exc:
        if exc.status == 401:
            # A bare 401: --auth none, a refused --token or Authorization header (--auth oauth runs a flow instead).
            raise CliError(
                Exit.unauthorized,
                f"{target}: the server requires authorization (HTTP 401) and the request carried none it accepts:"
                f" run `mcpfsm login {target}` and use --auth oauth (the default), or pass --token TOKEN",
            ) from exc
        # A connection error names the URL itself (with the OS cause and the proxy): not twice.
        said = str(exc)
        raise CliError(Exit.unreachable, said if target in said else f"{target}: {said}") from exc


def print_line(text: str) -> None:
    """One line on stdout, its control characters escaped (:func:`~mcpfsm._tooling.cli.terminal.shown`)."""
    out(text)


def columns(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table: every column but the last padded to its widest cell, two spaces between."""
    widths = [max(len(header), *(len(row[i]) for row in rows)) for i, header in enumerate(headers[:-1])]
    return "\n".join(
        "  ".join([*(cell.ljust(width) for cell, width in zip(line, widths, strict=False)), line[-1]]).rstrip()
        for line in [headers, *rows]
    )
