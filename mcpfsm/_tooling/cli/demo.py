"""``mcpfsm demo``: the -32020 recovery, state by state, against an embedded official-SDK server."""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

import trio

from ..._client.client import Client
from ..._core.constants import MODERN_VERSION
from ..._core.events import CallEvent
from ..._machines.tool_call import TERMINAL, State
from ..server_process import PeerStartError, RunningPeer, missing_modules, run_peer
from .call import unknown_tool
from .common import CliError, Exit, T, connection_errors, print_line
from .tools import render_tools

__all__ = ["DEMO_ARGUMENTS", "configure", "event_lines", "run"]

DESCRIPTION: Final = (
    "Start the official MCP SDK server on 127.0.0.1, list its tools, call execute-sql showing the\n"
    "headers sent, change the server's schema, and call through the stale tool handle so the\n"
    "-32020 -> relist -> retry path runs, printing each state as the call enters it.\n"
    "--group opens a client group instead: the same server over HTTP and as a stdio subprocess, from an\n"
    "mcpServers configuration, lists their tools under aggregated names and calls one of each; every\n"
    "event shows the server it came from.\n"
    "Needs the demo extra: pip install 'mcpfsm[demo]'."
)

DEMO_ARGUMENTS: Final[Mapping[str, Any]] = {
    "query": "select 1",
    "database": "analytics",
    "region": "eu",
    "options": {"readOnly": True},
}
"""The arguments ``mcpfsm demo`` calls ``execute-sql`` with."""


_DEMO_TOOL: Final = "execute-sql"


_DEMO_START_TIMEOUT: Final = 30.0

