"""Audit events: what each call publishes, and to whom (on_event, events(), loguru)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any, Final

import httpx
import pytest
import trio

import mcpfsm
from tests.support.fakeserver import (
    FRESH_SQL,
    SENT_FRESH,
    SENT_STALE,
    SQL_ARGS,
    STALE_SQL,
    Answer,
    FakeServer,
    response,
    rpc_error,
)

MISMATCH: Final = {"type": "HeaderMismatchError", "code": -32020, "message": "Header mismatch"}
FULL_WARNING: Final = "an events() subscriber is full; dropping events for it until it catches up"


def event(
    seq: int,
    state: str,
    previous: str | None,
    trigger: str | None,
    *,
    attempt: int = 1,
    headers: dict[str, str] | None = None,
    error: dict[str, Any] | None = None,
    round: int = 0,
    input_requests: dict[str, str] | None = None,
    input_responses: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An expected event without its call_id, at and elapsed (checked separately)."""
    return {
        "machine": "tool-call",
        "seq": seq,
        "tool": "execute-sql",
        "state": state,
        "previous": previous,
        "trigger": trigger,
        "attempt": attempt,
        "headers": headers,
        "error": error,
        "round": round,
        "input_requests": input_requests,
        "input_responses": input_responses,
        "server": None,
    }


START: Final = [event(0, "resolving", None, None), event(1, "planning", "resolving", "resolved")]
SUCCESS: Final = [
    *START,
    event(2, "sending", "planning", "planned", headers=SENT_STALE),
    event(3, "succeeded", "sending", "answered", headers=SENT_STALE),
]
RECOVERY: Final = [
    *START,
    event(2, "sending", "planning", "planned", headers=SENT_STALE),
    event(3, "relisting", "sending", "mismatched", headers=SENT_STALE, error=MISMATCH),
    event(4, "comparing", "relisting", "relisted", headers=SENT_STALE),
    event(5, "retrying", "comparing", "changed", attempt=2, headers=SENT_FRESH),
    event(6, "succeeded", "retrying", "answered", attempt=2, headers=SENT_FRESH),
]


def failed_sending(error: dict[str, Any]) -> list[dict[str, Any]]:
    """The events after planning of a call whose one send failed with ``error``."""
    return [
        event(2, "sending", "planning", "planned", headers=SENT_STALE),
        event(3, "failed", "sending", "errored", headers=SENT_STALE, error=error),
    ]


def facts(events: list[mcpfsm.CallEvent]) -> list[dict[str, Any]]:
    """The events as dicts, less the fields that vary from run to run."""
    return [{k: v for k, v in e.to_dict().items() if k not in ("call_id", "at", "elapsed")} for e in events]


def check_timing(events: list[mcpfsm.CallEvent]) -> None:
    """One call_id; `at` is UTC ISO-8601; `at` and `elapsed` never go backwards."""
    assert len({e.call_id for e in events}) == 1
    stamps = [datetime.fromisoformat(e.at) for e in events]
    assert all(stamp.utcoffset() == timedelta(0) for stamp in stamps)
    assert stamps == sorted(stamps)
    assert [e.elapsed for e in events] == sorted(e.elapsed for e in events)
    assert events[0].elapsed >= 0


async def listed(fake: FakeServer, client: mcpfsm.Client) -> mcpfsm.Tool:
    fake.tools = [STALE_SQL]
    tool = (await client.tools()).get("execute-sql")
    assert tool is not None
    return tool


async def recovered_call(fake: FakeServer) -> list[mcpfsm.CallEvent]:
    """The events of one call whose listing went stale: relisted, then retried with the fresh plan."""
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        tool = await listed(fake, client)
        fake.tools = [FRESH_SQL]
        fake.queue("tools/call", rpc_error(-32020, "Header mismatch"))
        await tool.call(SQL_ARGS)
    return events


def drain(channel: trio.MemoryReceiveChannel[mcpfsm.CallEvent]) -> list[mcpfsm.CallEvent]:
    received: list[mcpfsm.CallEvent] = []
    while True:
        try:
            received.append(channel.receive_nowait())
        except trio.WouldBlock:
            return received


# --- the events of one call ------------------------------------------------------------------------


async def test_a_successful_call_publishes_one_event_per_state(fake: FakeServer) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        await (await listed(fake, client)).call(SQL_ARGS)
    assert facts(events) == SUCCESS
    check_timing(events)


async def test_the_headers_of_an_event_cannot_be_changed_through_another(fake: FakeServer) -> None:
    # The events of one call share their plan's headers: read-only, so no subscriber changes what another sees.
    events = await recovered_call(fake)
    planned = [event for event in events if event.headers is not None]
    assert len(planned) >= 3
    with pytest.raises(TypeError, match=r"^'mappingproxy' object does not support item assignment$"):
        planned[0].headers["Mcp-Param-Database"] = "changed"  # type: ignore[index]
    assert {event.headers["Mcp-Method"] for event in planned} == {"tools/call"}  # type: ignore[index]
    assert all(dict(event.headers) == event.to_dict()["headers"] for event in planned)  # type: ignore[arg-type]


