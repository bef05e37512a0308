"""Why the drivers step through a compiled table rather than a ``transitions`` Machine.

Run from the repository root:  python bench/machine.py [--number N]

A ``transitions`` trigger builds an ``EventData``, walks the (empty) callback lists and resolves the
model's state by name on every call, and a Machine (or a model added to a shared one) is needed per
call, since a shared Machine would hold per-call state across trio tasks. The compiled dict
(``CompiledMachine.advance``) costs a tuple hash per step and holds no state, while the Machine stays
the source of truth: the table is read off a built Machine, and tests/machines/test_machines.py checks that the
two agree on every (state, trigger) pair of every machine.

Each row is one successful tool call's three steps (resolved, planned, answered), or the cost of
getting a Machine for one call; times are per loop, best of 5 repeats of ``timeit``, in one process.

Measured with ``python bench/machine.py`` on CPython 3.11.7, transitions 0.9.3, the 2-core x86-64
development VM (2026-12-01, other work running): Machine triggers 31.1 µs, a Machine per call 457 µs,
a model on a shared Machine 59.7 µs, the compiled table 0.51 µs per loop: the Machine path is about
60 times the table's.
"""

from __future__ import annotations

import argparse
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcpfsm._machines.definition import build_machine
from mcpfsm._machines.tool_call import COMPILED, TOOL_CALL


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20000, help="loops per repeat (default 20000)")
    number = parser.parse_args().number

    machine = build_machine(TOOL_CALL)
    model_class = type("Model", (), {})

    def machine_steps() -> None:
        machine.set_state("resolving")
        machine.trigger("resolved")
        machine.trigger("planned")
        machine.trigger("answered")

    def machine_per_call() -> None:
        build_machine(TOOL_CALL)

    def shared_machine_model() -> None:
        model = model_class()
        machine.add_model(model)
        machine.remove_model(model)

    advance = COMPILED.advance

    def table_steps() -> None:
        advance(advance(advance("resolving", "resolved"), "planned"), "answered")

    rows = [
        ("transitions Machine, 3 triggers", machine_steps, number),
        ("a Machine per call", machine_per_call, max(number // 100, 10)),
        ("a model on a shared Machine", shared_machine_model, max(number // 10, 10)),
        ("compiled table, 3 steps", table_steps, number),
    ]
    results = {}
    for label, function, loops in rows:
        best = min(timeit.repeat(function, number=loops, repeat=5)) / loops
        results[label] = best
        print(f"{label:<36} {best * 1e6:10.3f} µs per loop")
    ratio = results["transitions Machine, 3 triggers"] / results["compiled table, 3 steps"]
    print(f"Machine triggers / compiled table: {ratio:.0f}x")


if __name__ == "__main__":
    main()
