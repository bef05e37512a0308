"""The request as the gate reads it: Mcp-* headers read once, limits, era, the body parsed once, what a proxy drops."""

from __future__ import annotations

import pytest

from mcpfsm._core.gate import (
    MAX_MCP_HEADER_BYTES,
    MAX_MCP_HEADERS,
    McpHeaders,
    ParsedRequest,
    Verdict,
    end_to_end,
    name_param,
    parse_request,
    without_params,
)

from .gate_cases import call


def test_read_keeps_only_mcp_headers_lowercased_and_trimmed_in_order() -> None:
    read = McpHeaders.read(
        [("Host", "x"), ("MCP-Method", " tools/call\t"), (b"mcp-param-a", b"1"), ("Mcp-Param-A", "2"), ("mcpx", "y")]
    )
    assert dict(read.values) == {"mcp-method": ("tools/call",), "mcp-param-a": ("1", "2")}
    assert (read.count, read.longest, read.malformed) == (3, 12, False)  # measured before trimming
    assert read.get("Mcp-Param-A") == ("1", "2")
    assert read.param_names == ("mcp-param-a",)


@pytest.mark.parametrize(
    ("count", "size", "exceeded"),
    [
        pytest.param(MAX_MCP_HEADERS, MAX_MCP_HEADER_BYTES, None, id="both-at-the-limit"),
        pytest.param(
            MAX_MCP_HEADERS + 1,
            1,
            "the request carries 65 Mcp-* headers; at most 64 are accepted",
            id="one-header-too-many",
        ),
        pytest.param(
            1, MAX_MCP_HEADER_BYTES + 1, "an Mcp-* header value is longer than 8192 bytes", id="one-byte-too-long"
        ),
    ],
)
def test_limits_are_inclusive(count: int, size: int, exceeded: str | None) -> None:
    headers = [(f"Mcp-Param-X{n}", "v" * size) for n in range(count)] + [("Other", "v" * 100_000)] * 70
    assert McpHeaders.read(headers).limit_exceeded() == exceeded


def test_the_limit_counts_bytes_not_characters() -> None:
    assert McpHeaders.read([("Mcp-Name", "é" * 4097)]).limit_exceeded() is not None
    assert McpHeaders.read([(b"mcp-name", b"\xc3\xa9" * 4096)]).limit_exceeded() is None


@pytest.mark.parametrize(
    ("headers", "legacy", "version"),
    [
        pytest.param([], True, None, id="no-version-header"),
        pytest.param([("MCP-Protocol-Version", "2025-11-25")], True, "2025-11-25", id="2025-11-25"),
        pytest.param([("mcp-protocol-version", " 2025-06-18 ")], True, "2025-06-18", id="2025-06-18"),
        pytest.param([("MCP-Protocol-Version", "2025-03-26")], True, "2025-03-26", id="2025-03-26"),
        pytest.param([("MCP-Protocol-Version", "2026-07-28")], False, "2026-07-28", id="modern"),
        pytest.param([("MCP-Protocol-Version", "2099-01-01")], False, "2099-01-01", id="unknown-is-verified"),
        pytest.param([("MCP-Protocol-Version", "")], False, "", id="empty-is-verified"),
        pytest.param(
            [("MCP-Protocol-Version", "2025-11-25"), ("MCP-Protocol-Version", "2025-11-25")],
            False,
            None,
            id="repeated-is-verified",
        ),
    ],
)
def test_no_header_value_lets_a_request_skip_verification(
    headers: list[tuple[str, str]], legacy: bool, version: str | None
) -> None:
    read = McpHeaders.read(headers)
    assert (read.legacy, read.protocol_version) == (legacy, version)


def test_parse_request_reads_the_members_the_gate_checks() -> None:
    request = parse_request(call({"region": "eu"}, name="execute"))
    assert isinstance(request, ParsedRequest)
    assert (request.method, request.id, request.tool, request.name, request.name_key) == (
        "tools/call",
        1,
        "execute",
        "execute",
        "name",
    )
    assert request.arguments == {"region": "eu"}
    assert (request.carries_version, request.protocol_version, request.notification) == (True, "2026-07-28", False)


def test_parse_request_reads_a_notification_and_null_params() -> None:
    request = parse_request(b'{"jsonrpc":"2.0","method":"notifications/x","params":null}')
    assert request == ParsedRequest(method="notifications/x", id=None, params={}, notification=True)


@pytest.mark.parametrize(
    ("body", "code", "reason"),
    [
        pytest.param(b"", -32700, "the body is not UTF-8 JSON", id="empty"),
        pytest.param(b"\xff{}", -32700, "the body is not UTF-8 JSON", id="not-utf8"),
        pytest.param(b"[1]", -32600, "the body is not a JSON-RPC request object", id="array"),
        pytest.param(b'{"jsonrpc":"1.0","method":"m"}', -32600, 'the body lacks "jsonrpc": "2.0"', id="version-1"),
        pytest.param(b'{"jsonrpc":"2.0","method":5}', -32600, "the body has no string method", id="method-number"),
        pytest.param(
            b'{"jsonrpc":"2.0","method":"m","params":[]}',
            -32600,
            "the body's params is not an object",
            id="params-list",
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","method":"m","id":true}',
            -32600,
            "the body's id is neither a string nor an integer",
            id="id-boolean",
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","method":"m","id":null}',
            -32600,
            "the body's id is neither a string nor an integer",
            id="id-null",
        ),
        pytest.param(b"[" * 100_000, -32700, "the body is not UTF-8 JSON", id="deep-nesting"),
        pytest.param(
            b'{"jsonrpc":"2.0","method":"m","id":' + b"9" * 5000 + b"}",
            -32700,
            "the body is not UTF-8 JSON",
            id="huge-int",
        ),
    ],
)
def test_a_body_that_is_no_request_is_a_verdict(body: bytes, code: int, reason: str) -> None:
    assert parse_request(body) == Verdict(ok=False, header=None, reason=reason, code=code)


@pytest.mark.parametrize(
    ("method", "key"),
    [
        ("tools/call", "name"),
        ("prompts/get", "name"),
        ("resources/read", "uri"),
        ("tasks/get", "taskId"),
        ("tasks/update", "taskId"),
        ("tasks/cancel", "taskId"),
        ("tasks/list", "taskId"),
        ("tools/list", None),
        ("resources/list", None),
        ("server/discover", None),
    ],
)
def test_name_param(method: str, key: str | None) -> None:
    assert name_param(method) == key


def test_end_to_end_drops_hop_by_hop_headers_and_those_connection_names() -> None:
    headers = [
        (b"Host", b"example"),
        (b"Connection", b"keep-alive, X-Secret-Hop"),
        (b"Keep-Alive", b"timeout=5"),
        (b"TE", b"trailers"),
        (b"Transfer-Encoding", b"chunked"),
        (b"Upgrade", b"h2c"),
        (b"Proxy-Connection", b"keep-alive"),
        (b"x-secret-hop", b"1"),
        (b"Mcp-Session-Id", b"s"),
        (b"Last-Event-ID", b"7"),
    ]
    assert end_to_end(headers) == [(b"Host", b"example"), (b"Mcp-Session-Id", b"s"), (b"Last-Event-ID", b"7")]


def test_without_params_strips_every_mcp_param_header_in_any_case() -> None:
    headers = [(b"mcp-param-a", b"1"), (b"MCP-PARAM-B", b"2"), (b"mcp-name", b"n"), (b"x-mcp-param", b"3")]
    assert without_params(headers) == [(b"mcp-name", b"n"), (b"x-mcp-param", b"3")]
