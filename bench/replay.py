"""Server CPU per tools/call: the official SDK's server, and ``mcpfsm replay`` answering the same call from a cassette.

Run from the repository root:

    python bench/replay.py [--calls N] [--rounds R]

Two server processes on 127.0.0.1, each started and waited for by its READY line:

- **sdk**: a plain official SDK server (``mcp.server.mcpserver.MCPServer`` with one tool, ``execute-sql``, whose
  ``database`` and ``options.readOnly`` carry ``x-mcp-header``; its Streamable HTTP app under uvicorn, as the SDK
  documents it), answering in the 2026-07-28 era, where it checks the ``Mcp-Param-*`` headers of every call;
- **replay**: ``python -m mcpfsm replay CASSETTE``, the cassette recorded from that same server by mcpfsm
  (``Client.http(url, record=...)``) making the very calls the rounds make, one exchange per call.

One client, mcpfsm's ``Tool.call`` over its keep-alive pool, makes the same sequential ``tools/call`` of
``execute-sql`` (same arguments, same four protocol headers) against each; what is measured is the *server*
process's CPU time (user + system, from ``/proc/PID/stat``, so Linux only) over a round of N calls, divided by N.
Rounds alternate the two servers; the median round is reported, with the ratio replay / sdk. Target (issue 32):
at most 0.5. Clock ticks are 10 ms: keep N * rounds large enough (the defaults give each figure some hundred
ticks at least).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcpfsm
from mcpfsm._tooling.server_process import _started

ROOT = Path(__file__).resolve().parent.parent
ARGS = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}
TICK = os.sysconf("SC_CLK_TCK")

SDK_SERVER = '''
import sys
from typing import Annotated, Any

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")
    readOnly: bool | None = None


OPTIONS = {"type": "object", "properties": {"readOnly": {"type": "boolean", "x-mcp-header": "Read-Only"}}}
server = MCPServer("bench", log_level="WARNING")


@server.tool(name="execute-sql")
def execute_sql(
    query: str,
    database: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Database"})],
    options: Annotated[Options | None, WithJsonSchema(OPTIONS)] = None,
) -> dict[str, Any]:
    """Pretend to run a query."""
    return {"query": query, "database": database}


async def main() -> None:
    config = uvicorn.Config(server.streamable_http_app(), host="127.0.0.1", port=0, log_level="warning",
                            access_log=False, lifespan="on")
    http = uvicorn.Server(config)

    async def announce() -> None:
        while not http.started:
            await anyio.sleep(0.01)
        print(f"READY http://127.0.0.1:{http.servers[0].sockets[0].getsockname()[1]}/mcp", flush=True)

    async with anyio.create_task_group() as group:
        group.start_soon(announce)
        await http.serve()


anyio.run(main)
'''


def server_cpu(pid: int) -> float:
    """The process's CPU seconds so far (user + system), from /proc."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


async def calls(url: str, count: int, *, record: Path | None = None) -> None:
    async with mcpfsm.Client.http(url, record=record) as client:
        sql = (await client.tools()).get("execute-sql")
        assert sql is not None
        for _ in range(count):
            result = await sql.call(ARGS)
            assert not result.is_error, result.content


async def round_cpu(pid: int, url: str, count: int) -> float:
    before = server_cpu(pid)
    await calls(url, count)
    return (server_cpu(pid) - before) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls per round (default 1000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per server (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        script = Path(work) / "sdk_server.py"
        script.write_text(SDK_SERVER, encoding="utf-8")
        cassette = Path(work) / "calls.jsonl"
        with _started([sys.executable, str(script)], ROOT, 60) as (sdk, sdk_url):
            # The cassette: every call of every round, as mcpfsm recorded it from this server.
            trio.run(lambda: calls(sdk_url, args.calls * args.rounds, record=cassette))
            replay_argv = [sys.executable, "-m", "mcpfsm", "replay", str(cassette)]
            with _started(replay_argv, ROOT, 60) as (replay, replay_url):
                figures: dict[str, list[float]] = {"sdk": [], "replay": []}
                for number in range(args.rounds):
                    for name, process, url in (("sdk", sdk, sdk_url), ("replay", replay, replay_url)):
                        figures[name].append(trio.run(round_cpu, process.pid, url, args.calls))
                    print(
                        f"round {number + 1}: sdk {figures['sdk'][-1]:7.1f} us, replay {figures['replay'][-1]:7.1f} us"
                        " server CPU per call",
                        flush=True,
                    )
    median: dict[str, Any] = {name: statistics.median(values) for name, values in figures.items()}
    print(f"median server CPU per tools/call over {args.rounds} rounds of {args.calls} calls:")
    print(f"  sdk    {median['sdk']:8.1f} us")
    print(f"  replay {median['replay']:8.1f} us")
    print(f"  replay / sdk = {median['replay'] / median['sdk']:.3f} (target <= 0.5)")


if __name__ == "__main__":
    main()
