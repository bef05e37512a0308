"""What the installed ``mcpfsm`` command says when it cannot connect: the OS cause, the URL, TLS in plain words.

Runs ``python -m mcpfsm`` as a subprocess (``tests/support/clirun.py``) against a closed port on 127.0.0.1 and against a
plain-HTTP server on 127.0.0.1 contacted with ``https://``.
"""

from __future__ import annotations

import contextlib
import functools
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from mcpfsm._tooling.cli.common import Exit
from tests.support.clirun import mcpfsm, one_error_line

HOST = "127.0.0.1"


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on: bound, then closed."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
    return port


@asynccontextmanager
async def plain_http_server() -> AsyncIterator[int]:
    """A plain-HTTP server that answers whatever it reads (a TLS ClientHello too) with a 400, as real ones do."""

    async def handler(stream: trio.SocketStream) -> None:
        with contextlib.suppress(trio.BrokenResourceError):
            await stream.receive_some(65536)
            await stream.send_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await trio.aclose_forcefully(stream)

    async with trio.open_nursery() as nursery:
        serve = functools.partial(trio.serve_tcp, handler, 0, host=HOST)
        listeners: list[trio.SocketListener] = await nursery.start(serve)
        yield listeners[0].socket.getsockname()[1]
        nursery.cancel_scope.cancel()


def test_a_closed_port_says_connection_refused_and_names_the_url() -> None:
    url = f"http://{HOST}:{closed_port()}/mcp"
    run = mcpfsm("tools", url)
    assert (run.code, run.stdout) == (Exit.unreachable, "")
    line = one_error_line(run)
    assert line == f"mcpfsm: error: POST to MCP server failed: cannot connect to {url}: Connection refused", line
    assert "all attempts" not in line


async def test_https_against_a_plain_http_port_says_the_server_speaks_plain_http() -> None:
    async with plain_http_server() as port:
        url = f"https://{HOST}:{port}/mcp"
        # The command runs in a thread: the server answers from this trio run meanwhile.
        run = await trio.to_thread.run_sync(mcpfsm, "tools", url)
    assert (run.code, run.stdout) == (Exit.unreachable, "")
    line = one_error_line(run)
    assert line.endswith(f"cannot connect to {url}: TLS: the server speaks plain HTTP"), line
    assert line.count(url) == 1, line
    assert "SSL" not in line
