"""``Tool.title``, ``Tool.output_schema`` and ``Tool.annotations`` (MCP 2025-11-25 / 2026-07-28 "Tools").

Unit cases against the ``FakeServer``, and the official SDK's server listing a tool with all three.
"""

from __future__ import annotations

from typing import Any, Final

import pytest

import mcpfsm
from mcpfsm._tooling.demo_surface import WEATHER_SCHEMA
from tests.support.fakeserver import FakeServer
from tests.support.peer.fixtures import HttpPeer

SCHEMA: Final = {"type": "object", "properties": {}}
DEFAULTS: Final = (None, False, True, False, True)


def hints(annotations: mcpfsm.ToolAnnotations) -> tuple[Any, ...]:
    return (
        annotations.title,
        annotations.read_only_hint,
        annotations.destructive_hint,
        annotations.idempotent_hint,
        annotations.open_world_hint,
    )


@pytest.mark.parametrize(
    ("extra", "title", "output_schema", "expected_hints", "raw_annotations"),
    [
        pytest.param({}, None, None, DEFAULTS, {}, id="bare"),
        pytest.param(
            {
                "title": "Run SQL",
                "outputSchema": {"type": "object", "properties": {"rows": {"type": "array"}}},
                "annotations": {
                    "title": "SQL (annotated)",
                    "readOnlyHint": True,
                    "destructiveHint": False,
                    "idempotentHint": True,
                    "openWorldHint": False,
                },
            },
            "Run SQL",
            {"type": "object", "properties": {"rows": {"type": "array"}}},
            ("SQL (annotated)", True, False, True, False),
            {
                "title": "SQL (annotated)",
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
            id="everything",
        ),
        pytest.param(
            {"annotations": {"title": "From annotations"}, "outputSchema": True},
            "From annotations",
            True,
            ("From annotations", False, True, False, True),
            {"title": "From annotations"},
            id="title-from-annotations-boolean-schema",
        ),
        pytest.param(
            {"title": 7, "outputSchema": "nope", "annotations": {"readOnlyHint": "yes", "destructiveHint": 0}},
            None,
            None,
            DEFAULTS,
            {"readOnlyHint": "yes", "destructiveHint": 0},
            id="malformed-values-read-as-absent",
        ),
        pytest.param({"annotations": ["not", "an", "object"]}, None, None, DEFAULTS, {}, id="annotations-not-object"),
    ],
)
async def test_the_handle_reads_title_output_schema_and_annotations(
    fake: FakeServer,
    extra: dict[str, Any],
    title: str | None,
    output_schema: Any,
    expected_hints: tuple[Any, ...],
    raw_annotations: dict[str, Any],
) -> None:
    fake.tools = [{"name": "sql", "inputSchema": SCHEMA, **extra}]
    async with fake.client(validate_output="off") as client:
        tool = (await client.tools())[0]

    assert (tool.title, tool.output_schema, hints(tool.annotations), dict(tool.annotations.raw)) == (
        title,
        output_schema,
        expected_hints,
        raw_annotations,
    )


def test_annotations_default_to_the_specification_and_compare_by_hint() -> None:
    assert mcpfsm.ToolAnnotations.from_entry({}) == mcpfsm.ToolAnnotations()
    assert hints(mcpfsm.ToolAnnotations()) == DEFAULTS
    assert mcpfsm.ToolAnnotations.from_entry({"annotations": {"x": 1}}) == mcpfsm.ToolAnnotations()
    assert repr(mcpfsm.ToolAnnotations(title="t")) == (
        "ToolAnnotations(title='t', read_only_hint=False, destructive_hint=True, idempotent_hint=False,"
        " open_world_hint=True)"
    )


@pytest.fixture(scope="module")
def dual(dual: HttpPeer) -> HttpPeer:
    dual.control({"action": "output_tools"})
    return dual


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
async def test_the_sdk_server_s_tool_metadata_reaches_the_handle(dual: HttpPeer, era: str) -> None:
    async with mcpfsm.Client.http(dual.url, protocol=era) as client:
        tools = await client.tools()
    weather, echo = tools.get("weather"), tools.get("echo")
    assert weather is not None and echo is not None

    assert (weather.title, weather.output_schema, hints(weather.annotations)) == (
        "Weather",
        WEATHER_SCHEMA,
        (None, True, True, False, True),
    )
    assert dict(weather.annotations.raw) == {"readOnlyHint": True, "openWorldHint": True}
    assert (echo.title, echo.output_schema, echo.annotations) == (None, None, mcpfsm.ToolAnnotations())
