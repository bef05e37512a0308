"""Output validation against the official SDK server: its tools advertise schemas it does not enforce."""

from __future__ import annotations

import re
from typing import Any, Final

import pytest

import mcpfsm
from tests.support.peer.fixtures import HttpPeer

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
BAD: Final = (
    "structured content of tool 'bad-weather' does not match its outputSchema: "
    '/: "celsius" is a required property; /city: the value is not of type "string"'
)


def named(tools: mcpfsm.ToolList, name: str) -> mcpfsm.Tool:
    tool = tools.get(name)
    assert tool is not None, tools.names
    return tool


@pytest.fixture
def peer(dual: HttpPeer) -> HttpPeer:
    dual.control({"action": "reset"})
    dual.control({"action": "output_tools"})
    return dual


@pytest.mark.parametrize("era", [MODERN, LEGACY])
async def test_a_violating_result_raises_and_the_call_ends_failed(peer: HttpPeer, era: str) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with mcpfsm.Client.http(peer.url, protocol=era, on_event=events.append) as client:
        tools = await client.tools()
        with pytest.raises(mcpfsm.OutputValidationError, match="^" + re.escape(BAD) + "$") as caught:
            await named(tools, "bad-weather").call()
        good = await named(tools, "weather").call()

    assert isinstance(caught.value, mcpfsm.ProtocolError)
    assert (caught.value.tool, caught.value.problems) == (
        "bad-weather",
        ['/: "celsius" is a required property', '/city: the value is not of type "string"'],
    )
    assert caught.value.result.structured_content == {"city": 42}
    assert (good.structured_content, good.has_structured_content) == ({"city": "Oslo", "celsius": 21.5}, True)
    failed = [e for e in events if e.state == "failed"]
    assert [(e.tool, e.previous, e.trigger, e.error) for e in failed] == [
        ("bad-weather", "sending", "errored", {"type": "OutputValidationError", "code": None, "message": BAD})
    ]


async def test_non_object_structured_content_validates_in_the_modern_era(peer: HttpPeer) -> None:
    async with mcpfsm.Client.http(peer.url, protocol=MODERN) as client:
        tools = await client.tools()
        array = await named(tools, "raw-array").call()
        null = await named(tools, "raw-null").call()
        error = await named(tools, "schema-error").call()
        with pytest.raises(mcpfsm.OutputValidationError) as missing:
            await named(tools, "no-structured").call()

    assert (array.structured_content, array.has_structured_content) == ([1, 2, 3], True)
    assert (null.structured_content, null.has_structured_content) == (None, True)
    assert (error.is_error, error.has_structured_content) == (True, False)
    assert missing.value.problems == ["the tool has an outputSchema but returned no structuredContent"]


async def test_legacy_listings_hold_only_object_schemas(peer: HttpPeer) -> None:
    async with mcpfsm.Client.http(peer.url, protocol=LEGACY) as client:
        names = (await client.tools()).names

    assert names[-4:] == ["weather", "bad-weather", "no-structured", "schema-error"]


@pytest.mark.parametrize(("mode", "warned"), [("warn", True), ("off", False)])
async def test_warn_logs_and_off_stays_silent(
    peer: HttpPeer, records: list[tuple[str, str]], mode: Any, warned: bool
) -> None:
    async with mcpfsm.Client.http(peer.url, protocol=MODERN, validate_output=mode) as client:
        result = await named(await client.tools(), "bad-weather").call()

    assert result.structured_content == {"city": 42}
    warnings = [message for level, message in records if level == "WARNING"]
    assert warnings == ([BAD] if warned else [])


async def test_a_tool_called_by_name_that_was_never_listed_is_not_validated(peer: HttpPeer) -> None:
    async with mcpfsm.Client.http(peer.url, protocol=MODERN) as client:
        result = await client.call_tool("bad-weather")

    assert result.structured_content == {"city": 42}


def test_an_unknown_validate_output_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^validate_output must be one of \['raise', 'warn', 'off'\], got 'strict'$"):
        mcpfsm.Client.http("http://127.0.0.1:1/mcp", validate_output="strict")  # type: ignore[arg-type]
