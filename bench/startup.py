"""Start-up cost: ``import mcpfsm`` against ``import trio``, and ``mcpfsm --help``, in fresh interpreters.

Run from the repository root:  python bench/startup.py [--runs N] [--instructions]

Each run starts fresh interpreters, alternating: ``python -X importtime -c "import trio"``, the same for
``import mcpfsm`` (whose figure includes trio, which it imports), and ``python -m mcpfsm --help`` (the
``mcpfsm`` command's code; wall time of the whole process, interpreter start included). Bytecode caches are
written and used (a first run writes them), as after ``pip install``, whatever ``PYTHONDONTWRITEBYTECODE``
says. The import figures are the cumulative microseconds
``-X importtime`` reports for the top-level module; medians over the runs. Target (issue 13): ``import
mcpfsm`` at most 1.3x ``import trio``, ``mcpfsm --help`` under half a second. Also printed: the modules a
fresh ``import mcpfsm`` loads that it should not need (httpx, PyJWT, cryptography, jsonschema-rs, loguru,
OpenTelemetry), and the ten slowest imports of the median mcpfsm run.

Times move with the machine's load; ``--instructions`` (needs valgrind) counts instead the instructions
``python -c "import trio"``, ``python -c "import mcpfsm"`` and ``python -c pass`` execute under callgrind,
with ``PYTHONHASHSEED=0``: the same count on every run, busy machine or not. The ratio is of the imports
alone (the interpreter's start, ``pass``, subtracted from both).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AVOIDED = ("httpx", "jwt", "cryptography", "jsonschema_rs", "loguru", "opentelemetry")
_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


# Bytecode caches written and used, as after `pip install` (an environment may set PYTHONDONTWRITEBYTECODE).
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def importtime(module: str) -> tuple[int, list[tuple[int, str]]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [(int(m[1]), int(m[2]), len(m[3]), m[4]) for m in map(_LINE.match, done.stderr.splitlines()) if m]
    total = next(cumulative for _, cumulative, depth, name in rows if name == module and depth == 1)
    return total, sorted(((cumulative, name) for _, cumulative, _, name in rows), reverse=True)


def help_seconds() -> float:
    # `python -m mcpfsm --help`: the console script's code, with this checkout's mcpfsm whatever is installed.
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mcpfsm", "--help"], cwd=ROOT, env=ENV, capture_output=True, check=True)
    return time.perf_counter() - start


def instructions(code: str) -> int:
    # Instructions `python -c CODE` executes under callgrind (bytecode caches written by a first run).
    env = {**ENV, "PYTHONHASHSEED": "0"}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)
    with tempfile.TemporaryDirectory() as directory:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={directory}/out.%p", sys.executable, "-c", code],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    found = re.findall(r"Collected : (\d+)", done.stderr)
    if len(found) != 1:
        raise SystemExit(f"no single callgrind total for {code!r}:\n{done.stderr[-2000:]}")
    return int(found[0])


def count_instructions() -> None:
    base = instructions("pass")
    trio = instructions("import trio") - base
    mcpfsm = instructions("import mcpfsm") - base
    print("instructions under callgrind (PYTHONHASHSEED=0), the interpreter's start subtracted:")
    print(f"  import trio     {trio / 1e6:8.1f} M")
    print(f"  import mcpfsm   {mcpfsm / 1e6:8.1f} M   = {mcpfsm / trio:.2f} x import trio")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--instructions", action="store_true", help="count instructions under callgrind instead")
    options = parser.parse_args()
    if options.instructions:
        count_instructions()
        return
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    trio_us: list[int] = []
    mcpfsm_runs: list[tuple[int, list[tuple[int, str]]]] = []
    help_s: list[float] = []
    help_seconds()  # writes the bytecode caches of everything --help imports
    for _ in range(options.runs):
        trio_us.append(importtime("trio")[0])
        mcpfsm_runs.append(importtime("mcpfsm"))
        help_s.append(help_seconds())
    mcpfsm_us = [total for total, _ in mcpfsm_runs]
    med_trio, med_mcpfsm = statistics.median(trio_us), statistics.median(mcpfsm_us)
    print(f"{options.runs} runs each, medians (-X importtime, cumulative):")
    print(f"  import trio     {med_trio / 1000:7.1f} ms")
    print(f"  import mcpfsm   {med_mcpfsm / 1000:7.1f} ms   = {med_mcpfsm / med_trio:.2f} x import trio")
    help_ms = statistics.median(help_s) * 1000
    print(f"  mcpfsm --help   {help_ms:7.1f} ms wall (python -m mcpfsm --help, the whole process)")
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, mcpfsm; print(' '.join(sorted(sys.modules)))"],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    avoided = sorted({name.split(".")[0] for name in loaded if name.split(".")[0] in AVOIDED})
    print(f"  loaded by import mcpfsm, of {', '.join(AVOIDED)}: {', '.join(avoided) or 'none'}")
    median_run = sorted(mcpfsm_runs)[len(mcpfsm_runs) // 2][1]
    print("  slowest imports of the median mcpfsm run (cumulative):")
    for cumulative, name in median_run[:10]:
        print(f"    {cumulative / 1000:7.1f} ms  {name}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
