"""``mcpfsm audit verify FILE...``: check a chained audit log (``AuditLog(path, chain=True)``) for tampering."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Final

from ..._drivers.audit_log import verify_chain
from .common import CliError, Exit, os_reason, print_line

__all__ = ["configure", "run"]

DESCRIPTION: Final = (
    "mcpfsm audit verify FILE... reads a log written by AuditLog(path, chain=True) - its rotated files\n"
    "oldest first, the current file last - and prints the first line edited, removed, inserted or\n"
    "reordered, or 'intact, N lines, last sequence S'. A log written with a key needs the same key\n"
    "(--key-file). Lines cut off the end show only against a last sequence kept elsewhere: see\n"
    "docs/trail-viewer.md for what the chain proves and what it cannot."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``verify`` action and its arguments."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    verify = actions.add_parser(
        "verify",
        help="check the chain of a log's files, oldest first",
        description="Check the chain of an audit log's files, oldest first; exit 9 when it is broken.",
    )
    verify.add_argument("files", metavar="FILE", nargs="+", help="the log's files, oldest first")
    verify.add_argument(
        "--key-file",
        metavar="F",
        help="the HMAC key the log was written with (the file's bytes, trailing newlines removed)",
    )


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CliError(Exit.usage, f"cannot read {what} {path!r}: {os_reason(exc)}") from exc


def run(args: argparse.Namespace) -> Exit:
    """Verify the files; print the result."""
    key = None
    if args.key_file is not None:
        key = _read(args.key_file, "key file").rstrip(b"\r\n")
        if not key:
            raise CliError(Exit.usage, f"the key file {args.key_file!r} is empty")
    report = verify_chain([(path, _read(path, "audit log")) for path in args.files], key)
    if not report.intact:
        print_line(f"broken: {report.problem}")
        return Exit.drift
    if not report.authenticated:
        raise CliError(
            Exit.usage,
            f"the lines carry HMAC-SHA-256 tags: pass --key-file to check them (without the key only the "
            f"sequence and the links were checked: {report.lines} lines, last sequence {report.last_seq})",
        )
    print_line(report.summary())
    return Exit.ok
