"""fastmcp-tasks' server (tests/support/fastmcp_tasks_server.py) as a subprocess, from a virtual environment of its own.

fastmcp-tasks pins ``fastmcp-slim`` to its own release while the test extra pins ``fastmcp`` (which pins another
``fastmcp-slim``), so the two cannot share the test venv. :func:`tasks_venv` makes a venv with the pins below
under ``$MCPFSM_CI_CACHE`` (default ``~/.cache/mcpfsm``, like the conformance suite), named after the pins and the
Python version, once: it installs into a scratch directory with pip and renames it into place, so a concurrent
run either finds the finished venv or builds its own and drops it. :func:`run_fastmcp_tasks` starts the server
there and waits for its ``READY URL`` line.

::

    with run_fastmcp_tasks() as server:
        ...  # talk to server.url
        server.log()          # the POSTs it received
        server.release("a")   # let the `hold` tool waiting on "a" return
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx

from mcpfsm._tooling.server_process import _await_ready, _stop
from tests.support.peer.fixtures import REPO_ROOT

__all__ = ["PINS", "FastmcpTasksServer", "run_fastmcp_tasks", "tasks_venv"]

PINS: Final = ("fastmcp-tasks==4.1.4", "fastmcp-slim[server]==4.1.4", "uvicorn>=0.30")
"""What the server's venv installs (fastmcp-tasks 4.1.4 pins fastmcp-slim 4.1.4; the test extra's fastmcp 4.2.3
pins fastmcp-slim 4.2.3)."""

SCRIPT: Final = REPO_ROOT / "tests" / "support" / "fastmcp_tasks_server.py"


def _cache() -> Path:
    named = os.environ.get("MCPFSM_CI_CACHE")
    if named:
        return Path(named)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcpfsm"


def tasks_venv() -> Path:
    """The Python of a venv holding :data:`PINS`, made on first use (the install needs the package index)."""
    key = hashlib.sha256("\n".join((sys.version, *PINS)).encode()).hexdigest()[:16]
    home = _cache() / f"venv-fastmcp-tasks-{key}"
    python = home / "bin" / "python"
    if python.exists():
        return python
    home.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{home.name}.", dir=home.parent))
    try:
        subprocess.run([sys.executable, "-m", "venv", str(scratch)], check=True, capture_output=True)
        install = [str(scratch / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", *PINS]
        done = subprocess.run(install, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"pip could not install {' '.join(PINS)} into {scratch}:\n{done.stderr[-4000:]}")
        try:
            scratch.rename(home)  # a venv runs from where it lies through bin/python (pyvenv.cfg sits beside it)
        except OSError:
            if not python.exists():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return python


@dataclass(frozen=True, slots=True)
class FastmcpTasksServer:
    """A running fastmcp-tasks HTTP server: its MCP endpoint, its log and its gates."""

    url: str
    process: subprocess.Popen[bytes]

    def _control(self, path: str) -> str:
        return self.url.removesuffix("/mcp") + "/control/" + path

    def log(self) -> list[dict[str, Any]]:
        """The POSTs received on the MCP endpoint so far: ``at`` (the server's monotonic clock), ``method``,
        ``params``, ``mcp_method`` and ``mcp_name``."""
        answer = httpx.get(self._control("log"), timeout=10)
        answer.raise_for_status()
        entries: list[dict[str, Any]] = answer.json()
        return entries

    def release(self, name: str) -> None:
        """Let the ``hold`` call waiting on ``name`` return (now or as soon as it starts)."""
        httpx.post(self._control("release"), params={"name": name}, timeout=10).raise_for_status()


@contextmanager
def run_fastmcp_tasks(*args: str, timeout: float = 60.0) -> Iterator[FastmcpTasksServer]:
    """Run tests/support/fastmcp_tasks_server.py (with ``args``) from :func:`tasks_venv` for the block.

    Raises:
        PeerStartError: no READY line within ``timeout`` seconds, or the server exited first (with its stderr).
    """
    python = tasks_venv()
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(
            [str(python), str(SCRIPT), *args],
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        try:
            yield FastmcpTasksServer(_await_ready(process, stderr, timeout), process)
        finally:
            _stop(process)
