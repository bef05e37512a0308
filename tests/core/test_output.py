"""Output validation (pure): 2020-12 by default, ``$schema`` honoured, no ``$ref`` fetched, isError skipped."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcpfsm._core.catalog import build_catalog
from mcpfsm._core.output import OutputCheck
from mcpfsm._core.results import ToolResult

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
}


def definition(schema: Any) -> Any:
    entry: dict[str, Any] = {"name": "t", "inputSchema": {"type": "object"}}
    if schema is not ...:
        entry["outputSchema"] = schema
    return build_catalog([entry], mirroring=False).tools[0]


def result(**fields: Any) -> ToolResult:
    return ToolResult.from_result({"content": [], **fields})


@pytest.mark.parametrize(
    ("schema", "fields", "problems"),
    [
        (WEATHER, {"structuredContent": {"city": "Oslo", "celsius": 3}}, []),
        (WEATHER, {"structuredContent": {"city": 42}}, ['/: "celsius" is a required property',
                                                        '/city: the value is not of type "string"']),
        (WEATHER, {}, ["the tool has an outputSchema but returned no structuredContent"]),
        (WEATHER, {"isError": True}, []),
        (..., {"structuredContent": 5}, []),
        ({"type": "array", "items": {"type": "integer"}}, {"structuredContent": [1, 2]}, []),
        ({"type": "null"}, {"structuredContent": None}, []),
        ({"type": "null"}, {}, ["the tool has an outputSchema but returned no structuredContent"]),
        ({"prefixItems": [{"type": "integer"}], "items": False}, {"structuredContent": [1, 2]},
         ["/1: False schema does not allow the value"]),
        ({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "integer"}]},
         {"structuredContent": ["x"]}, ['/0: the value is not of type "integer"']),
        (True, {"structuredContent": {}}, []),
        (False, {"structuredContent": {}}, ["/: False schema does not allow the value"]),
        ("object", {"structuredContent": {}}, ["the outputSchema is neither an object nor a boolean"]),
    ],
    ids=["conforms", "violates", "missing", "is-error", "no-schema", "array", "null", "null-missing",
         "2020-12-default", "draft-07-declared", "true-schema", "false-schema", "not-a-schema"],
)
def test_problems(schema: Any, fields: dict[str, Any], problems: list[str]) -> None:
    assert OutputCheck().problems(definition(schema), result(**fields)) == problems


def test_an_unknown_tool_is_not_checked() -> None:
    assert OutputCheck().problems(None, result(structuredContent=1)) == []


def test_an_unknown_dialect_makes_the_schema_unusable() -> None:
    problems = OutputCheck().problems(
        definition({"$schema": "https://example.invalid/unknown", "type": "object"}), result(structuredContent={})
    )
    assert problems == [
        "the outputSchema cannot be used: Unknown meta-schema: 'https://example.invalid/unknown'."
        " Custom meta-schemas must be registered in the registry before use"
    ]


@pytest.fixture
def schema_server() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = b'{"type": "integer"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def test_a_network_ref_is_never_fetched_and_makes_the_schema_unusable(schema_server: tuple[str, list[str]]) -> None:
    origin, hits = schema_server
    problems = OutputCheck().problems(definition({"$ref": f"{origin}/int.json"}), result(structuredContent=1))
    assert (hits, problems) == (
        [],
        [
            f"the outputSchema cannot be used: Resource '{origin}/int.json' is not present in a registry"
            f" and retrieving it failed: Retrieval is disabled, cannot fetch {origin}/int.json"
        ],
    )


def test_a_local_ref_resolves() -> None:
    schema = {"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"}
    assert OutputCheck().problems(definition(schema), result(structuredContent="x")) == [
        '/: the value is not of type "integer"'
    ]


def test_validators_are_compiled_once_per_schema_object() -> None:
    check = OutputCheck()
    first = definition(WEATHER)
    check.problems(first, result(structuredContent={}))
    compiled = check._compiled["t"][1]
    check.problems(first, result(structuredContent={}))
    assert check._compiled["t"][1] is compiled
    check.problems(definition({"type": "string"}), result(structuredContent="x"))
    assert check._compiled["t"][1] is not compiled
