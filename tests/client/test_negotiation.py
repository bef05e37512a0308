"""Era negotiation, version retry and legacy sessions over httpx.MockTransport (see mcpfsm/_client/negotiation.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import httpx
import pytest
import trio

import mcpfsm

URL: Final = "http://legacy.test/mcp"
MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
SESSION: Final = "s-1"
INITIALIZE_RESULT: Final = {
    "protocolVersion": LEGACY,
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "scripted", "version": "1"},
}
SQL_TOOL: Final = {
    "name": "execute-sql",
    "inputSchema": {
        "type": "object",
        "properties": {"database": {"type": "string", "x-mcp-header": "Database"}},
    },
}
BAD_TOOL: Final = {
    "name": "bad",
    "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Bad Header"}}},
}
CALL_RESULT: Final = {"content": [{"type": "text", "text": "ok"}]}

Answer = Callable[[dict[str, Any] | None], httpx.Response]


@dataclass(frozen=True, slots=True, kw_only=True)
class Sent:
    """One request as the scripted server saw it."""

    http: str
    method: str | None
    id: Any
    body: Any
    mcp: dict[str, str]


class Script:
    """An ``httpx.MockTransport`` handler that answers each POST with the next scripted answer.

    DELETE is answered ``delete_status`` and GET (the standalone stream a legacy session opens after
    ``notifications/initialized``) ``get_status`` without using the script; running out of answers fails.
    """

    def __init__(self, *answers: Answer, delete_status: int = 200, get_status: int = 405) -> None:
        self.answers = list(answers)
        self.sent: list[Sent] = []
        self.delete_status = delete_status
        self.get_status = get_status

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        message = body if isinstance(body, dict) else {}
        self.sent.append(
            Sent(
                http=request.method,
                method=message.get("method"),
                id=message.get("id"),
                body=body,
                mcp={k: v for k, v in request.headers.items() if k.startswith("mcp-")},
            )
        )
        if request.method == "DELETE":
            return httpx.Response(self.delete_status)
        if request.method == "GET":
            return httpx.Response(self.get_status)
        assert self.answers, f"unscripted request {request.method} {message.get('method')}"
        return self.answers.pop(0)(message)

    @property
    def calls(self) -> list[tuple[str, str | None, Any]]:
        return [(s.http, s.method, s.id) for s in self.sent]


def result(value: dict[str, Any], *, session: str | None = None) -> Answer:
    def answer(body: dict[str, Any] | None) -> httpx.Response:
        headers = {"Mcp-Session-Id": session} if session else None
        message = {"jsonrpc": "2.0", "id": (body or {}).get("id"), "result": value}
        return httpx.Response(200, json=message, headers=headers)

    return answer


def error(code: int, message: str = "refused", *, status: int = 400, data: Any = None) -> Answer:
    def answer(body: dict[str, Any] | None) -> httpx.Response:
        detail: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            detail["data"] = data
        return httpx.Response(status, json={"jsonrpc": "2.0", "id": (body or {}).get("id"), "error": detail})

    return answer


def raw(status: int, content: bytes = b"", content_type: str | None = None) -> Answer:
    def answer(body: dict[str, Any] | None) -> httpx.Response:
        headers = {"Content-Type": content_type} if content_type else None
        return httpx.Response(status, content=content, headers=headers)

    return answer


def accepted() -> Answer:
    return raw(202)


def unsupported(*supported: str) -> Answer:
    return error(-32022, "Unsupported protocol version", data={"supported": list(supported), "requested": MODERN})


def handshake(session: str = SESSION, version: str = LEGACY) -> list[Answer]:
    """initialize (assigning ``session``) and notifications/initialized."""
    return [result({**INITIALIZE_RESULT, "protocolVersion": version}, session=session), accepted()]


def client(script: Script, protocol: str = "auto", **options: Any) -> mcpfsm.Client:
    return mcpfsm.Client.http(URL, protocol=protocol, http_transport=httpx.MockTransport(script), **options)


def legacy_version_only(version: str = LEGACY, session: str = SESSION) -> dict[str, str]:
    return {"mcp-protocol-version": version, "mcp-session-id": session}


# --- auto mode: the probe and its fallbacks (mcpfsm/_client/negotiation.py) ----------------------------------------

FALLBACKS = {
    "400-plain-text": raw(400, b"Bad Request", "text/plain"),
    "404-html": raw(404, b"<h1>Not Found</h1>", "text/html"),
    "405-empty": raw(405),
    "400-json-not-jsonrpc": raw(400, b'{"detail": "no"}', "application/json"),
    "400-invalid-params": error(-32602, "Invalid params", status=400),
    "400-invalid-request": error(-32600, "Bad Request: Missing session ID", status=400),
    "404-method-not-found": error(-32601, "Method not found", status=404),
    "200-method-not-found": error(-32601, "Method not found", status=200),
    "200-invalid-request": error(-32600, "Invalid Request", status=200),
    "200-parse-error": error(-32700, "Parse error", status=200),
    "200-html": raw(200, b"<html>hello</html>", "text/html"),
    "200-json-garbage": raw(200, b"{not json", "application/json"),
}


@pytest.mark.parametrize("probe", FALLBACKS.values(), ids=FALLBACKS.keys())
async def test_a_legacy_answer_to_the_probe_falls_back_to_initialize_at_the_cost_of_one_request(probe: Answer) -> None:
    script = Script(probe, *handshake(), result({"tools": [SQL_TOOL]}))

    async with client(script) as c:
        assert c.protocol_version == LEGACY
        await c.tools()

    assert script.calls == [
        ("POST", "server/discover", 1),
        ("POST", "initialize", 2),
        ("POST", "notifications/initialized", None),
        ("GET", None, None),
        ("POST", "tools/list", 3),
        ("DELETE", None, None),
    ]
    assert script.sent[1].body["params"] == {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "mcpfsm", "version": mcpfsm.__version__},
    }
    assert [s.mcp for s in script.sent] == [
        {"mcp-protocol-version": MODERN, "mcp-method": "server/discover"},
        {},
        legacy_version_only(),
        legacy_version_only(),
        legacy_version_only(),
        legacy_version_only(),
    ]


@pytest.mark.parametrize(
    ("probe", "raised", "match"),
    [
        pytest.param(
            error(-32020, "Header mismatch"),
            mcpfsm.HeaderMismatchError,
            r"^JSON-RPC error -32020: Header mismatch$",
            id="-32020",
        ),
        pytest.param(
            error(-32021, "Missing header"), mcpfsm.RpcError, r"^JSON-RPC error -32021: Missing header$", id="-32021"
        ),
        pytest.param(
            error(-32603, "Internal", status=200),
            mcpfsm.RpcError,
            r"^JSON-RPC error -32603: Internal$",
            id="200-internal",
        ),
        pytest.param(
            raw(500, b"boom", "text/plain"),
            mcpfsm.TransportError,
            r"^HTTP 500 Internal Server Error \(boom\)$",
            id="500",
        ),
        pytest.param(
            raw(401),
            mcpfsm.TransportError,
            r"^HTTP 401 Unauthorized: the server requires authorization: pass auth= to Client\.http"
            r" \(mcpfsm\.OAuth\(\), ClientCredentials\(\.\.\.\), or a bearer token\)$",
            id="401",
        ),
    ],
)
async def test_a_modern_or_unrelated_failure_of_the_probe_is_raised_without_falling_back(
    probe: Answer, raised: type[Exception], match: str
) -> None:
    script = Script(probe)

    with pytest.raises(raised, match=match):
        async with client(script):
            pass

    assert script.calls == [("POST", "server/discover", 1)]


async def test_a_discover_result_listing_2026_07_28_is_modern_even_without_result_type() -> None:
    script = Script(result({"supportedVersions": ["2025-11-25", MODERN]}), result({"tools": []}))

    async with client(script) as c:
        assert c.protocol_version == MODERN
        assert len(await c.tools()) == 0

    assert script.calls == [("POST", "server/discover", 1), ("POST", "tools/list", 2)]
    assert script.sent[1].mcp == {"mcp-protocol-version": MODERN, "mcp-method": "tools/list"}


@pytest.mark.parametrize(
    ("versions", "offer"),
    [
        pytest.param(["2025-11-25"], LEGACY, id="2025-11-25"),
        pytest.param(["2025-03-26", "2025-06-18"], "2025-06-18", id="newest-spoken-listed"),
        pytest.param(["2024-11-05"], LEGACY, id="none-spoken"),
        pytest.param("2026-07-28", LEGACY, id="not-a-list"),
    ],
)
async def test_a_discover_result_without_2026_07_28_runs_initialize(versions: Any, offer: str) -> None:
    script = Script(result({"supportedVersions": versions}), *handshake(version=offer))

    async with client(script) as c:
        assert c.protocol_version == offer

    assert script.calls[:4] == [
        ("POST", "server/discover", 1),
        ("POST", "initialize", 2),
        ("POST", "notifications/initialized", None),
        ("GET", None, None),
    ]
    assert script.sent[1].body["params"]["protocolVersion"] == offer


async def test_minus_32022_on_the_probe_initializes_with_the_newest_spoken_version() -> None:
    script = Script(unsupported("2025-06-18", LEGACY), *handshake())

    async with client(script) as c:
        assert c.protocol_version == LEGACY

    assert script.calls == [
        ("POST", "server/discover", 1),
        ("POST", "initialize", 2),
        ("POST", "notifications/initialized", None),
        ("GET", None, None),
        ("DELETE", None, None),
    ]


# --- pinned versions ---------------------------------------------------------------------------------------


async def test_a_pinned_modern_version_sends_no_probe() -> None:
    script = Script(result({"tools": []}))

    async with client(script, MODERN) as c:
        assert c.protocol_version == MODERN
        await c.tools()

    assert script.calls == [("POST", "tools/list", 1)]


async def test_a_pinned_legacy_version_sends_no_probe() -> None:
    script = Script(*handshake(), result({"tools": []}))

    async with client(script, LEGACY) as c:
        assert c.protocol_version == LEGACY
        await c.tools()

    assert script.calls == [
        ("POST", "initialize", 1),
        ("POST", "notifications/initialized", None),
        ("GET", None, None),
        ("POST", "tools/list", 2),
        ("DELETE", None, None),
    ]


PINNED_AGAINST_LEGACY: Final = (
    "the server does not speak protocol 2026-07-28, which was pinned: it answered tools/list as a server of the"
    " initialize era ({era}) does (JSON-RPC error -32600: Bad Request: Missing session ID); use protocol='auto'"
    " to negotiate the era, or pin 2025-11-25"
)


@pytest.mark.parametrize(
    ("discover", "era"),
    [
        pytest.param(error(-32601, "Method not found"), "2025-11-25, 2025-06-18, 2025-03-26", id="discover-unknown"),
        pytest.param(raw(404, b"not found", "text/plain"), "2025-11-25, 2025-06-18, 2025-03-26", id="discover-404"),
        pytest.param(result({"supportedVersions": ["2025-06-18"]}), "2025-06-18", id="discover-lists-legacy"),
    ],
)
async def test_a_pinned_modern_version_against_a_legacy_server_names_its_era_and_suggests_auto(
    discover: Answer, era: str
) -> None:
    script = Script(error(-32600, "Bad Request: Missing session ID"), discover)

    async with client(script, MODERN) as c:
        with pytest.raises(mcpfsm.ProtocolError) as caught:
            await c.tools()
        assert c.protocol_version == MODERN

    assert str(caught.value) == PINNED_AGAINST_LEGACY.format(era=era)
    assert isinstance(caught.value.__cause__, mcpfsm.RpcError)
    # No fall-back: a pin is a pin. One server/discover tells the legacy server apart from a modern one.
    assert script.calls == [("POST", "tools/list", 1), ("POST", "server/discover", 2)]


async def test_a_pinned_modern_version_whose_server_is_modern_raises_the_original_error_and_probes_once() -> None:
    script = Script(
        error(-32601, "Method not found: no/such"),
        result({"supportedVersions": [MODERN]}),
        error(-32601, "Method not found: no/such"),
    )

    async with client(script, MODERN) as c:
        for _ in range(2):
            with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32601: Method not found: no/such$"):
                await c.request("no/such")

    # The era is confirmed by the discover answer: the second failure is not probed again.
    assert script.calls == [("POST", "no/such", 1), ("POST", "server/discover", 2), ("POST", "no/such", 3)]


async def test_a_pinned_modern_version_confirmed_by_an_answer_never_probes() -> None:
    script = Script(result({"tools": []}), error(-32600, "Bad Request"))

    async with client(script, MODERN) as c:
        await c.tools()
        with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32600: Bad Request$"):
            await c.tools()

    assert script.calls == [("POST", "tools/list", 1), ("POST", "tools/list", 2)]


async def test_minus_32022_on_a_pinned_handshake_switches_to_the_version_the_server_speaks() -> None:
    refused = error(-32022, "Unsupported protocol version", data={"supported": [MODERN], "requested": LEGACY})
    script = Script(refused, result({"tools": []}))

    async with client(script, LEGACY) as c:
        assert c.protocol_version == MODERN
        await c.tools()

    assert script.calls == [("POST", "initialize", 1), ("POST", "tools/list", 2)]
    assert script.sent[1].mcp == {"mcp-protocol-version": MODERN, "mcp-method": "tools/list"}


@pytest.mark.parametrize("answered", ["2024-11-05", MODERN, "2099-01-01"])
async def test_initialize_answering_a_version_mcpfsm_does_not_speak_is_a_protocol_error(answered: str) -> None:
    script = Script(result({**INITIALIZE_RESULT, "protocolVersion": answered}, session=SESSION))

    with pytest.raises(
        mcpfsm.ProtocolError, match=rf"^server chose protocol version '{answered}', which mcpfsm does not speak$"
    ):
        async with client(script, LEGACY):
            pass

    # The session the server opened is still ended.
    assert script.calls == [("POST", "initialize", 1), ("DELETE", None, None)]


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26"])
async def test_initialize_may_answer_an_older_legacy_version(version: str) -> None:
    script = Script(*handshake(version=version), result({"tools": []}))

    async with client(script, LEGACY) as c:
        assert c.protocol_version == version
        await c.tools()

    assert script.sent[2].mcp == legacy_version_only(version)


# --- -32022 on any request (MCP 2026-07-28, UnsupportedProtocolVersion) ---------------------------------------------

# A modern tools/list refused with -32022 for a legacy version: initialize, then the same request once more.
LIST_RETRIED_IN_LEGACY: Final = [
    ("POST", "tools/list", 1),
    ("POST", "initialize", 2),
    ("POST", "notifications/initialized", None),
    ("GET", None, None),
    ("POST", "tools/list", 3),
    ("DELETE", None, None),
]


async def test_minus_32022_on_a_modern_request_initializes_and_retries_it_once() -> None:
    script = Script(unsupported("2025-03-26", LEGACY, "2024-11-05"), *handshake(), result({"tools": []}))

    async with client(script, MODERN) as c:
        await c.tools()
        assert c.protocol_version == LEGACY

    assert script.calls == LIST_RETRIED_IN_LEGACY
    assert script.sent[4].mcp == legacy_version_only()
    # Legacy requests carry no modern _meta.
    assert script.sent[4].body == {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}


async def test_minus_32022_on_a_legacy_request_switches_to_modern_and_retries_it_once() -> None:
    script = Script(*handshake(), unsupported(MODERN, LEGACY), result(CALL_RESULT))

    async with client(script, LEGACY) as c:
        result_ = await c.call_tool("echo", {"text": "hi"})
        assert c.protocol_version == MODERN

    assert result_.text == "ok"
    # Modern requests carry no session: the legacy session is dropped (left to expire on the server),
    # so there is nothing to DELETE on close.
    assert script.calls[3:] == [("POST", "tools/call", 2), ("POST", "tools/call", 3)]
    assert script.sent[4].mcp == {
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "echo",
    }


async def test_a_second_minus_32022_is_raised() -> None:
    script = Script(unsupported(LEGACY), *handshake(), unsupported(MODERN))

    async with client(script, MODERN) as c:
        with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32022: Unsupported protocol version$"):
            await c.tools()

    assert script.calls == LIST_RETRIED_IN_LEGACY


async def test_after_a_version_switch_an_expired_session_is_renewed_once_more() -> None:
    # The resend policy (mcpfsm/_client/session.py): a switch on the first answer, then one renewal: three attempts.
    gone = raw(404, b"Session not found", "text/plain")
    script = Script(unsupported(LEGACY), *handshake("s-1"), gone, *handshake("s-2"), result({"tools": []}))

    async with client(script, MODERN) as c:
        assert len(await c.tools()) == 0

    assert [call[:2] for call in script.calls if call[0] == "POST"] == [
        ("POST", "tools/list"),
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("POST", "tools/list"),
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("POST", "tools/list"),
    ]


async def test_a_minus_32022_after_a_renewal_is_raised() -> None:
    # Nothing is resent after a renewal: the renewed session's answer stands, a -32022 included.
    gone = raw(404, b"Session not found", "text/plain")
    script = Script(*handshake("s-1"), gone, *handshake("s-2"), unsupported(MODERN))

    async with client(script, LEGACY) as c:
        with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32022: Unsupported protocol version$"):
            await c.tools()
        assert c.protocol_version == LEGACY

    assert [call[:2] for call in script.calls if call[:2] == ("POST", "tools/list")] == [("POST", "tools/list")] * 2


@pytest.mark.parametrize(
    "data",
    [
        pytest.param({"supported": ["2024-11-05"], "requested": MODERN}, id="none-spoken"),
        pytest.param({"requested": MODERN}, id="no-supported"),
        pytest.param(None, id="no-data"),
    ],
)
async def test_minus_32022_without_a_spoken_version_is_raised(data: Any) -> None:
    script = Script(error(-32022, "Unsupported protocol version", data=data))

    async with client(script, MODERN) as c:
        with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32022: Unsupported protocol version$") as info:
            await c.tools()

    assert info.value.data == data
    assert script.calls == [("POST", "tools/list", 1)]


async def test_minus_32022_naming_the_version_just_sent_retries_it_once() -> None:
    # The official conformance scenario request-metadata refuses a client's first request this way and
    # expects the same request again, in 2026-07-28: the "once" bounds it, not the version.
    script = Script(unsupported(MODERN), result({"tools": []}))

    async with client(script, MODERN) as c:
        assert len(await c.tools()) == 0

    assert script.calls == [("POST", "tools/list", 1), ("POST", "tools/list", 2)]
    assert [sent.mcp for sent in script.sent] == [{"mcp-protocol-version": MODERN, "mcp-method": "tools/list"}] * 2
    assert [sent.body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] for sent in script.sent] == [
        MODERN,
        MODERN,
    ]


async def test_minus_32022_naming_the_version_just_sent_twice_is_raised_after_one_retry() -> None:
    script = Script(unsupported(MODERN), unsupported(MODERN))

    async with client(script, MODERN) as c:
        with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32022: Unsupported protocol version$"):
            await c.tools()

    assert script.calls == [("POST", "tools/list", 1), ("POST", "tools/list", 2)]


async def test_minus_32022_on_the_probe_naming_2026_07_28_retries_the_probe_once() -> None:
    script = Script(unsupported(MODERN), result({"supportedVersions": [MODERN]}), result({"tools": []}))

    async with client(script, "auto") as c:
        assert c.protocol_version == MODERN
        await c.tools()

    assert script.calls == [("POST", "server/discover", 1), ("POST", "server/discover", 2), ("POST", "tools/list", 3)]


async def test_minus_32022_on_the_retried_probe_is_raised() -> None:
    script = Script(unsupported(MODERN), unsupported(MODERN))

    with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32022: Unsupported protocol version$"):
        async with client(script, "auto"):
            pass

    assert script.calls == [("POST", "server/discover", 1), ("POST", "server/discover", 2)]


async def test_minus_32022_on_a_pinned_handshake_naming_the_same_version_initializes_once_more() -> None:
    refused = error(-32022, "Unsupported protocol version", data={"supported": [LEGACY], "requested": LEGACY})
    script = Script(refused, *handshake())

    async with client(script, LEGACY) as c:
        assert (c.protocol_version, c.session_id) == (LEGACY, SESSION)

    assert [call[:2] for call in script.calls] == [
        ("POST", "initialize"),
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("GET", None),
        ("DELETE", None),
    ]


# --- legacy sessions (MCP "Transports") ------------------------------------------------------------------------------


async def test_session_expiry_initializes_once_and_resends_with_a_new_request_id() -> None:
    script = Script(
        *handshake("s-1"),
        error(-32600, "Session not found", status=404),
        *handshake("s-2"),
        result(CALL_RESULT),
    )

    async with client(script, LEGACY) as c:
        assert (await c.call_tool("echo", {"text": "hi"})).text == "ok"

    assert script.calls == [
        ("POST", "initialize", 1),
        ("POST", "notifications/initialized", None),
        ("GET", None, None),
        ("POST", "tools/call", 2),
        ("POST", "initialize", 3),
        ("POST", "notifications/initialized", None),
        ("GET", None, None),
        ("POST", "tools/call", 4),
        ("DELETE", None, None),
    ]
    assert [s.mcp for s in script.sent] == [
        {},
        legacy_version_only(session="s-1"),
        legacy_version_only(session="s-1"),
        legacy_version_only(session="s-1"),
        {},
        legacy_version_only(session="s-2"),
        legacy_version_only(session="s-2"),
        legacy_version_only(session="s-2"),
        legacy_version_only(session="s-2"),
    ]
    assert script.sent[3].body["params"] == script.sent[7].body["params"]


async def test_a_second_session_expiry_is_raised_and_the_client_stays_usable() -> None:
    gone = raw(404, b"Session not found", "text/plain")
    script = Script(*handshake("s-1"), gone, *handshake("s-2"), gone, *handshake("s-3"), result({"tools": []}))

    events: list[mcpfsm.CallEvent] = []
    async with client(script, LEGACY, on_event=events.append) as c:
        with pytest.raises(mcpfsm.TransportError, match=r"^HTTP 404: the MCP session has expired$") as raised:
            await c.call_tool("echo", {"text": "hi"})
        assert len(await c.tools()) == 0
    assert raised.value.session_id == "s-2"  # type: ignore[attr-defined]
    # A session id is a bearer of the session: on the error for code that handles it, never in the message
    # (which events and log lines carry).
    assert events[-1].state == "failed" and not any("s-2" in event.to_json() for event in events)

    assert [call[:2] for call in script.calls] == [
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("GET", None),
        ("POST", "tools/call"),
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("GET", None),
        ("POST", "tools/call"),
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("GET", None),
        ("POST", "tools/list"),
        ("DELETE", None),
    ]


async def test_a_404_without_a_session_id_is_no_session_expiry() -> None:
    script = Script(result(INITIALIZE_RESULT), accepted(), raw(404, b"nope", "text/plain"))

    async with client(script, LEGACY) as c:
        with pytest.raises(mcpfsm.TransportError, match=r"^HTTP 404 Not Found \(nope\)$"):
            await c.tools()

    # No session: no re-initialize and nothing to DELETE.
    assert [call[:2] for call in script.calls] == [
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("GET", None),
        ("POST", "tools/list"),
    ]
    assert script.sent[3].mcp == {"mcp-protocol-version": LEGACY}


@pytest.mark.parametrize("status", [200, 204, 405])
async def test_close_deletes_the_session_and_a_refusal_is_fine(status: int) -> None:
    script = Script(*handshake(), delete_status=status)

    async with client(script, LEGACY):
        pass

    assert script.calls[-1] == ("DELETE", None, None)
    assert script.sent[-1].mcp == legacy_version_only()


async def test_a_session_id_on_an_error_answer_is_not_adopted() -> None:
    # Some servers name a throw-away session on their 400 to the probe.
    def probe(body: dict[str, Any] | None) -> httpx.Response:
        return httpx.Response(
            400,
            json={"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Missing session ID"}},
            headers={"Mcp-Session-Id": "throw-away"},
        )

    script = Script(probe, *handshake())

    async with client(script):
        pass

    assert [s.mcp.get("mcp-session-id") for s in script.sent] == [None, None, SESSION, SESSION, SESSION]


# --- annotations on legacy connections (SEP-2243) -----------------------------------------------------


async def test_legacy_annotations_are_inert_tools_kept_and_nothing_mirrored(records: list[tuple[str, str]]) -> None:
    script = Script(*handshake(), result({"tools": [SQL_TOOL, BAD_TOOL]}), result(CALL_RESULT), result(CALL_RESULT))

    async with client(script, LEGACY) as c:
        tools = await c.tools()
        sql = tools.get("execute-sql")
        assert sql is not None
        # A value that could never be mirrored goes through untouched: nothing is mirrored here.
        await sql.call({"database": 42})
        await c.call_tool("execute-sql", {"database": "analytics"})

    assert tools.names == ["execute-sql", "bad"]
    assert tools.excluded == ()
    assert sql.mirrored == {}
    assert [s.mcp for s in script.sent[2:6]] == [legacy_version_only()] * 4
    assert script.sent[4].body["params"] == {"name": "execute-sql", "arguments": {"database": 42}}
    assert (
        "DEBUG",
        "x-mcp-header annotations of MCP tool 'bad' are inert here: "
        "x-mcp-header 'Bad Header' at /region is not a valid header-name token",
    ) in records
    assert [r for r in records if r[0] == "WARNING"] == []


async def test_minus_32020_on_a_legacy_connection_is_raised_without_a_relist() -> None:
    script = Script(*handshake(), result({"tools": [SQL_TOOL]}), error(-32020, "Header mismatch"))

    async with client(script, LEGACY) as c:
        sql = (await c.tools()).get("execute-sql")
        assert sql is not None
        with pytest.raises(mcpfsm.HeaderMismatchError, match=r"^JSON-RPC error -32020: Header mismatch$"):
            await sql.call({"database": "analytics"})

    assert [call[:2] for call in script.calls] == [
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("GET", None),
        ("POST", "tools/list"),
        ("POST", "tools/call"),
        ("DELETE", None),
    ]


async def test_concurrent_requests_on_an_expired_session_share_one_new_session() -> None:
    sent: list[tuple[str | None, str | None]] = []
    both_sent = trio.Event()
    sessions = iter(["s-1", "s-2", "s-3"])

    async def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        session = request.headers.get("mcp-session-id")
        sent.append((body.get("method"), session))
        if request.method == "GET":
            return httpx.Response(405)
        if request.method == "DELETE" or body.get("method") == "notifications/initialized":
            return httpx.Response(202)
        if body["method"] == "initialize":
            return result(INITIALIZE_RESULT, session=next(sessions))(body)
        if session == "s-1":
            if sum(1 for m, s in sent if m == "tools/call" and s == "s-1") == 2:
                both_sent.set()
            await both_sent.wait()
            return httpx.Response(404)
        return result(CALL_RESULT)(body)

    client = mcpfsm.Client.http(URL, protocol=LEGACY, http_transport=httpx.MockTransport(handler))
    async with client as c, trio.open_nursery() as nursery:
        nursery.start_soon(c.call_tool, "echo", {"text": "a"})
        nursery.start_soon(c.call_tool, "echo", {"text": "b"})

    assert sorted(sent, key=repr) == sorted(
        [
            ("initialize", None),
            ("notifications/initialized", "s-1"),
            (None, "s-1"),
            ("tools/call", "s-1"),
            ("tools/call", "s-1"),
            ("initialize", None),
            ("notifications/initialized", "s-2"),
            (None, "s-2"),
            ("tools/call", "s-2"),
            ("tools/call", "s-2"),
            (None, "s-2"),
        ],
        key=repr,
    )


@pytest.mark.parametrize(
    "extra", [pytest.param({}, id="no-resultType"), pytest.param({"resultType": "complete"}, id="complete")]
)
@pytest.mark.parametrize("protocol", [MODERN, LEGACY])
async def test_a_result_without_result_type_is_complete(protocol: str, extra: dict[str, Any]) -> None:
    handshake_answers = handshake() if protocol == LEGACY else []
    script = Script(*handshake_answers, result({**CALL_RESULT, **extra}))

    async with client(script, protocol) as c:
        answered = await c.call_tool("echo", {"text": "hi"})

    expected = (CALL_RESULT["content"], False, {**CALL_RESULT, **extra})
    assert (answered.content, answered.is_error, answered.raw) == expected
