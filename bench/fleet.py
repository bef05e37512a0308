"""A fleet of worker processes on one login: refresh requests, and what the store's lock costs a call.

Run from the repository root:  python bench/fleet.py [--workers 16] [--store redis|file] [--lifetime 5]
                               python bench/fleet.py --handoff [--workers 16] [--rounds 20] [--store redis|file]

``--handoff`` measures the store's lock alone: W worker processes (this script with ``--handoff-worker``) take
one lock of one store in turn, ``--rounds`` times each: each holds it for a read and a write of one key, then
pauses ``--think`` ms (default 20, so that a worker that just released does not take the lock straight back
from the waiters) and asks again; with 16 workers most acquisitions find the lock taken and wait for its
release. For each acquisition that waited, the **hand-off** is the time from the previous holder starting its
release to this worker holding the lock (wall clock, every process on this machine); median, 90th percentile
and max in ms, and the median as a ratio to one store read (``get``) measured by the same workers in the same
run, since the machine's load moves both. It runs against whichever mcpfsm is on ``sys.path`` (the lock is
called as ``lock(key, ttl)``, which every version takes), so the same script measures before and after.

One test authorization server (tooling.authserver, in its own process) rotates refresh tokens and
revokes the whole grant when a rotated-away refresh token comes back (RFC 6749 §10.4, RFC 9700 §4.14.2); it
counts token requests itself. One real ``redis-server`` on 127.0.0.1 (tests/support/redisserver.py) backs a
``RedisStore`` (or, with ``--store file``, a ``FileStore`` in a temporary directory).

This process logs in once into the store and marks the stored access token expired. Then W worker processes
(this script with ``--worker``) start, say READY, and go together: each calls ``test-tool``, then every 50 ms
for ``lifetime * 1.3`` seconds more. Two expiries happen while they run, each for every worker at once:

1. the seeded token, expired when the workers start (each worker's first call gets a 401 and its flow
   refreshes under the store's lock, or finds a peer's new tokens there);
2. the token that refresh brought, ``lifetime`` seconds long, whose refresh falls due for every worker at the
   same instant (a tenth of the lifetime ahead), on the proactive path.

Figures:

- **refresh requests** the server received (expected: 1 per expiry, 2 in all), reuses and revoked grants (0);
- **calls** that succeeded, of all calls;
- **hot path**: calls that needed no refresh, how many took the store's lock or read the store, and the median
  time they spent in the store (expected 0: nothing is locked or read unless a refresh is due);
- **waiting on a peer**: for each lock taken by a worker that did not refresh (it found the peer's tokens),
  the time from the moment the lock was free for it (the previous holder's release, or its own request if
  later) to the moment it held it: the extra latency the lock adds; median and max, in ms, and the median as a
  ratio to one store read (``get``) measured in the same run (the machine's load moves both). And the time from
  the refreshing peer's release to the waiter holding the lock (queueing behind other waiters included).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mcpfsm  # noqa: E402
from mcpfsm._core.credentials import credential_holder, tokens_key  # noqa: E402

PACE = 0.05
"""Seconds between two calls of one worker."""


class TimedStore:
    """A store that records, in wall-clock seconds, every lock it takes and the time calls spend in it."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.spent = 0.0
        self.operations = 0
        self.locks: list[dict[str, Any]] = []
        self.reads: list[float] = []
        self._holding: dict[str, Any] | None = None

    async def _timed(self, operation: Any) -> Any:
        start = time.perf_counter()
        try:
            return await operation
        finally:
            self.spent += time.perf_counter() - start
            self.operations += 1

    async def get(self, key: str) -> dict[str, Any] | None:
        start = time.perf_counter()
        result: dict[str, Any] | None = await self._timed(self.store.get(key))
        self.reads.append(time.perf_counter() - start)
        return result

    async def set(self, key: str, value: Mapping[str, Any]) -> None:
        if self._holding is not None and key.startswith("tokens "):
            self._holding["refreshed"] = True
        await self._timed(self.store.set(key, value))

    async def delete(self, key: str) -> None:
        await self._timed(self.store.delete(key))

    async def compare_and_delete(self, key: str, expected: Mapping[str, Any]) -> bool:
        deleted: bool = await self._timed(self.store.compare_and_delete(key, expected))
        return deleted

    @contextlib.asynccontextmanager
    async def lock(self, key: str, ttl: float, *, wait: float | None = None) -> AsyncIterator[None]:
        record: dict[str, Any] = {"requested": time.time(), "refreshed": False}
        start = time.perf_counter()
        self.operations += 1
        # `wait` only when the client passes one: so this script measures versions before it too.
        async with self.store.lock(key, ttl, **({} if wait is None else {"wait": wait})):
            self.spent += time.perf_counter() - start
            record["acquired"] = time.time()
            self._holding = record
            try:
                yield
            finally:
                self._holding = None
                record["released"] = time.time()
                self.locks.append(record)


