"""Trio cancellation in every non-terminal state of a tool call (specs/tool-call.md): the call ends in
``cancelled``, ``Cancelled`` propagates to the cancel scope, and the client stays usable."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import pytest
import trio

import mcpfsm
from tests.support.fakeserver import (
    FRESH_SQL,
    SENT_FRESH,
    SENT_STALE,
    SQL_ARGS,
    STALE_SQL,
    FakeServer,
    blocks,
    rpc_error,
)

ECHO: Final = {"name": "echo", "inputSchema": {"type": "object"}}
CANCELLED: Final = {"type": "Cancelled", "code": None, "message": "the call was cancelled"}
ORDER: Final = ["resolving", "planning", "sending", "relisting", "comparing", "retrying"]


def mismatch() -> Any:
    return rpc_error(-32020, "Header mismatch")


def assert_cancelled_in(state: str, events: list[mcpfsm.CallEvent], fake: FakeServer, methods: list[str]) -> None:
    """The call went through the states up to ``state``, ended there in ``cancelled``, and sent ``methods``."""
    assert fake.methods() == methods
    assert [event.state for event in events[:-1]] == ORDER[: ORDER.index(state) + 1]
    assert (events[-1].state, events[-1].previous, events[-1].trigger, events[-1].error) == (
        "cancelled",
        state,
        "cancelled",
        CANCELLED,
    )


def script_sending(fake: FakeServer) -> None:
    fake.queue("tools/call", blocks())


def script_relisting(fake: FakeServer) -> None:
    fake.tools = [ECHO, FRESH_SQL]
    fake.queue("tools/call", mismatch())
    fake.queue("tools/list", blocks())


def script_relisting_second_page(fake: FakeServer) -> None:
    fake.tools, fake.page_size = [ECHO, FRESH_SQL], 1
    fake.queue("tools/call", mismatch())
    fake.queue("tools/list", fake.default, blocks())


def script_retrying(fake: FakeServer) -> None:
    fake.tools = [FRESH_SQL]
    fake.queue("tools/call", mismatch(), blocks())


def script_recovery(fake: FakeServer) -> None:
    fake.tools = [FRESH_SQL]
    fake.queue("tools/call", mismatch())


@pytest.mark.parametrize(
    ("script", "cancel_in", "methods"),
    [
        pytest.param(script_sending, "sending", ["tools/call"], id="sending"),
        pytest.param(script_relisting, "relisting", ["tools/call", "tools/list"], id="relisting"),
        pytest.param(
            script_relisting_second_page,
            "relisting",
            ["tools/call", "tools/list", "tools/list"],
            id="relisting-second-page",
        ),
        pytest.param(script_retrying, "retrying", ["tools/call", "tools/list", "tools/call"], id="retrying"),
    ],
)
async def test_a_call_blocked_on_the_server_is_cancelled_where_it_waits(
    fake: FakeServer,
    autojump_clock: trio.abc.Clock,
    script: Callable[[FakeServer], None],
    cancel_in: str,
    methods: list[str],
) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        fake.tools = [ECHO, STALE_SQL]
        tool = (await client.tools()).get("execute-sql")
        assert tool is not None
        fake.clear()
        script(fake)
        with trio.move_on_after(10) as scope:
            await tool.call(SQL_ARGS)
        assert scope.cancelled_caught
        assert_cancelled_in(cancel_in, events, fake, methods)
        # The client is usable; a relist cancelled part-way did not replace the known definitions.
        fake.clear()
        fake.tools, fake.page_size = [ECHO, STALE_SQL], None
        await tool.call(SQL_ARGS)
        assert fake.wire() == [("tools/call", SENT_STALE if cancel_in != "retrying" else SENT_FRESH)]
        assert events[-1].state == "succeeded"


async def test_a_call_in_an_already_cancelled_scope_ends_in_resolving(fake: FakeServer) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        fake.clear()
        with trio.CancelScope() as scope:
            scope.cancel()
            await client.call_tool("echo", {})
        assert scope.cancelled_caught
        assert [(event.state, event.previous, event.trigger) for event in events] == [
            ("resolving", None, None),
            ("cancelled", "resolving", "cancelled"),
        ]
        assert fake.requests == []
        await client.call_tool("echo", {})
    assert fake.methods() == ["tools/call"]


@pytest.mark.parametrize(
    ("script", "cancel_in", "methods"),
    [
        pytest.param(None, "planning", [], id="planning"),
        pytest.param(script_recovery, "comparing", ["tools/call", "tools/list"], id="comparing"),
    ],
)
async def test_a_cancel_requested_on_entering_a_state_ends_the_call_in_that_state(
    fake: FakeServer, script: Callable[[FakeServer], None] | None, cancel_in: str, methods: list[str]
) -> None:
    # Planning and comparing never wait, so the cancel is requested by the event of entering them.
    events: list[mcpfsm.CallEvent] = []
    scope = trio.CancelScope()

    def on_event(event: mcpfsm.CallEvent) -> None:
        events.append(event)
        if event.state == cancel_in and not scope.cancel_called:
            scope.cancel()

    async with fake.client(on_event=on_event) as client:
        fake.tools = [ECHO, STALE_SQL]
        tool = (await client.tools()).get("execute-sql")
        assert tool is not None
        fake.clear()
        if script is not None:
            script(fake)
        with scope:
            await tool.call(SQL_ARGS)
        assert scope.cancelled_caught
        assert_cancelled_in(cancel_in, events, fake, methods)
        fake.clear()
        await tool.call(SQL_ARGS)
    assert fake.wire() == [("tools/call", SENT_STALE if cancel_in == "planning" else SENT_FRESH)]