async def test_a_recovered_call_publishes_the_recovery_path(fake: FakeServer) -> None:
    events = await recovered_call(fake)
    assert facts(events) == RECOVERY
    check_timing(events)


@pytest.mark.parametrize(
    ("answers", "arguments", "tail"),
    [
        pytest.param(
            [],
            {"database": 7},
            [
                event(
                    2,
                    "failed",
                    "planning",
                    "unmirrorable",
                    error={
                        "type": "MirroringError",
                        "code": None,
                        "message": "argument /database cannot be mirrored into Mcp-Param-Database (declared string):"
                        " expected a string, got int 7",
                    },
                )
            ],
            id="unmirrorable",
        ),
        pytest.param(
            [rpc_error(-32602, "Invalid params", data={"x": 1})],
            SQL_ARGS,
            failed_sending({"type": "RpcError", "code": -32602, "message": "Invalid params"}),
            id="rpc-error",
        ),
        pytest.param(
            [response(httpx.Response(503))],
            SQL_ARGS,
            failed_sending({"type": "TransportError", "code": None, "message": "HTTP 503 Service Unavailable"}),
            id="transport-error",
        ),
        pytest.param(
            [rpc_error(-32020, "Header mismatch"), rpc_error(-32020, "Still mismatched")],
            SQL_ARGS,
            [
                *RECOVERY[2:6],
                event(
                    6,
                    "failed",
                    "retrying",
                    "mismatched",
                    attempt=2,
                    headers=SENT_FRESH,
                    error={"type": "HeaderMismatchError", "code": -32020, "message": "Still mismatched"},
                ),
            ],
            id="second-mismatch",
        ),
    ],
)
async def test_a_failed_call_publishes_the_error_on_its_failed_event(
    fake: FakeServer, answers: list[Answer], arguments: dict[str, Any], tail: list[dict[str, Any]]
) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        tool = await listed(fake, client)
        fake.tools = [FRESH_SQL]
        fake.queue("tools/call", *answers)
        with pytest.raises(mcpfsm.McpError):
            await tool.call(arguments)
    assert facts(events) == [*START, *tail]
    check_timing(events)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        pytest.param(object(), " as JSON: Object of type object is not JSON serializable", id="not-json"),
        pytest.param(float("nan"), " as JSON: Out of range float values are not JSON compliant", id="nan"),
        pytest.param("\ud800", ": a string holds a lone UTF-16 surrogate, which UTF-8 cannot carry", id="surrogate"),
    ],
)
async def test_arguments_with_no_json_rpc_form_fail_the_call_before_anything_is_sent(
    fake: FakeServer, value: object, reason: str
) -> None:
    # The one ValueError the send effect turns into `errored` (mcpfsm._core.jsonrpc); the client stays usable.
    events: list[mcpfsm.CallEvent] = []
    message = f"cannot encode JSON-RPC message{reason}"
    async with fake.client(on_event=events.append) as client:
        tool = await listed(fake, client)
        fake.clear()
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            await tool.call({**SQL_ARGS, "region": value})
        sent = fake.methods()
        await tool.call(SQL_ARGS)
    assert sent == []
    assert facts(events)[: len(START) + 2] == [
        *START,
        *failed_sending({"type": "ValueError", "code": None, "message": message}),
    ]
    assert facts(events)[len(START) + 2 :] == SUCCESS
    check_timing(events[: len(START) + 2])


async def test_a_failed_relist_publishes_the_original_error(fake: FakeServer) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        tool = await listed(fake, client)
        fake.queue("tools/call", rpc_error(-32020, "Header mismatch"))
        fake.queue("tools/list", response(httpx.Response(500)))
        with pytest.raises(mcpfsm.HeaderMismatchError):
            await tool.call(SQL_ARGS)
    assert facts(events)[3:] == [
        RECOVERY[3],
        event(4, "failed", "relisting", "relist_failed", headers=SENT_STALE, error=MISMATCH),
    ]


async def test_call_ids_differ_between_calls_and_clients(fake: FakeServer) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        tool = await listed(fake, client)
        await tool.call(SQL_ARGS)
        await tool.call(SQL_ARGS)
    async with fake.client(on_event=events.append) as other:
        await other.call_tool("execute-sql", SQL_ARGS)
    assert [e.seq for e in events] == [0, 1, 2, 3] * 3
    ids = [e.call_id for e in events]
    assert all(isinstance(call_id, str) for call_id in ids)
    assert [ids[i : i + 4] for i in (0, 4, 8)] == [[ids[i]] * 4 for i in (0, 4, 8)]
    assert len({ids[0], ids[4], ids[8]}) == 3


