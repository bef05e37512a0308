"""A real ``redis-server`` (and ``redis-server --sentinel``) on 127.0.0.1 for the store tests.

:func:`start_redis` runs ``redis-server --port PORT --bind 127.0.0.1 --save '' --appendonly no`` on a port the
OS assigned (:func:`tests.ports.reserved_port`), waits until the server prints that it accepts connections and
answers ``PING`` on the socket, and stops it after. ``redis-server`` comes from the Debian package of that name
(``.ci/need redis-server redis-server`` in ``.ci/run`` and the README's test command); a missing binary fails
the test, it is never skipped. :func:`start_sentinel` runs one Sentinel that monitors a server as ``SERVICE``.
"""

from __future__ import annotations

import queue
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tests.ports import reserved_port

__all__ = ["RedisServer", "command", "ping", "start_cluster_node", "start_redis", "start_sentinel"]

STARTUP: Final = 30.0
"""Hang guard, in seconds, for a server to say it is ready."""


@dataclass
class RedisServer:
    """A running ``redis-server``: its port, its ``redis://`` URL and its process."""

    port: int
    process: subprocess.Popen[str]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def kill(self) -> None:
        """Kill the server (SIGKILL) and reap it."""
        self.process.kill()
        self.process.wait(timeout=STARTUP)


def ping(port: int) -> bool:
    """Whether a server on ``port`` answers ``PING`` with ``+PONG`` now."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def command(port: int, *parts: str) -> bytes:
    """Send one command (RESP array of bulk strings) to the server on ``port``; return its raw answer."""
    encoded = f"*{len(parts)}\r\n" + "".join(f"${len(part)}\r\n{part}\r\n" for part in parts)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall(encoded.encode())
        return connection.recv(65536)


def _wait_ready(process: subprocess.Popen[str], port: int, marker: str) -> threading.Thread:
    # The server prints `marker` once it listens (read by a thread that keeps draining the pipe after, so a
    # full pipe never blocks the server); the PING then proves it on the socket.
    assert process.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    stream = process.stdout

    def read() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + STARTUP
    seen: list[str] = []
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise RuntimeError(f"redis-server did not say it was ready:\n{''.join(seen)}") from None
        if line is None:
            raise RuntimeError(f"redis-server exited before it was ready:\n{''.join(seen)}")
        seen.append(line)
        if marker in line:
            break
    if not ping(port):
        raise RuntimeError(f"redis-server on {port} did not answer PING:\n{''.join(seen)}")
    return reader


def _binary() -> str:
    found = shutil.which("redis-server")
    if found is None:
        raise RuntimeError("redis-server is missing: `.ci/need redis-server redis-server` installs it")
    return found


@contextmanager
def _running(arguments: list[str], port: int, marker: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    reader = None
    try:
        reader = _wait_ready(process, port, marker)
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=STARTUP)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if reader is not None:
            reader.join(timeout=STARTUP)
        assert process.stdout is not None
        process.stdout.close()


@contextmanager
def start_redis(*extra: str) -> Iterator[RedisServer]:
    """Run a ``redis-server`` on a free 127.0.0.1 port until the block ends (``extra``: more arguments)."""
    with reserved_port() as port:
        arguments = [_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        with _running([*arguments, *extra], port, "Ready to accept connections") as process:
            yield RedisServer(port, process)


@contextmanager
def start_sentinel(primary: RedisServer, service: str, directory: Path) -> Iterator[int]:
    """Run one Sentinel on a free port that monitors ``primary`` as ``service``; yield its port."""
    with reserved_port() as port:
        config = directory / f"sentinel-{port}.conf"
        config.write_text(
            f"port {port}\nbind 127.0.0.1\nsentinel monitor {service} 127.0.0.1 {primary.port} 1\n", encoding="utf-8"
        )
        with _running([_binary(), str(config), "--sentinel"], port, "Sentinel ID is"):
            yield port


@contextmanager
def start_cluster_node(directory: Path) -> Iterator[RedisServer]:
    """Run a one-node Redis Cluster holding every slot; yield once ``CLUSTER INFO`` says ``cluster_state:ok``."""
    with start_redis("--cluster-enabled", "yes", "--dir", str(directory)) as server:
        assert command(server.port, "CLUSTER", "ADDSLOTSRANGE", "0", "16383") == b"+OK\r\n"
        deadline = time.monotonic() + STARTUP
        # The node turns its state to ok on its next cluster cron tick, after the slots are assigned.
        while b"cluster_state:ok" not in command(server.port, "CLUSTER", "INFO"):
            if time.monotonic() > deadline:
                raise RuntimeError("the one-node cluster never reached cluster_state:ok")
            time.sleep(0.05)
        yield server
