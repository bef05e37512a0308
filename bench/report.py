"""The trail viewer at scale, and what chaining the audit log costs per line.

Run from the repository root:  python bench/report.py [--calls N] [--repeat R] [--lines L]

1. A synthetic trail of N tool calls (default 10,000; a mix of the recorded paths: success, the -32020
   recovery, one and two input rounds, a plan unchanged, an error, a cancellation), half of them naming one of
   two servers, is written as JSON Lines; ``mcpfsm trace TRAIL --html REPORT`` turns it into a report (the
   time of the whole command is printed), and its size is printed (target: under 20 MB).
2. Headless Chromium (/usr/bin/chromium through /usr/bin/chromedriver) opens the report R times (default 5):
   the time from ``driver.get`` until the page says it is ready (``<body data-ready="1">``: data parsed, index
   drawn, first call selected and its path lit), read through the driver, and the page's own
   ``loadEventEnd``; then the time to jump to the last call (``#call=ID``) until its path is lit (target:
   ≤ 2 s until rendered and interactive).
3. ``AuditLog`` writes R x L events (default 5 x 20,000) of each kind, plain, chained (SHA-256) and chained
   with a key (HMAC-SHA-256), in batches of 1,000 taking turns; the best batch's CPU time (user and system) per
   line of each and the ratios to plain (target: chained at most 1.1 times plain).

Measured on the 2-core x86-64 development VM (shared with other work), CPython 3.11, Chromium 156: see
docs/trail-viewer.md, "How big, how fast", for the figures and the command.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcpfsm import AuditLog, CallEvent

ROOT = Path(__file__).resolve().parent.parent
AT = "2026-12-01T10:00:00.000000+00:00"
PATHS: list[list[tuple[str, str | None]]] = [
    [("resolving", None), ("planning", "resolved"), ("sending", "planned"), ("succeeded", "answered")],
    [("resolving", None), ("planning", "resolved"), ("sending", "planned"), ("relisting", "mismatched"),
     ("comparing", "relisted"), ("retrying", "changed"), ("succeeded", "answered")],
    [("resolving", None), ("planning", "resolved"), ("sending", "planned"), ("awaiting_input", "input_required"),
     ("resending", "gathered"), ("succeeded", "answered")],
    [("resolving", None), ("planning", "resolved"), ("sending", "planned"), ("awaiting_input", "input_required"),
     ("resending", "gathered"), ("awaiting_input", "input_required"), ("resending", "gathered"),
     ("succeeded", "answered")],
    [("resolving", None), ("planning", "resolved"), ("sending", "planned"), ("relisting", "mismatched"),
     ("comparing", "relisted"), ("failed", "unchanged")],
    [("resolving", None), ("planning", "resolved"), ("sending", "planned"), ("failed", "errored")],
    [("resolving", None), ("planning", "resolved"), ("sending", "planned"), ("cancelled", "cancelled")],
]
# Most calls succeed at once; the rest spread over the other paths.
WEIGHTS = [70, 6, 8, 4, 4, 6, 2]
HEADERS = {
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "execute-sql",
    "Mcp-Param-Database": "analytics",
}
ERROR = {"type": "RpcError", "code": -32001, "message": "the database is read-only"}


def events_of(number: int) -> list[dict[str, Any]]:
    path = PATHS[next(index for index, bound in enumerate(_bounds()) if number % 100 < bound)]
    tool = ("execute-sql", "search", "fetch", "render")[number % 4]
    events = []
    previous = None
    round_ = 0
    for seq, (state, trigger) in enumerate(path):
        round_ += state == "awaiting_input"
        event = CallEvent(
            call_id=f"b{number:07d}", seq=seq, tool=tool, state=state, previous=previous, trigger=trigger,
            attempt=2 if state == "retrying" or (previous == "retrying") else 1, at=AT, elapsed=seq * 0.0013,
            headers=None if seq < 2 else HEADERS, error=ERROR if state == "failed" else None, round=round_,
            input_requests={"name": "elicitation/create"} if state == "awaiting_input" else None,
        ).to_dict()
        if number % 2:
            event["server"] = ("alpha", "beta")[number // 2 % 2]
        events.append(event)
        previous = state
    return events


def _bounds() -> list[int]:
    total = 0
    bounds = []
    for weight in WEIGHTS:
        total += weight
        bounds.append(total)
    return bounds


def write_trail(path: Path, calls: int) -> int:
    import json

    count = 0
    with path.open("w", encoding="utf-8") as file:
        for number in range(calls):
            for event in events_of(number):
                file.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
                count += 1
    return count


def browser_figures(report: Path, repeat: int) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)
    try:
        ready: list[float] = []
        loaded: list[float] = []
        parsed: list[float] = []
        script: list[float] = []
        clicks: list[float] = []
        for _ in range(repeat):
            driver.get("about:blank")
            start = time.perf_counter()
            driver.get(report.as_uri())
            WebDriverWait(driver, 60, poll_frequency=0.01).until(
                lambda d: d.execute_script("return document.body.dataset.ready === '1'")
            )
            ready.append(time.perf_counter() - start)
            loaded.append(driver.execute_script(
                "return performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000)
            parsed.append(driver.execute_script(
                "return performance.getEntriesByType('navigation')[0].domInteractive") / 1000)
            script.append(float(driver.execute_script("return document.body.dataset.scriptMs")) / 1000)
            rows = driver.find_elements(By.CSS_SELECTOR, "#rows tr[data-run]")
            wanted = driver.execute_script("const data = JSON.parse(document.getElementById('trail').textContent);"
                                           "return data.runs[data.runs.length - 1].id")
            start = time.perf_counter()
            driver.execute_script("location.hash = arguments[0]", f"#call={wanted}")
            WebDriverWait(driver, 60, poll_frequency=0.01).until(
                lambda d, call=wanted: d.execute_script("return document.getElementById('run').dataset.call") == call
            )
            clicks.append(time.perf_counter() - start)
        print(f"  index rows in the DOM: {len(rows)} (drawn as they scroll into view)")
        print(f"  open -> ready (driver): median {statistics.median(ready):.2f} s, best {min(ready):.2f} s "
              f"(runs: {', '.join(f'{value:.2f}' for value in ready)})")
        print(f"  loadEventEnd (page):    median {statistics.median(loaded):.2f} s, best {min(loaded):.2f} s")
        print(f"    page parsed and its script run (domInteractive): median {statistics.median(parsed):.2f} s; "
              f"the script alone (JSON.parse, index, first path): median {statistics.median(script):.2f} s")
        print(f"  jump to the last call -> its path lit: median {statistics.median(clicks) * 1000:.0f} ms")
    finally:
        driver.quit()


def write_cost(folder: Path, lines: int, repeat: int) -> None:
    events = [CallEvent.from_dict(event) for number in range(64) for event in events_of(number)]
    kinds: dict[str, dict[str, Any]] = {
        "plain": {},
        "chained": {"chain": True},
        "chained+key": {"chain": True, "key": b"k" * 32},
    }
    logs = {name: AuditLog(folder / f"cost-{name}.jsonl", **options) for name, options in kinds.items()}
    best: dict[str, float] = {}
    batch = 1000
    try:
        # Short batches, the three kinds in turn, many rounds: the best batch of each is the one least disturbed by
        # the other work on the machine.
        for _ in range(repeat * max(1, lines // batch)):
            for name, log in logs.items():
                start = time.process_time()  # CPU time, user and system: what the process itself spent
                for index in range(batch):
                    log(events[index % len(events)])
                took = (time.process_time() - start) / batch
                best[name] = min(best.get(name, took), took)
    finally:
        for log in logs.values():
            log.close()
    for name, took in best.items():
        print(f"  {name:<12} {took * 1e6:6.2f} µs per line  ({took / best['plain']:.3f}x plain)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--lines", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        trail = folder / "trail.jsonl"
        count = write_trail(trail, args.calls)
        print(f"trail: {args.calls} calls, {count} events, {trail.stat().st_size / 1e6:.1f} MB of JSON Lines")
        report = folder / "report.html"
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "mcpfsm", "trace", str(trail), "--html", str(report)],
            check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
        )
        print(f"report: {report.stat().st_size / 1e6:.2f} MB, written in {time.perf_counter() - start:.2f} s "
              f"(mcpfsm trace --html, the whole command)")
        print("chromium:")
        browser_figures(report, args.repeat)
        print(f"audit log, {args.repeat} x {args.lines} lines of each kind in batches of 1,000, the best batch:")
        write_cost(folder, args.lines, args.repeat)


if __name__ == "__main__":
    main()
