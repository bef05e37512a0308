"""Instructions per ``tools/call`` that repeat on a busy machine: an in-process peer, counted by callgrind.

Run from the repository root (needs valgrind):

    python bench/repeatable.py [--only raw,mcpfsm] [--calls 300] [--runs 1]
    python bench/repeatable.py --check                  # CI: mcpfsm within 2 % of bench/repeatable.json
    python bench/repeatable.py --source /tmp/old-commit  # another checkout's mcpfsm, this harness
    python bench/repeatable.py --only mcpfsm --keep out  # keep the callgrind file (callgrind_annotate out)

``bench/instructions.py`` counts whole processes against the SDK server in another process, and its figure
moves with the machine's load: whether an answer is already there when the client reads, or arrives in two
pieces, changes how many receives and scheduler passes a call takes (each about 40,000 instructions). Here the
peer is in the client's process and answers in lock step, so every call takes the same path whatever the load:

- the peer is a trio *instrument* (``before_io_wait``): when trio's scheduler is about to block waiting for
  I/O (no task can run), the peer reads the complete request already written to its side of the connection and
  writes the whole answer at once (head and body in one ``send``); the scheduler's poll then finds it. So the
  answer comes while the client waits for it, as a server's in another process does (it needs longer to answer
  than the client needs to start waiting), never while the client still runs, and never in pieces: a client
  that reads before it waits finds nothing and waits (``raw``, like trio's ``SocketStream``: two receives), one
  that waits first reads once (mcpfsm's pool). No second thread or process, no timing: the same path every time;
- what the client runs is the real thing: ``mcpfsm.Client.http`` over its own keep-alive pool and a real
  TCP connection to 127.0.0.1, the session, the tool-call machine, the header plan and every check of the
  answer, with an ``on_event`` that records every event (as ``bench/call.py``); ``raw`` is
  ``bench/call.py``'s floor, one kept-alive ``trio.SocketStream`` with a prebuilt head and ``json``;
- the peer's own work is not counted: trio calls its hook through ``functools.reduce``, whose C function
  (``functools_reduce``) nothing else on the path calls, and callgrind runs with
  ``--toggle-collect=functools_reduce --collect-atstart=yes`` (collection off inside it). On an interpreter
  without that symbol (a stripped build) the peer's work is counted in every row, and the output says so
  (``--with-peer`` counts it on purpose);
- the counted window is exactly ``--calls`` calls after ``--warmup`` calls: the client calls
  ``os.getloadavg()`` before and after it and callgrind dumps at each (``--dump-before=getloadavg``), so
  start-up, imports, the connection and the first calls are not in it; ``PYTHONHASHSEED=0``; the wall clock
  (``time.time_ns``) stands still in the child, since the events' timestamps format the date once per second
  and a run under callgrind lasts as many seconds as the load makes it.

Should a request not be readable yet when the scheduler is about to block (a loopback delivery the kernel
deferred), the peer waits for it there; the child counts those and the output says so (the client's path is the
same). ``--check`` compares mcpfsm's count per call with the figure committed in ``bench/repeatable.json``
(two-sided, 2 %): a change of the hot path fails the build until the figure is updated on purpose
(``--update``), in a commit that says why. The file names the interpreter it was measured with; on another
one the ratio to raw is compared instead.
"""

from __future__ import annotations

import argparse
import functools
import gc
import itertools
import json
import os
import platform
import re
import select
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIGURE = ROOT / "bench" / "repeatable.json"
CLIENTS = ("raw", "mcpfsm")
TOOL = "execute-sql"
ARGS = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}
MODERN = "2026-07-28"
# The peer's head, as uvicorn (the SDK server of bench/call.py) writes it; a fixed date keeps every answer's size.
HEAD = "HTTP/1.1 200 OK\r\ndate: Fri, 04 Dec 2026 12:00:00 GMT\r\nserver: uvicorn\r\ncontent-length: %d\r\n"
SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "peer", "title": "in-process peer", "version": "1.0.0"}}
EXECUTE_SQL = {
    "description": "Pretend to run a SQL query; echoes the arguments it received.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "query": {"title": "Query", "type": "string"},
            "database": {"title": "Database", "type": "string", "x-mcp-header": "Database"},
            "region": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Region"},
            "options": {
                "additionalProperties": False,
                "default": None,
                "properties": {"readOnly": {"type": "boolean", "x-mcp-header": "Read-Only"}},
                "type": "object",
            },
        },
        "required": ["query", "database"],
        "title": "execute_sqlArguments",
    },
    "name": TOOL,
}
# What the SDK peer of bench/call.py answers (tests/support/peer, modern mode), byte for byte but the server's name.
RESULTS: dict[str, Any] = {
    "server/discover": {
        "cacheScope": "private",
        "capabilities": {"tools": {"listChanged": True}},
        "resultType": "complete",
        "supportedVersions": [MODERN],
        "ttlMs": 0,
        "_meta": SERVER_INFO,
    },
    "tools/list": {
        "cacheScope": "private",
        "resultType": "complete",
        "tools": [EXECUTE_SQL],
        "ttlMs": 0,
        "_meta": SERVER_INFO,
    },
    "tools/call": {
        "content": [{"text": "executed 'select 1' on 'analytics'", "type": "text"}],
        "isError": False,
        "resultType": "complete",
        "structuredContent": ARGS,
        "_meta": SERVER_INFO,
    },
}
_LENGTH = re.compile(rb"(?i)\r\ncontent-length:\s*(\d+)")


