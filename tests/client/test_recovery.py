"""The -32020 recovery of SEP-2243, path by path, against a scripted MockTransport server (modern era)."""

from __future__ import annotations

import contextlib
from typing import Any, Final

import httpx
import pytest

import mcpfsm
from tests.support.fakeserver import (
    MODERN,
    Answer,
    FakeServer,
    response,
    result,
    rpc_error,
    sse,
)

QUERY: Final = {"type": "string"}
DATABASE: Final = {"type": "string", "x-mcp-header": "Database"}
REGION: Final = {"type": "string", "x-mcp-header": "Region"}


def sql_tool(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": ["query"], **extra}
    return {"name": "execute-sql", "description": "Run SQL", "inputSchema": schema}


STALE: Final = sql_tool({"query": QUERY, "database": DATABASE, "region": {"type": "string"}})
FRESH: Final = sql_tool({"query": QUERY, "database": DATABASE, "region": REGION})
ECHO: Final = {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
NOTE: Final = {"name": "note", "inputSchema": {"type": "object"}}
ARGS: Final = {"query": "select 1", "database": "analytics", "region": "us-west1"}

CALL: Final = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "execute-sql"}
SENT_STALE: Final = {**CALL, "Mcp-Param-Database": "analytics"}
SENT_FRESH: Final = {**SENT_STALE, "Mcp-Param-Region": "us-west1"}
LIST: Final = ("tools/list", {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
MISMATCH: Final = r"^JSON-RPC error -32020: Header mismatch$"

Path = list[tuple[str, str | None, int]]

RECOVERED: Final[Path] = [
    ("resolving", None, 1),
    ("planning", "resolved", 1),
    ("sending", "planned", 1),
    ("relisting", "mismatched", 1),
    ("comparing", "relisted", 1),
    ("retrying", "changed", 2),
    ("succeeded", "answered", 2),
]


def until_comparing() -> Path:
    return RECOVERED[:5]


def path(events: list[mcpfsm.CallEvent]) -> Path:
    return [(event.state, event.trigger, event.attempt) for event in events]


async def listed(fake: FakeServer, client: mcpfsm.Client, *tools: dict[str, Any]) -> mcpfsm.Tool:
    """List `tools` (STALE by default), then forget the requests so far; return the execute-sql handle."""
    fake.tools = list(tools or (ECHO, STALE))
    tool = (await client.tools()).get("execute-sql")
    assert tool is not None
    fake.clear()
    return tool


def header_mismatch(status: int) -> Answer:
    return rpc_error(-32020, "Header mismatch", status=status)


# --- the recovery that works -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "mismatch",
    [
        pytest.param(header_mismatch(400), id="http-400-json"),
        pytest.param(header_mismatch(200), id="http-200-json"),
        pytest.param(sse(header_mismatch(200)), id="sse-stream"),
        pytest.param(
            sse(header_mismatch(200), before=[{"jsonrpc": "2.0", "method": "notifications/message", "params": {}}]),
            id="sse-after-a-notification",
        ),
    ],
)
async def test_stale_listing_relists_every_page_and_retries_with_the_fresh_plan(
    fake: FakeServer, mismatch: Answer
) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        tool = await listed(fake, client)
        fake.tools, fake.page_size = [ECHO, NOTE, FRESH], 2
        fake.queue("tools/call", mismatch)
        outcome = await tool.call(ARGS)
    assert outcome.content == [{"type": "text", "text": "ok"}]
    assert fake.wire() == [("tools/call", SENT_STALE), LIST, LIST, ("tools/call", SENT_FRESH)]
    assert [seen.params.get("cursor") for seen in fake.requests if seen.rpc_method == "tools/list"] == [
        None,
        "page-2",
    ]
    assert [seen.params["arguments"] for seen in fake.requests if seen.rpc_method == "tools/call"] == [ARGS, ARGS]
    assert path(events) == RECOVERED


async def test_old_tool_handles_mirror_the_fresh_schema_after_a_recovery(fake: FakeServer) -> None:
    async with fake.client() as client:
        tool = await listed(fake, client)
        also_old = (await client.tools()).get("execute-sql")
        assert also_old is not None
        fake.tools = [ECHO, FRESH]
        fake.queue("tools/call", header_mismatch(400))
        await tool.call(ARGS)
        fake.clear()
        assert tool.mirrored == {("database",): "Mcp-Param-Database", ("region",): "Mcp-Param-Region"}
        await tool.call(ARGS)
        await also_old.call(ARGS)
        await client.call_tool(tool, ARGS)
    assert fake.wire() == [("tools/call", SENT_FRESH)] * 3


# --- recovery that ends with the original error ----------------------------------------------------


async def test_a_tool_gone_from_the_listing_raises_the_original_error(fake: FakeServer) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        tool = await listed(fake, client)
        fake.tools = [ECHO, NOTE]
        fake.queue("tools/call", rpc_error(-32020, "Header mismatch", data={"header": "Mcp-Param-Region"}))
        with pytest.raises(mcpfsm.HeaderMismatchError, match=MISMATCH) as caught:
            await tool.call(ARGS)
    assert (caught.value.code, caught.value.data, caught.value.__cause__) == (
        -32020,
        {"header": "Mcp-Param-Region"},
        None,
    )
    assert fake.wire() == [("tools/call", SENT_STALE), LIST]
    assert path(events)[3:] == [("relisting", "mismatched", 1), ("failed", "vanished", 1)]


@pytest.mark.parametrize(
    "fresh",
    [
        pytest.param(STALE, id="same-schema"),
        pytest.param(
            sql_tool({"region": {"type": "string"}, "database": DATABASE, "query": QUERY}), id="reordered-properties"
        ),
        pytest.param(
            {
                "inputSchema": {"required": ["query"], "properties": STALE["inputSchema"]["properties"]},
                "description": "Run SQL, reworded",
                "name": "execute-sql",
            },
            id="reordered-keys-and-new-description",
        ),
        pytest.param(
            sql_tool({"query": QUERY, "database": {"type": "string", "x-mcp-header": "DATABASE"}}),
            id="header-name-case-change",
        ),
        pytest.param(
            sql_tool({"query": QUERY, "database": DATABASE, "region": REGION, "zone": {**QUERY, "x-mcp-header": "Z"}}),
            id="new-annotation-on-an-argument-not-given",
        ),
    ],
)
async def test_an_unchanged_plan_raises_the_original_error_without_a_retry(
    fake: FakeServer, fresh: dict[str, Any]
) -> None:
    events: list[mcpfsm.CallEvent] = []
    arguments = {"query": "select 1", "database": "analytics"}
    async with fake.client(on_event=events.append) as client:
        tool = await listed(fake, client)
        fake.tools = [fresh]
        fake.queue("tools/call", header_mismatch(400))
        with pytest.raises(mcpfsm.HeaderMismatchError, match=MISMATCH) as caught:
            await tool.call(arguments)
    assert caught.value.__cause__ is None
    assert fake.wire() == [("tools/call", SENT_STALE), LIST]
    assert path(events) == [*until_comparing(), ("failed", "unchanged", 1)]


@pytest.mark.parametrize(
    ("relist", "cause", "message"),
    [
        pytest.param(
            [response(httpx.Response(500, text="boom"))],
            mcpfsm.TransportError,
            "HTTP 500 Internal Server Error (boom)",
            id="http-500",
        ),
        pytest.param(
            [rpc_error(-32603, "Internal error", status=200)],
            mcpfsm.RpcError,
            "JSON-RPC error -32603: Internal error",
            id="json-rpc-error",
        ),
        pytest.param(
            [result({"tools": [ECHO], "nextCursor": "c1"}), result({"tools": [NOTE], "nextCursor": "c1"})],
            mcpfsm.ProtocolError,
            "tools/list repeated cursor 'c1': the listing would never end",
            id="repeated-cursor",
        ),
        pytest.param(
            [result({"tools": "nope"})],
            mcpfsm.ProtocolError,
            'tools/list result has no "tools" list',
            id="malformed-page",
        ),
        pytest.param(
            [response(httpx.Response(200, text="<html>", headers={"Content-Type": "application/json"}))],
            mcpfsm.ProtocolError,
            "peer sent invalid JSON: Expecting value: line 1 column 1 (char 0)",
            id="not-json",
        ),
    ],
)
async def test_a_failed_relist_raises_the_original_error_caused_by_the_relist_failure(
    fake: FakeServer, relist: list[Answer], cause: type[Exception], message: str
) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        tool = await listed(fake, client)
        fake.queue("tools/call", header_mismatch(400))
        fake.queue("tools/list", *relist)
        with pytest.raises(mcpfsm.HeaderMismatchError, match=MISMATCH) as caught:
            await tool.call(ARGS)
        failure = caught.value.__cause__
        assert (type(failure), str(failure)) == (cause, message)
        assert fake.methods() == ["tools/call"] + ["tools/list"] * len(relist)
        assert path(events)[3:] == [("relisting", "mismatched", 1), ("failed", "relist_failed", 1)]
        # A failed relist keeps the definitions known before it: the handle still plans the stale schema.
        fake.clear()
        await tool.call(ARGS)
    assert fake.wire() == [("tools/call", SENT_STALE)]


@pytest.mark.parametrize(
    "second",
    [
        pytest.param(rpc_error(-32020, "Still mismatched"), id="http-400"),
        pytest.param(sse(rpc_error(-32020, "Still mismatched", status=200)), id="sse"),
    ],
)
async def test_a_second_header_mismatch_is_raised_without_a_third_call(fake: FakeServer, second: Answer) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        tool = await listed(fake, client)
        fake.tools = [FRESH]
        fake.queue("tools/call", header_mismatch(400), second)
        with pytest.raises(mcpfsm.HeaderMismatchError, match=r"^JSON-RPC error -32020: Still mismatched$"):
            await tool.call(ARGS)
    assert fake.wire() == [("tools/call", SENT_STALE), LIST, ("tools/call", SENT_FRESH)]
    assert path(events) == [*RECOVERED[:-1], ("failed", "mismatched", 2)]


@pytest.mark.parametrize(
    ("retry", "error", "message"),
    [
        pytest.param(
            rpc_error(-32602, "Invalid params"), mcpfsm.RpcError, r"^JSON-RPC error -32602: Invalid params$", id="rpc"
        ),
        pytest.param(
            response(httpx.Response(503)), mcpfsm.TransportError, r"^HTTP 503 Service Unavailable$", id="http-503"
        ),
        pytest.param(
            result({"content": "nope"}),
            mcpfsm.ProtocolError,
            r'^tools/call result "content" is not a list of objects$',
            id="malformed-result",
        ),
    ],
)
async def test_whatever_the_retry_raises_propagates(
    fake: FakeServer, retry: Answer, error: type[Exception], message: str
) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        tool = await listed(fake, client)
        fake.tools = [FRESH]
        fake.queue("tools/call", header_mismatch(400), retry)
        with pytest.raises(error, match=message):
            await tool.call(ARGS)
    assert fake.wire() == [("tools/call", SENT_STALE), LIST, ("tools/call", SENT_FRESH)]
    assert path(events) == [*RECOVERED[:-1], ("failed", "errored", 2)]


@pytest.mark.parametrize("status", [pytest.param(400, id="http-400"), pytest.param(200, id="http-200")])
@pytest.mark.parametrize(
    ("code", "error"),
    [
        pytest.param(-32001, mcpfsm.RpcError, id="-32001"),
        pytest.param(-32602, mcpfsm.RpcError, id="-32602"),
        pytest.param(-32603, mcpfsm.RpcError, id="-32603"),
        pytest.param(-32021, mcpfsm.RpcError, id="-32021"),
    ],
)
async def test_other_error_codes_propagate_at_once_without_a_relist(
    fake: FakeServer, status: int, code: int, error: type[Exception]
) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        tool = await listed(fake, client)
        fake.tools = [FRESH]
        fake.queue("tools/call", rpc_error(code, "Nope", status=status))
        with pytest.raises(error, match=rf"^JSON-RPC error {code}: Nope$") as caught:
            await tool.call(ARGS)
    assert type(caught.value) is mcpfsm.RpcError
    assert fake.wire() == [("tools/call", SENT_STALE)]
    assert path(events)[2:] == [("sending", "planned", 1), ("failed", "errored", 1)]


async def test_a_fresh_schema_that_cannot_mirror_the_arguments_raises_the_original_error(fake: FakeServer) -> None:
    events: list[mcpfsm.CallEvent] = []
    limit = {"type": "integer", "x-mcp-header": "Limit"}
    async with fake.client(on_event=events.append) as client:
        tool = await listed(fake, client, sql_tool({"query": QUERY, "database": DATABASE, "limit": QUERY}))
        fake.tools = [sql_tool({"query": QUERY, "database": DATABASE, "limit": limit})]
        fake.queue("tools/call", header_mismatch(400))
        with pytest.raises(mcpfsm.HeaderMismatchError, match=MISMATCH) as caught:
            await tool.call({"query": "select 1", "database": "analytics", "limit": "ten"})
    cause = caught.value.__cause__
    assert isinstance(cause, mcpfsm.MirroringError)
    assert (str(cause), cause.path, cause.header, cause.declared_type) == (
        "argument /limit cannot be mirrored into Mcp-Param-Limit (declared integer):"
        " expected an integer, got str 'ten'",
        ("limit",),
        "Mcp-Param-Limit",
        "integer",
    )
    assert fake.wire() == [("tools/call", SENT_STALE), LIST]
    assert path(events) == [*until_comparing(), ("failed", "unmirrorable", 1)]


# --- calls by plain name ---------------------------------------------------------------------------
# Resolving picks no definition for a plain name, so the first send carries Mcp-Method and
# Mcp-Name only, even when the client has listed the tool. Comparing plans "the same arguments against
# the fresh definition" the relist found, so a server that wants Mcp-Param-* headers gets them on the
# retry; a fresh definition without annotations gives the same plan, and the -32020 is raised.


async def test_a_call_by_name_mirrors_nothing_even_when_the_tool_was_listed(fake: FakeServer) -> None:
    async with fake.client() as client:
        await listed(fake, client, FRESH)
        await client.call_tool("execute-sql", ARGS)
    assert fake.wire() == [("tools/call", CALL)]


async def test_a_call_by_name_retries_with_the_fresh_definitions_headers(fake: FakeServer) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        fake.tools = [ECHO, FRESH]
        fake.queue("tools/call", header_mismatch(400))
        await client.call_tool("execute-sql", ARGS)
        assert fake.wire()[1:] == [("tools/call", CALL), LIST, ("tools/call", SENT_FRESH)]
        assert path(events) == RECOVERED
        # The relist refreshed the client's definitions, but a later call by name still mirrors nothing.
        fake.clear()
        await client.call_tool("execute-sql", ARGS)
    assert fake.wire() == [("tools/call", CALL)]


@pytest.mark.parametrize(
    "fresh",
    [
        pytest.param(sql_tool({"query": QUERY, "database": {"type": "string"}}), id="no-annotations"),
        pytest.param(sql_tool({"query": QUERY, "zone": {**QUERY, "x-mcp-header": "Zone"}}), id="argument-not-given"),
    ],
)
async def test_a_call_by_name_whose_fresh_plan_has_no_params_raises_the_original_error(
    fake: FakeServer, fresh: dict[str, Any]
) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        fake.tools = [fresh]
        fake.queue("tools/call", header_mismatch(400))
        with pytest.raises(mcpfsm.HeaderMismatchError, match=MISMATCH):
            await client.call_tool("execute-sql", ARGS)
    assert fake.wire()[1:] == [("tools/call", CALL), LIST]
    assert path(events) == [*until_comparing(), ("failed", "unchanged", 1)]


async def test_a_call_by_name_of_an_unlisted_tool_raises_the_original_error(fake: FakeServer) -> None:
    async with fake.client() as client:
        fake.tools = [ECHO]
        fake.queue("tools/call", header_mismatch(400))
        with pytest.raises(mcpfsm.HeaderMismatchError, match=MISMATCH):
            await client.call_tool("execute-sql", ARGS)
    assert fake.wire()[1:] == [("tools/call", CALL), LIST]


# --- the bound on extra requests -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fresh_tools", "answers", "calls"),
    [
        pytest.param([FRESH], [header_mismatch(400)], 2, id="recovered"),
        pytest.param([FRESH], [header_mismatch(400), header_mismatch(400)], 2, id="second-mismatch"),
        pytest.param([STALE], [header_mismatch(400)], 1, id="unchanged"),
        pytest.param([ECHO], [header_mismatch(400)], 1, id="vanished"),
    ],
)
@pytest.mark.parametrize("page_size", [pytest.param(None, id="one-page"), pytest.param(1, id="pages-of-one")])
async def test_a_call_makes_at_most_one_extra_listing_and_one_extra_call(
    fake: FakeServer, fresh_tools: list[dict[str, Any]], answers: list[Answer], calls: int, page_size: int | None
) -> None:
    async with fake.client() as client:
        tool = await listed(fake, client)
        fake.tools, fake.page_size = [NOTE, *fresh_tools, ECHO], page_size
        fake.queue("tools/call", *answers)
        with contextlib.suppress(mcpfsm.HeaderMismatchError):
            await tool.call(ARGS)
    cursors = [seen.params.get("cursor") for seen in fake.requests if seen.rpc_method == "tools/list"]
    assert cursors == ([None] if page_size is None else [None, "page-2", "page-3"])
    assert fake.methods() == ["tools/call", *["tools/list"] * len(cursors), *["tools/call"] * (calls - 1)]
