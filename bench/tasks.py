"""Tasks (SEP-2663): client CPU per ``tasks/get`` against a plain ``tools/call``, and memory per pending task.

Run from the repository root:

    python bench/tasks.py [--tasks 1000] [--rounds 5] [--concurrency 100]

One local tasks server (``tooling.peer_tasks``, the official SDK's server with the tasks extension) and
one client (``Client.http(url, tasks=True)``) that starts ``--tasks`` tasks of ``forever`` (working until
cancelled) and keeps their handles. Each round then, interleaved:

- **call**: ``--tasks`` plain ``tools/call`` of ``quick`` (the server answers at once, no task), through the
  listed tool (the tool-call machine, header plan, session, checks, output validation);
- **poll**: one ``task.refresh()`` of every pending task: the client's polling path (``tasks/get`` with
  ``Mcp-Name: {taskId}``, the answer read as a task status, one step of the task machine, its event, the record
  kept in the store), without the wait between polls.

CPU is this process's ``time.process_time()`` (the server is another process) divided by the requests; the median
round is reported with the ratio poll / call. Memory per pending task is what ``tracemalloc`` counts as still
allocated after the tasks were started (handles, runs, machine state, the store's records), divided by their
number, measured once with tracing on (not during the CPU rounds). Targets (issue 21): poll <= 1.2x call CPU,
memory <= 4 KiB per pending task. The machine is shared: run several rounds.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcpfsm
from tests.support.peer.fixtures import start_http_peer


async def _fan_out(jobs: Sequence[Callable[[], Awaitable[Any]]], concurrency: int) -> None:
    # The jobs spread over `concurrency` workers, each running its share one after another.
    async def worker(share: Sequence[Callable[[], Awaitable[Any]]]) -> None:
        for job in share:
            await job()

    async with trio.open_nursery() as nursery:
        for index in range(concurrency):
            nursery.start_soon(worker, jobs[index::concurrency])


async def _start(client: mcpfsm.Client, count: int, concurrency: int) -> list[mcpfsm.Task]:
    handles: list[mcpfsm.Task] = []

    async def one() -> None:
        handles.append(await client.start_tool("forever", {"poll_ms": 60_000}))

    await _fan_out([one] * count, concurrency)
    assert all(task.id is not None and task.status == "working" for task in handles)
    return handles


async def _cpu(jobs: Sequence[Callable[[], Awaitable[Any]]], concurrency: int) -> float:
    started = time.process_time()
    await _fan_out(jobs, concurrency)
    return (time.process_time() - started) / len(jobs)


async def bench(url: str, count: int, rounds: int, concurrency: int) -> None:
    async with mcpfsm.Client.http(url, tasks=True) as client:
        quick = (await client.tools()).get("quick")
        assert quick is not None
        handles = await _start(client, count, concurrency)
        print(f"{count} tasks started; {rounds} rounds, concurrency {concurrency}")
        # Warm-up: the pool's connections, the first poll of each handle.
        await _cpu([lambda: quick.call({})] * count, concurrency)
        await _cpu([task.refresh for task in handles], concurrency)
        calls: list[float] = []
        polls: list[float] = []
        for _ in range(rounds):
            gc.collect()
            calls.append(await _cpu([lambda: quick.call({})] * count, concurrency))
            gc.collect()
            polls.append(await _cpu([task.refresh for task in handles], concurrency))
        assert all(task.status == "working" for task in handles)
        ratios = [poll / call for call, poll in zip(calls, polls, strict=True)]
        call_us, poll_us = statistics.median(calls) * 1e6, statistics.median(polls) * 1e6
        print(f"  tools/call  CPU {call_us:8.1f} us per call (median round)")
        print(f"  tasks/get   CPU {poll_us:8.1f} us per poll (median round)")
        print(f"  ratio poll/call: median {statistics.median(ratios):.2f}x (rounds: "
              + ", ".join(f"{each:.2f}" for each in ratios) + ")  target <= 1.2x")
        await _fan_out([task.cancel for task in handles], concurrency)

        # Memory: a fresh set of pending tasks, counted by tracemalloc from before the first is started.
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        more = await _start(client, count, concurrency)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        per_task = (after - before) / count
        print(f"  memory per pending task: {per_task / 1024:.2f} KiB ({count} tasks, tracemalloc)  target <= 4 KiB")
        await _fan_out([task.cancel for task in more], concurrency)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000, help="pending tasks (and calls per round)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=100)
    args = parser.parse_args()
    with start_http_peer("modern", module="tooling.peer_tasks") as server:
        trio.run(bench, server.url, args.tasks, args.rounds, args.concurrency)


if __name__ == "__main__":
    main()
