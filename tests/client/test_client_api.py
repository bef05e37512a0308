"""The public client API against a scripted MockTransport server (README, "Use it from Python"), modern era."""

from __future__ import annotations

from collections.abc import Container
from typing import Any, Final

import httpx
import pytest

import mcpfsm
from tests.support.fakeserver import MODERN, URL, Answer, FakeServer, raises, response, result, rpc_error, sse

META: Final = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "mcpfsm", "version": mcpfsm.__version__},
}
ACCEPT: Final = ("Accept", "application/json, text/event-stream")
CONTENT_TYPE: Final = ("Content-Type", "application/json")
USER_AGENT: Final = ("User-Agent", "mcpfsm/0.1.0")
ACCEPT_ENCODING: Final = ("Accept-Encoding", "gzip, deflate")
DISCOVER: Final = ("server/discover", {"MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"})
LIST: Final = ("tools/list", {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
OK: Final = [{"type": "text", "text": "ok"}]


def tool(name: str, properties: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object", "properties": properties or {}}, **extra}


def call_headers(name: str, **params: str) -> dict[str, str]:
    return {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name, **params}


SQL: Final = tool(
    "execute-sql",
    {
        "query": {"type": "string"},
        "database": {"type": "string", "x-mcp-header": "Database"},
        "options": {"type": "object", "properties": {"readOnly": {"type": "boolean", "x-mcp-header": "Read-Only"}}},
        "limit": {"type": "integer", "x-mcp-header": "Limit"},
    },
    description="Run SQL",
)


def warnings(logs: list[dict[str, Any]]) -> list[str]:
    return [record["message"] for record in logs if record["level"].name == "WARNING"]


# --- ToolList and Tool -----------------------------------------------------------------------------


async def test_tool_list_keeps_server_order_and_excludes_invalid_tools_with_one_warning_each(
    fake: FakeServer, logs: list[dict[str, Any]]
) -> None:
    fake.tools = [
        tool("alpha"),
        tool("bad-token", {"region": {"type": "string", "x-mcp-header": "Bad Header"}}),
        SQL,
        tool("bad-type", {"ratio": {"type": "number", "x-mcp-header": "Ratio"}}),
        tool(
            "bad-dup",
            {"a": {"type": "string", "x-mcp-header": "Region"}, "b": {"type": "string", "x-mcp-header": "region"}},
        ),
        {"description": "no name"},
        tool("omega", {"note": {"type": "string", "default": {"x-mcp-header": "data, not an annotation"}}}),
    ]
    async with fake.client() as client:
        tools = await client.tools()
    reasons = [
        ("bad-token", "x-mcp-header 'Bad Header' at /region is not a valid header-name token"),
        (
            "bad-type",
            "x-mcp-header 'Ratio' at /ratio is on a property with type 'number';"
            " only 'string', 'integer' or 'boolean' can be mirrored",
        ),
        (
            "bad-dup",
            "x-mcp-header 'region' at /b duplicates 'Region' at /a (header names compare case-insensitively)",
        ),
        ("#5", 'tool entry has no string "name"'),
    ]
    assert tools.excluded == tuple(mcpfsm.Exclusion(name=name, reason=reason) for name, reason in reasons)
    assert warnings(logs) == [f"excluded MCP tool {name!r}: {reason}" for name, reason in reasons]
    assert (len(tools), [t.name for t in tools], tools.names) == (
        3,
        ["alpha", "execute-sql", "omega"],
        ["alpha", "execute-sql", "omega"],
    )
    # ToolList is a Sequence[Tool], so mypy's strict equality thinks `str in tools` can never hold.
    names: Container[object] = tools
    assert ("alpha" in names, "bad-token" in names, "missing" in names, tools[1] in tools) == (True, False, False, True)
    sql = tools.get("execute-sql")
    assert sql is not None and sql is tools[1]
    assert (tools.get("bad-token"), tools.get("Execute-SQL")) == (None, None)
    assert (sql.name, sql.description, sql.input_schema, sql.raw, sql.mirrored) == (
        "execute-sql",
        "Run SQL",
        SQL["inputSchema"],
        SQL,
        {
            ("database",): "Mcp-Param-Database",
            ("options", "readOnly"): "Mcp-Param-Read-Only",
            ("limit",): "Mcp-Param-Limit",
        },
    )
    assert repr(tools) == "ToolList(['alpha', 'execute-sql', 'omega'])"


@pytest.mark.parametrize(
    ("page_size", "cursors"),
    [
        pytest.param(None, [None], id="one-page"),
        pytest.param(2, [None, "page-2", "page-3"], id="pages-of-two"),
        pytest.param(1, [None, "page-2", "page-3", "page-4", "page-5"], id="pages-of-one"),
    ],
)
async def test_tools_follows_every_cursor(fake: FakeServer, page_size: int | None, cursors: list[str | None]) -> None:
    fake.tools, fake.page_size = [tool(name) for name in "abcde"], page_size
    async with fake.client() as client:
        tools = await client.tools()
    assert tools.names == ["a", "b", "c", "d", "e"]
    assert fake.wire() == [DISCOVER, *[LIST] * len(cursors)]
    assert [seen.params for seen in fake.requests[1:]] == [
        {"_meta": META} if cursor is None else {"cursor": cursor, "_meta": META} for cursor in cursors
    ]


async def test_a_listing_of_exactly_1000_pages_is_complete(fake: FakeServer) -> None:
    fake.tools, fake.page_size = [tool(f"t{i}") for i in range(1000)], 1
    async with fake.client() as client:
        tools = await client.tools()
    assert (len(tools), tools.names[-1], fake.methods().count("tools/list")) == (1000, "t999", 1000)


@pytest.mark.parametrize(
    ("pages", "message"),
    [
        pytest.param(
            [result({"tools": [tool("a")], "nextCursor": "x"}), result({"tools": [tool("b")], "nextCursor": "x"})],
            r"^tools/list repeated cursor 'x': the listing would never end$",
            id="repeated-cursor",
        ),
        pytest.param(
            [
                result({"tools": [], "nextCursor": "x"}),
                result({"tools": [], "nextCursor": "y"}),
                result({"tools": [], "nextCursor": "x"}),
            ],
            r"^tools/list repeated cursor 'x': the listing would never end$",
            id="cursor-repeated-two-pages-later",
        ),
        pytest.param(
            [result({"tools": [], "nextCursor": 2})], r"^tools/list nextCursor is not a string$", id="integer-cursor"
        ),
        pytest.param(
            [result({"tools": [], "nextCursor": {"page": 2}})],
            r"^tools/list nextCursor is not a string$",
            id="object-cursor",
        ),
        pytest.param([result({"tools": {}})], r'^tools/list result has no "tools" list$', id="tools-not-a-list"),
        pytest.param([result({})], r'^tools/list result has no "tools" list$', id="no-tools"),
        pytest.param([result([])], r'^peer response "result" is not an object$', id="result-not-an-object"),
    ],
)
async def test_a_malformed_listing_is_a_protocol_error_and_the_client_stays_usable(
    fake: FakeServer, pages: list[Answer], message: str
) -> None:
    async with fake.client() as client:
        fake.queue("tools/list", *pages)
        with pytest.raises(mcpfsm.ProtocolError, match=message):
            await client.tools()
        assert fake.methods() == ["server/discover", *["tools/list"] * len(pages)]
        fake.tools = [tool("a")]
        assert (await client.tools()).names == ["a"]


async def test_a_listing_of_more_than_1000_pages_is_a_protocol_error(fake: FakeServer) -> None:
    fake.tools, fake.page_size = [tool(f"t{i}") for i in range(1001)], 1
    async with fake.client() as client:
        with pytest.raises(mcpfsm.ProtocolError, match=r"^tools/list has more than 1000 pages$"):
            await client.tools()
    assert fake.methods().count("tools/list") == 1000


# --- what every request carries --------------------------------------------------------------------

CUSTOM: Final = {
    "X-Tenant": "acme",
    "Authorization": "Bearer t0k3n",
    "mcp-method": "spoofed",
    "MCP-Protocol-Version": "1999-01-01",
    "Mcp-Param-Database": "spoofed",
    "Mcp-Session-Id": "spoofed",
    "Mcp-": "spoofed",
}


async def test_every_request_carries_the_standard_and_custom_headers_once_and_the_modern_meta(
    fake: FakeServer,
) -> None:
    fake.tools = [SQL]
    arguments = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}, "limit": 10}
    async with fake.client(headers=CUSTOM) as client:
        sql = (await client.tools()).get("execute-sql")
        assert sql is not None
        await sql.call(arguments)
        await client.call_tool("execute-sql", {})
    protocol = {
        "server/discover": DISCOVER[1],
        "tools/list": LIST[1],
    }
    expected_mcp = [
        protocol["server/discover"],
        protocol["tools/list"],
        call_headers(
            "execute-sql", **{"Mcp-Param-Database": "analytics", "Mcp-Param-Read-Only": "true", "Mcp-Param-Limit": "10"}
        ),
        call_headers("execute-sql"),
    ]
    assert [
        [(n, v) for n, v in seen.raw_headers if n.lower() not in ("host", "content-length")] for seen in fake.requests
    ] == [
        [
            ACCEPT,
            CONTENT_TYPE,
            USER_AGENT,
            ACCEPT_ENCODING,
            ("X-Tenant", "acme"),
            ("Authorization", "Bearer t0k3n"),
            *mcp.items(),
        ]
        for mcp in expected_mcp
    ]
    for seen in fake.requests:
        names = [name.lower() for name, _ in seen.raw_headers]
        assert sorted(names) == sorted(set(names))
        assert seen.http_method == "POST"
        assert seen.params["_meta"] == META
        assert seen.headers["MCP-Protocol-Version"] == seen.params["_meta"]["io.modelcontextprotocol/protocolVersion"]
    assert [seen.params for seen in fake.requests if seen.rpc_method == "tools/call"] == [
        {"name": "execute-sql", "arguments": arguments, "_meta": META},
        {"name": "execute-sql", "arguments": {}, "_meta": META},
    ]


@pytest.mark.parametrize(
    ("name", "header"),
    [
        pytest.param("größe", "=?base64?Z3LDtsOfZQ==?=", id="latin"),
        pytest.param("执行-sql", "=?base64?5omn6KGMLXNxbA==?=", id="cjk"),
        pytest.param(" padded", "=?base64?IHBhZGRlZA==?=", id="leading-space"),
        pytest.param("with space", "with space", id="interior-space-as-is"),
    ],
)
async def test_mcp_name_is_encoded_like_a_mirrored_string(fake: FakeServer, name: str, header: str) -> None:
    fake.tools = [tool(name)]
    async with fake.client() as client:
        listed = (await client.tools()).get(name)
        assert listed is not None
        await listed.call({})
        await client.call_tool(name)
    assert fake.wire()[2:] == [("tools/call", call_headers(header))] * 2
    assert [seen.params["name"] for seen in fake.requests[2:]] == [name, name]


# --- MirroringError --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param(
            {"limit": "ten"},
            "argument /limit cannot be mirrored into Mcp-Param-Limit (declared integer):"
            " expected an integer, got str 'ten'",
            id="string-for-integer",
        ),
        pytest.param(
            {"limit": True},
            "argument /limit cannot be mirrored into Mcp-Param-Limit (declared integer):"
            " expected an integer, got bool True",
            id="bool-for-integer",
        ),
        pytest.param(
            {"limit": 2**53},
            "argument /limit cannot be mirrored into Mcp-Param-Limit (declared integer):"
            " integer 9007199254740992 is outside the safe range ±(2**53 - 1)",
            id="integer-out-of-range",
        ),
        pytest.param(
            {"options": {"readOnly": "yes"}},
            "argument /options/readOnly cannot be mirrored into Mcp-Param-Read-Only (declared boolean):"
            " expected a boolean, got str 'yes'",
            id="string-for-boolean",
        ),
        pytest.param(
            {"database": 7},
            "argument /database cannot be mirrored into Mcp-Param-Database (declared string):"
            " expected a string, got int 7",
            id="int-for-string",
        ),
    ],
)
async def test_an_unmirrorable_argument_raises_before_sending_and_the_client_stays_usable(
    fake: FakeServer, arguments: dict[str, Any], message: str
) -> None:
    fake.tools = [SQL]
    async with fake.client() as client:
        sql = (await client.tools()).get("execute-sql")
        assert sql is not None
        fake.clear()
        with pytest.raises(mcpfsm.MirroringError) as caught:
            await sql.call({"query": "select 1", **arguments})
        assert str(caught.value) == message
        assert fake.requests == []
        outcome = await sql.call({"query": "select 1", "database": "analytics", "limit": 10.0})
    assert outcome.content == OK
    assert fake.wire() == [
        ("tools/call", call_headers("execute-sql", **{"Mcp-Param-Database": "analytics", "Mcp-Param-Limit": "10"}))
    ]