# --- serialisation ---------------------------------------------------------------------------------


async def test_events_round_trip_through_json(fake: FakeServer) -> None:
    events = await recovered_call(fake)
    assert facts(events) == RECOVERY
    for e in events:
        record = json.loads(json.dumps(e.to_dict()))
        assert record == e.to_dict()
        assert json.loads(e.to_json()) == record
        assert "\n" not in e.to_json()
        assert mcpfsm.CallEvent.from_dict(record) == e


@pytest.mark.parametrize(
    "ns",
    [0, 999, 1_000, 999_999_999, 1_764_590_400_000_000_000, 1_764_590_400_999_999_999, 1_764_590_400_000_001_000],
)
def test_utc_timestamp_is_the_text_datetime_gives_for_that_instant(ns: int) -> None:
    from datetime import UTC

    from mcpfsm._core.events import utc_timestamp

    expected = datetime.fromtimestamp(ns // 1_000_000_000, UTC).replace(microsecond=ns // 1_000 % 1_000_000)
    assert utc_timestamp(ns) == expected.isoformat(timespec="microseconds")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"seq": None}, r"^not a CallEvent record: int\(\) argument must be .*$", id="seq-null"),
        pytest.param(
            {"seq": "x"}, r"^not a CallEvent record: invalid literal for int\(\) with base 10: 'x'$", id="seq-text"
        ),
        pytest.param({"headers": 5}, r"^not a CallEvent record: 'int' object is not iterable$", id="headers-int"),
    ],
)
def test_from_dict_refuses_a_record_that_is_not_an_event(change: dict[str, Any], message: str) -> None:
    record = {**event(0, "resolving", None, None), "call_id": "c-1", "at": "2026-01-01T00:00:00+00:00", "elapsed": 0.0}
    assert mcpfsm.CallEvent.from_dict(record).to_dict() == record
    with pytest.raises(ValueError, match=message):
        mcpfsm.CallEvent.from_dict({**record, **change})
    missing = dict(record)
    del missing["tool"]
    with pytest.raises(ValueError, match=r"^not a CallEvent record: 'tool'$"):
        mcpfsm.CallEvent.from_dict(missing)


# --- delivery ------------------------------------------------------------------------------------


async def test_an_on_event_callback_that_raises_does_not_break_the_call(
    fake: FakeServer, logs: list[dict[str, Any]]
) -> None:
    def on_event(event: mcpfsm.CallEvent) -> None:
        raise RuntimeError(f"boom in {event.state}")

    async with fake.client(on_event=on_event) as client:
        outcome = await (await listed(fake, client)).call(SQL_ARGS)
    assert outcome.content == [{"type": "text", "text": "ok"}]
    assert [r["message"] for r in logs if r["level"].name == "WARNING"] == [
        f"on_event callback raised RuntimeError('boom in {state}'); the call goes on"
        for state in ("resolving", "planning", "sending", "succeeded")
    ]


async def test_events_subscribers_receive_the_same_events_as_on_event(fake: FakeServer) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        tool = await listed(fake, client)
        async with client.events() as first, client.events() as second:
            await tool.call(SQL_ARGS)
            fake.tools = [FRESH_SQL]
            fake.queue("tools/call", rpc_error(-32020, "Header mismatch"))
            await tool.call(SQL_ARGS)
            assert drain(first) == drain(second) == events
        # Subscribers that have left do not disturb later calls.
        await tool.call(SQL_ARGS)
    fresh_success = [{**e, "headers": SENT_FRESH if e["headers"] else None} for e in SUCCESS]
    assert facts(events) == [*SUCCESS, *RECOVERY, *fresh_success]


async def test_a_subscriber_reading_in_a_task_sees_every_event(fake: FakeServer) -> None:
    received: list[mcpfsm.CallEvent] = []
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        tool = await listed(fake, client)
        async with client.events() as channel, trio.open_nursery() as nursery:

            async def audit() -> None:
                async for e in channel:
                    received.append(e)
                    if e.state in mcpfsm.TERMINAL:
                        return

            nursery.start_soon(audit)
            await tool.call(SQL_ARGS)
    assert received == events


async def test_a_subscriber_that_never_reads_does_not_block_calls(
    fake: FakeServer, logs: list[dict[str, Any]]
) -> None:
    async with fake.client() as client:
        tool = await listed(fake, client)
        async with client.events(buffer=1) as stalled:
            with trio.fail_after(5):
                await tool.call(SQL_ARGS)
                await tool.call(SQL_ARGS)
            kept = drain(stalled)
            assert [(e.seq, e.state) for e in kept] == [(0, "resolving")]
            assert [r["message"] for r in logs if r["level"].name == "WARNING"] == [FULL_WARNING]
            # Caught up: the next event is delivered, and the next overflow warns once more.
            await tool.call(SQL_ARGS)
            assert [(e.seq, e.state) for e in drain(stalled)] == [(0, "resolving")]
    assert [r["message"] for r in logs if r["level"].name == "WARNING"] == [FULL_WARNING] * 2