SENDING: Final = frozenset({State.sending, State.retrying})


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``--group`` and ``--html OUT``."""
    parser.add_argument(
        "--group", action="store_true", help="a client group: the server over HTTP and over stdio, one tool list"
    )
    parser.add_argument(
        "--html",
        metavar="OUT.html",
        help="also write the demo's trail (every event of both calls) as an HTML report (docs/trail-viewer.md)",
    )


def run(args: argparse.Namespace) -> Exit:
    """Run the demo."""
    if missing_modules():
        raise CliError(Exit.missing_component, "the demo needs the official MCP SDK: pip install 'mcpfsm[demo]'")
    if getattr(args, "group", False):
        print_line(f"starting the demo server (official MCP SDK, protocol {MODERN_VERSION}) on 127.0.0.1 ...")
        with _demo_server() as peer:
            return trio.run(_group_demo, peer)
    print_line(f"starting the demo server (official MCP SDK, protocol {MODERN_VERSION}) on 127.0.0.1 ...")
    trail: list[CallEvent] = []
    with _demo_server() as peer:
        code = trio.run(_demo, peer, trail)
    html = getattr(args, "html", None)
    if html is not None:
        from .trace import write_report  # here: the report needs Graphviz, the demo alone does not

        text = "".join(event.to_json() + "\n" for event in trail)
        write_report(text, html, title="mcpfsm demo: the -32020 recovery", source="the demo's trail")
    return code


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
    if event.state in SENDING:
        text += f" (attempt {event.attempt})"
    if event.error is not None:
        code = event.error.get("code")
        text += f"  error {code if code is not None else event.error.get('type')}: {event.error.get('message')}"
    if event.state in TERMINAL:
        text += f"  after {event.elapsed * 1000:.1f} ms"
    lines = [re.sub(r"[\r\n]+", " ", text)]
    if event.state in SENDING and event.headers:
        lines += [f"        {name}: {value}" for name, value in event.headers.items()]
    return lines


async def _demo(peer: RunningPeer, trail: list[CallEvent]) -> Exit:
    recorded: list[CallEvent] = []

    def show(event: CallEvent) -> None:
        recorded.append(event)
        trail.append(event)
        for line in event_lines(event):
            print_line(line)

    with connection_errors(f"demo server {peer.url}"):
        async with Client.http(peer.url, on_event=show) as client:
            print_line(f"server ready at {peer.url}; protocol {client.protocol_version}")
            print_line("")
            print_line("tools/list:")
            tools = await client.tools()
            print_line("\n".join("  " + line for line in render_tools(tools).splitlines()))
            tool = tools.get(_DEMO_TOOL)
            if tool is None:
                raise CliError(Exit.unknown_tool, unknown_tool(_DEMO_TOOL, tools))
            arguments = json.dumps(DEMO_ARGUMENTS)
            print_line("")
            print_line(f"1) call {tool.name} {arguments}")
            result = await tool.call(DEMO_ARGUMENTS)
            print_line(f"  result: {result.text}")
            print_line("")
            print_line("2) the server's schema changes: execute-sql.region gains x-mcp-header: Region")
            await _control("change the schema", lambda: peer.control({"action": "evolve"}))
            await _control("clear its request log", peer.clear_log)
            print_line(f"3) call again through the same, now stale, Tool handle: {tool.name} {arguments}")
            recorded.clear()
            result = await tool.call(DEMO_ARGUMENTS)
            print_line(f"  result: {result.text}")
            log = await _control("read its request log", peer.log)
    print_line("")
    print_line(_summary(recorded, log))
    return Exit.ok


async def _control(what: str, request: Callable[[], T]) -> T:
    # The peer's control surface is plain sync HTTP: run it off the trio thread.
    import httpx

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
    sent = [dict(e.headers or {}) for e in events if e.state in SENDING]
    added = ""
    if len(sent) == 2:
        new = [f"{name}: {value}" for name, value in sent[1].items() if sent[0].get(name) != value]
        added = f"\nthe retry carried what the fresh schema asks for: {', '.join(new) or 'the same headers'}"
    outcome = "recovered" if events and events[-1].state == "succeeded" else "ended"
    return f"{outcome} in {len(steps)} requests: {' -> '.join(steps)}\nstates: {states}{added}"


_GROUP_START_TIMEOUT: Final = 60.0


def group_config(url: str) -> dict[str, Any]:
    """The ``mcpServers`` configuration of ``mcpfsm demo --group``: the demo server over HTTP and over stdio."""
    return {
        "mcpServers": {
            "web": {"url": url},
            "local": {
                "command": sys.executable,
                "args": ["-m", "mcpfsm._tooling.demo_server", "--stdio"],
                "include_tools": ["echo", "execute-*"],
            },
        }
    }


async def _group_demo(peer: RunningPeer) -> Exit:
    from ..._client.group import ClientGroup

    def show(event: CallEvent) -> None:
        if event.machine == "tool-call":
            for line in event_lines(event):
                print_line(f"  [{event.server}]{line[1:]}" if line.startswith("  [") else line)

    config = group_config(peer.url)
    print_line("the configuration (an mcpServers file says the same):")
    print_line("\n".join("  " + line for line in json.dumps(config, indent=2).splitlines()))
    print_line("starting the stdio member (the same server as a subprocess) ...")
    async with ClientGroup(config, on_event=show, connect_timeout=_GROUP_START_TIMEOUT) as group:
        print_line("")
        for name, status in group.status.items():
            era = group[name].protocol_version if status == "connected" else None
            reason = f": {group.errors[name]}" if name in group.errors else ""
            print_line(f"server {name}: {status}" + (f", protocol {era}" if era else "") + reason)
        print_line("")
        print_line("tools/list of the group (server_tool):")
        tools = await group.tools()
        print_line("\n".join("  " + line for line in render_tools(tools).splitlines()))
        for name, arguments in (("web_execute-sql", DEMO_ARGUMENTS), ("local_echo", {"text": "hello from stdio"})):
            if name not in tools:
                raise CliError(Exit.unknown_tool, unknown_tool(name, tools))
            print_line("")
            print_line(f"call {name} {json.dumps(arguments)}")
            result = await group.call_tool(name, arguments)
            print_line(f"  result: {result.text}")
    print_line("")
    print_line("closed: the stdio member's process was reaped, the HTTP member's connections released")
    return Exit.ok
