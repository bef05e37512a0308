"""The test peer behaves as tests/support/peer/README.md says, checked with raw httpx (no mcpfsm)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx
import pytest

from tests.support.peer.fixtures import INPUT_TOOLS, TOOLS, HttpPeer, start_http_peer

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "smoke", "version": "0"},
}
SERVER_INFO = {"name": "mcpfsm-test-peer", "title": "mcpfsm test peer", "version": "1.0.0"}
SERVER_INFO_META = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}
INSTRUCTIONS = "Use execute-sql for queries; echo repeats text."
ACCEPT = {"Accept": "application/json, text/event-stream"}
SQL_ARGS = {"query": "select 1", "database": "analytics", "region": "us-west1", "options": {"readOnly": True}}
MISSING_SESSION = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {"code": -32600, "message": "Bad Request: Missing session ID"},
}
SQL_HEADERS = {"Mcp-Param-Database": "analytics", "Mcp-Param-Read-Only": "true"}

# The tools of mcpfsm/_tooling/demo_input.py, listed after the peer's own.


def modern_post(
    peer: HttpPeer,
    method: str,
    params: Mapping[str, Any] | None = None,
    headers: Mapping[str, str | None] | None = None,
) -> httpx.Response:
    """POST a 2026-07-28 request with the standard headers; a None in `headers` removes that header."""
    standard: dict[str, str | None] = {**ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method == "tools/call" and params is not None:
        standard["Mcp-Name"] = params["name"]
    merged = {**standard, **(headers or {})}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**(params or {}), "_meta": ENVELOPE}}
    return httpx.post(peer.url, json=body, headers={k: v for k, v in merged.items() if v is not None})


def sse_messages(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE body (events separated by blank lines, CRLF or LF)."""
    events = text.replace("\r\n", "\n").split("\n\n")
    datas = ["\n".join(line[5:].lstrip() for line in e.split("\n") if line.startswith("data:")) for e in events]
    return [json.loads(d) for d in datas if d]


def legacy_initialize(peer: HttpPeer) -> httpx.Response:
    """POST a 2025-11-25 `initialize` the way a handshake-era client opens a session."""
    client_info = {"name": "smoke", "version": "0"}
    params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": client_info}
    return httpx.post(
        peer.url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}, headers=ACCEPT
    )


def mismatch_body(message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "error": {"code": -32020, "message": message}}


def test_modern_discover_answer(peer: HttpPeer) -> None:
    response = modern_post(peer, "server/discover")

    assert (response.status_code, response.headers["content-type"]) == (200, "application/json")
    assert "mcp-session-id" not in response.headers
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "cacheScope": "private",
            "capabilities": {
                "completions": {},
                "logging": {},
                "prompts": {"listChanged": True},
                "resources": {"listChanged": True, "subscribe": True},
                "tools": {"listChanged": True},
            },
            "instructions": INSTRUCTIONS,
            "resultType": "complete",
            "supportedVersions": [MODERN],
            "ttlMs": 0,
            "_meta": SERVER_INFO_META,
        },
    }


def test_modern_tools_list_shows_x_mcp_header_annotations(peer: HttpPeer) -> None:
    result = modern_post(peer, "tools/list").json()["result"]

    assert [tool["name"] for tool in result["tools"]] == TOOLS
    assert "nextCursor" not in result
    assert result["tools"][0]["inputSchema"] == {
        "type": "object",
        "properties": {
            "query": {"title": "Query", "type": "string"},
            "database": {"title": "Database", "type": "string", "x-mcp-header": "Database"},
            "region": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Region"},
            "options": {
                "additionalProperties": False,
                "default": None,
                "properties": {"readOnly": {"type": "boolean", "x-mcp-header": "Read-Only"}},
                "type": "object",
            },
        },
        "required": ["query", "database"],
        "title": "execute_sqlArguments",
    }


