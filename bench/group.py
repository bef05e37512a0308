"""Client groups: opening many stdio members at once, what a call through the group adds, lazy members with known
listings, and tool search.

Run from the repository root:

    python bench/group.py [--members 10] [--start-delay 0] [--calls 500] [--rounds 15] [--skip-calls]
                          [--lazy 25] [--processes 7] [--search 1000] [--queries 200] [--only PARTS]

1. **Opening.** Each of ``--members`` stdio servers (``python -I -S tests/support/stdio_lingering.py``, a real
subprocess
   speaking MCP on stdio; ``--start-delay`` makes each wait that long before its first answer, as a server that loads
   something first) is opened alone, one after another (``Client.connect``: process start and the
   ``server/discover`` handshake), and the slowest of those starts is taken; then one ``ClientGroup`` of all of
   them is entered (every member connected concurrently). Target (issue 22): the group's wall time at most
   1.5x the slowest single start of the same run. The members are Python processes: with ``--start-delay 0``
   their start is interpreter CPU, so on a machine with fewer cores than members the group cannot beat
   members/cores times one start, whatever the client does; ``--start-delay`` shows the client's own part.
2. **Calling.** The same ``tools/call`` of one member, ``--calls`` times per round, through the group
   (``group.call_tool("m0_pid")``) and directly on the member's ``Client`` (``group["m0"].call_tool(tool)``,
   the same listed handle), rounds interleaved (which goes first alternates); CPU is this process's
   ``time.process_time()`` per call (the server is another process), the median round reported. Target: the
   group at most 1.05x the member's ``Client``. Events are on in both (the member publishes to the group's bus).
3. **Lazy members with known listings** (issue 31). ``--lazy`` stdio members (``tests/support/stdio_member.py``, each
   appending its process id to a file as it starts) are opened once as an eager group with a ``FileStore``, which
   keeps each member's listing as its known listing. Then fresh processes (``--processes`` of each kind,
   interleaved), each entering a ``ClientGroup(config, lazy=True, store=FileStore(dir))``: one times
   ``group.tools()`` (checking that no process started and every member is idle), the other times reading the
   same known listings straight from a fresh ``FileStore`` (``store.get`` of each key, concurrently, as the group
   reads them): the baseline. Both pay the same first-use costs of a fresh process. Target: the group at most 1.2x
   the store read, in CPU time of the process (its threads included: a ``FileStore`` reads in threads), medians;
   the wall time is printed too, but on a shared machine it measures how soon the threads are scheduled. The
   member's store keys are digests computed when the group is made, as the baseline computes them before it times.
   A third kind of process lists, then calls one member's tool: exactly one process starts. The eager open of the
   same members is reported as part 1 does (``--members`` there).
4. **Search.** ``ToolList.search`` over ``--search`` generated tools (names, titles, descriptions, parameters in
   the shape real servers list them), ``--queries`` queries of one to three words: the first search of a list
   builds its index (reported apart), later ones reuse it; the median per search. Target: under 1 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from random import Random
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mcpfsm  # noqa: E402


def member(delay: float) -> dict[str, Any]:
    # -I -S: no site, no user paths; the cheapest start a Python MCP server can have (the server needs neither).
    args = ["-I", "-S", str(ROOT / "tests" / "support" / "stdio_lingering.py")]
    if delay:
        args += ["--start-delay", str(delay)]
    return {"command": sys.executable, "args": args, "cwd": str(ROOT)}


async def opening(members: int, delay: float) -> tuple[float, float, float, float]:
    singles = []
    for _ in range(members):
        started = time.perf_counter()
        async with mcpfsm.Client.stdio([sys.executable, *member(delay)["args"]], cwd=str(ROOT)):
            singles.append(time.perf_counter() - started)
    config = {"mcpServers": {f"m{index}": member(delay) for index in range(members)}}
    group = mcpfsm.ClientGroup(config)
    started, cpu = time.perf_counter(), time.process_time()
    async with group:
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert set(group.status.values()) == {"connected"}, group.errors
    return max(singles), elapsed, sum(singles), cpu


async def calling(calls: int, rounds: int) -> tuple[float, float]:
    config = {"mcpServers": {"m0": member(0)}}
    events = 0

    def count(event: mcpfsm.CallEvent) -> None:
        nonlocal events
        events += 1

    async with mcpfsm.ClientGroup(config, on_event=count) as group:
        tools = await group.tools()
        grouped = tools.get("m0_pid")
        assert isinstance(grouped, mcpfsm.GroupTool)
        client, own = group["m0"], grouped.member_tool
        for _ in range(100):  # warm-up
            await group.call_tool("m0_pid")
            await client.call_tool(own)
        through_group: list[float] = []
        direct: list[float] = []
        for number in range(rounds):
            # Alternate which goes first: on a shared machine the second half of a round is not the first's twin.
            order = ((True, through_group), (False, direct))
            for grouped_call, samples in order if number % 2 else reversed(order):
                started = time.process_time()
                for _ in range(calls):
                    if grouped_call:
                        await group.call_tool("m0_pid")
                    else:
                        await client.call_tool(own)
                samples.append((time.process_time() - started) / calls)
        assert events >= 8 * (100 + calls * rounds)
    return statistics.median(through_group), statistics.median(direct)


MEMBER = ROOT / "tests" / "support" / "stdio_member.py"


def lazy_config(directory: Path, members: int) -> dict[str, Any]:
    return {
        "mcpServers": {
            f"m{index}": {
                "command": sys.executable,
                "args": ["-I", "-S", str(MEMBER), "--name", f"m{index}", "--started", str(directory / f"m{index}")],
            }
            for index in range(members)
        }
    }


def started(directory: Path, members: int) -> list[int]:
    return [
        len((directory / f"m{index}").read_text().splitlines()) if (directory / f"m{index}").exists() else 0
        for index in range(members)
    ]


# What each fresh process runs (`python bench/group.py --child KIND DIR MEMBERS`); it prints one JSON line.
async def child(kind: str, directory: Path, members: int) -> dict[str, Any]:
    from mcpfsm._core.config import load_config
    from mcpfsm._core.known_listings import known_key

    config = lazy_config(directory, members)
    before = started(directory, members)
    if kind == "read":
        store = mcpfsm.FileStore(directory / "store")
        keys = [known_key(server) for server in load_config(config).servers.values()]
        values: dict[str, Any] = {}

        async def get(key: str) -> None:
            values[key] = await store.get(key)

        begun, cpu = time.perf_counter(), time.process_time()
        async with trio.open_nursery() as nursery:
            for key in keys:
                nursery.start_soon(get, key)
        elapsed, cpu = time.perf_counter() - begun, time.process_time() - cpu
        assert all(values.values())
        return {"seconds": elapsed, "cpu": cpu}
    async with mcpfsm.ClientGroup(config, lazy=True, store=mcpfsm.FileStore(directory / "store")) as group:
        begun, cpu = time.perf_counter(), time.process_time()
        tools = await group.tools()
        elapsed, cpu = time.perf_counter() - begun, time.process_time() - cpu
        assert set(group.status.values()) == {"idle"}, group.status
        assert started(directory, members) == before, "a lazy member started"
        assert len(tools) == 3 * members and all(tool.known_at is not None for tool in tools)
        if kind == "tools":
            return {"seconds": elapsed, "cpu": cpu}
        begun = time.perf_counter()
        await group.call_tool("m7_pid" if members > 7 else "m0_pid")
        first_call = time.perf_counter() - begun
        after = started(directory, members)
        return {"seconds": first_call, "started": sum(after) - sum(before), "connected": list(group.status.values())}


def fresh(kind: str, directory: Path, members: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(directory), str(members)],
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def lazy(members: int, processes: int) -> None:
    with tempfile.TemporaryDirectory(prefix="mcpfsm-bench-group-") as name:
        directory = Path(name)
        config = lazy_config(directory, members)

        async def fill() -> list[str]:
            async with mcpfsm.ClientGroup(config, store=mcpfsm.FileStore(directory / "store")) as group:
                assert set(group.status.values()) == {"connected"}, group.errors
                return (await group.tools()).names

        names = trio.run(fill)
        assert len(names) == 3 * members
        reads: list[dict[str, float]] = []
        listings: list[dict[str, float]] = []
        for number in range(processes):
            # Alternate which goes first: a busy machine's second half is not the first's twin.
            order = [("read", reads), ("tools", listings)]
            for kind, samples in order if number % 2 else reversed(order):
                samples.append(fresh(kind, directory, members))
        call = fresh("call", directory, members)
        assert call["started"] == 1 and call["connected"].count("connected") == 1, call
    read, listed = (statistics.median(sample["cpu"] for sample in samples) for samples in (reads, listings))
    wall_read, wall_listed = (statistics.median(each["seconds"] for each in samples) for samples in (reads, listings))
    print(
        f"lazy group of {members} stdio members with known listings in a FileStore, fresh processes (median of"
        f" {processes}): CPU of reading the {members} known listings from the store {read * 1000:.2f} ms,"
        f" of group.tools() {listed * 1000:.2f} ms: {listed / read:.2f}x (target <= 1.2x); wall time"
        f" {wall_read * 1000:.2f} ms and {wall_listed * 1000:.2f} ms ({wall_listed / wall_read:.2f}x); no process"
        f" started. The first call started exactly {call['started']} member in {call['seconds'] * 1000:.0f} ms"
    )


def tool_entries(count: int) -> list[dict[str, Any]]:
    # Tools in the shape servers list them: a verb and a noun, a title, a sentence, a few described parameters.
    random = Random(31)
    verbs = ["get", "list", "create", "update", "delete", "search", "sync", "export", "import", "run"]
    nouns = ["issue", "pull_request", "file", "repository", "user", "comment", "branch", "release", "workflow",
             "ticket", "invoice", "customer", "calendar_event", "message", "channel", "document", "table", "query"]
    words = ["the", "a", "given", "for", "with", "by", "in", "from", "all", "matching", "current", "project",
             "workspace", "team", "status", "label", "owner", "date", "range", "page", "limit", "filter"]
    entries = []
    for index in range(count):
        verb, noun = random.choice(verbs), random.choice(nouns)
        sentence = " ".join(random.choice(words) for _ in range(random.randint(8, 20)))
        properties = {
            f"{random.choice(words)}{random.choice(['Id', 'Name', 'Count', 'Text'])}": {
                "type": "string", "description": " ".join(random.choice(words) for _ in range(6))
            }
            for _ in range(random.randint(1, 4))
        }  # fmt: skip
        entries.append(
            {
                "name": f"s{index % 25}_{verb}_{noun}_{index}",
                "title": f"{verb.title()} {noun.replace('_', ' ')}",
                "description": f"{verb.title()} a {noun.replace('_', ' ')}: {sentence}.",
                "inputSchema": {"type": "object", "properties": properties},
            }
        )
    return entries


def search(count: int, queries: int) -> None:
    from mcpfsm._client.tools import NO_DEFINITIONS
    from mcpfsm._core.catalog import build_catalog

    async def never(tool: mcpfsm.Tool, arguments: Any) -> mcpfsm.ToolResult:
        raise AssertionError("not called")

    catalog = build_catalog(tool_entries(count), mirroring=False)
    listing = mcpfsm.ToolList([mcpfsm.Tool(each, NO_DEFINITIONS, never) for each in catalog.tools])
    random = Random(7)
    vocabulary = ["create issue", "list pull requests", "search customer", "delete file", "export invoice",
                  "sync calendar event", "release", "update ticket status", "message channel", "run workflow",
                  "document owner", "filter by date range", "branch", "user name", "query table"]  # fmt: skip
    chosen = [random.choice(vocabulary) for _ in range(queries)]
    begun = time.perf_counter()
    listing.search(chosen[0], limit=10)
    first = time.perf_counter() - begun
    samples = []
    for query in chosen:
        begun = time.perf_counter()
        listing.search(query, limit=10)
        samples.append(time.perf_counter() - begun)
    print(
        f"search over {count} tools ({queries} queries, limit 10): median {statistics.median(samples) * 1000:.3f} ms"
        f" per search with the index built (target < 1 ms); the first search, which builds the index,"
        f" {first * 1000:.1f} ms; context_bytes of the whole list {listing.context_bytes}"
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(trio.run(child, sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--start-delay", type=float, default=0.0)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--skip-calls", action="store_true")
    parser.add_argument("--lazy", type=int, default=25, help="members of the lazy group (part 3)")
    parser.add_argument("--processes", type=int, default=7, help="fresh processes of each kind (part 3)")
    parser.add_argument("--search", type=int, default=1000, help="tools searched (part 4)")
    parser.add_argument("--queries", type=int, default=200, help="queries (part 4)")
    parser.add_argument("--only", default="opening,calling,lazy,search", help="the parts to run, comma-separated")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    if "opening" in parts:
        slowest, group, total, cpu = trio.run(opening, args.members, args.start_delay)
        print(
            f"opening {args.members} stdio members (start delay {args.start_delay:g} s): slowest single start"
            f" {slowest * 1000:.0f} ms (one after another: {total * 1000:.0f} ms), the group {group * 1000:.0f} ms:"
            f" {group / slowest:.2f}x (target <= 1.5x); this process's CPU while the group opened"
            f" {cpu * 1000:.0f} ms"
        )
    if "calling" in parts and not args.skip_calls:
        through_group, direct = trio.run(calling, args.calls, args.rounds)
        print(
            f"tools/call CPU per call (median of {args.rounds} rounds of {args.calls}): member Client"
            f" {direct * 1e6:.1f} us, through the group {through_group * 1e6:.1f} us:"
            f" {through_group / direct:.3f}x (target <= 1.05x)"
        )
    if "lazy" in parts:
        lazy(args.lazy, args.processes)
    if "search" in parts:
        search(args.search, args.queries)


if __name__ == "__main__":
    main()