async def refuse(url: str) -> str:
    raise RuntimeError("a worker may not log in")


async def worker(spec: str, mcp_url: str, duration: float) -> None:
    from tests.support.store_worker import opened

    async with opened(spec) as raw:
        store = TimedStore(raw)
        print("READY", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
        auth = mcpfsm.OAuth(redirect_uri="http://127.0.0.1:27418/callback", authorize=refuse, store=store)
        calls: list[dict[str, Any]] = []
        errors: list[str] = []
        async with mcpfsm.Client.http(mcp_url, auth=auth, protocol="2026-07-28") as client:
            deadline: float | None = None
            while deadline is None or time.monotonic() < deadline:
                spent, operations, locks = store.spent, store.operations, len(store.locks)
                start = time.perf_counter()
                try:
                    await client.call_tool("test-tool", {})
                except mcpfsm.McpError as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")
                calls.append(
                    {
                        "seconds": time.perf_counter() - start,
                        "store_seconds": store.spent - spent,
                        "store_operations": store.operations - operations,
                        "locked": len(store.locks) > locks,
                    }
                )
                if deadline is None:
                    # The first call met the first expiry; the token it ended with (a peer's refresh, or this
                    # worker's) falls due within 0.9 lifetimes from now, for every worker at the same instant.
                    deadline = time.monotonic() + duration
                await trio.sleep(PACE)
        document = {"calls": calls, "errors": errors, "locks": store.locks, "reads": store.reads}
        print(json.dumps(document), flush=True)


async def log_in_and_expire(spec: str, mcp_url: str, base: str) -> None:
    from tests.conformance.adapter import headless_authorize
    from tests.support.store_worker import opened

    async with opened(spec) as store:
        auth = mcpfsm.OAuth(redirect_uri="http://localhost:3000/callback", authorize=headless_authorize, store=store)
        async with mcpfsm.Client.http(mcp_url, auth=auth, protocol="2026-07-28") as client:
            await client.call_tool("test-tool", {})
        key = tokens_key(base, mcp_url, credential_holder(auth))
        record = await store.get(key)
        assert record is not None
        now = time.time()
        await store.set(key, {**record, "issued_at": now - 3601, "expires_at": now - 1})


def run_fleet(spec: str, mcp_url: str, workers: int, duration: float) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, __file__, "--worker", spec, mcp_url, str(duration)]
    processes = [
        subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(workers)
    ]
    try:
        for process in processes:
            assert process.stdout is not None and process.stdout.readline() == "READY\n"
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        results = []
        for process in processes:
            out, _ = process.communicate(timeout=duration + 120)
            if process.returncode != 0:
                raise SystemExit(f"a worker failed:\n{out}")
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def waits(results: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """Per lock taken by a non-refreshing worker: (held - free for it, held - the refresher's release), in ms."""
    locks = sorted((lock for result in results for lock in result["locks"]), key=lambda lock: lock["acquired"])
    handoff: list[float] = []
    behind_refresh: list[float] = []
    previous_release: float | None = None
    refresher_release: float | None = None
    for lock in locks:
        if lock["refreshed"]:
            refresher_release = lock["released"]
        else:
            free = lock["requested"] if previous_release is None else max(lock["requested"], previous_release)
            handoff.append((lock["acquired"] - free) * 1000)
            if refresher_release is not None:
                behind_refresh.append((lock["acquired"] - refresher_release) * 1000)
        previous_release = lock["released"]
    return handoff, behind_refresh


async def handoff_worker(spec: str, rounds: int, think: float) -> None:
    from tests.support.store_worker import opened

    async with opened(spec) as store:
        reads = []
        for _ in range(5):
            start = time.perf_counter()
            await store.get("handoff read")
            reads.append(time.perf_counter() - start)
        print("READY", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
        held: list[list[float]] = []
        for _ in range(rounds):
            requested = time.time()
            async with store.lock("handoff", 30):
                acquired = time.time()
                value = await store.get("handoff value") or {"n": 0}
                await store.set("handoff value", {"n": value["n"] + 1})
                released = time.time()
            held.append([requested, acquired, released])
            await trio.sleep(think)
        print(json.dumps({"held": held, "reads": reads}), flush=True)


def handoffs(results: list[dict[str, Any]]) -> list[float]:
    """For each acquisition that found the lock taken: ms from the holder's release to this one holding it."""
    taken = sorted((each for result in results for each in result["held"]), key=lambda each: each[1])
    waits: list[float] = []
    for previous, current in itertools.pairwise(taken):
        if current[0] < previous[2]:  # it asked before the previous holder let go: it waited for the release
            waits.append((current[1] - previous[2]) * 1000)
    return waits


def run_handoff(workers: int, rounds: int, store: str, think_ms: float) -> None:
    with contextlib.ExitStack() as stack:
        if store == "redis":
            from tests.support.redisserver import start_redis

            spec = f"redis:{stack.enter_context(start_redis()).url}"
            os.environ["MCPFSM_TEST_PREFIX"] = f"mcpfsm-bench-{uuid.uuid4().hex[:8]}:"
        else:
            spec = f"file:{stack.enter_context(tempfile.TemporaryDirectory())}/store"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        argv = [sys.executable, __file__, "--handoff-worker", spec, str(rounds), str(think_ms / 1000)]
        processes = [
            subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for _ in range(workers)
        ]
        try:
            for process in processes:
                assert process.stdout is not None and process.stdout.readline() == "READY\n"
            for process in processes:
                assert process.stdin is not None
                process.stdin.write("go\n")
                process.stdin.flush()
            results = []
            for process in processes:
                out, _ = process.communicate(timeout=600)
                if process.returncode != 0:
                    raise SystemExit(f"a worker failed:\n{out}")
                results.append(json.loads(out.strip().splitlines()[-1]))
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                    process.wait()
    waits = sorted(handoffs(results))
    read_ms = statistics.median(read * 1000 for result in results for read in result["reads"])
    total = sum(len(result["held"]) for result in results)
    assert total == workers * rounds
    median = statistics.median(waits)
    p90 = waits[int(len(waits) * 0.9)]
    print(
        f"lock hand-off: {workers} worker processes x {rounds} rounds on one {store} lock, {think_ms:g} ms apart;"
        f" load {os.getloadavg()[0]:.1f}; mcpfsm from {Path(mcpfsm.__file__).parent}"
    )
    print(
        f"  {len(waits)} of {total} acquisitions waited for a release: hand-off median {median:.2f} ms,"
        f" p90 {p90:.2f} ms, max {waits[-1]:.2f} ms; {median / read_ms:.1f}x one store read (median {read_ms:.2f} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--store", choices=["redis", "file"], default="redis")
    parser.add_argument("--lifetime", type=int, default=5, help="seconds an access token lives (expires_in)")
    parser.add_argument("--handoff", action="store_true", help="measure the lock's hand-off alone")
    parser.add_argument("--rounds", type=int, default=20, help="locks each worker takes (--handoff)")
    parser.add_argument("--think", type=float, default=20.0, help="ms a worker pauses between locks (--handoff)")
    parser.add_argument("--worker", nargs=3, metavar=("STORE", "URL", "SECONDS"), help=argparse.SUPPRESS)
    parser.add_argument("--handoff-worker", nargs=3, metavar=("STORE", "ROUNDS", "THINK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        spec, url, seconds = args.worker
        trio.run(worker, spec, url, float(seconds))
        return
    if args.handoff_worker is not None:
        spec, rounds, think = args.handoff_worker
        trio.run(handoff_worker, spec, int(rounds), float(think))
        return
    if args.handoff:
        run_handoff(args.workers, args.rounds, args.store, args.think)
        return

    from tests.support.redisserver import start_redis
    from tooling.processes import run_authserver

    duration = args.lifetime * 1.3
    scenario = {"refresh_tokens": True, "revoke_on_reuse": True, "expires_in": args.lifetime}
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(run_authserver(scenario))
        if args.store == "redis":
            redis = stack.enter_context(start_redis())
            spec = f"redis:{redis.url}"
            os.environ["MCPFSM_TEST_PREFIX"] = f"mcpfsm-bench-{uuid.uuid4().hex[:8]}:"
        else:
            spec = f"file:{stack.enter_context(tempfile.TemporaryDirectory())}/store"
        trio.run(log_in_and_expire, spec, server.mcp_url, server.base_url)
        results = run_fleet(spec, server.mcp_url, args.workers, duration)
        stats = server.stats()

    calls = [call for result in results for call in result["calls"]]
    errors = [error for result in results for error in result["errors"]]
    hot = [call for call in calls if not call["locked"] and call["store_operations"] == 0]
    touched = [call for call in calls if not call["locked"] and call["store_operations"] > 0]
    handoff, behind = waits(results)
    refreshes = stats["token_requests"].get("refresh_token", 0)
    load = os.getloadavg()[0]
    print(f"fleet: {args.workers} worker processes, {args.store} store, tokens of {args.lifetime} s; load {load:.1f}")
    print(f"refresh requests at the server: {refreshes} for 2 expiries shared by every worker")
    print(f"refresh token reuses: {stats['refresh_reuses']}, grants revoked: {stats['revoked_grants']}")
    print(f"calls: {len(calls) - len(errors)} of {len(calls)} succeeded")
    for error in sorted(set(errors))[:5]:
        print(f"  error: {error}")
    locked = [call for call in calls if call["locked"]]
    hot_ms = statistics.median(call["store_seconds"] * 1000 for call in hot) if hot else float("nan")
    print(
        f"hot path: {len(hot)} calls took no lock and read no store (median time in the store {hot_ms:.3f} ms);"
        f" {len(touched)} read it without the lock (a refresh due, found done by a peer); {len(locked)} took the lock"
    )
    reads = [read * 1000 for result in results for read in result["reads"]]
    read_ms = statistics.median(reads) if reads else float("nan")
    if handoff:
        median = statistics.median(handoff)
        print(
            f"waiting on a peer's refresh: {len(handoff)} locks taken by workers that found the peer's tokens;"
            f" lock handoff median {median:.2f} ms ({median / read_ms:.1f}x one store read in this run,"
            f" median {read_ms:.2f} ms), max {max(handoff):.2f} ms"
        )
    if behind:
        print(
            f"  from the refresher's release to the waiter holding the lock (queue included): median"
            f" {statistics.median(behind):.2f} ms, max {max(behind):.2f} ms"
        )


if __name__ == "__main__":
    main()
