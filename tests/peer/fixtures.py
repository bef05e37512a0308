"""Start the test peer (`tests.peer.server`) as a subprocess, for sync and trio tests alike.

Plain `subprocess` and sync `httpx`, so nothing here depends on an event loop::

    from tests.peer.fixtures import start_http_peer

    with start_http_peer(mode="modern") as peer:
        peer.control({"action": "evolve"})
        ...  # talk to peer.url
        assert [e["jsonrpc_method"] for e in peer.log()] == [...]
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final, cast

import httpx

__all__ = ["REPO_ROOT", "HttpPeer", "PeerStartError", "start_http_peer"]

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
"""The repository root: the peer runs as `python -m tests.peer.server` from here."""

_READY: Final = "READY "


class PeerStartError(RuntimeError):
    """The peer did not print its READY line in time (the message carries its stderr)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpPeer:
    """A running HTTP peer: its MCP endpoint and its control surface.

    `process` is the subprocess; after the `start_http_peer` block it has exited and
    `process.returncode` is 0 when the peer shut down cleanly on SIGTERM.
    """

    url: str
    base_url: str
    process: subprocess.Popen[bytes]

    def control(self, action: Mapping[str, Any]) -> dict[str, Any]:
        """POST one control action (`{"action": "evolve"}`, ...) and return the peer's JSON answer.

        Raises `httpx.HTTPStatusError` when the peer refuses the action (400 or 404).
        """
        response = httpx.post(f"{self.base_url}/control", json=dict(action))
        response.raise_for_status()
        return cast(dict[str, Any], response.json())

    def log(self) -> list[dict[str, Any]]:
        """Every request the peer received on `/mcp` since start (or the last clear/reset), oldest first."""
        response = httpx.get(f"{self.base_url}/control/log")
        response.raise_for_status()
        return cast(list[dict[str, Any]], response.json())

    def clear_log(self) -> None:
        """Forget the requests logged so far."""
        httpx.post(f"{self.base_url}/control/log/clear").raise_for_status()


@contextmanager
def start_http_peer(
    mode: str = "dual",
    json_response: bool = False,
    *,
    page_size: int | None = None,
    event_store: bool = False,
    retry_ms: int | None = None,
    timeout: float = 20.0,
) -> Iterator[HttpPeer]:
    """Run `python -m tests.peer.server` on a free port for the duration of the block.

    Waits up to `timeout` seconds for the READY line (raises `PeerStartError` with the peer's
    stderr otherwise); on exit sends SIGTERM and waits, killing the peer if it lingers past 5 s.
    """
    argv = [sys.executable, "-m", "tests.peer.server", "--mode", mode, "--port", "0"]
    if json_response:
        argv.append("--json-response")
    if page_size is not None:
        argv += ["--page-size", str(page_size)]
    if event_store:
        argv.append("--event-store")
    if retry_ms is not None:
        argv += ["--retry-ms", str(retry_ms)]
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(argv, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)
        try:
            url = _await_ready(process, stderr, timeout)
            yield HttpPeer(url=url, base_url=url.rsplit("/", 1)[0], process=process)
        finally:
            _stop(process)


def _await_ready(process: subprocess.Popen[bytes], stderr: IO[bytes], timeout: float) -> str:
    assert process.stdout is not None
    fd = process.stdout.fileno()
    deadline = time.monotonic() + timeout
    seen = b""
    while b"\n" not in seen:
        remaining = deadline - time.monotonic()
        readable, _, _ = select.select([fd], [], [], max(remaining, 0))
        chunk = os.read(fd, 4096) if readable else b""
        if not chunk:
            reason = "exited" if readable or process.poll() is not None else f"not ready after {timeout:g} s"
            raise PeerStartError(f"test peer {reason}; stdout={seen!r}; stderr:\n{_tail(stderr)}")
        seen += chunk
    line = seen.split(b"\n", 1)[0].decode()
    if not line.startswith(_READY):
        raise PeerStartError(f"test peer printed {line!r} instead of READY; stderr:\n{_tail(stderr)}")
    return line.removeprefix(_READY)


def _tail(stderr: IO[bytes]) -> str:
    stderr.seek(0)
    return stderr.read().decode(errors="replace")[-4000:]


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout is not None:
        process.stdout.close()
