"""HeaderGate around the official SDK's and fastmcp's servers, served by uvicorn (asyncio) and Hypercorn (trio).

Each server runs in its own process (tests/gate/gated.py); mcpfsm's own client talks to it through the gate, and raw
requests that lie are refused before the server sees them (the SDK peer logs every request it receives).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

import mcpfsm
from tests.gate.conftest import call, control, headers, running

LIE = "analytics-lie"
SQL_ARGS = {"query": "select 1", "database": "analytics"}


@contextmanager
def gated(app: str, server: str, *options: str) -> Iterator[str]:
    with running([sys.executable, "-m", "tests.gate.gated", "--app", app, "--server", server, *options]) as (_, url):
        yield url


@pytest.mark.parametrize("server", ["uvicorn", "hypercorn"])
async def test_the_sdk_server_behind_the_gate(server: str) -> None:
    with gated("sdk", server) as url:
        async with mcpfsm.Client.http(url) as client:
            tools = await client.tools()
            sql = tools.get("execute-sql")
            assert sql is not None and sql.mirrored[("database",)] == "Mcp-Param-Database"
            result = await sql.call(SQL_ARGS)
            assert not result.is_error and "analytics" in result.text
        gate = control(url, "/control/gate")
        # The client's own tools/list went through the gate and taught it: no fetch of the gate's own.
        assert gate["stats"]["learned"] >= 1 and gate["fetches"] == 0 and gate["stats"]["rejected"] == 0
        before = [entry["jsonrpc_method"] for entry in control(url, "/control/log")]
        sent = headers(name="execute-sql", Database=LIE)
        lie = httpx.post(url, headers=sent, content=call("execute-sql", SQL_ARGS), timeout=30)
        assert lie.status_code == 400 and lie.json()["error"]["code"] == -32020
        assert "Mcp-Param-Database" in lie.json()["error"]["message"] and LIE not in lie.text
        assert [entry["jsonrpc_method"] for entry in control(url, "/control/log")] == before
        assert control(url, "/control/gate")["stats"]["rejected:mismatch:Mcp-Param-Database"] == 1


async def test_the_fastmcp_server_behind_the_gate() -> None:
    with gated("fastmcp", "uvicorn") as url:
        async with mcpfsm.Client.http(url) as client:
            assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
        lie = httpx.post(url, headers=headers(name="echo"), content=call("add", {"a": 1, "b": 1}), timeout=30)
        assert lie.status_code == 400 and "Mcp-Name" in lie.json()["error"]["message"]
        gate = control(url, "/control/gate")
        assert gate["stats"]["forwarded"] >= 2 and gate["stats"]["rejected:mismatch:Mcp-Name"] == 1


async def test_the_proxy_in_front_of_the_sdk_server() -> None:
    from tests.gate.conftest import proxy_process
    from tests.support.peer.fixtures import start_http_peer

    with start_http_peer(mode="modern") as peer, proxy_process(peer.url) as (_, url):
        async with mcpfsm.Client.http(url) as client:
            # By name nothing is mirrored: the gate fetches the schema, refuses the call (-32020, never forwarded),
            # the client relists through the gate (which learns it in passing) and retries with its headers.
            result = await client.call_tool("execute-sql", SQL_ARGS)
            assert not result.is_error and "analytics" in result.text
            listed = (await client.tools()).get("execute-sql")
            assert listed is not None and not (await listed.call(SQL_ARGS)).is_error
        methods = [entry["jsonrpc_method"] for entry in peer.log()]
        # The gate's one fetch, the client's relist, the retried call; then the client's own listing (the SDK says
        # ttlMs 0, so the client lists again) and the call through the listed tool.
        assert methods == ["server/discover", "tools/list", "tools/list", "tools/call", "tools/list", "tools/call"]
        calls = [entry for entry in peer.log() if entry["jsonrpc_method"] == "tools/call"]
        assert all(entry["headers"]["mcp-param-database"] == "analytics" for entry in calls)
        lie = httpx.post(url, headers=headers(name="execute-sql", Database=LIE), content=call("execute-sql", SQL_ARGS))
        assert lie.status_code == 400 and lie.json()["error"]["code"] == -32020
        assert [entry["jsonrpc_method"] for entry in peer.log()] == methods