def test_tools_call_with_mirrored_headers_succeeds(peer: HttpPeer) -> None:
    response = modern_post(peer, "tools/call", {"name": "execute-sql", "arguments": SQL_ARGS}, SQL_HEADERS)

    assert (response.status_code, response.headers["content-type"]) == (200, "application/json")
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "content": [{"type": "text", "text": "executed 'select 1' on 'analytics'"}],
            "isError": False,
            "resultType": "complete",
            "structuredContent": SQL_ARGS,
            "_meta": SERVER_INFO_META,
        },
    }
    [entry] = peer.log()
    assert entry == {
        "http_method": "POST",
        "jsonrpc_method": "tools/call",
        "id": 1,
        "name": "execute-sql",
        "headers": {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "mcp-method": "tools/call",
            "mcp-name": "execute-sql",
            "mcp-param-database": "analytics",
            "mcp-param-read-only": "true",
            "mcp-protocol-version": MODERN,
        },
        "header_list": entry["header_list"],
        "status": 200,
        "answered_by": "sdk",
        "input": None,
        "trace": None,
    }
    assert sorted(map(tuple, entry["header_list"])) == sorted(entry["headers"].items())


def test_stale_listing_after_evolve_gets_header_mismatch(peer: HttpPeer) -> None:
    peer.control({"action": "evolve"})
    call = {"name": "execute-sql", "arguments": SQL_ARGS}

    stale = modern_post(peer, "tools/call", call, SQL_HEADERS)
    region = modern_post(peer, "tools/list").json()["result"]["tools"][0]["inputSchema"]["properties"]["region"]
    fresh = modern_post(peer, "tools/call", call, {**SQL_HEADERS, "Mcp-Param-Region": "us-west1"})

    assert (stale.status_code, stale.headers["content-type"]) == (400, "application/json")
    assert stale.json() == mismatch_body(
        "Mcp-Param-Region header is missing but the request body's 'region' argument is present"
    )
    assert region == {"default": None, "title": "Region", "type": "string", "x-mcp-header": "Region"}
    assert (fresh.status_code, fresh.json()["result"]["structuredContent"]) == (200, SQL_ARGS)


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        pytest.param(
            {"Mcp-Method": None}, "mcp-method header does not match the request body's method", id="no-method"
        ),
        pytest.param(
            {"Mcp-Method": "tools/list"},
            "mcp-method header does not match the request body's method",
            id="bad-method",
        ),
        pytest.param(
            {"Mcp-Name": None},
            "mcp-name header does not match the request body's 'name' parameter",
            id="no-name",
        ),
        pytest.param(
            {"Mcp-Name": "fail"},
            "mcp-name header does not match the request body's 'name' parameter",
            id="bad-name",
        ),
        pytest.param(
            {"MCP-Protocol-Version": "2099-01-01"},
            "mcp-protocol-version header does not match the request envelope's protocol version",
            id="bad-version",
        ),
        pytest.param(
            {"Mcp-Param-Text": "hi"},
            None,
            id="unannotated-param-header-ignored",
        ),
    ],
)
def test_routing_headers_are_checked_against_the_body(
    peer: HttpPeer, headers: dict[str, str | None], message: str | None
) -> None:
    response = modern_post(peer, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}, headers)

    if message is None:
        assert (response.status_code, response.json()["result"]["content"]) == (
            200,
            [{"type": "text", "text": "hi"}],
        )
    else:
        assert (response.status_code, response.json()) == (400, mismatch_body(message))


def test_missing_version_header_routes_to_the_legacy_transport(peer: HttpPeer) -> None:
    response = modern_post(peer, "server/discover", headers={"MCP-Protocol-Version": None})

    assert (response.status_code, response.json()) == (
        400,
        MISSING_SESSION,
    )


@pytest.mark.parametrize(
    ("delivery", "status", "content_type"),
    [
        pytest.param("http400", 400, "application/json", id="http400"),
        pytest.param("json200", 200, "application/json", id="json200"),
        pytest.param("sse", 200, "text/event-stream; charset=utf-8", id="sse"),
    ],
)
def test_injected_mismatch_answers_the_next_calls_then_stops(
    peer: HttpPeer, delivery: str, status: int, content_type: str
) -> None:
    peer.control({"action": "mismatch", "tool": "echo", "count": 2, "delivery": delivery})
    call = {"name": "echo", "arguments": {"text": "hi"}}

    answers = [modern_post(peer, "tools/call", call) for _ in range(3)]

    injected = mismatch_body("Mcp-Param header mismatch injected by the test peer for 'echo'")
    for answer in answers[:2]:
        body = sse_messages(answer.text)[0] if delivery == "sse" else answer.json()
        assert (answer.status_code, answer.headers["content-type"], body) == (status, content_type, injected)
    assert answers[2].status_code == 200
    assert [e["answered_by"] for e in peer.log()] == ["peer:mismatch", "peer:mismatch", "sdk"]


