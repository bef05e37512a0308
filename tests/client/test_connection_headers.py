"""Headers the connection layer owns are refused when the client is built; Host and Connection stay the caller's.

A ``Content-Length`` or ``Transfer-Encoding`` (or ``TE``, ``Trailer``, ``Upgrade``) in ``headers=`` would
contradict the framing of every request the connection writes: refused at ``Client.http(...)`` with a
``ValueError`` naming the header, before anything is sent. Checked against a raw server on 127.0.0.1
(tests/support/rawserver.py), on both connection layers.
"""

from __future__ import annotations

import sys
from typing import Final

import pytest
import trio

import mcpfsm
from mcpfsm._tooling.cli import Exit
from tests.support.layers import LAYERS, connect
from tests.support.peer.fixtures import REPO_ROOT
from tests.support.rawserver import HOST, Server, rpc, serving

OWNED: Final = ["Content-Length", "transfer-encoding", "TE", "Upgrade", "TRAILER"]


def url_of(server: Server) -> str:
    return f"http://{HOST}:{server.port}/mcp"


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("name", OWNED)
async def test_a_header_the_connection_owns_is_refused_when_the_client_is_built(layer: str, name: str) -> None:
    value = {"content-length": "12", "transfer-encoding": "chunked", "te": "trailers", "upgrade": "h2c"}.get(
        name.lower(), "Expires"
    )
    async with serving(Server(default=rpc())) as server:
        with pytest.raises(
            ValueError,
            match=rf"^header {name} is set by the connection, not by the caller \(headers= may not carry"
            r" Content-Length, Transfer-Encoding, TE, Trailer or Upgrade\)$",
        ):
            async with connect(url_of(server), layer, headers={"X-Tenant": "acme", name: value}) as client:
                await client.request("ping")
    assert server.seen == []


@pytest.mark.parametrize("layer", LAYERS)
async def test_a_custom_host_and_connection_are_sent_as_given(layer: str) -> None:
    headers = {"Host": "mcp.example.test", "Connection": "close", "X-Tenant": "acme"}
    async with serving(Server(default=rpc())) as server, connect(url_of(server), layer, headers=headers) as client:
        answers = [await client.request("ping"), await client.request("ping")]
    assert answers == [{}, {}]
    assert [(seen.headers["host"], seen.headers["connection"], seen.headers["x-tenant"]) for seen in server.seen] == [
        ("mcp.example.test", "close", "acme")
    ] * 2


async def test_the_cli_refuses_such_a_header_as_a_usage_error() -> None:
    async with serving(Server(default=rpc())) as server:
        done = await trio.run_process(
            [sys.executable, "-m", "mcpfsm", "call", url_of(server), "echo", "--header", "Transfer-Encoding: chunked"],
            cwd=REPO_ROOT,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert (done.returncode, done.stdout) == (Exit.usage, b"")
    assert done.stderr.decode() == (
        "mcpfsm: error: --header Transfer-Encoding: the connection sets this header itself (Content-Length,"
        " Transfer-Encoding, TE, Trailer and Upgrade cannot be given)\n"
    )
    assert server.seen == []


def test_the_refusal_names_the_header_and_never_its_value() -> None:
    with pytest.raises(ValueError) as refused:
        mcpfsm.Client.http("http://127.0.0.1:9/mcp", headers={"Content-Length": "SECRET-42"})
    assert "Content-Length" in str(refused.value)
    assert "SECRET-42" not in str(refused.value)


@pytest.mark.parametrize("name", OWNED)
def test_the_transport_built_directly_refuses_them_too(name: str) -> None:
    # HttpTransport is public: one built by the caller (and handed to Client) is held to the same rule.
    with pytest.raises(ValueError, match=rf"^header {name} is set by the connection, not by the caller "):
        mcpfsm.HttpTransport("http://127.0.0.1:1/mcp", headers={name: "1"})
