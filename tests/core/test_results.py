"""Typed results: whole values from well-formed answers, a ProtocolError naming what is wrong otherwise."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mcpfsm import ProtocolError
from mcpfsm._core.results import ToolResult
from mcpfsm._core.surface import (
    Completion,
    Prompt,
    PromptArgument,
    PromptResult,
    Resource,
    ResourceResult,
    ResourceTemplate,
)


def exact(text: str) -> str:
    return "^" + re.escape(text) + "$"


@pytest.mark.parametrize(
    ("result", "structured", "present"),
    [
        ({"content": []}, None, False),
        ({"content": [], "structuredContent": None}, None, True),
        ({"content": [], "structuredContent": [1, 2]}, [1, 2], True),
        ({"content": [], "structuredContent": "text"}, "text", True),
        ({"content": [], "structuredContent": 0}, 0, True),
        ({"content": [], "structuredContent": {"a": 1}}, {"a": 1}, True),
    ],
    ids=["absent", "null", "array", "string", "number", "object"],
)
def test_structured_content_is_any_json_value_and_absent_differs_from_null(
    result: dict[str, Any], structured: Any, present: bool
) -> None:
    parsed = ToolResult.from_result(result)
    assert (parsed.structured_content, parsed.has_structured_content) == (structured, present)


def test_resource_entries() -> None:
    entry = {"uri": "res://a", "name": "a", "title": "A", "description": "d", "mimeType": "text/plain", "size": 3}
    assert Resource.from_entry(entry) == Resource(
        uri="res://a", name="a", title="A", description="d", mime_type="text/plain", size=3, raw=entry
    )
    template = {"uriTemplate": "res://items/{id}", "name": "item"}
    assert ResourceTemplate.from_entry(template) == ResourceTemplate(
        uri_template="res://items/{id}", name="item", raw=template
    )


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("res://a", "resources/list entry #4 is not an object"),
        ({"name": "a"}, 'resources/list entry #4 has no string "uri"'),
        ({"uri": "res://a"}, 'resources/list entry #4 has no string "name"'),
        ({"uri": "res://a", "name": "a", "mimeType": 1}, 'resources/list entry #4 "mimeType" is not a string'),
        ({"uri": "res://a", "name": "a", "size": -1}, 'resources/list entry #4 "size" is not a non-negative integer'),
        ({"uri": "res://a", "name": "a", "size": True}, 'resources/list entry #4 "size" is not a non-negative integer'),
    ],
)
def test_malformed_resource_entries(entry: Any, message: str) -> None:
    with pytest.raises(ProtocolError, match=exact(message)):
        Resource.from_entry(entry, 4)


def test_resource_result_text_and_blobs() -> None:
    raw = {
        "contents": [
            {"uri": "res://a", "text": "one"},
            {"uri": "res://b", "blob": "aGk=", "mimeType": "application/octet-stream"},
            {"uri": "res://c", "text": "two"},
        ]
    }
    result = ResourceResult.from_result(raw)
    assert (result.contents, result.text, result.blobs) == (raw["contents"], "one\ntwo", [b"hi"])


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, 'resources/read result "contents" is not a list of objects'),
        ({"contents": [{"text": "x"}]}, 'resources/read content #0 has no string "uri"'),
        ({"contents": [{"uri": "u"}]}, 'resources/read content #0 has neither a string "text" nor a string "blob"'),
        (
            {"contents": [{"uri": "u", "blob": "not base64!"}]},
            'resources/read content #0 "blob" is not valid base64: Only base64 data is allowed',
        ),
        ({"contents": [], "resultType": "input_required"}, "resources/read result type 'input_required' is not"
         " supported (only 'complete')"),
    ],
)
def test_malformed_resource_results(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ProtocolError, match=exact(message)):
        ResourceResult.from_result(raw)


def test_prompt_entries_and_results() -> None:
    entry = {"name": "greet", "arguments": [{"name": "name", "required": True}, {"name": "style", "title": "S"}]}
    assert Prompt.from_entry(entry) == Prompt(
        name="greet",
        arguments=(PromptArgument(name="name", required=True), PromptArgument(name="style", title="S")),
        raw=entry,
    )
    raw = {"description": "d", "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}
    result = PromptResult.from_result(raw)
    assert (result.messages, result.description, result.text) == (raw["messages"], "d", "hi")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"messages": {}}, 'prompts/get result "messages" is not a list of objects'),
        ({"messages": [{"role": "system", "content": {}}]}, 'prompts/get message #0 "role" is neither "user" nor'
         ' "assistant"'),
        ({"messages": [{"role": "user", "content": "hi"}]}, 'prompts/get message #0 "content" is not an object'),
        ({"messages": [], "description": 3}, 'prompts/get result "description" is not a string'),
    ],
)
def test_malformed_prompt_results(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ProtocolError, match=exact(message)):
        PromptResult.from_result(raw)


def test_malformed_prompt_arguments() -> None:
    with pytest.raises(ProtocolError, match=exact('prompts/list entry #0 argument #0 "required" is not a boolean')):
        Prompt.from_entry({"name": "p", "arguments": [{"name": "a", "required": "yes"}]})


def test_completion() -> None:
    raw = {"completion": {"values": ["a", "b"], "total": 5, "hasMore": True}}
    assert Completion.from_result(raw) == Completion(values=("a", "b"), total=5, has_more=True, raw=raw)
    empty = {"completion": {"values": []}}
    assert Completion.from_result(empty) == Completion(values=(), raw=empty)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, 'completion/complete result "completion" is not an object'),
        ({"completion": {"values": "abc"}}, 'completion/complete "values" is not a list of strings'),
        ({"completion": {"values": [1]}}, 'completion/complete "values" is not a list of strings'),
        ({"completion": {"values": ["x"] * 101}}, 'completion/complete "values" has 101 entries; at most 100 are'
         " allowed"),
        ({"completion": {"values": [], "total": "3"}}, 'completion/complete "total" is not an integer'),
        ({"completion": {"values": [], "hasMore": 1}}, 'completion/complete "hasMore" is not a boolean'),
    ],
)
def test_malformed_completions(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ProtocolError, match=exact(message)):
        Completion.from_result(raw)
