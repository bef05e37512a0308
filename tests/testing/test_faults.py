"""Faults over a cassette, through the real client, in process and over HTTP: ``mismatch_once`` drives the tool-call
machine through relisting, comparing and retrying (and the trail viewer lights that path), a dropped call is never
resent, a delay meets the caller's timeout, an HTTP error leaves the client usable, an expired legacy session is
renewed; and a replay lights the same path in ``mcpfsm trace --html`` as its recording."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm._core import replay as replay_rules
from mcpfsm._tooling.server_process import run_peer
from mcpfsm.testing import (
    Fault,
    delay,
    drop_after_request,
    http_error,
    mismatch_once,
    replay,
    serve,
    session_expired,
)
from tests.support.clirun import mcpfsm as run_mcpfsm
from tests.support.peer.fixtures import REPO_ROOT
from tests.testing.agents import SDK_STDIO, SQL, stdio_options, text_of

ERAS: Final = {"modern": "auto", "legacy": "2025-11-25"}
WAYS: Final = ("in-process", "http")
RETRY_PATH: Final = [
    (None, None, "resolving"),
    ("resolving", "resolved", "planning"),
    ("planning", "planned", "sending"),
    ("sending", "mismatched", "relisting"),
    ("relisting", "relisted", "comparing"),
    ("comparing", "changed", "retrying"),
    ("retrying", "answered", "succeeded"),
]
PLAIN_PATH: Final = [
    (None, None, "resolving"),
    ("resolving", "resolved", "planning"),
    ("planning", "planned", "sending"),
    ("sending", "answered", "succeeded"),
]


async def agent(client: mcpfsm.Client) -> list[Any]:
    tools = await client.tools()
    sql = tools.get("execute-sql")
    assert sql is not None
    return [
        (await sql.call(SQL)).structured_content,
        text_of(await client.call_tool("echo", {"text": "one"})),
        (await sql.call({**SQL, "database": "billing"})).structured_content,
    ]


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """The agent's session against the official SDK's server, recorded in each era, with its audit trail beside it."""
    where = tmp_path_factory.mktemp("faults")
    paths: dict[str, Path] = {}

    async def record(url: str, era: str) -> None:
        path = where / f"{era}.jsonl"
        with mcpfsm.AuditLog(where / f"{era}.events.jsonl") as log:
            async with mcpfsm.Client.http(url, protocol=ERAS[era], record=path, on_event=log) as client:
                await agent(client)
        paths[era] = path

    with run_peer() as peer:
        for era in ERAS:
            trio.run(record, peer.url, era)
    yield paths


@asynccontextmanager
async def client_for(
    path: Path, way: str, faults: tuple[Fault, ...] = (), **options: Any
) -> AsyncIterator[mcpfsm.Client]:
    if way == "in-process":
        async with mcpfsm.Client(replay(path, faults=faults), **options) as client:
            yield client
    else:
        async with serve(path, faults=faults) as url, mcpfsm.Client.http(url, **options) as client:
            yield client


def paths_of(events: list[mcpfsm.CallEvent]) -> list[list[tuple[str | None, str | None, str]]]:
    runs: dict[str, list[tuple[str | None, str | None, str]]] = {}
    for event in events:
        runs.setdefault(event.call_id, []).append((event.previous, event.trigger, event.state))
    return list(runs.values())


@pytest.fixture
def answered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The method of every message the replay answered (whichever way it is served), in order."""
    seen: list[str] = []
    original = replay_rules.ReplayBook.answer

    def answer(self: replay_rules.ReplayBook, message: Any, headers: Any = None) -> replay_rules.Answer:
        seen.append(str(message.get("method") if isinstance(message, dict) else None))
        return original(self, message, headers)

    monkeypatch.setattr(replay_rules.ReplayBook, "answer", answer)
    return seen


