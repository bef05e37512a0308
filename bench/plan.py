"""Cost of the pure header core: validating tool listings and planning tools/call requests.

Run from the repository root:  python bench/plan.py

Each tool's inputSchema has 5 annotated properties (2 top level, 3 nested two levels deep, under
``options.limits``) plus 3 unannotated ones. Reported: best of 3 wall-clock runs
(``time.perf_counter``), microseconds per item, and the ratio between the 10x-larger and the
smaller run, which is ~10 when the work is linear in the input. Results are checked and dropped
one by one: keeping 100,000 plans alive would add the garbage collector's rescans of them, which
grow faster than linearly, and time the collector rather than the core.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcpfsm._core.constants import MODERN_VERSION
from mcpfsm._core.plan import plan_request
from mcpfsm._core.schema import MirroredParam, inspect_input_schema

REPEATS = 3


def make_schema(index: int) -> dict[str, Any]:
    """One tool's inputSchema: 5 annotations, 3 of them at ``options.limits.*``."""
    return {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "SQL to run"},
            "database": {"type": "string", "x-mcp-header": "Database"},
            "region": {"type": "string", "x-mcp-header": f"Region-{index % 7}"},
            "options": {
                "type": "object",
                "properties": {
                    "verbose": {"type": "boolean", "default": False},
                    "limits": {
                        "type": "object",
                        "properties": {
                            "rows": {"type": "integer", "x-mcp-header": "Rows"},
                            "readOnly": {"type": "boolean", "x-mcp-header": "Read-Only"},
                            "tier": {"type": "string", "x-mcp-header": "Tier", "enum": ["gold", "silver"]},
                        },
                    },
                },
            },
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["query"],
    }


def make_arguments(index: int) -> dict[str, Any]:
    return {
        "query": "SELECT 1",
        "database": "analytics",
        "region": "eu-west1" if index % 2 else "Zürich",  # half literal, half Base64
        "options": {"verbose": True, "limits": {"rows": index, "readOnly": True, "tier": "gold"}},
        "tags": ["a", "b"],
    }


def best_of(run: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def validate(schemas: list[dict[str, Any]]) -> Callable[[], object]:
    def run() -> object:
        # Each verdict is checked and dropped: keeping 10,000 of them would time the collector
        # rescanning them, not the validation.
        for schema in schemas:
            assert len(inspect_input_schema(schema).mirrored) == 5
        return None

    return run


def plan(requests: list[dict[str, Any]], mirrored: tuple[MirroredParam, ...]) -> Callable[[], object]:
    def run() -> object:
        for params in requests:
            assert len(plan_request("tools/call", params, protocol_version=MODERN_VERSION, mirrored=mirrored)) == 8
        return None

    return run


def report(label: str, unit: str, sizes: tuple[int, int], build: Callable[[int], Callable[[], object]]) -> None:
    results = []
    for size in sizes:
        run = build(size)
        gc.collect()
        seconds = best_of(run)
        results.append(seconds)
        per_item = f"{seconds / size * 1e6:7.2f} µs/{unit[:-1]}"
        print(f"{label:<26} {size:>8,} {unit:<9} {seconds * 1e3:8.1f} ms  {per_item}")
    print(f"{'':<26} x{sizes[1] // sizes[0]} in size -> x{results[1] / results[0]:.2f} in time")


def main() -> None:
    print(f"Python {sys.version.split()[0]}, best of {REPEATS}")
    report(
        "inspect_input_schema",
        "tools",
        (1_000, 10_000),
        lambda n: validate([make_schema(i) for i in range(n)]),
    )
    mirrored = inspect_input_schema(make_schema(0)).mirrored
    report(
        "plan_request (tools/call)",
        "requests",
        (10_000, 100_000),
        lambda n: plan([{"name": "execute-sql", "arguments": make_arguments(i)} for i in range(n)], mirrored),
    )


if __name__ == "__main__":
    main()
