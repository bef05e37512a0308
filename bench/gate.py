"""What the gate costs a tools/call: as middleware, on the server's CPU; as a proxy, next to a plain proxy.

Run from the repository root:

    python bench/gate.py [--calls 2000] [--rounds 5] [--proxy-calls 3000]

**Components.** Per request, in process: the verifier's core (``McpHeaders.read``, ``parse_request``, ``check``), the
run of the gate machine around it (a port that does no I/O), and ``HeaderGate`` around an app that answers at once.

**Middleware.** The official SDK's server (the test peer's tools, ``streamable_http_app``, JSON answers) in this
process, under asyncio, driven through ASGI without a network: ``--calls`` ``tools/call`` of ``execute-sql`` (two
mirrored parameters, a realistic 2026-07-28 request) to the app alone, then to ``HeaderGate(app)`` (its listing
learned), interleaved for ``--rounds`` rounds. CPU is ``time.process_time()`` per call; the median round gives the
growth ``gated / alone - 1``. No HTTP server is in the way, so the server's own parsing (uvicorn's) is not in the
denominator: the growth a served app sees is smaller. Target (issue 33): at most 5 %.

**Proxy.** The unchecked test upstream (tests/gate/upstream.py) in one process and, in another, either the gate
(``HeaderGate(Forwarder(upstream))``, what ``mcpfsm gate`` serves) or the same pass-through proxy without it
(``Forwarder(upstream)``, the same pool, the same Hypercorn trio worker). A client in this process sends
``--proxy-calls`` calls over 8 keep-alive connections; the proxy's CPU is read from ``/proc/PID/stat`` (user +
system) before and after. Reported per call: the pass-through proxy's CPU, the gate's, and the verifier's share
``(gate - pass-through) / gate``. Target: at most 10 %. Linux only (``/proc``); the machine is shared: compare ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SQL_ARGS = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}


SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "database": {"type": "string", "x-mcp-header": "Database"},
        "options": {"type": "object", "properties": {"readOnly": {"type": "boolean", "x-mcp-header": "Read-Only"}}},
    },
}


def call_body(request_id: int) -> bytes:
    params = {"name": "execute-sql", "arguments": SQL_ARGS, "_meta": META}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


CALL_HEADERS = [
    (b"host", b"127.0.0.1:8000"),
    (b"user-agent", b"mcpfsm-bench"),
    (b"accept", b"application/json, text/event-stream"),
    (b"content-type", b"application/json"),
    (b"mcp-protocol-version", b"2026-07-28"),
    (b"mcp-method", b"tools/call"),
    (b"mcp-name", b"execute-sql"),
    (b"mcp-param-database", b"analytics"),
    (b"mcp-param-read-only", b"true"),
]
LIST_BODY = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {"_meta": META}}).encode()
LIST_HEADERS = [*CALL_HEADERS[:5], (b"mcp-method", b"tools/list")]


# --- middleware ---------------------------------------------------------------------------------------------------


async def _request(app: Any, headers: list[tuple[bytes, bytes]], body: bytes) -> int:
    import anyio

    sent = False
    done = anyio.Event()
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            done.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    await app(scope, receive, send)
    return status


@contextlib.asynccontextmanager
async def _running(app: Any) -> AsyncIterator[None]:
    """The ASGI ``app``'s lifespan started for the block (the SDK's session manager runs in it), ended after."""
    import anyio

    startup, stopping = anyio.Event(), anyio.Event()

    async def lifespan() -> None:
        messages = [{"type": "lifespan.startup"}]

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop()
            await stopping.wait()
            return {"type": "lifespan.shutdown"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "lifespan.startup.complete":
                startup.set()

        await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)

    async with anyio.create_task_group() as group:
        group.start_soon(lifespan)
        await startup.wait()
        try:
            yield
        finally:
            stopping.set()


async def middleware(calls: int, rounds: int) -> dict[str, Any]:

    from mcpfsm._gate.middleware import HeaderGate
    from mcpfsm._tooling.demo_server import PeerState, build_server

    server = build_server(PeerState(mode="modern", json_response=True, initial_page_size=None))
    app = server.streamable_http_app(streamable_http_path="/mcp", json_response=True)
    gated = HeaderGate(app)
    async with _running(app):
        assert await _request(gated, LIST_HEADERS, LIST_BODY) == 200  # the gate learns the listing in passing
        bodies = [call_body(n) for n in range(calls)]
        samples: dict[str, list[float]] = {"alone": [], "gated": []}
        for _ in range(rounds):
            for name, target in (("alone", app), ("gated", gated)):
                start = time.process_time()
                for body in bodies:
                    assert await _request(target, CALL_HEADERS, body) == 200
                samples[name].append((time.process_time() - start) / calls * 1e6)
        assert gated.stats["fetched"] == 0 and gated.stats["rejected"] == 0
    alone, gate = statistics.median(samples["alone"]), statistics.median(samples["gated"])
    return {"alone_us": alone, "gated_us": gate, "growth": gate / alone - 1, "samples": samples}


async def components(calls: int) -> dict[str, float]:
    """Where the gate's time goes, per request, in process: the verifier's core, its run, the whole middleware."""
    from mcpfsm._core.gate import GateSettings, McpHeaders, ToolSchema, check, parse_request
    from mcpfsm._drivers.gate import GateRun
    from mcpfsm._gate.middleware import HeaderGate

    schema = ToolSchema.of("execute-sql", SCHEMA)
    body = call_body(1)

    class Port:
        identity = None

        async def read_body(self, limit: int) -> bytes:
            return body

        async def schema(self, tool: str) -> ToolSchema:
            return schema

        async def learn(self, tool: str) -> ToolSchema:
            return schema

        async def forward(self, *, strip_params: bool) -> None:
            pass

        async def refuse(self, refusal: object) -> None:
            pass

    answer = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "resultType": "complete"}}).encode()
    listing = json.dumps(
        {"jsonrpc": "2.0", "id": 0, "result": {"tools": [{"name": "execute-sql", "inputSchema": SCHEMA}]}}
    )

    async def instant(scope: Any, receive: Any, send: Any) -> None:
        request = await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send(
            {"type": "http.response.body", "body": listing.encode() if b"tools/list" in request["body"] else answer}
        )

    gated = HeaderGate(instant)
    assert await _request(gated, LIST_HEADERS, LIST_BODY) == 200
    port, settings = Port(), GateSettings()
    figures: dict[str, float] = {}
    start = time.process_time()
    for _ in range(calls):
        check(McpHeaders.read(CALL_HEADERS), parse_request(body), schema)
    figures["core"] = (time.process_time() - start) / calls * 1e6
    start = time.process_time()
    for _ in range(calls):
        await GateRun(port, CALL_HEADERS, settings).run()
    figures["run"] = (time.process_time() - start) / calls * 1e6
    for name, app in (("app", instant), ("middleware", gated)):
        start = time.process_time()
        for _ in range(calls):
            await _request(app, CALL_HEADERS, body)
        figures[name] = (time.process_time() - start) / calls * 1e6
    return figures


# --- counted: one kind of request, N times, in this process (run under callgrind by --instructions) ---------------


async def counted(kind: str, calls: int) -> None:
    """Set up ``kind``, warm it up, then make ``calls`` requests: what ``--instructions`` counts (by difference)."""

    from mcpfsm._core.gate import GateSettings, McpHeaders, ToolSchema, check, parse_request
    from mcpfsm._drivers.gate import GateRun
    from mcpfsm._gate.middleware import HeaderGate

    body = call_body(1)
    if kind in ("sdk", "sdk-gated"):
        from mcpfsm._tooling.demo_server import PeerState, build_server

        server = build_server(PeerState(mode="modern", json_response=True, initial_page_size=None))
        sdk = server.streamable_http_app(streamable_http_path="/mcp", json_response=True)
        target = HeaderGate(sdk) if kind == "sdk-gated" else sdk
        async with _running(sdk):
            assert await _request(target, LIST_HEADERS, LIST_BODY) == 200
            for _ in range(50):
                assert await _request(target, CALL_HEADERS, body) == 200
            if os.environ.get("BENCH_GC_FREEZE"):
                import gc

                gc.freeze()
            for _ in range(calls):
                await _request(target, CALL_HEADERS, body)
        return
    schema = ToolSchema.of("execute-sql", SCHEMA)
    answer = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "resultType": "complete"}}).encode()
    listing = json.dumps(
        {"jsonrpc": "2.0", "id": 0, "result": {"tools": [{"name": "execute-sql", "inputSchema": SCHEMA}]}}
    ).encode()

    async def instant(scope: Any, receive: Any, send: Any) -> None:
        request = await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": listing if b"tools/list" in request["body"] else answer})

    class Port:
        identity = None

        async def read_body(self, limit: int) -> bytes:
            return body

        async def schema(self, tool: str) -> ToolSchema:
            return schema

        async def learn(self, tool: str) -> ToolSchema:
            return schema

        async def forward(self, *, strip_params: bool) -> None:
            pass

        async def refuse(self, refusal: object) -> None:
            pass

    port, settings, seen = Port(), GateSettings(), []
    gated = HeaderGate(instant)
    assert await _request(gated, LIST_HEADERS, LIST_BODY) == 200
    operations = {
        "core": lambda: check(McpHeaders.read(CALL_HEADERS), parse_request(body), schema),
        "run": lambda: GateRun(port, CALL_HEADERS, settings).run(),
        "run-events": lambda: GateRun(port, CALL_HEADERS, settings, seen.append).run(),
        "app": lambda: _request(instant, CALL_HEADERS, body),
        "middleware": lambda: _request(gated, CALL_HEADERS, body),
    }
    operation = operations[kind]
    asynchronous = kind != "core"
    for _ in range(50 + calls):
        if asynchronous:
            await operation()
        else:
            operation()
        seen.clear()


# --- served: the SDK's app under uvicorn, and the proxies ----------------------------------------------------------


def serve_sdk(kind: str) -> None:
    """The child process: the SDK's app, alone or behind HeaderGate, served by uvicorn on a free port; prints READY."""
    import anyio
    import uvicorn

    from mcpfsm._gate.middleware import HeaderGate
    from mcpfsm._tooling.demo_server import PeerState, build_server

    server = build_server(PeerState(mode="modern", json_response=True, initial_page_size=None))
    app: Any = server.streamable_http_app(streamable_http_path="/mcp", json_response=True)
    if kind == "sdk-gated":
        app = HeaderGate(app)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", access_log=False)
    http = uvicorn.Server(config)

    async def announce() -> None:
        while not http.started:  # uvicorn has no readiness callback: poll its flag
            await anyio.sleep(0.01)
        print(f"READY http://127.0.0.1:{http.servers[0].sockets[0].getsockname()[1]}/mcp", flush=True)

    async def serving() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(announce)
            await http.serve()
            group.cancel_scope.cancel()

    anyio.run(serving)


