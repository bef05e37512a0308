"""The pure telemetry conventions (mcpfsm._core.telemetry): span names, attributes, error types, the opt-in."""

from __future__ import annotations

from typing import Any

import pytest

import mcpfsm
from mcpfsm._core.telemetry import (
    captures_content,
    endpoint_attributes,
    error_type,
    event_attributes,
    flow_attributes,
    request_attributes,
    request_span_name,
)


@pytest.mark.parametrize(
    ("method", "params", "name", "attributes"),
    [
        pytest.param(
            "tools/call",
            {"name": "get_weather", "arguments": {"city": "Oslo"}},
            "tools/call get_weather",
            {"gen_ai.tool.name": "get_weather", "gen_ai.operation.name": "execute_tool"},
            id="tool",
        ),
        pytest.param(
            "prompts/get", {"name": "greet"}, "prompts/get greet", {"gen_ai.prompt.name": "greet"}, id="prompt"
        ),
        pytest.param(
            "resources/read",
            {"uri": "file:///a.txt"},
            "resources/read",
            {"mcp.resource.uri": "file:///a.txt"},
            id="read",
        ),
        pytest.param(
            "resources/subscribe", {"uri": "res://x"}, "resources/subscribe", {"mcp.resource.uri": "res://x"}, id="sub"
        ),
        pytest.param("tools/list", None, "tools/list", {}, id="no-params"),
        pytest.param(
            "tools/call", {"name": 42}, "tools/call", {"gen_ai.operation.name": "execute_tool"}, id="bad-name"
        ),
        pytest.param("completion/complete", {"ref": {"name": "greet"}}, "completion/complete", {}, id="other"),
    ],
)
def test_request_names_and_attributes(
    method: str, params: dict[str, Any] | None, name: str, attributes: dict[str, Any]
) -> None:
    assert request_span_name(method, params) == name
    assert request_attributes(method, params, 7) == {"mcp.method.name": method, "jsonrpc.request.id": "7", **attributes}


@pytest.mark.parametrize(
    ("url", "pipe", "attributes"),
    [
        pytest.param(
            "http://127.0.0.1:8000/mcp",
            False,
            {"server.address": "127.0.0.1", "server.port": 8000},
            id="explicit-port",
        ),
        pytest.param(
            "https://Example.COM/mcp", False, {"server.address": "example.com", "server.port": 443}, id="https"
        ),
        pytest.param("http://example.com/mcp", False, {"server.address": "example.com", "server.port": 80}, id="http"),
        pytest.param("http://[::1]:9/mcp", False, {"server.address": "::1", "server.port": 9}, id="ipv6"),
        pytest.param("http://example.com:99999/mcp", False, {"server.address": "example.com"}, id="bad-port"),
    ],
)
def test_http_endpoints(url: str, pipe: bool, attributes: dict[str, Any]) -> None:
    assert endpoint_attributes(url, pipe=pipe) == {
        "network.transport": "tcp",
        "network.protocol.name": "http",
        **attributes,
    }


def test_stdio_and_custom_transports() -> None:
    assert endpoint_attributes(None, pipe=True) == {"network.transport": "pipe"}
    assert endpoint_attributes(None, pipe=False) == {}


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        pytest.param(mcpfsm.RpcError(-32602, "bad"), "-32602", id="rpc"),
        pytest.param(mcpfsm.HeaderMismatchError(-32020, "mismatch"), "-32020", id="mismatch"),
        pytest.param(mcpfsm.TransportError("down"), "TransportError", id="transport"),
        pytest.param(mcpfsm.SessionExpired("s-1"), "SessionExpired", id="expired"),
        pytest.param(ValueError("x"), "ValueError", id="foreign"),
    ],
)
def test_error_types(error: BaseException, kind: str) -> None:
    assert error_type(error) == kind


def test_event_attributes_never_carry_headers_or_input() -> None:
    event = mcpfsm.CallEvent(
        call_id="c-1",
        seq=4,
        tool="ask",
        state="resending",
        previous="awaiting_input",
        trigger="gathered",
        attempt=2,
        at="2026-12-01T10:00:00+00:00",
        elapsed=0.5,
        headers={"Mcp-Param-Secret": "value"},
        error={"type": "RpcError", "code": -32020, "message": "m"},
        round=3,
        input_responses={"name": "Ada"},
    )
    assert event_attributes(event) == {
        "mcpfsm.attempt": 2,
        "mcpfsm.trigger": "gathered",
        "mcpfsm.round": 3,
        "error.type": "-32020",
    }
    first = mcpfsm.CallEvent(
        call_id="c-1",
        seq=0,
        tool="ask",
        state="cancelled",
        previous=None,
        trigger=None,
        attempt=1,
        at="2026-12-01T10:00:00+00:00",
        elapsed=0.0,
        error={"type": "Cancelled", "code": None, "message": "the call was cancelled"},
    )
    assert event_attributes(first) == {"mcpfsm.attempt": 1, "error.type": "Cancelled"}


def test_flow_attributes_are_public_values_only() -> None:
    event = mcpfsm.AuthEvent(
        call_id="f-a1",
        seq=3,
        tool="",
        state="registering",
        previous="discovering_issuer",
        trigger="issuer_found",
        attempt=1,
        at="2026-12-01T10:00:00+00:00",
        elapsed=0.1,
        issuer="https://as.example",
        resource="https://mcp.example/mcp",
        scopes=("read", "write"),
    )
    assert flow_attributes(event) == {
        "mcpfsm.issuer": "https://as.example",
        "mcpfsm.resource": "https://mcp.example/mcp",
        "mcpfsm.scopes": ["read", "write"],
    }


@pytest.mark.parametrize(
    ("value", "captures"),
    [
        (None, False),
        ("", False),
        ("false", False),
        ("NO_CONTENT", False),
        ("event_only", False),
        ("true", True),
        (" TRUE ", True),
        ("span_only", True),
        ("SPAN_AND_EVENT", True),
    ],
)
def test_the_content_opt_in(value: str | None, captures: bool) -> None:
    assert captures_content(value) is captures