# --- the peer ------------------------------------------------------------------------------------


class Peer:
    """An MCP server in the client's process: answers in trio's ``before_io_wait``, before the scheduler polls.

    ``before_io_wait`` is a ``functools.reduce`` partial set on the instance (trio takes any callable there):
    its C function is what callgrind's ``--toggle-collect=functools_reduce`` leaves out of the count.
    """

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/mcp"
        self.connections: dict[int, tuple[socket.socket, bytearray]] = {}
        self.poller = select.poll()
        self.late = 0
        """Requests that were not readable yet when the scheduler was about to block (the peer waited for them)."""
        # trio calls before_io_wait(timeout): reduce(step, (None,), timeout) calls step(timeout, None) once.
        self.before_io_wait = functools.partial(functools.reduce, self._answer_ready, (None,))

    def _answer_ready(self, timeout: float, _: None) -> None:
        # Only when the scheduler would block: the client has done all it can before the answer comes.
        if timeout <= 0:
            return
        ready = self.poller.poll(0)
        if not ready and self.connections:
            # A request the kernel has not delivered yet (never seen on loopback): wait for it here, up to the
            # scheduler's own timeout, rather than leave a client waiting on an answer nobody writes.
            ready = self.poller.poll(min(timeout, 1.0) * 1000)
            self.late += len(ready)
        for fd, _event in ready:
            self.serve(fd)

    def adopt(self, connection: socket.socket) -> None:
        connection.setblocking(False)
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connections[connection.fileno()] = (connection, bytearray())
        self.poller.register(connection.fileno(), select.POLLIN)

    def serve(self, fd: int) -> int:
        """Read what ``fd`` has and answer every complete request in it: how many (-1: the client closed)."""
        connection, buffer = self.connections[fd]
        try:
            data = connection.recv(1 << 20)
        except BlockingIOError:
            return 0
        if not data:
            self.poller.unregister(fd)
            del self.connections[fd]
            connection.close()
            return -1
        buffer += data
        answered = 0
        while (end := buffer.find(b"\r\n\r\n")) >= 0:
            length = _LENGTH.search(buffer, 0, end + 2)
            total = end + 4 + (int(length[1]) if length else 0)
            if len(buffer) < total:
                break
            head, body = bytes(buffer[:end]), bytes(buffer[end + 4 : total])
            del buffer[:total]
            connection.sendall(self._answer(head, body))
            answered += 1
        return answered

    @staticmethod
    def _answer(head: bytes, body: bytes) -> bytes:
        if not head.startswith(b"POST "):
            return b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n"
        message = json.loads(body)
        if "id" not in message:
            return b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"
        result = RESULTS[message["method"]]
        payload = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}, separators=(",", ":")).encode()
        return (HEAD % len(payload)).encode() + b"content-type: application/json\r\n\r\n" + payload

    async def run(self) -> None:
        """Accept connections (the instrument answers their requests)."""
        import trio

        while True:
            await trio.lowlevel.wait_readable(self.listener)
            connection, _ = self.listener.accept()
            self.adopt(connection)


# --- the clients (as bench/call.py's) -----------------------------------------------------------------


async def raw_client(url: str) -> tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[None]]]:
    import trio

    stream = await trio.open_tcp_stream("127.0.0.1", int(url.split(":")[2].split("/")[0]))
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": TOOL,
        "Mcp-Param-Database": "analytics",
        "Mcp-Param-Read-Only": "true",
    }
    host = url.split("/")[2]
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}\r\n"
        + "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        + "Content-Length: "
    ).encode("ascii")
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    }
    params = {"name": TOOL, "arguments": ARGS, "_meta": meta}
    ids = itertools.count(1)

    async def receive() -> bytes:
        data = await stream.receive_some(65536)
        if not data:
            raise ConnectionError("the server closed the connection")
        return bytes(data)

    async def one() -> object:
        body = json.dumps({"jsonrpc": "2.0", "id": next(ids), "method": "tools/call", "params": params}).encode()
        await stream.send_all(b"%s%d\r\n\r\n%s" % (head, len(body), body))
        data = await receive()
        while (end := data.find(b"\r\n\r\n")) < 0:
            data += await receive()
        at = data.find(b"content-length:", 0, end) + 15
        total = end + 4 + int(data[at : data.find(b"\r\n", at)])
        while len(data) < total:
            data += await receive()
        answer = json.loads(data[end + 4 : total])
        assert answer["result"]["isError"] is False, answer
        return answer

    return one, stream.aclose