async def test_events_are_logged_at_debug_with_the_call_id(fake: FakeServer, logs: list[dict[str, Any]]) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append) as client:
        await (await listed(fake, client)).call(SQL_ARGS)
    call_id = events[0].call_id
    assert [
        (r["level"].name, r["message"], r["extra"]) for r in logs if r["message"].startswith("tool call ")
    ] == [
        ("DEBUG", "tool call execute-sql None -> resolving (None)", {"call_id": call_id}),
        ("DEBUG", "tool call execute-sql resolving -> planning (resolved)", {"call_id": call_id}),
        ("DEBUG", "tool call execute-sql planning -> sending (planned)", {"call_id": call_id}),
        ("DEBUG", "tool call execute-sql sending -> succeeded (answered)", {"call_id": call_id}),
    ]


@pytest.mark.parametrize("server", [None, "billing"])
def test_the_tool_call_factory_builds_the_event_the_constructor_builds(server: str | None) -> None:
    # events.tool_call_event (the hot path's positional factory: a _Draft given the class CallEvent) builds what
    # CallEvent.__init__ builds, its `at` the text utc_timestamp writes for the instant it is given.
    import dataclasses

    from mcpfsm._core.events import tool_call_event, utc_timestamp

    ns = 1_764_590_400_000_001_999
    values: dict[str, Any] = {
        "call_id": "c-1",
        "seq": 3,
        "tool": "execute-sql",
        "state": "failed",
        "previous": "sending",
        "trigger": "errored",
        "attempt": 2,
        "at": ns,
        "elapsed": 0.5,
        "headers": {"Mcp-Method": "tools/call"},
        "error": {"type": "RpcError", "code": -1, "message": "no"},
        "round": 1,
        "input_requests": {"k": "roots/list"},
        "input_responses": {"k": {"roots": []}},
    }
    built = tool_call_event(*values.values(), server)
    expected = mcpfsm.CallEvent(**{**values, "at": "2025-12-01T12:00:00.000001+00:00"}, server=server)
    assert utc_timestamp(ns) == expected.at
    fields = [field.name for field in dataclasses.fields(mcpfsm.CallEvent)]
    assert fields == [*values, "machine", "server"]  # a new field must be added to the factory too
    assert [getattr(built, name) for name in fields] == [getattr(expected, name) for name in fields]
    assert (built, type(built), repr(built)) == (expected, mcpfsm.CallEvent, repr(expected))
    from mcpfsm._core.events import _Draft

    assert _Draft.__slots__ == mcpfsm.CallEvent.__slots__ == tuple(fields)
    assert not hasattr(built, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.seq = 4  # type: ignore[misc]
    assert dataclasses.replace(built, seq=4) == dataclasses.replace(expected, seq=4)
    assert dataclasses.asdict(built) == dataclasses.asdict(expected)
    assert mcpfsm.CallEvent.from_dict(built.to_dict()) == expected


def _written_out() -> list[str]:
    # Every dataclass of the library whose __init__ is written out (init=False) rather than generated.
    import dataclasses
    import importlib
    import pkgutil

    found: set[str] = set()
    for module in pkgutil.walk_packages(mcpfsm.__path__, "mcpfsm."):
        if module.name.startswith("mcpfsm._tooling") or module.name == "mcpfsm.__main__":
            continue
        for value in vars(importlib.import_module(module.name)).values():
            written_out = dataclasses.is_dataclass(value) and not value.__dataclass_params__.init  # type: ignore[union-attr]
            if isinstance(value, type) and written_out:
                found.add(f"{value.__module__}.{value.__qualname__}")
    return sorted(found)


def test_every_dataclass_has_its_generated_init() -> None:
    # Adding a field is one edit: no dataclass writes its __init__ out. The per-call values are built on their
    # fast paths instead (tool_call_event, ToolResult.from_complete), each measured by bench/layer.py.
    assert _written_out() == []


def test_a_calls_elapsed_times_read_the_runs_clock() -> None:
    # trio's own clock is perf_counter plus an offset, so a call reads perf_counter directly (the same differences);
    # any other clock (a MockClock in tests, a caller's) is read as it is.
    import time

    import trio.testing

    from mcpfsm._drivers.tool_call import _call_clock

    async def read() -> object:
        return _call_clock()

    assert trio.run(read) is time.perf_counter
    mock = trio.testing.MockClock()
    assert trio.run(read, clock=mock) == mock.current_time
