"""A minimal modern-era stdio MCP server whose answers the stdio tests control byte by byte.

``python -m tests.support.stdio_child [--id-last]`` answers, one line per request:

- ``server/discover``: ``supportedVersions: ["2026-07-28"]``;
- ``tools/call`` ``echo`` ``{"text": T}``: ``T`` as text content;
- ``tools/call`` ``big`` ``{"bytes": N}``: a text content of ``N`` ``x`` characters (the line is a few
  dozen bytes longer); ``--id-last`` writes ``result`` before ``id``, as the TypeScript SDK does;
- ``tools/call`` ``shout`` ``{"bytes": N}``: first a ``notifications/message`` line with ``N`` bytes of
  data, then an ordinary answer;
- ``tools/call`` ``lone``: a text content holding a lone UTF-16 surrogate (the JSON escape of U+D800);
- anything else: ``-32601``.

Notifications from the client are read and ignored. It exits when stdin ends.
"""

from __future__ import annotations

import json
import sys


def answer(request_id: object, result: object, *, id_last: bool) -> str:
    if id_last:
        return json.dumps({"result": result, "jsonrpc": "2.0", "id": request_id})
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


def main() -> None:
    id_last = "--id-last" in sys.argv
    out = sys.stdout
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method, request_id = message["method"], message["id"]
        params = message.get("params", {})
        if method == "server/discover":
            text = answer(request_id, {"supportedVersions": ["2026-07-28"], "capabilities": {}}, id_last=id_last)
        elif method == "tools/call" and params["name"] == "echo":
            content = [{"type": "text", "text": params["arguments"]["text"]}]
            text = answer(request_id, {"content": content}, id_last=id_last)
        elif method == "tools/call" and params["name"] == "big":
            content = [{"type": "text", "text": "x" * params["arguments"]["bytes"]}]
            text = answer(request_id, {"content": content}, id_last=id_last)
        elif method == "tools/call" and params["name"] == "shout":
            data = "y" * params["arguments"]["bytes"]
            out.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": data}}))
            out.write("\n")
            text = answer(request_id, {"content": [{"type": "text", "text": "shouted"}]}, id_last=id_last)
        elif method == "tools/call" and params["name"] == "lone":
            # json.dumps escapes the lone surrogate, as a server's JSON library may.
            text = answer(request_id, {"content": [{"type": "text", "text": "\ud800"}]}, id_last=id_last)
        else:
            error = {"code": -32601, "message": f"no {method}"}
            text = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error})
        out.write(text + "\n")
        out.flush()


if __name__ == "__main__":
    main()
