"""mcpfsm.gate.verify: every rule of docs/gate.md as a whole verdict, totality, and no value in a reason."""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpfsm._core.gate import McpHeaders, ToolSchema, Verdict, check, parse_request
from mcpfsm.gate import verify

from .gate_cases import CASES, SCHEMA, VERSION, Case, b64, call, std


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_each_case_gets_its_whole_verdict(case: Case) -> None:
    verdict = verify(case.headers, case.body, case.schema)
    expected = (True, None, None, None) if case.ok else (False, case.header, case.reason, case.code)
    assert (verdict.ok, verdict.header, verdict.reason, verdict.code) == expected


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bytes_headers_as_asgi_gives_them_get_the_same_verdict(case: Case) -> None:
    raw = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in case.headers]
    assert verify(raw, case.body, case.schema) == verify(case.headers, case.body, case.schema)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_parsed_once_and_read_once_give_the_same_verdict(case: Case) -> None:
    learned = None if case.schema is None else ToolSchema.of("execute", case.schema)
    assert check(McpHeaders.read(case.headers), parse_request(case.body), learned) == verify(
        case.headers, case.body, case.schema
    )


def test_a_verified_call_carries_typed_values_by_declared_name() -> None:
    headers = [
        *std(),
        ("mcp-param-region", b64("Zürich")),
        ("MCP-PARAM-COUNT", "42.0"),
        ("Mcp-Param-Dry-Run", "false"),
        ("Mcp-Param-Read-Only", "true"),
    ]
    arguments = {"region": "Zürich", "count": 42, "dry": False, "options": {"readOnly": True}, "query": "q"}
    verdict = verify(headers, call(arguments), SCHEMA)
    assert verdict.ok
    assert dict(verdict.params) == {
        "Mcp-Param-Region": "Zürich",
        "Mcp-Param-Count": 42,
        "Mcp-Param-Dry-Run": False,
        "Mcp-Param-Read-Only": True,
    }
    assert type(verdict.params["Mcp-Param-Count"]) is int
    assert "Zürich" not in repr(verdict) and "Zürich" not in repr(parse_request(call(arguments)))


def test_a_mismatch_carries_no_verified_values() -> None:
    headers = [*std(), ("Mcp-Param-Region", "a"), ("Mcp-Param-Count", "2")]
    verdict = verify(headers, call({"region": "a", "count": 1}), SCHEMA)
    assert (verdict.ok, verdict.header, dict(verdict.params)) == (False, "Mcp-Param-Count", {})


def test_the_first_difference_in_order_is_the_verdict() -> None:
    # Duplicates first, then the version, the method, the name, then the parameters in document order.
    headers = [("Mcp-Method", "tools/list"), ("Mcp-Name", "x"), ("Mcp-Param-Count", "1"), ("Mcp-Param-Count", "1")]
    assert verify(headers, call({"count": 2}), SCHEMA).header == "Mcp-Param-Count"
    assert verify(headers[:3], call({"count": 2}), SCHEMA).header == "MCP-Protocol-Version"
    version = [("MCP-Protocol-Version", VERSION), *headers[:3]]
    assert verify(version, call({"count": 2}), SCHEMA).header == "Mcp-Method"


def test_no_version_anywhere_is_not_counted() -> None:
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    assert verify([("Mcp-Method", "tools/list")], request, None).ok


def test_malformed_header_lists_are_verdicts() -> None:
    request = call({})
    for headers in (None, 5, [("a",)], [(1, 2)], [("Mcp-Method",)], "Mcp-Method"):
        verdict = verify(headers, request, None)  # type: ignore[arg-type]
        assert (verdict.ok, verdict.header, verdict.code) == (False, None, -32600)


# --- properties: total, and never a value in a reason ---------------------------------------------------------------

# Header names that matter, in any case, and names that do not.
NAMES = st.sampled_from(
    [
        "MCP-Protocol-Version",
        "Mcp-Method",
        "Mcp-Name",
        "Mcp-Param-Region",
        "Mcp-Param-Count",
        "Mcp-Param-Dry-Run",
        "Mcp-Param-Read-Only",
        "Mcp-Param-Other",
        "Authorization",
        "content-type",
    ]
).flatmap(lambda name: st.sampled_from([name, name.lower(), name.upper()]))
TEXT = st.text(max_size=40)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=10,
)


@st.composite
def requests(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["call", "json", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    if kind == "json":
        return json.dumps(draw(JSON_VALUES)).encode()
    arguments = draw(st.dictionaries(st.sampled_from(["region", "count", "dry", "options", "query"]), JSON_VALUES))
    name = draw(st.one_of(TEXT, JSON_VALUES))
    method = draw(st.sampled_from(["tools/call", "prompts/get", "resources/read", "tasks/get", "tools/list"]))
    params = {"name": name, "uri": name, "taskId": name, "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


SCHEMAS = st.one_of(st.none(), st.just(SCHEMA), JSON_VALUES)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    headers=st.lists(st.tuples(NAMES, TEXT) | st.tuples(st.binary(max_size=20), st.binary(max_size=20)), max_size=8),
    request=requests(),
    schema=SCHEMAS,
)
def test_verify_is_total(headers: list[Any], request: bytes, schema: Any) -> None:
    verdict = verify(headers, request, schema)
    assert isinstance(verdict, Verdict)
    assert verdict.ok == (verdict.reason is None) == (verdict.code is None)
    assert verdict.ok or verdict.code in (-32020, -32600, -32700)


@given(anything=st.one_of(st.none(), st.integers(), st.text(), st.lists(st.integers())), request=st.binary())
def test_verify_is_total_on_any_value(anything: Any, request: bytes) -> None:
    assert isinstance(verify(anything, request, anything), Verdict)
    assert isinstance(verify([], anything, None), Verdict)


# A value carries a marker no reason can contain ("§" followed by a letter pair the templates never write), so
# finding the marker in a reason would be a quoted value.
MARKER = "\u00a7QJ"
VALUES = st.text(alphabet=string.ascii_letters + string.digits + " -_./é世", max_size=12).map(lambda t: MARKER + t)


@st.composite
def lying_calls(draw: st.DrawFn) -> tuple[list[tuple[str, str]], bytes]:
    region, other, name = draw(VALUES), draw(VALUES), draw(VALUES)
    arguments: dict[str, Any] = {"region": draw(st.sampled_from([region, other, None])), "query": draw(VALUES)}
    headers = [("MCP-Protocol-Version", draw(st.sampled_from([VERSION, MARKER])))]
    headers.append(("Mcp-Method", draw(st.sampled_from(["tools/call", MARKER + "call"]))))
    headers.append(("Mcp-Name", draw(st.sampled_from([name, b64(name), MARKER, b64(MARKER + "x")]))))
    for _ in range(draw(st.integers(0, 2))):
        headers.append(("Mcp-Param-Region", draw(st.sampled_from([region, other, b64(region), b64(other)]))))
    headers.append(("Mcp-Param-Count", draw(st.sampled_from(["1", MARKER, b64(MARKER)]))))
    arguments["count"] = draw(st.sampled_from([1, 2, MARKER]))
    return headers, call(arguments, name=draw(st.sampled_from([name, MARKER + "other"])))


@settings(max_examples=400)
@given(lying_calls())
def test_no_reason_ever_quotes_a_value(request: tuple[list[tuple[str, str]], bytes]) -> None:
    headers, body = request
    verdict = verify(headers, body, SCHEMA)
    assert MARKER not in (verdict.reason or "")
    assert "QJ" not in (verdict.reason or "")
    assert verdict.header is None or MARKER not in verdict.header
