"""Client CPU per tools/call: mcpfsm vs a bare httpx POST vs the official SDK client.

Run from the repository root:  python bench/call.py [--calls N] [--rounds R]

One local peer server (the official SDK's MCPServer, tests/peer) serves every client in the same
run. CPU time is this process's `time.process_time()` (the server is another process), divided by
the number of calls; rounds interleave the clients and the median round is reported. Printed
ratios are mcpfsm / bare-httpx and mcpfsm / SDK, sequential and with 50 concurrent calls.

The three clients: mcpfsm (`Client.http`, a whole tool call with its state machine, header plan
and audit events, over mcpfsm's own keep-alive HTTP/1.1 pool, `mcpfsm._transports.pool`); the bare
`httpx.AsyncClient.post` of the same request bytes and headers (no JSON-RPC work at all); the
official SDK's `mcp.Client.call_tool`. Targets (issue 3): mcpfsm at most the bare POST and at most
half the SDK, in both modes. Profile with `py-spy record --format raw` or cProfile with
`time.process_time` as the timer; a machine running anything else gives noisy figures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcpfsm
from mcpfsm._core.constants import MODERN_VERSION
from mcpfsm._core.jsonrpc import encode_request, modern_meta
from mcpfsm._core.plan import plan_request
from tests.peer.fixtures import start_http_peer

ARGS = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}
TOOL = "execute-sql"
CONCURRENCY = 50

Runner = Callable[[int, int], Awaitable[None]]


async def _fan_out(one_call: Callable[[], Awaitable[Any]], calls: int, concurrency: int) -> None:
    if concurrency == 1:
        for _ in range(calls):
            await one_call()
        return

    async def worker(n: int) -> None:
        for _ in range(n):
            await one_call()

    async with trio.open_nursery() as nursery:
        per = calls // concurrency
        for _ in range(concurrency):
            nursery.start_soon(worker, per)


async def mcpfsm_runner(url: str) -> tuple[Runner, Callable[[], Awaitable[None]]]:
    client = mcpfsm.Client.http(url)
    await client.__aenter__()
    tool = (await client.tools()).get(TOOL)
    assert tool is not None

    async def one() -> None:
        result = await tool.call(ARGS)
        assert not result.is_error

    async def run(calls: int, concurrency: int) -> None:
        await _fan_out(one, calls, concurrency)

    return run, client.aclose


async def httpx_runner(url: str) -> tuple[Runner, Callable[[], Awaitable[None]]]:
    client = httpx.AsyncClient(timeout=30.0)
    params = {"name": TOOL, "arguments": ARGS, "_meta": modern_meta(MODERN_VERSION, {"name": "bench", "version": "0"})}
    plan = plan_request("tools/call", params, protocol_version=MODERN_VERSION)
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        **plan.as_dict(),
        "Mcp-Param-Database": "analytics",
        "Mcp-Param-Read-Only": "true",
    }
    body = encode_request(1, "tools/call", params).encode()

    async def one() -> None:
        response = await client.post(url, content=body, headers=headers)
        assert response.status_code == 200, response.text

    async def run(calls: int, concurrency: int) -> None:
        await _fan_out(one, calls, concurrency)

    return run, client.aclose


async def sdk_runner(url: str) -> tuple[Runner, Callable[[], Awaitable[None]]]:
    from mcp import Client as SdkClient

    client = SdkClient(url)
    await client.__aenter__()
    await client.list_tools()

    async def one() -> None:
        result = await client.call_tool(TOOL, ARGS)
        assert not result.is_error

    async def run(calls: int, concurrency: int) -> None:
        await _fan_out(one, calls, concurrency)

    async def close() -> None:
        await client.__aexit__(None, None, None)

    return run, close


async def measure(run: Runner, calls: int, concurrency: int) -> tuple[float, float]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await run(calls, concurrency)
    return (time.process_time() - cpu0) / calls * 1e6, (time.perf_counter() - wall0) / calls * 1e6


async def main(calls: int, rounds: int) -> None:
    with start_http_peer(mode="modern") as peer:
        clients: dict[str, tuple[Runner, Callable[[], Awaitable[None]]]] = {
            "mcpfsm": await mcpfsm_runner(peer.url),
            "httpx": await httpx_runner(peer.url),
            "sdk": await sdk_runner(peer.url),
        }
        try:
            for concurrency in (1, CONCURRENCY):
                for run, _ in clients.values():
                    await run(max(CONCURRENCY, calls // 10), concurrency)  # warm up
                cpu: dict[str, list[float]] = {name: [] for name in clients}
                wall: dict[str, list[float]] = {name: [] for name in clients}
                for _ in range(rounds):
                    for name, (run, _) in clients.items():
                        c, w = await measure(run, calls, concurrency)
                        cpu[name].append(c)
                        wall[name].append(w)
                label = "sequential" if concurrency == 1 else f"{concurrency} concurrent"
                print(f"\n{label}: {calls} calls x {rounds} rounds, median client CPU per call")
                med = {name: statistics.median(values) for name, values in cpu.items()}
                for name in clients:
                    print(f"  {name:7s} {med[name]:8.1f} us CPU   {statistics.median(wall[name]):8.1f} us wall")
                print(f"  mcpfsm / bare httpx POST = {med['mcpfsm'] / med['httpx']:.2f}")
                print(f"  mcpfsm / SDK client      = {med['mcpfsm'] / med['sdk']:.2f}")
                print(f"  SDK / bare httpx POST    = {med['sdk'] / med['httpx']:.2f}")
        finally:
            for _, close in clients.values():
                await close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--max-connections",
        type=int,
        default=None,
        help="cap mcpfsm's keep-alive pool (default: the library's own default, 100)",
    )
    options = parser.parse_args()
    if options.max_connections is not None:
        import mcpfsm._transports.http

        # A private knob, for measuring only: how the pool size trades client CPU for server load.
        mcpfsm._transports.http._MAX_CONNECTIONS = options.max_connections  # type: ignore[misc]
    trio.run(main, options.calls, options.rounds)
