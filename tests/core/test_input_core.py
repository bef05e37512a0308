"""The pure rules of input rounds (mcpfsm/_core/input.py, mcpfsm/_core/input_rounds.py): result types, shapes,
resend params, defaults."""

from __future__ import annotations

from typing import Any, Final

import pytest

from mcpfsm._core.input import FormContentError, declared_capabilities, result_type
from mcpfsm._core.input_rounds import (
    InputRequest,
    InputRequired,
    Offered,
    Refusal,
    fill_defaults,
    form_problems,
    parse_input_required,
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


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        (((), False, False), {}),
        ((("form",), False, True), {"elicitation": {"form": {}}, "roots": {}}),
        ((("url", "form"), True, True), {"elicitation": {"url": {}, "form": {}}, "sampling": {}, "roots": {}}),
    ],
)
def test_the_declared_capabilities_are_what_offered_declares(
    declared: tuple[tuple[str, ...], bool, bool], expected: dict[str, Any]
) -> None:
    # What every client declares, without the round records (mcpfsm._core.input), and Offered agree.
    modes, sampling, roots = declared
    assert declared_capabilities(*declared) == expected
    assert Offered(elicitation_modes=modes, sampling=sampling, roots=roots).capabilities() == expected


FORM: Final = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 8},
        "age": {"type": "integer", "minimum": 18, "default": 30},
        "email": {"type": "string", "format": "email"},
        "colour": {"type": "string", "enum": ["red", "green"]},
        "when": {"type": "string", "format": "date"},
    },
    "required": ["name"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("content", "problems"),
    [
        pytest.param({"name": "Ada", "age": 40, "email": "ada@example.com", "colour": "red"}, [], id="valid"),
        pytest.param({"age": 40}, ['/: "name" is a required property'], id="required"),
        pytest.param({"name": "SECRET-LONG-NAME"}, ["/name: the value is longer than 8 characters"], id="max-length"),
        pytest.param({"name": "A", "age": 7}, ["/age: the value is less than the minimum of 18"], id="minimum"),
        pytest.param({"name": "A", "age": "SECRET"}, ['/age: the value is not of type "integer"'], id="type"),
        pytest.param({"name": "A", "email": "SECRET"}, ['/email: the value is not a "email"'], id="format-email"),
        pytest.param({"name": "A", "when": "SECRET"}, ['/when: the value is not a "date"'], id="format-date"),
        pytest.param(
            {"name": "A", "colour": "SECRET"}, ['/colour: the value is not one of "red" or "green"'], id="enum"
        ),
        pytest.param(
            {"name": "A", "extra": "SECRET"},
            ["/: Additional properties are not allowed ('extra' was unexpected)"],
            id="additional",
        ),
    ],
)
def test_form_problems_name_the_property_and_the_rule_never_the_value(
    content: dict[str, Any], problems: list[str]
) -> None:
    assert form_problems(FORM, content) == problems
    assert not any("SECRET" in problem for problem in problems)


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param("not a schema", id="not-an-object"),
        pytest.param({"$schema": "https://example.com/unknown-dialect", "type": "object"}, id="unknown-dialect"),
        pytest.param({"properties": {"a": {"$ref": "https://example.com/a.json"}}}, id="network-ref"),
        pytest.param({"properties": {"a": {"type": "string", "pattern": "(("}}}, id="bad-pattern"),
    ],
)
def test_a_schema_that_cannot_be_used_checks_nothing(schema: Any) -> None:
    assert form_problems(schema, {"a": 1}) == []


def test_an_accepted_form_is_checked_after_its_defaults_are_filled_in() -> None:
    offered = Offered(elicitation_modes=("form",))
    params = {"message": "Who?", "requestedSchema": FORM}
    # The default age (30) satisfies the minimum that a given 7 breaks.
    answer = offered.checked_answer("elicitation/create", params, {"action": "accept", "content": {"name": "Ada"}})
    assert answer == {"action": "accept", "content": {"name": "Ada", "age": 30}}
    with pytest.raises(
        FormContentError,
        match=r"^on_elicitation accepted content that does not match the requestedSchema: "
        r"/age: the value is less than the minimum of 18; /email: the value is not a \"email\"$",
    ) as caught:
        offered.checked_answer(
            "elicitation/create", params, {"action": "accept", "content": {"name": "Ada", "age": 7, "email": "x"}}
        )
    assert isinstance(caught.value, ValueError)
    assert caught.value.problems == [
        "/age: the value is less than the minimum of 18",
        '/email: the value is not a "email"',
    ]
    # A decline carries no content, so there is nothing to check.
    declined = offered.checked_answer("elicitation/create", params, {"action": "decline", "content": {"age": 7}})
    assert declined == {"action": "decline"}
