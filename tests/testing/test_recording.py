"""Recording at the transport seam against real servers (the official SDK's and fastmcp's, over HTTP and stdio, in
both eras), and replaying: in process and over HTTP, with the same results, notifications, input and the same
(machine, state, trigger) sequence as the recording."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm.testing import replay, serve
from tests.support.fastmcp_peer import FastmcpServer
from tests.support.peer.fixtures import HttpPeer
from tests.testing.agents import (
    ALLOWED_REQUEST,
    ALLOWED_RESPONSE,
    FASTMCP_STDIO,
    SDK_STDIO,
    Session,
    cassette_lines,
    fastmcp_agent,
    sdk_agent,
    stdio_options,
)

ERAS: Final = {"modern": ("auto", "2026-07-28"), "legacy": ("2025-11-25", "2025-11-25")}
START: Final = 120.0


def check_the_file(path: Path, *, server: Any, protocol: str, http: bool) -> list[dict[str, Any]]:
    lines = cassette_lines(path)
    header, exchanges = lines[0], lines[1:]
    assert set(header) == {"mcpfsm_cassette", "recorded_at", "server", "protocol"}
    assert (header["mcpfsm_cassette"], header["server"], header["protocol"]) == (1, server, protocol)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", header["recorded_at"])
    assert [exchange["seq"] for exchange in exchanges] == list(range(1, len(exchanges) + 1))
    for exchange in exchanges:
        assert set(exchange) == {"seq", "request", "response", "elapsed_ms"}
        if http:
            assert set(exchange["request"]) == {"message", "headers"}
            assert set(exchange["response"]) == {"status", "headers", "messages"}
            names = set(exchange["request"]["headers"])
            assert {n for n in names if not n.startswith("Mcp-Param-")} <= ALLOWED_REQUEST, names
            assert set(exchange["response"]["headers"]) <= ALLOWED_RESPONSE
        else:
            assert (set(exchange["request"]), set(exchange["response"])) == ({"message"}, {"messages"})
    return exchanges


async def replayed(path: Path, agent: Any, protocol: str) -> Session:
    session = Session()
    async with mcpfsm.Client(replay(path), protocol=protocol, **session.options()) as client:
        await agent(client, session)
    return session


@pytest.mark.parametrize("era", ERAS)
async def test_the_sdk_server_over_http_recorded_and_replayed(era: str, peer: HttpPeer, tmp_path: Path) -> None:
    protocol, settled = ERAS[era]
    path = tmp_path / "sdk.jsonl"
    recording = Session()

    async def evolve() -> None:
        await trio.to_thread.run_sync(peer.control, {"action": "evolve"})

    async with mcpfsm.Client.http(peer.url, protocol=protocol, record=path, **recording.options()) as client:
        await sdk_agent(client, recording, evolve if era == "modern" else None)
    exchanges = check_the_file(path, server=peer.url, protocol=settled, http=True)
    methods = [exchange["request"]["message"]["method"] for exchange in exchanges]
    if era == "modern":
        assert methods[:2] == ["server/discover", "tools/list"]
        # The recovery is in the recording: the refused call, the relist, the retry with the new header.
        refused, relist, retry = exchanges[-3:]
        assert (refused["response"]["status"], refused["response"]["messages"][-1]["error"]["code"]) == (400, -32020)
        assert relist["request"]["message"]["method"] == "tools/list"
        assert retry["request"]["headers"]["Mcp-Param-Region"] == "eu-west"
        assert "Mcp-Session-Id" not in str([e["request"]["headers"] for e in exchanges])
        assert ("tool-call", "relisting", "mismatched") in recording.path[-1]
        # The user's answer (the agent typed "Grace") is not in the resend the cassette keeps; its action is.
        resent = [
            e["request"]["message"]["params"]
            for e in exchanges
            if "inputResponses" in e["request"]["message"].get("params", {})
        ]
        answers = [answer for params in resent for answer in params["inputResponses"].values()]
        assert answers and all(answer == {"action": "accept", "content": "[answer]"} for answer in answers)
    else:
        assert methods[:3] == ["initialize", "notifications/initialized", "tools/list"]
        assert exchanges[1]["response"] == {"status": 202, "headers": {}, "messages": []}
        assert all("Mcp-Method" not in e["request"]["headers"] for e in exchanges)
        # The slow tool's stream: its log message and progress before the response, in order.
        slow = next(e for e in exchanges if e["request"]["message"].get("params", {}).get("name") == "slow")
        assert slow["response"]["headers"]["Content-Type"] == "text/event-stream"
        assert [m.get("method", "response") for m in slow["response"]["messages"]] == [
            "notifications/message",
            *["notifications/progress"] * 4,
            "response",
        ]
        # The server's elicitation came on the call's own stream: recorded before the call's response.
        asked = next(e for e in exchanges if e["request"]["message"].get("params", {}).get("name") == "ask-name")
        kinds = [m.get("method", "response") for m in asked["response"]["messages"]]
        assert kinds == ["elicitation/create", "response"]
    assert recording.outputs[1] == {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}
    assert recording.asked and recording.notifications

    again = await replayed(path, sdk_agent, protocol)
    assert (again.outputs, again.notifications, again.asked, again.path) == (
        recording.outputs,
        recording.notifications,
        recording.asked,
        recording.path,
    )
    served = Session()
    async with serve(path) as url, mcpfsm.Client.http(url, protocol=protocol, **served.options()) as client:
        await sdk_agent(client, served)
    assert (served.outputs, served.notifications, served.asked, served.path) == (
        recording.outputs,
        recording.notifications,
        recording.asked,
        recording.path,
    )


@pytest.mark.parametrize("era", ERAS)
async def test_fastmcp_over_http_recorded_and_replayed(era: str, fastmcp_http: FastmcpServer, tmp_path: Path) -> None:
    protocol, settled = ERAS[era]
    path = tmp_path / "fastmcp.jsonl"
    recording = Session()
    async with mcpfsm.Client.http(fastmcp_http.url, protocol=protocol, record=path, **recording.options()) as client:
        await fastmcp_agent(client, recording)
    check_the_file(path, server=fastmcp_http.url, protocol=settled, http=True)
    assert recording.outputs == [["add", "echo", "pid"], {"result": 42}, "hi"]
    again = await replayed(path, fastmcp_agent, protocol)
    assert (again.outputs, again.path) == (recording.outputs, recording.path)
    served = Session()
    async with serve(path) as url, mcpfsm.Client.http(url, protocol=protocol, **served.options()) as client:
        await fastmcp_agent(client, served)
    assert (served.outputs, served.path) == (recording.outputs, recording.path)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    ("command", "agent"), [(SDK_STDIO, sdk_agent), (FASTMCP_STDIO, fastmcp_agent)], ids=["sdk", "fastmcp"]
)
async def test_stdio_servers_recorded_and_replayed(era: str, command: list[str], agent: Any, tmp_path: Path) -> None:
    protocol, settled = ERAS[era]
    path = tmp_path / "stdio.jsonl"
    recording = Session()
    with trio.fail_after(START):
        async with mcpfsm.Client.stdio(
            command, protocol=protocol, record=path, **stdio_options(), **recording.options()
        ) as client:
            await agent(client, recording)
    exchanges = check_the_file(path, server=command, protocol=settled, http=False)
    if agent is sdk_agent:
        # One reader task on stdio: the progress notifications still go with the call that asked for them.
        slow = next(e for e in exchanges if e["request"]["message"].get("params", {}).get("name") == "slow")
        assert [m.get("method", "response") for m in slow["response"]["messages"]][-2:] == [
            "notifications/progress",
            "response",
        ]
    again = await replayed(path, agent, protocol)
    assert (again.outputs, again.notifications, again.asked, again.path) == (
        recording.outputs,
        recording.notifications,
        recording.asked,
        recording.path,
    )


async def test_a_cassette_is_written_afresh_and_each_exchange_as_it_completes(peer: HttpPeer, tmp_path: Path) -> None:
    path = tmp_path / "fresh.jsonl"
    path.write_text("an old cassette that must not survive\n", encoding="utf-8")
    async with mcpfsm.Client.http(peer.url, record=path) as client:
        await client.tools()
        # Written before the client closes: the header and both exchanges so far.
        lines = cassette_lines(path)
        assert [line.get("request", {}).get("message", {}).get("method") for line in lines] == [
            None,
            "server/discover",
            "tools/list",
        ]
        await client.call_tool("echo", {"text": "one more"})
        assert len(cassette_lines(path)) == 4
    assert path.stat().st_mode & 0o777 == 0o600


async def test_a_client_that_never_connects_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "never.jsonl"
    mcpfsm.Client.http("http://127.0.0.1:9/mcp", record=path)
    assert not path.exists()


async def test_a_cassette_that_cannot_be_created_fails_the_connect_naming_it(peer: HttpPeer, tmp_path: Path) -> None:
    path = tmp_path / "missing-directory" / "c.jsonl"
    with pytest.raises(FileNotFoundError, match="missing-directory"):
        async with mcpfsm.Client.http(peer.url, record=path):
            pass


async def test_without_record_no_recorder_is_in_the_path(peer: HttpPeer, tmp_path: Path) -> None:
    from mcpfsm._transports.http import HttpTransport
    from mcpfsm._transports.recorder import RecordingTransport

    plain = mcpfsm.Client.http(peer.url)
    assert type(plain.transport) is HttpTransport
    recorded = mcpfsm.Client.http(peer.url, record=tmp_path / "c.jsonl")
    assert isinstance(recorded.transport, RecordingTransport)
    assert type(recorded.transport.inner) is HttpTransport
    assert recorded.transport.url == peer.url


def test_a_group_refuses_record_one_cassette_records_one_server(tmp_path: Path) -> None:
    config = {"mcpServers": {"a": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}
    with pytest.raises(ValueError, match=r"^record= records one server's session: give it to the member's Client"):
        mcpfsm.ClientGroup(config, record=tmp_path / "group.jsonl")
    assert not (tmp_path / "group.jsonl").exists()


async def test_record_is_a_client_option_and_a_recording_lists_for_itself(peer: HttpPeer, tmp_path: Path) -> None:
    await trio.to_thread.run_sync(
        peer.control, {"action": "cache_hints", "hints": {"tools/list": {"ttlMs": 60000, "cacheScope": "public"}}}
    )
    store = mcpfsm.MemoryStore()
    async with mcpfsm.Client.http(peer.url, store=store) as first:
        await first.tools()
        assert first.cache is not None and first.cache.stats.shared_hits == 0
    # A second client of the same store would take the listing from it; a recording one asks the server, so that
    # the listing is in its cassette.
    path = tmp_path / "options.jsonl"
    options = mcpfsm.ClientOptions(record=path, store=store)
    async with mcpfsm.Client.http(peer.url, options=options) as client:
        assert "echo" in (await client.tools()).names
    methods = [line["request"]["message"]["method"] for line in cassette_lines(path)[1:]]
    assert methods == ["server/discover", "tools/list"]
    async with mcpfsm.Client.http(peer.url, store=store) as third:
        await third.tools()
        assert third.cache is not None and third.cache.stats.shared_hits >= 1  # the store does share, unrecorded
