"""A fleet of fresh worker processes listing one server: ``tools/list`` requests and listing time, with and without
a shared store (docs/cache.md, "Shared listings").

Run from the repository root:  python bench/shared_listings.py [--workers W] [--page-size P] [--rounds R]

One local peer server (tests/support/peer) logs every request it receives; it gives ``tools/list`` a one-hour public
``ttlMs`` (SEP-2549) and pages its tools P per page. For each store (none: the baseline; a ``FileStore`` in a
temporary directory; a ``RedisStore`` on a ``redis-server`` this script starts on 127.0.0.1) it runs R rounds of
W worker processes (tests/support/listing_worker.py) released together, each with a fresh store, and reports:

- the ``tools/list`` requests the server received per round (baseline: W times the pages; shared: pages);
- the median time of one worker's ``client.tools()``, and its ratio to the baseline's in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.peer.fixtures import REPO_ROOT, HttpPeer, start_http_peer
from tests.support.redisserver import start_redis


def fleet(spec: str, url: str, workers: int, env: dict[str, str]) -> list[dict[str, object]]:
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.listing_worker", spec, url],
            cwd=REPO_ROOT,
            env={**os.environ, **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(workers)
    ]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline() == "READY\n"
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    outputs = [process.communicate(timeout=120)[0] for process in processes]
    assert all(process.returncode == 0 for process in processes)
    return [json.loads(output) for output in outputs]


def listed(peer: HttpPeer) -> int:
    return sum(1 for entry in peer.log() if entry["jsonrpc_method"] == "tools/list")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--page-size", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    with start_http_peer(mode="modern") as peer, start_redis() as redis, tempfile.TemporaryDirectory() as scratch:
        peer.control({"action": "cache_hints", "hints": {"tools/list": {"ttlMs": 3_600_000, "cacheScope": "public"}}})
        peer.control({"action": "paginate", "page_size": args.page_size})
        results: dict[str, tuple[list[int], list[float]]] = {}
        for kind in ("none", "file", "redis"):
            requests: list[int] = []
            seconds: list[float] = []
            for _ in range(args.rounds):
                fresh = uuid.uuid4().hex[:12]
                spec = {"none": "none", "file": f"file:{scratch}/{fresh}", "redis": f"redis:{redis.url}"}[kind]
                peer.clear_log()
                outputs = fleet(spec, peer.url, args.workers, {"MCPFSM_TEST_PREFIX": f"bench-{fresh}:"})
                requests.append(listed(peer))
                seconds.extend(float(str(out["seconds"])) for out in outputs)
            results[kind] = (requests, seconds)

    baseline = statistics.median(results["none"][1])
    print(f"{args.workers} workers, {args.rounds} rounds, tools on pages of {args.page_size}")
    for kind, (requests, seconds) in results.items():
        median = statistics.median(seconds)
        print(
            f"{kind:>5}: tools/list per round {requests}, median client.tools() {median * 1000:.1f} ms"
            f" ({median / baseline:.2f}x the no-store baseline)"
        )


if __name__ == "__main__":
    main()
