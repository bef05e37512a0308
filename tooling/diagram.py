"""Every generated file of every machine, walkthroughs included: ``python -m tooling.diagram [--check]``.

``mcpfsm diagram`` (the installed command, :mod:`mcpfsm._tooling.diagram`) draws each machine's diagrams from its
definition: ``specs/{name}.mmd``, ``specs/{name}.dot`` and ``diagrams/{name}.svg``. This module, run from a
checkout, writes those and each machine's walkthrough, ``specs/{name}.md``: recorded runs of the client against
the real servers of this folder (the test peer, the tasks server, the authorization server), which need the MCP
SDK and uvicorn and do not ship. A machine names the module whose ``render()`` writes its page
(``MachineDefinition.walkthrough``, e.g. ``"tooling.walkthrough"``); byte for byte, two runs give the same page.

``tests/tooling/test_diagram_drift.py`` fails when a committed file differs from what this regenerates.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from mcpfsm._machines.registry import MACHINES
from mcpfsm._tooling import diagram
from mcpfsm._tooling.cli.common import Exit, configure_logging
from mcpfsm._tooling.diagram import CheckReport, ComponentMissing

__all__ = ["REGENERATE_COMMAND", "check_all", "generated_paths", "main", "walkthrough_paths", "write_all"]

REGENERATE_COMMAND: Final = "python -m tooling.diagram"
"""What to run, from the repository root, to bring every generated file (walkthroughs included) up to date."""


def _walkthroughs() -> Mapping[str, Callable[[], str]]:
    # Each machine names the module whose render() writes its page; imported here, not with the diagrams: the
    # walkthroughs need the client and the test servers, the diagrams only the machines.
    return {
        name: importlib.import_module(machine.walkthrough).render
        for name, machine in MACHINES.items()
        if machine.walkthrough is not None
    }


def walkthrough_paths() -> list[str]:
    """Each machine's walkthrough page, relative to the repository root, in the machines' order."""
    return [f"specs/{name}.md" for name in MACHINES]


def generated_paths() -> list[str]:
    """Every generated file: each machine's diagrams (``mcpfsm diagram``'s), then its walkthrough."""
    return [
        path
        for name in MACHINES
        for path in [*(p for p in diagram.generated_paths() if _machine_of(p) == name), f"specs/{name}.md"]
    ]


def _machine_of(path: str) -> str:
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def _render_walkthrough(name: str) -> str:
    render = _walkthroughs().get(name)
    if render is None:
        raise ComponentMissing(f"no walkthrough is registered for the {name} machine")
    return render()


def write_all(root: Path) -> list[Path]:
    """Regenerate every file under ``root``; return the ones created or changed, in :func:`generated_paths` order.

    Everything is rendered before anything is written.

    Raises:
        ComponentMissing: Graphviz or the MCP SDK is missing (nothing is written).
        OSError: a file cannot be written.
    """
    rendered = diagram.render_all()
    rendered |= {f"specs/{name}.md": _render_walkthrough(name).encode() for name in MACHINES}
    return diagram.write_files(root, {path: rendered[path] for path in generated_paths()})


def check_all(root: Path) -> CheckReport:
    """Compare every generated file under ``root`` with what the code generates now.

    The diagrams as :func:`mcpfsm._tooling.diagram.check_all` compares them; each walkthrough byte for byte. A
    walkthrough that cannot run here (no MCP SDK) is skipped and named in the report with the reason.
    """
    report = diagram.check_all(root)
    for name in MACHINES:
        relative = f"specs/{name}.md"
        path = root / relative
        committed = path.read_text(encoding="utf-8") if path.is_file() else None
        try:
            fresh = _render_walkthrough(name)
        except ComponentMissing as exc:
            report.skipped.append((relative, str(exc)))
            continue
        if committed != fresh:
            report.drifted.append(relative)
    return report


def main(argv: list[str] | None = None) -> int:
    """Regenerate every generated file under ``--root`` (default: the current directory), or ``--check`` them."""
    parser = argparse.ArgumentParser(prog="python -m tooling.diagram", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only verify; exit 9 naming the files out of date")
    parser.add_argument("--root", type=Path, default=Path.cwd(), metavar="DIR", help="repository root (default: .)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the walkthroughs' warnings")
    args = parser.parse_args(argv)
    # The walkthroughs fail members and servers on purpose (a killed child, a missing command): their warnings are
    # the story the pages tell, not news for whoever regenerates them; -v shows them.
    configure_logging(args.verbose, level="ERROR")
    if args.check:
        report = check_all(args.root)
        for path, why in report.skipped:
            print(f"skipped {path}: {why}")
        if report.drifted:
            print(f"out of date: {', '.join(report.drifted)}; regenerate with: {REGENERATE_COMMAND}", file=sys.stderr)
            return int(Exit.drift)
        print("generated files up to date" + (" (except what was skipped)" if report.skipped else ""))
        return int(Exit.ok)
    try:
        written = write_all(args.root)
    except ComponentMissing as exc:
        print(f"python -m tooling.diagram: error: {exc}", file=sys.stderr)
        return int(Exit.missing_component)
    for written_path in written:
        print(f"wrote {written_path}")
    if not written:
        print("generated files up to date")
    return int(Exit.ok)


if __name__ == "__main__":
    sys.exit(main())
