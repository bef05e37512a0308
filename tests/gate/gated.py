"""An MCP server behind ``HeaderGate`` (the middleware shape), for the gate's tests and the conformance run.

    python -m tests.gate.gated --app unchecked|sdk|fastmcp [--server uvicorn|hypercorn] [--mode report]
                               [--on-unknown fetch|pass|reject] [--legacy strip|pass|reject] [--store STORE]
                               [--learn-ttl S] [--events FILE]

``--app``: ``unchecked`` is tests/gate/upstream.py's app (no header checks of its own), ``sdk`` the official SDK's
server (mcpfsm/_tooling/demo_server.py, modern era, JSON answers), ``fastmcp`` fastmcp's
(tests/support/fastmcp_server.py). The gate wraps the app in process; ``--server uvicorn`` (asyncio, the default) or
``hypercorn`` (Hypercorn's trio worker) serves it on 127.0.0.1, a free port, and it prints ``READY
http://127.0.0.1:PORT/mcp``.

``GET /control/gate`` answers the gate's ``stats`` and its book's ``fetches``, ``shared_hits`` and
``store_failures``; ``--events FILE`` writes every ``GateEvent`` to FILE as JSON Lines. Other ``/control/*`` paths go
to the app (the unchecked app's log, the SDK peer's).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio

from mcpfsm._gate.middleware import HeaderGate
from mcpfsm._tooling.cli.store import open_store

MCP_PATH = "/mcp"


def build(args: argparse.Namespace) -> Any:
    if args.app == "unchecked":
        from tests.gate.upstream import Upstream

        app: Any = Upstream(argparse.Namespace(sse=args.sse, ttl_ms=300_000, scope="private", page_size=None, token=[]))
    elif args.app == "sdk":
        from mcpfsm._tooling.demo_server import PeerState, build_http_app

        app, _ = build_http_app(PeerState(mode="modern", json_response=not args.sse, initial_page_size=None))
    else:
        from tests.support.fastmcp_server import server

        app = server.http_app(path=MCP_PATH)
    store = open_store(args.store) if args.store else None
    events = open(args.events, "a", encoding="utf-8") if args.events else None  # noqa: SIM115 (lives with the process)

    def on_event(event: Any) -> None:
        assert events is not None
        events.write(json.dumps(event.to_dict()) + "\n")
        events.flush()

    gate = HeaderGate(
        app,
        mode=args.mode,
        on_unknown=args.on_unknown,
        legacy=args.legacy,
        store=store,
        learn_ttl=args.learn_ttl,
        on_event=on_event if events is not None else None,
    )
    return Controlled(gate)


class Controlled:
    """``GET /control/gate``: the gate's counters as JSON; everything else to the gate."""

    def __init__(self, gate: HeaderGate) -> None:
        self.gate = gate

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/control/gate":
            book = self.gate.book
            body = json.dumps(
                {
                    "stats": dict(self.gate.stats),
                    "fetches": book.fetches,
                    "shared_hits": book.shared_hits,
                    "store_failures": book.store_failures,
                }
            ).encode()
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.gate(scope, receive, send)


async def serve_uvicorn(app: Any) -> None:
    import uvicorn

    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", timeout_graceful_shutdown=1
    )
    http = uvicorn.Server(config)

    async def announce() -> None:
        while not http.started:  # uvicorn has no readiness callback: poll its flag, then say where it listens
            if http.should_exit:
                return
            await anyio.sleep(0.01)
        bound = http.servers[0].sockets[0].getsockname()[1]
        print(f"READY http://127.0.0.1:{bound}{MCP_PATH}", flush=True)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(announce)
        await http.serve()
        tasks.cancel_scope.cancel()


async def serve_hypercorn(app: Any) -> None:
    from mcpfsm._gate.serve import serve

    await serve(app, host="127.0.0.1", port=0, ready=lambda origin: print(f"READY {origin}{MCP_PATH}", flush=True))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.gate.gated")
    parser.add_argument("--app", choices=["unchecked", "sdk", "fastmcp"], default="unchecked")
    parser.add_argument("--server", choices=["uvicorn", "hypercorn"], default="uvicorn")
    parser.add_argument("--sse", action="store_true")
    parser.add_argument("--mode", default="verify")
    parser.add_argument("--on-unknown", default="fetch")
    parser.add_argument("--legacy", default="strip")
    parser.add_argument("--store")
    parser.add_argument("--learn-ttl", type=float, default=3600.0)
    parser.add_argument("--events")
    args = parser.parse_args(argv)
    app = build(args)
    if args.server == "uvicorn":
        anyio.run(serve_uvicorn, app)
    else:
        anyio.run(serve_hypercorn, app, backend="trio")


if __name__ == "__main__":
    main(sys.argv[1:])