@pytest.mark.parametrize("way", WAYS)
async def test_mismatch_once_drives_the_call_through_relist_compare_and_retry(
    way: str, cassettes: dict[str, Path], answered: list[str]
) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with client_for(cassettes["modern"], way, (mismatch_once("execute-sql"),), on_event=events.append) as c:
        outputs = await agent(c)
    assert outputs == [SQL, "one", {**SQL, "database": "billing"}]
    first, echo, second = paths_of(events)
    assert (first, echo) == (RETRY_PATH, PLAIN_PATH)
    # The retry mirrored the changed token; later calls mirror it too, are refused by the recording, and recover.
    planned = [e.headers for e in events if e.call_id == events[0].call_id and e.state in ("sending", "retrying")]
    assert [{k: v for k, v in (plan or {}).items() if k.startswith("Mcp-Param-")} for plan in planned] == [
        {"Mcp-Param-Database": "analytics", "Mcp-Param-Read-Only": "true"},
        # The first annotated property of execute-sql (query, database, region, options) is database.
        {"Mcp-Param-Database-Changed": "analytics", "Mcp-Param-Read-Only": "true"},
    ]
    assert second == RETRY_PATH
    assert answered.count("tools/list") == 3


@pytest.mark.parametrize("way", WAYS)
async def test_a_dropped_call_is_never_resent_and_the_client_goes_on(
    way: str, cassettes: dict[str, Path], answered: list[str]
) -> None:
    events: list[mcpfsm.CallEvent] = []
    faults = (drop_after_request("tools/call"), drop_after_request("tools/list"))
    async with client_for(cassettes["modern"], way, faults, on_event=events.append) as client:
        # A listing is read-only: sent once more on a fresh connection, it is answered (RFC 9110 §9.2.2).
        sql = (await client.tools()).get("execute-sql")
        assert sql is not None and answered.count("tools/list") == 2
        with pytest.raises(mcpfsm.TransportError, match=r"the request was not resent because the server may have"):
            await sql.call(SQL)
        assert answered.count("tools/call") == 1
        assert paths_of(events)[0][-1] == ("sending", "errored", "failed")
        assert (await sql.call(SQL)).structured_content == SQL  # the dropped call used up nothing


@pytest.mark.parametrize("way", WAYS)
async def test_an_http_error_leaves_the_client_usable(way: str, cassettes: dict[str, Path]) -> None:
    async with client_for(cassettes["modern"], way, (http_error("tools/call", 503),)) as client:
        with pytest.raises(mcpfsm.TransportError, match=r"^HTTP 503 Service Unavailable$") as caught:
            await client.call_tool("echo", {"text": "one"})
        assert caught.value.status == 503
        assert text_of(await client.call_tool("echo", {"text": "one"})) == "one"


async def test_a_delay_meets_the_callers_timeout_in_process(cassettes: dict[str, Path], autojump_clock: Any) -> None:
    async with client_for(cassettes["modern"], "in-process", (delay("tools/call", 60),)) as client:
        with trio.move_on_after(10) as scope:
            await client.call_tool("echo", {"text": "one"})
        assert scope.cancelled_caught
        # The call was sent and its answer held back: the replay used its exchange, as a server would have run it.
        started = trio.current_time()
        assert "echo" in (await client.tools()).names
        assert trio.current_time() == started


async def test_a_delay_over_http_holds_the_answer_back(cassettes: dict[str, Path]) -> None:
    async with client_for(cassettes["modern"], "http", (delay("tools/call", 0.5),)) as client:
        started = trio.current_time()
        assert text_of(await client.call_tool("echo", {"text": "one"})) == "one"
        assert trio.current_time() - started >= 0.5


@pytest.mark.parametrize("way", WAYS)
async def test_an_expired_legacy_session_is_renewed_and_the_call_resent(
    way: str, cassettes: dict[str, Path], answered: list[str]
) -> None:
    events: list[mcpfsm.CallEvent] = []
    async with client_for(cassettes["legacy"], way, (session_expired(after=1),), on_event=events.append) as client:
        assert await agent(client) == [SQL, "one", {**SQL, "database": "billing"}]
    # initialize, initialized, tools/list (1), tools/call -> 404, a new session, the call again.
    assert answered[:7] == [
        "server/discover",
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
        "initialize",
        "notifications/initialized",
    ]
    assert paths_of(events) == [PLAIN_PATH] * 3  # the renewal happens below the machine


