"""Running the ``mcpfsm`` command for real (``python -m mcpfsm`` in a subprocess), for the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.peer.fixtures import REPO_ROOT


@dataclass(frozen=True, slots=True)
class Run:
    code: int
    stdout: str
    stderr: str


def mcpfsm(*args: str, cwd: Path = REPO_ROOT, stdin: str | None = None) -> Run:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run(
        [sys.executable, "-m", "mcpfsm", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def one_error_line(run: Run) -> str:
    """The run's stderr, checked to be exactly one `mcpfsm: error:` line and no traceback."""
    assert "Traceback" not in run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("mcpfsm: error: ")
    return lines[0]