async def mcpfsm_client(url: str) -> tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[None]]]:
    import mcpfsm

    events: list[object] = []
    client = mcpfsm.Client.http(url, on_event=events.append)
    await client.__aenter__()
    tool = (await client.tools()).get(TOOL)
    assert tool is not None

    async def one() -> object:
        result = await tool.call(ARGS)
        assert not result.is_error
        return result

    async def close() -> None:
        # Every call's events were observed: resolving, planning, sending, succeeded.
        assert len(events) % 4 == 0 and events, len(events)
        await client.aclose()

    return one, close


# --- the child, under callgrind ------------------------------------------------------------------------


def child(name: str, warmup: int, calls: int) -> None:
    # The wall clock stands still here (a C callable, as cheap as the real one): mcpfsm formats an event's date
    # and time once per second, and under callgrind the seconds a run lasts move with the machine's load.
    time.time_ns = itertools.repeat(time.time_ns()).__next__

    import trio

    import mcpfsm  # in both rows, as in bench/call.py: the same heap for the garbage collector

    print(json.dumps({"mcpfsm": mcpfsm.__file__}), file=sys.stderr, flush=True)

    peer = Peer()
    made = {"raw": raw_client, "mcpfsm": mcpfsm_client}[name]

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.run)
            one, close = await made(peer.url)
            for _ in range(warmup):
                await one()
            # A call that only the peer's hook makes: listed in the setup dump unless the hook's cost is left out.
            functools.reduce(lambda *_: os.getppid(), (None,), None)
            late, collections = peer.late, [g["collections"] for g in gc.get_stats()]
            os.getloadavg()  # callgrind dumps here: the counted window starts
            for _ in range(calls):
                await one()
            os.getloadavg()  # and ends here
            collections = [g["collections"] - c for g, c in zip(gc.get_stats(), collections, strict=True)]
            print(json.dumps({"late": peer.late - late, "gc": collections}), flush=True)
            await close()
            nursery.cancel_scope.cancel()

    trio.run(main, instruments=[peer])  # type: ignore[list-item]


