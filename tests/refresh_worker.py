"""A worker process that calls the test authorization server's MCP endpoint with tokens from a shared store.

``python -m tests.refresh_worker STORE MCP_URL CALLS`` (``STORE`` as in :mod:`tests.store_worker`:
``file:DIR``, ``tokenfile:PATH`` or ``redis:URL``): prints ``READY``, waits for a line on stdin, then opens
``Client.http(MCP_URL, auth=OAuth(store=STORE))`` and calls ``test-tool`` ``CALLS`` times, and prints one JSON
line ``{"ok": N, "errors": [...], "fallbacks": N}`` (``Client.store_fallbacks``: times the store failed or a
lock was not taken in time and the client went on with its memory). Its ``authorize`` refuses: a worker that
would have to log in again fails its call (the fleet shares one login, docs/stores.md).
"""

from __future__ import annotations

import json
import sys

import trio

import mcpfsm
from tests.store_worker import opened


async def refuse(url: str) -> str:
    raise RuntimeError("this worker may not log in")


async def main(spec: str, mcp_url: str, calls: int) -> None:
    async with opened(spec) as store:
        print("READY", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
        ok, errors, fallbacks = 0, [], 0
        auth = mcpfsm.OAuth(redirect_uri="http://127.0.0.1:27418/callback", authorize=refuse, store=store)
        try:
            async with mcpfsm.Client.http(mcp_url, auth=auth, protocol="2026-07-28") as client:
                for _ in range(calls):
                    try:
                        await client.call_tool("test-tool", {})
                    except mcpfsm.McpError as exc:
                        errors.append(f"{type(exc).__name__}: {exc}")
                    else:
                        ok += 1
                fallbacks = client.store_fallbacks
        except mcpfsm.McpError as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        print(json.dumps({"ok": ok, "errors": errors, "fallbacks": fallbacks}), flush=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
