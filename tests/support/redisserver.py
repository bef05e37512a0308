"""A real ``redis-server`` (and ``redis-server --sentinel``) on 127.0.0.1 for the store tests.

:func:`start_redis` runs ``redis-server --port PORT --bind 127.0.0.1 --save '' --appendonly no`` on a port the
OS assigned (:func:`tests.support.ports.reserved_port`), waits until the server prints that it accepts connections and
answers ``PING`` on the socket, and stops it after. ``redis-server`` comes from the Debian package of that name
(``.ci/need redis-server redis-server`` in ``.ci/run`` and the README's test command); a missing binary fails
the test, it is never skipped. :func:`start_sentinel` runs one Sentinel that monitors a server as ``SERVICE``;
:func:`start_failover_pair` a primary, its replica and a Sentinel that promotes the replica when the primary dies
(:func:`wait_for_primary` waits until the Sentinel names the new one). :func:`start_cluster` runs a Redis Cluster
of three primaries sharing the 16384 slots, and yields once every node says ``cluster_state:ok``.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tests.support.ports import reserved_port

__all__ = [
    "FailoverPair",
    "RedisServer",
    "answer_of",
    "command",
    "ping",
    "start_cluster",
    "start_cluster_node",
    "start_failover_pair",
    "start_redis",
    "start_sentinel",
    "wait_for_primary",
]

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

    @contextmanager
    def frozen(self) -> Iterator[None]:
        """Stop the server (SIGSTOP) for the block: the kernel still accepts connections, nothing is answered."""
        os.kill(self.process.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(self.process.pid, signal.SIGCONT)


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


def answer_of(port: int, *parts: str) -> str:
    """:func:`command`'s answer as text (a bulk string's content, or the raw answer for other kinds)."""
    raw = command(port, *parts).decode(errors="replace")
    if raw.startswith("$"):
        return raw.partition("\r\n")[2].rstrip("\r\n")
    return raw


def _until(condition: Callable[[], bool], what: str) -> None:
    # A readiness wait: a server's own answer, asked again until it says so (or STARTUP runs out).
    deadline = time.monotonic() + STARTUP
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not happen within {STARTUP} s")
        time.sleep(0.05)


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
    """Run one Sentinel on a free port that monitors ``primary`` as ``service``; yield its port.

    It counts a primary that does not answer for a second as down, and then fails over at once (quorum 1).
    """
    with reserved_port() as port:
        config = directory / f"sentinel-{port}.conf"
        config.write_text(
            f"port {port}\nbind 127.0.0.1\ndir {directory}\n"
            f"sentinel monitor {service} 127.0.0.1 {primary.port} 1\n"
            f"sentinel down-after-milliseconds {service} 1000\n"
            f"sentinel failover-timeout {service} 10000\n",
            encoding="utf-8",
        )
        with _running([_binary(), str(config), "--sentinel"], port, "Sentinel ID is"):
            yield port


def wait_for_primary(sentinel: int, service: str, port: int) -> None:
    """Wait until the Sentinel on ``sentinel`` names the server on ``port`` as ``service``'s primary, and it is one."""

    def named() -> bool:
        try:
            answer = command(sentinel, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", service)
        except OSError:
            return False
        return f"\r\n{port}\r\n".encode() in answer and "role:master" in answer_of(port, "INFO", "replication")

    _until(named, f"the Sentinel naming 127.0.0.1:{port} as the primary of {service!r}")


@dataclass
class FailoverPair:
    """A primary, its replica and the Sentinel watching them as ``service``; ``url`` is the Sentinel URL."""

    primary: RedisServer
    replica: RedisServer
    sentinel: int
    service: str

    @property
    def url(self) -> str:
        return f"redis+sentinel://127.0.0.1:{self.sentinel}/{self.service}"

    def replicated(self) -> None:
        """Wait until the replica has every write the primary acknowledged so far (``WAIT 1``)."""
        _until(lambda: command(self.primary.port, "WAIT", "1", "1000") == b":1\r\n", "replication to the replica")

    def fail_over(self) -> None:
        """Kill the primary (SIGKILL) and wait until the Sentinel has promoted the replica."""
        self.primary.kill()
        wait_for_primary(self.sentinel, self.service, self.replica.port)


@contextmanager
def start_failover_pair(directory: Path, service: str = "fleet") -> Iterator[FailoverPair]:
    """A primary, a replica in sync with it, and a Sentinel that knows both; the Sentinel names the primary."""
    # Diskless replication, and a directory of the test's own for whatever a server still writes.
    quick = ("--dir", str(directory), "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0")
    with (
        start_redis(*quick) as primary,
        _replica_of(primary, directory) as replica,
        start_sentinel(primary, service, directory) as sentinel,
    ):
        wait_for_primary(sentinel, service, primary.port)

        def knows_the_replica() -> bool:
            return f"{replica.port}".encode() in command(sentinel, "SENTINEL", "REPLICAS", service)

        _until(knows_the_replica, "the Sentinel discovering the replica")
        yield FailoverPair(primary, replica, sentinel, service)


@contextmanager
def _replica_of(primary: RedisServer, directory: Path) -> Iterator[RedisServer]:
    with reserved_port() as port:
        arguments = [_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        arguments += ["--replicaof", "127.0.0.1", str(primary.port), "--dir", str(directory)]
        with _running(arguments, port, "MASTER <-> REPLICA sync: Finished with success") as process:
            yield RedisServer(port, process)


@contextmanager
def start_cluster(directory: Path, nodes: int = 3) -> Iterator[list[RedisServer]]:
    """Run a Redis Cluster of ``nodes`` primaries on free ports, the slots split between them.

    Each node has a cluster bus port of its own, reserved like the client port. Yields once every node
    answers ``CLUSTER INFO`` with ``cluster_state:ok`` and knows every other node.
    """
    with contextlib.ExitStack() as stack:
        servers: list[RedisServer] = []
        buses: list[int] = []
        for index in range(nodes):
            bus = stack.enter_context(reserved_port())
            buses.append(bus)
            config = directory / f"nodes-{index}.conf"
            servers.append(
                stack.enter_context(
                    start_redis(
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        str(config),
                        "--cluster-port",
                        str(bus),
                        "--dir",
                        str(directory),
                    )
                )
            )
        edges = [round(16384 * index / nodes) for index in range(nodes + 1)]
        for server, low, high in zip(servers, edges, edges[1:], strict=False):
            assert command(server.port, "CLUSTER", "ADDSLOTSRANGE", str(low), str(high - 1)) == b"+OK\r\n"
        for server, bus in zip(servers[1:], buses[1:], strict=True):
            meet = command(servers[0].port, "CLUSTER", "MEET", "127.0.0.1", str(server.port), str(bus))
            assert meet == b"+OK\r\n", meet

        def settled() -> bool:
            for server in servers:
                info = answer_of(server.port, "CLUSTER", "INFO")
                if "cluster_state:ok" not in info or f"cluster_known_nodes:{nodes}" not in info:
                    return False
            return True

        _until(settled, f"a {nodes}-node cluster reaching cluster_state:ok")
        yield servers


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
