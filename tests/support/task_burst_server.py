"""A tasks server that makes every ``tools/call`` a task at once, for the burst tests (SEP-2663), in its own process.

``python -m tests.support.task_burst_server [--mode modern] [--port 0]`` serves ``/mcp`` on 127.0.0.1 with raw sockets
(``tests.support.rawserver``): ``server/discover`` (2026-07-28, the tasks extension declared), ``tools/list`` (one tool,
``job``), ``tools/call`` answered with a ``CreateTaskResult`` whose id counts up (``burst-1``, ``burst-2``, …) and
``tasks/get`` answered ``working``. It does no other work, so a client's thousands of concurrent calls are limited
by the client. It prints ``READY http://127.0.0.1:PORT/mcp`` once it accepts connections and runs until killed.
"""

from __future__ import annotations

import argparse
import itertools
import json
from datetime import UTC, datetime
from typing import Any

import trio

from tests.support.rawserver import HOST, Seen, Server, ok, serving

MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"


def _task(task_id: str) -> dict[str, Any]:
    stamp = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    return {
        "taskId": task_id, "status": "working", "createdAt": stamp, "lastUpdatedAt": stamp, "ttlMs": None,
        "pollIntervalMs": 60_000,
    }


def server() -> Server:
    numbers = itertools.count(1)

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        request = json.loads(seen.body)
        if "id" not in request:
            return await ok(b"", status=202, headers=[])(stream, seen)
        method, params = request.get("method"), request.get("params") or {}
        if method == "server/discover":
            result: dict[str, Any] = {
                "supportedVersions": [MODERN], "capabilities": {"tools": {}, "extensions": {TASKS: {}}},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "job", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            result = {"resultType": "task", **_task(f"burst-{next(numbers)}")}
        else:
            result = _task(str(params.get("taskId")))
        body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
        return await ok(body)(stream, seen)

    return Server(default=answer)


async def main() -> None:
    async with serving(server()) as running:
        print(f"READY http://{HOST}:{running.port}/mcp", flush=True)
        await trio.sleep_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="modern")
    parser.add_argument("--port", type=int, default=0)
    parser.parse_args()
    trio.run(main)
