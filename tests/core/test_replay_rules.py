"""What a replay answers, and when (mcpfsm/_core/replay.py): matching, lifecycle and listings, strict order, the
mirroring check, the era's own answers, and every fault, each rule on a small cassette built here."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest

from mcpfsm._core.cassette import Cassette, exchange_record, header_record, parse_cassette
from mcpfsm._core.faults import Fault, delay, drop_after_request, http_error, mismatch_once, session_expired
from mcpfsm._core.replay import Answer, ReplayBook

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
SCHEMA: Final = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "options": {"type": "object", "properties": {"readOnly": {"type": "boolean", "x-mcp-header": "Read-Only"}}},
        "database": {"type": "string", "x-mcp-header": "Database"},
    },
}
TOOLS: Final = [
    {"name": "execute-sql", "inputSchema": SCHEMA},
    {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
]
SQL: Final = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}
SQL_HEADERS: Final = {"Mcp-Param-Database": "analytics", "Mcp-Param-Read-Only": "true"}


def request(request_id: int | None, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if request_id is not None:
        message["id"] = request_id
    message["method"] = method
    if params is not None:
        message["params"] = params
    return message


def result(request_id: int, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def headers_for(method: str, params: dict[str, Any] | None, protocol: str = MODERN, **extra: str) -> dict[str, str]:
    headers = {"MCP-Protocol-Version": protocol}
    if protocol == MODERN:
        headers["Mcp-Method"] = method
        name = (params or {}).get("name")
        if name is not None:
            headers["Mcp-Name"] = name
    return {**headers, **extra}


class Recording:
    """A cassette written exchange by exchange, as the recorder writes it."""

    def __init__(self, protocol: str | None = MODERN, *, stdio: bool = False) -> None:
        self.stdio = stdio
        server: Any = ["python", "server.py"] if stdio else "http://127.0.0.1:1/mcp"
        self.lines = [json.dumps(header_record(recorded_at="t", server=server, protocol=protocol))]
        self.protocol = protocol

    def add(
        self,
        message: dict[str, Any],
        messages: list[Any],
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        response_headers: dict[str, str] | None = None,
    ) -> Recording:
        params = message.get("params")
        sent = headers if headers is not None else headers_for(message["method"], params, self.protocol or MODERN)
        record = exchange_record(
            seq=len(self.lines),
            message=message,
            request_headers=None if self.stdio else sent,
            status=None if self.stdio else status,
            response_headers=None if self.stdio else (response_headers or {"Content-Type": "application/json"}),
            messages=messages,
            elapsed_ms=1,
        )
        self.lines.append(json.dumps(record))
        return self

    def cassette(self) -> Cassette:
        return parse_cassette(self.lines, source="test.jsonl")

    def book(self, *, mode: str = "any", faults: tuple[Fault, ...] = ()) -> ReplayBook:
        return ReplayBook(self.cassette(), mode=mode, faults=faults)


def modern_session() -> Recording:
    recording = Recording()
    recording.add(request(1, "tools/list"), [result(1, {"tools": TOOLS})])
    call = {"name": "execute-sql", "arguments": SQL}
    recording.add(
        request(2, "tools/call", call),
        [result(2, {"content": [{"type": "text", "text": "first"}]})],
        headers=headers_for("tools/call", call, **SQL_HEADERS),
    )
    recording.add(
        request(3, "tools/call", call),
        [result(3, {"content": [{"type": "text", "text": "second"}]})],
        headers=headers_for("tools/call", call, **SQL_HEADERS),
    )
    echo = {"name": "echo", "arguments": {"text": "hi"}}
    recording.add(request(4, "tools/call", echo), [result(4, {"content": [{"type": "text", "text": "hi"}]})])
    return recording


def ask(
    book: ReplayBook, request_id: int | None, method: str, params: dict[str, Any] | None = None, **extra: str
) -> Answer:
    protocol = book.cassette.protocol or MODERN
    headers = None if book.cassette.transport == "stdio" else headers_for(method, params, protocol, **extra)
    return book.answer(request(request_id, method, params), headers)


def sql(book: ReplayBook, request_id: int, **headers: str) -> Answer:
    sent = headers if headers else SQL_HEADERS
    return ask(book, request_id, "tools/call", {"name": "execute-sql", "arguments": SQL}, **sent)


def text_of(answer: Answer) -> str:
    return str(answer.messages[-1]["result"]["content"][0]["text"])


def error_of(answer: Answer) -> tuple[int | None, int, str]:
    error = answer.messages[-1]["error"]
    return answer.status, error["code"], error["message"]


def test_requests_match_the_first_unused_exchange_and_answer_with_their_own_id() -> None:
    book = modern_session().book()
    first, second = sql(book, 40), sql(book, 41)
    assert (text_of(first), first.messages[-1]["id"], first.seq) == ("first", 40, 2)
    assert (text_of(second), second.messages[-1]["id"], second.seq) == ("second", 41, 3)
    assert (first.status, first.headers, first.event_stream) == (200, (("Content-Type", "application/json"),), False)


def test_a_used_up_call_is_a_32603_naming_the_method_and_the_tool() -> None:
    book = modern_session().book()
    sql(book, 1), sql(book, 2)
    assert error_of(sql(book, 3)) == (
        200,
        -32603,
        "no recorded exchange for tools/call 'execute-sql' left in test.jsonl (all 2 recorded were used)",
    )


def test_other_arguments_are_a_32603_saying_so() -> None:
    answer = ask(modern_session().book(), 9, "tools/call", {"name": "echo", "arguments": {"text": "ho"}})
    assert error_of(answer) == (
        200,
        -32603,
        "no recorded exchange for tools/call 'echo' with these params in test.jsonl (1 recorded with other params)",
    )


@pytest.mark.parametrize(
    ("method", "params", "named"),
    [
        ("resources/read", {"uri": "res://static/readme"}, "resources/read 'res://static/readme'"),
        ("prompts/get", {"name": "greet", "arguments": {}}, "prompts/get 'greet'"),
        ("completion/complete", {}, "completion/complete"),
    ],
)
def test_an_unmatched_request_names_its_uri_or_prompt(method: str, params: dict[str, Any], named: str) -> None:
    answer = ask(modern_session().book(), 5, method, params)
    assert error_of(answer) == (200, -32603, f"no recorded exchange for {named} in test.jsonl")


def test_listings_answer_in_recorded_order_then_the_last_one_used_again() -> None:
    recording = modern_session()
    grown = [*TOOLS, {"name": "new", "inputSchema": {"type": "object"}}]
    recording.add(request(5, "tools/list"), [result(5, {"tools": grown})])
    book = recording.book()
    answers = [ask(book, n, "tools/list") for n in range(10, 14)]
    assert [(a.seq, len(a.messages[-1]["result"]["tools"])) for a in answers] == [(1, 2), (5, 3), (5, 3), (5, 3)]


def test_a_listing_kind_once_used_up_answers_with_the_last_one_used() -> None:
    recording = Recording()
    recording.add(request(1, "tools/list", {"cursor": "p2"}), [result(1, {"tools": [TOOLS[1]]})])
    recording.add(request(2, "tools/list", {"cursor": "p2"}), [result(2, {"tools": TOOLS})])
    book = recording.book()
    assert [ask(book, n, "tools/list", {"cursor": "p2"}).seq for n in range(5)] == [1, 2, 2, 2, 2]


def test_strict_mode_wants_the_recorded_order_except_for_lifecycle_and_listings() -> None:
    book = modern_session().book(mode="strict")
    echo = ask(book, 1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert error_of(echo) == (
        200,
        -32603,
        "no recorded exchange for tools/call 'echo' in strict order in test.jsonl"
        " (the next recorded request is tools/call 'execute-sql')",
    )
    assert ask(book, 2, "tools/list").seq == 1
    assert [sql(book, 3).seq, ask(book, 4, "tools/list").seq, sql(book, 5).seq] == [2, 1, 3]
    assert ask(book, 6, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}).seq == 4
    # In any order, the same echo first is answered at once.
    assert ask(modern_session().book(), 1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}).seq == 4


def test_a_call_mirroring_otherwise_is_refused_with_32020_naming_the_header_and_keeps_its_exchange() -> None:
    book = modern_session().book()
    refused = sql(book, 1, **{"Mcp-Param-Database": "prod", "Mcp-Param-Read-Only": "true"})
    assert error_of(refused) == (
        400,
        -32020,
        "Mcp-Param-Database does not match the recorded call of 'execute-sql': sent 'prod', recorded 'analytics'",
    )
    missing = sql(book, 2, **{"Mcp-Param-Read-Only": "true"})
    assert error_of(missing)[2] == (
        "Mcp-Param-Database does not match the recorded call of 'execute-sql': sent nothing, recorded 'analytics'"
    )
    assert text_of(sql(book, 3)) == "first"  # neither refusal used up the first exchange


def test_header_names_compare_without_case() -> None:
    book = modern_session().book()
    assert text_of(sql(book, 1, **{"mcp-param-database": "analytics", "MCP-PARAM-READ-ONLY": "true"})) == "first"


def test_a_different_mcp_name_is_no_match() -> None:
    book = modern_session().book()
    answer = book.answer(
        request(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
        {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "=?base64?ZWNobw==?="},
    )
    assert error_of(answer)[1] == -32603


def test_a_legacy_cassette_answers_discover_as_a_legacy_server_does() -> None:
    recording = Recording(LEGACY)
    recording.add(
        request(1, "initialize", {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "mcpfsm"}}),
        [result(1, {"protocolVersion": LEGACY, "capabilities": {"tools": {}}})],
        headers={},
        response_headers={"Content-Type": "application/json", "Mcp-Session-Id": "s-1"},
    )
    book = recording.book()
    assert error_of(ask(book, 1, "server/discover")) == (400, -32601, "Method not found")
    # Another client, other capabilities: the recorded initialize answers it all the same, and opens a session.
    other = {"protocolVersion": LEGACY, "capabilities": {"roots": {}}, "clientInfo": {"name": "mcp"}}
    opened = book.answer(request(2, "initialize", other), {})
    assert opened.messages[-1] == result(2, {"protocolVersion": LEGACY, "capabilities": {"tools": {}}})
    assert ("Mcp-Session-Id", "s-1") in opened.headers
    again = book.answer(request(3, "initialize", other), {})
    assert ("Mcp-Session-Id", "s-1-2") in again.headers


def test_a_modern_cassette_without_discover_answers_one_and_refuses_initialize_with_32022() -> None:
    recording = modern_session()
    recording.add(request(5, "resources/list"), [result(5, {"resources": []})])
    book = recording.book()
    discover = ask(book, 1, "server/discover")
    assert discover.messages[-1] == result(
        1,
        {"resultType": "complete", "supportedVersions": [MODERN], "capabilities": {"tools": {}, "resources": {}}},
    )
    initialize = book.answer(request(2, "initialize", {"protocolVersion": LEGACY}), {})
    assert initialize.status == 400
    assert initialize.messages[-1]["error"] == {
        "code": -32022,
        "message": "Unsupported protocol version",
        "data": {"supported": [MODERN], "requested": LEGACY},
    }


def test_ping_is_answered_and_notifications_and_answers_are_accepted() -> None:
    book = modern_session().book()
    assert ask(book, 1, "ping").messages[-1] == result(1, {})
    assert ask(book, None, "notifications/cancelled", {"requestId": 3}) == Answer(
        status=202, note="a notification not recorded"
    )
    assert book.answer({"jsonrpc": "2.0", "id": 99, "result": {}}, {}).status == 202
    refused = book.answer({"id": 1, "method": "tools/list"}, {})
    assert error_of(refused) == (400, -32600, "Invalid Request: not a JSON-RPC 2.0 message")


def test_progress_notifications_carry_the_requests_own_token() -> None:
    recording = Recording(stdio=True)
    params = {"name": "slow", "arguments": {}, "_meta": {"progressToken": 3}}
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 3, "progress": 1}}
    other = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "x", "progress": 1}}
    recording.add(request(3, "tools/call", params), [progress, other, result(3, {"content": []})])
    book = recording.book()
    answer = book.answer(request(9, "tools/call", {**params, "_meta": {"progressToken": "t9"}}), None)
    assert answer.messages == (
        {**progress, "params": {"progressToken": "t9", "progress": 1}},
        other,
        result(9, {"content": []}),
    )
    assert (answer.status, answer.headers) == (None, ())


def test_a_recorded_event_stream_is_answered_as_one() -> None:
    recording = Recording()
    log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}
    recording.add(
        request(1, "tools/call", {"name": "echo", "arguments": {}}),
        [log, result(1, {"content": []})],
        response_headers={"Content-Type": "text/event-stream"},
    )
    answer = ask(recording.book(), 5, "tools/call", {"name": "echo", "arguments": {}})
    assert (answer.event_stream, answer.messages) == (True, (log, result(5, {"content": []})))


# --- faults ------------------------------------------------------------------------------------------------


def listed_tokens(answer: Answer) -> dict[str, Any]:
    tools = answer.messages[-1]["result"]["tools"]
    sql_schema = tools[0]["inputSchema"]["properties"]
    return {"options.readOnly": sql_schema["options"]["properties"]["readOnly"]["x-mcp-header"],
            "database": sql_schema["database"]["x-mcp-header"]}


def test_mismatch_once_answers_32020_changes_the_next_listing_and_lets_the_retry_through() -> None:
    book = modern_session().book(faults=(mismatch_once("execute-sql"),))
    assert error_of(sql(book, 1)) == (
        400,
        -32020,
        "Mcp-Param header mismatch for tool 'execute-sql' (mismatch_once('execute-sql'): the tool's schema changed)",
    )
    # The first annotated property, depth first in properties order, is options.readOnly (before database).
    changed = {"options.readOnly": "Read-Only-Changed", "database": "Database"}
    assert listed_tokens(ask(book, 2, "tools/list")) == changed
    assert listed_tokens(ask(book, 3, "tools/list")) == {"options.readOnly": "Read-Only", "database": "Database"}
    retried = sql(book, 4, **{"Mcp-Param-Database": "analytics", "Mcp-Param-Read-Only-Changed": "true"})
    assert text_of(retried) == "first"  # the refused call did not use up the exchange
    # Only the retry goes through whatever it mirrors: the next call is checked again.
    assert error_of(sql(book, 5, **{"Mcp-Param-Database": "analytics"}))[1] == -32020
    assert text_of(sql(book, 6)) == "second"


def test_mismatch_once_on_a_tool_without_annotations_leaves_the_listing_alone() -> None:
    book = modern_session().book(faults=(mismatch_once("echo"),))
    assert error_of(ask(book, 1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}))[1] == -32020
    assert ask(book, 2, "tools/list").messages[-1]["result"]["tools"] == TOOLS
    assert text_of(ask(book, 3, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})) == "hi"


def test_a_fault_fires_as_many_times_as_it_says() -> None:
    book = modern_session().book(faults=(http_error("tools/call", 503, times=2),))
    assert [sql(book, n).status for n in range(3)] == [503, 503, 200]


def test_http_error_answers_its_status_with_an_empty_body_and_keeps_the_exchange() -> None:
    book = modern_session().book(faults=(http_error("tools/call", 503),))
    assert sql(book, 1) == Answer(status=503, note="http_error('tools/call', 503)")
    assert text_of(sql(book, 2)) == "first"


def test_drop_after_request_drops_once_and_keeps_the_exchange() -> None:
    book = modern_session().book(faults=(drop_after_request("tools/call"),))
    assert sql(book, 1) == Answer(drop=True, note="drop_after_request('tools/call')")
    assert text_of(sql(book, 2)) == "first"


def test_delay_holds_back_whatever_answers() -> None:
    book = modern_session().book(faults=(delay("tools/call", 1.5), http_error("tools/call", 500)))
    first = sql(book, 1)
    assert (first.status, first.delay) == (500, 1.5)
    second = sql(book, 2)
    assert (text_of(second), second.delay) == ("first", 0.0)


def legacy_session() -> Recording:
    recording = Recording(LEGACY)
    recording.add(
        request(1, "initialize", {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "mcpfsm"}}),
        [result(1, {"protocolVersion": LEGACY, "capabilities": {"tools": {}}})],
        headers={},
        response_headers={"Content-Type": "text/event-stream", "Mcp-Session-Id": "abc"},
    )
    recording.add(request(None, "notifications/initialized"), [], status=202, response_headers={})
    recording.add(request(2, "tools/list"), [result(2, {"tools": TOOLS})])
    for n in (3, 4):
        recording.add(request(n, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
                      [result(n, {"content": [{"type": "text", "text": f"echo {n}"}]})])
    return recording


def legacy(book: ReplayBook, request_id: int | None, method: str, session: str | None, params: Any = None) -> Answer:
    headers = {"MCP-Protocol-Version": LEGACY}
    if session is not None:
        headers["Mcp-Session-Id"] = session
    return book.answer(request(request_id, method, params), headers)


def opened(book: ReplayBook, request_id: int) -> str:
    answer = book.answer(request(request_id, "initialize", {"protocolVersion": LEGACY, "capabilities": {}}), {})
    return dict(answer.headers)["Mcp-Session-Id"]


def test_session_expired_answers_404_after_n_requests_of_the_session_and_forgets_it() -> None:
    book = legacy_session().book(faults=(session_expired(after=2),))
    session = opened(book, 1)
    assert legacy(book, None, "notifications/initialized", session).status == 202  # not counted: no id
    assert legacy(book, 2, "tools/list", session).status == 200
    assert legacy(book, 3, "tools/call", session, {"name": "echo", "arguments": {"text": "hi"}}).status == 200
    expired = legacy(book, 4, "tools/call", session, {"name": "echo", "arguments": {"text": "hi"}})
    assert error_of(expired) == (404, -32600, "Session not found")
    # The session is gone for good; a new one starts the count again (times=1: nothing more fires).
    assert legacy(book, 5, "tools/list", session).status == 404
    renewed = opened(book, 6)
    assert renewed == "abc-2"
    answer = legacy(book, 7, "tools/call", renewed, {"name": "echo", "arguments": {"text": "hi"}})
    assert text_of(answer) == "echo 4"
    assert ("Mcp-Session-Id", "abc-2") not in answer.headers  # the recorded call carried no session header back


def test_requests_before_a_session_do_not_count_towards_its_expiry() -> None:
    book = legacy_session().book(faults=(session_expired(after=0),))
    assert error_of(legacy(book, 1, "server/discover", None))[:2] == (400, -32601)
    session = opened(book, 2)
    assert legacy(book, 3, "tools/list", session).status == 404


def test_session_expired_counts_each_session_afresh() -> None:
    book = legacy_session().book(faults=(session_expired(after=1, times=2),))
    first = opened(book, 1)
    assert [legacy(book, n, "tools/list", first).status for n in (2, 3)] == [200, 404]
    second = opened(book, 4)
    assert [legacy(book, n, "tools/list", second).status for n in (5, 6)] == [200, 404]
    third = opened(book, 7)
    assert [legacy(book, n, "tools/list", third).status for n in (8, 9, 10)] == [200, 200, 200]


def test_an_unknown_session_is_404_and_a_deleted_one_too() -> None:
    book = legacy_session().book()
    assert legacy(book, 1, "tools/list", "made-up").status == 404
    session = opened(book, 2)
    assert legacy(book, 3, "tools/list", session).status == 200
    assert book.close_session(session) is True
    assert book.close_session(session) is False
    assert legacy(book, 4, "tools/list", session).status == 404


@pytest.mark.parametrize("fault", [http_error("tools/call", 500), session_expired()], ids=str)
def test_a_fault_that_needs_http_is_refused_on_a_stdio_cassette(fault: Fault) -> None:
    with pytest.raises(ValueError, match=r"needs HTTP; test\.jsonl was recorded over stdio$"):
        Recording(stdio=True).book(faults=(fault,))


def test_bad_modes_and_faults_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^mode must be one of \['any', 'strict'\], got 'loose'$"):
        modern_session().book(mode="loose")
    with pytest.raises(ValueError, match=r"^faults must be mcpfsm.testing.Fault values, got 'drop'$"):
        ReplayBook(modern_session().cassette(), faults=("drop",))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: mismatch_once(""), r"^tool must be a non-empty string, got ''$"),
        (lambda: drop_after_request("tools/call", times=0), r"^times must be a whole number of at least 1, got 0$"),
        (lambda: delay("tools/call", -1), r"^seconds must be a finite number of at least 0, got -1$"),
        (lambda: delay("tools/call", float("inf")), r"^seconds must be a finite number of at least 0, got inf$"),
        (lambda: http_error("tools/call", 302), r"^status must be an HTTP error status \(400 to 599\), got 302$"),
        (lambda: session_expired(after=-1), r"^after must be a whole number of at least 0, got -1$"),
        (lambda: session_expired(times=True), r"^times must be a whole number of at least 1, got True$"),
    ],
)
def test_fault_helpers_refuse_bad_arguments(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_faults_describe_themselves() -> None:
    assert [str(f) for f in (mismatch_once("t", times=2), delay("tools/call", 0.5), session_expired(after=3))] == [
        "mismatch_once('t', times=2)",
        "delay('tools/call', 0.5)",
        "session_expired(after=3)",
    ]
