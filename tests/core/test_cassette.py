"""The cassette format (mcpfsm/_core/cassette.py): lines written and read back, every malformed line named, the
canonical JSON and the key a request is matched by, and which exchange settles the protocol."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpfsm._core.cassette import (
    CASSETTE_VERSION,
    REQUEST_HEADERS,
    RESPONSE_HEADERS,
    Cassette,
    canonical_json,
    encode_line,
    exchange_record,
    header_record,
    match_key,
    mirrored,
    parse_cassette,
    recorded_headers,
    settled_protocol,
    target_of,
)
from mcpfsm._core.errors import CassetteError, McpError

HEADER = {
    "mcpfsm_cassette": 1,
    "recorded_at": "2026-12-01T10:00:00.000Z",
    "server": "http://h/mcp",
    "protocol": "2026-07-28",
}
CALL = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}}
ANSWER = {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "hi"}]}}


def http_exchange(**changes: Any) -> dict[str, Any]:
    record = exchange_record(
        seq=1,
        message=CALL,
        request_headers={"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"},
        status=200,
        response_headers={"Content-Type": "application/json"},
        messages=[ANSWER],
        elapsed_ms=1.25,
    )
    record.update(changes)
    return record


def lines(*records: Any) -> list[str]:
    return [json.dumps(record) if not isinstance(record, str) else record for record in records]


def test_a_written_cassette_reads_back_as_written() -> None:
    text = encode_line(header_record(recorded_at=HEADER["recorded_at"], server="http://h/mcp", protocol="2026-07-28"))
    text += encode_line(http_exchange())
    assert text.count("\n") == 2 and text.endswith("\n")
    cassette = parse_cassette(text.split("\n"), source="c.jsonl")
    assert isinstance(cassette, Cassette)
    assert (cassette.source, cassette.server, cassette.protocol, cassette.transport) == (
        "c.jsonl",
        "http://h/mcp",
        "2026-07-28",
        "http",
    )
    [exchange] = cassette.exchanges
    assert (exchange.seq, exchange.line, exchange.method, exchange.status, exchange.elapsed_ms) == (
        1,
        2,
        "tools/call",
        200,
        1.2,
    )
    assert exchange.messages == (ANSWER,)
    assert exchange.response_headers == {"Content-Type": "application/json"}


def test_a_stdio_exchange_has_neither_headers_nor_status() -> None:
    record = exchange_record(
        seq=1, message=CALL, request_headers=None, status=None, response_headers=None, messages=[ANSWER], elapsed_ms=0
    )
    assert record == {"seq": 1, "request": {"message": CALL}, "response": {"messages": [ANSWER]}, "elapsed_ms": 0}
    header = header_record(recorded_at="t", server=["python", "server.py"], protocol="2025-11-25")
    cassette = parse_cassette(lines(header, record), source="s.jsonl")
    assert (cassette.transport, cassette.server) == ("stdio", ("python", "server.py"))
    assert (cassette.exchanges[0].request_headers, cassette.exchanges[0].status) == (None, None)


@pytest.mark.parametrize(
    ("records", "message", "line"),
    [
        pytest.param([], r"^c\.jsonl: empty: a cassette starts with its header line$", 1, id="empty"),
        pytest.param(
            [{**HEADER, "mcpfsm_cassette": 2}],
            r"^c\.jsonl: line 1: cassette version 2 is not one this mcpfsm reads \(it reads 1\)$",
            1,
            id="unknown-version",
        ),
        pytest.param(
            [{**HEADER, "mcpfsm_cassette": True}], r"^c\.jsonl: line 1: cassette version True", 1, id="bool-version"
        ),
        pytest.param([{"recorded_at": "t"}], r"^c\.jsonl: line 1: not a cassette header", 1, id="no-header"),
        pytest.param(["{not json"], r"^c\.jsonl: line 1: not JSON \(", 1, id="header-not-json"),
        pytest.param([HEADER, "[1, 2]"], r"^c\.jsonl: line 2: not a JSON object$", 2, id="array"),
        pytest.param([HEADER, http_exchange(), "{oops"], r"^c\.jsonl: line 3: not JSON \(", 3, id="not-json"),
        pytest.param(
            [HEADER, {k: v for k, v in http_exchange().items() if k != "seq"}],
            r"^c\.jsonl: line 2: an exchange needs seq \(an integer\)$",
            2,
            id="no-seq",
        ),
        pytest.param(
            [HEADER, http_exchange(response={"status": 200, "headers": {}})],
            r"^c\.jsonl: line 2: an exchange needs response\.messages \(a list\)$",
            2,
            id="no-messages",
        ),
        pytest.param(
            [HEADER, http_exchange(response={"headers": {}, "messages": []})],
            r"^c\.jsonl: line 2: an exchange needs response\.status \(an HTTP status\) on an HTTP cassette$",
            2,
            id="http-without-status",
        ),
        pytest.param(
            [HEADER, http_exchange(request={"message": {"jsonrpc": "2.0", "id": 1}, "headers": {}})],
            r"^c\.jsonl: line 2: an exchange needs request\.message\.method \(a string\)$",
            2,
            id="no-method",
        ),
        pytest.param(
            [{**HEADER, "protocol": 7}], r"^c\.jsonl: line 1: the header lacks protocol", 1, id="bad-protocol"
        ),
        pytest.param(
            [{**HEADER, "server": []}], r"^c\.jsonl: line 1: the header's server is neither", 1, id="empty-argv"
        ),
    ],
)
def test_a_malformed_cassette_is_a_cassette_error_naming_its_line(
    records: list[Any], message: str, line: int
) -> None:
    with pytest.raises(CassetteError, match=message) as caught:
        parse_cassette(lines(*records), source="c.jsonl")
    assert caught.value.line == line
    assert isinstance(caught.value, McpError)


def test_blank_lines_are_skipped_but_counted() -> None:
    cassette = parse_cassette(["", json.dumps(HEADER), "   ", json.dumps(http_exchange())], source="c")
    assert cassette.exchanges[0].line == 4


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        ({"a": 1, "b": [1.0, {"c": 2}]}, {"b": [1, {"c": 2.0}], "a": 1.0}, True),
        ({"a": 1.5}, {"a": 1}, False),
        ({"a": True}, {"a": 1}, False),
        ({"a": "1"}, {"a": 1}, False),
        ({"a": None}, {}, False),
        ({"s": "Hello, 世界"}, {"s": "Hello, 世界"}, True),
    ],
)
def test_canonical_json_compares_numbers_as_values_and_ignores_key_order(left: Any, right: Any, equal: bool) -> None:
    assert (canonical_json(left) == canonical_json(right)) is equal


def test_canonical_json_has_no_whitespace_and_sorted_keys() -> None:
    assert canonical_json({"b": 1, "a": {"d": 2.0, "c": [1, 2]}}) == '{"a":{"c":[1,2],"d":2},"b":1}'


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_canonical_json_survives_a_round_trip_through_json(value: Any) -> None:
    assert canonical_json(json.loads(json.dumps(value))) == canonical_json(value)
    assert canonical_json(json.loads(canonical_json(value))) == canonical_json(value)


def test_the_match_key_ignores_the_id_the_progress_token_and_what_describes_the_client() -> None:
    ours = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "echo",
            "arguments": {"text": "hi"},
            "_meta": {
                "progressToken": 7,
                "io.modelcontextprotocol/clientInfo": {"name": "mcpfsm", "version": "0.1.0"},
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "traceparent": "00-abc-def-01",
                "tracestate": "x=1",
                "baggage": "k=v",
            },
        },
    }
    theirs = {
        "jsonrpc": "2.0",
        "id": "a-string",
        "method": "tools/call",
        "params": {
            "arguments": {"text": "hi"},
            "name": "echo",
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "2.3.0"},
            },
        },
    }
    assert match_key(ours, {"Mcp-Method": "tools/call", "Mcp-Name": "echo"}) == match_key(
        theirs, {"mcp-method": "tools/call", "mcp-name": "echo"}
    )
    # A difference that matters: the arguments, the protocol version, the Mcp-Name header.
    other = {**theirs, "params": {**theirs["params"], "arguments": {"text": "ho"}}}
    assert match_key(other, None) != match_key(theirs, None)
    assert match_key(theirs, {"Mcp-Name": "other"}) != match_key(theirs, {"Mcp-Name": "echo"})


def test_absent_params_and_an_emptied_meta_match_empty_params() -> None:
    bare = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert match_key(bare, None) == match_key({**bare, "params": {}}, None)
    assert match_key(bare, None) == match_key({**bare, "params": {"_meta": {"progressToken": 1}}}, None)


def test_initialize_matches_whatever_client_info_it_carries() -> None:
    ours = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
            "capabilities": {}, "clientInfo": {"name": "mcpfsm", "version": "0.1.0"}}}
    theirs = {**ours, "params": {**ours["params"], "clientInfo": {"name": "mcp", "version": "0.1.0"}}}
    assert match_key(ours, {}) == match_key(theirs, {})


def test_recorded_headers_keep_exactly_the_listed_ones_and_every_mirrored_one() -> None:
    sent = {
        "MCP-Protocol-Version": "2026-07-28",
        "mcp-method": "tools/call",
        "Mcp-Name": "execute-sql",
        "Mcp-Param-Database": "analytics",
        "mcp-param-read-only": "true",
        "Mcp-Session-Id": "s-1",
        "Authorization": "Bearer secret",
        "DPoP": "proof",
        "Cookie": "c=1",
        "X-Tenant": "acme",
    }
    assert recorded_headers(sent, REQUEST_HEADERS) == {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "execute-sql",
        "Mcp-Param-Database": "analytics",
        "mcp-param-read-only": "true",
        "Mcp-Session-Id": "s-1",
    }
    answer = [("content-type", "text/event-stream"), ("Set-Cookie", "x"), ("www-authenticate", "Bearer")]
    assert recorded_headers(answer, RESPONSE_HEADERS) == {
        "Content-Type": "text/event-stream",
        "WWW-Authenticate": "Bearer",
    }
    assert mirrored(sent) == {("mcp-param-database", "analytics"), ("mcp-param-read-only", "true")}


def test_every_string_of_a_line_goes_through_the_redaction_and_the_line_stays_json() -> None:
    record = http_exchange()
    answer = {"jsonrpc": "2.0", "id": 3, "result": {"text": 'tok"en and tok"en', 'tok"en': 1}}
    record["response"]["messages"] = [answer]
    line = encode_line(record, lambda text: text.replace('tok"en', "[redacted]"))
    assert 'tok\\"en' not in line and "[redacted] and [redacted]" in line
    assert json.loads(line)["response"]["messages"][0]["result"] == {
        "text": "[redacted] and [redacted]",
        "[redacted]": 1,
    }


@pytest.mark.parametrize(
    ("message", "headers", "messages", "settled"),
    [
        ({"method": "initialize"}, {}, [{"result": {"protocolVersion": "2025-06-18"}}], "2025-06-18"),
        ({"method": "initialize"}, {}, [{"error": {"code": -32602}}], None),
        ({"method": "server/discover"}, {"MCP-Protocol-Version": "2026-07-28"},
         [{"result": {"supportedVersions": ["2026-07-28"]}}], "2026-07-28"),
        ({"method": "server/discover"}, {"MCP-Protocol-Version": "2026-07-28"},
         [{"result": {"supportedVersions": ["2025-11-25"]}}], None),
        ({"method": "server/discover"}, {"MCP-Protocol-Version": "2026-07-28"}, [], None),
        ({"method": "tools/list"}, {"mcp-protocol-version": "2026-07-28"}, [{"result": {"tools": []}}], "2026-07-28"),
        ({"method": "tools/list"}, {"MCP-Protocol-Version": "2025-11-25"}, [{"result": {"tools": []}}], "2025-11-25"),
        ({"method": "tools/list", "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}},
         None, [{"result": {}}], "2026-07-28"),
        ({"method": "tools/list"}, None, [{"result": {}}], None),
    ],
)
def test_the_protocol_is_settled_by_the_first_exchange_that_proves_it(
    message: dict[str, Any], headers: dict[str, str] | None, messages: list[Any], settled: str | None
) -> None:
    assert settled_protocol(message, headers, messages) == settled


def test_target_of_names_the_tool_the_prompt_and_the_resource() -> None:
    assert target_of("tools/call", {"name": "echo"}) == "echo"
    assert target_of("prompts/get", {"name": "greet"}) == "greet"
    assert target_of("resources/read", {"uri": "res://x"}) == "res://x"
    assert target_of("tools/list", {}) is None
    assert target_of("tools/call", {"name": 3}) is None


def test_the_version_is_one() -> None:
    assert CASSETTE_VERSION == 1 == header_record(recorded_at="t", server="u", protocol=None)["mcpfsm_cassette"]


def test_the_users_answers_are_masked_and_matching_reads_them_masked() -> None:
    from mcpfsm._core.cassette import ANSWER, match_key, without_answers

    def resend(name: str) -> dict[str, Any]:
        answer = {"action": "accept", "content": {"password": name}}
        params = {"name": "login", "arguments": {}, "inputResponses": {"r1": answer, "r2": "odd"}, "requestState": "s"}
        return {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}

    masked = without_answers(resend("hunter2"))
    assert masked["params"]["inputResponses"] == {"r1": {"action": "accept", "content": ANSWER}, "r2": ANSWER}
    assert masked["params"]["requestState"] == "s" and "hunter2" not in str(masked)
    assert resend("hunter2")["params"]["inputResponses"]["r1"]["content"] == {"password": "hunter2"}  # not changed
    # A cassette written with the answers masked matches the live resend, and so does one written with them.
    assert match_key(masked, None) == match_key(resend("hunter2"), None) == match_key(resend("other"), None)
    declined = resend("x")
    declined["params"]["inputResponses"]["r1"]["action"] = "decline"
    assert match_key(declined, None) != match_key(masked, None)
    plain = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    assert without_answers(plain) is plain