# --- the parent -------------------------------------------------------------------------------------------


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def count(
    name: str, *, calls: int, warmup: int, source: Path, keep: Path | None = None, with_peer: bool = False
) -> dict[str, Any]:
    """Run ``name``'s child under callgrind; its instructions per call in the window, and what the child saw."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(source)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        name,
        "--calls",
        str(calls),
        "--warmup",
        str(warmup),
    ]
    # A first run writes the bytecode caches of `source` (as after pip install), outside the count.
    subprocess.run(
        [*command[:2], "--child", name, "--calls", "1", "--warmup", "1"], env=env, check=True, capture_output=True
    )
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "callgrind.out"
        valgrind = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            "--dump-before=getloadavg",
            *([] if with_peer else ["--toggle-collect=functools_reduce", "--collect-atstart=yes"]),
        ]
        done = subprocess.run([*valgrind, *command], env=env, capture_output=True, text=True, cwd=source)
        if done.returncode:
            raise SystemExit(f"{name} failed under callgrind:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        parts = sorted(Path(directory).glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:]))
        if len(parts) != 2:
            raise SystemExit(f"{name}: expected 2 callgrind dumps, got {len(parts)}:\n{done.stderr[-2000:]}")
        window = parts[1]
        total = int(re.search(r"^summary: (\d+)", window.read_text(), re.M)[1])  # type: ignore[index]
        # The peer is left out only where callgrind knows functools_reduce: then the getppid() the child calls
        # under it once is not among the setup dump's functions.
        excluded = not with_peer and not re.search(r"^c?fn=\(\d+\) getppid$", parts[0].read_text(), re.M)
        if keep is not None:
            keep.write_bytes(window.read_bytes())
    loaded = Path(json.loads(re.search(r'^\{"mcpfsm".*$', done.stderr, re.M)[0])["mcpfsm"])  # type: ignore[index]
    if not loaded.is_relative_to(source.resolve()):
        raise SystemExit(f"{name}: the child imported {loaded}, not the mcpfsm of {source}")
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    return {"per_call": total / calls, "peer_excluded": excluded, **seen}


def interpreter() -> str:
    """What the counts depend on besides mcpfsm: the interpreter's build and trio's version (not where they live)."""
    from importlib.metadata import version

    build = " ".join(platform.python_build())
    return (
        f"{platform.python_implementation()} {platform.python_version()} ({build}; {platform.python_compiler()})"
        f" {platform.machine()}, trio {version('trio')}"
    )


def measure(options: argparse.Namespace) -> dict[str, dict[str, Any]]:
    figures: dict[str, dict[str, Any]] = {}
    for name in options.only.split(","):
        before = _load()
        figures[name] = count(
            name,
            calls=options.calls,
            warmup=options.warmup,
            source=options.source,
            keep=options.keep,
            with_peer=options.with_peer,
        )
        seen = figures[name]
        notes = []
        if seen["late"]:
            notes.append(f"{seen['late']} late answers")
        if seen["gc"][2]:
            notes.append(f"{seen['gc'][2]} full collections")
        if not seen["peer_excluded"]:
            notes.append("the peer's work counted")
        print(
            f"  {name:7s} {seen['per_call']:12,.0f} instructions per call   load {before} -> {_load()}"
            + (f"   ({'; '.join(notes)})" if notes else ""),
            flush=True,
        )
    if "raw" in figures:
        for name, seen in figures.items():
            if name != "raw":
                print(f"  {name} / raw = {seen['per_call'] / figures['raw']['per_call']:.3f}")
    return figures


def check(options: argparse.Namespace) -> None:
    """Fail (exit status 1) when mcpfsm's count per call is more than the tolerance away from the committed one."""
    committed = json.loads(FIGURE.read_text())
    options.only, options.calls, options.warmup = "raw,mcpfsm", committed["calls"], committed["warmup"]
    figures = measure(options)
    mcpfsm, raw = figures["mcpfsm"]["per_call"], figures["raw"]["per_call"]
    same = interpreter() == committed["interpreter"] and figures["mcpfsm"]["peer_excluded"]
    if same:
        what, now, then = "mcpfsm instructions per call", mcpfsm, committed["mcpfsm"]
        drift = raw / committed["raw"] - 1
        if abs(drift) > committed["tolerance"]:
            print(f"  note: raw moved {drift:+.2%} too; the harness or the machine changed, not only mcpfsm")
    else:
        print(
            f"  measured with {committed['interpreter']!r} (the peer's work left out), not with {interpreter()!r}"
            f"{'' if figures['mcpfsm']['peer_excluded'] else ' (the peer counted)'}: comparing the ratio to raw"
        )
        what, now, then = "mcpfsm / raw", mcpfsm / raw, committed["mcpfsm"] / committed["raw"]
    change = now / then - 1
    print(f"  {what}: {now:,.3f} against {then:,.3f} committed in bench/{FIGURE.name} ({change:+.2%})")
    if abs(change) > committed["tolerance"]:
        raise SystemExit(
            f"{what} moved {change:+.2%} from bench/{FIGURE.name} (allowed ±{committed['tolerance']:.0%}): find the"
            " change that did it (bench/repeatable.py --source DIR counts another checkout), or, if it is meant,"
            " run bench/repeatable.py --update and say why in the commit"
        )
    print(f"  within ±{committed['tolerance']:.0%}")


def update(options: argparse.Namespace) -> None:
    options.only = "raw,mcpfsm"
    figures = measure(options)
    figure = {
        "interpreter": interpreter(),
        "calls": options.calls,
        "warmup": options.warmup,
        "tolerance": 0.02,
        "raw": round(figures["raw"]["per_call"]),
        "mcpfsm": round(figures["mcpfsm"]["per_call"]),
        "measured": time.strftime("%Y-%m-%d"),
    }
    FIGURE.write_text(json.dumps(figure, indent=2) + "\n")
    print(f"  wrote {FIGURE.relative_to(ROOT)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(CLIENTS), help=f"of {','.join(CLIENTS)}")
    parser.add_argument("--calls", type=int, default=300, help="calls in the counted window")
    parser.add_argument("--warmup", type=int, default=20, help="calls before it")
    parser.add_argument("--runs", type=int, default=1, help="measure this many times (to see it repeat)")
    parser.add_argument("--source", type=Path, default=ROOT, help="the checkout whose mcpfsm is counted")
    parser.add_argument("--keep", type=Path, default=None, help="keep the window's callgrind file here")
    parser.add_argument("--with-peer", action="store_true", help="count the peer's work too")
    parser.add_argument("--check", action="store_true", help=f"compare with {FIGURE.name} (2 %%), fail beyond")
    parser.add_argument("--update", action="store_true", help=f"write {FIGURE.name} from this run")
    parser.add_argument("--child", choices=CLIENTS, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child, options.warmup, options.calls)
    elif options.check:
        check(options)
    elif options.update:
        update(options)
    else:
        print(f"{interpreter()}; {options.calls} calls counted after {options.warmup}")
        for _ in range(options.runs):
            measure(options)


if __name__ == "__main__":
    main()
