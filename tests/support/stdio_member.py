"""A modern-era stdio MCP server that counts itself: the lazy-group and healing tests' member.

``python tests/support/stdio_member.py [--started FILE] [--calls FILE] [--ttl-ms N] [--name NAME]`` answers, one line
per request:

- ``server/discover``: ``supportedVersions: ["2026-07-28"]``, the tools capability;
- ``tools/list``: ``pid``, ``sleep`` and ``echo`` (one page; with ``--ttl-ms``, that ``ttlMs``); each description
  names the server (``--name``, default ``member``) so that a search can tell members apart;
- ``tools/call`` ``pid``: its process id as text; ``echo`` ``{"text": T}``: ``T``; ``sleep`` ``{"seconds": S,
  "mark": M}``: appends ``M`` and a newline to ``--calls`` (flushed), then sleeps ``S`` seconds and answers ``M``;
- anything else: ``-32601``.

With ``--started``, it appends its process id and a newline to that file before reading anything: the tests count
the processes a group started. It exits when stdin ends.
"""

from __future__ import annotations

import json
import os
import sys
import time


def option(name: str) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def main() -> None:
    started, calls, ttl, name = option("--started"), option("--calls"), option("--ttl-ms"), option("--name")
    name = name or "member"
    if started is not None:
        with open(started, "a", encoding="utf-8") as file:
            file.write(f"{os.getpid()}\n")
    tools = [
        {"name": "pid", "description": f"The process id of the {name} server.", "inputSchema": {"type": "object"}},
        {
            "name": "sleep",
            "description": f"Record a mark, then sleep ({name}).",
            "inputSchema": {
                "type": "object",
                "properties": {"seconds": {"type": "number"}, "mark": {"type": "string"}},
                "required": ["seconds", "mark"],
            },
        },
        {
            "name": "echo",
            "description": f"Say the text back ({name}).",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        },
    ]
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method, request_id, params = message["method"], message["id"], message.get("params", {})
        result: object = None
        if method == "server/discover":
            result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
        elif method == "tools/list":
            result = {"tools": tools, **({"ttlMs": int(ttl)} if ttl is not None else {})}
        elif method == "tools/call" and params["name"] == "pid":
            result = {"content": [{"type": "text", "text": str(os.getpid())}]}
        elif method == "tools/call" and params["name"] == "echo":
            result = {"content": [{"type": "text", "text": params["arguments"]["text"]}]}
        elif method == "tools/call" and params["name"] == "sleep":
            arguments = params["arguments"]
            if calls is not None:
                with open(calls, "a", encoding="utf-8") as file:
                    file.write(arguments["mark"] + "\n")
            time.sleep(float(arguments["seconds"]))
            result = {"content": [{"type": "text", "text": arguments["mark"]}]}
        if result is None:
            answer = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no {method}"}}
        else:
            answer = {"jsonrpc": "2.0", "id": request_id, "result": result}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
