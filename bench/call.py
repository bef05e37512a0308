"""Client CPU and wall time per tools/call: the floor (raw, h11), a bare httpx POST, mcpfsm and the SDK client.

Run from the repository root:

    python bench/call.py [--calls N] [--rounds R] [--concurrency 1,50,1000] [--max-connections N]
    python bench/call.py --only sdk --concurrency 50,1000 --pool-sizes 2,4,8,16,32,100  # the pool policy
    python bench/call.py --only mcpfsm --calls 2000 --profile      # cProfile of mcpfsm's calls, top entries
    valgrind --tool=callgrind python bench/call.py --only mcpfsm --calls N --rounds 1 --no-warmup  # instructions

One local peer server (the official SDK's MCPServer, ``mcpfsm._tooling.demo_server`` in the modern era) serves every
client in the same run. CPU time is this process's ``time.process_time()`` (the server is another process),
wall time ``time.perf_counter()``, both divided by the number of calls; rounds interleave the clients and the
median round is reported. Ratios are printed against the floor (raw) and the SDK client.

The rows, each the same ``tools/call`` of ``execute-sql`` with the same headers (``Mcp-Method``, ``Mcp-Name``,
the two mirrored ``Mcp-Param-*``) and body:

- **raw**: one kept-alive trio socket, a prebuilt request head, ``json.dumps`` of the body, one send, a read
  up to ``Content-Length``, ``json.loads``; no HTTP library and no checks: the floor of any Python trio client;
- **h11**: the same over ``h11`` (request and response framing by the library) on one kept-alive socket;
- **httpx**: ``httpx.AsyncClient.post`` of the prebuilt body and headers (no JSON-RPC work at all);
- **mcpfsm**: ``Tool.call`` (the tool-call machine, header plan, session, every check of the answer, output
  validation) with an ``on_event`` that records every event, over mcpfsm's own keep-alive pool;
- **sdk**: the official SDK's ``mcp.Client.call_tool``.

raw and h11 use one socket, so they run sequentially only. With ``--concurrency C`` the calls of a round are
spread over C tasks; each task makes calls/C calls one after another. ``--max-connections`` caps mcpfsm's
pool (a private knob, for measuring the pool policy); ``--pool-sizes`` adds one mcpfsm row per cap
(``pool=N``) to the same run, interleaved with the others. Target (issue 13): mcpfsm at most 1.5x raw, CPU per
call, sequential. The machine is shared: run with many rounds, or count instructions with callgrind.
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import json
import os
import pstats
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import h11
import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcpfsm
import mcpfsm._transports.http.routing
from mcpfsm._core.constants import MODERN_VERSION
from mcpfsm._core.jsonrpc import encode_request, modern_meta
from tests.support.peer.fixtures import start_http_peer

ARGS = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}
TOOL = "execute-sql"
PARAMS = {"name": TOOL, "arguments": ARGS, "_meta": modern_meta(MODERN_VERSION, {"name": "bench", "version": "0"})}
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": MODERN_VERSION,
    "Mcp-Method": "tools/call",
    "Mcp-Name": TOOL,
    "Mcp-Param-Database": "analytics",
    "Mcp-Param-Read-Only": "true",
}
SEQUENTIAL_ONLY = ("raw", "h11")

Runner = Callable[[int, int], Awaitable[None]]
Closer = Callable[[], Awaitable[None]]


async def _fan_out(one_call: Callable[[], Awaitable[Any]], calls: int, concurrency: int) -> None:
    if concurrency == 1:
        for _ in range(calls):
            await one_call()
        return

    async def worker(n: int) -> None:
        for _ in range(n):
            await one_call()

    async with trio.open_nursery() as nursery:
        per, extra = divmod(calls, concurrency)
        for index in range(concurrency):
            nursery.start_soon(worker, per + (index < extra))


def _runner(one: Callable[[], Awaitable[Any]]) -> Runner:
    async def run(calls: int, concurrency: int) -> None:
        await _fan_out(one, calls, concurrency)

    return run


async def _receive(stream: trio.SocketStream) -> bytes:
    data = await stream.receive_some(65536)
    if not data:
        raise ConnectionError("the server closed the connection")
    return bytes(data)


class Socket:
    """One kept-alive connection, opened afresh at the start of each round.

    Between rounds the other clients run for seconds, and uvicorn closes a connection idle for 5 s; one
    connect per round is outside the per-call floor (mcpfsm's pool, httpx and the SDK reconnect then too).
    """

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        assert parts.hostname is not None and parts.port is not None
        self.host, self.port = parts.hostname, parts.port
        self.stream: trio.SocketStream | None = None

    async def reopen(self) -> trio.SocketStream:
        await self.aclose()
        self.stream = await trio.open_tcp_stream(self.host, self.port)
        return self.stream

    async def aclose(self) -> None:
        if self.stream is not None:
            await self.stream.aclose()


async def raw_runner(url: str) -> tuple[Runner, Closer]:
    parts = urlsplit(url)
    socket = Socket(url)
    stream = await socket.reopen()
    head = (
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        + "".join(f"{name}: {value}\r\n" for name, value in HEADERS.items())
        + "Content-Length: "
    ).encode("ascii")
    ids = itertools.count(1)

    async def one() -> object:
        body = json.dumps({"jsonrpc": "2.0", "id": next(ids), "method": "tools/call", "params": PARAMS}).encode()
        await stream.send_all(b"%s%d\r\n\r\n%s" % (head, len(body), body))
        data = await _receive(stream)
        while (end := data.find(b"\r\n\r\n")) < 0:
            data += await _receive(stream)
        at = data.find(b"content-length:", 0, end) + 15
        total = end + 4 + int(data[at : data.find(b"\r\n", at)])
        while len(data) < total:
            data += await _receive(stream)
        return json.loads(data[end + 4 : total])

    async def run(calls: int, concurrency: int) -> None:
        nonlocal stream
        stream = await socket.reopen()
        await _fan_out(one, calls, concurrency)

    answer = await one()
    assert isinstance(answer, dict) and answer["result"]["isError"] is False, answer
    return run, socket.aclose


async def h11_runner(url: str) -> tuple[Runner, Closer]:
    parts = urlsplit(url)
    socket = Socket(url)
    stream = await socket.reopen()
    connection = h11.Connection(h11.CLIENT)
    headers = [("Host", parts.netloc), *HEADERS.items()]
    ids = itertools.count(1)

    async def one() -> object:
        body = json.dumps({"jsonrpc": "2.0", "id": next(ids), "method": "tools/call", "params": PARAMS}).encode()
        request = h11.Request(method="POST", target=parts.path, headers=[*headers, ("Content-Length", str(len(body)))])
        await stream.send_all(connection.send(request) + connection.send(h11.Data(data=body)))  # type: ignore[operator]
        connection.send(h11.EndOfMessage())
        pieces = []
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                connection.receive_data(await _receive(stream))
            elif isinstance(event, h11.Data):
                pieces.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                break
        connection.start_next_cycle()
        return json.loads(b"".join(pieces))

    async def run(calls: int, concurrency: int) -> None:
        nonlocal stream, connection
        stream = await socket.reopen()
        connection = h11.Connection(h11.CLIENT)
        await _fan_out(one, calls, concurrency)

    answer = await one()
    assert isinstance(answer, dict) and answer["result"]["isError"] is False, answer
    return run, socket.aclose


async def httpx_runner(url: str) -> tuple[Runner, Closer]:
    client = httpx.AsyncClient(timeout=30.0)
    body = encode_request(1, "tools/call", PARAMS).encode()

    async def one() -> None:
        response = await client.post(url, content=body, headers=HEADERS)
        assert response.status_code == 200, response.text

    await one()
    return _runner(one), client.aclose


class Recorder:
    """An ``on_event`` that records every event, as an auditor's would."""

    def __init__(self) -> None:
        self.events: list[mcpfsm.CallEvent] = []

    def __call__(self, event: mcpfsm.CallEvent) -> None:
        self.events.append(event)


async def mcpfsm_runner(url: str, max_connections: int | None = None) -> tuple[Runner, Closer]:
    recorder = Recorder()
    if max_connections is not None:
        # A private knob, for measuring only: the pool of this client is made with this cap.
        # A hard cap of N connections, opened whenever none is idle (soft limit = hard limit).
        module = mcpfsm._transports.http.routing
        defaults = module._MAX_CONNECTIONS, module._SOFT_CONNECTIONS
        module._MAX_CONNECTIONS = module._SOFT_CONNECTIONS = max_connections  # type: ignore[misc]
        client = mcpfsm.Client.http(url, on_event=recorder)
        module._MAX_CONNECTIONS, module._SOFT_CONNECTIONS = defaults  # type: ignore[misc]
    else:
        client = mcpfsm.Client.http(url, on_event=recorder)
    await client.__aenter__()
    tool = (await client.tools()).get(TOOL)
    assert tool is not None

    async def one() -> None:
        result = await tool.call(ARGS)
        assert not result.is_error

    async def run(calls: int, concurrency: int) -> None:
        recorder.events.clear()
        await _fan_out(one, calls, concurrency)
        # Every call's events were observed: resolving, planning, sending, succeeded.
        assert len(recorder.events) == 4 * calls, len(recorder.events)

    return run, client.aclose


async def sdk_runner(url: str) -> tuple[Runner, Closer]:
    from mcp import Client as SdkClient

    client = SdkClient(url)
    await client.__aenter__()
    await client.list_tools()

    async def one() -> None:
        result = await client.call_tool(TOOL, ARGS)
        assert not result.is_error

    async def close() -> None:
        await client.__aexit__(None, None, None)

    return _runner(one), close


RUNNERS: dict[str, Callable[[str], Awaitable[tuple[Runner, Closer]]]] = {
    "raw": raw_runner,
    "h11": h11_runner,
    "httpx": httpx_runner,
    "mcpfsm": mcpfsm_runner,
    "sdk": sdk_runner,
}


async def measure(run: Runner, calls: int, concurrency: int) -> tuple[float, float]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await run(calls, concurrency)
    return (time.process_time() - cpu0) / calls * 1e6, (time.perf_counter() - wall0) / calls * 1e6


def _ratios(med: dict[str, float], what: str) -> None:
    for base in ("raw", "sdk"):
        if base in med and "mcpfsm" in med:
            print(f"  mcpfsm / {base:3s} = {med['mcpfsm'] / med[base]:5.2f}  ({what})")


async def main(options: argparse.Namespace) -> None:
    names = options.only or list(RUNNERS)
    with start_http_peer(mode="modern") as peer:
        clients = {name: await RUNNERS[name](peer.url) for name in names}
        for size in options.pool_sizes:
            clients[f"pool={size}"] = await mcpfsm_runner(peer.url, size)
        try:
            if options.profile:
                await profile(clients["mcpfsm"][0], options.calls, options.profile_sort)
                return
            for concurrency in options.concurrency:
                active = {n: c for n, c in clients.items() if concurrency == 1 or n not in SEQUENTIAL_ONLY}
                if not options.no_warmup:
                    for run, _ in active.values():
                        await run(max(concurrency, options.calls // 10), concurrency)
                cpu: dict[str, list[float]] = {name: [] for name in active}
                wall: dict[str, list[float]] = {name: [] for name in active}
                for _ in range(options.rounds):
                    for name, (run, _) in active.items():
                        c, w = await measure(run, options.calls, concurrency)
                        cpu[name].append(c)
                        wall[name].append(w)
                label = "sequential" if concurrency == 1 else f"{concurrency} concurrent"
                print(f"\n{label}: {options.calls} calls x {options.rounds} rounds, median per call")
                med_cpu = {name: statistics.median(values) for name, values in cpu.items()}
                med_wall = {name: statistics.median(values) for name, values in wall.items()}
                for name in active:
                    print(f"  {name:8s} {med_cpu[name]:8.1f} us CPU   {med_wall[name]:8.1f} us wall")
                    if name.startswith("pool=") and "sdk" in med_wall:
                        print(
                            f"  {'':8s} {name} / sdk = {med_cpu[name] / med_cpu['sdk']:5.2f} (CPU)"
                            f"  {med_wall[name] / med_wall['sdk']:5.2f} (wall)"
                        )
                _ratios(med_cpu, "CPU")
                _ratios(med_wall, "wall")
        finally:
            for _, close in clients.values():
                await close()


async def profile(run: Runner, calls: int, sort: str = "tottime") -> None:
    await run(max(1, calls // 10), 1)
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    await run(calls, 1)
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats(sort).print_stats(40)


def _concurrency(text: str) -> list[int]:
    return [int(part) for part in text.split(",")]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=_concurrency, default=[1, 50], help="e.g. 1,50,1000")
    parser.add_argument("--only", type=lambda text: text.split(","), default=None, help=f"of {','.join(RUNNERS)}")
    parser.add_argument("--profile", action="store_true", help="cProfile mcpfsm's sequential calls instead")
    parser.add_argument("--profile-sort", default="tottime", help="pstats order of --profile: tottime, cumulative")
    parser.add_argument("--no-warmup", action="store_true")
    parser.add_argument(
        "--pool-sizes",
        type=_concurrency,
        default=[],
        help="also run mcpfsm clients whose pool has these caps (rows pool=N), e.g. 4,8,16,100",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=None,
        help="cap mcpfsm's keep-alive pool (default: the library's own default)",
    )
    options = parser.parse_args()
    if options.profile:
        options.only = ["mcpfsm"]
    if options.max_connections is not None:
        # A private knob, for measuring only: a hard cap, opened whenever no connection is idle.
        mcpfsm._transports.http.routing._MAX_CONNECTIONS = options.max_connections  # type: ignore[misc]
        mcpfsm._transports.http.routing._SOFT_CONNECTIONS = options.max_connections  # type: ignore[misc]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    trio.run(main, options)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
