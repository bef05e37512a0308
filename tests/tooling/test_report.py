"""The trail viewer page as text: the diagrams it inlines are marked for every state and edge of every machine,
the page is self-contained, recorded values stay text, and the commands that write it (``mcpfsm trace --html``,
``mcpfsm demo --html``). tests/tooling/test_report_browser.py drives the same pages in Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from mcpfsm._machines.definition import MachineDefinition
from mcpfsm._machines.registry import MACHINES
from mcpfsm._tooling.report import machine_svg, parse_trail, report_html, runs_of
from tests.tooling.recordings import TASK, jsonl, run_mcpfsm, task_records, walkthrough_records


def marks(svg_text: str) -> tuple[list[str], list[str]]:
    return re.findall(r'data-state="([^"]*)"', svg_text), re.findall(r'data-edge="([^"]*)"', svg_text)


@pytest.mark.parametrize("definition", [*MACHINES.values(), TASK], ids=[*MACHINES, TASK.name])
def test_every_state_and_edge_of_every_machine_is_marked_once(definition: MachineDefinition[Any, Any]) -> None:
    states, edges = marks(machine_svg(definition))
    assert sorted(states) == sorted(["start", *map(str, definition.states)])
    expected = ["start", *(f"{edge.source}:{edge.trigger}" for edge in definition.edges)]
    assert sorted(edges) == sorted(expected)
    assert len(set(edges)) == len(edges)


def page_data(page: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="trail">(.*?)</script>', page, re.DOTALL)
    assert match is not None
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def test_the_page_is_self_contained_and_recorded_values_stay_text() -> None:
    hostile = "</script><script>alert(1)</script> @SCRIPT@ <img src=x>"
    records = walkthrough_records()
    records[0] = {**records[0], "tool": hostile, "server": "https://mcp.example.com/mcp"}
    page = report_html(records, title="audit <2026>")
    assert "<title>audit &lt;2026&gt;</title>" in page
    markup = re.sub(r'<script type="application/json" id="trail">.*?</script>', "", page, flags=re.DOTALL)
    assert re.search(r"""\b(?:src|href|xlink:href)\s*=""", markup) is None  # nothing to fetch
    assert "<script>alert(1)" not in page and page.count("<script") == 2
    assert '<meta http-equiv="Content-Security-Policy" content="default-src \'none\';' in page
    data = page_data(page)
    assert data["runs"][0]["label"] == hostile and data["runs"][0]["server"] == "https://mcp.example.com/mcp"
    assert [run["id"] for run in data["runs"]] == list(dict.fromkeys(record["call_id"] for record in records))
    assert set(data["machines"]) == {"tool-call", "authorization", "task", "gate"}


def test_a_chained_log_reads_as_a_trail_and_its_hashes_stay_out_of_the_page(tmp_path: Path) -> None:
    from mcpfsm import AuditLog, CallEvent

    path = tmp_path / "audit.jsonl"
    with AuditLog(path, chain=True) as log:
        for record in walkthrough_records()[:4]:
            log(CallEvent.from_dict(record))
    page = report_html(parse_trail(path.read_text(encoding="utf-8")), title="chained")
    events = page_data(page)["runs"][0]["events"]
    assert [event["log_seq"] for event in events] == [0, 1, 2, 3]
    assert not any("log_prev" in event or "log_sha256" in event for event in events)


def test_a_run_of_an_unknown_machine_gets_its_timeline_and_no_diagram() -> None:
    # "task" is a machine of mcpfsm now (specs/task.md): a machine this version does not know is named otherwise.
    records = [{**record, "machine": "batch"} for record in task_records()]
    data = page_data(report_html(records, title="t"))
    assert data["machines"] == {}
    assert [event["state"] for event in data["runs"][0]["events"]] == [record["state"] for record in records]
    assert data["runs"][0]["outcome"] == "completed"
    assert data["runs"][0]["events"][2] == {
        "seq": 2, "state": "working", "previous": "working", "trigger": "polled", "elapsed": 1.0,
        "task_id": "t-42", "poll": 2, "status": "working",
    }
    assert data["runs"][0]["at"] == "2026-12-01T10:00:00.000000+00:00"


def test_runs_group_by_call_and_order_by_seq() -> None:
    records = task_records()
    runs = runs_of([records[2], records[0], records[1]])
    assert [event["seq"] for event in runs[0].events] == [0, 1, 2]
    assert runs[0].path == ["start", "submitted:accepted", "working:polled"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{]\n", r"^line 1: not JSON"),
        ("\n[1]\n", r"^line 2: not a CallEvent record \(a JSON list\)$"),
        (
            '{"call_id": "c"}\n',
            r"^line 1: not a CallEvent record \(no 'seq', 'tool', 'state', 'attempt', 'at', 'elapsed'",
        ),
    ],
)
def test_a_malformed_trail_names_its_line(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_trail(text)


def test_trace_html_on_the_command_line(tmp_path: Path) -> None:
    source = tmp_path / "trail.jsonl"
    source.write_text(jsonl(walkthrough_records()), encoding="utf-8")
    out = tmp_path / "trail.html"
    done = run_mcpfsm("trace", str(source), "--html", str(out))
    runs = len({record["call_id"] for record in walkthrough_records()})
    wrote = f"wrote {out}: {runs} runs, {len(walkthrough_records())} events\n"
    assert (done.code, done.stdout, done.stderr) == (0, wrote, "")
    assert len(page_data(out.read_text(encoding="utf-8"))["runs"]) == runs
    done = run_mcpfsm("trace", str(source), "--html", str(out), "--call", "tool-call-1")
    assert (done.code, done.stderr) == (
        2, "mcpfsm: error: --html writes every run of the trail: it takes neither --call nor --output\n"
    )
    source.write_text("not json\n", encoding="utf-8")
    done = run_mcpfsm("trace", str(source), "--html", str(out))
    assert done.code == 2 and done.stderr.startswith(f"mcpfsm: error: {source}: line 1: not JSON")
    source.write_text("", encoding="utf-8")
    done = run_mcpfsm("trace", str(source), "--html", str(out))
    assert (done.code, done.stderr) == (2, f"mcpfsm: error: {source}: no events recorded\n")


def test_demo_html_writes_the_demos_trail(tmp_path: Path) -> None:
    out = tmp_path / "demo.html"
    done = run_mcpfsm("demo", "--html", str(out))
    assert done.code == 0, done.stderr
    assert done.stdout.endswith(f"wrote {out}: 2 runs, 11 events\n")
    runs = page_data(out.read_text(encoding="utf-8"))["runs"]
    assert [[event["state"] for event in run["events"]] for run in runs] == [
        ["resolving", "planning", "sending", "succeeded"],
        ["resolving", "planning", "sending", "relisting", "comparing", "retrying", "succeeded"],
    ]


async def test_a_group_members_status_changes_are_a_run_lit_on_the_group_machine(tmp_path: Path) -> None:
    # A real group: one member's child killed and started again by the next use after its (short) backoff window.
    import os
    import signal
    import sys

    import trio

    import mcpfsm
    from tests.support.peer.fixtures import REPO_ROOT

    entry = {"command": sys.executable, "args": [str(REPO_ROOT / "tests" / "support" / "stdio_member.py")]}
    recorded: list[mcpfsm.CallEvent] = []
    async with (
        mcpfsm.ClientGroup({"mcpServers": {"work": entry}}, lazy=True, reconnect_backoff=0.05, on_event=recorded.append)
        as group,
        group.events() as events,
    ):
        pid = int((await group.call_tool("work_pid")).text)
        os.kill(pid, signal.SIGKILL)
        async for event in events:
            if isinstance(event, mcpfsm.MemberEvent) and event.state == "failed":
                break
        await trio.sleep(group.backoff("work"))
        await group.call_tool("work_pid")
    records = [event.to_dict() for event in recorded]
    data = page_data(report_html(parse_trail(jsonl(records)), title="group"))
    member = next(run for run in data["runs"] if run["machine"] == "group")
    assert (member["id"], member["label"], member["server"], member["outcome"]) == (
        "group:work", "member work", "work", "connected"
    )
    assert [(event["previous"], event["trigger"], event["state"]) for event in member["events"]] == [
        ("idle", "used", "connecting"),
        ("connecting", "connected", "connected"),
        ("connected", "exited", "failed"),
        ("failed", "retried", "connecting"),
        ("connecting", "connected", "connected"),
    ]
    assert "group" in data["machines"]
    _, edges = marks(machine_svg(MACHINES["group"]))
    assert {f"{event['previous']}:{event['trigger']}" for event in member["events"]} <= set(edges)
    assert [run["machine"] for run in data["runs"]].count("tool-call") == 2
