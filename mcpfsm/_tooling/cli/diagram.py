"""``mcpfsm diagram [--check]``: regenerate, or verify, each machine's diagrams in ``specs/`` and ``diagrams/``.

The walkthroughs (``specs/{name}.md``) run the client against test servers that do not ship: from a checkout,
``python -m tooling.diagram [--check]`` writes (or checks) them together with these files.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Final

from .. import diagram
from .common import CliError, Exit, os_reason, print_line

__all__ = ["configure", "run"]

DESCRIPTION: Final = (
    "Regenerate each state machine's diagrams (specs/NAME.mmd, specs/NAME.dot, diagrams/NAME.svg) from\n"
    "its definition; or with --check verify that they are up to date. Writing needs Graphviz's dot for\n"
    "the SVG; --check without it compares the SVG's structure with the machine and says what it skipped.\n"
    "The walkthroughs (specs/NAME.md) come from a checkout: python -m tooling.diagram [--check]."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments."""
    parser.add_argument("--check", action="store_true", help="only verify; exit 9 naming the files out of date")
    parser.add_argument("--root", type=Path, default=None, metavar="DIR", help="repository root (default: .)")


def run(args: argparse.Namespace) -> Exit:
    """Regenerate or verify."""
    root: Path = args.root if args.root is not None else Path.cwd()
    if not root.is_dir():
        raise CliError(Exit.usage, f"--root {str(root)!r} is not a directory")
    if not args.check and not ((root / "specs").is_dir() or (root / "pyproject.toml").is_file()):
        raise CliError(
            Exit.usage, f"{str(root)!r} does not look like the mcpfsm repository (no specs/ or pyproject.toml)"
        )
    if args.check:
        report = diagram.check_all(root)
        for path, why in report.skipped:
            print_line(f"skipped {path}: {why}")
        if report.drifted:
            raise CliError(
                Exit.drift,
                f"out of date: {', '.join(report.drifted)}; regenerate with: {diagram.REGENERATE_COMMAND}",
            )
        print_line("diagrams up to date" + (" (except what was skipped)" if report.skipped else ""))
        return Exit.ok
    try:
        written = diagram.write_all(root)
    except diagram.ComponentMissing as exc:
        raise CliError(Exit.missing_component, str(exc)) from exc
    except OSError as exc:
        raise CliError(Exit.usage, f"cannot write the diagrams under {str(root)!r}: {os_reason(exc)}") from exc
    for written_path in written:
        print_line(f"wrote {written_path}")
    if not written:
        print_line("diagrams up to date")
    return Exit.ok