def serve_proxy(kind: str, upstream: str) -> None:
    """The child process: the gate or the plain proxy, on a free port; prints READY."""
    import trio

    from mcpfsm._gate.forward import Forwarder
    from mcpfsm._gate.middleware import HeaderGate
    from mcpfsm._gate.serve import serve

    forwarder = Forwarder(upstream)
    app: Any = HeaderGate(forwarder) if kind == "gate" else forwarder

    async def serving() -> None:
        await serve(app, host="127.0.0.1", port=0, ready=lambda origin: print(f"READY {origin}/mcp", flush=True))

    trio.run(serving)


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Target:
    """One server process the client talks to, and the raw requests it sends it."""

    def __init__(self, process: Any, url: str) -> None:
        self.process = process
        authority = url.split("/", 3)[2]
        self.host, port = authority.split(":")
        self.port = int(port)
        body = call_body(1)
        head = "".join(f"{name.decode()}: {value.decode()}\r\n" for name, value in CALL_HEADERS[1:])
        self.request = (
            f"POST /mcp HTTP/1.1\r\nHost: {authority}\r\n{head}Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        listed = "".join(f"{n.decode()}: {v.decode()}\r\n" for n, v in LIST_HEADERS[1:])
        self.listing = (
            f"POST /mcp HTTP/1.1\r\nHost: {authority}\r\n{listed}Content-Length: {len(LIST_BODY)}\r\n\r\n"
        ).encode() + LIST_BODY


async def _exchange(stream: Any, request: bytes) -> None:
    await stream.send_all(request)
    data = b""
    while b"\r\n\r\n" not in data:
        piece = await stream.receive_some(65536)
        if not piece:
            raise ConnectionError("the server closed the connection before its answer")
        data += piece
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(rest) < length:
        piece = await stream.receive_some(65536)
        if not piece:
            raise ConnectionError("the server closed the connection in the middle of its answer")
        rest += piece
    assert head.startswith(b"HTTP/1.1 200"), head[:40]


async def _interleaved(targets: dict[str, _Target], calls: int, rounds: int) -> dict[str, list[float]]:
    # Both servers up at once, each round a batch to one then the other (so a busy machine weighs on both alike),
    # over 8 keep-alive connections each; CPU per call of each server process, per round.
    import trio

    for target in targets.values():
        listing = await trio.open_tcp_stream(target.host, target.port)
        async with listing:
            await _exchange(listing, target.listing)

    async def batch(name: str, count: int) -> None:
        # Fresh connections per batch: the other server's may have idled past its keep-alive timeout meanwhile.
        async def connection() -> None:
            stream = await trio.open_tcp_stream(targets[name].host, targets[name].port)
            async with stream:
                for _ in range(count // 8):
                    await _exchange(stream, targets[name].request)

        async with trio.open_nursery() as nursery:
            for _ in range(8):
                nursery.start_soon(connection)

    for name in targets:
        await batch(name, 400)  # warm-up
    samples: dict[str, list[float]] = {name: [] for name in targets}
    for _ in range(rounds):
        for name, target in targets.items():
            before = cpu_seconds(target.process.pid)
            await batch(name, calls)
            samples[name].append((cpu_seconds(target.process.pid) - before) / (calls // 8 * 8) * 1e6)
    return samples


def _pair(kinds: tuple[str, str], upstream: str | None, calls: int, rounds: int) -> dict[str, list[float]]:
    import trio

    from mcpfsm._tooling.server_process import _started

    def argv(kind: str) -> list[str]:
        return [sys.executable, __file__, "--serve", kind, *(("--upstream", upstream) if upstream else ())]

    with _started(argv(kinds[0]), None, 30) as first, _started(argv(kinds[1]), None, 30) as second:
        targets = {kinds[0]: _Target(*first), kinds[1]: _Target(*second)}
        return trio.run(_interleaved, targets, calls, rounds)


def proxy(calls: int, rounds: int) -> dict[str, Any]:
    from mcpfsm._tooling.server_process import _started

    with _started([sys.executable, "-m", "tests.gate.upstream"], None, 30) as (_, upstream):
        samples = _pair(("plain", "gate"), upstream, calls, rounds)
    plain, gate = statistics.median(samples["plain"]), statistics.median(samples["gate"])
    return {"plain_us": plain, "gate_us": gate, "share": (gate - plain) / gate, "samples": samples}


def served(calls: int, rounds: int) -> dict[str, Any]:
    samples = _pair(("sdk", "sdk-gated"), None, calls, rounds)
    alone, gate = statistics.median(samples["sdk"]), statistics.median(samples["sdk-gated"])
    return {"alone_us": alone, "gated_us": gate, "growth": gate / alone - 1, "samples": samples}


# --- instructions: callgrind counts of the server process per call, repeatable on a busy machine -----------------


def _callgrind(directory: str, name: str) -> list[str]:
    return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={directory}/{name}.out"]


def _total(path: Path) -> int:
    # The instruction total callgrind writes at the end of its output file ("summary:" or "totals:").
    for line in reversed(path.read_text().splitlines()):
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise SystemExit(f"no callgrind total in {path}")


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONHASHSEED": "0"}  # the same hashing in every run: the same work


def counted_in_process(kind: str, calls: int) -> int:
    """Instructions of a process that sets up ``kind`` and makes ``calls`` requests in process (``--count``)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        command = [*_callgrind(directory, "run"), sys.executable, __file__, "--count", kind, "--calls", str(calls)]
        subprocess.run(command, check=True, capture_output=True, env=_environment())
        return _total(Path(directory) / "run.out")


def counted_server(argv: list[str], calls: int) -> int:
    """Instructions of a server process (under callgrind) that answered 50 warm-up calls and ``calls`` more."""
    import signal
    import subprocess
    import tempfile

    import trio

    from mcpfsm._tooling.server_process import _await_ready

    with tempfile.TemporaryDirectory() as directory, tempfile.TemporaryFile() as stderr:
        command = [*_callgrind(directory, "server"), *argv]
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, env=_environment()
        )
        try:
            target = _Target(process, _await_ready(process, stderr, 900))

            async def client() -> None:
                stream = await trio.open_tcp_stream(target.host, target.port)
                async with stream:
                    await _exchange(stream, target.listing)
                    for _ in range(50 + calls):
                        await _exchange(stream, target.request)

            trio.run(client)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=300)
            if process.stdout is not None:
                process.stdout.close()
        return _total(Path(directory) / "server.out")


def per_call(count: Any, small: int, large: int) -> float:
    """Instructions per call: the difference of two runs over the difference of their calls (start-up cancels)."""
    return (count(large) - count(small)) / (large - small)


def instructions(small: int, large: int, only: set[str]) -> None:
    """Print instructions per call of each shape, with and without the gate, and the ratios."""
    from mcpfsm._tooling.server_process import _started

    def line(label: str, alone: float, gated: float, target: str) -> None:
        print(
            f"{label}: without the gate {alone:,.0f} instructions/call, with it {gated:,.0f}:"
            f" growth {gated / alone - 1:+.1%} ({gated - alone:+,.0f}; {target})",
            flush=True,
        )

    if "components" in only:
        parts = {
            kind: per_call(lambda n, kind=kind: counted_in_process(kind, n), small, large)
            for kind in ("core", "run", "run-events", "app", "middleware")
        }
        print(
            f"per request, in process: the verifier's core {parts['core']:,.0f} instructions, its run of the gate"
            f" machine {parts['run']:,.0f} ({parts['run-events']:,.0f} with a listener), HeaderGate around an app"
            f" that answers at once {parts['middleware']:,.0f} (the app alone {parts['app']:,.0f})",
            flush=True,
        )
    if "in-process" in only:
        alone, gated = (per_call(lambda n, k=k: counted_in_process(k, n), small, large) for k in ("sdk", "sdk-gated"))
        line("middleware (SDK server, in process, asyncio)", alone, gated, "target <= 5 %")
    if "served" in only:
        alone, gated = (
            per_call(lambda n, k=k: counted_server([sys.executable, __file__, "--serve", k], n), small, large)
            for k in ("sdk", "sdk-gated")
        )
        line("middleware (SDK server served by uvicorn, its process)", alone, gated, "target <= 5 %")
    if "proxy" in only:
        with _started([sys.executable, "-m", "tests.gate.upstream"], None, 30) as (_, upstream):
            plain, gate = (
                per_call(
                    lambda n, k=k: counted_server([sys.executable, __file__, "--serve", k, "--upstream", upstream], n),
                    small,
                    large,
                )
                for k in ("plain", "gate")
            )
        print(
            f"proxy (Hypercorn trio worker, mcpfsm's pool; its process): pass-through {plain:,.0f} instructions/call,"
            f" gate {gate:,.0f}: the verifier's share {(gate - plain) / gate:.1%} (target <= 10 %)",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--served-calls", type=int, default=2000)
    parser.add_argument("--proxy-calls", type=int, default=2000)
    parser.add_argument("--serve", choices=["gate", "plain", "sdk", "sdk-gated"], help=argparse.SUPPRESS)
    parser.add_argument("--upstream", help=argparse.SUPPRESS)
    parser.add_argument("--count", help=argparse.SUPPRESS)
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions under callgrind instead (repeatable)"
    )
    parser.add_argument("--small", type=int, default=100, help="calls of the smaller callgrind run")
    parser.add_argument("--large", type=int, default=400, help="calls of the larger callgrind run")
    parser.add_argument("--only", default="components,in-process,served,proxy", help="what --instructions counts")
    args = parser.parse_args()
    if args.instructions:
        instructions(args.small, args.large, set(args.only.split(",")))
        return
    if args.count:
        import anyio

        anyio.run(counted, args.count, args.calls)
        return
    if args.serve in ("sdk", "sdk-gated"):
        serve_sdk(args.serve)
        return
    if args.serve:
        serve_proxy(args.serve, args.upstream)
        return
    import anyio

    parts = anyio.run(components, args.calls)
    print(
        f"per request, in process: the verifier's core {parts['core']:.1f} us, its run of the gate machine"
        f" {parts['run']:.1f} us, HeaderGate around an app that answers at once {parts['middleware']:.1f} us"
        f" (the app alone {parts['app']:.1f} us)"
    )
    measured = anyio.run(middleware, args.calls, args.rounds)
    print(
        f"middleware (SDK server, in process, asyncio): alone {measured['alone_us']:.0f} us CPU/call,"
        f" behind HeaderGate {measured['gated_us']:.0f} us: growth {measured['growth']:+.1%} (target <= 5 %)"
    )
    measured = served(args.served_calls, args.rounds)
    print(
        f"middleware (SDK server served by uvicorn, its process's CPU): alone {measured['alone_us']:.0f} us CPU/call,"
        f" behind HeaderGate {measured['gated_us']:.0f} us: growth {measured['growth']:+.1%} (target <= 5 %)"
    )
    measured = proxy(args.proxy_calls, args.rounds)
    print(
        f"proxy (Hypercorn trio worker, mcpfsm's pool): pass-through {measured['plain_us']:.0f} us CPU/call,"
        f" gate {measured['gate_us']:.0f} us: the verifier's share {measured['share']:.1%} (target <= 10 %)"
    )


if __name__ == "__main__":
    main()