# --- malformed replies and failures ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "error", "message", "status"),
    [
        pytest.param(
            response(httpx.Response(200, text="not json", headers={"Content-Type": "application/json"})),
            mcpfsm.ProtocolError,
            "peer sent invalid JSON: Expecting value: line 1 column 1 (char 0)",
            None,
            id="not-json",
        ),
        pytest.param(
            response(httpx.Response(200, json=[{"jsonrpc": "2.0", "id": 2, "result": {}}])),
            mcpfsm.ProtocolError,
            "peer sent a JSON list, not a JSON-RPC message object",
            None,
            id="json-array",
        ),
        pytest.param(
            response(httpx.Response(200, json={"jsonrpc": "2.0", "id": 999, "result": {"content": []}})),
            mcpfsm.ProtocolError,
            "response id 999 does not match request id 2",
            None,
            id="wrong-id",
        ),
        pytest.param(
            response(
                httpx.Response(200, json={"jsonrpc": "2.0", "id": 999, "error": {"code": -32603, "message": "x"}})
            ),
            mcpfsm.ProtocolError,
            "error response id 999 does not match request id 2",
            None,
            id="error-with-wrong-id",
        ),
        pytest.param(
            result("ok"), mcpfsm.ProtocolError, 'peer response "result" is not an object', None, id="result-not-object"
        ),
        pytest.param(
            result({"content": {"type": "text"}}),
            mcpfsm.ProtocolError,
            'tools/call result "content" is not a list of objects',
            None,
            id="content-not-a-list",
        ),
        pytest.param(
            result({"content": [], "isError": "yes"}),
            mcpfsm.ProtocolError,
            'tools/call result "isError" is not a boolean',
            None,
            id="is-error-not-a-boolean",
        ),
        pytest.param(
            result({"content": [], "resultType": "incomplete"}),
            mcpfsm.ProtocolError,
            "tools/call answered an unknown resultType 'incomplete' (SEP-2322 knows 'complete' and 'input_required')",
            None,
            id="incomplete-result",
        ),
        pytest.param(
            response(httpx.Response(200, json={"id": 2, "result": {"content": []}})),
            mcpfsm.ProtocolError,
            'peer message lacks "jsonrpc": "2.0"',
            None,
            id="missing-jsonrpc",
        ),
        pytest.param(
            response(httpx.Response(200, text="hello")),
            mcpfsm.ProtocolError,
            "HTTP 200 with Content-Type 'text/plain'; expected application/json or text/event-stream",
            None,
            id="text-plain",
        ),
        pytest.param(
            response(httpx.Response(202)),
            mcpfsm.ProtocolError,
            "the server accepted tools/call without answering it",
            None,
            id="202-accepted",
        ),
        pytest.param(
            response(httpx.Response(502, html="<html><body>Bad gateway</body></html>")),
            mcpfsm.TransportError,
            "HTTP 502 Bad Gateway (<html><body>Bad gateway</body></html>)",
            502,
            id="html-502",
        ),
        pytest.param(
            response(httpx.Response(400, json={"detail": "not JSON-RPC"})),
            mcpfsm.TransportError,
            'HTTP 400 Bad Request ({"detail":"not JSON-RPC"})',
            400,
            id="400-without-json-rpc",
        ),
        pytest.param(
            response(httpx.Response(413)),
            mcpfsm.TransportError,
            "HTTP 413 Request Entity Too Large: the request was too large for the server (body or headers)",
            413,
            id="413",
        ),
        pytest.param(
            response(httpx.Response(431)),
            mcpfsm.TransportError,
            "HTTP 431 Request Header Fields Too Large: the request headers were too large for the server"
            " (mirrored Mcp-Param-* values count)",
            431,
            id="431",
        ),
        pytest.param(
            raises(httpx.ConnectError("connection refused")),
            mcpfsm.TransportError,
            "POST to MCP server failed: connection refused",
            None,
            id="connect-error",
        ),
        pytest.param(
            raises(httpx.ReadTimeout("timed out")),
            mcpfsm.TransportError,
            "POST to MCP server timed out (ReadTimeout)",
            None,
            id="read-timeout",
        ),
        pytest.param(
            sse(before=[{"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}]),
            mcpfsm.TransportError,
            "the server closed the event stream before answering request 2",
            None,
            id="sse-ends-before-the-response",
        ),
        pytest.param(
            rpc_error(-32602, "Invalid params", status=400, data={"field": "query"}),
            mcpfsm.RpcError,
            "JSON-RPC error -32602: Invalid params",
            None,
            id="rpc-error",
        ),
    ],
)
async def test_a_failed_call_raises_a_typed_error_and_the_client_stays_usable(
    fake: FakeServer, answer: Answer, error: type[mcpfsm.McpError], message: str, status: int | None
) -> None:
    async with fake.client() as client:
        fake.queue("tools/call", answer)
        with pytest.raises(error) as caught:
            await client.call_tool("echo", {"text": "hi"})
        assert (type(caught.value), str(caught.value)) == (error, message)
        if isinstance(caught.value, mcpfsm.TransportError):
            assert caught.value.status == status
        outcome = await client.call_tool("echo", {"text": "hi"})
    assert outcome.content == OK
    assert fake.methods() == ["server/discover", "tools/call", "tools/call"]


# --- results -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "content", "structured", "is_error"),
    [
        pytest.param({"content": OK}, OK, None, False, id="plain"),
        pytest.param({}, [], None, False, id="no-content"),
        pytest.param({"content": OK, "resultType": "complete"}, OK, None, False, id="explicit-complete"),
        pytest.param(
            {"content": [{"type": "text", "text": "boom"}], "isError": True},
            [{"type": "text", "text": "boom"}],
            None,
            True,
            id="tool-error-is-returned",
        ),
        pytest.param(
            {"content": OK, "structuredContent": {"rows": [[1]]}, "_meta": {"x": 1}},
            OK,
            {"rows": [[1]]},
            False,
            id="structured-content",
        ),
    ],
)
async def test_a_result_is_returned_as_tool_result(
    fake: FakeServer, answer: dict[str, Any], content: list[Any], structured: Any, is_error: bool
) -> None:
    async with fake.client() as client:
        fake.queue("tools/call", result(answer))
        outcome = await client.call_tool("echo")
    assert (outcome.content, outcome.structured_content, outcome.is_error, outcome.raw) == (
        content,
        structured,
        is_error,
        answer,
    )


async def test_a_result_can_arrive_after_notifications_on_an_event_stream(fake: FakeServer) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    notification = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
    async with fake.client(on_notification=lambda method, params: seen.append((method, params))) as client:
        fake.queue("tools/call", sse(result({"content": OK}), before=[notification], prefix=b": comment\n\n"))
        outcome = await client.call_tool("echo")
    assert (outcome.content, seen) == (OK, [("notifications/progress", {"progress": 1})])


# --- argument checks -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "arguments", "message"),
    [
        pytest.param("echo", ["text"], r"^arguments must be a mapping, got list$", id="list-arguments"),
        pytest.param("echo", "text", r"^arguments must be a mapping, got str$", id="str-arguments"),
        pytest.param(42, {}, r"^tool must be a Tool or a tool name, got int$", id="int-tool"),
    ],
)
async def test_call_tool_refuses_what_is_not_a_tool_or_a_mapping(
    fake: FakeServer, target: Any, arguments: Any, message: str
) -> None:
    async with fake.client() as client:
        with pytest.raises(TypeError, match=message):
            await client.call_tool(target, arguments)
    assert fake.methods() == ["server/discover"]


async def test_a_call_without_arguments_sends_an_empty_object(fake: FakeServer) -> None:
    fake.tools = [tool("echo")]
    async with fake.client() as client:
        echo = (await client.tools()).get("echo")
        assert echo is not None
        await echo.call()
        await client.call_tool("echo", None)
    assert [seen.params["arguments"] for seen in fake.requests[2:]] == [{}, {}]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: mcpfsm.Client(mcpfsm.HttpTransport(URL), protocol="bogus"), id="client"),
        pytest.param(lambda: mcpfsm.Client.http(URL, protocol="bogus"), id="client-http"),
    ],
)
def test_an_unknown_protocol_is_refused(make: Any) -> None:
    with pytest.raises(
        ValueError,
        match=r"^protocol must be 'auto' or one of \['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'\],"
        r" got 'bogus'$",
    ):
        make()


async def test_the_modern_era_is_negotiated_by_the_probe(fake: FakeServer) -> None:
    client = fake.client()
    assert client.protocol_version is None
    async with client:
        assert client.protocol_version == MODERN
    assert fake.wire() == [DISCOVER]
    assert fake.requests[0].params == {"_meta": META}
