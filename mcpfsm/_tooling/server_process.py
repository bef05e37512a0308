"""Run the demo's MCP server (``python -m mcpfsm._tooling.demo_server``) as a subprocess, for ``mcpfsm demo``.

The one place that starts a local server (the demo's, or from a checkout one of ``tooling/``), waits for its
``READY http://127.0.0.1:PORT/mcp`` line and stops it.
Plain `subprocess`, a reader thread and sync `httpx`, so nothing here needs an event loop (trio callers run
the control calls with `trio.to_thread.run_sync`); and nothing here imports the ``mcp`` SDK or uvicorn: only the
child process does, so callers check :func:`missing_modules` first::

    with run_peer("modern") as peer:
        peer.control({"action": "evolve"})
        ...  # talk to peer.url
        assert [entry["jsonrpc_method"] for entry in peer.log()] == [...]

`tests/support/peer/README.md` documents what the demo's server (the tests' "peer") sends and its control surface.
``tooling/processes.py`` (a checkout's test servers, not shipped) starts its servers through :func:`_started`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, Final, cast

__all__ = [
    "ComponentMissing",
    "PeerStartError",
    "RunningPeer",
    "missing_modules",
    "run_peer",
]

_READY: Final = "READY "
_PEER_MODULES: Final = ("mcp", "uvicorn")
_STOP_GRACE_SECONDS: Final = 5.0
_STDERR_TAIL_CHARS: Final = 4000


class ComponentMissing(RuntimeError):
    """Something optional is not installed or cannot run (Graphviz, the MCP SDK, the demo's server)."""


class PeerStartError(RuntimeError):
    """The peer exited, or printed something else, before its READY line, or did not print it in time.

    Attributes:
        reason: what went wrong, e.g. ``exited before its READY line``.
        stdout: the bytes the peer printed to stdout up to its first line break (or the failure).
        stderr: the last 4000 characters of the peer's stderr (the traceback, the argparse error...).
    """

    def __init__(self, reason: str, *, stdout: bytes, stderr: str) -> None:
        super().__init__(f"the MCP peer {reason} (stdout {stdout!r}); stderr:\n{stderr}")
        self.reason = reason
        self.stdout = stdout
        self.stderr = stderr


@dataclass(frozen=True, slots=True, kw_only=True)
class RunningPeer:
    """A running HTTP peer: its MCP endpoint and its control surface (plain HTTP, not MCP).

    `process` is the subprocess; after the `run_peer` block it has exited and `process.returncode` is 0
    when the peer shut down cleanly on SIGTERM.
    """

    url: str
    process: subprocess.Popen[bytes]

    @property
    def base_url(self) -> str:
        """The peer's origin (`url` without the `/mcp` path), where `/control` lives."""
        return self.url.rsplit("/", 1)[0]

    def control(self, action: Mapping[str, Any]) -> dict[str, Any]:
        """POST one control action (`{"action": "evolve"}`, ...) and return the peer's JSON answer.

        Raises `httpx.HTTPStatusError` when the peer refuses the action (400 or 404).
        """
        import httpx  # here: `mcpfsm --help` (the demo command) does not import httpx

        response = httpx.post(f"{self.base_url}/control", json=dict(action))
        response.raise_for_status()
        return cast(dict[str, Any], response.json())

    def log(self) -> list[dict[str, Any]]:
        """Every request the peer received on `/mcp` since start (or the last clear/reset), oldest first."""
        import httpx  # here: `mcpfsm --help` (the demo command) does not import httpx

        response = httpx.get(f"{self.base_url}/control/log")
        response.raise_for_status()
        return cast(list[dict[str, Any]], response.json())

    def clear_log(self) -> None:
        """Forget the requests logged so far."""
        import httpx  # here: `mcpfsm --help` (the demo command) does not import httpx

        httpx.post(f"{self.base_url}/control/log/clear").raise_for_status()


def missing_modules() -> list[str]:
    """The modules the peer process needs that are not installed (``mcp``, ``uvicorn``), in that order.

    Both come with the demo extra: ``pip install 'mcpfsm[demo]'``.
    """
    return [name for name in _PEER_MODULES if importlib.util.find_spec(name) is None]


@contextmanager
def run_peer(
    mode: str = "dual",
    *,
    json_response: bool = False,
    page_size: int | None = None,
    event_store: bool = False,
    retry_ms: int | None = None,
    bad_header_tool: bool = False,
    public_listings: int | None = None,
    timeout: float = 20.0,
    cwd: str | os.PathLike[str] | None = None,
    module: str = "mcpfsm._tooling.demo_server",
    port: int = 0,
) -> Iterator[RunningPeer]:
    """Run ``python -m mcpfsm._tooling.demo_server`` (HTTP, 127.0.0.1, a free port) for the duration of the block.

    The options are the peer's command-line flags (`--mode`, `--json-response`, `--page-size`,
    `--event-store`, `--retry-ms`, `--bad-header-tool`, `--public-listings`); the peer runs with the current
    interpreter, in `cwd`. ``module`` names another server with the same command line and READY line
    (from a checkout, ``tooling.peer_tasks``, the tasks server). ``port`` fixes the port (a server restarted on
    the port it had; 0: a free one).
    On exit, also on an error or KeyboardInterrupt, the peer gets SIGTERM and is killed if it is still
    running after 5 s.

    Raises:
        PeerStartError: no READY line within `timeout` seconds, or the peer exited or printed something
            else first (the error carries the tail of its stderr).
    """
    argv = [sys.executable, "-m", module, "--mode", mode, "--port", str(port)]
    if json_response:
        argv.append("--json-response")
    if page_size is not None:
        argv += ["--page-size", str(page_size)]
    if event_store:
        argv.append("--event-store")
    if retry_ms is not None:
        argv += ["--retry-ms", str(retry_ms)]
    if bad_header_tool:
        argv.append("--bad-header-tool")
    if public_listings is not None:
        argv += ["--public-listings", str(public_listings)]
    with _started(argv, cwd, timeout) as (process, url):
        yield RunningPeer(url=url, process=process)



@contextlib.contextmanager
def _started(
    argv: list[str], cwd: str | os.PathLike[str] | None, timeout: float
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """Start ``argv``, wait for its READY line (its URL), and stop it when the block ends."""
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)
        try:
            yield process, _await_ready(process, stderr, timeout)
        finally:
            _stop(process)

def _await_ready(process: subprocess.Popen[bytes], stderr: IO[bytes], timeout: float) -> str:
    # A reader thread rather than select(): select does not take pipes on Windows.
    chunks: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    stdout = cast(io.BufferedReader, process.stdout)
    threading.Thread(target=_read_first_line, args=(stdout, chunks), name="mcpfsm-peer-ready", daemon=True).start()
    deadline = time.monotonic() + timeout
    seen = b""
    while b"\n" not in seen:
        try:
            chunk = chunks.get(timeout=max(deadline - time.monotonic(), 0))
        except queue.Empty:
            raise PeerStartError(
                f"printed no READY line within {timeout:g} s", stdout=seen, stderr=_tail(stderr)
            ) from None
        if not chunk:
            raise PeerStartError("exited before its READY line", stdout=seen, stderr=_tail(stderr))
        seen += chunk
    line = seen.split(b"\n", 1)[0].decode(errors="replace").strip()
    if not line.startswith(_READY):
        raise PeerStartError(f"printed {line!r} instead of its READY line", stdout=seen, stderr=_tail(stderr))
    return line.removeprefix(_READY)


def _read_first_line(stdout: io.BufferedReader, chunks: queue.SimpleQueue[bytes]) -> None:
    while True:
        try:
            chunk = stdout.read1(4096)
        except (OSError, ValueError):
            # The pipe was closed under us once the peer was stopped: same as end of file.
            chunk = b""
        chunks.put(chunk)
        if not chunk or b"\n" in chunk:
            return


def _tail(stderr: IO[bytes]) -> str:
    stderr.seek(0)
    return stderr.read().decode(errors="replace")[-_STDERR_TAIL_CHARS:]


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=_STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        except BaseException:
            # A second Ctrl-C while waiting: the peer must still not outlive its caller.
            process.kill()
            process.wait()
            raise
    if process.stdout is not None:
        process.stdout.close()
