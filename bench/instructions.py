"""Instructions per tools/call for each client of bench/call.py against a server in another process, by callgrind.

Run from the repository root (needs valgrind):

    python bench/instructions.py [--small 200] [--large 1200] [--only raw,h11,mcpfsm]

Each client runs twice under ``valgrind --tool=callgrind`` (``bench/call.py --only NAME --rounds 1
--concurrency 1 --no-warmup``), once with ``--small`` and once with ``--large`` sequential calls. The
difference of the two instruction totals divided by the difference of the call counts is the client's
instructions per call: interpreter start-up, imports and the first connection cancel out. The peer server
is a child process, which callgrind does not follow. Ratios are against raw.

What a user gets, and so it moves with the machine's load by a few per cent: whether an answer is already there
when the client reads, or arrives in two pieces, changes the receives and scheduler passes of a call. Its sibling
``bench/repeatable.py`` counts the same calls against an in-process peer answering in lock step: the same count
on a busy machine, which ``.ci/run`` holds to a committed figure.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def instructions(name: str, calls: int) -> int:
    with tempfile.TemporaryDirectory() as directory:
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={directory}/callgrind.out.%p",
            sys.executable,
            str(ROOT / "bench" / "call.py"),
            "--only",
            name,
            "--calls",
            str(calls),
            "--rounds",
            "1",
            "--concurrency",
            "1",
            "--no-warmup",
        ]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    found = re.findall(r"Collected : (\d+)", done.stderr)
    if len(found) != 1:
        raise SystemExit(f"no single callgrind total for {name}:\n{done.stderr[-2000:]}")
    return int(found[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--large", type=int, default=1200)
    parser.add_argument("--only", default="raw,h11,mcpfsm")
    options = parser.parse_args()
    per_call: dict[str, float] = {}
    for name in options.only.split(","):
        small, large = instructions(name, options.small), instructions(name, options.large)
        per_call[name] = (large - small) / (options.large - options.small)
        print(f"  {name:7s} {per_call[name]:12,.0f} instructions per call", flush=True)
    if "raw" in per_call:
        for name, count in per_call.items():
            if name != "raw":
                print(f"  {name} / raw = {count / per_call['raw']:.2f}")


if __name__ == "__main__":
    main()
