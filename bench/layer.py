"""Instructions per ``Tool.call`` above the wire, counted by callgrind: the client's own layer, repeatable.

Run from the repository root (needs valgrind):

    python bench/layer.py [--small 200] [--large 1200] [--no-events]

The client runs against a transport in this process that answers from memory (no socket, no server): what
is counted is the tool-call machine, its events, the plan and its headers, the request's encoding, the
answer's decoding, the result and its output-schema check. The tool mirrors two arguments into headers and
declares an output schema; ``on_event`` receives every event (``--no-events``: no sink, so no event is built).
As in bench/instructions.py, the process runs twice (``--small`` and ``--large`` calls) and the difference of
the two totals over the difference of the calls is the figure: start-up and the first calls cancel out.
``bench/instructions.py`` counts whole calls over a socket against the SDK server; this counts the layer
alone, without the peer's noise.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcpfsm._transports.base import NO_HEADERS, Reply  # noqa: E402 (this checkout's mcpfsm)

TOOL = {
    "name": "execute-sql",
    "inputSchema": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "database": {"type": "string", "x-mcp-header": "Database"},
            "options": {
                "type": "object",
                "properties": {"readOnly": {"type": "boolean", "x-mcp-header": "Read-Only"}},
            },
        },
        "required": ["query", "database"],
    },
    "outputSchema": {"type": "object", "properties": {"rows": {"type": "integer"}}, "required": ["rows"]},
}
ARGUMENTS = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}
CALL_RESULT = {"content": [{"type": "text", "text": '{"rows": 1}'}], "structuredContent": {"rows": 1}}
_CALL_ANSWER = '{"jsonrpc":"2.0","id":%s,"result":' + json.dumps(CALL_RESULT, separators=(",", ":")) + "}"


class MemoryTransport:
    """A server in memory: ``server/discover``, ``tools/list`` and ``tools/call`` answered at once."""

    carries_headers = True

    async def open(self, inbound: Any) -> None:
        """Nothing to open."""

    async def send(self, message: str, headers: Mapping[str, str] = NO_HEADERS) -> Any:
        """Answer one request; a ``tools/call`` from a prebuilt answer, so that this side costs next to nothing."""
        if '"method":"tools/call"' in message:
            start = message.index('"id":') + 5
            return Reply(_CALL_ANSWER % message[start : message.index(",", start)], 200)
        request = json.loads(message)
        if request["method"] == "server/discover":
            result: dict[str, Any] = {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "memory", "version": "1"},
            }
        elif request["method"] == "tools/list":
            result = {"tools": [TOOL]}
        else:
            result = CALL_RESULT
        return Reply(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}), 200)

    async def open_stream(self, headers: Mapping[str, str]) -> bool:
        """No standalone stream."""
        return False

    async def end_session(self, headers: Mapping[str, str]) -> None:
        """No session to end."""

    async def aclose(self) -> None:
        """Nothing to close."""


def child(calls: int, events: bool) -> None:
    import trio

    import mcpfsm

    async def main() -> None:
        seen: list[mcpfsm.CallEvent] = []
        options: dict[str, Any] = {"on_event": seen.append} if events else {}
        async with mcpfsm.Client(MemoryTransport(), **options) as client:
            tool = (await client.tools()).get("execute-sql")
            assert tool is not None
            for _ in range(50):  # warm up: the first calls fill caches that later calls reuse
                await tool.call(ARGUMENTS)
            for _ in range(calls):
                result = await tool.call(ARGUMENTS)
                seen.clear()
            assert result.structured_content == {"rows": 1}

    trio.run(main)


def instructions(calls: int, events: bool) -> int:
    with tempfile.TemporaryDirectory() as directory:
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={directory}/callgrind.out.%p"]
        command += [sys.executable, __file__, "--child", str(calls)] + ([] if events else ["--no-events"])
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    found = re.findall(r"Collected : (\d+)", done.stderr)
    if len(found) != 1:
        raise SystemExit(f"no single callgrind total:\n{done.stderr[-2000:]}")
    return int(found[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--large", type=int, default=1200)
    parser.add_argument("--no-events", action="store_true", help="no on_event: the calls build no event")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child is not None:
        child(options.child, not options.no_events)
        return
    events = not options.no_events
    small, large = instructions(options.small, events), instructions(options.large, events)
    per_call = (large - small) / (options.large - options.small)
    print(f"Tool.call in memory, {'events observed' if events else 'no event sink'}: {per_call:,.0f} instructions")


if __name__ == "__main__":
    main()
