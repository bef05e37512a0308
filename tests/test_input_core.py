"""The pure rules of input rounds (mcpfsm/_core/input.py): result types, shapes, resend params, defaults."""

from __future__ import annotations

from typing import Any

import pytest

from mcpfsm._core.input import (
    InputRequest,
    InputRequired,
    Offered,
    Refusal,
    fill_defaults,
    parse_input_required,
    result_type,
    state_only_backoff,
    with_input,
)


@pytest.mark.parametrize(
    ("method", "result", "expected"),
    [
        ("tools/list", {"tools": []}, "complete"),
        ("tools/call", {"resultType": "complete"}, "complete"),
        ("prompts/get", {"resultType": "input_required"}, "input_required"),
        ("resources/read", {"resultType": "input_required"}, "input_required"),
    ],
)
def test_result_type(method: str, result: dict[str, Any], expected: str) -> None:
    assert result_type(method, result) == expected


def test_parse_keeps_the_servers_keys_order_and_state() -> None:
    parsed = parse_input_required(
        "tools/call",
        {
            "resultType": "input_required",
            "inputRequests": {"z": {"method": "roots/list"}, "a": {"method": "roots/list", "params": None}},
            "requestState": "",
        },
    )
    assert parsed == InputRequired(
        requests={"z": InputRequest(method="roots/list", params={}), "a": InputRequest(method="roots/list", params={})},
        state="",
    )
    assert list(parsed.methods) == ["z", "a"]


def test_a_state_only_round_has_no_requests() -> None:
    assert parse_input_required("tools/call", {"requestState": "s", "inputRequests": None}).requests == {}


@pytest.mark.parametrize(
    ("responses", "state", "expected"),
    [
        ({"k": {"roots": []}}, "s", {"name": "t", "inputResponses": {"k": {"roots": []}}, "requestState": "s"}),
        ({"k": {"roots": []}}, None, {"name": "t", "inputResponses": {"k": {"roots": []}}}),
        (None, "s", {"name": "t", "requestState": "s"}),
        # Whatever the params held before is replaced: only the latest round goes out.
        (None, None, {"name": "t"}),
    ],
)
def test_with_input(responses: dict[str, Any] | None, state: str | None, expected: dict[str, Any]) -> None:
    original = {"name": "t", "inputResponses": {"old": {}}, "requestState": "old"}
    assert with_input(original, responses, state) == expected
    assert original == {"name": "t", "inputResponses": {"old": {}}, "requestState": "old"}


def test_fill_defaults_keeps_given_values_and_copies_defaults() -> None:
    schema = {"properties": {"a": {"default": [1]}, "b": {"default": "x"}, "c": {"type": "string"}, "d": "odd"}}
    filled = fill_defaults(schema, {"b": "given"})
    assert filled == {"b": "given", "a": [1]}
    filled["a"].append(2)
    assert schema["properties"]["a"]["default"] == [1]
    assert fill_defaults("not a schema", {"x": 1}) == {"x": 1}


def test_state_only_backoff_doubles_to_a_cap() -> None:
    assert [state_only_backoff(n) for n in range(1, 7)] == [0.05, 0.1, 0.2, 0.25, 0.25, 0.25]


def test_state_only_backoff_stays_at_its_cap_for_any_streak() -> None:
    # A streak as long as a large max_input_rounds allows: no float overflow on the way to the cap.
    assert [state_only_backoff(n) for n in (1100, 10**6)] == [0.25, 0.25]


def test_capabilities_and_refusals_follow_what_is_offered() -> None:
    nothing = Offered()
    assert nothing.capabilities() == {}
    assert nothing.refusal("roots/list", {}) == Refusal(
        -32601, "no on_roots handler: the client did not declare 'roots/list'"
    )
    everything = Offered(elicitation_modes=("url", "form"), sampling=True, roots=True)
    assert everything.capabilities() == {"elicitation": {"url": {}, "form": {}}, "sampling": {}, "roots": {}}
    assert everything.refusal("roots/list", {}) is None
    assert everything.refusal("sampling/createMessage", {"messages": []}) is None
    assert everything.refusal("sampling/createMessage", {}) == Refusal(-32602, 'sampling without a "messages" list')
    assert everything.refusal("elicitation/create", {"mode": "url"}) == Refusal(
        -32602, 'URL elicitation without a string "url"'
    )
    assert everything.refusal("elicitation/create", {"mode": "sms"}) == Refusal(
        -32602, "elicitation mode 'sms' was not declared"
    )
