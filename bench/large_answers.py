"""What a very large answer costs the client: peak memory for a JSON body, CPU for a stdio line.

    python bench/large_answers.py --json-mb 200            # peak RSS of this process, default limit
    python bench/large_answers.py --json-mb 200 --limit-mb 400
    python bench/large_answers.py --stdio-mb 40 --limit-mb 64   # CPU seconds for one 40 MB line

The server runs in another process (a tiny HTTP server, or a stdio child), so only the client's memory
and CPU are measured: peak RSS from ``getrusage`` (Linux reports KiB), CPU from
``time.process_time()`` around the one call. ``--limit-mb`` passes ``max_response_bytes`` when the
installed mcpfsm has it; point ``PYTHONPATH`` at another checkout to measure that one instead
(``PYTHONPATH=/path/to/old/checkout python bench/large_answers.py ...``).
"""

from __future__ import annotations

import argparse
import inspect
import resource
import subprocess
import sys
import time
from typing import Any

import trio

import mcpfsm

MB = 1024 * 1024

# Answers every POST with one JSON-RPC result holding `size` bytes of text, streamed in 1 MiB pieces.
HTTP_SERVER = r"""
import json, socket, sys
size = int(sys.argv[1])
listener = socket.create_server(("127.0.0.1", 0))
print(listener.getsockname()[1], flush=True)
while True:
    connection, _ = listener.accept()
    data = b""
    while b"\r\n\r\n" not in data:
        data += connection.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(body) < length:
        body += connection.recv(65536)
    request_id = json.loads(body)["id"]
    start = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"' % request_id
    end = b'"}]}}'
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                       % (len(start) + size + len(end)) + start)
    piece = b"x" * (1024 * 1024)
    try:
        for _ in range(size // len(piece)):
            connection.sendall(piece)
        connection.sendall(b"x" * (size % len(piece)) + end)
    except OSError:
        pass
    connection.close()
"""

# A stdio server: discover, then one tools/call answered with a line of `size` bytes of text.
STDIO_SERVER = r"""
import json, sys
size = int(sys.argv[1])
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "server/discover":
        result = {"supportedVersions": ["2026-07-28"], "capabilities": {}}
    else:
        result = {"content": [{"type": "text", "text": "x" * size}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""


def limit_option(factory: Any, limit_mb: float | None) -> dict[str, Any]:
    if limit_mb is None:
        return {}
    if "max_response_bytes" not in inspect.signature(factory).parameters:
        print("(this mcpfsm has no max_response_bytes: measuring without a limit)")
        return {}
    return {"max_response_bytes": int(limit_mb * MB)}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def json_answer(size: int, limit_mb: float | None) -> None:
    server = subprocess.Popen([sys.executable, "-c", HTTP_SERVER, str(size)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        url = f"http://127.0.0.1:{port}/mcp"
        options = limit_option(mcpfsm.Client.http, limit_mb)
        before = peak_rss_mb()
        async with mcpfsm.Client.http(url, protocol="2026-07-28", **options) as client:
            try:
                result = await client.call_tool("big")
                outcome = f"answered ({len(result.text) / MB:.0f} MB of text)"
            except mcpfsm.McpError as exc:
                outcome = f"{type(exc).__name__}: {exc}"
        print(f"JSON answer of {size / MB:.0f} MB, options {options}: {outcome}")
        print(f"peak RSS: {before:.0f} MB before the call, {peak_rss_mb():.0f} MB after")
    finally:
        server.kill()
        server.wait()


async def stdio_line(size: int, limit_mb: float | None) -> None:
    options = limit_option(mcpfsm.Client.stdio, limit_mb)
    async with mcpfsm.Client.stdio([sys.executable, "-c", STDIO_SERVER, str(size)], **options) as client:
        started = time.process_time()
        try:
            result = await client.call_tool("big")
            outcome = f"answered ({len(result.text) / MB:.0f} MB of text)"
        except mcpfsm.McpError as exc:
            outcome = f"{type(exc).__name__}: {exc}"
        spent = time.process_time() - started
    print(f"stdio line of {size / MB:.0f} MB, options {options}: {outcome}")
    print(f"client CPU for the call: {spent:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json-mb", type=float, help="size of the JSON answer's text")
    parser.add_argument("--stdio-mb", type=float, help="size of the stdio answer's text")
    parser.add_argument("--limit-mb", type=float, help="max_response_bytes, in MiB (if this mcpfsm has it)")
    args = parser.parse_args()
    print(f"mcpfsm from {mcpfsm.__file__}")
    if args.json_mb is not None:
        trio.run(json_answer, int(args.json_mb * MB), args.limit_mb)
    if args.stdio_mb is not None:
        trio.run(stdio_line, int(args.stdio_mb * MB), args.limit_mb)


if __name__ == "__main__":
    main()