def test_remove_drops_the_tool_from_the_listing_and_reset_restores_it(peer: HttpPeer) -> None:
    removed = peer.control({"action": "remove", "tool": "echo"})
    names_after_remove = [t["name"] for t in modern_post(peer, "tools/list").json()["result"]["tools"]]
    vanished = modern_post(peer, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}).json()["result"]
    peer.control({"action": "reset"})
    names_after_reset = [t["name"] for t in modern_post(peer, "tools/list").json()["result"]["tools"]]

    assert removed["tools"] == ["execute-sql", "slow", "fail"]
    assert names_after_remove == ["execute-sql", "slow", "fail", *INPUT_TOOLS]
    assert (vanished["isError"], vanished["content"]) == (
        True,
        [{"type": "text", "text": "Unknown tool: echo"}],
    )
    assert names_after_reset == TOOLS


def test_paginate_splits_tools_list(peer: HttpPeer) -> None:
    peer.control({"action": "paginate", "page_size": 3})

    first = modern_post(peer, "tools/list").json()["result"]
    second = modern_post(peer, "tools/list", {"cursor": first["nextCursor"]}).json()["result"]

    assert ([t["name"] for t in first["tools"]], first["nextCursor"]) == (
        ["execute-sql", "echo", "slow"],
        "page:3",
    )
    assert ([t["name"] for t in second["tools"]], second["nextCursor"]) == (["fail", "ask-name", "ask-model"], "page:6")


@pytest.mark.parametrize(
    ("action", "status"),
    [
        pytest.param({"action": "explode"}, 400, id="unknown-action"),
        pytest.param({"action": "remove", "tool": "nope"}, 404, id="unknown-tool"),
        pytest.param({"action": "mismatch", "tool": "echo", "count": -1}, 400, id="negative-count"),
    ],
)
def test_control_refuses_bad_actions(peer: HttpPeer, action: dict[str, Any], status: int) -> None:
    with pytest.raises(httpx.HTTPStatusError) as refused:
        peer.control(action)

    assert refused.value.response.status_code == status


def test_slow_streams_progress_and_log_when_asked(peer: HttpPeer) -> None:
    meta = {**ENVELOPE, "progressToken": "p", "io.modelcontextprotocol/logLevel": "info"}
    params = {"name": "slow", "arguments": {"seconds": 0.1}, "_meta": meta}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {**ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "slow"}

    response = httpx.post(peer.url, json=body, headers=headers)

    assert response.headers["content-type"] == "text/event-stream"
    assert [m.get("method") for m in sse_messages(response.text)] == [
        "notifications/message",
        *["notifications/progress"] * 4,
        None,
    ]
    assert sse_messages(response.text)[-1]["result"]["content"] == [{"type": "text", "text": "done"}]


def test_legacy_mode_handshake_and_refused_probe() -> None:
    with start_http_peer(mode="legacy") as peer:
        probe = modern_post(peer, "server/discover")
        init = legacy_initialize(peer)
        session = {**ACCEPT, "Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY}
        initialized = httpx.post(
            peer.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session
        )
        call = httpx.post(
            peer.url,
            json={
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "x"}},
            },
            headers=session,
        )

    assert (probe.status_code, probe.json()) == (
        400,
        MISSING_SESSION,
    )
    assert (init.status_code, init.headers["content-type"]) == (200, "text/event-stream")
    assert sse_messages(init.text) == [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "capabilities": {
                    "completions": {},
                    "logging": {},
                    "prompts": {"listChanged": True},
                    "resources": {"listChanged": True, "subscribe": True},
                    "tools": {"listChanged": True},
                },
                "instructions": INSTRUCTIONS,
                "protocolVersion": LEGACY,
                "serverInfo": SERVER_INFO,
            },
        }
    ]
    assert initialized.status_code == 202
    assert sse_messages(call.text) == [
        {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "x"}], "isError": False}}
    ]
    assert peer.process.returncode == 0


def test_modern_mode_refuses_initialize_with_unsupported_version() -> None:
    with start_http_peer(mode="modern", json_response=True) as peer:
        init = legacy_initialize(peer)
        discover = modern_post(peer, "server/discover")

    assert (init.status_code, init.json()) == (
        400,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {"supported": [MODERN], "requested": LEGACY},
            },
        },
    )
    assert (discover.status_code, discover.json()["result"]["supportedVersions"]) == (200, [MODERN])
