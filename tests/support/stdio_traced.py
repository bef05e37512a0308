"""A modern-era stdio MCP server that logs what each request carried, for the telemetry tests.

``python -m tests.support.stdio_traced LOG`` answers one line per request and, before each answer, appends one JSON
line to ``LOG`` (flushed): ``{"method", "id", "name", "trace"}``, ``trace`` being the W3C keys
(``traceparent``, ``tracestate``, ``baggage``) found in ``params._meta``, or ``null``.

- ``server/discover``: ``supportedVersions: ["2026-07-28"]``;
- ``tools/list``: the tools ``echo``, ``stale``, ``broken`` and ``oops`` (``{"text": str}`` each);
- ``tools/call`` ``echo``: the text back; ``stale``: ``-32020`` (a header mismatch: stdio carries no headers, so
  the client's recovery finds its plan unchanged); ``broken``: ``-32603 "deliberate failure"``; ``oops``: a
  result with ``isError: true``;
- anything else: ``-32601``.

Notifications are read and ignored; it exits when stdin ends.
"""

from __future__ import annotations

import json
import sys
from typing import Any

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}
TOOLS = [{"name": name, "inputSchema": SCHEMA} for name in ("echo", "stale", "broken", "oops")]


def error(request_id: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def answer(method: str, request_id: object, params: dict[str, Any]) -> dict[str, Any]:
    if method == "server/discover":
        return {"jsonrpc": "2.0", "id": request_id, "result": {"supportedVersions": ["2026-07-28"], "capabilities": {}}}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}}
    if method == "tools/call":
        name = params.get("name")
        text = str(params.get("arguments", {}).get("text", ""))
        if name == "echo":
            return {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}}
        if name == "stale":
            return error(request_id, -32020, "Header mismatch")
        if name == "broken":
            return error(request_id, -32603, "deliberate failure")
        if name == "oops":
            result = {"content": [{"type": "text", "text": "no luck"}], "isError": True}
            return {"jsonrpc": "2.0", "id": request_id, "result": result}
    return error(request_id, -32601, f"no {method}")


def main() -> None:
    with open(sys.argv[1], "a", encoding="utf-8") as log:
        for line in sys.stdin:
            message = json.loads(line)
            if "id" not in message:
                continue
            params = message.get("params") or {}
            meta = params.get("_meta") or {}
            trace = {key: meta[key] for key in ("traceparent", "tracestate", "baggage") if key in meta}
            record = {
                "method": message["method"],
                "id": message["id"],
                "name": params.get("name"),
                "trace": trace or None,
            }
            log.write(json.dumps(record) + "\n")
            log.flush()
            sys.stdout.write(json.dumps(answer(message["method"], message["id"], params)) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
