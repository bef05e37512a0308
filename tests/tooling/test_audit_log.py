"""The JSON Lines audit sink (``mcpfsm.AuditLog``): what it writes, that ``mcpfsm trace`` reads it, and that
many calls, threads and processes writing at once leave whole lines."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm._tooling.trace import parse_events, select_call, sequence_diagram
from tests.support.fakeserver import FakeServer, rpc_error
from tests.support.peer.fixtures import REPO_ROOT, start_http_peer

SQL: Final = {"query": "select 1", "database": "analytics", "region": "eu-west1"}


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def an_event(call_id: str = "c-1", seq: int = 0, **fields: Any) -> mcpfsm.CallEvent:
    values: dict[str, Any] = {
        "call_id": call_id,
        "seq": seq,
        "tool": "echo",
        "state": "resolving",
        "previous": None,
        "trigger": None,
        "attempt": 1,
        "at": "2026-12-01T10:00:00.000000+00:00",
        "elapsed": 0.0,
    }
    return mcpfsm.CallEvent(**(values | fields))


async def test_a_recovered_call_round_trips_through_mcpfsm_trace(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    seen: list[mcpfsm.CallEvent] = []
    with start_http_peer(mode="modern") as peer, mcpfsm.AuditLog(path) as log:

        def both(event: mcpfsm.CallEvent) -> None:
            log(event)
            seen.append(event)

        async with mcpfsm.Client.http(peer.url, on_event=both) as client:
            sql = (await client.tools()).get("execute-sql")
            assert sql is not None
            peer.control({"action": "evolve"})
            await sql.call(SQL)
    assert [e.state for e in seen] == [
        "resolving",
        "planning",
        "sending",
        "relisting",
        "comparing",
        "retrying",
        "succeeded",
    ]
    # One to_dict() line per event, in order, read back whole.
    assert records(path) == [event.to_dict() for event in seen]
    assert parse_events(path.read_text(encoding="utf-8")) == seen
    done = subprocess.run(
        [sys.executable, "-m", "mcpfsm", "trace", str(path)], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == sequence_diagram(seen)
    assert "Server-->>Client: error -32020: Mcp-Param-Region header is missing" in done.stdout


async def test_input_runs_round_trip_through_mcpfsm_trace(tmp_path: Path) -> None:
    # Legacy (2025-11-25) server requests against the SDK peer: one on the standalone GET stream, one on the
    # call's own stream; each is a run of the input machine, drawn by `mcpfsm trace --call RUN_ID`.
    path = tmp_path / "audit.jsonl"
    seen: list[mcpfsm.CallEvent] = []

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada"}}

    with start_http_peer(mode="dual") as peer, mcpfsm.AuditLog(path) as log:

        def both(event: mcpfsm.CallEvent) -> None:
            log(event)
            seen.append(event)

        async with mcpfsm.Client.http(peer.url, protocol="2025-11-25", on_event=both, on_elicitation=answer) as client:
            assert (await client.call_tool("ask-name", {"stream": "get"})).structured_content == {
                "action": "accept",
                "content": {"name": "Ada"},
            }
            await client.call_tool("ask-name")

    assert records(path) == [event.to_dict() for event in seen]
    assert parse_events(path.read_text(encoding="utf-8")) == seen
    # By run (a stable sort): the delivery of the first answer may be recorded after the second call began.
    order = {call_id: n for n, call_id in enumerate(dict.fromkeys(event.call_id for event in seen))}
    runs = sorted((event for event in seen if isinstance(event, mcpfsm.InputEvent)), key=lambda e: order[e.call_id])
    assert [(e.tool, e.state, e.request) for e in runs] == [
        ("", "awaiting_input", "elicitation/create"),
        ("", "succeeded", "elicitation/create"),
        ("ask-name", "awaiting_input", "elicitation/create"),
        ("ask-name", "succeeded", "elicitation/create"),
    ]
    for first, tool in ((runs[0], ""), (runs[2], " (tool ask-name)")):
        done = subprocess.run(
            [sys.executable, "-m", "mcpfsm", "trace", str(path), "--call", first.call_id],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO_ROOT,
        )
        assert (done.returncode, done.stderr) == (0, "")
        assert done.stdout == sequence_diagram(select_call(seen, first.call_id))
        assert done.stdout == (
            "sequenceDiagram\n"
            f"    %% mcpfsm input run {first.call_id} of elicitation/create {first.target}{tool}, "
            "drawn by `mcpfsm trace`\n"
            "    participant Client\n"
            "    participant Server\n"
            f"    Server->>Client: elicitation/create (id {first.target})\n"
            f"    Note over Client: awaiting_input<br/>{first.target}: elicitation/create\n"
            "    Client->>Server: result\n"
            "    Note over Client: succeeded (answered)\n"
        )


def test_it_appends_auth_and_call_events_and_creates_the_file_private(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text('{"kept": true}\n', encoding="utf-8")
    os.chmod(path, 0o640)
    auth = mcpfsm.AuthEvent(
        call_id="f-a1",
        seq=0,
        tool="",
        state="starting",
        previous=None,
        trigger=None,
        attempt=1,
        at="2026-12-01T10:00:00.000000+00:00",
        elapsed=0.0,
        issuer="https://issuer.example",
        scopes=("read",),
    )
    with mcpfsm.AuditLog(path) as log:
        log(an_event())
        log(auth)
    assert records(path) == [{"kept": True}, an_event().to_dict(), auth.to_dict()]
    assert stat.S_IMODE(path.stat().st_mode) == 0o640  # an existing file keeps its mode

    fresh = tmp_path / "new.jsonl"
    with mcpfsm.AuditLog(fresh) as log:
        log(auth)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert parse_events(fresh.read_text(encoding="utf-8")) == [auth]


def test_a_path_that_cannot_be_opened_raises_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir" / "audit.jsonl"
    with pytest.raises(FileNotFoundError, match=rf"^\[Errno 2\] No such file or directory: '{missing}'$"):
        mcpfsm.AuditLog(missing)


async def test_a_failing_write_never_fails_the_call(records: list[tuple[str, str]]) -> None:
    # /dev/full: every write fails with ENOSPC, as on a full disk.
    log = mcpfsm.AuditLog("/dev/full")
    fake = FakeServer([{"name": "echo", "inputSchema": {"type": "object"}}])
    async with fake.client(on_event=log) as client:
        assert (await client.call_tool("echo", {})).text == "ok"
        fake.queue("tools/call", rpc_error(-32603, "nope"))
        with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32603: nope$"):
            await client.call_tool("echo", {})
    log.close()
    log(an_event())
    assert log.dropped == 9
    assert repr(log) == "AuditLog('/dev/full', closed, dropped=9)"
    warnings = [message for level, message in records if level == "WARNING"]
    assert warnings == [
        "audit log '/dev/full': an event was not written (No space left on device); later failures are only counted"
    ]


async def test_concurrent_calls_leave_one_whole_line_per_event(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    fake = FakeServer([{"name": "echo", "inputSchema": {"type": "object"}}])
    with mcpfsm.AuditLog(path) as log:
        async with fake.client(on_event=log) as client, trio.open_nursery() as nursery:
            for _ in range(50):
                nursery.start_soon(client.call_tool, "echo", {})
    events = parse_events(path.read_text(encoding="utf-8"))
    calls = {event.call_id for event in events}
    assert len(calls) == 50
    for call_id in calls:
        assert [(e.seq, e.state) for e in select_call(events, call_id)] == [
            (0, "resolving"),
            (1, "planning"),
            (2, "sending"),
            (3, "succeeded"),
        ]


def test_threads_sharing_one_log_leave_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    big = {"x-" + str(n): "v" * 200 for n in range(20)}  # 4 KiB lines
    with mcpfsm.AuditLog(path) as log:
        start = threading.Barrier(4)

        def write(thread: int) -> None:
            start.wait()
            for seq in range(500):
                log(an_event(f"t{thread}", seq, headers=big))

        threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    events = parse_events(path.read_text(encoding="utf-8"))
    assert sorted((e.call_id, e.seq) for e in events) == [(f"t{t}", s) for t in range(4) for s in range(500)]
    assert all(e.headers == big for e in events)


WRITER: Final = """
import sys
import mcpfsm

