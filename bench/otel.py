"""What telemetry costs a tool call: client CPU per call with OpenTelemetry absent, present without a provider,
with an SDK provider, and with the JSON Lines audit sink.

Run from the repository root:  python bench/otel.py [--calls N] [--rounds R] [--concurrency C] [--baseline DIR]

One local peer server (the official SDK's MCPServer, tests/support/peer, modern era) serves one client process per
mode, started once and warmed up; each round asks every process in turn (in a shuffled order) for ``--calls``
calls (the same ``execute-sql`` call through a listed ``Tool`` as bench/call.py) and reads back its CPU time
(``time.process_time()``, all of that process's threads, so a span processor's work counts) per call. Each
mode is printed with its median and its fastest round, and its ratio to ``absent``: the median of the
per-round ratios ("paired", the figure to quote: a load change between rounds cancels out), the ratio of the
medians, and the ratio of the fastest rounds. On a busy machine prefer many short rounds (``--calls 200
--rounds 60``).

- ``absent``: the ``otel`` extra not installed (``opentelemetry`` unimportable in that process);
- ``no-provider``: ``opentelemetry.trace`` and ``opentelemetry.metrics`` imported, no provider configured;
- ``sdk``: an SDK ``TracerProvider`` (``SimpleSpanProcessor`` into an in-memory exporter, cleared each round)
  and an SDK ``MeterProvider`` (an in-memory reader): spans, span events, ``_meta`` injection, the histogram;
- ``events``: no OpenTelemetry, ``on_event`` a function that does nothing (what building the events costs);
- ``audit-log``: no OpenTelemetry, ``on_event=mcpfsm.AuditLog(file)`` (events built and written per state).

With ``--baseline DIR`` (a checkout of another commit, e.g. the one before telemetry) a ``baseline`` process
imports mcpfsm from ``DIR`` (no OpenTelemetry, no ``on_event``): what the telemetry hooks cost when off.
The first two modes, and ``baseline``, should not differ beyond noise: without a provider nothing is built per
call.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODES = ("absent", "no-provider", "sdk", "events", "audit-log")
ARGS = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}


def child(mode: str, url: str, concurrency: int, root: Path) -> None:
    """One client process: warm up, then answer each ``RUN N`` line on stdin with the CPU µs per call."""
    exporter: Any = None
    if mode in ("absent", "events", "audit-log", "baseline"):
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]
    elif mode == "no-provider":
        import opentelemetry.metrics
        import opentelemetry.trace  # noqa: F401
    else:
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))

    import trio

    sys.path.insert(0, str(root))
    import mcpfsm

    assert Path(mcpfsm.__file__).resolve().is_relative_to(root.resolve()), mcpfsm.__file__

    async def main() -> None:
        with tempfile.TemporaryDirectory() as directory:
            audit = mcpfsm.AuditLog(Path(directory) / "audit.jsonl") if mode == "audit-log" else None
            on_event = audit if audit is not None else (lambda event: None) if mode == "events" else None
            async with mcpfsm.Client.http(url, on_event=on_event) as client:
                assert getattr(client, "_telemetry", None) is not None if mode == "sdk" else True, mode
                tool = (await client.tools()).get("execute-sql")
                assert tool is not None

                async def calls(n: int) -> None:
                    for _ in range(n):
                        result = await tool.call(ARGS)
                        assert not result.is_error

                async def run(n: int) -> None:
                    if concurrency == 1:
                        await calls(n)
                        return
                    async with trio.open_nursery() as nursery:
                        for _ in range(concurrency):
                            nursery.start_soon(calls, n // concurrency)

                await run(max(concurrency, 200))  # warm up
                print("READY", flush=True)
                while line := await trio.to_thread.run_sync(sys.stdin.readline):
                    n = int(line.split()[1])
                    if exporter is not None:
                        exporter.clear()
                    started = time.process_time()
                    await run(n)
                    print(f"{(time.process_time() - started) / n * 1e6:.2f}", flush=True)
            if audit is not None:
                audit.close()

    trio.run(main)


def main(calls: int, rounds: int, concurrency: int, baseline: Path | None) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.support.peer.fixtures import start_http_peer

    modes = {mode: ROOT for mode in MODES}
    if baseline is not None:
        modes["baseline"] = baseline
    with start_http_peer(mode="modern") as peer:
        options = ["--url", peer.url, "--concurrency", str(concurrency)]
        processes = {
            mode: subprocess.Popen(
                [sys.executable, __file__, "--child", mode, "--root", str(root), *options],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=ROOT,
            )
            for mode, root in modes.items()
        }
        try:
            for mode, process in processes.items():
                assert process.stdout is not None
                ready = process.stdout.readline()
                if ready != "READY\n":
                    raise SystemExit(f"{mode}: the client process did not start ({ready!r})")
            cpu: dict[str, list[float]] = {mode: [] for mode in modes}
            order = list(processes)
            for number in range(rounds):
                # Each round in another order: a load change on the machine hits every mode alike.
                random.Random(number).shuffle(order)
                for mode in order:
                    process = processes[mode]
                    assert process.stdin is not None and process.stdout is not None
                    process.stdin.write(f"RUN {calls}\n")
                    process.stdin.flush()
                    cpu[mode].append(float(process.stdout.readline()))
        finally:
            for process in processes.values():
                process.communicate(timeout=60)
    label = "sequential" if concurrency == 1 else f"{concurrency} concurrent"
    print(f"{label}: {calls} calls x {rounds} rounds, client CPU per call (median, min), and / absent")
    median = {mode: statistics.median(values) for mode, values in cpu.items()}
    for mode in modes:
        # Paired: this mode over `absent` in the same round, so a load change between rounds cancels out.
        paired = statistics.median(value / base for value, base in zip(cpu[mode], cpu["absent"], strict=True))
        print(
            f"  {mode:12s} median {median[mode]:7.1f} us  min {min(cpu[mode]):7.1f} us"
            f"   / absent: paired {paired:.3f}  median {median[mode] / median['absent']:.3f}"
            f"  min {min(cpu[mode]) / min(cpu['absent']):.3f}"
        )
    print(json.dumps({"calls": calls, "rounds": rounds, "concurrency": concurrency, "cpu_us": cpu}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--baseline", type=Path, help="also measure mcpfsm imported from this checkout")
    parser.add_argument("--child", choices=(*MODES, "baseline"), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child is not None:
        child(options.child, options.url, options.concurrency, options.root)
    else:
        main(options.calls, options.rounds, options.concurrency, options.baseline)
