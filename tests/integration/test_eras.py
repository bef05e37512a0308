"""One script, every era: mcpfsm against the official SDK server (tests/support/peer) in each of its modes.

The peer logs every request it receives with its headers (``GET /control/log``), so these tests
prove what each era put on the wire: modern requests carry ``Mcp-Method``/``Mcp-Name``/``Mcp-Param-*``
and no session; legacy requests carry ``Mcp-Session-Id`` and ``MCP-Protocol-Version`` after
``initialize`` and none of the modern headers (MCP 2025-11-25 and 2026-07-28).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import httpx
import pytest
import trio

import mcpfsm
from tests.support.peer.fixtures import TOOLS, HttpPeer, start_http_peer

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
SQL_ARGS: Final = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}
POST: Final = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
SLOW_PROGRESS: Final = [
    ("notifications/progress", {"progress": step, "total": 4, "message": f"step {step} of 4"}) for step in range(1, 5)
]
SLOW_LOG: Final = ("notifications/message", {"level": "info", "data": "slow: sleeping 0.2 s"})


@pytest.fixture(scope="module")
def peers() -> Iterator[dict[str, HttpPeer]]:
    with (
        start_http_peer("dual") as dual,
        start_http_peer("modern") as modern,
        start_http_peer("legacy") as legacy,
        start_http_peer("legacy", event_store=True, retry_ms=100) as resumable,
    ):
        yield {"dual": dual, "modern": modern, "legacy": legacy, "resumable": resumable}


def fresh(peers: dict[str, HttpPeer], mode: str) -> HttpPeer:
    peer = peers[mode]
    peer.control({"action": "reset"})
    return peer


async def script(client: mcpfsm.Client) -> dict[str, Any]:
    """What a user writes once: list, call an annotated tool, call by name."""
    tools = await client.tools()
    sql = tools.get("execute-sql")
    assert sql is not None
    by_tool = await sql.call(SQL_ARGS)
    by_name = await client.call_tool("execute-sql", SQL_ARGS)
    return {
        "tools": tools.names,
        "mirrored": sql.mirrored,
        "by_tool": (by_tool.text, by_tool.structured_content, by_tool.is_error),
        "by_name": (by_name.text, by_name.structured_content, by_name.is_error),
    }


EXECUTED: Final = ("executed 'select 1' on 'analytics'", SQL_ARGS, False)
MIRRORED: Final = {
    MODERN: {("database",): "Mcp-Param-Database", ("options", "readOnly"): "Mcp-Param-Read-Only"},
    LEGACY: {},
}

Wire = list[tuple[str, str | None, int | None, dict[str, str]]]


def wire(peer: HttpPeer) -> Wire:
    """The peer's log as (HTTP method, JSON-RPC method, status, headers), the session id replaced by ``<s>``.

    Repeated headers would show joined with ", ", so whole-dict equality also proves each went out once.
    """
    log = peer.log()
    sessions = {entry["headers"].get("mcp-session-id") for entry in log} - {None}
    assert len(sessions) <= 1, sessions
    return [
        (
            entry["http_method"],
            entry["jsonrpc_method"],
            entry["status"],
            {k: "<s>" if k == "mcp-session-id" else v for k, v in entry["headers"].items()},
        )
        for entry in log
    ]


def modern(method: str, status: int = 200, extra: dict[str, str] | None = None) -> tuple[str, str, int, dict[str, str]]:
    return ("POST", method, status, {**POST, "mcp-protocol-version": MODERN, "mcp-method": method, **(extra or {})})


def legacy(method: str | None, status: int = 200, http: str = "POST") -> tuple[str, str | None, int, dict[str, str]]:
    return (http, method, status, {**POST, "mcp-protocol-version": LEGACY, "mcp-session-id": "<s>"})


# The standalone stream a legacy session opens after notifications/initialized (MCP 2025-11-25).
STREAM_HEADERS: Final = {"accept": "text/event-stream", "mcp-protocol-version": LEGACY}
STREAM: Final = ("GET", None, 200, {**STREAM_HEADERS, "mcp-session-id": "<s>"})


SQL_PARAMS: Final = {"mcp-param-database": "analytics", "mcp-param-read-only": "true"}
MODERN_WIRE: Final = [
    modern("tools/list"),
    modern("tools/call", 200, {"mcp-name": "execute-sql", **SQL_PARAMS}),
    # By name nothing is mirrored; the SDK insists on its annotated headers (-32020), so the call
    # relists and retries once with the fresh definition's plan (SEP-2243).
    modern("tools/call", 400, {"mcp-name": "execute-sql"}),
    modern("tools/list"),
    modern("tools/call", 200, {"mcp-name": "execute-sql", **SQL_PARAMS}),
]
LEGACY_WIRE: Final = [
    ("POST", "initialize", 200, POST),
    legacy("notifications/initialized", 202),
    STREAM,
    legacy("tools/list"),
    # Annotations are inert on legacy connections: no Mcp-Param-*, and the SDK asks for none.
    legacy("tools/call"),
    legacy("tools/call"),
    legacy(None, 200, "DELETE"),
]
CASES: Final = {
    "dual-auto": ("dual", "auto", MODERN, [modern("server/discover"), *MODERN_WIRE]),
    "dual-pinned-modern": ("dual", MODERN, MODERN, MODERN_WIRE),
    "dual-pinned-legacy": ("dual", LEGACY, LEGACY, LEGACY_WIRE),
    "modern-auto": ("modern", "auto", MODERN, [modern("server/discover"), *MODERN_WIRE]),
    "modern-pinned-modern": ("modern", MODERN, MODERN, MODERN_WIRE),
    # The probe of a legacy-only server costs exactly one request: the refused server/discover.
    "legacy-auto": ("legacy", "auto", LEGACY, [modern("server/discover", 400), *LEGACY_WIRE]),
    "legacy-pinned-legacy": ("legacy", LEGACY, LEGACY, LEGACY_WIRE),
}


@pytest.mark.parametrize(("mode", "protocol", "era", "expected"), CASES.values(), ids=CASES.keys())
async def test_the_same_script_runs_in_every_era_and_each_sends_its_own_headers(
    peers: dict[str, HttpPeer], mode: str, protocol: str, era: str, expected: Wire
) -> None:
    peer = fresh(peers, mode)

    async with mcpfsm.Client.http(peer.url, protocol=protocol) as client:
        outcome = await script(client)
        assert client.protocol_version == era

    assert outcome == {"tools": TOOLS, "mirrored": MIRRORED[era], "by_tool": EXECUTED, "by_name": EXECUTED}
    assert wire(peer) == expected


async def test_a_legacy_pin_against_a_modern_only_server_follows_its_minus_32022(peers: dict[str, HttpPeer]) -> None:
    peer = fresh(peers, "modern")

    async with mcpfsm.Client.http(peer.url, protocol=LEGACY) as client:
        assert client.protocol_version == MODERN
        assert (await script(client))["by_name"] == EXECUTED

    assert wire(peer) == [("POST", "initialize", 400, POST), *MODERN_WIRE]


async def test_a_modern_pin_against_a_legacy_only_server_does_not_fall_back(peers: dict[str, HttpPeer]) -> None:
    peer = fresh(peers, "legacy")

    async with mcpfsm.Client.http(peer.url, protocol=MODERN) as client:
        with pytest.raises(mcpfsm.ProtocolError) as caught:
            await client.tools()

    # One server/discover confirms the server is not modern; the error names its era and the way out.
    assert str(caught.value) == (
        "the server does not speak protocol 2026-07-28, which was pinned: it answered tools/list as a server of"
        " the initialize era (2025-11-25, 2025-06-18, 2025-03-26) does (JSON-RPC error -32600: Bad Request:"
        " Missing session ID); use protocol='auto' to negotiate the era, or pin 2025-11-25"
    )
    assert isinstance(caught.value.__cause__, mcpfsm.RpcError) and caught.value.__cause__.code == -32600
    assert wire(peer) == [modern("tools/list", 400), modern("server/discover", 400)]


async def test_custom_headers_go_everywhere_but_cannot_spoof_protocol_headers(peers: dict[str, HttpPeer]) -> None:
    peer = fresh(peers, "dual")
    custom = {"X-Tenant": "acme", "Mcp-Method": "spoofed", "MCP-Session-Id": "spoofed"}

    async with mcpfsm.Client.http(peer.url, protocol=LEGACY, headers=custom) as client:
        await client.call_tool("echo", {"text": "hi"})
        session = client.session_id

    log = peer.log()
    assert [entry["headers"].get("mcp-method") for entry in log] == [None] * 5
    assert session is not None
    assert {entry["headers"].get("mcp-session-id") for entry in log[1:]} == {session}


async def test_legacy_annotations_are_inert_and_unmirrorable_values_pass(peers: dict[str, HttpPeer]) -> None:
    peer = fresh(peers, "legacy")

    async with mcpfsm.Client.http(peer.url) as client:
        sql = (await client.tools()).get("execute-sql")
        assert sql is not None
        # On a mirroring connection a non-boolean Read-Only value raises MirroringError before sending.
        result = await sql.call({**SQL_ARGS, "options": {"readOnly": "maybe"}})

    # The server's own argument validation answered, not mcpfsm's mirroring.
    assert (result.is_error, result.text.splitlines()[0]) == (
        True,
        "Error executing tool execute-sql: 1 validation error for execute_sqlArguments",
    )
    assert [entry["headers"].get("mcp-param-read-only") for entry in peer.log()] == [None] * len(peer.log())


# --- sessions ----------------------------------------------------------------------------------------------


async def test_an_expired_session_is_replaced_and_the_request_resent_with_a_new_id(peers: dict[str, HttpPeer]) -> None:
    peer = fresh(peers, "legacy")

    async with mcpfsm.Client.http(peer.url, protocol=LEGACY) as client:
        first = client.session_id
        assert first is not None
        # The server forgets the session (as after a restart or an idle timeout).
        httpx.delete(peer.url, headers={"Mcp-Session-Id": first, "MCP-Protocol-Version": LEGACY}).raise_for_status()
        peer.clear_log()

        assert (await client.call_tool("echo", {"text": "again"})).text == "again"
        second = client.session_id

    log = peer.log()
    assert [(e["http_method"], e["jsonrpc_method"], e["status"]) for e in log] == [
        ("POST", "tools/call", 404),
        ("POST", "initialize", 200),
        ("POST", "notifications/initialized", 202),
        ("GET", None, 200),
        ("POST", "tools/call", 200),
        ("DELETE", None, 200),
    ]
    assert [e["headers"].get("mcp-session-id") for e in log] == [first, None, second, second, second, second]
    assert first != second
    assert log[0]["id"] != log[4]["id"]


# --- notifications ------------------------------------------------------------------------------------------


def without_tokens(seen: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    return [(method, {k: v for k, v in params.items() if k != "progressToken"}) for method, params in seen]


@pytest.mark.parametrize(
    ("mode", "protocol", "expected"),
    [
        pytest.param("dual", MODERN, SLOW_PROGRESS, id="modern"),
        pytest.param("dual", LEGACY, [SLOW_LOG, *SLOW_PROGRESS], id="legacy"),
    ],
)
async def test_notifications_of_a_slow_call_reach_on_notification(
    peers: dict[str, HttpPeer], mode: str, protocol: str, expected: list[Any]
) -> None:
    peer = fresh(peers, mode)
    seen: list[tuple[str, dict[str, Any]]] = []

    async with mcpfsm.Client.http(peer.url, protocol=protocol, on_notification=lambda m, p: seen.append((m, p))) as c:
        assert (await c.call_tool("slow", {"seconds": 0.2})).text == "done"

    call = next(entry for entry in peer.log() if entry["jsonrpc_method"] == "tools/call")
    assert without_tokens(seen) == expected
    # mcpfsm asked for progress with the request id as the token.
    assert {p["progressToken"] for m, p in seen if m == "notifications/progress"} == {call["id"]}


async def test_modern_log_messages_need_a_log_level_in_meta(peers: dict[str, HttpPeer]) -> None:
    peer = fresh(peers, "dual")
    seen: list[tuple[str, dict[str, Any]]] = []

    async with mcpfsm.Client.http(peer.url, protocol=MODERN, on_notification=lambda m, p: seen.append((m, p))) as c:
        params = {
            "name": "slow",
            "arguments": {"seconds": 0.2},
            "_meta": {"io.modelcontextprotocol/logLevel": "info", "progressToken": "mine"},
        }
        result = await c.request("tools/call", params)

    assert result["content"] == [{"type": "text", "text": "done"}]
    assert without_tokens(seen) == [SLOW_LOG, *SLOW_PROGRESS]
    assert {p["progressToken"] for m, p in seen if m == "notifications/progress"} == {"mine"}


# --- resumable legacy streams -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "seconds",
    [
        # Done before the GET arrives: everything after the cut, the response included, is replayed.
        pytest.param(0.04, id="replayed"),
        # The GET arrives between step 1 and step 2: the rest streams live on the GET stream. (Steps that
        # fall while the SDK replays are lost by the server, so neither case straddles that window.)
        pytest.param(0.8, id="live"),
    ],
)
async def test_a_dropped_legacy_stream_is_resumed_with_get_and_last_event_id(
    peers: dict[str, HttpPeer], seconds: float
) -> None:
    peer = fresh(peers, "resumable")
    peer.control({"action": "drop_stream", "count": 1})
    seen: list[tuple[str, dict[str, Any]]] = []

    with trio.fail_after(10):
        async with mcpfsm.Client.http(peer.url, on_notification=lambda m, p: seen.append((m, p))) as client:
            assert client.protocol_version == LEGACY
            assert (await client.call_tool("slow", {"seconds": seconds})).text == "done"
            # The resumed GET stream never ends by itself: the client stopped reading at its answer.
            assert (await client.call_tool("echo", {"text": "after"})).text == "after"

    log_message = ("notifications/message", {"level": "info", "data": f"slow: sleeping {seconds:g} s"})
    assert without_tokens(seen) == [log_message, *SLOW_PROGRESS]
    log = peer.log()
    assert [(e["http_method"], e["jsonrpc_method"], e["status"]) for e in log] == [
        ("POST", "server/discover", 400),
        ("POST", "initialize", 200),
        ("POST", "notifications/initialized", 202),
        ("GET", None, 200),
        ("POST", "tools/call", 200),
        ("GET", None, 200),
        ("POST", "tools/call", 200),
        ("DELETE", None, 200),
    ]
    session = log[4]["headers"]["mcp-session-id"]
    assert log[3]["headers"] == {**STREAM_HEADERS, "mcp-session-id": session}
    get = log[5]
    last_event_id = get["headers"]["last-event-id"]
    assert get["headers"] == {
        "accept": "text/event-stream",
        "mcp-protocol-version": LEGACY,
        "mcp-session-id": session,
        "last-event-id": last_event_id,
    }
    # Ids count up across the peer's life; that each notification arrived exactly once, in order, shows
    # the GET named the last event seen before the cut.
    assert last_event_id.isdigit()
