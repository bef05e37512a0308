"""Client groups: opening many stdio members at once, and what a call through the group adds.

Run from the repository root:

    python bench/group.py [--members 10] [--start-delay 0] [--calls 500] [--rounds 15] [--skip-calls]

1. **Opening.** Each of ``--members`` stdio servers (``python -I -S tests/stdio_lingering.py``, a real subprocess
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
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mcpfsm  # noqa: E402


def member(delay: float) -> dict[str, Any]:
    # -I -S: no site, no user paths; the cheapest start a Python MCP server can have (the server needs neither).
    args = ["-I", "-S", str(ROOT / "tests" / "stdio_lingering.py")]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--start-delay", type=float, default=0.0)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--skip-calls", action="store_true")
    args = parser.parse_args()
    slowest, group, total, cpu = trio.run(opening, args.members, args.start_delay)
    print(
        f"opening {args.members} stdio members (start delay {args.start_delay:g} s): slowest single start"
        f" {slowest * 1000:.0f} ms (one after another: {total * 1000:.0f} ms), the group {group * 1000:.0f} ms:"
        f" {group / slowest:.2f}x (target <= 1.5x); this process's CPU while the group opened {cpu * 1000:.0f} ms"
    )
    if args.skip_calls:
        return
    through_group, direct = trio.run(calling, args.calls, args.rounds)
    print(
        f"tools/call CPU per call (median of {args.rounds} rounds of {args.calls}): member Client"
        f" {direct * 1e6:.1f} us, through the group {through_group * 1e6:.1f} us:"
        f" {through_group / direct:.3f}x (target <= 1.05x)"
    )


if __name__ == "__main__":
    main()