async def test_a_modern_client_has_no_session_to_renew(cassettes: dict[str, Path]) -> None:
    async with client_for(cassettes["modern"], "in-process", (session_expired(after=2),)) as client:
        await client.tools()  # server/discover and tools/list: two requests
        with pytest.raises(mcpfsm.RpcError, match=r"Session not found") as caught:
            await client.call_tool("echo", {"text": "one"})
        assert caught.value.status == 404


async def test_a_stdio_replay_whose_request_is_dropped_is_a_server_gone(tmp_path: Path) -> None:
    path = tmp_path / "stdio.jsonl"
    with trio.fail_after(120):
        async with mcpfsm.Client.stdio(SDK_STDIO, record=path, **stdio_options()) as client:
            await client.call_tool("echo", {"text": "one"})
    async with mcpfsm.Client(replay(path, faults=(drop_after_request("tools/call"),))) as client:
        with pytest.raises(mcpfsm.TransportError, match=r"closed its stdout before answering"):
            await client.call_tool("echo", {"text": "one"})
        with pytest.raises(mcpfsm.TransportError, match=r"closed its stdout before answering"):
            await client.call_tool("echo", {"text": "one"})
    command = [sys.executable, "-m", "mcpfsm", "replay", str(path), "--stdio"]
    command += ["--fault", "drop_after_request:tools/call"]
    async with mcpfsm.Client.stdio(command, cwd=str(REPO_ROOT)) as client:
        with pytest.raises(mcpfsm.TransportError, match=r"exited with status 0 before answering"):
            await client.call_tool("echo", {"text": "one"})


def trail_paths(page: str) -> list[list[tuple[Any, Any, str]]]:
    match = re.search(r'<script type="application/json" id="trail">(.*?)</script>', page, re.DOTALL)
    assert match is not None
    runs = json.loads(match.group(1))["runs"]
    return [[(e.get("previous"), e.get("trigger"), e["state"]) for e in run["events"]] for run in runs]


@pytest.mark.parametrize("era", ERAS)
async def test_a_replay_lights_the_same_path_in_the_trail_viewer_as_its_recording(
    era: str, cassettes: dict[str, Path], tmp_path: Path
) -> None:
    trail = tmp_path / "replayed.events.jsonl"
    with mcpfsm.AuditLog(trail) as log:
        async with mcpfsm.Client(replay(cassettes[era]), protocol=ERAS[era], on_event=log) as client:
            await agent(client)
    pages = {}
    for name, source in (("recorded", cassettes[era].with_suffix(".events.jsonl")), ("replayed", trail)):
        out = tmp_path / f"{name}.html"
        done = await trio.to_thread.run_sync(run_mcpfsm, "trace", str(source), "--html", str(out))
        assert done.code == 0, done.stderr
        pages[name] = out.read_text(encoding="utf-8")
    assert trail_paths(pages["replayed"]) == trail_paths(pages["recorded"]) == [PLAIN_PATH] * 3


async def test_mismatch_once_lights_the_retry_path_in_the_trail_viewer(
    cassettes: dict[str, Path], tmp_path: Path
) -> None:
    trail = tmp_path / "retry.events.jsonl"
    with mcpfsm.AuditLog(trail) as log:
        async with client_for(cassettes["modern"], "in-process", (mismatch_once("execute-sql"),), on_event=log) as c:
            await agent(c)
    out = tmp_path / "retry.html"
    done = await trio.to_thread.run_sync(run_mcpfsm, "trace", str(trail), "--html", str(out))
    assert done.code == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    assert trail_paths(page)[0] == RETRY_PATH
    edges = set(re.findall(r'data-edge="([^"]*)"', page))
    assert {"sending:mismatched", "relisting:relisted", "comparing:changed", "retrying:answered"} <= edges
