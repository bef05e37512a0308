"""fastmcp's server (tests/support/fastmcp_server.py) as a subprocess: a second kind of HTTP server for the tests.

::

    with run_fastmcp() as server:
        ...  # talk to server.url
        assert [entry["http_method"] for entry in server.log()] == [...]

The server binds a free port on 127.0.0.1 and prints ``READY URL`` once uvicorn listens; this waits for that line
(the same wait as the official SDK's test server, ``mcpfsm._tooling.server_process``), and stops it with SIGTERM
(then SIGKILL after 5 s). fastmcp comes with the test extra (its pins agree with the SDK's there).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

import httpx

from mcpfsm._tooling.server_process import _await_ready, _stop
from tests.support.peer.fixtures import REPO_ROOT

__all__ = ["FASTMCP_STDIO", "FASTMCP_TOOLS", "FastmcpServer", "run_fastmcp"]

FASTMCP_STDIO: Final = [sys.executable, "-m", "tests.support.fastmcp_server", "--stdio"]
"""The command that serves the same fastmcp server over stdio (run from the repository root)."""

FASTMCP_TOOLS: Final = ["add", "echo", "pid"]
"""The server's tools, in ``tools/list`` order."""


@dataclass(frozen=True, slots=True)
class FastmcpServer:
    """A running fastmcp HTTP server: its MCP endpoint, and the requests it received there."""

    url: str
    process: subprocess.Popen[bytes]

    def log(self) -> list[dict[str, Any]]:
        """The requests received on the MCP endpoint so far: ``http_method`` and ``headers`` (lower-case names)."""
        answer = httpx.get(self.url.removesuffix("/mcp") + "/control/log", timeout=10)
        answer.raise_for_status()
        entries: list[dict[str, Any]] = answer.json()
        return entries


@contextmanager
def run_fastmcp(timeout: float = 60.0) -> Iterator[FastmcpServer]:
    """Run ``python -m tests.support.fastmcp_server`` (HTTP) for the block.

    Raises:
        PeerStartError: no READY line within ``timeout`` seconds, or the server exited first (with its stderr).
    """
    argv = [sys.executable, "-m", "tests.support.fastmcp_server"]
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(
            argv, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr
        )
        try:
            yield FastmcpServer(_await_ready(process, stderr, timeout), process)
        finally:
            _stop(process)
