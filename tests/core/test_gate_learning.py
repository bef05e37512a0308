"""What the gate learns from tools/list (results, JSON and SSE bodies, schemas files), and the values it gives out."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from mcpfsm._core.gate import (
    GateRefusal,
    GateSettings,
    Listing,
    Refusal,
    ToolSchema,
    Verdict,
    listing_from_body,
    listing_from_message,
    listing_from_result,
    read_schemas,
)
from mcpfsm._core.schema import MirroredParam

from .gate_cases import SCHEMA

TOOLS: list[Any] = [
    {"name": "execute", "inputSchema": SCHEMA},
    {"name": "plain", "inputSchema": {"type": "object"}},
    {"name": "bad", "inputSchema": {"type": "object", "properties": {"x": {"type": "number", "x-mcp-header": "X"}}}},
    {"title": "no name"},
    "not an object",
]
RESULT = {"tools": TOOLS, "ttlMs": 300000, "cacheScope": "public", "nextCursor": "page-2"}
EXECUTE = ToolSchema(
    name="execute",
    mirrored=(
        MirroredParam(path=("region",), token="Region", type="string"),
        MirroredParam(path=("count",), token="Count", type="integer"),
        MirroredParam(path=("dry",), token="Dry-Run", type="boolean"),
        MirroredParam(path=("options", "readOnly"), token="Read-Only", type="boolean"),
    ),
)
BAD = ToolSchema(
    name="bad",
    reason=(
        "x-mcp-header 'X' at /x is on a property with type 'number'; only 'string', 'integer' or 'boolean' can be"
        " mirrored"
    ),
)
LISTING = Listing(
    tools={"execute": EXECUTE, "plain": ToolSchema(name="plain"), "bad": BAD},
    ttl_ms=300000,
    cache_scope="public",
    next_cursor="page-2",
)


def test_a_result_teaches_each_tools_headers_and_the_pages_hints() -> None:
    listing = listing_from_result(RESULT)
    assert listing == LISTING
    assert not listing.tools["bad"].valid


@pytest.mark.parametrize(
    ("hints", "ttl_ms", "scope"),
    [
        pytest.param({}, None, "private", id="absent"),
        pytest.param({"ttlMs": -5, "cacheScope": "shared"}, 0, "private", id="negative-and-unknown"),
        pytest.param({"ttlMs": True, "cacheScope": "private"}, None, "private", id="boolean-ttl"),
        pytest.param({"ttlMs": 1.5}, None, "private", id="float-ttl"),
        pytest.param({"ttlMs": 0, "cacheScope": "public"}, 0, "public", id="zero"),
    ],
)
def test_hints(hints: dict[str, Any], ttl_ms: int | None, scope: str) -> None:
    listing = listing_from_result({"tools": [], **hints})
    assert listing is not None
    assert (listing.ttl_ms, listing.cache_scope) == (ttl_ms, scope)


def test_a_name_listed_twice_with_different_schemas_has_no_schema() -> None:
    listing = listing_from_result({"tools": [TOOLS[0], {"name": "execute", "inputSchema": {"type": "object"}}]})
    assert listing is not None
    assert listing.tools["execute"] == ToolSchema(
        name="execute", reason="the listing names this tool twice, with different schemas"
    )


@pytest.mark.parametrize("value", [None, [], {"tools": {}}, {"tool": []}, "x", 5])
def test_not_a_result(value: object) -> None:
    assert listing_from_result(value) is None


def test_a_message_is_a_success_response() -> None:
    assert listing_from_message({"jsonrpc": "2.0", "id": 1, "result": RESULT}) == LISTING
    for message in (
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32020, "message": "x"}},
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
        {"jsonrpc": "2.0", "result": RESULT},
        {"id": 1, "result": RESULT},
    ):
        assert listing_from_message(message) is None


def test_a_json_body() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": RESULT}).encode()
    assert listing_from_body(body, "application/json; charset=utf-8") == LISTING
    assert listing_from_body(body, None) == LISTING
    assert listing_from_body(b"{broken", "application/json") is None


def test_an_sse_body_past_notifications_split_anywhere() -> None:
    response = json.dumps({"jsonrpc": "2.0", "id": 1, "result": RESULT})
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}})
    body = f": comment\r\nevent: message\r\ndata: {note}\r\n\r\nid: 1\r\ndata: {response}\r\n\r\n".encode()
    assert listing_from_body(body, "text/event-stream") == LISTING
    assert listing_from_body(body[:-2], "Text/Event-Stream") is None  # the event never ended
    assert listing_from_body(b"data: [\n\n", "text/event-stream") is None


def test_a_schemas_file_holds_a_result_or_a_whole_response() -> None:
    assert read_schemas(json.dumps(RESULT)) == LISTING
    assert read_schemas(json.dumps({"jsonrpc": "2.0", "id": 1, "result": RESULT}).encode()) == LISTING


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("{", "a schemas file must hold UTF-8 JSON", id="not-json"),
        pytest.param(
            '{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"},"result":{}}',
            "a schemas file holds a JSON-RPC error response, not a tools/list result",
            id="error",
        ),
        pytest.param(
            '{"prompts":[]}',
            'a schemas file must hold a tools/list result ({"tools": [...]}) or a response carrying one',
            id="other",
        ),
    ],
)
def test_a_schemas_file_that_holds_none(content: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        read_schemas(content)


def test_records_round_trip_and_hold_no_value() -> None:
    record = LISTING.to_json()
    assert Listing.from_json(json.loads(json.dumps(record))) == LISTING
    assert json.dumps(record).count("us-west1") == 0
    assert record["tools"][0] == {
        "name": "execute",
        "mirrored": [
            {"path": ["region"], "token": "Region", "type": "string"},
            {"path": ["count"], "token": "Count", "type": "integer"},
            {"path": ["dry"], "token": "Dry-Run", "type": "boolean"},
            {"path": ["options", "readOnly"], "token": "Read-Only", "type": "boolean"},
        ],
    }


@pytest.mark.parametrize(
    "record",
    [
        None,
        {"tools": "x"},
        {"tools": [], "ttl_ms": -1, "cache_scope": "public", "next_cursor": None},
        {"tools": [], "ttl_ms": None, "cache_scope": "everyone", "next_cursor": None},
        {"tools": [{"name": 1, "mirrored": []}], "ttl_ms": None, "cache_scope": "public", "next_cursor": None},
        {"tools": [{"name": "a", "mirrored": [{"path": [], "token": "X", "type": "string"}]}], "cache_scope": "public"},
        {
            "tools": [{"name": "a", "mirrored": [{"path": ["x"], "token": "X", "type": "number"}]}],
            "cache_scope": "public",
        },
    ],
)
def test_a_bad_record_is_refused(record: object) -> None:
    with pytest.raises(ValueError, match=r"^not a (Listing|ToolSchema) record: "):
        Listing.from_json(record)


# --- outcomes and settings ----------------------------------------------------------------------------------------


def test_a_refusal_answers_with_a_json_rpc_error() -> None:
    verdict = Verdict.mismatch("Mcp-Name", "Mcp-Name does not match the body's params.name")
    refusal = Refusal.of_verdict(verdict, "req-1")
    assert refusal == Refusal(
        status=400,
        code=-32020,
        message="Header mismatch: Mcp-Name does not match the body's params.name",
        id="req-1",
        header="Mcp-Name",
    )
    assert json.loads(refusal.body()) == {
        "jsonrpc": "2.0",
        "id": "req-1",
        "error": {"code": -32020, "message": "Header mismatch: Mcp-Name does not match the body's params.name"},
    }
    body_problem = Refusal.of_verdict(Verdict.malformed(-32700, "the body is not UTF-8 JSON"), None)
    assert (body_problem.status, body_problem.code, body_problem.message) == (400, -32700, "the body is not UTF-8 JSON")
    with pytest.raises(ValueError, match=r"^an ok verdict refuses nothing$"):
        Refusal.of_verdict(Verdict(ok=True), 1)


def test_a_policy_refusal() -> None:
    refusal = GateRefusal(403, "writes are refused")
    assert (refusal.status, refusal.message, str(refusal)) == (403, "writes are refused", "403: writes are refused")
    assert Refusal.of_policy(refusal, 7) == Refusal(status=403, code=-32600, message="writes are refused", id=7)


@pytest.mark.parametrize(("status", "message"), [(200, "x"), (600, "x"), (True, "x"), ("403", "x"), (403, None)])
def test_a_policy_refusal_needs_an_error_status_and_a_message(status: Any, message: Any) -> None:
    with pytest.raises(ValueError, match=r"^GateRefusal (status must be an HTTP error status|message must be)"):
        GateRefusal(status, message)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"mode": "block"}, "mode must be one of 'verify', 'report', got 'block'"),
        ({"on_unknown": "ask"}, "on_unknown must be one of 'fetch', 'pass', 'reject', got 'ask'"),
        ({"legacy": "drop"}, "legacy must be one of 'strip', 'pass', 'reject', got 'drop'"),
        ({"max_body": -1}, "max_body must be a non-negative number of bytes, got -1"),
        ({"max_body": 1.5}, "max_body must be a non-negative number of bytes, got 1.5"),
        ({"learn_ttl": float("nan")}, "learn_ttl must be a non-negative number of seconds, got nan"),
        ({"policy": "tenant"}, "policy must be callable, got str"),
    ],
)
def test_settings_are_checked_once(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        GateSettings(**options)
