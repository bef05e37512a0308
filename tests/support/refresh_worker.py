"""A worker process that calls the test authorization server's MCP endpoint with tokens from a shared store.

``python -m tests.support.refresh_worker STORE MCP_URL [--calls N] [--warm] [--credential-store] [--client-credentials
ID:SECRET]`` (``STORE`` as in :mod:`tests.support.store_worker`). Builds ``Client.http(MCP_URL, auth=…, store=STORE)``
(the store given to the credential instead with ``--credential-store``), connects it (with ``--warm``, after one
call), prints ``READY``, and then, for each line it reads on stdin, calls ``test-tool`` ``N`` times (default 3)
and prints one JSON line ``{"ok": N, "errors": [...], "fallbacks": N}`` (``Client.store_fallbacks``: times the
store failed or a lock was not taken in time and the client went on with its memory). It exits when stdin
ends. The credential is ``OAuth`` whose ``authorize`` refuses, so that a worker that would have to log in again
fails its call (the fleet shares one login, docs/stores.md), or ``ClientCredentials(ID, client_secret=SECRET)``.
"""

from __future__ import annotations

import argparse
import json
import sys

import trio

import mcpfsm
from tests.support.store_worker import opened


async def refuse(url: str) -> str:
    raise RuntimeError("this worker may not log in")


async def calls(client: mcpfsm.Client, count: int) -> dict[str, object]:
    ok, errors = 0, []
    for _ in range(count):
        try:
            await client.call_tool("test-tool", {})
        except mcpfsm.McpError as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        else:
            ok += 1
    return {"ok": ok, "errors": errors, "fallbacks": client.store_fallbacks}


async def main(arguments: argparse.Namespace) -> None:
    async with opened(arguments.store) as store:
        owned = store if arguments.credential_store else None
        auth: mcpfsm.OAuth | mcpfsm.ClientCredentials
        if arguments.client_credentials:
            client_id, _, secret = arguments.client_credentials.partition(":")
            auth = mcpfsm.ClientCredentials(client_id, client_secret=secret, store=owned)
        else:
            auth = mcpfsm.OAuth(redirect_uri="http://127.0.0.1:27418/callback", authorize=refuse, store=owned)
        shared = None if arguments.credential_store else store
        async with mcpfsm.Client.http(arguments.mcp_url, auth=auth, protocol="2026-07-28", store=shared) as client:
            if arguments.warm:
                warmed = await calls(client, 1)
                assert warmed["ok"] == 1, warmed
            print("READY", flush=True)
            while await trio.to_thread.run_sync(sys.stdin.readline):
                print(json.dumps(await calls(client, arguments.calls)), flush=True)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.support.refresh_worker")
    parser.add_argument("store")
    parser.add_argument("mcp_url")
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--warm", action="store_true")
    parser.add_argument("--credential-store", action="store_true")
    parser.add_argument("--client-credentials")
    return parser.parse_args(argv)


if __name__ == "__main__":
    trio.run(main, parse(sys.argv[1:]))
