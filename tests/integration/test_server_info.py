"""``client.server`` and ``client.discover()``: what the server says about itself, in both eras.

Against the official SDK's server (the peer, with a title and instructions) and, for the edge cases, the
``FakeServer`` (MCP 2026-07-28 "Discovery"; MCP 2025-11-25 "Lifecycle").
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Final

import httpx
import pytest

import mcpfsm
from mcpfsm._tooling.cli.tools import render_instructions
from mcpfsm._tooling.demo_server import PEER_INSTRUCTIONS, PEER_NAME, PEER_TITLE, PEER_VERSION
from tests.support.clirun import mcpfsm as run_cli
from tests.support.fakeserver import MODERN, URL, FakeServer, result, rpc_error
from tests.support.peer.fixtures import HttpPeer, start_http_peer

LEGACY: Final = "2025-11-25"
PEER_CAPABILITIES: Final = {
    "completions": {},
    "logging": {},
    "prompts": {"listChanged": True},
    "resources": {"listChanged": True, "subscribe": True},
    "tools": {"listChanged": True},
}
NOT_CONNECTED: Final = "the server is not known before the client connects: use async with, or await connect()"
PINNED: Final = (
    "a client pinned to 2026-07-28 does not send server/discover when it connects: await client.discover() asks for it"
)


def rpc_methods(peer: HttpPeer) -> list[str | None]:
    return [entry["jsonrpc_method"] for entry in peer.log() if entry["http_method"] == "POST"]


def described(info: mcpfsm.ServerInfo) -> tuple[Any, ...]:
    return (info.name, info.version, info.title, info.protocol_version, info.capabilities, info.instructions)


PEER_DESCRIBED: Final = (PEER_NAME, PEER_VERSION, PEER_TITLE, MODERN, PEER_CAPABILITIES, PEER_INSTRUCTIONS)


async def test_auto_reads_the_discover_result_of_the_sdk_server(peer: HttpPeer) -> None:
    async with mcpfsm.Client.http(peer.url) as client:
        info = client.server
        again = await client.discover()

    assert described(info) == PEER_DESCRIBED
    assert info.raw == {
        "cacheScope": "private",
        "capabilities": PEER_CAPABILITIES,
        "instructions": PEER_INSTRUCTIONS,
        "resultType": "complete",
        "supportedVersions": [MODERN],
        "ttlMs": 0,
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": PEER_NAME, "title": PEER_TITLE, "version": "1.0.0"}},
    }
    assert again is info
    assert rpc_methods(peer) == ["server/discover"]


async def test_legacy_reads_the_initialize_result_of_the_sdk_server(peer: HttpPeer) -> None:
    async with mcpfsm.Client.http(peer.url, protocol=LEGACY) as client:
        info = client.server
        again = await client.discover(fresh=True)

    assert described(info) == (PEER_NAME, PEER_VERSION, PEER_TITLE, LEGACY, PEER_CAPABILITIES, PEER_INSTRUCTIONS)
    assert info.raw == {
        "capabilities": PEER_CAPABILITIES,
        "instructions": PEER_INSTRUCTIONS,
        "protocolVersion": LEGACY,
        "serverInfo": {"name": PEER_NAME, "title": PEER_TITLE, "version": "1.0.0"},
    }
    assert again is info
    assert rpc_methods(peer) == ["initialize", "notifications/initialized"]


async def test_auto_falls_back_to_initialize_and_reads_it() -> None:
    with start_http_peer(mode="legacy") as legacy:
        async with mcpfsm.Client.http(legacy.url) as client:
            info = client.server

    assert described(info) == (PEER_NAME, PEER_VERSION, PEER_TITLE, LEGACY, PEER_CAPABILITIES, PEER_INSTRUCTIONS)


async def test_a_pinned_modern_client_asks_only_when_discover_is_called(peer: HttpPeer) -> None:
    async with mcpfsm.Client.http(peer.url, protocol=MODERN) as client:
        with pytest.raises(mcpfsm.McpError, match=rf"^{re.escape(PINNED)}$"):
            _ = client.server
        before = rpc_methods(peer)
        info = await client.discover()
        known = client.server

    assert before == []
    assert described(info) == PEER_DESCRIBED
    assert known is info
    assert rpc_methods(peer) == ["server/discover"]


async def test_stdio_reads_the_discover_result_of_the_sdk_server() -> None:
    command = [sys.executable, "-m", "mcpfsm._tooling.demo_server", "--stdio"]
    async with mcpfsm.Client.stdio(command) as client:
        info = client.server

    assert described(info) == PEER_DESCRIBED


# --- unit: the FakeServer ----------------------------------------------------------------------------


async def test_before_connecting_server_raises_and_discover_connects(fake: FakeServer) -> None:
    client = fake.client()
    with pytest.raises(mcpfsm.McpError, match=rf"^{re.escape(NOT_CONNECTED)}$"):
        _ = client.server
    async with client:
        info = await client.discover()

    assert (info.name, info.version, info.title, info.protocol_version, info.capabilities, info.instructions) == (
        None, None, None, MODERN, {}, None,
    )
    assert fake.methods() == ["server/discover"]


@pytest.mark.parametrize(
    ("discovered", "expected"),
    [
        pytest.param(
            {"supportedVersions": [MODERN], "capabilities": {"tools": {}}, "instructions": "Be brief.",
             "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "2", "title": "S"}}},
            ("s", "2", "S", MODERN, {"tools": {}}, "Be brief."),
            id="stamp",
        ),
        pytest.param(
            {"supportedVersions": [MODERN], "serverInfo": {"name": "top", "version": "3"}},
            ("top", "3", None, MODERN, {}, None),
            id="top-level-serverInfo",
        ),
        pytest.param(
            {"supportedVersions": [MODERN], "capabilities": [], "instructions": 7,
             "_meta": {"io.modelcontextprotocol/serverInfo": {"name": 1, "version": None, "title": ["x"]}}},
            (None, None, None, MODERN, {}, None),
            id="malformed-fields-read-as-absent",
        ),
        pytest.param(
            {"supportedVersions": [MODERN], "_meta": "not an object"},
            (None, None, None, MODERN, {}, None),
            id="malformed-meta",
        ),
    ],
)
async def test_discover_results_are_read_leniently(
    fake: FakeServer, discovered: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    fake.queue("server/discover", result(discovered))
    async with fake.client() as client:
        info = client.server

    assert described(info) == expected
    assert info.raw == discovered


async def test_fresh_asks_again_and_the_cache_answers_otherwise(fake: FakeServer) -> None:
    first = {"supportedVersions": [MODERN], "instructions": "one", "ttlMs": 60_000}
    second = {"supportedVersions": [MODERN], "instructions": "two", "ttlMs": 60_000}
    fake.queue("server/discover", result(first), result(second))
    async with fake.client(protocol=MODERN) as client:
        cached_first = (await client.discover()).instructions
        cached = (await client.discover()).instructions
        refreshed = (await client.discover(fresh=True)).instructions
        known = client.server.instructions

    assert (cached_first, cached, refreshed, known) == ("one", "one", "two", "two")
    assert fake.methods() == ["server/discover", "server/discover"]


async def test_a_failed_discover_leaves_server_unknown_and_the_client_usable(fake: FakeServer) -> None:
    fake.queue("server/discover", rpc_error(-32603, "boom", status=200))
    async with fake.client(protocol=MODERN) as client:
        with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32603: boom$"):
            await client.discover()
        with pytest.raises(mcpfsm.McpError, match=rf"^{re.escape(PINNED)}$"):
            _ = client.server
        info = await client.discover()

    assert info.protocol_version == MODERN
    assert fake.methods() == ["server/discover", "server/discover"]


async def test_the_legacy_server_info_follows_a_renewed_session() -> None:
    sessions: list[str] = []

    async def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        if request.method != "POST" or "id" not in body:
            return httpx.Response(405 if request.method == "GET" else 202)
        if body["method"] == "initialize":
            sessions.append(f"s{len(sessions) + 1}")
            identity = {"name": f"server of {sessions[-1]}", "version": "1"}
            answer = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": identity}
            reply = {"jsonrpc": "2.0", "id": body["id"], "result": answer}
            return httpx.Response(200, json=reply, headers={"Mcp-Session-Id": sessions[-1]})
        if request.headers.get("mcp-session-id") == "s1":
            return httpx.Response(404)
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": {"tools": []}})

    transport = httpx.MockTransport(handle)
    async with mcpfsm.Client.http(URL, protocol=LEGACY, http_transport=transport) as client:
        first = client.server.name
        await client.tools()
        second = client.server.name

    assert (first, second) == ("server of s1", "server of s2")


# --- the CLI: mcpfsm tools --instructions ---------------------------------------------------------------


@pytest.mark.parametrize("era", [MODERN, LEGACY, "auto"])
def test_the_tools_command_prints_the_instructions_first(peer: HttpPeer, era: str) -> None:
    run = run_cli("tools", peer.url, "--instructions", "--protocol", era)

    assert (run.code, run.stderr) == (0, "")
    lines = run.stdout.splitlines()
    assert lines[:2] == ["instructions:", f"  {PEER_INSTRUCTIONS}"]
    # The tools table follows (its column widths depend on the era's parameters).
    assert lines[2].split() == ["TOOL", "PARAMETER", "TYPE", "REQUIRED", "MIRRORED", "HEADER"]


def test_the_tools_command_puts_the_instructions_into_its_json(peer: HttpPeer) -> None:
    run = run_cli("tools", peer.url, "--instructions", "--json")

    assert (run.code, run.stderr) == (0, "")
    listing = json.loads(run.stdout)
    assert (list(listing)[:3], listing["instructions"]) == (["protocol", "instructions", "tools"], PEER_INSTRUCTIONS)


@pytest.mark.parametrize(
    ("instructions", "block"),
    [
        pytest.param(None, "instructions: none", id="none"),
        pytest.param(
            "line one\nline\ttwo \x1b[31mred\x9b",
            "instructions:\n  line one\n  line\ttwo \\u001b[31mred\\u009b",
            id="escaped",
        ),
    ],
)
def test_instructions_are_shown_line_by_line_with_control_characters_escaped(
    instructions: str | None, block: str
) -> None:
    assert render_instructions(instructions) == block