name, path = sys.argv[1], sys.argv[2]
headers = {"x-" + str(n): "v" * 200 for n in range(20)}
with mcpfsm.AuditLog(path) as log:
    print("READY", flush=True)
    sys.stdin.readline()  # GO: every writer starts together
    for seq in range(1000):
        log(mcpfsm.CallEvent(call_id=name, seq=seq, tool="t", state="s", previous=None, trigger=None,
                             attempt=1, at="2026-12-01T10:00:00+00:00", elapsed=0.0, headers=headers))
"""


def test_processes_appending_to_one_file_leave_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    writers = [
        subprocess.Popen(
            [sys.executable, str(script), f"p{n}", str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
        )
        for n in range(4)
    ]
    try:
        for writer in writers:
            assert writer.stdout is not None and writer.stdout.readline() == "READY\n"
        for writer in writers:
            assert writer.stdin is not None
            writer.stdin.write("GO\n")
            writer.stdin.flush()
        assert [writer.wait(timeout=60) for writer in writers] == [0, 0, 0, 0]
    finally:
        for writer in writers:
            writer.kill()
            writer.communicate()
    events = parse_events(path.read_text(encoding="utf-8"))
    for n in range(4):
        assert [e.seq for e in events if e.call_id == f"p{n}"] == list(range(1000))
    assert len(events) == 4000
