"""A modern-era stdio MCP server that will not go away: the client-group tests' hanging member.

``python -m tests.support.stdio_lingering [--linger]`` answers, one line per request:

- ``server/discover``: ``supportedVersions: ["2026-07-28"]``, the tools capability;
- ``tools/list``: ``pid`` and ``getenv`` (one page);
- ``tools/call`` ``pid``: its process id as text; ``getenv`` ``{"name": N}``: the variable's value, or ``unset``;
- anything else: ``-32601``.

With ``--linger`` it ignores SIGTERM and, once stdin ends, sleeps for an hour instead of exiting, so only
SIGKILL ends it. Without it, it exits when stdin ends. ``--start-delay SECONDS`` waits that long before reading
its first request (a server that loads something first; bench/group.py).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

TOOLS = [
    {"name": "pid", "description": "The server's process id.", "inputSchema": {"type": "object"}},
    {
        "name": "getenv",
        "description": "An environment variable of the server.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    },
]


def result(request_id: object, value: object) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": value})


def text(request_id: object, value: str) -> str:
    return result(request_id, {"content": [{"type": "text", "text": value}]})


def main() -> None:
    linger = "--linger" in sys.argv
    if "--start-delay" in sys.argv:
        time.sleep(float(sys.argv[sys.argv.index("--start-delay") + 1]))
    if linger:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method, request_id = message["method"], message["id"]
        params = message.get("params", {})
        if method == "server/discover":
            answer = result(request_id, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}})
        elif method == "tools/list":
            answer = result(request_id, {"tools": TOOLS})
        elif method == "tools/call" and params["name"] == "pid":
            answer = text(request_id, str(os.getpid()))
        elif method == "tools/call" and params["name"] == "getenv":
            answer = text(request_id, os.environ.get(params["arguments"]["name"], "unset"))
        else:
            error = {"code": -32601, "message": f"no {method}"}
            answer = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error})
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()
    if linger:
        time.sleep(3600)


if __name__ == "__main__":
    main()
