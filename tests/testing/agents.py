"""The agents the testing-kit tests record and replay: the same code against the real server and the cassette.

Each agent takes an entered client and returns what it saw; a :class:`Session` runs one with the notifications,
events and input the tests compare between a recording and its replays.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import mcpfsm
from tests.support.peer.fixtures import REPO_ROOT

SQL: Final = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}
SDK_STDIO: Final = [sys.executable, "-m", "tests.support.peer.server", "--stdio"]
FASTMCP_STDIO: Final = [sys.executable, "-m", "tests.support.fastmcp_server", "--stdio"]
ALLOWED_REQUEST: Final = {"MCP-Protocol-Version", "Mcp-Method", "Mcp-Name", "Mcp-Session-Id"}
ALLOWED_RESPONSE: Final = {"Content-Type", "Mcp-Session-Id", "WWW-Authenticate"}

Between = Callable[[], Awaitable[None]] | None
"""What the recording run does to the real server midway (a control action); nothing when replaying."""


def text_of(result: mcpfsm.ToolResult) -> str:
    return str(result.content[0]["text"])


@dataclass
class Session:
    """One run of an agent: what it returned, the notifications it got, its events, the input asked of it."""

    outputs: list[Any] = field(default_factory=list)
    notifications: list[str] = field(default_factory=list)
    events: list[mcpfsm.CallEvent] = field(default_factory=list)
    asked: list[dict[str, Any]] = field(default_factory=list)

    def options(self) -> dict[str, Any]:
        async def elicit(params: dict[str, Any]) -> dict[str, Any]:
            self.asked.append(params)
            return {"action": "accept", "content": {"name": "Grace"}}

        def notified(method: str, params: dict[str, Any]) -> None:
            self.notifications.append(method)

        return {"on_event": self.events.append, "on_notification": notified, "on_elicitation": elicit}

    @property
    def path(self) -> list[list[tuple[str, str, str | None]]]:
        """Each run's events as ``(machine, state, trigger)``, the runs in the order they began.

        Runs that overlap (a call, and the input run answering a request on its stream) interleave as their tasks
        are scheduled, against the real server too: what a replay repeats is each run, in order.
        """
        runs: dict[str, list[tuple[str, str, str | None]]] = {}
        for event in self.events:
            runs.setdefault(event.call_id, []).append((event.machine, event.state, event.trigger))
        return list(runs.values())


async def sdk_agent(client: mcpfsm.Client, session: Session, between: Between = None) -> None:
    """The official SDK's test peer: listing, a mirrored call, one by name, progress, input, and (HTTP, modern) a
    schema that changes under the agent, so the recording holds the -32020 recovery."""
    tools = await client.tools()
    session.outputs.append(tools.names[:4])
    sql = tools.get("execute-sql")
    assert sql is not None
    session.outputs.append((await sql.call(SQL)).structured_content)
    session.outputs.append(text_of(await client.call_tool("echo", {"text": "héllo\nworld"})))
    session.outputs.append(text_of(await client.call_tool("slow", {"seconds": 0.05})))
    session.outputs.append((await client.call_tool("ask-name", {})).structured_content)
    if between is not None or client.mirrors:
        if between is not None:
            await between()
        # The old handle mirrors no Region: the server refuses (-32020), the client relists and retries.
        session.outputs.append((await sql.call({**SQL, "region": "eu-west"})).structured_content)


async def fastmcp_agent(client: mcpfsm.Client, session: Session, between: Between = None) -> None:
    """fastmcp's test server: listing and two calls."""
    tools = await client.tools()
    session.outputs.append(tools.names)
    session.outputs.append((await client.call_tool("add", {"a": 2, "b": 40})).structured_content)
    session.outputs.append(text_of(await client.call_tool("echo", {"text": "hi"})))


def cassette_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def stdio_options() -> dict[str, Any]:
    return {"cwd": str(REPO_ROOT)}
